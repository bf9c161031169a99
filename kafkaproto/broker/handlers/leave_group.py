"""LeaveGroup: members leave (v3+: several at once, by member id or by static instance id alone).

Each member is answered on its own (GroupCoordinator.leave); a group that
does not exist answers UNKNOWN_MEMBER_ID for each. Before v3 one member
leaves and the answer is its error, at the top level, as Kafka converts it.
"""

from ... import errors
from ...messages import ApiKey, LeaveGroupResponse
from ..dispatch import handles
from ._groups import advance, group_refused


@handles(ApiKey.LEAVE_GROUP, versions=range(0, 6))
def leave_group(ctx, request):
    now = advance(ctx.state)
    leaving = ([(request.member_id, None)] if ctx.version < 3
               else [(m.member_id, m.group_instance_id) for m in request.members])
    if not request.group_id:
        return LeaveGroupResponse(throttle_time_ms=0, error_code=errors.INVALID_GROUP_ID.code, members=[])
    refused = group_refused(ctx, request.group_id)
    if refused:
        return LeaveGroupResponse(throttle_time_ms=0, error_code=refused.code, members=[])
    results = ctx.state.groups.leave(now, request.group_id, leaving)
    ctx.state.changed()
    if ctx.version < 3:
        return LeaveGroupResponse(throttle_time_ms=0, error_code=results[0].code)
    return LeaveGroupResponse(throttle_time_ms=0, error_code=errors.NONE.code, members=[
        LeaveGroupResponse.MemberResponse(member_id=member_id, group_instance_id=instance_id, error_code=error.code)
        for (member_id, instance_id), error in zip(leaving, results)])
