"""SyncGroup: the leader hands in the assignments; every member gets its own.

The rules are the group's (state/groups/classic.py). Before it sees the
request, an empty group id is INVALID_GROUP_ID, and from v5 a request
without its protocol type and name is INCONSISTENT_GROUP_PROTOCOL (Kafka
checks both are there); a group that does not exist is UNKNOWN_MEMBER_ID.
A follower's request waits for the leader's.
"""

from ... import errors
from ...messages import ApiKey, SyncGroupResponse
from ..dispatch import handles
from ..state.groups import SyncResult, Waiter
from ._groups import advance, until_next_deadline


def _start(ctx, request, now, waiter):
    v = ctx.version
    if v >= 5 and (request.protocol_type is None or request.protocol_name is None):
        return waiter.complete(SyncResult(errors.INCONSISTENT_GROUP_PROTOCOL))
    if not request.group_id:
        return waiter.complete(SyncResult(errors.INVALID_GROUP_ID))
    group = ctx.state.groups.group(request.group_id)
    if group is None:
        return waiter.complete(SyncResult(errors.UNKNOWN_MEMBER_ID))
    if group.kind == "consumer":
        return waiter.complete(ctx.state.consumer_groups.classic_sync(
            group, now * 1000, request.member_id, request.group_instance_id if v >= 3 else None,
            request.generation_id, request.protocol_type if v >= 5 else None,
            request.protocol_name if v >= 5 else None))
    assignments = {a.member_id: bytes(a.assignment) for a in request.assignments}
    group.sync(now, request.member_id, request.group_instance_id if v >= 3 else None, request.generation_id,
               request.protocol_type if v >= 5 else None, request.protocol_name if v >= 5 else None, assignments,
               waiter)


@handles(ApiKey.SYNC_GROUP, versions=range(0, 6))
def sync_group(ctx, request):
    now = advance(ctx.state)
    waiter = ctx.memo.get("waiter")
    if waiter is None:
        waiter = ctx.memo["waiter"] = Waiter()
        _start(ctx, request, now, waiter)
        ctx.state.groups.save(request.group_id)  # the leader's: the stable generation is written before answering
        ctx.state.changed()
    if waiter.result is None:
        return until_next_deadline(ctx.state)
    r = waiter.result
    return SyncGroupResponse(throttle_time_ms=0, error_code=r.error.code,
                             protocol_type=r.protocol_type if ctx.version >= 5 else None,
                             protocol_name=r.protocol_name if ctx.version >= 5 else None, assignment=r.assignment)
