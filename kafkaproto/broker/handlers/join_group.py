"""JoinGroup (the classic group protocol): join, or rejoin for a rebalance, and wait for the generation.

The rules are the group's (state/groups/classic.py); this module reads the
request at its version and writes the answer. Before the group sees it, an
empty group id is INVALID_GROUP_ID and a session timeout outside
group.min/max.session.timeout.ms is INVALID_SESSION_TIMEOUT; a member id for
a group that does not exist is UNKNOWN_MEMBER_ID. From v4 a new member is
given its id with MEMBER_ID_REQUIRED and joins again with it (KIP-394);
v5 brings static members (group_instance_id), v7 the protocol type in the
answer, v9 skip_assignment. A request that must wait for the rebalance
parks a Waiter with the group and is asked again until it is answered. A
KIP-848 consumer group with members takes classic members too (its
coordinator answers them); an empty one becomes a classic group.
"""

from ... import errors
from ...messages import ApiKey, JoinGroupResponse
from ..dispatch import handles
from ..state.groups import JoinRequest, JoinResult, Waiter
from ._groups import advance, until_next_deadline


def _start(ctx, request, now, waiter):
    config = ctx.state.config
    if not request.group_id:
        return waiter.complete(JoinResult(errors.INVALID_GROUP_ID, member_id=request.member_id))
    if not config["group.min.session.timeout.ms"] <= request.session_timeout_ms <= \
            config["group.max.session.timeout.ms"]:
        return waiter.complete(JoinResult(errors.INVALID_SESSION_TIMEOUT, member_id=request.member_id))
    group = ctx.state.groups.group(request.group_id, create=request.member_id == "")
    if group is None:
        return waiter.complete(JoinResult(errors.UNKNOWN_MEMBER_ID, member_id=request.member_id))
    if group.kind != "classic" and not group.members:  # an empty consumer group becomes a classic one
        group = ctx.state.groups.replace(request.group_id)
    v = ctx.version
    join = JoinRequest(
        member_id=request.member_id, instance_id=request.group_instance_id if v >= 5 else None,
        client_id=ctx.header.client_id or "", client_host=ctx.client_host,
        session_timeout_ms=request.session_timeout_ms,
        # v0 has no rebalance timeout: the session timeout serves, as in Kafka.
        rebalance_timeout_ms=request.rebalance_timeout_ms if v >= 1 else request.session_timeout_ms,
        protocol_type=request.protocol_type, protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        require_known_member_id=v >= 4, can_skip_assignment=v >= 9)
    if group.kind == "consumer":  # its members may speak either protocol (KIP-848's migration)
        return waiter.complete(ctx.state.consumer_groups.classic_join(group, now * 1000, join))
    group.join(now, join, waiter)


@handles(ApiKey.JOIN_GROUP, versions=range(0, 10))
def join_group(ctx, request):
    now = advance(ctx.state)
    waiter = ctx.memo.get("waiter")
    if waiter is None:
        waiter = ctx.memo["waiter"] = Waiter()
        _start(ctx, request, now, waiter)
        ctx.state.groups.save(request.group_id)
        ctx.state.changed()
    if waiter.result is None:
        return until_next_deadline(ctx.state)
    return _response(ctx.version, waiter.result)


def _response(version, r):
    members = [JoinGroupResponse.JoinGroupResponseMember(
        member_id=member_id, group_instance_id=instance_id if version >= 5 else None, metadata=metadata)
        for member_id, instance_id, metadata in r.members]
    return JoinGroupResponse(throttle_time_ms=0, error_code=r.error.code, generation_id=r.generation,
                             protocol_type=r.protocol_type if version >= 7 else None,
                             protocol_name=r.protocol_name if r.protocol_name is not None or version >= 7 else "",
                             leader=r.leader, skip_assignment=r.skip_assignment if version >= 9 else False,
                             member_id=r.member_id, members=members)
