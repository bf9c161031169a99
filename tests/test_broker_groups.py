"""Classic consumer groups on the broker, without sockets: joins, rebalances, static members, offsets."""

import time

import pytest

from kafkaproto import decode_request, encode_request, errors
from kafkaproto.broker.dispatch import HANDLERS, Context, Wait, dispatch
from kafkaproto.messages import (ApiKey, DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest,
                                 JoinGroupRequest, LeaveGroupRequest, ListGroupsRequest, OffsetCommitRequest,
                                 OffsetFetchRequest, RequestHeader, SyncGroupRequest)
from kafkaproto.uuid import Uuid

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


def call(state, body, version):
    return Pending(state, body, version).poll(final=True)


def join_request(version, member_id="", instance_id=None, group="g"):
    return JoinGroupRequest(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=5000 if version else -1,
                            member_id=member_id, protocol_type="consumer", protocols=PROTOCOLS,
                            **({"group_instance_id": instance_id} if version >= 5 else {}))


def join(state, version, member_id="", instance_id=None, group="g"):
    """A JoinGroup as a client makes it: again with the id it is given when MEMBER_ID_REQUIRED."""
    pending = Pending(state, join_request(version, member_id, instance_id, group), version)
    response = pending.poll()
    if not isinstance(response, Wait) and response.error_code == errors.MEMBER_ID_REQUIRED.code:
        pending = Pending(state, join_request(version, response.member_id, instance_id, group), version)
        response = pending.poll()
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
    synced = call(state, SyncGroupRequest(group_id=group, generation_id=generation, member_id=member, assignments=[
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
    call(state, SyncGroupRequest(group_id="g", generation_id=1, member_id=a, assignments=[
        SyncGroupRequest.SyncGroupRequestAssignment(member_id=a, assignment=b"all")]), 5)
    b_join, second = join(state, 9)
    assert isinstance(second, Wait)  # b waits for a to join again
    beat = call(state, HeartbeatRequest(group_id="g", generation_id=1, member_id=a), 4)
    assert beat.error_code == errors.REBALANCE_IN_PROGRESS.code
    _, again = join(state, 9, member_id=a)
    assert again.generation_id == 2 and again.leader == a
    assert {m.member_id for m in again.members} == {a, b_join.ctx.memo["member"]}
    second = b_join.poll()
    assert second.generation_id == 2 and second.leader == a and second.members == []
    b = second.member_id
    follower = Pending(state, SyncGroupRequest(group_id="g", generation_id=2, member_id=b), 5)
    assert isinstance(follower.poll(), Wait)  # until the leader's assignment arrives
    leader = call(state, SyncGroupRequest(group_id="g", generation_id=2, member_id=a, assignments=[
        SyncGroupRequest.SyncGroupRequestAssignment(member_id=a, assignment=b"p0"),
        SyncGroupRequest.SyncGroupRequestAssignment(member_id=b, assignment=b"p1")]), 5)
    assert leader.assignment == b"p0" and follower.poll().assignment == b"p1"
    stale = call(state, HeartbeatRequest(group_id="g", generation_id=1, member_id=b), 4)
    assert stale.error_code == errors.ILLEGAL_GENERATION.code


def test_a_member_that_stops_rejoining_is_dropped_after_the_rebalance_timeout(state):
    _, first = join(state, 9)
    a = first.member_id
    call(state, SyncGroupRequest(group_id="g", generation_id=1, member_id=a, assignments=[]), 5)
    b_join, _ = join(state, 9)
    group = state.groups.group("g")
    assert b_join.poll() == Wait(b_join.poll().ms)
    group.rebalance_deadline = time.monotonic() - 1  # a never rejoins
    second = b_join.poll()
    assert second.generation_id == 2 and list(group.members) == [second.member_id]


def test_session_timeouts_drop_members(state):
    _, first = join(state, 9)
    call(state, SyncGroupRequest(group_id="g", generation_id=1, member_id=first.member_id, assignments=[]), 5)
    assert state.groups.expire(time.monotonic() + 11)
    group = state.groups.group("g")
    assert not group.members and group.state == "Empty"


def test_a_static_member_back_under_a_new_id_fences_the_old_one(state):
    _, first = join(state, 9, instance_id="host-1")
    old = first.member_id
    call(state, SyncGroupRequest(group_id="g", generation_id=1, member_id=old, group_instance_id="host-1",
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
    call(state, SyncGroupRequest(group_id="g", generation_id=1, member_id=first.member_id, assignments=[]), 5)
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
    from kafkaproto.broker.state.groups import Member
    state.groups.commit("idle", [(("t", 0), (5, -1, "", 1000))])
    state.groups.commit("busy", [(("t", 0), (7, -1, "", 1000))])
    state.groups.group("busy", create=True).members["m"] = Member("m", None, "c", "/h")
    assert state.groups.expire_offsets(now_ms=1000 + 60_000, retention_ms=120_000) == 0
    assert state.groups.expire_offsets(now_ms=1000 + 180_000, retention_ms=120_000) == 1
    assert "idle" not in [g for g, o in state.groups.offsets.items() if o]
    assert state.groups.committed("busy")[("t", 0)][0] == 7
