"""Heartbeat: a member is alive; REBALANCE_IN_PROGRESS tells it to join again."""

import time

from ... import errors
from ...messages import ApiKey, HeartbeatResponse
from ..dispatch import handles
from ..state.groups import PREPARING


@handles(ApiKey.HEARTBEAT, versions=range(0, 5))
def heartbeat(ctx, request):
    group = ctx.state.groups.group(request.group_id)
    if group is None:
        return HeartbeatResponse(throttle_time_ms=0, error_code=errors.UNKNOWN_MEMBER_ID.code)
    member, error = group.member(request.member_id, request.group_instance_id if ctx.version >= 3 else None)
    if member is None:
        return HeartbeatResponse(throttle_time_ms=0, error_code=error.code)
    if request.generation_id != group.generation:
        return HeartbeatResponse(throttle_time_ms=0, error_code=errors.ILLEGAL_GENERATION.code)
    member.last_seen = time.monotonic()
    error = errors.REBALANCE_IN_PROGRESS if group.state == PREPARING else errors.NONE
    return HeartbeatResponse(throttle_time_ms=0, error_code=error.code)
