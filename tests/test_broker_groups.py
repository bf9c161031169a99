"""Classic consumer groups on the broker, without sockets: joins, rebalances, static members, offsets."""

import time

import pytest

from kafkaproto import decode_request, encode_request, errors
from kafkaproto.broker.dispatch import HANDLERS, Context, Wait, dispatch
from kafkaproto.messages import (ApiKey, DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest,
                                 JoinGroupRequest, LeaveGroupRequest, ListGroupsRequest, OffsetCommitRequest,
                                 OffsetFetchRequest, RequestHeader, SyncGroupRequest)
from kafkaproto.uuid import Uuid

from kafkaproto.broker.state.groups import ClassicGroup, JoinRequest, Waiter, clock_ms

from test_broker_handlers import create, make_state

# The broker is the same code over either codec implementation (conftest.py: the pure-Python pass).
pytestmark = pytest.mark.above_the_codecs

PROTOCOLS = [JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01meta")]


class Pending:
    """One request in flight: asked again (as the server does) until it stops waiting."""

    def __init__(self, state, body, version, client_id="tests"):
        header = RequestHeader(request_api_key=body.api_key, request_api_version=version, correlation_id=1,
                               client_id=client_id)
        request = decode_request(encode_request(header, body, version)[4:])
        self.ctx = Context(state, request.header, client_host="/127.0.0.1")
        self.body = request.body
        self.version = version

    def poll(self, final=False):
        self.ctx.final = final
        response = dispatch(self.ctx, self.body)
        if isinstance(response, Wait):
            return response
        return type(response).decode(response.encode(self.version), self.version)

    def settle(self, timeout=5.0):
        """Asked again as the server does, until answered: a wait for a group timer (a 0 ms initial rebalance
        delay, say) ends when the timer is due."""
        deadline = time.monotonic() + timeout
        response = self.poll()
        while isinstance(response, Wait) and time.monotonic() < deadline:
            time.sleep(min(response.ms, 20) / 1000)
            response = self.poll(final=True)
        return response


def call(state, body, version):
    return Pending(state, body, version).settle()


def sync_request(**fields):
    """A SyncGroupRequest with the protocol type and name, which v5 must have."""
    return SyncGroupRequest(protocol_type="consumer", protocol_name="range", **fields)


def join_request(version, member_id="", instance_id=None, group="g"):
    return JoinGroupRequest(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=5000 if version else -1,
                            member_id=member_id, protocol_type="consumer", protocols=PROTOCOLS,
                            **({"group_instance_id": instance_id} if version >= 5 else {}))


def join(state, version, member_id="", instance_id=None, group="g"):
    """A JoinGroup as a client makes it: again with the id it is given when MEMBER_ID_REQUIRED."""
    pending = Pending(state, join_request(version, member_id, instance_id, group), version)
    response = pending.settle(timeout=0.1)
    if not isinstance(response, Wait) and response.error_code == errors.MEMBER_ID_REQUIRED.code:
        pending = Pending(state, join_request(version, response.member_id, instance_id, group), version)
        response = pending.settle(timeout=0.1)
    return pending, response


@pytest.fixture
def state(tmp_path):
    state = make_state(tmp_path, **{"group.initial.rebalance.delay.ms": "0"})
    yield state
    state.close()


def versions(key, index):
    served = HANDLERS[key].versions
    return min(max(index, served.start), served.stop - 1)


@pytest.mark.parametrize("index", range(11))
def test_a_group_s_whole_life_at_each_version(state, index):
    create(state, "t", partitions=2)
    topic_id = state.cluster.topics["t"].topic_id
    v = {key: versions(key, index) for key in HANDLERS}
    group = f"g{index}"
    _, joined = join(state, v[ApiKey.JOIN_GROUP], group=group)
    assert joined.error_code == 0 and joined.generation_id == 1 and joined.leader == joined.member_id
    assert [m.member_id for m in joined.members] == [joined.member_id]
    assert joined.members[0].metadata == b"\x00\x01meta" and joined.protocol_name == "range"
    member, generation = joined.member_id, joined.generation_id
    synced = call(state, sync_request(group_id=group, generation_id=generation, member_id=member, assignments=[
        SyncGroupRequest.SyncGroupRequestAssignment(member_id=member, assignment=b"plan")]), v[ApiKey.SYNC_GROUP])
    assert (synced.error_code, synced.assignment) == (0, b"plan")
    beat = call(state, HeartbeatRequest(group_id=group, generation_id=generation, member_id=member),
                v[ApiKey.HEARTBEAT])
    assert beat.error_code == 0
    commit_version = v[ApiKey.OFFSET_COMMIT]
    by_id = commit_version >= 10
    partitions = [OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=10 + p,
                                                                   committed_metadata=f"m{p}") for p in range(2)]
    topic = OffsetCommitRequest.OffsetCommitRequestTopic(partitions=partitions,
                                                         **({"topic_id": topic_id} if by_id else {"name": "t"}))
    committed = call(state, OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation,
                                                member_id=member, topics=[topic]), commit_version)
    assert [p.error_code for p in committed.topics[0].partitions] == [0, 0]
    fetch_version = v[ApiKey.OFFSET_FETCH]
    if fetch_version < 8:
        fetched = call(state, OffsetFetchRequest(group_id=group, topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
            name="t", partition_indexes=[0, 1])]), fetch_version).topics[0]
    else:
        wanted = OffsetFetchRequest.OffsetFetchRequestTopics(
            partition_indexes=[0, 1], **({"topic_id": topic_id} if fetch_version >= 10 else {"name": "t"}))
        fetched = call(state, OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
            group_id=group, topics=[wanted])]), fetch_version).groups[0].topics[0]
        assert fetched.topic_id == (topic_id if fetch_version >= 10 else Uuid.ZERO)
    assert [(p.committed_offset, p.metadata) for p in fetched.partitions] == [(10, "m0"), (11, "m1")]
    described = call(state, DescribeGroupsRequest(groups=[group]), v[ApiKey.DESCRIBE_GROUPS]).groups[0]
    assert (described.group_state, described.protocol_data) == ("Stable", "range")
    assert described.members[0].member_assignment == b"plan"
    listed = call(state, ListGroupsRequest(), v[ApiKey.LIST_GROUPS]).groups
    assert group in [g.group_id for g in listed]
    assert call(state, DeleteGroupsRequest(groups_names=[group]), v[ApiKey.DELETE_GROUPS]).results[0].error_code == \
        errors.NON_EMPTY_GROUP.code
    leave_version = v[ApiKey.LEAVE_GROUP]
    leave = (LeaveGroupRequest(group_id=group, member_id=member) if leave_version < 3 else
             LeaveGroupRequest(group_id=group, members=[LeaveGroupRequest.MemberIdentity(member_id=member)]))
    assert call(state, leave, leave_version).error_code == 0
    assert call(state, DeleteGroupsRequest(groups_names=[group]), v[ApiKey.DELETE_GROUPS]).results[0].error_code == 0
    assert group not in [g.group_id for g in call(state, ListGroupsRequest(), v[ApiKey.LIST_GROUPS]).groups]


def test_a_second_member_makes_the_group_rebalance(state):
    _, first = join(state, 9)
    a = first.member_id
    call(state, sync_request(group_id="g", generation_id=1, member_id=a, assignments=[
        SyncGroupRequest.SyncGroupRequestAssignment(member_id=a, assignment=b"all")]), 5)
    b_join, second = join(state, 9)
    assert isinstance(second, Wait)  # b waits for a to join again
    beat = call(state, HeartbeatRequest(group_id="g", generation_id=1, member_id=a), 4)
    assert beat.error_code == errors.REBALANCE_IN_PROGRESS.code
    _, again = join(state, 9, member_id=a)
    assert again.generation_id == 2 and again.leader == a
    assert {m.member_id for m in again.members} == {a, b_join.body.member_id}
    second = b_join.poll()
    assert second.generation_id == 2 and second.leader == a and second.members == []
    b = second.member_id
    follower = Pending(state, sync_request(group_id="g", generation_id=2, member_id=b), 5)
    assert isinstance(follower.poll(), Wait)  # until the leader's assignment arrives
    leader = call(state, sync_request(group_id="g", generation_id=2, member_id=a, assignments=[
        SyncGroupRequest.SyncGroupRequestAssignment(member_id=a, assignment=b"p0"),
        SyncGroupRequest.SyncGroupRequestAssignment(member_id=b, assignment=b"p1")]), 5)
    assert leader.assignment == b"p0" and follower.poll().assignment == b"p1"
    stale = call(state, HeartbeatRequest(group_id="g", generation_id=1, member_id=b), 4)
    assert stale.error_code == errors.ILLEGAL_GENERATION.code


def test_session_timeouts_drop_members(state):
    _, first = join(state, 9)
    call(state, sync_request(group_id="g", generation_id=1,
                                 member_id=first.member_id, assignments=[]), 5)
    assert not state.groups.tick(clock_ms() + 9000)
    assert state.groups.tick(clock_ms() + 11000)
    group = state.groups.group("g")
    assert not group.members and group.state == "Empty" and group.generation == 2


def test_a_static_member_back_under_a_new_id_fences_the_old_one(state):
    _, first = join(state, 9, instance_id="host-1")
    old = first.member_id
    call(state, sync_request(group_id="g", generation_id=1, member_id=old, group_instance_id="host-1",
                                 assignments=[]), 5)
    _, back = join(state, 9, instance_id="host-1")
    assert back.member_id != old and back.error_code == 0
    fenced = call(state, HeartbeatRequest(group_id="g", generation_id=back.generation_id, member_id=old,
                                          group_instance_id="host-1"), 4)
    assert fenced.error_code == errors.FENCED_INSTANCE_ID.code
    left = call(state, LeaveGroupRequest(group_id="g", members=[
        LeaveGroupRequest.MemberIdentity(group_instance_id="host-1")]), 5)
    assert left.members[0].error_code == 0 and not state.groups.group("g").members


def test_commits_need_the_current_member_and_generation(state):
    create(state, "t")
    _, first = join(state, 9)

    def commit(generation, member):
        topic = OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=5)])
        return call(state, OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=generation,
                                               member_id=member, topics=[topic]), 8).topics[0].partitions[0]

    assert commit(1, "someone").error_code == errors.UNKNOWN_MEMBER_ID.code
    assert commit(7, first.member_id).error_code == errors.ILLEGAL_GENERATION.code
    assert commit(1, first.member_id).error_code == errors.REBALANCE_IN_PROGRESS.code  # not synced yet
    call(state, sync_request(group_id="g", generation_id=1, member_id=first.member_id, assignments=[]), 5)
    assert commit(1, first.member_id).error_code == 0
    assert commit(-1, "").error_code == errors.UNKNOWN_MEMBER_ID.code  # the group has members


def test_offsets_survive_a_restart_and_go_with_a_deleted_topic(tmp_path):
    state = make_state(tmp_path)
    create(state, "t")
    topic = OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
        OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=42,
                                                         committed_leader_epoch=3, committed_metadata="meta")])
    assert call(state, OffsetCommitRequest(group_id="solo", generation_id_or_member_epoch=-1, member_id="",
                                           topics=[topic]), 9).topics[0].partitions[0].error_code == 0
    state.close()
    state = make_state(tmp_path)
    fetched = call(state, OffsetFetchRequest(group_id="solo", topics=None), 7).topics[0].partitions[0]
    assert (fetched.committed_offset, fetched.committed_leader_epoch, fetched.metadata) == (42, 3, "meta")
    state.delete_topic(state.cluster.topics["t"])
    assert call(state, OffsetFetchRequest(group_id="solo", topics=None), 7).topics == []
    state.close()


def test_offsets_of_empty_groups_expire(state):
    state.groups.commit("idle", [(("t", 0), (5, -1, "", 1000))])
    state.groups.commit("busy", [(("t", 0), (7, -1, "", 1000))])
    busy = state.groups.group("busy")
    busy.join(0, join_of("", version=3), Waiter())
    assert busy.state == "PreparingRebalance"
    assert state.groups.expire_offsets(now_ms=1000 + 60_000, retention_ms=120_000) == 0
    assert state.groups.expire_offsets(now_ms=1000 + 180_000, retention_ms=120_000) == 1
    assert "idle" not in state.groups.offsets.by_group and "idle" not in state.groups.groups  # gone with them
    assert state.groups.committed("busy")[("t", 0)][0] == 7


# ---- the coordinator itself, on a clock of its own: the rules no quick exchange with Kafka shows ----------------

SUB = [("range", b"r")]


def join_of(member_id, instance_id=None, protocols=SUB, session_ms=10000, rebalance_ms=5000, version=9):
    return JoinRequest(member_id=member_id, instance_id=instance_id, client_id="c", client_host="/h",
                       session_timeout_ms=session_ms, rebalance_timeout_ms=rebalance_ms, protocol_type="consumer",
                       protocols=protocols, require_known_member_id=version >= 4, can_skip_assignment=version >= 9)


class Clocked:
    """A classic group and the time it has been moved to (milliseconds, as the coordinator counts)."""

    def __init__(self, delay_ms=0, max_size=2147483647):
        self.group = ClassicGroup("g", {"group.initial.rebalance.delay.ms": delay_ms, "group.max.size": max_size})
        self.now = 100_000.0

    def at(self, seconds):
        """Move to now + seconds, firing what falls due on the way."""
        self.now += seconds * 1000
        while self.group.fire_next(self.now):
            pass
        return self

    def join(self, member_id="", **kw):
        waiter = Waiter()
        self.group.join(self.now, join_of(member_id, **kw), waiter)
        return waiter

    def first(self, **kw):
        """The first member of a new group (the initial rebalance's 0 ms delay passed): its id."""
        waiter = self.join(**kw)
        if waiter.result is not None and waiter.result.error is errors.MEMBER_ID_REQUIRED:
            waiter = self.join(waiter.result.member_id, **kw)
        self.at(0)
        return waiter.result.member_id

    def member(self, **kw):
        """A dynamic member, through MEMBER_ID_REQUIRED: (its id, its JoinGroup's waiter)."""
        given = self.join(**kw).result
        assert given.error is errors.MEMBER_ID_REQUIRED
        return given.member_id, self.join(given.member_id, **kw)

    def sync(self, member_id, assignments=None, generation=None):
        waiter = Waiter()
        self.group.sync(self.now, member_id, None, self.group.generation if generation is None else generation,
                        None, None, assignments or {}, waiter)
        return waiter

    def stable(self, *members):
        """Everyone syncs, the first as the leader."""
        for member_id in members[1:]:
            self.sync(member_id)
        assert self.sync(members[0]).result.error is errors.NONE and self.group.state == "Stable"


def test_the_rebalance_timeout_drops_dynamic_members_that_did_not_rejoin():
    c = Clocked()
    a = c.first()
    c.stable(a)
    b, joining = c.member(rebalance_ms=3000)
    assert c.group.state == "PreparingRebalance" and joining.result is None
    assert c.group.heartbeat(c.now, a, None, 1) is errors.REBALANCE_IN_PROGRESS  # a stays alive, but not joined
    c.at(4.9)
    assert joining.result is None  # the group's rebalance timeout is its members' longest (a's 5 s)
    c.at(0.2)
    assert joining.result.generation == 2 and joining.result.leader == b and list(c.group.members) == [b]


def test_a_static_member_that_did_not_rejoin_stays_until_it_fails_to_sync():
    c = Clocked()
    s = c.first(instance_id="host-1", session_ms=8000)
    c.stable(s)
    d, joining = c.member()
    c.at(5.1)  # the rebalance timeout: d gets its generation and leads; s (static) is still a member
    assert joining.result.generation == 2 and joining.result.leader == d and set(c.group.members) == {s, d}
    c.stable(d)
    c.at(4.8)
    assert s in c.group.members
    c.at(0.3)  # s sent no SyncGroup within the rebalance timeout: it is dropped and the rest rebalance
    assert list(c.group.members) == [d] and c.group.state == "PreparingRebalance"


def test_a_pending_member_holds_a_rebalance_until_its_session_ends():
    c = Clocked()
    a = c.first()
    c.stable(a)
    given = c.join(session_ms=2000).result  # MEMBER_ID_REQUIRED, and it never comes back
    assert given.error is errors.MEMBER_ID_REQUIRED and c.group.state == "Stable"
    rejoining = c.join(a)  # the leader rejoins: a rebalance, which waits for the pending id too
    assert rejoining.result is None
    c.at(2.1)
    assert rejoining.result.generation == 2 and not c.group.pending_join


def test_members_that_never_sync_are_dropped_after_the_rebalance_timeout():
    c = Clocked()
    a = c.first()
    c.stable(a)
    b, joining = c.member()
    c.join(a)
    assert joining.result.generation == 2
    assert c.sync(a, {a: b"x", b: b"y"}).result.assignment == b"x"  # b never sends SyncGroup
    c.at(5.1)
    assert list(c.group.members) == [a] and c.group.state == "PreparingRebalance"


def test_a_new_member_waits_at_most_the_new_member_join_timeout():
    c = Clocked()
    a = c.first(session_ms=600_000, rebalance_ms=600_000)
    c.stable(a)
    _, joining = c.member(session_ms=600_000, rebalance_ms=600_000)
    c.group.heartbeat(c.now, a, None, 1)
    c.at(299)
    assert joining.result is None
    c.at(2)  # five minutes: the new member is dropped (it may have gone), answered UNKNOWN_MEMBER_ID
    assert joining.result.error is errors.UNKNOWN_MEMBER_ID and list(c.group.members) == [a]


def test_the_initial_rebalance_delay_grows_while_members_come_up_to_the_rebalance_timeout():
    c = Clocked(delay_ms=3000)
    _, first = c.member(rebalance_ms=10000)
    c.at(2)
    _, second = c.member(rebalance_ms=10000)
    c.at(1.1)  # 3 s: a member came meanwhile, so the delay starts again
    assert first.result is None
    c.at(3)
    assert first.result.generation == second.result.generation == 1
    assert len(first.result.members) == 2


def test_group_max_size():
    c = Clocked(max_size=2)
    a = c.first()
    c.stable(a)
    b, _ = c.member()
    cc, third = c.member()  # a has not rejoined: two are waiting, the most there may be
    assert c.join().result.error is errors.GROUP_MAX_SIZE_REACHED
    refused = c.join(a)  # a member that rejoins last is refused too, and removed
    assert refused.result.error is errors.GROUP_MAX_SIZE_REACHED and a not in c.group.members
    c.at(5.1)
    assert third.result.generation == 2 and set(c.group.members) == {b, cc}
    leader = third.result.leader
    follower = ({b, cc} - {leader}).pop()
    c.stable(leader, follower)
    assert c.join().result.error is errors.GROUP_MAX_SIZE_REACHED  # two are members
    assert c.join(follower).result.generation == 2  # a member rejoins, whatever the size


def test_a_static_member_replaced_in_a_stable_group_keeps_its_place():
    for version in (5, 9):
        c = Clocked()
        s = c.first(instance_id="host-1", version=version)
        assert c.sync(s, {s: b"plan"}).result.assignment == b"plan"
        back = c.join(instance_id="host-1", version=version).result
        assert back.error is errors.NONE and back.member_id != s and back.generation == 1
        assert c.group.state == "Stable" and c.group.leader == back.member_id
        if version >= 9:  # the leader is told it need not assign again, and gets the members
            assert back.skip_assignment and back.leader == back.member_id and len(back.members) == 1
        else:  # before v9 the answer names the leader as it was: the old id
            assert not back.skip_assignment and back.leader == s and back.members == ()
        assert c.sync(back.member_id).result.assignment == b"plan"
        assert c.group.heartbeat(c.now, s, "host-1", 1) is errors.FENCED_INSTANCE_ID


def test_a_waiting_static_member_replaced_is_fenced():
    c = Clocked()
    s = c.first(instance_id="host-1")
    a, _ = c.member()
    c.join(s, instance_id="host-1")
    c.stable(s, a)
    c.member()  # a rebalance, in which s rejoins and waits for a
    old = c.join(s, instance_id="host-1")
    assert old.result is None
    new = c.join(instance_id="host-1")  # s restarted: its old JoinGroup is fenced, the new one waits
    assert old.result.error is errors.FENCED_INSTANCE_ID and new.result is None
    c.join(a)
    assert new.result.generation == 3 and new.result.member_id in c.group.members and s not in c.group.members


def test_a_tie_between_protocols_goes_as_java_orders_the_names():
    from kafkaproto.broker.state.groups.assignors import java_order, string_hash

    # What java.util.HashMap's key set gives (checked with java): Kafka takes the first of the most voted.
    assert java_order(["range", "roundrobin"], string_hash) == ["range", "roundrobin"]
    assert java_order(["roundrobin", "range", "sticky", "cooperative-sticky"], string_hash) == [
        "sticky", "range", "roundrobin", "cooperative-sticky"]
    c = Clocked()
    both = [("range", b""), ("sticky", b"")]
    a = c.first(protocols=both)
    c.stable(a)
    b, _ = c.member(protocols=both[::-1])
    assert c.join(a, protocols=both).result.protocol_name == "sticky"  # one vote each


def test_a_follower_s_sync_is_answered_when_it_leaves_or_the_group_rebalances():
    c = Clocked()
    a = c.first()
    c.stable(a)
    b, _ = c.member()
    c.join(a)
    waiting = c.sync(b)
    assert waiting.result is None
    c.join(a, protocols=[("range", b"new")])  # the leader rejoins with new metadata: a new rebalance
    assert waiting.result.error is errors.REBALANCE_IN_PROGRESS
    c.join(b)
    waiting = c.sync(b)
    assert c.group.leave(c.now, [(b, None)]) == [errors.NONE]
    assert waiting.result.error is errors.UNKNOWN_MEMBER_ID
