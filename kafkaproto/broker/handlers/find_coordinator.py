"""FindCoordinator: a group, transactional id or share partition is coordinated by the broker leading the partition
of the coordinator's internal topic that Kafka's hashing picks for it (routing.py); in a cluster of one, this
broker.

v0-3 ask for one key; v4+ for a list of them, answered one by one. With an authorizer, a key the client may
not DESCRIBE is GROUP_ or TRANSACTIONAL_ID_AUTHORIZATION_FAILED. A share partition (key type 2, from v6, when
share groups are on) is looked for by the brokers leading it, as ``group:topic id:partition``; asking needs
CLUSTER_ACTION on the cluster, as on Kafka, and a key not of that form is INVALID_REQUEST.

The first group found makes Kafka's internal topic ``__consumer_offsets``, as Kafka's coordinator makes it (here
it is the group coordinator's log, served from then on: state/internal_topics.py's serve_internal); the first
transactional id found makes ``__transaction_state`` likewise, and the first share partition
``__share_group_state``.
"""

from ... import errors
from ...messages import ApiKey, FindCoordinatorResponse
from ..dispatch import handles
from ..routing import coordinator
from ..state import acls
from ..state.coordinator_logs import OFFSETS_TOPIC, SHARE_STATE_TOPIC, TRANSACTIONS_TOPIC, parse_share_key
from ..state.features import share_groups_enabled
from ..state.replicas import NO_LEADER

GROUP, TRANSACTION, SHARE = 0, 1, 2
INTERNAL = {GROUP: OFFSETS_TOPIC, TRANSACTION: TRANSACTIONS_TOPIC, SHARE: SHARE_STATE_TOPIC}


def _share_key_error(key):
    """INVALID_REQUEST when a share partition's key is not ``group:topic id:partition``, else None."""
    try:
        parse_share_key(key)
    except ValueError:
        return errors.INVALID_REQUEST
    return None


@handles(ApiKey.FIND_COORDINATOR, versions=range(0, 7))
def find_coordinator(ctx, request):
    state = ctx.state
    kind = request.key_type
    if kind == SHARE and ctx.version >= 6 and share_groups_enabled(state):
        allowed = ctx.allowed(acls.CLUSTER_ACTION, acls.CLUSTER, acls.CLUSTER_NAME)

        def refusal(key):
            return _share_key_error(key) if allowed else errors.CLUSTER_AUTHORIZATION_FAILED
    elif kind in (GROUP, TRANSACTION):
        resource, refused = ((acls.GROUP, errors.GROUP_AUTHORIZATION_FAILED) if kind == GROUP
                             else (acls.TRANSACTIONAL_ID, errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))

        def refusal(key):
            return None if ctx.allowed(acls.DESCRIBE, resource, key) else refused
    else:
        def refusal(key):
            return errors.INVALID_REQUEST

    def answer(key):
        """(error, node id, host, port) for a key."""
        error = refusal(key)
        if error is None:
            # the topic made now, as Kafka makes it for the first key found
            node = coordinator(state, INTERNAL[kind], parse_share_key(key) if kind == SHARE else key)
            if node != NO_LEADER:
                return (errors.NONE, node, *state.endpoint_for(ctx.listener_name, node))
            error = errors.COORDINATOR_NOT_AVAILABLE
        return error, -1, "", -1
    if ctx.version < 4:
        error, node, host, port = answer(request.key)
        return FindCoordinatorResponse(throttle_time_ms=0, error_code=error.code, node_id=node, host=host, port=port)
    coordinators = []
    for key in request.coordinator_keys:
        error, node, host, port = answer(key)
        coordinators.append(FindCoordinatorResponse.Coordinator(key=key, node_id=node, host=host, port=port,
                                                                error_code=error.code))
    return FindCoordinatorResponse(throttle_time_ms=0, coordinators=coordinators)
