"""JoinGroup (the classic group protocol): join, or rejoin for a rebalance, and wait for the generation.

The group coordinator decides (GroupCoordinator.join, with the rules of
state/groups/classic.py); this module reads the request at its version and
writes the answer. From v4 a new member is
given its id with MEMBER_ID_REQUIRED and joins again with it (KIP-394);
v5 brings static members (group_instance_id), v7 the protocol type in the
answer, v9 skip_assignment. A request that must wait for the rebalance
parks a Waiter with the group and is asked again until it is answered. A
KIP-848 consumer group with members takes classic members too (its
coordinator answers them); an empty one becomes a classic group.
"""

from ...messages import ApiKey, JoinGroupResponse
from ..dispatch import Wait, handles
from ..state.groups import JoinRequest
from ._groups import awaited, group_refused


def _join_request(ctx, request):
    v = ctx.version
    return JoinRequest(
        member_id=request.member_id, instance_id=request.group_instance_id if v >= 5 else None,
        client_id=ctx.header.client_id or "", client_host=ctx.client_host,
        session_timeout_ms=request.session_timeout_ms,
        # v0 has no rebalance timeout: the session timeout serves, as in Kafka.
        rebalance_timeout_ms=request.rebalance_timeout_ms if v >= 1 else request.session_timeout_ms,
        protocol_type=request.protocol_type, protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        require_known_member_id=v >= 4, can_skip_assignment=v >= 9)


@handles(ApiKey.JOIN_GROUP, versions=range(0, 10))
def join_group(ctx, request):
    refused = group_refused(ctx, request.group_id)
    if refused:
        return JoinGroupResponse(throttle_time_ms=0, error_code=refused.code, generation_id=-1,
                                 protocol_type=None, protocol_name=None if ctx.version >= 7 else "", leader="",
                                 skip_assignment=False, member_id="", members=[])
    result = awaited(ctx, lambda now, waiter: ctx.state.groups.join(now, request.group_id,
                                                                    _join_request(ctx, request), waiter))
    return result if isinstance(result, Wait) else _response(ctx.version, result)


def _response(version, r):
    members = [JoinGroupResponse.JoinGroupResponseMember(
        member_id=member_id, group_instance_id=instance_id if version >= 5 else None, metadata=metadata)
        for member_id, instance_id, metadata in r.members]
    return JoinGroupResponse(throttle_time_ms=0, error_code=r.error.code, generation_id=r.generation,
                             protocol_type=r.protocol_type if version >= 7 else None,
                             protocol_name=r.protocol_name if r.protocol_name is not None or version >= 7 else "",
                             leader=r.leader, skip_assignment=r.skip_assignment if version >= 9 else False,
                             member_id=r.member_id, members=members)
