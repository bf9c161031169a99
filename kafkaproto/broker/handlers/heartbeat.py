"""Heartbeat: a member is alive; REBALANCE_IN_PROGRESS tells it to join again (state/groups/classic.py)."""

from ... import errors
from ...messages import ApiKey, HeartbeatResponse
from ..dispatch import handles
from ._groups import advance


@handles(ApiKey.HEARTBEAT, versions=range(0, 5))
def heartbeat(ctx, request):
    now = advance(ctx.state)
    if not request.group_id:
        error = errors.INVALID_GROUP_ID
    else:
        group = ctx.state.groups.group(request.group_id)
        if group is None:
            error = errors.UNKNOWN_MEMBER_ID
        elif group.kind == "consumer":
            error = ctx.state.consumer_groups.classic_heartbeat(
                group, now * 1000, request.member_id, request.group_instance_id if ctx.version >= 3 else None,
                request.generation_id)
        else:
            error = group.heartbeat(now, request.member_id, request.group_instance_id if ctx.version >= 3 else None,
                                    request.generation_id)
    return HeartbeatResponse(throttle_time_ms=0, error_code=error.code)
