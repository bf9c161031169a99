"""KIP-848 consumer groups, scripted against Apache Kafka 4.3.1 and this broker at once (the harness and its
normalisation are tests/test_broker_differential.py's): joins, assignments by the uniform and range assignors,
revocation before reassignment, fencing, static members, leaving, offset commits and fetches with member epochs,
and how the classic group APIs see a consumer group.

Kafka computes a group's target assignment at most once a second (group.consumer.assignment.interval.ms); the
script waits that long before each heartbeat that must see a new one.
"""

import time
import uuid

import pytest

from kafkaproto import errors
from kafkaproto.broker.state.groups.embedded import read_assignment, write_assignment
from kafkaproto.messages import (ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, CreateTopicsRequest,
                                 DeleteGroupsRequest, DescribeGroupsRequest, FindCoordinatorRequest, HeartbeatRequest,
                                 JoinGroupRequest, ListGroupsRequest, MetadataRequest, OffsetCommitRequest,
                                 OffsetFetchRequest, SyncGroupRequest)

from test_broker_consumer_groups import subscription
from test_broker_differential import both, broker_like_kafka, side_name, sides  # noqa: F401 - fixtures

pytestmark = [pytest.mark.xdist_group("kafka-broker"), pytest.mark.above_the_codecs]

HB = ConsumerGroupHeartbeatRequest
ASSIGNMENT_INTERVAL = 1.1


@pytest.fixture
def pair(sides, kafka_broker):  # noqa: F811 - the imported fixture
    """Kafka 4's side and ours."""
    if int(kafka_broker.version.split(".")[0]) < 4:
        pytest.skip("the consumer group protocol is generally available from Kafka 4.0")
    return sides


class Script:
    """A group on both brokers, with each side's topic IDs and what each member owns there."""

    def __init__(self, pair, partitions=4, topics=1):
        self.sides = pair
        self.group = f"diff-848-{uuid.uuid4().hex[:8]}"
        self.topics = [f"diff-848-t{i}-{uuid.uuid4().hex[:6]}" for i in range(topics)]
        k, o = both(pair, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=1) for name in self.topics], timeout_ms=10000),
            7, "CreateTopics")
        self.ids = {"kafka": [t.topic_id for t in k.topics], "ours": [t.topic_id for t in o.topics]}
        # Kafka's group coordinator learns of new topics from the metadata log a moment after they are made:
        # wait until the broker lists them, and a little more.
        both(pair, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in self.topics],
                                   allow_auto_topic_creation=False), 12, "Metadata of the new topics",
             settled=lambda r: all(t.error_code == 0 and len(t.partitions) == partitions for t in r.topics))
        time.sleep(0.5)
        # As clients do: Kafka makes its offsets topic, where groups live, when a coordinator is first asked for.
        both(pair, FindCoordinatorRequest(key_type=0, coordinator_keys=[self.group]), 4, "FindCoordinator")
        self.owned = {}  # (side, member) -> {topic id: partitions}
        self.epochs = {}  # (side, member) -> epoch

    def beat(self, what, member, epoch=None, join=False, names=None, regex=None, instance_id=None, assignor=None,
             owned=True, version=1, expect=errors.NONE):
        def make(side):
            name = side_name(side, self.sides)
            mine = self.owned.get((name, member), {})
            return HB(group_id=self.group, member_id=member,
                      member_epoch=0 if join else (self.epochs.get((name, member), 0) if epoch is None else epoch),
                      instance_id=instance_id, rebalance_timeout_ms=30000 if join else -1,
                      subscribed_topic_names=(self.topics if names is None and regex is None else names) if join
                      else None,
                      subscribed_topic_regex=regex if join else None, server_assignor=assignor if join else None,
                      topic_partitions=[] if join else ([HB.TopicPartitions(topic_id=t, partitions=sorted(p))
                                                         for t, p in mine.items()] if owned else None))

        k, o = both(self.sides, make, version, what)
        assert o.error_code == expect.code, f"{what}: {o}"
        for name, response in (("kafka", k), ("ours", o)):
            if response.error_code == 0:
                self.epochs[(name, member)] = response.member_epoch
                if response.assignment is not None:
                    self.owned[(name, member)] = {tp.topic_id: set(tp.partitions)
                                                  for tp in response.assignment.topic_partitions}
        return k, o

    def listed(self, what):
        """This group's ListGroups entry on each broker (each lists the groups of other tests too)."""
        entries = []
        for side in self.sides:
            response, _ = side.call(ListGroupsRequest(states_filter=[], types_filter=["consumer"]), 5)
            entries.append([(g.group_id, g.protocol_type, g.group_state, g.group_type)
                            for g in response.groups if g.group_id == self.group])
        assert entries[0] == entries[1], f"{what}: Kafka {entries[0]}, this broker {entries[1]}"

    def describe(self, what):
        return both(self.sides, ConsumerGroupDescribeRequest(group_ids=[self.group]), 1, what)


def test_a_group_of_two_with_revocation_and_leaving(pair):
    script = Script(pair)
    script.beat("ConsumerGroupHeartbeat: the first member joins", "member-a", join=True)
    script.describe("ConsumerGroupDescribe of one member")
    script.beat("a keep-alive heartbeat", "member-a")
    time.sleep(ASSIGNMENT_INTERVAL)
    script.beat("a second member joins", "member-b", join=True)
    script.describe("ConsumerGroupDescribe while reconciling")
    script.beat("the first member is told to give up partitions", "member-a")
    script.beat("the second waits for them", "member-b")
    script.beat("the first reports them given up", "member-a")
    script.beat("the second gets them", "member-b")
    script.describe("ConsumerGroupDescribe once stable")
    script.listed("ListGroups of consumer groups")
    both(pair, DescribeGroupsRequest(groups=[script.group]), 5, "DescribeGroups (classic) of a consumer group")
    script.beat("a heartbeat an epoch ahead", "member-a", epoch=99, expect=errors.FENCED_MEMBER_EPOCH)
    script.beat("a heartbeat of an unknown member", "member-z", epoch=3, expect=errors.UNKNOWN_MEMBER_ID)
    script.beat("the first member leaves", "member-a", epoch=-1)
    time.sleep(ASSIGNMENT_INTERVAL)
    script.beat("the second is given everything", "member-b")
    script.describe("ConsumerGroupDescribe after a member left")
    both(pair, DeleteGroupsRequest(groups_names=[script.group]), 2, "DeleteGroups of a consumer group with a member")
    script.beat("the last member leaves", "member-b", epoch=-1)
    # Found by replaying Kafka's console consumer: an empty group keeps its last assignment's epoch.
    script.describe("ConsumerGroupDescribe of the group its last member left")
    both(pair, DeleteGroupsRequest(groups_names=[script.group]), 2, "DeleteGroups of an empty consumer group")
    script.describe("ConsumerGroupDescribe of a deleted group")


def test_offsets_with_member_epochs(pair):
    script = Script(pair, partitions=2)
    script.beat("ConsumerGroupHeartbeat: join", "member-a", join=True)

    def commit(epoch, member="member-a", version=9):
        return lambda side: OffsetCommitRequest(
            group_id=script.group, generation_id_or_member_epoch=epoch(side) if callable(epoch) else epoch,
            member_id=member, topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
                name=script.topics[0], partitions=[OffsetCommitRequest.OffsetCommitRequestPartition(
                    partition_index=p, committed_offset=7 + p, committed_metadata="m") for p in (0, 1)])])

    def current(side):
        return script.epochs[(side_name(side, pair), "member-a")]

    both(pair, commit(current), 9, "OffsetCommit at the member's epoch")
    both(pair, commit(lambda side: current(side) + 1), 9, "OffsetCommit at a newer epoch")
    both(pair, commit(1), 9, "OffsetCommit at an epoch before the partitions were assigned")
    both(pair, commit(current, version=8), 8, "OffsetCommit v8 from a consumer-protocol member")
    both(pair, commit(-1, member=""), 9, "OffsetCommit without a member while the group has members")

    def fetch(epoch):
        return lambda side: OffsetFetchRequest(require_stable=True, groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
            group_id=script.group, member_id="member-a", member_epoch=epoch(side), topics=None)])

    both(pair, fetch(current), 9, "OffsetFetch at the member's epoch")
    both(pair, fetch(lambda side: 1), 9, "OffsetFetch at a stale epoch")


def test_static_members_and_the_range_assignor(pair):
    script = Script(pair, partitions=3, topics=2)
    script.beat("a static member joins with range", "static-1", join=True, instance_id="i-1", assignor="range")
    time.sleep(ASSIGNMENT_INTERVAL)
    script.beat("a dynamic member joins with range", "dynamic-1", join=True, assignor="range")
    script.beat("the static member gives up a range", "static-1")
    script.beat("...and reports it", "static-1")
    script.beat("the dynamic member gets its ranges", "dynamic-1")
    script.describe("ConsumerGroupDescribe with range")
    script.beat("another member with the same instance id", "static-2", join=True, instance_id="i-1",
                assignor="range", expect=errors.UNRELEASED_INSTANCE_ID)
    script.beat("the static member leaves for a while", "static-1", epoch=-2, instance_id="i-1")
    script.describe("ConsumerGroupDescribe with a static member away")
    script.beat("it comes back under a new member id", "static-2", join=True, instance_id="i-1", assignor="range")
    script.beat("the old member id is fenced", "static-1", epoch=2, instance_id="i-1",
                expect=errors.FENCED_INSTANCE_ID)


def test_requests_kafka_refuses(pair):
    script = Script(pair, partitions=1)
    base = dict(group_id=script.group, member_id="m", member_epoch=0, rebalance_timeout_ms=1000,
                subscribed_topic_names=script.topics, topic_partitions=[])
    for what, changes, version in [
            ("no member id at v1", dict(member_id=""), 1),
            ("no rebalance timeout when joining", dict(rebalance_timeout_ms=-1), 1),
            ("owned partitions when joining", dict(topic_partitions=None), 1),
            ("no subscription when joining", dict(subscribed_topic_names=None), 1),
            ("an unknown assignor", dict(server_assignor="sticky"), 1),
            ("an invalid regex", dict(subscribed_topic_names=None, subscribed_topic_regex="a(?=b)"), 1),
            ("epoch -3", dict(member_epoch=-3), 1),
            ("a static leave without an instance id", dict(member_epoch=-2), 1),
            ("an unknown group, not joining", dict(group_id="diff-848-none", member_epoch=1), 1)]:
        both(pair, HB(**{**base, **changes}), version, f"ConsumerGroupHeartbeat with {what}")
    k, o = both(pair, HB(**{**base, "member_id": ""}), 0, "ConsumerGroupHeartbeat v0 without a member id")
    assert o.error_code == 0 and len(o.member_id) == len(k.member_id)
    both(pair, ConsumerGroupDescribeRequest(group_ids=["diff-848-none", ""]), 1,
         "ConsumerGroupDescribe of an unknown group and an empty id")


def test_a_classic_group_upgraded_and_downgraded(pair):
    """A classic consumer's group is joined by a KIP-848 member (Kafka converts it), the classic member rejoins
    and syncs through the consumer group, and when the KIP-848 member leaves the group is classic again."""
    script = Script(pair, partitions=2)
    topic = script.topics[0]
    ids = {}

    def member(side):
        return ids.get(side_name(side, pair), "")

    def join(owned=()):
        def make(side):
            return JoinGroupRequest(group_id=script.group, session_timeout_ms=30000, rebalance_timeout_ms=30000,
                                    member_id=member(side), protocol_type="consumer", protocols=[
                                        JoinGroupRequest.JoinGroupRequestProtocol(
                                            name="range", metadata=subscription(topic, owned=owned))])
        return make

    def remember(responses):
        for name, response in zip(("kafka", "ours"), responses):
            ids[name] = response.member_id
        return responses

    k, o = remember(both(pair, join(), 9, "JoinGroup of a classic member (MEMBER_ID_REQUIRED)"))
    k, o = both(pair, join(), 9, "JoinGroup of the classic member")
    generation = o.generation_id

    def sync(generation, assignments):
        return lambda side: SyncGroupRequest(
            group_id=script.group, generation_id=generation, member_id=member(side), protocol_type="consumer",
            protocol_name="range", assignments=[SyncGroupRequest.SyncGroupRequestAssignment(
                member_id=member(side), assignment=a) for a in assignments])

    both(pair, sync(generation, [write_assignment(1, {topic: [0, 1]})]), 5, "SyncGroup of the leader")
    script.beat("a KIP-848 member joins the classic group", "member-k", join=True)
    script.describe("ConsumerGroupDescribe of the converted group")

    def heartbeat(generation):
        return lambda side: HeartbeatRequest(group_id=script.group, generation_id=generation, member_id=member(side))

    both(pair, heartbeat(generation), 4, "Heartbeat of the classic member in the consumer group")
    k, o = both(pair, join(owned=[(topic, [0, 1])]), 9, "JoinGroup of the classic member into the consumer group")
    k, o = both(pair, sync(o.generation_id, []), 5, "SyncGroup of the classic member in the consumer group")
    kept = read_assignment(o.assignment)[0][topic]
    k, o = both(pair, join(owned=[(topic, kept)]), 9, "JoinGroup after giving up a partition")
    both(pair, sync(o.generation_id, []), 5, "SyncGroup at the new epoch")
    script.beat("the KIP-848 member gets the partition released", "member-k")
    script.describe("ConsumerGroupDescribe of the mixed group")
    script.beat("the KIP-848 member leaves", "member-k", epoch=-1)
    both(pair, DescribeGroupsRequest(groups=[script.group]), 5, "DescribeGroups of the group made classic again",
         settled=lambda r: r.groups[0].group_state != "Dead")
    both(pair, heartbeat(o.generation_id), 4, "Heartbeat of the classic member after the downgrade")
    both(pair, join(owned=[(topic, kept)]), 9, "JoinGroup into the classic group again")

