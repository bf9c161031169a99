"""Heartbeat: a member is alive; REBALANCE_IN_PROGRESS tells it to join again (GroupCoordinator.heartbeat)."""

from ...messages import ApiKey, HeartbeatResponse
from ..dispatch import handles
from ._groups import advance, group_refused


@handles(ApiKey.HEARTBEAT, versions=range(0, 5))
def heartbeat(ctx, request):
    refused = group_refused(ctx, request.group_id)
    if refused:
        return HeartbeatResponse(throttle_time_ms=0, error_code=refused.code)
    error = ctx.state.groups.heartbeat(advance(ctx.state), request.group_id, request.member_id,
                                       request.group_instance_id if ctx.version >= 3 else None, request.generation_id)
    return HeartbeatResponse(throttle_time_ms=0, error_code=error.code)
