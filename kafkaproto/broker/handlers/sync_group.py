"""SyncGroup: the leader hands in the assignments; every member gets its own.

The group coordinator decides (GroupCoordinator.sync, with the rules of
state/groups/classic.py). Before it sees the request, from v5 a request
without its protocol type and name is INCONSISTENT_GROUP_PROTOCOL (Kafka
checks both are there). A follower's request waits for the leader's.
"""

from ... import errors
from ...messages import ApiKey, SyncGroupResponse
from ..dispatch import Wait, handles
from ..state.groups import SyncResult
from ._groups import awaited, group_refused


def _start(ctx, request, now, waiter):
    v = ctx.version
    if v >= 5 and (request.protocol_type is None or request.protocol_name is None):
        return waiter.complete(SyncResult(errors.INCONSISTENT_GROUP_PROTOCOL))
    ctx.state.groups.sync(now, request.group_id, request.member_id, request.group_instance_id if v >= 3 else None,
                          request.generation_id, request.protocol_type if v >= 5 else None,
                          request.protocol_name if v >= 5 else None,
                          {a.member_id: bytes(a.assignment) for a in request.assignments}, waiter)


@handles(ApiKey.SYNC_GROUP, versions=range(0, 6))
def sync_group(ctx, request):
    refused = group_refused(ctx, request.group_id)
    if refused:
        return SyncGroupResponse(throttle_time_ms=0, error_code=refused.code, protocol_type=None,
                                 protocol_name=None, assignment=b"")
    r = awaited(ctx, lambda now, waiter: _start(ctx, request, now, waiter))
    if isinstance(r, Wait):
        return r
    return SyncGroupResponse(throttle_time_ms=0, error_code=r.error.code,
                             protocol_type=r.protocol_type if ctx.version >= 5 else None,
                             protocol_name=r.protocol_name if ctx.version >= 5 else None, assignment=r.assignment)
