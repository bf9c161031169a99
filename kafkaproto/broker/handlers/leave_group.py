"""LeaveGroup: members leave (v3+: several at once, by member id or static instance id); the rest rebalance."""

import time

from ... import errors
from ...messages import ApiKey, LeaveGroupResponse
from ..dispatch import handles


@handles(ApiKey.LEAVE_GROUP, versions=range(0, 6))
def leave_group(ctx, request):
    state = ctx.state
    group = state.groups.group(request.group_id)
    leaving = ([(request.member_id, None)] if ctx.version < 3
               else [(m.member_id, m.group_instance_id) for m in request.members])
    results = []
    now = time.monotonic()
    for member_id, instance_id in leaving:
        error = errors.UNKNOWN_MEMBER_ID
        if group is not None:
            if instance_id is not None:
                known = group.static.get(instance_id)
                if known is None:
                    error = errors.UNKNOWN_MEMBER_ID
                elif member_id and member_id != known:
                    error = errors.FENCED_INSTANCE_ID
                else:
                    member_id, error = known, errors.NONE
            elif member_id in group.members:
                error = errors.NONE
            if error is errors.NONE:
                state.groups.leave(group, member_id, now)
                state.changed()
        results.append(LeaveGroupResponse.MemberResponse(member_id=member_id, group_instance_id=instance_id,
                                                         error_code=error.code))
    if ctx.version < 3:
        return LeaveGroupResponse(throttle_time_ms=0, error_code=results[0].error_code)
    return LeaveGroupResponse(throttle_time_ms=0, error_code=errors.NONE.code, members=results)
