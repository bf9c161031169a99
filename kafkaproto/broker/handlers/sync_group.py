"""SyncGroup: the leader hands in the assignments; every member gets its own.

The other members' requests wait until the leader's arrives. A request for
another generation is ILLEGAL_GENERATION; one during a new rebalance is
REBALANCE_IN_PROGRESS (the member joins again).
"""

import time

from ... import errors
from ...messages import ApiKey, SyncGroupResponse
from ..dispatch import Wait, handles
from ..state.groups import COMPLETING, PREPARING, STABLE


def _error(ctx, error):
    return SyncGroupResponse(throttle_time_ms=0, error_code=error.code, assignment=b"")


@handles(ApiKey.SYNC_GROUP, versions=range(0, 6))
def sync_group(ctx, request):
    state = ctx.state
    group = state.groups.group(request.group_id)
    if group is None:
        return _error(ctx, errors.UNKNOWN_MEMBER_ID)
    member, error = group.member(request.member_id, request.group_instance_id if ctx.version >= 3 else None)
    if member is None:
        return _error(ctx, error)
    if request.generation_id != group.generation:
        return _error(ctx, errors.ILLEGAL_GENERATION)
    if group.state == PREPARING:
        return _error(ctx, errors.REBALANCE_IN_PROGRESS)
    if ctx.version >= 5 and ((request.protocol_type is not None and request.protocol_type != group.protocol_type)
                             or (request.protocol_name is not None and request.protocol_name != group.protocol_name)):
        return _error(ctx, errors.INCONSISTENT_GROUP_PROTOCOL)
    member.last_seen = time.monotonic()
    if group.state == COMPLETING and member.member_id == group.leader:
        given = {a.member_id: bytes(a.assignment) for a in request.assignments}
        for m in group.members.values():
            m.assignment = given.get(m.member_id, b"")
        group.state = STABLE
        group.assigned = True
        state.changed()
    if group.state == STABLE:
        return SyncGroupResponse(throttle_time_ms=0, error_code=errors.NONE.code,
                                 protocol_type=group.protocol_type if ctx.version >= 5 else None,
                                 protocol_name=group.protocol_name if ctx.version >= 5 else None,
                                 assignment=member.assignment)
    if ctx.final:
        return _error(ctx, errors.REBALANCE_IN_PROGRESS)
    return Wait(max(member.rebalance_timeout_ms, 1))
