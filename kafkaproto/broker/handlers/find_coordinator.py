"""FindCoordinator: this broker coordinates every group and every transactional id.

v0-3 ask for one key; v4+ for a list of them, answered one by one. With an authorizer, a key the client may
not DESCRIBE is GROUP_ or TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

The first group found makes Kafka's internal topic ``__consumer_offsets``, as Kafka's coordinator makes it (here
it is the group coordinator's log, served from then on: state/cluster.py's create_offsets_topic); the first
transactional id found makes ``__transaction_state`` likewise (create_transactions_topic).
"""

from ... import errors
from ...messages import ApiKey, FindCoordinatorResponse
from ..dispatch import handles
from ..state import acls

GROUP, TRANSACTION = 0, 1


@handles(ApiKey.FIND_COORDINATOR, versions=range(0, 7))
def find_coordinator(ctx, request):
    state = ctx.state
    host, port = ctx.endpoint
    node = state.node_id
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
                state.cluster.create_offsets_topic()
            else:
                state.cluster.create_transactions_topic()
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
