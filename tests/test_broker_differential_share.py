"""Share groups (KIP-932), scripted against Apache Kafka 4.3.1 and this broker at once (the harness and its
normalisation are tests/test_broker_differential.py's): joining and the epochs of Kafka 4.3's assignment batching,
two members sharing a partition, ShareFetch and ShareAcknowledge with their sessions, acquisition, redelivery and
Kafka's errors, the group's configs, the offsets admin APIs, the share coordinator's state APIs, and how the
other group APIs see a share group.

Kafka computes a share group's assignment at most once a second (share.assignment.interval.ms) and gives a member
a partition only once the partition's share state is initialized (after the heartbeat that subscribed): the
script waits that long before each heartbeat that must see a new assignment.
"""

import time
import uuid

import pytest

from kafkaproto import errors
from kafkaproto.messages import (AlterShareGroupOffsetsRequest, ConsumerGroupHeartbeatRequest, CreateTopicsRequest,
                                 DeleteGroupsRequest, DeleteShareGroupOffsetsRequest, DescribeConfigsRequest,
                                 DescribeGroupsRequest, DescribeShareGroupOffsetsRequest, FindCoordinatorRequest,
                                 IncrementalAlterConfigsRequest, InitializeShareGroupStateRequest, JoinGroupRequest,
                                 ListGroupsRequest, MetadataRequest, OffsetCommitRequest, ReadShareGroupStateRequest,
                                 ReadShareGroupStateSummaryRequest, ShareAcknowledgeRequest, ShareFetchRequest,
                                 ShareGroupDescribeRequest, ShareGroupHeartbeatRequest, WriteShareGroupStateRequest)

from kafkaproto.compare import differences
from test_broker_differential import (batch, both, broker_like_kafka, described, produce, side_name,  # noqa: F401
                                      sides)

pytestmark = [pytest.mark.xdist_group("kafka-broker"), pytest.mark.above_the_codecs]

HB = ShareGroupHeartbeatRequest
F = ShareFetchRequest
A = ShareAcknowledgeRequest
ASSIGNMENT_INTERVAL = 1.1
GROUP_RESOURCE = 32


@pytest.fixture
def pair(sides, kafka_broker):  # noqa: F811 - the imported fixture
    if int(kafka_broker.version.split(".")[0]) < 4:
        pytest.skip("share groups are served from Kafka 4.1 (3.9 has only their early-access preview)")
    return sides


class Script:
    """A share group on both brokers over one topic, with each side's topic ID and each member's session epoch."""

    def __init__(self, pair, partitions=2):
        self.sides = pair
        self.group = f"diff-share-{uuid.uuid4().hex[:8]}"
        self.topic = f"diff-share-t-{uuid.uuid4().hex[:6]}"
        k, o = both(pair, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=self.topic, num_partitions=partitions, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
        self.ids = {"kafka": k.topics[0].topic_id, "ours": o.topics[0].topic_id}
        both(pair, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=self.topic)],
                                   allow_auto_topic_creation=False), 12, "Metadata of the new topic",
             settled=lambda r: all(t.error_code == 0 and len(t.partitions) == partitions for t in r.topics))
        time.sleep(0.5)
        # As clients do: Kafka makes its offsets topic, where groups live, when a coordinator is first asked for.
        both(pair, FindCoordinatorRequest(key_type=0, coordinator_keys=[self.group]), 4, "FindCoordinator")
        self.epochs = {}  # (side, member) -> member epoch
        self.sessions = {}  # (side, member) -> the next share session epoch

    def topic_id(self, side):
        return self.ids[side_name(side, self.sides)]

    def configure(self, what, *pairs, validate_only=False, expect=errors.NONE):
        k, o = both(self.sides, IncrementalAlterConfigsRequest(resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=GROUP_RESOURCE, resource_name=self.group, configs=[
                    IncrementalAlterConfigsRequest.AlterableConfig(name=n, config_operation=0, value=v)
                    for n, v in pairs])], validate_only=validate_only), 1, what)
        assert o.responses[0].error_code == expect.code, o
        return o

    def beat(self, what, member, join=False, leave=False, names=None, expect=errors.NONE, settled=None,
             shape=False):
        """A heartbeat; with shape, the answers compared by how many partitions each gives (which of a topic's
        partitions a member keeps follows Java's hash order of random topic ids in Kafka's assignor)."""
        def make(side):
            key = (side_name(side, self.sides), member)
            epoch = 0 if join else -1 if leave else self.epochs.get(key, 0)
            return HB(group_id=self.group, member_id=member, member_epoch=epoch, rack_id=None,
                      subscribed_topic_names=(names or [self.topic]) if join else None)

        k, o = (both_by_shape if shape else both)(self.sides, make, 1, what, settled)
        assert o.error_code == expect.code, f"{what}: {o}"
        for name, response in (("kafka", k), ("ours", o)):
            if response.error_code == 0:
                self.epochs[(name, member)] = response.member_epoch
        return o

    def fetch(self, what, member, epoch=None, partitions=(0,), acks=(), max_records=3, wait=0,
              expect=errors.NONE, version=1):
        """A ShareFetch: acks [(partition, first, last, [types])]."""
        def make(side):
            key = (side_name(side, self.sides), member)
            at = self.sessions.get(key, 0) if epoch is None else epoch
            by_partition = {p: [] for p in partitions}
            for p, first, last, types in acks:
                by_partition.setdefault(p, []).append(F.AcknowledgementBatch(first_offset=first, last_offset=last,
                                                                             acknowledge_types=types))
            extra = {"share_acquire_mode": 0, "is_renew_ack": False} if version >= 2 else {}
            return F(group_id=self.group, member_id=member, share_session_epoch=at, max_wait_ms=wait, min_bytes=1,
                     max_bytes=1 << 20, max_records=max_records, batch_size=500, topics=[
                         F.FetchTopic(topic_id=self.topic_id(side), partitions=[
                             F.FetchPartition(partition_index=p, acknowledgement_batches=b)
                             for p, b in by_partition.items()])] if by_partition else [],
                     forgotten_topics_data=[], **extra)

        k, o = both(self.sides, make, version, what)
        assert o.error_code == expect.code, f"{what}: {o}"
        self._next_session(member, epoch, o)
        return o

    def acknowledge(self, what, member, acks, epoch=None, expect=errors.NONE):
        def make(side):
            key = (side_name(side, self.sides), member)
            by_partition = {}
            for p, first, last, types in acks:
                by_partition.setdefault(p, []).append(A.AcknowledgementBatch(first_offset=first, last_offset=last,
                                                                             acknowledge_types=types))
            return A(group_id=self.group, member_id=member,
                     share_session_epoch=self.sessions.get(key, 0) if epoch is None else epoch, topics=[
                         A.AcknowledgeTopic(topic_id=self.topic_id(side), partitions=[
                             A.AcknowledgePartition(partition_index=p, acknowledgement_batches=b)
                             for p, b in by_partition.items()])])

        k, o = both(self.sides, make, 1, what)
        assert o.error_code == expect.code, f"{what}: {o}"
        self._next_session(member, epoch, o)
        return o

    def _next_session(self, member, epoch, response):
        if response.error_code:
            return
        for name in ("kafka", "ours"):
            at = self.sessions.get((name, member), 0) if epoch is None else epoch
            self.sessions[(name, member)] = 0 if at == -1 else at + 1

    def describe(self, what, shape=False):
        # One group a request: Kafka answers the groups of several coordinator shards in no fixed order.
        both(self.sides, ShareGroupDescribeRequest(group_ids=["no-such-share-group"]), 1, what + " (no group)")
        return (both_by_shape if shape else both)(self.sides, ShareGroupDescribeRequest(group_ids=[self.group]), 1,
                                                  what)[1]


def _shape(value):
    if isinstance(value, dict):
        return {k: len(v) if k == "partitions" and isinstance(v, list) else _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return value


def both_by_shape(pair, make, version, what, settled=None):
    """both(), comparing how many partitions each list holds rather than which."""
    answers = [side.call(make(side) if callable(make) else make, version, settled) for side in pair]
    found = differences(_shape(answers[0][1]), _shape(answers[1][1]))
    assert not found, f"{what} v{version}: this broker differs from Apache Kafka:\n" + described(found)
    return answers[0][0], answers[1][0]


def acquired(response):
    return [(p.partition_index, [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records])
            for t in response.responses for p in t.partitions]


def test_members_share_records_and_acknowledge_them(pair):
    s = Script(pair)
    for i in range(2):  # two batches of five records in partition 0, one of two in partition 1
        both(pair, produce(s.topic, 0, batch(*[b"r%d-%d" % (i, j) for j in range(5)])), 9, "Produce")
    both(pair, produce(s.topic, 1, batch(b"x", b"y")), 9, "Produce")
    s.configure("a share config out of range", ("share.record.lock.duration.ms", "500"),
                expect=errors.INVALID_CONFIG)
    s.configure("a session shorter than the heartbeat", ("share.session.timeout.ms", "45000"),
                ("share.heartbeat.interval.ms", "15000"), validate_only=True)
    s.configure("share.auto.offset.reset", ("share.auto.offset.reset", "earliest"))
    both(pair, DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=GROUP_RESOURCE, resource_name=s.group, configuration_keys=None)], include_synonyms=True),
         4, "DescribeConfigs of the group", settled=lambda r: any(  # Kafka's broker learns of it a moment later
             c.value == "earliest" for c in r.results[0].configs))

    one, two = str(uuid.uuid4()), str(uuid.uuid4())
    s.beat("the first member joins (no partition is ready yet)", one, join=True)
    s.beat("before the assignment interval", one)
    time.sleep(ASSIGNMENT_INTERVAL)
    # Kafka's share coordinator may take a while to make its state topic, the first time: it is asked again.
    assert s.beat("the first member is given both partitions", one,
                  settled=lambda r: r.assignment is not None).assignment is not None
    s.describe("ShareGroupDescribe of one member")

    s.fetch("acknowledgements on an opening fetch", one, acks=[(0, 0, 0, [1])], expect=errors.INVALID_REQUEST)
    # Kafka loads a share partition's state before its first fetch answers: the first fetches may wait.
    got = s.fetch("the first fetch: a whole batch, past max_records, and no more", one, partitions=(0, 1),
                  wait=3000)
    assert acquired(got) == [(0, [(0, 4, 1)])]
    # Kafka applies a request's acknowledgements once its share coordinator has written them, after the fetch
    # has begun: the record released here is not fetched again by this request, which takes new batches.
    got = s.fetch("accept two, release one, reject one, and fetch again", one,
                  acks=[(0, 0, 1, [1]), (0, 2, 2, [2]), (0, 3, 3, [3])])
    assert acquired(got) == [(0, [(5, 9, 1)]), (1, [(0, 1, 1)])]
    s.acknowledge("a record accepted twice", one, [(0, 0, 0, [1])])
    s.acknowledge("offsets never handed out", one, [(0, 40, 41, [1])])
    s.acknowledge("ranges out of order", one, [(0, 9, 9, [1]), (0, 4, 4, [1])])
    s.acknowledge("a released record", one, [(0, 2, 2, [1])])
    s.acknowledge("accept what it holds", one, [(0, 4, 4, [1]), (0, 5, 9, [1, 1, 1, 1, 1]), (1, 0, 1, [1])])
    s.fetch("the wrong session epoch", one, epoch=99, expect=errors.INVALID_SHARE_SESSION_EPOCH)
    s.acknowledge("an acknowledgement opening a session", one, [], epoch=0,
                  expect=errors.INVALID_SHARE_SESSION_EPOCH)
    s.fetch("a member with no session", two, epoch=3, expect=errors.SHARE_SESSION_NOT_FOUND)

    s.beat("a second member joins", two, join=True)
    time.sleep(ASSIGNMENT_INTERVAL)
    s.beat("the second member is given one of the partitions", two, shape=True)
    s.beat("the first member keeps the other", one, shape=True)
    s.describe("ShareGroupDescribe of two members sharing", shape=True)
    got = s.fetch("the second member gets the released record", two, max_records=10)
    assert acquired(got) == [(0, [(2, 2, 2)])]
    s.fetch("nothing is left for the first", one, max_records=10)
    s.fetch("the second member closes its session: its record goes back", two, epoch=-1)
    got = s.fetch("the first member takes it, delivered three times", one, max_records=10, wait=3000)
    assert acquired(got) == [(0, [(2, 2, 3)])]
    for p in (0, 1):
        both(pair, produce(s.topic, p, batch(b"late-a", b"late-b")), 9, "Produce")
    got = s.fetch("records produced later", one, max_records=10)
    s.fetch("it rejects one, releases the rest, and closes", one, epoch=-1,
            acks=[(0, 2, 2, [3])] + [(p, a.first_offset, a.last_offset, [2]) for t in got.responses
                                      for p in [0] for part in t.partitions if part.partition_index == p
                                      for a in part.acquired_records])

    listed = [{g.group_id: (g.protocol_type, g.group_state, g.group_type) for g in side.call(ListGroupsRequest(
        states_filter=[], types_filter=["share"]), 5)[0].groups} for side in pair]  # Kafka's has other tests' groups
    assert listed[0][s.group] == listed[1][s.group] == ("share", "Stable", "share")
    both(pair, DescribeGroupsRequest(groups=[s.group]), 5, "DescribeGroups of a share group (v5)")
    both(pair, DescribeGroupsRequest(groups=[s.group]), 6, "DescribeGroups of a share group (v6)")
    both(pair, JoinGroupRequest(group_id=s.group, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                member_id="", protocol_type="consumer", protocols=[
                                    JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")]),
         9, "JoinGroup of a share group")
    both(pair, ConsumerGroupHeartbeatRequest(group_id=s.group, member_id=str(uuid.uuid4()), member_epoch=0,
                                             rebalance_timeout_ms=30000, subscribed_topic_names=[s.topic],
                                             topic_partitions=[]), 1, "ConsumerGroupHeartbeat of a share group")
    both(pair, OffsetCommitRequest(group_id=s.group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name=s.topic, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]),
         9, "OffsetCommit to a share group")
    both(pair, DeleteGroupsRequest(groups_names=[s.group]), 2, "DeleteGroups of a share group with members")

    s.beat("the first member leaves", one, leave=True)
    s.beat("the second member leaves", two, leave=True)
    s.beat("a member of a group it never joined", two, expect=errors.UNKNOWN_MEMBER_ID)
    s.describe("ShareGroupDescribe of an empty group")
    both(pair, ShareGroupHeartbeatRequest(group_id="", member_id=one, member_epoch=0,
                                          subscribed_topic_names=[s.topic]), 1, "an empty group id")
    both(pair, ShareGroupHeartbeatRequest(group_id=s.group, member_id=one, member_epoch=0,
                                          subscribed_topic_names=[]), 1, "joining with no topics")
    both(pair, ShareGroupHeartbeatRequest(group_id=s.group, member_id=one, member_epoch=-2,
                                          subscribed_topic_names=None), 1, "an epoch below -1")


def test_offsets_admin_and_state_apis(pair):
    s = Script(pair, partitions=1)
    both(pair, produce(s.topic, 0, batch(*[b"v%d" % i for i in range(6)])), 9, "Produce")
    D = DescribeShareGroupOffsetsRequest

    def describe(what, topics=None, version=1):
        both(pair, D(groups=[D.DescribeShareGroupOffsetsRequestGroup(group_id=s.group, topics=topics)]), version,
             what)

    def alter(what, partitions, topic=None):
        return both(pair, AlterShareGroupOffsetsRequest(group_id=s.group, topics=[
            AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic(topic_name=topic or s.topic, partitions=[
                AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestPartition(partition_index=p,
                                                                                     start_offset=o)
                for p, o in partitions])]), 0, what)

    describe("a group that does not exist")
    describe("named partitions of a group that does not exist",
             [D.DescribeShareGroupOffsetsRequestTopic(topic_name=s.topic, partitions=[0]),
              D.DescribeShareGroupOffsetsRequestTopic(topic_name="no-such-topic", partitions=[0])])
    alter("start a new group at offset 2", [(0, 2), (7, 1)])
    alter("a topic that does not exist", [(0, 1)], topic="no-such-topic")
    describe("after the reset", version=0)
    describe("after the reset, with the lag")
    one = str(uuid.uuid4())
    joined = s.beat("a member joins: the reset partition is ready, so it is given at once", one, join=True)
    assert [t.partitions for t in joined.assignment.topic_partitions] == [[0]]
    got = s.fetch("its fetch starts at the reset offset", one, max_records=10, wait=3000)
    assert acquired(got) == [(0, [(2, 5, 1)])]
    alter("a group with members", [(0, 0)])
    both(pair, DeleteShareGroupOffsetsRequest(group_id=s.group, topics=[
        DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic(topic_name=s.topic)]), 0,
         "DeleteShareGroupOffsets of a group with members")
    s.fetch("accept it all and close", one, epoch=-1, acks=[(0, 2, 5, [1])])
    s.beat("the member leaves", one, leave=True)
    describe("once all is accepted")
    X = DeleteShareGroupOffsetsRequest
    for what in ("DeleteShareGroupOffsets", "DeleteShareGroupOffsets again"):
        both(pair, X(group_id=s.group, topics=[X.DeleteShareGroupOffsetsRequestTopic(topic_name=s.topic),
                                               X.DeleteShareGroupOffsetsRequestTopic(topic_name="no-such-topic")]),
             0, what)
    both(pair, X(group_id="no-such-share-group", topics=[]), 0, "DeleteShareGroupOffsets of no group")
    describe("after the delete")

    # The share coordinator's APIs, as another broker would call them.
    def state_call(request_class, data, partition_class, version, what, **fields):
        def make(side):
            return request_class(group_id=s.group + "-state", topics=[data(topic_id=s.topic_id(side), partitions=[
                partition_class(partition=p, **fields) for p in (0, 3)])])
        both(pair, make, version, what)

    R, W, Init = ReadShareGroupStateRequest, WriteShareGroupStateRequest, InitializeShareGroupStateRequest
    state_call(R, R.ReadStateData, R.PartitionData, 0, "ReadShareGroupState without state", leader_epoch=0)
    state_call(ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryRequest.ReadStateSummaryData,
               ReadShareGroupStateSummaryRequest.PartitionData, 1, "ReadShareGroupStateSummary without state",
               leader_epoch=0)
    state_call(W, W.WriteStateData, W.PartitionData, 1, "WriteShareGroupState without state", state_epoch=1,
               leader_epoch=0, start_offset=1, state_batches=[])
    state_call(Init, Init.InitializeStateData, Init.PartitionData, 0, "InitializeShareGroupState", state_epoch=3,
               start_offset=4)
    state_call(W, W.WriteStateData, W.PartitionData, 1, "WriteShareGroupState", state_epoch=3, leader_epoch=0,
               start_offset=5, state_batches=[W.StateBatch(first_offset=5, last_offset=6, delivery_state=2,
                                                           delivery_count=1)])
    state_call(R, R.ReadStateData, R.PartitionData, 0, "ReadShareGroupState after a write", leader_epoch=0)
    state_call(Init, Init.InitializeStateData, Init.PartitionData, 0, "InitializeShareGroupState at an older epoch",
               state_epoch=1, start_offset=0)
