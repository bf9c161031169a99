"""JoinGroup (the classic group protocol): join, or rejoin for a rebalance, and wait for the generation.

A new member without an id gets one: from v4 it is sent back with
MEMBER_ID_REQUIRED and the member joins again with it (KIP-394). A static
member (group_instance_id, v5+) that comes back under a new id replaces its
old self. A member that joins again with the same protocols while the
group completes a rebalance (or is stable, and it does not lead) gets the
current generation back without a new rebalance, as in Kafka. Otherwise
the request waits (the handler returns Wait) until the rebalance completes;
the leader's response lists every member with its metadata for the chosen
protocol, so it can compute the assignment.
"""

import time

from ... import errors
from ...messages import ApiKey, JoinGroupResponse
from ..dispatch import Wait, handles
from ..state.groups import COMPLETING, EMPTY, PREPARING, STABLE, Member


def _error(ctx, error, member_id=""):
    return JoinGroupResponse(throttle_time_ms=0, error_code=error.code, generation_id=-1,
                             protocol_name=None if ctx.version >= 7 else "", leader="", member_id=member_id,
                             members=[])


def _join(ctx, request, now):
    """The first pass: register the member; (member id, None) or (None, error response)."""
    state = ctx.state
    config = state.config
    if not request.group_id:
        return None, _error(ctx, errors.INVALID_GROUP_ID)
    if not config["group.min.session.timeout.ms"] <= request.session_timeout_ms <= \
            config["group.max.session.timeout.ms"]:
        return None, _error(ctx, errors.INVALID_SESSION_TIMEOUT, request.member_id)
    protocols = [(p.name, bytes(p.metadata)) for p in request.protocols]
    group = state.groups.group(request.group_id, create=True)
    if not protocols or not request.protocol_type or not group.supports(request.protocol_type, protocols):
        return None, _error(ctx, errors.INCONSISTENT_GROUP_PROTOCOL, request.member_id)
    instance_id = request.group_instance_id if ctx.version >= 5 else None
    member_id = request.member_id
    if member_id == "":
        member_id = state.groups.new_member_id(ctx.header.client_id or "")
        if instance_id is not None:
            old = group.static.get(instance_id)
            if old is not None:
                group.remove(old)  # the old instance is fenced from now on
        elif ctx.version >= 4:
            group.pending_ids.add(member_id)
            return None, _error(ctx, errors.MEMBER_ID_REQUIRED, member_id)
    elif member_id not in group.members and member_id not in group.pending_ids:
        return None, _error(ctx, errors.UNKNOWN_MEMBER_ID, member_id)
    elif instance_id is not None and group.static.get(instance_id, member_id) != member_id:
        return None, _error(ctx, errors.FENCED_INSTANCE_ID, member_id)
    group.pending_ids.discard(member_id)
    member = group.members.get(member_id)
    if member is not None and member.protocols == protocols and (
            group.state == COMPLETING or group.state == STABLE and member_id != group.leader):
        # Nothing changed for this member: as in Kafka, it gets the current generation again, no rebalance.
        member.last_seen = now
        return member_id, None
    if member is None:
        member = group.members[member_id] = Member(member_id, instance_id, ctx.header.client_id or "",
                                                   ctx.client_host)
        if instance_id is not None:
            group.static[instance_id] = member_id
    member.session_timeout_ms = request.session_timeout_ms
    member.rebalance_timeout_ms = request.rebalance_timeout_ms if ctx.version >= 1 else request.session_timeout_ms
    member.protocol_type = request.protocol_type
    member.protocols = protocols
    member.last_seen = now
    group.joins += 1
    member.join_order = group.joins
    group.protocol_type = request.protocol_type
    if group.state in (EMPTY, STABLE, COMPLETING):
        delay = config["group.initial.rebalance.delay.ms"] if group.state == EMPTY else 0
        group.prepare_rebalance(now, delay)
    member.joined = True
    group.try_complete_join(now)
    state.changed()
    return member_id, None


@handles(ApiKey.JOIN_GROUP, versions=range(0, 10))
def join_group(ctx, request):
    now = time.monotonic()
    memo = ctx.memo
    if "member" not in memo:
        member_id, refused = _join(ctx, request, now)
        if refused is not None:
            return refused
        group = ctx.state.groups.group(request.group_id)
        memo["member"] = member_id
        memo["generation"] = group.generation if group.state == PREPARING else group.generation - 1
    group = ctx.state.groups.group(request.group_id)
    member = group.members.get(memo["member"]) if group is not None else None
    if member is None:
        return _error(ctx, errors.UNKNOWN_MEMBER_ID, memo["member"])
    if group.try_complete_join(now):
        ctx.state.changed()
    if group.state in (COMPLETING, STABLE) and group.generation > memo["generation"]:
        return _response(ctx, group, member)
    if ctx.final and group.state == PREPARING and now >= group.rebalance_deadline:
        return _error(ctx, errors.REBALANCE_IN_PROGRESS, member.member_id)
    until = max(group.rebalance_deadline, group.initial_delay_until or 0)
    return Wait(max(int((until - now) * 1000), 1))


def _response(ctx, group, member):
    members = []
    if member.member_id == group.leader:
        members = [JoinGroupResponse.JoinGroupResponseMember(
            member_id=m.member_id, group_instance_id=m.instance_id if ctx.version >= 5 else None,
            metadata=group.metadata_of(m)) for m in sorted(group.members.values(), key=lambda m: m.join_order)]
    return JoinGroupResponse(throttle_time_ms=0, error_code=errors.NONE.code, generation_id=group.generation,
                             protocol_type=group.protocol_type if ctx.version >= 7 else None,
                             protocol_name=group.protocol_name, leader=group.leader, member_id=member.member_id,
                             members=members)
