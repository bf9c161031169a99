"""The same scripted requests to Apache Kafka (3.9.2 and 4.3.1, the ``kafka_broker`` fixture) and to this
broker: the responses must match once what legitimately differs is normalised.

What is normalised, and why:
- identifiers each broker makes up (cluster id, node and controller ids, broker addresses, topic IDs,
  producer ids, member ids, fetch session ids): each distinct value becomes a label in order of first
  appearance, so that which ids are equal to which is still compared;
- the order of partitions within a topic (Kafka lists them in hash order);
- requests Kafka answers with COORDINATOR_LOAD_IN_PROGRESS (or NOT_AVAILABLE) while its coordinators start,
  or with NOT_LEADER_OR_FOLLOWER (or LEADER_NOT_AVAILABLE) for a moment after it creates a topic, are sent
  again until it answers, and so are those it answers CONCURRENT_TRANSACTIONS while it still
  writes the markers of a transaction that ended (this broker writes them before answering EndTxn), and
  for the same reason the last read_committed Fetch is repeated until the last stable offset is the high
  watermark;
- throttle times, error messages and authorized-operation bit sets (free text and ACL details);
- CreateTopics' list of effective configs (Kafka lists every topic config; this broker its own set);
- a Fetch may hold fewer of the batches ready than it could (Kafka's did, right after a transaction ended):
  the partitions of the last transaction test are read to their end, fetch after fetch, and compared whole;
- record batches are compared as decoded fields, not bytes, and the timestamps of control batches
  (the time each broker wrote the marker) are dropped.
"""

import time
import uuid

import pytest

from kafkaproto import errors, records
from kafkaproto.messages import (AddPartitionsToTxnRequest, CreatePartitionsRequest, CreateTopicsRequest,
                                 DeleteTopicsRequest, DescribeGroupsRequest, EndTxnRequest, FetchRequest,
                                 FindCoordinatorRequest, HeartbeatRequest, InitProducerIdRequest, JoinGroupRequest,
                                 LeaveGroupRequest, ListOffsetsRequest, MetadataRequest, OffsetCommitRequest,
                                 OffsetFetchRequest, OffsetForLeaderEpochRequest, ProduceRequest, SyncGroupRequest)
from kafkaproto.uuid import Uuid

from test_kafka_broker import RawClient

# Under pytest -n these tests share one worker, so that its two Kafka brokers start once; the broker is the same
# code over either codec implementation (conftest.py: the pure-Python pass).
pytestmark = [pytest.mark.xdist_group("kafka-broker"), pytest.mark.above_the_codecs]

# Retried, not compared: Kafka's coordinators answer these for a while after it starts.
LOADING = {errors.COORDINATOR_LOAD_IN_PROGRESS.code, errors.COORDINATOR_NOT_AVAILABLE.code,
           errors.NOT_COORDINATOR.code, errors.CONCURRENT_TRANSACTIONS.code, errors.NOT_LEADER_OR_FOLLOWER.code,
           errors.LEADER_NOT_AVAILABLE.code}
LABELLED = {"session_id", "cluster_id", "node_id", "controller_id", "leader_id", "broker_id", "host", "port",
            "topic_id", "producer_id", "member_id", "leader", "replica_nodes", "isr_nodes"}
DROPPED = {"throttle_time_ms", "error_message", "topic_authorized_operations", "cluster_authorized_operations",
           "authorized_operations", "configs"}


def loading(value):
    """Whether an answer holds an error that says a coordinator is still starting."""
    if isinstance(value, dict):
        return any(v in LOADING for k, v in value.items() if k.endswith("error_code")) or any(
            loading(v) for v in value.values())
    return isinstance(value, list) and any(loading(v) for v in value)


class Labels:
    """Each distinct identifier becomes "<field>#n" (n in order of first appearance); zero UUIDs stay zero."""

    def __init__(self):
        self.seen = {}

    def __call__(self, field, value):
        if isinstance(value, list):
            return [self(field, v) for v in value]
        if value is None or value == "" or value == -1 or value == Uuid.ZERO:
            return value
        key = (field if field not in ("leader", "member_id") else "member", value)
        if key not in self.seen:
            self.seen[key] = f"{key[0]}#{sum(1 for k in self.seen if k[0] == key[0]) + 1}"
        return self.seen[key]


def batches(data, labels):
    out = []
    for batch in records.iter_batches(data or b""):
        row = {"base_offset": batch.base_offset, "last_offset_delta": batch.last_offset_delta,
               "attributes": batch.attributes, "leader_epoch": batch.partition_leader_epoch,
               "producer_id": labels("producer_id", batch.producer_id), "producer_epoch": batch.producer_epoch,
               "base_sequence": batch.base_sequence, "count": batch.record_count,
               "records": [(r.offset, r.key, r.value, r.headers) for r in batch]}
        if not batch.is_control:
            row["timestamps"] = (batch.base_timestamp, batch.max_timestamp)
        out.append(row)
    return out


def normalise(value, labels, field=None):
    if isinstance(value, dict):
        return {k: (labels(k, v) if k in LABELLED else normalise(v, labels, k))
                for k, v in value.items() if k not in DROPPED}
    if isinstance(value, list):
        items = [normalise(v, labels, field) for v in value]
        if items and all(isinstance(v, dict) and "partition_index" in v for v in items):
            items.sort(key=lambda v: v["partition_index"])
        return items
    if field == "records" and value is not None:
        return batches(value, labels)
    return value


class Side:
    """One broker under the script: a raw connection and its own labels."""

    def __init__(self, port):
        self.client = RawClient(port)
        self.labels = Labels()

    def call(self, body, version, settled=None):
        deadline = time.monotonic() + 60
        while True:
            response = self.client.call(body, version).body
            plain = response.to_dict()
            done = not loading(plain) and (settled is None or settled(response))
            if done or time.monotonic() > deadline:
                return response, normalise(plain, self.labels)
            time.sleep(0.2)


@pytest.fixture
def sides(kafka_broker, kafkaproto_broker):
    kafka = Side(kafka_broker.port)
    ours = Side(kafkaproto_broker.port)
    yield kafka, ours
    kafka.client.close()
    ours.client.close()


def both(sides, make, version, what, settled=None):
    """Send make (or make(side)) to both and assert the normalised answers agree; with settled, each is
    asked again until settled(response) holds."""
    kafka, ours = sides
    answers = [side.call(make(side) if callable(make) else make, version, settled) for side in (kafka, ours)]
    found = differences(answers[0][1], answers[1][1])
    assert not found, f"{what} v{version}: this broker differs from Apache Kafka:\n" + "\n".join(found)
    return answers[0][0], answers[1][0]


def differences(kafka, ours, path="response"):
    """Each path where the two normalised answers differ, with both values."""
    if isinstance(kafka, dict) and isinstance(ours, dict):
        return [d for key in sorted(set(kafka) | set(ours), key=str)
                for d in differences(kafka.get(key), ours.get(key), f"{path}.{key}")]
    if isinstance(kafka, list) and isinstance(ours, list) and len(kafka) == len(ours):
        return [d for i, (a, b) in enumerate(zip(kafka, ours)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if kafka == ours else [f"{path}: Kafka {kafka!r}, this broker {ours!r}"]


def batch(*values, producer_id=-1, epoch=-1, sequence=-1, transactional=False):
    builder = records.RecordBatchBuilder(producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence,
                                        transactional=transactional)
    for i, value in enumerate(values):
        builder.append(b"k%d" % i, value, headers=[("h", b"v")], timestamp=1_700_000_000_000 + i)
    return builder.build()


def produce(topic, partition, data, transactional_id=None):
    return ProduceRequest(transactional_id=transactional_id, acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=partition, records=data)])])


def fetch(topic, partitions, isolation=0):
    return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=isolation,
                        session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                            FetchRequest.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1 << 20)
                            for p in partitions])])


def test_topics_produce_fetch_and_offsets(sides):
    topic = f"diff-{uuid.uuid4().hex[:8]}"
    create = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name=topic, num_partitions=2,
                                                                            replication_factor=1)], timeout_ms=10000)
    k, o = both(sides, create, 7, "CreateTopics")
    assert k.topics[0].topic_id.int and o.topics[0].topic_id.int
    both(sides, create, 7, "CreateTopics of an existing topic")
    bad = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name="bad/name", num_partitions=1,
                                                                         replication_factor=1),
                                      CreateTopicsRequest.CreatableTopic(name=topic + "-rf", num_partitions=1,
                                                                         replication_factor=3)], timeout_ms=10000)
    both(sides, bad, 7, "CreateTopics refused")
    wanted = [MetadataRequest.MetadataRequestTopic(name=topic), MetadataRequest.MetadataRequestTopic(name="nope-x")]
    both(sides, MetadataRequest(topics=wanted, allow_auto_topic_creation=False), 12, "Metadata")
    both(sides, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=Uuid.random())]), 12,
         "Metadata by an unknown topic ID")
    both(sides, produce(topic, 0, batch(b"a", b"b")), 9, "Produce")
    both(sides, produce(topic, 0, batch(b"c")), 9, "Produce")
    both(sides, produce(topic, 1, batch(b"d")), 9, "Produce")
    both(sides, produce(topic, 7, batch(b"e")), 9, "Produce to a partition that does not exist")
    both(sides, fetch(topic, [0, 1]), 12, "Fetch")
    for timestamp in (-2, -1, -3, 1_700_000_000_001, 1_800_000_000_000):
        body = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=timestamp)])])
        both(sides, body, 7, f"ListOffsets at {timestamp}")
    epochs = OffsetForLeaderEpochRequest(topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
        topic=topic, partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0, leader_epoch=0)])])
    both(sides, epochs, 4, "OffsetForLeaderEpoch")
    k, o = both(sides, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4, "InitProducerId")
    ids = {"kafka": (k.producer_id, k.producer_epoch), "ours": (o.producer_id, o.producer_epoch)}

    def idempotent(sequence, *values):
        return lambda side: produce(topic, 1, batch(*values, producer_id=ids[side_name(side, sides)][0],
                                                    epoch=ids[side_name(side, sides)][1], sequence=sequence))

    both(sides, idempotent(0, b"i0", b"i1"), 9, "idempotent Produce")
    both(sides, idempotent(0, b"i0", b"i1"), 9, "idempotent Produce, retried")
    both(sides, idempotent(5, b"gap"), 9, "idempotent Produce with a sequence gap")
    both(sides, fetch(topic, [1]), 12, "Fetch after idempotent produce")


def side_name(side, sides):
    return "kafka" if side is sides[0] else "ours"


def test_a_fetch_session(sides):
    topic = f"diff-s-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=2, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
    both(sides, produce(topic, 0, batch(b"a")), 9, "Produce")
    opened = {}

    def session(epoch, offsets=None, forgotten=()):
        def make(side):
            return FetchRequest(
                replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_epoch=epoch,
                session_id=opened.get(side_name(side, sides), 0) if epoch else 0,
                topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                    FetchRequest.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
                    for p, o in (offsets or [])])] if offsets else [],
                forgotten_topics_data=[FetchRequest.ForgottenTopic(topic=topic, partitions=list(forgotten))]
                if forgotten else [])
        return make

    k, o = both(sides, session(0, [(0, 0), (1, 0)]), 12, "Fetch opening a session")
    assert k.session_id and o.session_id
    opened.update(kafka=k.session_id, ours=o.session_id)
    both(sides, session(1, [(0, 1)]), 12, "incremental Fetch, nothing new")
    both(sides, produce(topic, 1, batch(b"b")), 9, "Produce")
    both(sides, session(2), 12, "incremental Fetch after a produce")
    both(sides, session(2), 12, "incremental Fetch with a stale epoch")
    both(sides, session(3, forgotten=[1]), 12, "incremental Fetch forgetting a partition")
    both(sides, session(4), 13, "a session by name continued by topic ID")


def test_too_many_partitions_in_one_request(sides):
    """More than 10,000 partitions in one CreateTopics request: refused whole, before anything is made."""
    names = [f"diff-many-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    create = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name=name, num_partitions=n,
                                                                            replication_factor=1)
                                         for name, n in zip(names, (1, 10_000))], timeout_ms=10000)
    k, o = both(sides, create, 7, "CreateTopics of 10,001 partitions")
    assert {t.error_code for t in o.topics} == {errors.POLICY_VIOLATION.code}
    metadata = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                               allow_auto_topic_creation=False)
    both(sides, metadata, 12, "Metadata of the topics refused")


def test_too_many_records_in_one_create_topics(sides):
    """A CreateTopics request may take at most 10,000 metadata records (a TopicRecord per topic, a ConfigRecord
    per config, a PartitionRecord per partition): over that, every topic gets POLICY_VIOLATION, validate_only
    or not, so one topic of 10,000 partitions is too many. Only validate_only requests that fit are sent (making
    thousands of partitions in the shared Kafka broker would slow every later test)."""
    names = [f"diff-records-{uuid.uuid4().hex[:8]}" for _ in range(2)]

    def create(counts, configs=0, validate_only=True):
        return CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=n, replication_factor=1,
            configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value="1000")
                     for k in ("retention.ms", "segment.ms")[:configs]])
            for name, n in zip(names, counts)], timeout_ms=30000, validate_only=validate_only)

    refused = errors.POLICY_VIOLATION.code
    for counts, configs, validate_only, expected in [
            ([9_999], 0, True, [0]), ([10_000], 0, False, [refused]), ([5_000, 4_999], 0, False, [refused] * 2),
            ([9_998], 1, True, [0]), ([9_998], 2, False, [refused])]:
        _, o = both(sides, create(counts, configs, validate_only), 7,
                    f"CreateTopics of {counts} partitions with {configs} configs each")
        assert [t.error_code for t in o.topics] == expected
    metadata = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                               allow_auto_topic_creation=False)
    both(sides, metadata, 12, "Metadata of the topics refused")


def java_hash_set_bucket(name):
    """The bucket of a 16-bucket java.util.HashSet<String> that name falls in (String.hashCode, then HashMap's
    spreading of the high bits): Kafka takes a CreatePartitions request's topics in that order."""
    h = 0
    for char in name:
        h = (31 * h + ord(char)) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & 15


def test_too_many_partitions_added_in_one_request(sides):
    """CreatePartitions adding more than 10,000 partitions in all: the topic that goes over the limit, and every
    later one, fail with UNKNOWN_SERVER_ERROR; the ones before it do not. Only validate_only requests go over
    (Kafka keeps part of the failing topic's partitions when it really creates them, which this broker does
    not), and the names are such that Kafka's order is the request's."""
    while True:
        names = [f"diff-cp-{uuid.uuid4().hex[:8]}" for _ in range(3)]
        buckets = [java_hash_set_bucket(name) for name in names]
        if buckets == sorted(set(buckets)):
            break
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1) for name in names], timeout_ms=10000), 7, "CreateTopics")

    def grow(counts, validate_only=True):
        topics = [CreatePartitionsRequest.CreatePartitionsTopic(name=n, count=c, assignments=None)
                  for n, c in zip(names, counts)]
        return CreatePartitionsRequest(topics=topics, timeout_ms=10000, validate_only=validate_only)

    over = errors.UNKNOWN_SERVER_ERROR.code
    _, o = both(sides, grow([10_001]), 3, "CreatePartitions adding 10,000 partitions")
    assert [r.error_code for r in o.results] == [0]
    _, o = both(sides, grow([10_002]), 3, "CreatePartitions adding 10,001 partitions")
    assert [r.error_code for r in o.results] == [over]
    _, o = both(sides, grow([2, 10_001, 2]), 3, "CreatePartitions adding 1, 10,000 and 1 partitions")
    assert [r.error_code for r in o.results] == [0, over, over]
    _, o = both(sides, grow([3, 2], validate_only=False), 3, "CreatePartitions within the limit")
    assert [r.error_code for r in o.results] == [0, 0]
    metadata = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                               allow_auto_topic_creation=False)
    grown = dict(zip(names, (3, 2, 1)))
    both(sides, metadata, 12, "Metadata after CreatePartitions",
         settled=lambda response: {t.name: len(t.partitions) for t in response.topics} == grown)


def test_delete_by_id_and_recreate(sides):
    topic = f"diff-del-{uuid.uuid4().hex[:8]}"
    create = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name=topic, num_partitions=1,
                                                                            replication_factor=1)], timeout_ms=10000)
    k, o = both(sides, create, 7, "CreateTopics")
    old = {"kafka": k.topics[0].topic_id, "ours": o.topics[0].topic_id}

    def delete(side):
        return DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(topic_id=old[side_name(side, sides)])],
                                   timeout_ms=10000)

    both(sides, delete, 6, "DeleteTopics by ID")
    both(sides, delete, 6, "DeleteTopics by a stale ID")

    def by_old_id(side):
        return MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=old[side_name(side, sides)])])

    # Kafka's DeleteTopics answers once the controller has deleted the topic; the broker's metadata cache learns
    # it a moment later (longer on a loaded machine): asked again until the deletion shows.
    gone = lambda response: response.topics[0].error_code != 0  # noqa: E731
    both(sides, by_old_id, 12, "Metadata by a deleted topic's ID", settled=gone)

    def fetch_old_id(side):
        return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_id=0,
                            session_epoch=-1, topics=[FetchRequest.FetchTopic(
                                topic_id=old[side_name(side, sides)], partitions=[FetchRequest.FetchPartition(
                                    partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])

    both(sides, fetch_old_id, 13, "Fetch by a deleted topic's ID",
         settled=lambda response: response.responses[0].partitions[0].error_code != 0)
    k, o = both(sides, create, 7, "CreateTopics again under the same name")
    assert k.topics[0].topic_id != old["kafka"] and o.topics[0].topic_id != old["ours"]

    def name_with_old_id(side):
        return MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(
            name=topic, topic_id=old[side_name(side, sides)])], allow_auto_topic_creation=False)

    both(sides, name_with_old_id, 12, "Metadata naming a topic with another topic's ID")


def test_a_consumer_group(sides):
    group = f"diff-group-{uuid.uuid4().hex[:8]}"
    topic = f"diff-g-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
    both(sides, FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4, "FindCoordinator")
    protocols = [JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01")]

    def join(member_id):
        return lambda side: JoinGroupRequest(group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000,
                                             member_id=member_id(side), protocol_type="consumer",
                                             protocols=protocols, reason="test")

    k, o = both(sides, join(lambda side: ""), 9, "JoinGroup without a member id")
    assert k.error_code == o.error_code == errors.MEMBER_ID_REQUIRED.code
    members = {"kafka": k.member_id, "ours": o.member_id}

    def member(side):
        return members[side_name(side, sides)]

    k, o = both(sides, join(member), 9, "JoinGroup")
    assert k.generation_id == 1 and k.leader == k.member_id
    both(sides, lambda side: SyncGroupRequest(group_id=group, generation_id=1, member_id=member(side),
                                              protocol_type="consumer", protocol_name="range", assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=member(side), assignment=b"plan")]), 5, "SyncGroup")
    both(sides, lambda side: HeartbeatRequest(group_id=group, generation_id=1, member_id=member(side)), 4,
         "Heartbeat")
    both(sides, lambda side: HeartbeatRequest(group_id=group, generation_id=9, member_id=member(side)), 4,
         "Heartbeat of another generation")
    def commit(side):
        return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=1, member_id=member(side), topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=3,
                                                                 committed_leader_epoch=0,
                                                                 committed_metadata="note")])])

    both(sides, commit, 8, "OffsetCommit")
    both(sides, OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=None)]),
         8, "OffsetFetch")
    both(sides, DescribeGroupsRequest(groups=[group]), 5, "DescribeGroups")
    both(sides, lambda side: LeaveGroupRequest(group_id=group, members=[
        LeaveGroupRequest.MemberIdentity(member_id=member(side), reason="done")]), 5, "LeaveGroup")
    both(sides, DescribeGroupsRequest(groups=[group]), 5, "DescribeGroups after leaving")


def test_a_transaction_committed_and_one_aborted(sides):
    topic = f"diff-t-{uuid.uuid4().hex[:8]}"
    tid = f"diff-txn-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
    both(sides, FindCoordinatorRequest(key_type=1, coordinator_keys=[tid]), 4, "FindCoordinator (transaction)")
    k, o = both(sides, InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000), 4,
                "InitProducerId (transactional)")
    ids = {"kafka": (k.producer_id, k.producer_epoch), "ours": (o.producer_id, o.producer_epoch)}

    def pid(side):
        return ids[side_name(side, sides)]

    def add(side):
        producer_id, epoch = pid(side)
        return AddPartitionsToTxnRequest(v3_and_below_transactional_id=tid, v3_and_below_producer_id=producer_id,
                                         v3_and_below_producer_epoch=epoch, v3_and_below_topics=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[0])])

    def send(sequence, value):
        return lambda side: produce(topic, 0, batch(value, producer_id=pid(side)[0], epoch=pid(side)[1],
                                                    sequence=sequence, transactional=True), tid)

    def end(commit):
        return lambda side: EndTxnRequest(transactional_id=tid, producer_id=pid(side)[0],
                                          producer_epoch=pid(side)[1], committed=commit)

    both(sides, add, 3, "AddPartitionsToTxn")
    both(sides, send(0, b"kept"), 9, "transactional Produce")
    both(sides, fetch(topic, [0], isolation=1), 12, "Fetch read_committed, transaction open")
    both(sides, end(True), 3, "EndTxn commit")
    both(sides, add, 3, "AddPartitionsToTxn")
    both(sides, send(1, b"dropped"), 9, "transactional Produce")
    both(sides, end(False), 3, "EndTxn abort")
    for side in sides:  # Kafka writes the markers after it answers EndTxn
        side.call(fetch(topic, [0], isolation=1), 12, settled=markers_written)
    read = [read_partition(side, topic, isolation) for side in sides for isolation in (1, 0)]
    assert not differences(read[0], read[2]), differences(read[0], read[2])
    assert not differences(read[1], read[3]), differences(read[1], read[3])
    assert [r[2] for b in read[2]["batches"] if "timestamps" in b for r in b["records"]] == [b"kept", b"dropped"]
    assert read[2]["aborted"] == [{"producer_id": "producer_id#1", "first_offset": 2}]


def markers_written(response):
    part = response.responses[0].partitions[0]
    return part.last_stable_offset == part.high_watermark


def read_partition(side, topic, isolation):
    """Every batch of partition 0 up to the last stable offset (read_committed) or the high watermark, fetched
    until there: Kafka may return fewer batches than it could (it did, right after a transaction ended)."""
    offset, gathered, aborted = 0, [], []
    while True:
        body = fetch(topic, [0], isolation)
        body.topics[0].partitions[0].fetch_offset = offset
        response, plain = side.call(body, 12)
        part = plain["responses"][0]["partitions"][0]
        end = part["last_stable_offset"] if isolation else part["high_watermark"]
        aborted += [a for a in part["aborted_transactions"] or [] if a not in aborted]
        gathered += [b for b in part["records"] or [] if b["base_offset"] >= offset]
        if not part["records"] or (gathered and gathered[-1]["base_offset"] + gathered[-1]["last_offset_delta"]
                                   + 1 >= end):
            return {"batches": gathered, "aborted": aborted, "end": end}
        offset = gathered[-1]["base_offset"] + gathered[-1]["last_offset_delta"] + 1
