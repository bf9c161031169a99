"""FindCoordinator: this broker coordinates every group and every transactional id.

v0-3 ask for one key; v4+ for a list of them, answered one by one.
"""

from ... import errors
from ...messages import ApiKey, FindCoordinatorResponse
from ..dispatch import handles

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
    if ctx.version < 4:
        return FindCoordinatorResponse(throttle_time_ms=0, error_code=errors.NONE.code, node_id=node, host=host,
                                       port=port)
    return FindCoordinatorResponse(throttle_time_ms=0, coordinators=[
        FindCoordinatorResponse.Coordinator(key=k, node_id=node, host=host, port=port, error_code=errors.NONE.code)
        for k in request.coordinator_keys])
