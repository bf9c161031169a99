"""Groups across a broker restart: members, generations, epochs, assignments and static members come back.

Kafka keeps a group's metadata in ``__consumer_offsets`` beside its committed offsets and loads it again at
start-up, so that members whose clients keep heartbeating carry on without a rebalance, and a consumer reads no
record twice. These tests stop the broker as a crash does (SIGKILL of a subprocess broker, or, in process, the
files let go with nothing more written and no clean-shutdown marker), start it again on the same data directory
(and port), and check that the clients go on where they were.
"""

import socket
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaproto import errors
from kafkaproto.broker import Broker
from kafkaproto.broker.dispatch import Wait
from kafkaproto.broker.state.groups import OFFSETS_DIR, clock_ms
from kafkaproto.broker.state.groups.embedded import write_assignment
from kafkaproto.connection import ClientConnection
from kafkaproto.messages import (ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, CreateTopicsRequest,
                                 DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest, JoinGroupRequest,
                                 LeaveGroupRequest, ListGroupsRequest, OffsetCommitRequest, OffsetFetchRequest,
                                 RequestHeader, SyncGroupRequest)

from test_broker_consumer_groups import Member, describe, subscription, topic_id
from test_broker_groups import Pending, call, join, sync_request
from test_broker_handlers import create, make_state

# The broker is the same code over either codec implementation (conftest.py: the pure-Python pass).
pytestmark = pytest.mark.above_the_codecs

HB = ConsumerGroupHeartbeatRequest
SETTINGS = {"group.initial.rebalance.delay.ms": "0", "group.consumer.assignment.interval.ms": "0"}


def crash(state):
    """What a kill -9 leaves of an in-process broker: its files and the data directory's lock let go, nothing more
    written (no index, no clean-shutdown marker)."""
    state.files.close_all()
    lock = getattr(state.cluster, "lock", None)
    if lock is not None:
        lock.release()


def restarted(path, state, *members):
    """The broker started again after a crash; KIP-848 members (test_broker_consumer_groups.Member) go on with it."""
    crash(state)
    state = make_state(path, **SETTINGS)
    for member in members:
        member.state = state
    return state


def log_size(state):
    return state.groups.offsets.logs.logs[0].size_bytes


def classic_describe(state, group="g"):
    return call(state, DescribeGroupsRequest(groups=[group]), 5).groups[0]


def join_pending(state, group="g", member_id="", instance_id=None, metadata=b"\x00\x01meta"):
    """A JoinGroup (v5) as a client makes it, again with the id it is given when MEMBER_ID_REQUIRED; in flight."""
    def request(member_id):
        return Pending(state, JoinGroupRequest(
            group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=5000, member_id=member_id,
            group_instance_id=instance_id, protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=metadata)]), 5)

    pending = request(member_id)
    answer = pending.poll()
    if not isinstance(answer, Wait) and answer.error_code == errors.MEMBER_ID_REQUIRED.code:
        pending = request(answer.member_id)
        pending.poll()
    return pending


def stable_pair(state, group="g", instance_ids=(None, None)):
    """A classic group of two members, synced by the leader: (leader id, follower id, generation)."""
    first = join_pending(state, group, instance_id=instance_ids[0]).settle()
    assert first.error_code == 0
    second_pending = join_pending(state, group, instance_id=instance_ids[1])
    # The first member hears of the rebalance and joins again; both are answered.
    assert call(state, HeartbeatRequest(group_id=group, generation_id=first.generation_id,
                                        member_id=first.member_id), 3).error_code == errors.REBALANCE_IN_PROGRESS.code
    again = join_pending(state, group, first.member_id, instance_ids[0]).settle()
    second = second_pending.settle()
    assert again.error_code == second.error_code == 0 and again.generation_id == second.generation_id
    leader, follower = again.member_id, second.member_id
    assert again.leader == leader
    plan = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=leader, assignment=b"plan-1"),
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=follower, assignment=b"plan-2")]
    follower_sync = Pending(state, sync_request(group_id=group, generation_id=second.generation_id,
                                                member_id=follower, group_instance_id=instance_ids[1],
                                                assignments=[]), 5)
    follower_sync.poll()
    assert call(state, sync_request(group_id=group, generation_id=again.generation_id, member_id=leader,
                                    group_instance_id=instance_ids[0], assignments=plan), 5).assignment == b"plan-1"
    assert follower_sync.settle().assignment == b"plan-2"
    return leader, follower, again.generation_id


def beat(state, group, member_id, generation, instance_id=None):
    return call(state, HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id,
                                        group_instance_id=instance_id), 4).error_code


# ---- in process: what is written, and what comes back --------------------------------------------------------

def test_a_stable_classic_group_comes_back_with_its_members_generation_and_assignments(tmp_path):
    state = make_state(tmp_path, **SETTINGS)
    leader, follower, generation = stable_pair(state)
    before = classic_describe(state)
    state = restarted(tmp_path, state)
    try:
        after = classic_describe(state)
        assert after.group_state == "Stable" and after.to_dict() == before.to_dict()
        assert beat(state, "g", leader, generation) == 0 and beat(state, "g", follower, generation) == 0
        # A follower that lost its SyncGroup answer asks again and gets its assignment, at the same generation.
        assert call(state, sync_request(group_id="g", generation_id=generation, member_id=follower,
                                        assignments=[]), 5).assignment == b"plan-2"
        commit = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=generation, member_id=follower,
                                     topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
                                         OffsetCommitRequest.OffsetCommitRequestPartition(
                                             partition_index=0, committed_offset=5)])])
        create(state, "t")
        assert call(state, commit, 8).topics[0].partitions[0].error_code == 0
    finally:
        state.close()


def test_sessions_start_afresh_at_the_restart(tmp_path):
    """A loaded member has its whole session timeout from the restart (as Kafka reschedules loaded members), and
    is dropped when it lapses; so is a KIP-848 member."""
    state = make_state(tmp_path, **SETTINGS)
    create(state, "t", partitions=2)
    stable_pair(state)
    Member(state, "k", group="kg").beat()
    crash(state)
    time.sleep(0.2)
    started = time.monotonic()
    state = make_state(tmp_path, **SETTINGS)
    loaded = time.monotonic()
    try:
        group = state.groups.group("g")
        state.groups.tick((started + 9.9) * 1000)  # the session timeout is 10 s, counted from the load
        assert len(group.members) == 2 and group.state == "Stable"
        state.groups.tick((loaded + 10.1) * 1000)
        assert not group.members and group.state == "Empty"
        state.groups.tick((started + 44.9) * 1000)  # group.consumer.session.timeout.ms: 45 s
        assert list(state.groups.group("kg").members) == ["k"]
        state.groups.tick((loaded + 45.1) * 1000)
        assert not state.groups.group("kg").members
    finally:
        state.close()


def test_heartbeats_write_nothing_membership_changes_do(tmp_path):
    """Records go to the log when what a group keeps changes (a generation, an assignment, an epoch), never for a
    heartbeat, so the log does not grow with time."""
    state = make_state(tmp_path, **SETTINGS)
    try:
        create(state, "t", partitions=2)
        empty = log_size(state)
        leader, follower, generation = stable_pair(state)
        grown = log_size(state)
        assert grown > empty, "the stable generation was not written"
        a = Member(state, "a", group="kg")
        a.beat()
        a.beat()
        with_consumer = log_size(state)
        assert with_consumer > grown, "the consumer group's member was not written"
        for _ in range(50):
            assert beat(state, "g", leader, generation) == 0 and beat(state, "g", follower, generation) == 0
            assert a.beat().error_code == 0
            state.groups.tick(clock_ms())
        assert log_size(state) == with_consumer
        b = Member(state, "b", group="kg")
        b.beat()
        assert log_size(state) > with_consumer
    finally:
        state.close()


def test_a_crash_during_a_rebalance_comes_back_at_the_last_stable_generation(tmp_path):
    """As in Kafka, a classic group is written when a generation is stable (and when it empties): a crash while
    it rebalances brings back the last stable one, and the members join again from there."""
    state = make_state(tmp_path, **SETTINGS)
    leader, follower, generation = stable_pair(state)
    assert call(state, LeaveGroupRequest(group_id="g", member_id=follower), 0).error_code == 0
    assert state.groups.group("g").state == "PreparingRebalance"
    state = restarted(tmp_path, state)
    try:
        group = state.groups.group("g")
        assert (group.state, group.generation, set(group.members)) == ("Stable", generation, {leader, follower})
        # The leader hears of nothing yet; the follower that left is gone for good once the rebalance is over.
        assert beat(state, "g", leader, generation) == 0
        assert call(state, LeaveGroupRequest(group_id="g", member_id=follower), 0).error_code == 0
        assert beat(state, "g", leader, generation) == errors.REBALANCE_IN_PROGRESS.code
    finally:
        state.close()


def test_an_emptied_classic_group_comes_back_empty_at_its_generation(tmp_path):
    state = make_state(tmp_path, **SETTINGS)
    leader, follower, generation = stable_pair(state)
    left = call(state, LeaveGroupRequest(group_id="g", members=[
        LeaveGroupRequest.MemberIdentity(member_id=leader), LeaveGroupRequest.MemberIdentity(member_id=follower)]), 3)
    assert [m.error_code for m in left.members] == [0, 0]
    assert state.groups.group("g").state == "Empty"
    state = restarted(tmp_path, state)
    try:
        group = state.groups.group("g")
        assert (group.state, group.generation, group.members) == ("Empty", generation + 1, {})
        assert beat(state, "g", leader, generation) == errors.UNKNOWN_MEMBER_ID.code
    finally:
        state.close()


def test_static_classic_members_keep_their_place(tmp_path):
    """Static members come back; one whose client restarts too joins under its instance id without a member id
    and takes its old self's place in the stable group, with no rebalance, as in Kafka."""
    state = make_state(tmp_path, **SETTINGS)
    leader, follower, generation = stable_pair(state, instance_ids=("host-1", "host-2"))
    state = restarted(tmp_path, state)
    try:
        group = state.groups.group("g")
        assert group.static == {"host-1": leader, "host-2": follower}
        assert beat(state, "g", follower, generation, "host-2") == 0
        assert beat(state, "g", "someone-else", generation, "host-2") == errors.FENCED_INSTANCE_ID.code
        back = Pending(state, JoinGroupRequest(
            group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=5000, member_id="",
            group_instance_id="host-2", protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01meta")]), 5).settle()
        assert back.error_code == 0 and back.generation_id == generation and back.member_id != follower
        assert group.state == "Stable"
        assert call(state, sync_request(group_id="g", generation_id=generation, member_id=back.member_id,
                                        group_instance_id="host-2", assignments=[]), 5).assignment == b"plan-2"
        assert beat(state, "g", leader, generation, "host-1") == 0
    finally:
        state.close()
    state = make_state(tmp_path, **SETTINGS)  # the replacement was written too
    try:
        assert state.groups.group("g").static == {"host-1": leader, "host-2": back.member_id}
    finally:
        state.close()


def test_a_kip848_group_comes_back_with_epochs_targets_and_assignments(tmp_path):
    state = make_state(tmp_path, **SETTINGS)
    create(state, "t", partitions=4)
    t = topic_id(state, "t")
    a, b = Member(state, "a"), Member(state, "b", instance_id="host-b")
    a.beat(), b.beat(), a.beat(), a.beat(), b.beat()
    c = Member(state, "c", instance_id="host-c")
    c.beat()
    a.beat(), b.beat(), c.beat(), a.beat(), b.beat(), c.beat()
    assert describe(state).group_state == "Stable"
    before = describe(state).to_dict()
    epochs = {m.member_id: m.epoch for m in (a, b, c)}
    # c leaves for a while, as a static member may: its partitions wait for it.
    c_partitions = c.partitions()
    assert c.beat(member_epoch=-2).error_code == 0
    away = describe(state).to_dict()
    state = restarted(tmp_path, state, a, b, c)
    try:
        assert describe(state).to_dict() == away
        for member in (a, b):
            response = member.beat()
            assert (response.error_code, response.member_epoch) == (0, epochs[member.member_id])
        assert a.partitions() | b.partitions() | c_partitions == {(t, p) for p in range(4)}
        back = Member(state, "c2", instance_id="host-c")
        assert back.beat().error_code == 0 and back.partitions() == c_partitions
        assert back.epoch == epochs["c"]
        after = describe(state).to_dict()
        for m in after["members"]:
            if m["member_id"] == "c2":
                m["member_id"] = "c"
        assert after == before
        commit = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=a.epoch, member_id="a",
                                     topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
                                         OffsetCommitRequest.OffsetCommitRequestPartition(
                                             partition_index=p, committed_offset=7) for _, p in a.partitions()])])
        assert {p.error_code for p in call(state, commit, 9).topics[0].partitions} == {0}
    finally:
        state.close()


def test_a_member_revoking_partitions_at_the_crash_still_must_give_them_up(tmp_path):
    state = make_state(tmp_path, **SETTINGS)
    create(state, "t", partitions=4)
    a, b = Member(state, "a"), Member(state, "b")
    a.beat()
    b.beat()
    a.beat()  # told to give up two partitions; not yet done
    assert state.groups.group("g").members["a"].state == "unrevoked"
    state = restarted(tmp_path, state, a, b)
    try:
        group = state.groups.group("g")
        assert group.members["a"].state == "unrevoked" and group.members["a"].revocation_deadline is not None
        assert b.beat().assignment is None and b.assignment == {}  # still a's
        a.beat()  # reports it gave them up
        b.beat()
        assert len(b.partitions()) == 2 and not (a.partitions() & b.partitions())
        assert describe(state).group_state == "Stable"
    finally:
        state.close()


def test_a_group_that_moved_to_kip848_comes_back_as_a_consumer_group(tmp_path):
    state = make_state(tmp_path, **SETTINGS)
    create(state, "t", partitions=2)
    again = join_pending(state, metadata=subscription("t")).settle()
    assert call(state, sync_request(group_id="g", generation_id=again.generation_id, member_id=again.member_id,
                                    assignments=[SyncGroupRequest.SyncGroupRequestAssignment(
                                        member_id=again.member_id, assignment=write_assignment(0, {"t": [0, 1]}))]),
                5).error_code == 0
    k = Member(state, "k")
    assert k.beat().error_code == 0 and state.groups.group("g").kind == "consumer"
    before = describe(state).to_dict()
    state = restarted(tmp_path, state, k)
    try:
        group = state.groups.group("g")
        assert group.kind == "consumer" and group.members[again.member_id].uses_classic_protocol
        assert describe(state).to_dict() == before
        assert beat(state, "g", again.member_id, again.generation_id) == errors.REBALANCE_IN_PROGRESS.code
        assert k.beat().error_code == 0
    finally:
        state.close()


def test_deleted_groups_stay_deleted_and_the_others_come_back(tmp_path):
    state = make_state(tmp_path, **SETTINGS)
    create(state, "t", partitions=2)
    leader, follower, generation = stable_pair(state, group="gone")
    kept_leader, kept_follower, kept_generation = stable_pair(state, group="kept")
    assert call(state, LeaveGroupRequest(group_id="gone", members=[
        LeaveGroupRequest.MemberIdentity(member_id=leader),
        LeaveGroupRequest.MemberIdentity(member_id=follower)]), 3).members[0].error_code == 0
    commit = OffsetCommitRequest(group_id="gone", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=3)])])
    assert call(state, commit, 8).topics[0].partitions[0].error_code == 0
    k = Member(state, "k", group="gone-848")
    k.beat()
    stays = Member(state, "s", group="kept-848")
    stays.beat()
    assert k.beat(member_epoch=-1).error_code == 0
    deleted = call(state, DeleteGroupsRequest(groups_names=["gone", "gone-848"]), 2).results
    assert [r.error_code for r in deleted] == [0, 0]
    state = restarted(tmp_path, state, k, stays)
    try:
        listed = {g.group_id for g in call(state, ListGroupsRequest(), 4).groups}
        assert listed == {"kept", "kept-848"}
        assert classic_describe(state, "gone").group_state == "Dead"
        assert describe(state, "gone-848").error_code == errors.GROUP_ID_NOT_FOUND.code
        fetched = call(state, OffsetFetchRequest(group_id="gone", topics=None), 7)
        assert fetched.topics == []
        assert beat(state, "kept", kept_leader, kept_generation) == 0
        assert beat(state, "kept", kept_follower, kept_generation) == 0
        assert stays.beat().error_code == 0
        # A new life under a deleted group's id starts from nothing.
        _, fresh = join(state, 5, group="gone")
        assert fresh.error_code == 0 and fresh.generation_id == 1
    finally:
        state.close()


def test_empty_groups_whose_offsets_expire_go_from_the_log_too(tmp_path):
    state = make_state(tmp_path, **SETTINGS)
    leader, follower, _ = stable_pair(state)
    call(state, LeaveGroupRequest(group_id="g", members=[LeaveGroupRequest.MemberIdentity(member_id=leader),
                                                         LeaveGroupRequest.MemberIdentity(member_id=follower)]), 3)
    state.groups.expire_offsets(now_ms=state.now_ms(), retention_ms=0)
    assert "g" not in state.groups.groups
    state = restarted(tmp_path, state)
    try:
        assert "g" not in state.groups.groups
    finally:
        state.close()


# ---- any sequence of requests, then a crash ------------------------------------------------------------------

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_after_any_sequence_a_restart_brings_back_what_the_group_kept(tmp_path_factory, data):
    """Heartbeats, joins, syncs, leaves and deletes in any order, then a crash: the group loaded again is the one
    the broker had (a classic group as of its last stable or empty generation), described the same."""
    path = tmp_path_factory.mktemp("any")
    state = make_state(path, **SETTINGS)
    crashed = False
    try:
        create(state, "t", partitions=3)
        create(state, "u", partitions=2)
        members = st.sampled_from(["m1", "m2", "m3", ""])
        for _ in range(data.draw(st.integers(1, 25))):
            kind = data.draw(st.sampled_from(["beat", "beat", "beat", "join", "sync", "leave", "delete"]))
            if kind == "beat":
                version = data.draw(st.sampled_from([0, 1]))
                member_id = data.draw(members)
                group = state.groups.group("g")
                known = group.members.get(member_id) if group is not None and group.kind == "consumer" else None
                epoch = known.member_epoch if known is not None and data.draw(st.booleans()) else \
                    data.draw(st.integers(-2, 6))
                owned = None if known is None else [HB.TopicPartitions(topic_id=t, partitions=sorted(p))
                                                     for t, p in known.assigned.items()]
                call(state, HB(group_id="g", member_id=member_id, member_epoch=epoch,
                               instance_id=data.draw(st.none() | st.sampled_from(["i1", "i2"])),
                               rebalance_timeout_ms=data.draw(st.sampled_from([-1, 5000])),
                               subscribed_topic_names=data.draw(st.none() | st.lists(
                                   st.sampled_from(["t", "u"]), max_size=2)),
                               subscribed_topic_regex=data.draw(st.none() | st.sampled_from(["t|u", "u.*"]))
                               if version >= 1 else None,
                               server_assignor=data.draw(st.none() | st.sampled_from(["uniform", "range"])),
                               topic_partitions=owned if epoch > 0 else ([] if epoch == 0 else None)), version)
            elif kind == "join":
                Pending(state, JoinGroupRequest(
                    group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                    member_id=data.draw(members), group_instance_id=data.draw(st.none() | st.just("i1")),
                    protocol_type="consumer", protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                        name="range", metadata=subscription("t"))]), 5).settle(timeout=0.05)
            elif kind == "sync":
                group = state.groups.group("g")
                if group is not None and group.kind == "classic" and group.leader is not None:
                    Pending(state, sync_request(group_id="g", generation_id=group.generation, member_id=group.leader,
                                                assignments=[SyncGroupRequest.SyncGroupRequestAssignment(
                                                    member_id=m, assignment=b"p-" + m.encode())
                                                    for m in group.members]), 5).poll()
            elif kind == "leave":
                call(state, LeaveGroupRequest(group_id="g", members=[LeaveGroupRequest.MemberIdentity(
                    member_id=data.draw(members), group_instance_id=data.draw(st.none() | st.just("i1")))]), 5)
            else:
                call(state, DeleteGroupsRequest(groups_names=["g"]), 2)
        live = state.groups.group("g")
        if live is not None and live.kind == "classic" and live.state not in ("Stable", "Empty"):
            expected = None  # rebalancing: the last stable generation comes back, checked below by its record
        elif live is None or (live.kind == "classic" and live.state == "Empty" and not live.generation):
            expected = "absent"
        else:
            expected = (classic_describe(state).to_dict() if live.kind == "classic"
                        else describe(state).to_dict())
        kept = dict(state.groups.offsets.group_records.get("g", {}))
        crashed = True
        state = restarted(path, state)
        crashed = False
        assert dict(state.groups.offsets.group_records.get("g", {})) == kept
        loaded = state.groups.group("g")
        if expected == "absent":
            assert loaded is None or (loaded.kind == "classic" and not loaded.members)
        elif expected is not None:
            assert loaded is not None and loaded.kind == live.kind
            got = classic_describe(state).to_dict() if loaded.kind == "classic" else describe(state).to_dict()
            assert got == expected, _differences(got, expected)
    finally:
        if not crashed:
            state.close()


def _differences(got, expected, path=""):
    """Where two described groups differ, as "path: got != expected" lines."""
    if isinstance(got, dict) and isinstance(expected, dict):
        return "".join(_differences(got.get(k), expected.get(k), f"{path}.{k}") for k in {*got, *expected})
    if isinstance(got, list) and isinstance(expected, list) and len(got) == len(expected):
        return "".join(_differences(g, e, f"{path}[{i}]") for i, (g, e) in enumerate(zip(got, expected)))
    return "" if got == expected else f"\n{path}: {got!r} != {expected!r}"


# ---- real clients, and a broker killed with SIGKILL -----------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    """A subprocess broker on a fixed port and data directory, which can be killed and started again."""

    def __init__(self, path, **overrides):
        self.path = path
        self.overrides = {"listeners": f"PLAINTEXT://127.0.0.1:{free_port()}", "num.partitions": "2",
                          "group.initial.rebalance.delay.ms": "0", **overrides}
        self.broker = Broker(self.overrides, log_dir=path, subprocess=True).start()

    @property
    def bootstrap(self):
        return self.broker.bootstrap_servers

    def kill_and_restart(self):
        self.broker.kill()
        self.broker = Broker(self.overrides, log_dir=self.path, subprocess=True).start()

    def stop(self):
        self.broker.stop()


class Wire:
    """One connection speaking kafkaproto's own messages."""

    def __init__(self, node):
        self.sock = socket.create_connection((node.broker.host, node.broker.port), timeout=10)
        self.client = ClientConnection()
        self.correlation = 0

    def ask(self, body, version):
        self.correlation += 1
        header = RequestHeader(request_api_key=body.api_key, request_api_version=version,
                               correlation_id=self.correlation, client_id="restart-tests")
        self.sock.sendall(self.client.send_request(header, body))
        while True:
            data = self.sock.recv(65536)
            assert data, "the broker closed the connection"
            events = self.client.receive_data(data)
            if events:
                return events[0].body

    def close(self):
        self.sock.close()


def produce(bootstrap, topic, values):
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in values:
        producer.send(topic, value=b"%d" % i, partition=i % 2)
    producer.flush(20)
    producer.close()


def read_kafka_python(consumer, count, timeout=30):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=200, max_records=count - len(got)).values():
            got += [int(r.value) for r in records]
    return got


@pytest.mark.parametrize("instance_id", [None, "host-1"], ids=["dynamic", "static"])
def test_a_kafka_python_consumer_carries_on_after_a_kill(tmp_path, instance_id):
    """(classic protocol) 60 records read and committed, 40 more read, the broker killed and started again within
    the session timeout: the consumer keeps its member id and generation (no rejoin, no reassignment) and reads
    the 50 records produced after, and nothing twice."""
    kafka = pytest.importorskip("kafka")
    from kafka import ConsumerRebalanceListener

    class Count(ConsumerRebalanceListener):
        assigned = revoked = 0

        def on_partitions_assigned(self, assigned):
            Count.assigned += 1

        def on_partitions_revoked(self, revoked):
            Count.revoked += 1

    node = Node(tmp_path)
    try:
        produce(node.bootstrap, "orders", range(100))
        consumer = kafka.KafkaConsumer(bootstrap_servers=node.bootstrap, group_id="billing",
                                       group_instance_id=instance_id, auto_offset_reset="earliest",
                                       enable_auto_commit=False, session_timeout_ms=30000, heartbeat_interval_ms=500,
                                       reconnect_backoff_ms=50, reconnect_backoff_max_ms=500, retry_backoff_ms=100)
        consumer.subscribe(["orders"], listener=Count())
        read = read_kafka_python(consumer, 60)
        consumer.commit()
        read += read_kafka_python(consumer, 40)
        assert sorted(read) == list(range(100))
        generation = consumer._coordinator.generation_if_stable()
        assert generation is not None
        rebalances = (Count.assigned, Count.revoked)  # kafka-python assigns twice at start when metadata comes late
        with_members = DescribeGroupsRequest(groups=["billing"])
        wire = Wire(node)
        before = wire.ask(with_members, 5).groups[0]
        wire.close()
        assert before.group_state == "Stable" and len(before.members) == 1
        node.kill_and_restart()
        produce(node.bootstrap, "orders", range(100, 150))
        read += read_kafka_python(consumer, 50, timeout=40)
        read += read_kafka_python(consumer, 1, timeout=2)  # nothing more comes
        assert len(read) == len(set(read)), f"{len(read) - len(set(read))} records read twice"
        assert sorted(read) == list(range(150))
        assert consumer._coordinator.generation_if_stable() == generation  # the same id and generation
        assert (Count.assigned, Count.revoked) == rebalances, "the consumer rejoined"
        wire = Wire(node)
        after = wire.ask(with_members, 5).groups[0]
        wire.close()
        assert after.group_state == "Stable"
        assert [(m.member_id, m.group_instance_id) for m in after.members] == \
            [(m.member_id, m.group_instance_id) for m in before.members]
        consumer.close(autocommit=False)
    finally:
        node.stop()


def test_a_librdkafka_kip848_consumer_carries_on_after_a_kill(tmp_path):
    """(KIP-848, group.protocol=consumer) the same with librdkafka: its member id, epoch and assignment survive,
    it is never told its partitions were lost, and it reads nothing twice."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    node = Node(tmp_path)
    events = []
    try:
        produce(node.bootstrap, "payments", range(100))
        consumer = confluent_kafka.Consumer({
            "bootstrap.servers": node.bootstrap, "group.id": "ledger", "group.protocol": "consumer",
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500, "retry.backoff.ms": 100, "retry.backoff.max.ms": 500})
        consumer.subscribe(["payments"], on_assign=lambda c, ps: events.append(("assign", len(ps))),
                           on_revoke=lambda c, ps: events.append(("revoke", len(ps))),
                           on_lost=lambda c, ps: events.append(("lost", len(ps))))

        def take(count, timeout):
            got = []
            deadline = time.monotonic() + timeout
            while len(got) < count and time.monotonic() < deadline:
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    got.append(int(message.value()))
            return got

        def described():
            wire = Wire(node)
            try:
                group = wire.ask(ConsumerGroupDescribeRequest(group_ids=["ledger"]), 1).groups[0]
            finally:
                wire.close()
            return [(m.member_id, m.member_epoch, sorted((str(t.topic_id), sorted(t.partitions))
                                                         for t in m.assignment.topic_partitions))
                    for m in group.members]

        read = take(60, 40)
        consumer.commit(asynchronous=False)
        read += take(40, 20)
        assert sorted(read) == list(range(100))
        member_id = consumer.memberid()
        before = described()
        assert [m[0] for m in before] == [member_id]
        node.kill_and_restart()
        produce(node.bootstrap, "payments", range(100, 150))
        read += take(50, 60)
        read += take(1, 2)
        assert len(read) == len(set(read)), f"{len(read) - len(set(read))} records read twice"
        assert sorted(read) == list(range(150))
        assert consumer.memberid() == member_id
        assert described() == before
        assert events == [("assign", 2)], f"the consumer rejoined or lost its partitions: {events}"
        consumer.close()
    finally:
        node.stop()


def test_kip848_heartbeats_over_the_wire_keep_epochs_and_assignments_across_a_kill(tmp_path):
    """ConsumerGroupHeartbeat at the protocol level: a dynamic and a static member share a topic; after a SIGKILL
    and a restart each heartbeats on at its epoch and keeps its partitions, and commits at that epoch."""
    node = Node(tmp_path)
    try:
        wire = Wire(node)
        topic = CreateTopicsRequest.CreatableTopic(name="t", num_partitions=4, replication_factor=1)
        assert wire.ask(CreateTopicsRequest(topics=[topic], timeout_ms=5000), 7).topics[0].error_code == 0
        members = {"a": None, "b": "host-b"}
        epochs, assigned = {"a": 0, "b": 0}, {"a": {}, "b": {}}

        def heartbeat(wire, name):
            joining = epochs[name] == 0
            response = wire.ask(HB(group_id="g", member_id=name, member_epoch=epochs[name], instance_id=members[name],
                                   rebalance_timeout_ms=30000 if joining else -1,
                                   subscribed_topic_names=["t"] if joining else None,
                                   topic_partitions=[] if joining else [
                                       HB.TopicPartitions(topic_id=t, partitions=sorted(p))
                                       for t, p in assigned[name].items()]), 1)
            if response.error_code == 0:
                epochs[name] = response.member_epoch
                if response.assignment is not None:
                    assigned[name] = {tp.topic_id: set(tp.partitions) for tp in response.assignment.topic_partitions}
            return response

        deadline = time.monotonic() + 20  # the assignment waits group.consumer.assignment.interval.ms
        while True:
            for name in members:
                assert heartbeat(wire, name).error_code == 0
            group = wire.ask(ConsumerGroupDescribeRequest(group_ids=["g"]), 1).groups[0]
            if group.group_state == "Stable" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert group.group_state == "Stable"
        assert [sum(len(p) for p in assigned[name].values()) for name in members] == [2, 2]
        before = group.to_dict()
        held = {name: dict(assigned[name]) for name in members}
        wire.close()
        node.kill_and_restart()
        wire = Wire(node)
        for name in members:
            epoch = epochs[name]
            response = heartbeat(wire, name)
            assert (response.error_code, response.member_epoch) == (0, epoch), response
            assert assigned[name] == held[name]
        assert wire.ask(ConsumerGroupDescribeRequest(group_ids=["g"]), 1).groups[0].to_dict() == before
        t = next(iter(held["b"]))
        commit = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=epochs["b"], member_id="b",
                                     topics=[OffsetCommitRequest.OffsetCommitRequestTopic(topic_id=t, partitions=[
                                         OffsetCommitRequest.OffsetCommitRequestPartition(
                                             partition_index=p, committed_offset=1) for p in sorted(held["b"][t])])])
        assert {p.error_code for p in wire.ask(commit, 10).topics[0].partitions} == {0}
        wire.close()
    finally:
        node.stop()


def test_group_records_are_in_the_offsets_log_beside_the_offsets(tmp_path):
    """One log, as Kafka's __consumer_offsets: Kafka's own records, an offset's (OffsetCommitKey/Value, the value
    at version 4) beside a group's (GroupMetadata at version 3, the KIP-848 kinds at 0); tombstones (null values)
    when members go."""
    from kafkaproto import coordinator_records, records

    state = make_state(tmp_path, **SETTINGS)
    try:
        create(state, "t", partitions=2)
        stable_pair(state)
        a = Member(state, "a", group="kg")
        a.beat()
        assert a.beat(member_epoch=-1).error_code == 0
        commit = OffsetCommitRequest(group_id="solo", generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=3)])])
        assert call(state, commit, 8).topics[0].partitions[0].error_code == 0
    finally:
        state.close()
    stored = []
    for path in sorted((tmp_path / OFFSETS_DIR).glob("*.log")):
        for r in records.read_records(path.read_bytes()):
            key, record_type = coordinator_records.decode_key(r.key)
            value = None if r.value is None else coordinator_records.decode_value(r.value, record_type)
            stored.append((key, value))
    kinds = {(type(key).__name__, getattr(key, "group_id", getattr(key, "group", None)), value is None)
             for key, value in stored}
    assert ("GroupMetadataKey", "g", False) in kinds
    assert {("ConsumerGroupMetadataKey", "kg", False), ("ConsumerGroupMemberMetadataKey", "kg", False),
            ("ConsumerGroupTargetAssignmentMemberKey", "kg", False),
            ("ConsumerGroupCurrentMemberAssignmentKey", "kg", False),
            ("ConsumerGroupMemberMetadataKey", "kg", True), ("ConsumerGroupCurrentMemberAssignmentKey", "kg", True)} \
        <= kinds
    assert {type(v[0]).__name__: v[1] for _, v in stored if v is not None}["GroupMetadataValue"] == 3
    offsets = [(key, value) for key, value in stored if isinstance(key, coordinator_records.OffsetCommitKey)]
    assert [(k.group, k.topic, k.partition, v[1], v[0].offset) for k, v in offsets] == [("solo", "t", 0, 4, 3)]
    assert not any(getattr(key, "group_id", getattr(key, "group", None)) == "solo"
                   for key, _ in stored if key not in [k for k, _ in offsets])  # offsets only: no group record


def test_a_log_an_earlier_version_wrote_as_json_loads_and_is_written_again_in_kafkas_records(tmp_path):
    """Versions before this one wrote the offsets log as JSON (keys ``[group, topic, partition]`` and ``{"record":
    kind, "group": id, ...}``, values lists and objects). Such a log loads with nothing lost, and at start-up what
    it held is written again as Kafka's records, after which the JSON is only history: a second start reads the
    same groups and offsets from Kafka's records alone."""
    import base64
    import json

    from kafkaproto import coordinator_records, records
    from kafkaproto.broker.state.log import PartitionLog, parse_batches

    state = make_state(tmp_path, **SETTINGS)
    create(state, "t", partitions=2)
    t = topic_id(state, "t")
    state.close()

    def b64(data):
        return base64.b64encode(data).decode()
    classic_member = {"instance_id": None, "client_id": "c", "client_host": "/127.0.0.1", "session_timeout_ms": 10000,
                      "rebalance_timeout_ms": 5000, "protocol_type": "consumer",
                      "protocols": [["range", b64(subscription("t"))], ["roundrobin", b64(b"rr")]]}
    legacy = [  # (key, value) in the layout of the earlier versions' offsets.py and stored.py
        (["solo", "t", 0], [5, -1, None, 1_700_000_000_000]),
        (["solo", "t", 1], [6, 3, "meta", 1_700_000_000_001]),
        (["solo", "t", 1], None),  # a tombstone: gone
        (["solo", "t", 1], [7, 4, "meta", 1_700_000_000_002]),
        ({"record": "GroupMetadata", "group": "g"}, {
            "protocol_type": "consumer", "generation": 3, "protocol": "range", "leader": "m1",
            "members": [{**classic_member, "member_id": "m1", "assignment": b64(b"plan-1")},
                        {**classic_member, "member_id": "m2", "assignment": b64(b"plan-2")}]}),
        ({"record": "ConsumerGroupMetadata", "group": "kg"}, {"epoch": 4, "metadata_hash": 99,
                                                             "member_order": ["b", "a"]}),
        *[({"record": "ConsumerGroupMemberMetadata", "group": "kg", "member": m}, {
            "instance_id": None, "rack_id": None, "client_id": "c", "client_host": "/127.0.0.1",
            "subscribed_topic_names": ["t"], "subscribed_topic_regex": "", "server_assignor": None,
            "rebalance_timeout_ms": 5000, "classic_member_metadata": None}) for m in ("a", "b")],
        ({"record": "ConsumerGroupTargetAssignmentMetadata", "group": "kg"}, {"assignment_epoch": 4}),
        *[({"record": "ConsumerGroupTargetAssignmentMember", "group": "kg", "member": m},
           {"topic_partitions": [[str(t), [p]]]}) for m, p in (("a", 0), ("b", 1))],
        *[({"record": "ConsumerGroupCurrentMemberAssignment", "group": "kg", "member": m}, {
            "member_epoch": 4, "previous_member_epoch": 3, "state": "stable",
            "assigned_partitions": [[str(t), [[p, 4]]]], "partitions_pending_revocation": []})
          for m, p in (("a", 0), ("b", 1))],
    ]
    builder = records.RecordBatchBuilder()
    for key, value in legacy:
        builder.append(json.dumps(key).encode(), None if value is None else json.dumps(value).encode(),
                       timestamp=1_700_000_000_000)
    data = builder.build()
    plog = PartitionLog(str(tmp_path / OFFSETS_DIR))
    plog.append(data, parse_batches(data))
    plog.close()
    seen = []
    for _ in range(2):
        state = make_state(tmp_path, **SETTINGS)
        try:
            committed = state.groups.committed("solo")
            assert committed == {("t", 0): (5, -1, "", 1_700_000_000_000), ("t", 1): (7, 4, "meta", 1_700_000_000_002)}
            classic = classic_describe(state).to_dict()
            assert (classic["group_state"], classic["protocol_data"]) == ("Stable", "range")
            assert [(m["member_id"], m["member_assignment"]) for m in classic["members"]] == [
                ("m1", b"plan-1"), ("m2", b"plan-2")]
            group = state.groups.group("kg")
            assert (group.group_epoch, group.assignment_epoch, group.metadata_hash) == (4, 4, 99)
            assert list(group.members) == ["b", "a"]  # the order the earlier version kept
            assert {m: member.assigned for m, member in group.members.items()} == {"a": {t: {0: 4}}, "b": {t: {1: 4}}}
            assert group.target == {"a": {t: {0}}, "b": {t: {1}}}
            seen.append((classic, describe(state, "kg").to_dict()))
        finally:
            crash(state)
        # After the first start the log ends with Kafka's records for everything the JSON held.
        latest = {}
        for path in sorted((tmp_path / OFFSETS_DIR).glob("*.log")):
            for r in records.read_records(path.read_bytes()):
                if bytes(r.key)[:1] in b"[{":
                    continue
                key, record_type = coordinator_records.decode_key(r.key)
                latest[(type(key).__name__, *(str(v) for v in key.to_dict().values()))] = r.value is not None
        assert latest[("OffsetCommitKey", "solo", "t", "1")] and latest[("GroupMetadataKey", "g")]
        assert {k for k, live in latest.items() if live and k[0] != "OffsetCommitKey"} == {
            ("GroupMetadataKey", "g"), ("ConsumerGroupMetadataKey", "kg"),
            ("ConsumerGroupTargetAssignmentMetadataKey", "kg"),
            *[(kind, "kg", m) for kind in ("ConsumerGroupMemberMetadataKey", "ConsumerGroupTargetAssignmentMemberKey",
                                           "ConsumerGroupCurrentMemberAssignmentKey") for m in ("a", "b")]}
    assert seen[0] == seen[1]
