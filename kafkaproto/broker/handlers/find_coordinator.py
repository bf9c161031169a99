"""FindCoordinator: this broker coordinates every group, every transactional id and every share partition.

v0-3 ask for one key; v4+ for a list of them, answered one by one. With an authorizer, a key the client may
not DESCRIBE is GROUP_ or TRANSACTIONAL_ID_AUTHORIZATION_FAILED. A share partition (key type 2, from v6, when
share groups are on) is looked for by the brokers leading it, as ``group:topic id:partition``; asking needs
CLUSTER_ACTION on the cluster, as on Kafka, and a key not of that form is INVALID_REQUEST.

The first group found makes Kafka's internal topic ``__consumer_offsets``, as Kafka's coordinator makes it (here
it is the group coordinator's log, served from then on: state/cluster.py's serve_internal); the first
transactional id found makes ``__transaction_state`` likewise, and the first share partition
``__share_group_state``.
"""

import re

from ... import errors
from ...messages import ApiKey, FindCoordinatorResponse
from ..dispatch import handles
from ...uuid import Uuid
from ..state import acls
from ..state.cluster import OFFSETS_TOPIC, SHARE_STATE_TOPIC, TRANSACTIONS_TOPIC
from ..state.features import share_groups_enabled

GROUP, TRANSACTION, SHARE = 0, 1, 2
_INT32 = re.compile(r"[+-]?[0-9]+")  # as Java's Integer.parseInt reads a number


def _share_key_error(key):
    """Why a share partition's key is not ``group:topic id:partition`` (the group may hold colons), or None."""
    group_id, _, rest = key.rpartition(":")
    group_id, _, topic_id = group_id.rpartition(":")
    try:
        Uuid.from_string(topic_id)
    except ValueError:
        return errors.INVALID_REQUEST
    if not group_id or not _INT32.fullmatch(rest) or not -2**31 <= int(rest) < 2**31:
        return errors.INVALID_REQUEST
    return None


@handles(ApiKey.FIND_COORDINATOR, versions=range(0, 7))
def find_coordinator(ctx, request):
    state = ctx.state
    host, port = ctx.endpoint
    node = state.node_id
    if request.key_type == SHARE and ctx.version >= 6 and share_groups_enabled(state):
        return _share_coordinators(ctx, request)
    if request.key_type not in (GROUP, TRANSACTION):
        error = errors.INVALID_REQUEST
        if ctx.version < 4:
            return FindCoordinatorResponse(throttle_time_ms=0, error_code=error.code, node_id=-1, host="", port=-1)
        return FindCoordinatorResponse(throttle_time_ms=0, coordinators=[
            FindCoordinatorResponse.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=error.code)
            for k in request.coordinator_keys])
    resource, refusal = ((acls.GROUP, errors.GROUP_AUTHORIZATION_FAILED) if request.key_type == GROUP
                         else (acls.TRANSACTIONAL_ID, errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))

    def allowed(key):
        found = ctx.allowed(acls.DESCRIBE, resource, key)
        if found:
            if request.key_type == GROUP:
                state.cluster.serve_internal(OFFSETS_TOPIC)
            else:
                state.cluster.serve_internal(TRANSACTIONS_TOPIC)
        return found
    if ctx.version < 4:
        if not allowed(request.key):
            return FindCoordinatorResponse(throttle_time_ms=0, error_code=refusal.code, node_id=-1, host="",
                                           port=-1)
        return FindCoordinatorResponse(throttle_time_ms=0, error_code=errors.NONE.code, node_id=node, host=host,
                                       port=port)
    return FindCoordinatorResponse(throttle_time_ms=0, coordinators=[
        FindCoordinatorResponse.Coordinator(key=k, node_id=node, host=host, port=port, error_code=errors.NONE.code)
        if allowed(k) else
        FindCoordinatorResponse.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=refusal.code)
        for k in request.coordinator_keys])


def _share_coordinators(ctx, request):
    state = ctx.state
    host, port = ctx.endpoint
    allowed = ctx.allowed(acls.CLUSTER_ACTION, acls.CLUSTER, acls.CLUSTER_NAME)
    coordinators = []
    for key in request.coordinator_keys:
        error = _share_key_error(key) if allowed else errors.CLUSTER_AUTHORIZATION_FAILED
        if error is None:
            state.cluster.serve_internal(SHARE_STATE_TOPIC)
            coordinators.append(FindCoordinatorResponse.Coordinator(key=key, node_id=state.node_id, host=host,
                                                                    port=port, error_code=errors.NONE.code))
        else:
            coordinators.append(FindCoordinatorResponse.Coordinator(key=key, node_id=-1, host="", port=-1,
                                                                    error_code=error.code))
    return FindCoordinatorResponse(throttle_time_ms=0, coordinators=coordinators)
