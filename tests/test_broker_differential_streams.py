"""Streams groups (KIP-1071), scripted against Apache Kafka 4.3.1 and this broker at once (the harness and its
normalisation are tests/test_broker_differential.py's): a member joining with a topology whose internal topics
are created for it, the initial rebalance delay, tasks, a second member taking tasks the first gives up, leaving,
describing, and the checks and refusals of both brokers.

Kafka delays a new group's first assignment by streams.initial.rebalance.delay.ms (3 s) and computes a target at
most once a second (streams.assignment.interval.ms): the script waits that long where it must see a new one.
"""

import time
import uuid

import pytest

from kafkaproto import errors
from kafkaproto.messages import (ConsumerGroupHeartbeatRequest, CreateTopicsRequest, FindCoordinatorRequest,
                                 JoinGroupRequest, MetadataRequest, OffsetCommitRequest, StreamsGroupDescribeRequest,
                                 StreamsGroupHeartbeatRequest)

from test_broker_differential import both, broker_like_kafka, side_name, sides  # noqa: F401 - fixtures

pytestmark = [pytest.mark.xdist_group("kafka-broker"), pytest.mark.above_the_codecs]

H = StreamsGroupHeartbeatRequest
INTERVAL = 1.1


@pytest.fixture
def pair(sides, kafka_broker):  # noqa: F811 - the imported fixture
    if int(kafka_broker.version.split(".")[0]) < 4:
        pytest.skip("streams groups are served from Kafka 4.1")
    return sides


class App:
    """A streams application's group on both brokers: an input topic of two partitions, and a topology of two
    subtopologies joined by a repartition topic, the second keeping a store (a changelog topic)."""

    def __init__(self, pair):
        self.sides = pair
        run = uuid.uuid4().hex[:8]
        self.group = f"diff-streams-{run}"
        self.input = f"diff-streams-in-{run}"
        both(pair, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=self.input, num_partitions=2, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
        both(pair, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=self.input)],
                                   allow_auto_topic_creation=False), 12, "Metadata of the input topic",
             settled=lambda r: all(t.error_code == 0 for t in r.topics))
        time.sleep(0.5)
        both(pair, FindCoordinatorRequest(key_type=0, coordinator_keys=[self.group]), 4, "FindCoordinator")
        self.held = {}  # (side, member) -> (epoch, (active, standby, warmup) as request TaskIds)

    def topology(self, changelog_partitions=0, source=None):
        info = H.TopicInfo
        return H.Topology(epoch=0, subtopologies=[
            H.Subtopology(subtopology_id="0", source_topics=[source or self.input],
                          repartition_sink_topics=[f"{self.group}-rep"]),
            H.Subtopology(subtopology_id="1", state_changelog_topics=[info(
                name=f"{self.group}-store-changelog", partitions=changelog_partitions,
                topic_configs=[H.KeyValue(key="cleanup.policy", value="compact")])],
                repartition_source_topics=[info(name=f"{self.group}-rep", topic_configs=[
                    H.KeyValue(key="cleanup.policy", value="delete")])])])

    def beat(self, what, member, join=False, leave=False, expect=errors.NONE, **fields):
        def make(side):
            epoch, owned = self.held.get((side_name(side, self.sides), member), (0, ([], [], [])))
            body = dict(group_id=self.group, member_id=member, member_epoch=0 if join else -1 if leave else epoch,
                        endpoint_information_epoch=-1, rebalance_timeout_ms=30000 if join else -1,
                        topology=self.topology() if join else None, process_id=member[:8] if join else None,
                        active_tasks=[] if join else None if leave else owned[0],
                        standby_tasks=[] if join else None if leave else owned[1],
                        warmup_tasks=[] if join else None if leave else owned[2])
            body.update(fields)
            return H(**body)

        answers = both(self.sides, make, 0, what)
        assert expect is None or answers[1].error_code == expect.code, f"{what}: {answers[1]}"
        for name, r in zip(("kafka", "ours"), answers):
            if r.error_code == 0 and r.member_epoch >= 0:
                owned = self.held.get((name, member), (0, ([], [], [])))[1]
                if r.active_tasks is not None:
                    owned = tuple([H.TaskIds(subtopology_id=t.subtopology_id, partitions=t.partitions) for t in x]
                                  for x in (r.active_tasks, r.standby_tasks, r.warmup_tasks))
                self.held[(name, member)] = (r.member_epoch, owned)
        return answers[1]

    def describe(self, what):
        return both(self.sides, StreamsGroupDescribeRequest(group_ids=[self.group]), 0, what)[1]


def tasks(response):
    return [(t.subtopology_id, t.partitions) for t in response.active_tasks]


def test_a_streams_application_joins_is_assigned_and_shares_its_tasks(pair):
    app = App(pair)
    one, two = "one-" + str(uuid.uuid4()), "two-" + str(uuid.uuid4())
    joined = app.beat("the first member joins: internal topics are missing, the assignment is delayed", one,
                      join=True)
    assert [s.status_code for s in joined.status] == [5, 3]
    both(pair, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=f"{app.group}-{t}")
                                       for t in ("rep", "store-changelog")], allow_auto_topic_creation=False), 12,
         "the internal topics, made with the partitions the topology needs",
         settled=lambda r: all(t.error_code == 0 for t in r.topics))
    time.sleep(0.5)  # Kafka's group coordinator learns of new topics a moment after its metadata does
    app.beat("still within the initial rebalance delay", one)
    time.sleep(3.2)
    assert tasks(app.beat("past the delay: every task", one)) == [("0", [0, 1]), ("1", [0, 1])]
    time.sleep(INTERVAL)
    app.beat("a second member joins", two, join=True)
    time.sleep(INTERVAL)
    app.beat("the first member gives up half its tasks", one)
    app.beat("the second member waits for them", two)
    app.beat("the first member has given them up", one)
    app.beat("the second member is given them", two)
    app.describe("StreamsGroupDescribe of two members")
    both(pair, StreamsGroupDescribeRequest(group_ids=["no-such-streams-group"]), 0, "a group that is not there")
    both(pair, ConsumerGroupHeartbeatRequest(group_id=app.group, member_id=str(uuid.uuid4()), member_epoch=0,
                                             rebalance_timeout_ms=30000, subscribed_topic_names=[app.input],
                                             topic_partitions=[]), 1, "ConsumerGroupHeartbeat of a streams group")
    both(pair, JoinGroupRequest(group_id=app.group, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                member_id="", protocol_type="consumer", protocols=[
                                    JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")]),
         9, "JoinGroup of a streams group with members")
    epoch = app.held[("ours", one)][0]
    for version in (8, 9):
        def commit(side, version=version):
            return OffsetCommitRequest(group_id=app.group, generation_id_or_member_epoch=app.held[
                (side_name(side, pair), one)][0], member_id=one, topics=[
                    OffsetCommitRequest.OffsetCommitRequestTopic(name=app.input, partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=0)])])
        both(pair, commit, version, f"OffsetCommit v{version} from a member at epoch {epoch}")
    app.beat("the first member leaves", one, leave=True)
    time.sleep(INTERVAL)
    assert tasks(app.beat("the second member takes every task", two)) == [("0", [0, 1]), ("1", [0, 1])]
    app.beat("a member not in the group", one, expect=errors.UNKNOWN_MEMBER_ID)


def test_what_a_heartbeat_may_not_carry(pair):
    app = App(pair)
    member = str(uuid.uuid4())
    refusals = [
        ("no member id", dict(join=True, member_id="")),
        ("no rebalance timeout on joining", dict(join=True, rebalance_timeout_ms=-1)),
        ("tasks on joining", dict(join=True, active_tasks=[H.TaskIds(subtopology_id="0", partitions=[0])])),
        ("null tasks on joining", dict(join=True, active_tasks=None)),
        ("no topology on joining", dict(join=True, topology=None)),
        ("a changelog topic with partitions", dict(join=True, topology=app.topology(changelog_partitions=3))),
        ("one task list without the others", dict(standby_tasks=None)),
        ("an epoch below -2", dict(member_epoch=-3)),
        ("a static leave without an instance id", dict(member_epoch=-2)),
        ("Kafka's internal topic as a source", dict(join=True, topology=app.topology(source="__consumer_offsets"))),
        ("a source topic name no topic may have", dict(join=True, topology=app.topology(source="bad name!"))),
        ("a member the group never had", dict(member_epoch=3)),
    ]
    for what, fields in refusals:
        join = fields.pop("join", False)
        app.beat(what, member, join=join, expect=None, **fields)  # the comparison with Kafka is the check
    missing = App(pair)
    missing.beat("a topology whose source topic does not exist", member, join=True,
                 topology=missing.topology(source="no-such-source-topic"))
    missing.describe("StreamsGroupDescribe of a group that is not ready")

