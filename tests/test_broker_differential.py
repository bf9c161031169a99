"""The same scripted requests to Apache Kafka (3.9.2 and 4.3.1, the ``kafka_broker`` fixture) and to this
broker: the responses must match once what legitimately differs is normalised (by kafkaproto.compare's rules,
and the few below that belong to these scripts).

What is normalised, and why:
- identifiers each broker makes up (cluster id, node and controller ids, broker addresses, topic IDs,
  producer ids, member ids, fetch session ids): each distinct value becomes a label in order of first
  appearance, so that which ids are equal to which is still compared;
- the order of partitions within a topic, and of topics (by ID, then by name: Kafka lists them in the order of
  its hash maps and sets, and each side's topic IDs differ);
- requests Kafka answers with COORDINATOR_LOAD_IN_PROGRESS (or NOT_AVAILABLE) while its coordinators start,
  or with NOT_LEADER_OR_FOLLOWER (or LEADER_NOT_AVAILABLE) for a moment after it creates a topic, are sent
  again until it answers (and a topic just created is used once its partitions answer ListOffsets), and so
  are those it answers CONCURRENT_TRANSACTIONS while it still writes the markers of a transaction that ended
  (this broker writes them before answering EndTxn), and for the same reason the last read_committed Fetch is
  repeated until the last stable offset is the high watermark;
- throttle times, error messages and authorized-operation bit sets (free text and ACL details);
- CreateTopics' list of effective configs (Kafka lists every topic config; this broker its own set);
- a Fetch may hold fewer of the batches ready than it could (Kafka's did, right after a transaction ended):
  the partitions of the last transaction test are read to their end, fetch after fetch, and compared whole;
- record batches are compared as decoded fields, not bytes, and the timestamps of control batches
  (the time each broker wrote the marker) are dropped;
- group members are listed in the order of their ids (Kafka lists them in hash order), and in the scripted group
  lives a member's ids are labelled by its name in the script;
- where Kafka 3.9's group coordinator answers otherwise than 4.x's, which this broker follows, 3.9's answer is
  excused at those places only (before_4_0).
"""

import socket
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import kafka_jvm
import pytest
import raw_batches
from kafka_jvm import _recv_exact
from raw_batches import field as pv_field
from raw_batches import record as pv_record
from raw_batches import zigzag as pv_zigzag
from test_kafka_broker import RawClient

from kafkaproto import decode_response, encode_request, errors, records
from kafkaproto.broker import Broker
from kafkaproto.broker.dispatch import HANDLERS, load_handlers
from kafkaproto.compare import Labels, differences, is_loading, normalise
from kafkaproto.messages import (
    AddPartitionsToTxnRequest,
    AddRaftVoterRequest,
    AlterConfigsRequest,
    AlterPartitionReassignmentsRequest,
    AlterReplicaLogDirsRequest,
    ApiKey,
    ApiVersionsRequest,
    CreateAclsRequest,
    CreateDelegationTokenRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeConfigsRequest,
    DescribeDelegationTokenRequest,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    DescribeQuorumRequest,
    DescribeTransactionsRequest,
    ElectLeadersRequest,
    EndTxnRequest,
    ExpireDelegationTokenRequest,
    FetchRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    IncrementalAlterConfigsRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListConfigResourcesRequest,
    ListGroupsRequest,
    ListOffsetsRequest,
    ListPartitionReassignmentsRequest,
    ListTransactionsRequest,
    MetadataRequest,
    MetadataResponse,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
    RemoveRaftVoterRequest,
    RenewDelegationTokenRequest,
    RequestHeader,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
    UnregisterBrokerRequest,
    UpdateFeaturesRequest,
    WriteTxnMarkersRequest,
    api,
)
from kafkaproto.uuid import Uuid

# Under pytest -n these tests share one worker, so that its two Kafka brokers start once; the broker is the same
# code over either codec implementation (conftest.py: the pure-Python pass).
pytestmark = [pytest.mark.xdist_group("kafka-broker"), pytest.mark.above_the_codecs]



def described(found):
    """differences() as lines naming the path, Kafka's value and this broker's."""
    return "\n".join(f"{path}: Kafka {kafka!r}, this broker {ours!r}" for path, kafka, ours in found)


class Side:
    """One broker under the script: a raw connection and its own labels."""

    def __init__(self, port):
        self.port = port
        self.client = RawClient(port)
        self.labels = Labels()

    def call(self, body, version, settled=None, client=None):
        deadline = time.monotonic() + 60
        while True:
            response = (client or self.client).call(body, version).body
            plain = response.to_dict()
            done = not is_loading(plain) and (settled is None or settled(response))
            if done or time.monotonic() > deadline:
                return response, normalise(plain, self.labels)
            time.sleep(0.2)


@pytest.fixture(scope="module")
def broker_like_kafka():
    """This broker with the settings the test Kafka has that matter here (its groups' timeouts and sizes, no
    topic made by a Metadata request, its authorizer and SASL listener)."""
    with Broker(kafka_jvm.LIKE_KAFKA) as broker:
        yield broker


@pytest.fixture
def sides(kafka_broker, broker_like_kafka):
    kafka = Side(kafka_broker.port)
    kafka.version = kafka_broker.version
    kafka.sasl_port = kafka_broker.sasl_port
    ours = Side(broker_like_kafka.port)
    ours.sasl_port = broker_like_kafka.ports["SASL_PLAINTEXT"]
    yield kafka, ours
    kafka.client.close()
    ours.client.close()


def both(sides, make, version, what, settled=None):
    """Send make (or make(side)) to both and assert the normalised answers agree; with settled, each is
    asked again until settled(response) holds. Topics a CreateTopics made are then waited for until they
    serve requests."""
    kafka, ours = sides
    bodies = [make(side) if callable(make) else make for side in (kafka, ours)]
    answers = [side.call(body, version, settled) for side, body in zip((kafka, ours), bodies)]
    found = differences(answers[0][1], answers[1][1])
    assert not found, f"{what} v{version}: this broker differs from Apache Kafka:\n" + described(found)
    for side, body, (response, _) in zip((kafka, ours), bodies, answers):
        if isinstance(body, CreateTopicsRequest) and not body.validate_only:
            serving(side, [(t.name, t.num_partitions) for t in response.topics
                           if t.error_code == 0 and t.num_partitions > 0])
    return answers[0][0], answers[1][0]


def serving(side, topics):
    """Wait until every partition of topics [(name, partitions)] answers ListOffsets. Kafka's CreateTopics
    answers once the controller has made the topic; its broker learns of it a moment later, and until then
    answers Produce with UNKNOWN_TOPIC_OR_PARTITION (its clients wait for the metadata, as this does)."""
    if not topics:
        return
    probe = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name=name, partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=-1) for p in range(count)])
        for name, count in topics])
    side.call(probe, 7, settled=lambda r: all(p.error_code == 0 for t in r.topics for p in t.partitions))


# Recent, so that the shared Kafka broker's retention (seven days, checked every five minutes) cannot delete a
# test's records between two of its requests and move the log start offset.
STAMP = (int(time.time()) - 3600) * 1000


def batch(*values, producer_id=-1, epoch=-1, sequence=-1, transactional=False):
    builder = records.RecordBatchBuilder(producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence,
                                        transactional=transactional)
    for i, value in enumerate(values):
        builder.append(b"k%d" % i, value, headers=[("h", b"v")], timestamp=STAMP + i)
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
    for timestamp in (-2, -1, -3, STAMP + 1, STAMP + 86_400_000):
        body = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=timestamp)])])
        both(sides, body, 7, f"ListOffsets at {timestamp}")
    # the partition's epoch, an older and a later one, none; and with the current epoch right, older and later
    for current, epoch in ((-1, 0), (-1, 1), (-1, 5), (-1, -1), (0, 0), (0, 3), (1, 0)):
        epochs = OffsetForLeaderEpochRequest(topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
            topic=topic, partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                partition=0, current_leader_epoch=current, leader_epoch=epoch)])])
        both(sides, epochs, 4, f"OffsetForLeaderEpoch of epoch {epoch}, current {current}")
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


def served_table(side):
    """{api key: range of versions} from the broker's own ApiVersions."""
    table = side.client.call(ApiVersionsRequest(client_software_name="kafkaproto-tests",
                                                client_software_version="1"), 3).body.api_keys
    return {k.api_key: range(k.min_version, k.max_version + 1) for k in table}


# The client APIs Kafka 4.3 serves that this broker does not serve yet. The test below fails on any other API Kafka
# serves and this broker lacks, and on any API listed here that this broker has come to serve (strike it).
NOT_YET_SERVED = set()


def test_every_api_kafka_serves_to_clients(sides, kafka_broker):
    """ApiVersions side by side: every API Kafka's broker listener advertises is served here too, at Kafka's
    versions (3.9.2's removed ones aside: this broker follows 4.x), save those listed as not yet served."""
    if kafka_broker.version.startswith("3."):
        pytest.skip("the broker follows Kafka 4.x's API table")
    kafka, ours = (served_table(side) for side in sides)
    missing = sorted(api(k).name for k in set(kafka) - set(ours) if api(k).name not in NOT_YET_SERVED)
    assert not missing, f"Kafka {kafka_broker.version} serves these APIs to clients, this broker does not: {missing}"
    struck = sorted(name for name in NOT_YET_SERVED if api(name).api_key in ours)
    assert not struck, f"served now, so strike them from NOT_YET_SERVED: {struck}"
    versions = [f"{api(k).name}: Kafka {kafka[k].start}-{kafka[k].stop - 1}, here {ours[k].start}-{ours[k].stop - 1}"
                for k in sorted(set(kafka) & set(ours)) if kafka[k] != ours[k]]
    assert not versions, "versions served differ:\n" + "\n".join(versions)
    extra = sorted(api(k).name for k in set(ours) - set(kafka))
    assert not extra, f"served here, not by Kafka {kafka_broker.version}: {extra}"


def unserved_answer(port, api_key, version):
    """What a broker does with one request it does not serve: "closed", or the error code it answers with
    (and, for ApiVersions, the table it answers with: Kafka lists ApiVersions' own range alone)."""
    body = api(api_key).request(acks=-1, timeout_ms=1000) if api_key == ApiKey.PRODUCE else api(api_key).request()
    header = RequestHeader(request_api_key=api_key, request_api_version=version, correlation_id=5, client_id="t")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(encode_request(header, body, version))
        try:
            raw = _recv_exact(sock, int.from_bytes(_recv_exact(sock, 4), "big"))
        except (ConnectionError, OSError):
            return "closed"
    answer = decode_response(raw, api_key, 0 if api_key == ApiKey.API_VERSIONS else version).body
    if api_key == ApiKey.API_VERSIONS:
        return answer.error_code, [(k.api_key, k.min_version, k.max_version) for k in answer.api_keys]
    return answer.error_code


def test_requests_at_versions_neither_serves(sides, kafka_broker):
    """A request neither broker serves at its version: ApiVersions falls back to v0, anything else closes the
    connection, as Kafka's SocketServer does (Produce v0-2 too, which Kafka 4 advertises but cannot read)."""
    kafka, ours = sides
    load_handlers()
    tables = [served_table(kafka), {h.api_key: h.versions for h in HANDLERS.values()}]
    if int(kafka_broker.version.split(".")[0]) >= 4:  # Kafka 4 lists Produce v0-2 without serving them
        tables[0][ApiKey.PRODUCE] = range(3, tables[0][ApiKey.PRODUCE].stop)
    asked = []
    for api_key in sorted(set(HANDLERS) | set(tables[0]) | {ApiKey.VOTE, ApiKey.BROKER_REGISTRATION}):
        try:
            known = api(api_key).valid_versions
        except KeyError:
            continue  # an extension's API
        for version in known:
            if all(version not in table.get(api_key, ()) for table in tables):
                asked.append((api_key, version))
    assert (ApiKey.API_VERSIONS, 5) in asked and (ApiKey.VOTE, 0) in asked and len(asked) > 10
    assert ((ApiKey.PRODUCE, 0) in asked) == (ApiKey.PRODUCE in tables[0] and tables[0][ApiKey.PRODUCE].start == 3)
    found = []
    for api_key, version in asked:
        answers = [unserved_answer(side.client.sock.getpeername()[1], api_key, version) for side in sides]
        if answers[0] != answers[1]:
            found.append(f"{api(api_key).name} v{version}: Kafka {answers[0]!r}, this broker {answers[1]!r}")
    assert not found, "requests neither broker serves are treated differently:\n" + "\n".join(found)
    # A client may go on after ApiVersions' fallback: the connection still answers.
    assert unserved_answer(ours.client.sock.getpeername()[1], ApiKey.API_VERSIONS, 5) == (
        errors.UNSUPPORTED_VERSION.code, [(ApiKey.API_VERSIONS, 0, 4)])

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


@pytest.mark.parametrize("isolation", [0, 1], ids=["read_uncommitted", "read_committed"])
def test_fetch_partitions_in_error(sides, isolation):
    """A Fetch's partition errors, found when the request arrives (an unknown topic, ID or partition) or when the
    log is read (an offset out of range, a topic deleted while the fetch waits): Kafka fills in the partition
    differently in each case (an aborted-transaction list or none, the log's offsets or -1)."""
    topic = f"diff-e-{uuid.uuid4().hex[:8]}"
    k, o = both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
    ids = {"kafka": k.topics[0].topic_id, "ours": o.topics[0].topic_id}
    both(sides, produce(topic, 0, batch(b"a", b"b")), 9, "Produce")

    def ask(partitions, version, wait=0, name=topic, known=True):
        def make(side):
            topic_id = ids[side_name(side, sides)] if known else Uuid.random()
            return FetchRequest(replica_id=-1, max_wait_ms=wait, min_bytes=1, max_bytes=1 << 20,
                                isolation_level=isolation, session_id=0, session_epoch=-1, topics=[
                                    FetchRequest.FetchTopic(topic=name, topic_id=topic_id, partitions=[
                                        FetchRequest.FetchPartition(partition=p, fetch_offset=offset,
                                                                    partition_max_bytes=1 << 20)
                                        for p, offset in partitions])])
        return make

    for version in (12, 13):
        both(sides, ask([(0, 100)], version), version, "Fetch beyond the log's end")
        both(sides, ask([(0, 0), (5, 0)], version), version, "Fetch of a partition that does not exist")
    both(sides, ask([(0, 0)], 12, name="diff-no-such-topic"), 12, "Fetch of an unknown topic")
    both(sides, ask([(0, 0)], 13, known=False), 13, "Fetch of an unknown topic ID")
    # A fetch waiting at the log's end, on its own connection, while the topic is deleted.
    waiting = []
    for side in sides:
        client = RawClient(side.port)
        waiting.append(client)
        request = ask([(0, 2)], 13, wait=10000)(side)
        client.correlation_id += 1
        client.sock.sendall(encode_request(RequestHeader(request_api_key=ApiKey.FETCH, request_api_version=13,
                                                         correlation_id=client.correlation_id, client_id="t"),
                                           request, 13))
    time.sleep(0.5)
    both(sides, DeleteTopicsRequest(topic_names=[topic], timeout_ms=10000), 4, "DeleteTopics")
    answers = []
    for side, client in zip(sides, waiting):
        raw = _recv_exact(client.sock, int.from_bytes(_recv_exact(client.sock, 4), "big"))
        answers.append(normalise(decode_response(raw, ApiKey.FETCH, 13).body.to_dict(), side.labels))
        client.close()
    found = differences(*answers)
    assert not found, "a Fetch waiting while its topic is deleted:\n" + described(found)


def test_list_partition_reassignments(sides):
    """Kafka's TopicCommand --describe asks for reassignments in progress (found replaying its capture): none on a
    topic at rest, none for a topic that does not exist, none when every one is asked for."""
    topic = f"diff-r-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=2, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
    asked = ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics
    for topics in ([asked(name=topic, partition_indexes=[1, 0, 7])],
                   [asked(name="diff-no-such-topic", partition_indexes=[0])], None):
        both(sides, ListPartitionReassignmentsRequest(timeout_ms=30000, topics=topics), 0,
             "ListPartitionReassignments")


def test_delete_records(sides):
    """kafka-delete-records and AdminClient.deleteRecords: the log start moves to an offset or to the high
    watermark (-1); offsets out of range, compacted topics and unknown partitions are refused per partition; then
    ListOffsets, Fetch and Produce see the new start."""
    topic, compacted = f"diff-dr-{uuid.uuid4().hex[:8]}", f"diff-drc-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[
        CreateTopicsRequest.CreatableTopic(name=topic, num_partitions=2, replication_factor=1),
        CreateTopicsRequest.CreatableTopic(name=compacted, num_partitions=1, replication_factor=1, configs=[
            CreateTopicsRequest.CreatableTopicConfig(name="cleanup.policy", value="compact")])],
        timeout_ms=10000), 7, "CreateTopics")
    both(sides, produce(topic, 0, batch(b"a", b"b", b"c")), 9, "Produce")
    both(sides, produce(topic, 0, batch(b"d")), 9, "Produce")
    both(sides, produce(compacted, 0, batch(b"a")), 9, "Produce")

    def delete(offsets, name=topic):
        return DeleteRecordsRequest(timeout_ms=10000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
            name=name, partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=o)
                                   for p, o in offsets])])

    for version in (0, 2):
        both(sides, delete([(0, 2), (1, -1)]), version, "DeleteRecords")
    both(sides, delete([(0, 1)]), 2, "DeleteRecords below the log start")
    both(sides, delete([(0, 9)]), 2, "DeleteRecords past the high watermark")
    both(sides, delete([(0, -5)]), 2, "DeleteRecords at a negative offset")
    both(sides, delete([(4, 0)]), 2, "DeleteRecords of a partition that does not exist")
    both(sides, delete([(0, 0)], "diff-no-such-topic"), 2, "DeleteRecords of a topic that does not exist")
    both(sides, delete([(0, 1)], compacted), 2, "DeleteRecords of a compacted topic")
    both(sides, ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
        ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-2)])]), 7, "ListOffsets earliest")
    both(sides, fetch(topic, [0]), 12, "Fetch from before the log start")
    both(sides, produce(topic, 0, batch(b"e")), 9, "Produce after DeleteRecords")
    both(sides, delete([(0, -1)]), 2, "DeleteRecords to the high watermark")
    both(sides, produce(topic, 0, batch(b"f")), 9, "Produce after deleting every record")


def test_describe_log_dirs(sides):
    """kafka-log-dirs --describe: each partition's bytes in the log directory (the same batches make the same
    bytes), the topics asked that exist, and none of those that do not. Where each broker keeps its directory,
    and its file system's sizes, are each broker's own."""
    topic = f"diff-ld-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=3, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
    both(sides, produce(topic, 1, batch(b"a", b"b")), 9, "Produce")
    asked = DescribeLogDirsRequest.DescribableLogDirTopic
    for version in (1, 4, 5) if not sides[0].version.startswith("3.") else (1, 4):  # v5 came with 4.0
        for topics in ([asked(topic=topic, partitions=[2, 1, 9])], [asked(topic="diff-no-such-topic", partitions=[0])]):
            answers = []
            for side in sides:
                response, plain = side.call(DescribeLogDirsRequest(topics=topics), version)
                assert len(response.results) == 1 and response.results[0].log_dir.startswith("/")
                if version >= 4:
                    assert 0 <= response.results[0].usable_bytes <= response.results[0].total_bytes
                for result in plain["results"]:
                    result.update(log_dir=None, total_bytes=None, usable_bytes=None)
                answers.append(plain)
            found = differences(*answers)
            assert not found, f"DescribeLogDirs v{version}: this broker differs from Apache Kafka:\n" + described(found)


def test_elect_leaders(sides):
    """kafka-leader-election: a partition whose leader is already the one asked for needs no election; unknown
    topics and partitions are refused; asked for every partition, none is listed."""
    topic = f"diff-el-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=2, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
    asked = ElectLeadersRequest.TopicPartitions
    for version in (0, 1, 2):
        for election_type in ((0, 1) if version else (0,)):
            body = ElectLeadersRequest(election_type=election_type, timeout_ms=10000, topic_partitions=[
                asked(topic=topic, partitions=[1, 0, 5]), asked(topic="diff-no-such-topic", partitions=[0])])
            both(sides, body, version, f"ElectLeaders type {election_type}")
    # Every topic, each with no partition to elect (the brokers' topics are compared by this test's one only: the
    # Kafka broker serves other tests too).
    for side in sides:
        response, _ = side.call(ElectLeadersRequest(election_type=0, timeout_ms=10000, topic_partitions=None), 2)
        assert response.error_code == 0 and all(not r.partition_result for r in response.replica_election_results)
        assert topic in [r.topic for r in response.replica_election_results]


def node_id(side):
    """The broker's node id, as its Metadata names it."""
    response, _ = side.call(MetadataRequest(topics=[]), 12)
    assert isinstance(response, MetadataResponse) and len(response.brokers) == 1
    return str(response.brokers[0].node_id)


def test_configs_altered_whole_and_while_the_broker_runs(sides):
    """AlterConfigs (the request before IncrementalAlterConfigs) replaces a resource's whole set of configs;
    a broker config Kafka changes while running (log.cleaner.backoff.ms) is changed, one it does not
    (num.partitions) is refused, either way."""
    topic = f"diff-ac-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1, configs=[
            CreateTopicsRequest.CreatableTopicConfig(name="retention.ms", value="100000")])], timeout_ms=10000),
         7, "CreateTopics")
    nodes = {side_name(side, sides): node_id(side) for side in sides}
    Resource, Alterable = AlterConfigsRequest.AlterConfigsResource, AlterConfigsRequest.AlterableConfig

    def described(resource_type, name, keys):
        return lambda side: DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=resource_type, resource_name=name(side) if callable(name) else name,
            configuration_keys=keys)], include_synonyms=False)

    def altered(configs, version=2, validate_only=False):
        return AlterConfigsRequest(validate_only=validate_only, resources=[Resource(
            resource_type=2, resource_name=topic, configs=[Alterable(name=k, value=v) for k, v in configs.items()])])

    keys = ["retention.ms", "segment.ms", "cleanup.policy"]
    both(sides, altered({"segment.ms": "200000"}, validate_only=True), 2, "AlterConfigs validate only")
    both(sides, described(2, topic, keys), 4, "DescribeConfigs after validating only")
    for version in (0, 1, 2):
        value = str(200000 + version)
        both(sides, altered({"segment.ms": value}), version, "AlterConfigs: segment.ms alone")
        # Kafka's broker learns the change from its metadata log a moment after the controller answers
        both(sides, described(2, topic, keys), 4, "DescribeConfigs: retention.ms is back to its default",
             settled=lambda response, value=value: any(c.name == "segment.ms" and c.value == value
                                                       for r in response.results for c in r.configs))
    both(sides, altered({"segment.ms": "-5"}), 2, "AlterConfigs with a value out of range")
    both(sides, altered({"no.such.config": "1"}), 2, "AlterConfigs of an unknown config")
    both(sides, AlterConfigsRequest(resources=[Resource(resource_type=2, resource_name="diff-no-such-topic",
                                                        configs=[])]), 2, "AlterConfigs of no such topic")

    def broker(configs, operation=0):
        return lambda side: IncrementalAlterConfigsRequest(resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=4, resource_name=nodes[side_name(side, sides)], configs=[
                    IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=operation, value=v)
                    for k, v in configs.items()])])

    broker_keys = ["log.cleaner.backoff.ms", "num.partitions"]

    def backoff(response):
        return next((c.value for c in response.results[0].configs), None)
    try:
        both(sides, broker({"log.cleaner.backoff.ms": "20000"}), 1, "IncrementalAlterConfigs of a dynamic one")
        # Kafka's controller takes the change; its broker applies it a moment later
        both(sides, described(4, lambda side: nodes[side_name(side, sides)], broker_keys[:1]), 4,
             "DescribeConfigs of the broker's dynamic config", settled=lambda r: backoff(r) == "20000")
        both(sides, broker({"num.partitions": "3"}), 1, "IncrementalAlterConfigs of a static broker config")
        both(sides, broker({"log.cleaner.backoff.ms": "-1"}), 1, "IncrementalAlterConfigs, out of range")
        both(sides, broker({"log.cleanup.policy": "bogus"}), 1, "IncrementalAlterConfigs of a topic default, "
             "not valid")
        both(sides, broker({"log.retention.bytes": "many"}), 1, "IncrementalAlterConfigs of a topic default, "
             "not a number")
    finally:
        both(sides, broker({"log.cleaner.backoff.ms": None}, operation=1), 1, "IncrementalAlterConfigs: delete")
    both(sides, described(4, lambda side: nodes[side_name(side, sides)], broker_keys[:1]), 4,
         "DescribeConfigs after the delete", settled=lambda r: backoff(r) == "15000")


def test_every_topic_config_described_with_its_synonyms(sides):
    """DescribeConfigs of a topic, all its configs with their sources, types and synonyms, compared whole (not
    only those set on the topic, as elsewhere): min.insync.replicas aside, which Kafka 4 sets cluster-wide once
    eligible leader replicas are on (KIP-966)."""
    topic = f"diff-dc-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1, configs=[
            CreateTopicsRequest.CreatableTopicConfig(name="retention.ms", value="100000"),
            CreateTopicsRequest.CreatableTopicConfig(name="cleanup.policy", value="compact,delete")])],
        timeout_ms=10000), 7, "CreateTopics")
    if sides[0].version.startswith("3."):
        pytest.skip("the broker describes Kafka 4.x's topic configs (3.9 has three that 4.0 removed)")
    for version, synonyms in ((4, True), (1, False)):
        body = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=2, resource_name=topic, configuration_keys=None)], include_synonyms=synonyms)
        found = []
        for side in sides:
            configs = side.client.call(body, version).body.results[0].configs
            found.append({c.name: c.to_dict() for c in configs if c.name != "min.insync.replicas"})
        assert not differences(*found), f"DescribeConfigs v{version}:\n" + described(differences(*found))
        assert len(found[0]) == 32 and found[0]["retention.ms"]["config_source"] == 1


def test_list_config_resources(sides):
    """ListConfigResources: client metrics only at v0; at v1 the types asked for, or every type; a type with no
    configs is refused. The Kafka broker serves other tests too: of topics and groups, this test's are compared."""
    if sides[0].version.startswith("3."):
        pytest.skip("Kafka 3.9 does not serve ListConfigResources")
    topic, group = f"diff-lcr-{uuid.uuid4().hex[:8]}", f"diff-lcr-g-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
    both(sides, FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4, "FindCoordinator")
    both(sides, OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]), 8,
         "OffsetCommit")
    nodes = [node_id(side) for side in sides]
    for version, types in ((0, []), (1, []), (1, [2, 32]), (1, [4, 8, 16]), (1, [2, 2]), (1, [1]), (1, [64])):
        answers = []
        for side, node in zip(sides, nodes):
            response, plain = side.call(ListConfigResourcesRequest(resource_types=types), version)
            plain["config_resources"] = [
                r if r["resource_name"] != node else {**r, "resource_name": "<node>"}
                for r in plain["config_resources"] if r["resource_name"] in (topic, group, node)
                or r["resource_type"] not in (2, 32)]
            answers.append(plain)
        found = differences(*answers)
        assert not found, f"ListConfigResources v{version} {types}:\n" + described(found)


def signed_in(port, user):
    """A RawClient authenticated with SASL/PLAIN as user (kafka_jvm.ACL_USERS) on the SASL listener at port."""
    client = RawClient(port)
    assert client.call(SaslHandshakeRequest(mechanism="PLAIN"), 1).body.error_code == 0
    token = f"\0{user}\0{kafka_jvm.ACL_USERS[user]}".encode()
    assert client.call(SaslAuthenticateRequest(auth_bytes=token), 2).body.error_code == 0
    return client


def test_acls_enforced(sides):
    """The same ACLs made on both brokers (by the super user of the PLAINTEXT listener), then alice, signed in
    over SASL, asks for what they allow and what they do not: every answer compared."""
    run = uuid.uuid4().hex[:6]
    name = lambda what: f"acl-{run}-{what}"  # noqa: E731
    topics = ["open-1", "open-ro", "described", "closed"]
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name(t), num_partitions=1, replication_factor=1) for t in topics], timeout_ms=10000), 7, "CreateTopics")
    Creation = CreateAclsRequest.AclCreation

    def allow(resource_type, resource, operation, pattern=3, permission=3, principal="User:alice"):
        return Creation(resource_type=resource_type, resource_name=resource, resource_pattern_type=pattern,
                        principal=principal, host="*", operation=operation, permission_type=permission)

    made = [allow(2, name("open"), 2, pattern=4), allow(2, name("open-ro"), 4, permission=2),
            allow(2, name("described"), 8), allow(3, name("g"), 3), allow(5, name("t"), 4),
            allow(2, name("open-1"), 3, principal="User:bob"), allow(3, "", 3), allow(2, name("x"), 16),
            allow(4, "cluster", 3), allow(2, name("x"), 3, principal="alice")]
    both(sides, CreateAclsRequest(creations=made), 3, "CreateAcls (the last four refused)")
    both(sides, CreateAclsRequest(creations=[allow(2, name("y"), 3), allow(2, name("y"), 1)]), 3,
         "CreateAcls with an ANY operation: the whole request fails")
    every = dict(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
                 host_filter=None, operation=1, permission_type=1)

    def listed(what, **narrower):
        answers = []
        for side in sides:
            response, plain = side.call(DescribeAclsRequest(**{**every, **narrower}), 3)
            plain["resources"] = sorted(
                ({**r, "acls": sorted(r["acls"], key=str)} for r in plain["resources"]
                 if r["resource_name"].startswith(f"acl-{run}")), key=str)
            answers.append(plain)
        found = differences(*answers)
        assert not found, f"{what}:\n" + described(found)
        return answers[0]

    assert len(listed("DescribeAcls, every ACL")["resources"]) == 6
    listed("DescribeAcls of alice's", principal_filter="User:alice")
    listed("DescribeAcls matching one topic", resource_type_filter=2, resource_name_filter=name("open-ro"),
           pattern_type_filter=2)
    listed("DescribeAcls, literal ones of a name", resource_name_filter=name("open"), pattern_type_filter=3)
    listed("DescribeAcls with an operation Kafka does not know", operation=16)

    clients = [signed_in(side.sasl_port, "alice") for side in sides]

    def as_alice(body, version, what):
        answers = [side.call(body, version, client=client) for side, client in zip(sides, clients)]
        found = differences(answers[0][1], answers[1][1])
        assert not found, f"{what} v{version}, as alice:\n" + described(found)
        return answers[0][0]

    try:
        every_topic = [side.call(MetadataRequest(topics=None), 12, client=client)[0]
                       for side, client in zip(sides, clients)]
        seen = [sorted(t.name for t in m.topics if t.name.startswith(f"acl-{run}")) for m in every_topic]
        assert seen[0] == seen[1] == sorted(name(t) for t in ("open-1", "open-ro", "described")), seen
        asked = [name(t) for t in (*topics, "missing", "open-missing")]
        as_alice(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in asked]), 12,
                 "Metadata of each topic")
        for topic in asked:
            as_alice(produce(topic, 0, batch(b"v")), 9, f"Produce to {topic}")
            as_alice(fetch(topic, [0]), 12, f"Fetch from {topic}")
            as_alice(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
                name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])]),
                7, f"ListOffsets of {topic}")
        as_alice(FindCoordinatorRequest(key_type=0, coordinator_keys=[name("g"), name("h")]), 4,
                 "FindCoordinator of groups")
        as_alice(FindCoordinatorRequest(key_type=1, coordinator_keys=[name("t"), name("u")]), 4,
                 "FindCoordinator of transactional ids")
        for group in (name("g"), name("h")):
            as_alice(OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=[
                    OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=0)])
                for t in (name("open-1"), name("closed"))]), 8, f"OffsetCommit to {group}")
            as_alice(OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
                group_id=group, topics=None)]), 8, f"OffsetFetch of {group}")
        as_alice(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4,
                 "InitProducerId, idempotent (alice may write some topic)")
        for tid in (name("t"), name("u")):
            as_alice(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000), 4,
                     f"InitProducerId of {tid}")
        as_alice(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=name(t), num_partitions=1, replication_factor=1) for t in ("open-new", "closed-new")],
            timeout_ms=10000, validate_only=True), 7, "CreateTopics, validate only")
        as_alice(DeleteTopicsRequest(topic_names=[name("closed")], timeout_ms=10000), 5, "DeleteTopics")
        as_alice(DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=t, resource_name=n, configuration_keys=["retention.ms"])
            for t, n in ((2, name("open-1")), (2, name("closed")), (4, "1"))]), 4, "DescribeConfigs")
        as_alice(DeleteRecordsRequest(timeout_ms=10000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
            name=name("closed"), partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0,
                                                                                     offset=0)])]), 2,
                 "DeleteRecords")
        as_alice(DescribeAclsRequest(**every), 3, "DescribeAcls")
        as_alice(ListGroupsRequest(), 4, "ListGroups")
    finally:
        for client in clients:
            client.close()
        both(sides, DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(**{
            **every, "resource_name_filter": acl.resource_name}) for acl in made[:6]]), 3, "DeleteAcls")
    assert not listed("DescribeAcls after deleting them")["resources"]


def test_update_features_and_describe_quorum(sides):
    """UpdateFeatures as kafka-features sends it, validated only (the Kafka broker serves other tests): what is
    refused and why, at each version; DescribeQuorum of the metadata log and of another partition."""
    if sides[0].version.startswith("3."):
        pytest.skip("the broker follows Kafka 4.x's features (3.9 has no group.version to finalize)")
    Key = UpdateFeaturesRequest.FeatureUpdateKey
    cases = {
        "a level already finalized": [Key(feature="group.version", max_version_level=1, upgrade_type=1)],
        "a downgrade as an upgrade": [Key(feature="transaction.version", max_version_level=1, upgrade_type=1)],
        "a safe downgrade": [Key(feature="transaction.version", max_version_level=1, upgrade_type=2)],
        "an unsafe downgrade": [Key(feature="transaction.version", max_version_level=0, upgrade_type=3)],
        "a feature no broker has": [Key(feature="kafkaproto.nothing", max_version_level=1, upgrade_type=1)],
        "a level too high": [Key(feature="group.version", max_version_level=5, upgrade_type=1)],
        "an unknown upgrade type": [Key(feature="group.version", max_version_level=1, upgrade_type=0)],
        "one good, one refused": [Key(feature="group.version", max_version_level=1, upgrade_type=1),
                                  Key(feature="transaction.version", max_version_level=9, upgrade_type=1)],
        "nothing": [],
    }
    for what, updates in cases.items():
        for version in (1, 2):
            both(sides, UpdateFeaturesRequest(timeout_ms=10000, feature_updates=updates, validate_only=True),
                 version, f"UpdateFeatures, {what}")
    quorum = DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
        topic_name="__cluster_metadata", partitions=[DescribeQuorumRequest.PartitionData(partition_index=0)])])
    for version in (0, 1, 2):
        answers = []
        for side in sides:
            response, plain = side.call(quorum, version)
            part = plain["topics"][0]["partitions"][0]
            # the metadata logs' lengths and the times differ; they agree with each other on each side
            assert part["high_watermark"] == part["current_voters"][0]["log_end_offset"] >= 0
            assert (part["current_voters"][0]["last_fetch_timestamp"] > 0) == (version >= 1)
            for key in ("high_watermark",):
                part[key] = "set"
            for voter in part["current_voters"]:
                voter.update(log_end_offset="set", last_fetch_timestamp="set", last_caught_up_timestamp="set")
            for node in plain["nodes"]:
                for listener in node["listeners"]:
                    listener["name"] = "<the controller's>"  # Kafka's CONTROLLER, this broker's own listener
            answers.append(plain)
        found = differences(*answers)
        assert not found, f"DescribeQuorum v{version}:\n" + described(found)
    quorum.topics[0].topic_name = "__consumer_offsets"
    both(sides, quorum, 2, "DescribeQuorum of another partition")


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


def test_offset_delete(sides):
    """kafka-consumer-groups --delete-offsets: a group's offsets go, except for topics a member subscribes to;
    a classic group of another protocol with members refuses; an unknown group is not found."""
    topic, other = f"diff-od-{uuid.uuid4().hex[:8]}", f"diff-odo-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name=name, num_partitions=2,
                                                                               replication_factor=1)
                                            for name in (topic, other)], timeout_ms=10000), 7, "CreateTopics")
    def commit(group, generation=-1, member=lambda side: ""):
        """Offsets for both partitions of both topics, a topic per request (Kafka answers a request's topics in
        its hash map's order)."""
        for name in (topic, other):
            both(sides, lambda side, name=name: OffsetCommitRequest(
                group_id=group, generation_id_or_member_epoch=generation, member_id=member(side), topics=[
                    OffsetCommitRequest.OffsetCommitRequestTopic(name=name, partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=5,
                                                                         committed_leader_epoch=-1)
                        for p in (0, 1)])]), 8, "OffsetCommit")

    def delete(group, asked):
        return OffsetDeleteRequest(group_id=group, topics=[OffsetDeleteRequest.OffsetDeleteRequestTopic(
            name=name, partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=p)
                                   for p in partitions]) for name, partitions in asked])

    def fetched(group):
        """Both partitions of both topics, named (all of a group's topics come in Kafka's hash map order)."""
        return OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopics(name=name, partition_indexes=[0, 1])
            for name in (topic, other)])])

    alone = f"diff-od-alone-{uuid.uuid4().hex[:8]}"
    both(sides, FindCoordinatorRequest(key_type=0, coordinator_keys=[alone]), 4, "FindCoordinator")
    commit(alone)
    both(sides, delete(alone, [(topic, [0, 5]), (other, [1]), ("diff-no-such-topic", [0])]), 0, "OffsetDelete")
    both(sides, fetched(alone), 8, "OffsetFetch after OffsetDelete")
    both(sides, delete(f"diff-od-none-{uuid.uuid4().hex[:8]}", [(topic, [0])]), 0, "OffsetDelete, no such group")

    for protocol_type, metadata in (("consumer", subscription(topic)), ("connect", b"\x00\x01")):
        group = f"diff-od-{protocol_type}-{uuid.uuid4().hex[:8]}"
        member = one_member_group(sides, group, protocol_type, metadata)
        commit(group, 1, member)
        both(sides, delete(group, [(topic, [0]), (other, [0, 1])]), 0, f"OffsetDelete, a {protocol_type} group")
        both(sides, fetched(group), 8, "OffsetFetch after OffsetDelete")
        both(sides, leave(group, member), 5, "LeaveGroup")
        both(sides, delete(group, [(topic, [1])]), 0, f"OffsetDelete, a {protocol_type} group left empty")
        both(sides, fetched(group), 8, "OffsetFetch after OffsetDelete")


def one_member_group(sides, group, protocol_type, metadata):
    """A classic group of one member, joined and synced on both brokers; member(side) is its id there."""
    both(sides, FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4, "FindCoordinator")
    protocols = [JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=metadata)]

    def join(member_id):
        return lambda side: JoinGroupRequest(group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000,
                                             member_id=member_id(side), protocol_type=protocol_type,
                                             protocols=protocols, reason="test")

    k, o = both(sides, join(lambda side: ""), 9, "JoinGroup without a member id")
    ids = {"kafka": k.member_id, "ours": o.member_id}

    def member(side):
        return ids[side_name(side, sides)]

    both(sides, join(member), 9, "JoinGroup")
    both(sides, lambda side: SyncGroupRequest(
        group_id=group, generation_id=1, member_id=member(side), protocol_type=protocol_type, protocol_name="range",
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=member(side), assignment=b"")]), 5,
        "SyncGroup")
    return member


def leave(group, member):
    return lambda side: LeaveGroupRequest(group_id=group, members=[
        LeaveGroupRequest.MemberIdentity(member_id=member(side), reason="done")])


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
    both(sides, lambda side: produce(topic, 0, batch(b"no id", producer_id=pid(side)[0], epoch=pid(side)[1],
                                                     sequence=0, transactional=True)), 9,
         "transactional Produce without its transactional id")
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


def test_transactions_version_2(sides):
    """KIP-890's second transaction protocol (Kafka 4's transaction.version 2): partitions and groups join a
    transaction with the Produce (v12+) and TxnOffsetCommit (v5+) that use them, every EndTxn (v5) bumps the
    epoch and says so, its retries are answered as the first was; versions before v12 still need the partition
    added first."""
    kafka, ours = sides
    if int(kafka.version.split(".")[0]) < 4:
        pytest.skip("transactions version 2 is Kafka 4's")
    topic = f"diff-v2-{uuid.uuid4().hex[:8]}"
    tid, group = f"diff-txn2-{uuid.uuid4().hex[:8]}", f"diff-g2-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=2, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
    both(sides, FindCoordinatorRequest(key_type=1, coordinator_keys=[tid]), 4, "FindCoordinator (transaction)")
    both(sides, FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4, "FindCoordinator (group)")
    k, o = both(sides, InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000), 5,
                "InitProducerId (transactional)")
    producers = {"kafka": (k.producer_id, k.producer_epoch), "ours": (o.producer_id, o.producer_epoch)}
    sequences = {}

    def send(partition, value, epoch_delta=0):
        def make(side):
            producer_id, epoch = producers[side_name(side, sides)]
            key = (side_name(side, sides), partition, epoch + epoch_delta)
            sequence = sequences.get(key, 0)
            sequences[key] = sequence + 1
            return produce(topic, partition, batch(value, producer_id=producer_id, epoch=epoch + epoch_delta,
                                                   sequence=sequence, transactional=True), tid)
        return make

    def end(commit, epoch_delta=0):
        def make(side):
            producer_id, epoch = producers[side_name(side, sides)]
            return EndTxnRequest(transactional_id=tid, producer_id=producer_id, producer_epoch=epoch + epoch_delta,
                                 committed=commit)
        return make

    def ended(what, commit, epoch_delta=0, keep=True):
        k, o = both(sides, end(commit, epoch_delta), 5, what)
        if keep and not k.error_code:
            producers.update(kafka=(k.producer_id, k.producer_epoch), ours=(o.producer_id, o.producer_epoch))
        return k

    def commit_offset(side):
        producer_id, epoch = producers[side_name(side, sides)]
        return TxnOffsetCommitRequest(transactional_id=tid, group_id=group, producer_id=producer_id,
                                      producer_epoch=epoch, generation_id_or_member_epoch=-1, member_id="", topics=[
                                          TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=topic, partitions=[
                                              TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                                                  partition_index=0, committed_offset=1)])])

    both(sides, send(1, b"not added"), 11, "Produce v11 to a partition not added")
    both(sides, send(1, b"not added"), 10, "Produce v10 to a partition not added")
    both(sides, send(0, b"kept"), 12, "Produce v12 to a partition not added: it joins")
    both(sides, commit_offset, 5, "TxnOffsetCommit v5 without AddOffsetsToTxn")
    first = producers["kafka"]
    done = ended("EndTxn v5 commit", True)
    assert done.error_code == 0 and done.producer_epoch == first[1] + 1
    ended("EndTxn v5 commit again, with the epoch before the bump", True, epoch_delta=-1, keep=False)
    ended("EndTxn v5 abort, with the epoch before the bump", False, epoch_delta=-1, keep=False)
    ended("EndTxn v5 commit with nothing in the transaction", True, keep=False)
    ended("EndTxn v5 from an older epoch still", True, epoch_delta=-3, keep=False)
    both(sides, send(0, b"stale", epoch_delta=-1), 12, "Produce v12 at the epoch before the bump")
    both(sides, send(0, b"dropped"), 12, "Produce v12 at the new epoch")
    ended("EndTxn v5 abort", False)
    ended("EndTxn v5 abort with nothing in the transaction", False)
    for side in sides:  # Kafka writes the markers after it answers EndTxn
        side.call(fetch(topic, [0], isolation=1), 12, settled=markers_written)
    read = [read_partition(side, topic, isolation) for side in sides for isolation in (1, 0)]
    assert not differences(read[0], read[2]), differences(read[0], read[2])
    assert not differences(read[1], read[3]), differences(read[1], read[3])
    both(sides, OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=None)]),
         8, "OffsetFetch of the group the transaction committed for")


def test_transactions_admin(sides):
    """kafka-transactions' requests: DescribeProducers, DescribeTransactions and ListTransactions over an open
    transaction and an idempotent producer, and WriteTxnMarkers as kafka-transactions abort sends it (a hanging
    transaction aborted from outside), with its refusals: an older producer epoch, an older coordinator epoch,
    a partition that does not exist."""
    kafka, ours = sides
    kafka_4 = int(kafka.version.split(".")[0]) >= 4
    topic = f"diff-ta-{uuid.uuid4().hex[:8]}"
    tid = f"diff-txa-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=2, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
    both(sides, FindCoordinatorRequest(key_type=1, coordinator_keys=[tid]), 4, "FindCoordinator (transaction)")
    init = InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000)
    both(sides, init, 4, "InitProducerId (transactional)")
    k, o = both(sides, init, 4, "InitProducerId again: epoch 1")
    txn = {"kafka": (k.producer_id, k.producer_epoch), "ours": (o.producer_id, o.producer_epoch)}
    k, o = both(sides, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4,
                "InitProducerId (idempotent)")
    idem = {"kafka": (k.producer_id, k.producer_epoch), "ours": (o.producer_id, o.producer_epoch)}

    def of(ids):
        return lambda side: ids[side_name(side, sides)]

    txn_of, idem_of = of(txn), of(idem)
    both(sides, lambda side: AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=txn_of(side)[0],
        v3_and_below_producer_epoch=txn_of(side)[1], v3_and_below_topics=[
            AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[0])]), 3, "AddPartitionsToTxn")
    both(sides, lambda side: produce(topic, 1, batch(b"a", b"b", producer_id=idem_of(side)[0], epoch=0,
                                                       sequence=0)), 9, "idempotent Produce")
    both(sides, lambda side: produce(topic, 0, batch(b"open", producer_id=txn_of(side)[0], epoch=txn_of(side)[1],
                                                       sequence=0, transactional=True), tid), 9,
         "transactional Produce")

    def compared(what, make, version, timed=("transaction_start_time_ms",), settled=None):
        """both(), with times each broker takes from its clock put as set (>= 0) or not (-1), and the producer
        id of a transactional id not found (0, which a real producer may have) left out."""
        answers = [side.call(make(side) if callable(make) else make, version, settled) for side in sides]

        def untimed(value):
            if isinstance(value, dict):
                return {k: (("set" if v >= 0 else v) if k in timed else untimed(v)) for k, v in value.items()
                        if not (k == "producer_id" and value.get("error_code"))}
            return [untimed(v) for v in value] if isinstance(value, list) else value
        found = differences(untimed(answers[0][1]), untimed(answers[1][1]))
        assert not found, f"{what} v{version}: this broker differs from Apache Kafka:\n" + described(found)
        return answers[0][0], answers[1][0]

    producers = DescribeProducersRequest(topics=[
        DescribeProducersRequest.TopicRequest(name=topic, partition_indexes=[0, 1, 7]),
        DescribeProducersRequest.TopicRequest(name="diff-no-such-topic", partition_indexes=[0])])
    k, _ = both(sides, producers, 0, "DescribeProducers")
    assert [p.active_producers[0].current_txn_start_offset for p in k.topics[0].partitions[:2]] == [0, -1]
    describe = DescribeTransactionsRequest(transactional_ids=[tid, "diff-no-such-transactional-id"])
    k, _ = compared("DescribeTransactions, one open", describe, 0)
    assert k.transaction_states[0].transaction_state == "Ongoing"

    def listed(body, version, what):
        """ListTransactions with the other tests' transactions left out (the Kafka broker serves them too)."""
        answers = []
        for side in sides:
            response, plain = side.call(body, version)
            plain["transaction_states"] = [t for t in plain["transaction_states"] if t["transactional_id"] == tid]
            answers.append(plain)
        found = differences(*answers)
        assert not found, f"{what} v{version}: this broker differs from Apache Kafka:\n" + described(found)
        return answers[0]

    list_request = ListTransactionsRequest(state_filters=["Ongoing", "NoSuchState"], producer_id_filters=[])
    assert len(listed(list_request, 0, "ListTransactions of open ones")["transaction_states"]) == 1
    list_request.duration_filter = 3_600_000
    assert not listed(list_request, 1, "ListTransactions open for an hour")["transaction_states"]
    list_request.duration_filter = -1
    list_request.state_filters = ["CompleteCommit"]
    listed(list_request, 1, "ListTransactions of committed ones")
    if kafka_4:
        listed(ListTransactionsRequest(transactional_id_pattern=tid[:9] + ".*"), 2, "ListTransactions by pattern")
        listed(ListTransactionsRequest(transactional_id_pattern=tid[1:]), 2, "ListTransactions, part of the id")
        listed(ListTransactionsRequest(transactional_id_pattern="diff-(("), 2, "ListTransactions, a bad pattern")

    Marker, MarkerTopic = WriteTxnMarkersRequest.WritableTxnMarker, WriteTxnMarkersRequest.WritableTxnMarkerTopic

    def markers(of_side, epoch_delta, coordinator_epoch, partitions=(0,), version_2=False, name=topic):
        def make(side):
            producer_id, epoch = of_side(side)
            return WriteTxnMarkersRequest(markers=[Marker(
                producer_id=producer_id, producer_epoch=epoch + epoch_delta, transaction_result=False,
                topics=[MarkerTopic(name=name, partition_indexes=list(partitions))],
                coordinator_epoch=coordinator_epoch, transaction_version=2 if version_2 else 0)])
        return make

    # kafka-transactions abort: the open transaction's partition gets an abort marker at the producer's epoch
    both(sides, markers(txn_of, 0, 0), 1, "WriteTxnMarkers: abort a hanging transaction")
    both(sides, markers(txn_of, -1, 0), 1, "WriteTxnMarkers at an older producer epoch")
    both(sides, markers(txn_of, 0, 0, name="diff-no-such-topic"), 1, "WriteTxnMarkers to no such topic")
    both(sides, markers(txn_of, 0, 0, partitions=(9,)), 1, "WriteTxnMarkers to no such partition")
    # the idempotent producer's partition: coordinator epochs move on and may not go back
    both(sides, markers(idem_of, 0, 5, partitions=(1,)), 1, "WriteTxnMarkers, coordinator epoch 5")
    both(sides, markers(idem_of, 0, 4, partitions=(1,)), 1, "WriteTxnMarkers, coordinator epoch 4 after 5")
    both(sides, markers(idem_of, 1, 5, partitions=(1,)), 1, "WriteTxnMarkers at a new producer epoch")
    if kafka_4:
        both(sides, markers(idem_of, 1, 5, partitions=(1,), version_2=True), 2,
             "WriteTxnMarkers v2 again at the same epoch, no transaction open: a retry")
        both(sides, markers(idem_of, 2, 5, partitions=(1,), version_2=True), 2, "WriteTxnMarkers v2, epoch bumped")
        both(sides, markers(idem_of, 2, 5, partitions=(1,)), 2, "WriteTxnMarkers v2, transaction version 0")
    compared("DescribeProducers after the markers", producers, 0, timed=("last_timestamp",))
    for side in sides:
        side.call(fetch(topic, [0], isolation=1), 12, settled=markers_written)
    read = [read_partition(side, topic, 1) for side in sides]
    assert not differences(*read), differences(*read)
    k, _ = compared("DescribeTransactions after the marker", describe, 0)
    both(sides, lambda side: EndTxnRequest(transactional_id=tid, producer_id=txn_of(side)[0],
                                           producer_epoch=txn_of(side)[1], committed=False), 3, "EndTxn abort")
    # Kafka writes the markers after it answers EndTxn, in PrepareAbort meanwhile
    compared("DescribeTransactions, aborted", describe, 0,
             settled=lambda r: not r.transaction_states[0].transaction_state.startswith("Prepare"))


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
        # Kafka 3.9 has answered a fetch right after a transaction ended with an error and no high watermark
        # once in many runs: asked again, it answers
        response, plain = side.call(body, 12, settled=lambda r: r.responses[0].partitions[0].error_code == 0)
        part = plain["responses"][0]["partitions"][0]
        assert part["error_code"] == 0, part
        end = part["last_stable_offset"] if isolation else part["high_watermark"]
        aborted += [a for a in part["aborted_transactions"] or [] if a not in aborted]
        gathered += [b for b in part["records"] or [] if b["base_offset"] >= offset]
        if not part["records"] or (gathered and gathered[-1]["base_offset"] + gathered[-1]["last_offset_delta"]
                                   + 1 >= end):
            return {"batches": gathered, "aborted": aborted, "end": end}
        offset = gathered[-1]["base_offset"] + gathered[-1]["last_offset_delta"] + 1


# ---- classic groups: scripted life cycles ----------------------------------------------------------------------
# Each member has its own connection to each broker (a JoinGroup may wait while the others send theirs) and is
# driven on both at once; its member ids are labelled by its name in the script, so that members are compared
# whatever order a broker lists them in. Versions come in two sets: the newest both Kafkas serve, and older ones
# (no MEMBER_ID_REQUIRED, no static members, LeaveGroup of one member, ILLEGAL_GENERATION for unknown groups).

NEW = {"join": 9, "sync": 5, "heartbeat": 4, "leave": 5, "commit": 9, "fetch": 8, "describe": 5, "list": 5,
       "delete": 2}
OLD = {"join": 3, "sync": 2, "heartbeat": 2, "leave": 1, "commit": 6, "fetch": 5, "describe": 2, "list": 3,
       "delete": 1}


def subscription(*topics, user_data=None):
    """A consumer's JoinGroup metadata (ConsumerProtocolSubscription v0). Kafka reads it for protocol type
    "consumer": a group whose members send other bytes never completes its join in Kafka 3.9 and 4.3."""
    return (b"\x00\x00" + len(topics).to_bytes(4, "big")
            + b"".join(len(t).to_bytes(2, "big") + t.encode() for t in topics)
            + (b"\xff\xff\xff\xff" if user_data is None else len(user_data).to_bytes(4, "big") + user_data))


RANGE = [("range", subscription("t1"))]
POOL = ThreadPoolExecutor(max_workers=16)


class Member:
    """A group member on both brokers: its connections, and per broker its member id and generation."""

    def __init__(self, script, name, instance_id=None):
        self.script, self.name, self.instance_id = script, name, instance_id
        self.clients = [RawClient(side.port) for side in script.sides]
        self.ids = ["", ""]
        self.generations = [-1, -1]
        self.known = 0  # member ids this member has had

    def send(self, make, version, settled=None):
        """Start make(i) (i: 0 Kafka, 1 this broker) on both brokers; .get(what) waits and compares. With
        settled, each asks again until settled(response) holds."""
        return Reply(self, [POOL.submit(side.call, make(i), version, settled, self.clients[i])
                            for i, side in enumerate(self.script.sides)], version)

    def ask(self, make, version, what, view=None, settled=None):
        return self.send(make, version, settled).get(what, view)

    def took(self, response, i):
        """Remember the member id a JoinGroup answer gives this member (labelled by its name) and its generation."""
        if response.api_key == JoinGroupRequest.api_key and response.member_id and response.error_code in (
                errors.NONE.code, errors.MEMBER_ID_REQUIRED.code):
            if response.member_id != self.ids[i]:
                self.ids[i] = response.member_id
                self.known += i == 0
            self.script.sides[i].labels.name("member_id", response.member_id, f"{self.name}/{self.known}")
            if response.error_code == errors.NONE.code:
                self.generations[i] = response.generation_id

    def beside(self):
        """The same member on other connections, for requests while one of its own waits (Kafka answers a
        connection's requests in order, so a consumer's heartbeats during a rebalance take another way)."""
        twin = self.script.member(self.name, self.instance_id)
        twin.ids, twin.generations = self.ids, self.generations
        return twin

    def close(self):
        for client in self.clients:
            client.close()

    # requests, built for side i
    def join(self, version, protocols=RANGE, session_ms=10000, rebalance_ms=10000, member_id=None,
             protocol_type="consumer", instance_id=None):
        def make(i):
            return JoinGroupRequest(
                group_id=self.script.group, session_timeout_ms=session_ms, rebalance_timeout_ms=rebalance_ms,
                member_id=self.ids[i] if member_id is None else member_id(i), protocol_type=protocol_type,
                group_instance_id=self.instance_id if instance_id is None else instance_id,
                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols],
                reason="script")
        return make

    def sync(self, assignments=None, generation=None, protocol_name="range", protocol_type="consumer"):
        def make(i):
            return SyncGroupRequest(
                group_id=self.script.group, member_id=self.ids[i], group_instance_id=self.instance_id,
                generation_id=self.generations[i] if generation is None else generation,
                protocol_type=protocol_type, protocol_name=protocol_name(i) if callable(protocol_name) else
                protocol_name,
                assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=m.ids[i], assignment=a)
                             for m, a in (assignments or [])])
        return make

    def heartbeat(self, generation=None):
        return lambda i: HeartbeatRequest(group_id=self.script.group, member_id=self.ids[i],
                                          group_instance_id=self.instance_id,
                                          generation_id=self.generations[i] if generation is None else generation)

    def commit(self, offset, generation=None, member=True):
        return lambda i: OffsetCommitRequest(
            group_id=self.script.group, member_id=self.ids[i] if member else "",
            group_instance_id=self.instance_id if member else None,
            generation_id_or_member_epoch=self.generations[i] if generation is None else generation,
            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=self.script.topic, partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                                                 committed_metadata=f"by {self.name}")])])

    def leave(self, version, by_instance_only=False):
        def make(i):
            if version < 3:
                return LeaveGroupRequest(group_id=self.script.group, member_id=self.ids[i])
            return LeaveGroupRequest(group_id=self.script.group, members=[LeaveGroupRequest.MemberIdentity(
                member_id="" if by_instance_only else self.ids[i], group_instance_id=self.instance_id,
                reason="script")])
        return make


class Reply:
    def __init__(self, member, futures, version):
        self.member, self.futures, self.version = member, futures, version

    def get(self, what, view=None, timeout=30):
        """Both answers, compared (view picks what to compare of a normalised one); the raw answers."""
        script = self.member.script
        raw = []
        for future, side_name in zip(self.futures, ("Kafka", "this broker")):
            try:
                raw.append(future.result(timeout)[0])
            except TimeoutError:
                raise AssertionError(f"{what}: {side_name} did not answer within {timeout} s") from None
        for i, response in enumerate(raw):
            self.member.took(response, i)
        plain = [normalise(r.to_dict(), side.labels) for r, side in zip(raw, script.sides)]
        if view is not None:
            plain = [view(p) for p in plain]
        found = differences(*plain, allowed=before_4_0 if script.sides[0].version.startswith("3.") else None)
        name = type(raw[0]).__name__.removesuffix("Response")
        assert not found, f"{what} ({name} v{self.version}, Kafka {script.sides[0].version}): this broker " \
                          f"differs from Apache Kafka:\n" + described(found)
        script.log.append((what, plain[0]))
        return raw


class Script:
    """One group (and a topic for its offsets) driven the same way on both brokers."""

    def __init__(self, sides, versions):
        self.sides, self.v = sides, versions
        self.group = f"diff-cg-{uuid.uuid4().hex[:8]}"
        self.topic = f"diff-cg-{uuid.uuid4().hex[:8]}"
        self.members = []
        self.log = []
        both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=self.topic, num_partitions=1, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
        # Kafka's broker learns of a topic a moment after CreateTopics answers (and commits to it fail till then).
        both(sides, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=self.topic)],
                                    allow_auto_topic_creation=False), 12, "Metadata of the new topic",
             settled=lambda response: response.topics[0].error_code == 0)
        both(sides, FindCoordinatorRequest(key_type=0, coordinator_keys=[self.group]), 4, "FindCoordinator")

    def member(self, name, instance_id=None):
        member = Member(self, name, instance_id)
        self.members.append(member)
        return member

    def close(self):
        for member in self.members:
            member.close()

    @property
    def any(self):
        """A member for requests about the group rather than for one member (DescribeGroups and the like)."""
        return self.members[0] if self.members else self.member("observer")

    def describe(self, what, exists=True):
        """DescribeGroups (v6 too where Kafka has it). Kafka 4.3 answers MEMBER_ID_REQUIRED before the new group
        it made is committed, and describes what is committed: a group that exists is asked for until it shows."""
        version = self.v["describe"]
        settled = (lambda r: r.groups[0].group_state != "Dead") if exists else None  # noqa: E731
        body = DescribeGroupsRequest(groups=[self.group])
        k = self.any.ask(lambda i: body, version, f"DescribeGroups: {what}", settled=settled)[0]
        if version == 5 and not self.sides[0].version.startswith("3."):
            self.any.ask(lambda i: body, 6, f"DescribeGroups v6: {what}", settled=settled)
        return k.groups[0]

    def listed(self, what, states=()):
        """ListGroups, compared for this group only (each broker holds other tests' groups too)."""
        version = self.v["list"]
        mine = lambda plain: [g for g in plain["groups"] if g["group_id"] == self.group]  # noqa: E731
        body = ListGroupsRequest(states_filter=list(states) if version >= 4 else [])
        self.any.ask(lambda i: body, version, f"ListGroups: {what}", mine)

    def fetch(self, what):
        version = self.v["fetch"]
        if version >= 8:
            body = OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
                group_id=self.group, topics=[OffsetFetchRequest.OffsetFetchRequestTopics(
                    name=self.topic, partition_indexes=[0])])])
        else:
            body = OffsetFetchRequest(group_id=self.group, topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
                name=self.topic, partition_indexes=[0])])
        return self.any.ask(lambda i: body, version, f"OffsetFetch: {what}")[0]

    def delete(self, what):
        return self.any.ask(lambda i: DeleteGroupsRequest(groups_names=[self.group]), self.v["delete"],
                            f"DeleteGroups: {what}")[0].results[0].error_code


def before_4_0(path, kafka, ours):
    """What Kafka 3.9's group coordinator answers otherwise than 4.x's (the new coordinator, KIP-848's, which
    this broker follows): 3.9 describes members without their assignment outside Stable, and answers an
    OffsetCommit v9+ naming a generation to a group that does not exist with ILLEGAL_GENERATION, not
    GROUP_ID_NOT_FOUND."""
    if path.endswith(".member_assignment"):
        return kafka == b""
    return path.endswith("partitions[0].error_code") and (kafka, ours) == (
        errors.ILLEGAL_GENERATION.code, errors.GROUP_ID_NOT_FOUND.code)


def partition_error(response):
    return response.topics[0].partitions[0].error_code


@pytest.fixture(params=[NEW, OLD], ids=["newest-versions", "older-versions"])
def script(sides, request):
    script = Script(sides, request.param)
    yield script
    script.close()


def test_a_group_through_every_state(script):
    """Two dynamic members take a group through each state; in each, every group request is sent."""
    v, new = script.v, script.v["join"] >= 4
    script.describe("a group that does not exist", exists=False)
    assert script.delete("a group that does not exist") == errors.GROUP_ID_NOT_FOUND.code
    a, b = script.member("a"), script.member("b")
    # Empty
    if new:
        assert a.ask(a.join(v["join"]), v["join"], "JoinGroup of a new member") and \
            a.ids[0] and script.describe("a new member has its id, the group exists").group_state == "Empty"
        script.listed("a new, empty group")
        a.ask(a.heartbeat(generation=0), v["heartbeat"], "Heartbeat of a member id not joined yet")
        a.ask(a.sync(generation=0), v["sync"], "SyncGroup to an empty group")
        a.ask(a.commit(1, generation=0), v["commit"], "OffsetCommit naming a generation in an empty group")
    k = a.send(a.join(v["join"]), v["join"]).get("JoinGroup: the first member")[0]
    assert k.error_code == 0 and k.generation_id == 1 and k.leader == k.member_id
    # CompletingRebalance: the leader has the members, no assignment yet
    assert script.describe("waiting for the leader's assignment").group_state == "CompletingRebalance"
    script.listed("CompletingRebalance", states=["CompletingRebalance"])
    assert a.ask(a.heartbeat(), v["heartbeat"], "Heartbeat in CompletingRebalance") == a.ask(
        a.heartbeat(), v["heartbeat"], "Heartbeat in CompletingRebalance, again")
    a.ask(a.heartbeat(generation=7), v["heartbeat"], "Heartbeat of another generation")
    a.ask(lambda i: HeartbeatRequest(group_id=script.group, member_id="nobody", generation_id=1), v["heartbeat"],
          "Heartbeat of an unknown member")
    assert partition_error(a.ask(a.commit(1), v["commit"], "OffsetCommit in CompletingRebalance")[0]) == \
        errors.REBALANCE_IN_PROGRESS.code
    a.ask(a.commit(1, generation=0), v["commit"], "OffsetCommit of another generation in CompletingRebalance")
    a.ask(a.commit(1, generation=-1, member=False), v["commit"], "a simple OffsetCommit to a group with members")
    a.ask(a.join(v["join"]), v["join"], "JoinGroup again, nothing changed, in CompletingRebalance")
    a.ask(a.sync(generation=0), v["sync"], "SyncGroup of another generation")
    if v["sync"] >= 5:
        a.ask(a.sync(protocol_name="roundrobin"), v["sync"], "SyncGroup naming another protocol")
        a.ask(a.sync(protocol_name=None), v["sync"], "SyncGroup v5 without the protocol name")
    assert script.delete("a group with members") == errors.NON_EMPTY_GROUP.code
    # Stable
    a.ask(a.sync([(a, b"a-plan")]), v["sync"], "SyncGroup of the leader")
    assert script.describe("stable").group_state == "Stable"
    script.listed("Stable", states=["stable"])
    a.ask(a.heartbeat(), v["heartbeat"], "Heartbeat in Stable")
    a.ask(a.commit(5), v["commit"], "OffsetCommit in Stable")
    script.fetch("after a commit in Stable")
    a.ask(a.sync(), v["sync"], "SyncGroup again in Stable")
    # PreparingRebalance: a second member joins
    joining = b.send(b.join(v["join"]), v["join"])
    if new:
        joining.get("JoinGroup of a second new member")
        joining = b.send(b.join(v["join"]), v["join"])
    wait_for_state(script, "PreparingRebalance")
    script.describe("b waits for a to rejoin")
    script.listed("PreparingRebalance", states=["PreparingRebalance", "Empty"])
    assert a.ask(a.heartbeat(), v["heartbeat"], "Heartbeat in PreparingRebalance")[0].error_code == \
        errors.REBALANCE_IN_PROGRESS.code
    # A member of the generation commits what it consumed before it rejoins (cooperative consumers do).
    assert partition_error(a.ask(a.commit(6), v["commit"], "OffsetCommit in PreparingRebalance")[0]) == 0
    a.ask(a.commit(6, generation=5), v["commit"], "OffsetCommit of another generation in PreparingRebalance")
    a.ask(a.sync(), v["sync"], "SyncGroup in PreparingRebalance")
    script.fetch("after a commit in PreparingRebalance")
    assert script.delete("a rebalancing group") == errors.NON_EMPTY_GROUP.code
    c = script.member("c")
    c.ask(c.join(v["join"], protocol_type="connect"), v["join"], "JoinGroup with another protocol type")
    c.ask(c.join(v["join"], protocols=[("roundrobin", b"")]), v["join"], "JoinGroup with no protocol in common")
    k = a.ask(a.join(v["join"]), v["join"], "JoinGroup: the leader rejoins")[0]
    assert k.generation_id == 2 and len(k.members) == 2
    joining.get("JoinGroup: the second member's answer")
    # CompletingRebalance of generation 2: the follower's SyncGroup waits for the leader's
    syncing = b.send(b.sync(), v["sync"])
    b.beside().ask(b.heartbeat(), v["heartbeat"], "Heartbeat of the follower in CompletingRebalance")
    b.beside().ask(b.commit(7), v["commit"], "OffsetCommit of the follower in CompletingRebalance")
    a.ask(a.sync([(a, b"a-plan-2"), (b, b"b-plan-2")]), v["sync"], "SyncGroup of the leader, with a follower's")
    assert syncing.get("SyncGroup of the follower, answered with the leader's")[0].assignment == b"b-plan-2"
    script.describe("stable with two members")
    b.ask(b.join(v["join"]), v["join"], "JoinGroup of a follower again, nothing changed, in Stable")
    # A member leaves: the other must rejoin
    b.ask(b.leave(v["leave"]), v["leave"], "LeaveGroup of the follower")
    script.describe("after the follower left")
    b.ask(b.heartbeat(), v["heartbeat"], "Heartbeat of a member that left")
    a.ask(a.heartbeat(), v["heartbeat"], "Heartbeat of the one left, rebalancing")
    k = a.ask(a.join(v["join"]), v["join"], "JoinGroup: the one left rejoins")[0]
    assert k.generation_id == 3 and [m.member_id for m in k.members] == [k.member_id]
    a.ask(a.sync([(a, b"alone")]), v["sync"], "SyncGroup alone")
    unknown = (LeaveGroupRequest(group_id=script.group, member_id="nobody") if v["leave"] < 3 else
               LeaveGroupRequest(group_id=script.group, members=[
                   LeaveGroupRequest.MemberIdentity(member_id="nobody"), LeaveGroupRequest.MemberIdentity(
                       member_id="", group_instance_id="no-such-instance"),
                   LeaveGroupRequest.MemberIdentity(member_id="")]))
    a.ask(lambda i: unknown, v["leave"], "LeaveGroup of unknown members")
    # Empty again
    a.ask(a.leave(v["leave"]), v["leave"], "LeaveGroup of the last member")
    assert script.describe("everyone left").group_state == "Empty"
    script.listed("Empty", states=["EMPTY"])
    a.ask(a.heartbeat(), v["heartbeat"], "Heartbeat to an empty group")
    a.ask(a.sync(), v["sync"], "SyncGroup to an empty group")
    a.ask(a.commit(8), v["commit"], "OffsetCommit of a member that left")
    assert partition_error(a.ask(a.commit(9, generation=-1, member=False), v["commit"],
                                 "a simple OffsetCommit to an empty group")[0]) == 0
    script.fetch("the simple commit")
    assert script.delete("an empty group") == 0
    script.describe("deleted", exists=False)
    script.listed("deleted")
    script.fetch("deleted")
    a.ask(a.commit(10, generation=1), v["commit"], "OffsetCommit naming a generation to a group that does not exist")
    a.ask(a.heartbeat(), v["heartbeat"], "Heartbeat to a group that does not exist")
    a.ask(a.sync(), v["sync"], "SyncGroup to a group that does not exist")
    a.ask(a.leave(v["leave"]), v["leave"], "LeaveGroup of a group that does not exist")
    a.ask(a.join(v["join"], member_id=lambda i: "someone"), v["join"], "JoinGroup of a member to a group that "
                                                                         "does not exist")


def wait_for_state(script, state, timeout=10):
    """Until both brokers show the group in state (a waiting JoinGroup has reached them)."""
    deadline = time.monotonic() + timeout
    for client in [RawClient(side.port) for side in script.sides]:
        try:
            while client.call(DescribeGroupsRequest(groups=[script.group]), 5).body.groups[0].group_state != state:
                assert time.monotonic() < deadline, f"the group never reached {state}"
                time.sleep(0.02)
        finally:
            client.close()


@pytest.mark.parametrize("join_version", [5, 9])
def test_static_members_replace_each_other(sides, join_version):
    """A static member restarted under a new member id takes its old self's place; the old id is fenced."""
    v = {**NEW, "join": join_version}
    script = Script(sides, v)
    try:
        s = script.member("s", instance_id="host-1")
        k = s.ask(s.join(v["join"]), v["join"], "JoinGroup of a static member (no MEMBER_ID_REQUIRED)")[0]
        assert k.generation_id == 1 and k.leader == k.member_id
        s.ask(s.sync([(s, b"s-plan")]), v["sync"], "SyncGroup of the static leader")
        back = script.member("s-restarted", instance_id="host-1")
        back.ask(back.join(v["join"]), v["join"], "JoinGroup of the static member under a new id, in Stable")
        s.ask(s.heartbeat(), v["heartbeat"], "Heartbeat of the fenced old id")
        s.ask(s.sync(), v["sync"], "SyncGroup of the fenced old id")
        s.ask(s.join(v["join"]), v["join"], "JoinGroup of the fenced old id")
        s.ask(s.commit(3), v["commit"], "OffsetCommit of the fenced old id")
        s.ask(s.leave(v["leave"]), v["leave"], "LeaveGroup of the fenced old id")
        back.ask(back.sync(), v["sync"], "SyncGroup of the new id: the old one's assignment")
        back.ask(back.heartbeat(), v["heartbeat"], "Heartbeat of the new id")
        script.describe("a static member replaced")
        # A dynamic member joins; the static one rejoins and waits for it; then restarts while it waits.
        e = script.member("e")
        joining = e.send(e.join(v["join"]), v["join"])
        joining.get("JoinGroup of a dynamic member")
        joining = e.send(e.join(v["join"]), v["join"])
        wait_for_state(script, "PreparingRebalance")
        back.ask(back.join(v["join"]), v["join"], "JoinGroup: the static leader rejoins")
        joining.get("JoinGroup: the dynamic member's answer")
        syncing = e.send(e.sync(), v["sync"])
        back.ask(back.sync([(back, b"back-plan"), (e, b"e-plan")]), v["sync"], "SyncGroup of the static leader")
        syncing.get("SyncGroup of the dynamic member")
        d = script.member("d")
        d.ask(d.join(v["join"]), v["join"], "JoinGroup of a third member")
        joining = d.send(d.join(v["join"]), v["join"])
        wait_for_state(script, "PreparingRebalance")
        waiting = back.send(back.join(v["join"]), v["join"])
        again = script.member("s-again", instance_id="host-1")
        rejoined = again.send(again.join(v["join"]), v["join"])
        waiting.get("JoinGroup of a static member waiting when it restarts: fenced")
        script.describe("the static member restarted during a rebalance")
        e.ask(e.join(v["join"]), v["join"], "JoinGroup: the last member rejoins")
        rejoined.get("JoinGroup of the restarted static member")
        joining.get("JoinGroup of the third member")
        f = script.member("f")
        f.ask(f.join(v["join"]), v["join"], "JoinGroup of a fourth member: group.max.size is 3")
        # LeaveGroup by instance id: with the wrong member id, with none, and for an instance nobody has
        again.ask(lambda i: LeaveGroupRequest(group_id=script.group, members=[LeaveGroupRequest.MemberIdentity(
            member_id=s.ids[i], group_instance_id="host-1")]), v["leave"], "LeaveGroup of a fenced instance")
        again.ask(again.leave(v["leave"], by_instance_only=True), v["leave"], "LeaveGroup by instance id alone")
        again.ask(again.leave(v["leave"], by_instance_only=True), v["leave"], "LeaveGroup of an instance gone")
        script.describe("the static member left")
    finally:
        script.close()


def run_script(sides, versions, body):
    script = Script(sides, versions)
    try:
        body(script, versions)
    finally:
        script.close()


def test_session_and_rebalance_timeouts(sides):
    """Seconds-long timeouts run out on both brokers alike: a member's session, a member that does not rejoin
    in time, one that never sends SyncGroup, and one that got its id but never joined with it."""
    v = NEW

    def session(script, v):
        a = script.member("a")
        a.ask(a.join(v["join"], session_ms=1000, rebalance_ms=1000), v["join"], "JoinGroup")
        a.ask(a.join(v["join"], session_ms=1000, rebalance_ms=1000), v["join"], "JoinGroup with its id")
        a.ask(a.sync([(a, b"plan")]), v["sync"], "SyncGroup")
        time.sleep(1.6)
        a.ask(a.heartbeat(), v["heartbeat"], "Heartbeat after the session timed out")
        script.describe("the only member's session timed out")

    def rebalance(script, v):
        a, b = script.member("a"), script.member("b")
        for member in (a, a):
            member.ask(member.join(v["join"], session_ms=3000, rebalance_ms=1000), v["join"], "JoinGroup")
        a.ask(a.sync([(a, b"plan")]), v["sync"], "SyncGroup")
        b.ask(b.join(v["join"], session_ms=3000, rebalance_ms=1000), v["join"], "JoinGroup of a second member")
        joining = b.send(b.join(v["join"], session_ms=3000, rebalance_ms=1000), v["join"])
        time.sleep(0.4)
        a.ask(a.heartbeat(), v["heartbeat"], "Heartbeat of a member that will not rejoin")
        joining.get("JoinGroup answered after the rebalance timeout, without the member that did not rejoin")
        a.ask(a.heartbeat(), v["heartbeat"], "Heartbeat of the member dropped")
        time.sleep(1.4)  # b never sends SyncGroup
        b.ask(b.heartbeat(), v["heartbeat"], "Heartbeat of a member that did not sync in time")
        script.describe("nobody synced")

    def pending(script, v):
        a, c = script.member("a"), script.member("c")
        for member in (a, a):
            member.ask(member.join(v["join"], rebalance_ms=8000), v["join"], "JoinGroup")
        a.ask(a.sync([(a, b"plan")]), v["sync"], "SyncGroup")
        c.ask(c.join(v["join"], session_ms=1000), v["join"], "JoinGroup of a member that will not come back")
        started = time.monotonic()
        rejoin = a.send(a.join(v["join"], rebalance_ms=8000), v["join"])
        rejoin.get("JoinGroup of the leader: a rebalance, held for the member id given out")
        assert time.monotonic() - started < 5, "held for the rebalance timeout, not for the pending member's session"

    for body in (session, rebalance, pending):
        run_script(sides, v, body)


def test_protocol_and_leader_choice(sides):
    """The protocol most members rank first among those all support (a tie as Kafka's hash map orders the
    names); the leader is the first member, then one that rejoined."""
    v = NEW

    def body(script, v):
        both_ways = [("range", subscription("t1")), ("sticky", subscription("t1"))]
        a, b = script.member("a"), script.member("b")
        for member in (a, a):
            member.ask(member.join(v["join"], protocols=both_ways), v["join"], "JoinGroup")
        a.ask(a.sync([(a, b"plan")], protocol_name="range"), v["sync"], "SyncGroup")
        b.ask(b.join(v["join"], protocols=both_ways[::-1]), v["join"], "JoinGroup of a member preferring sticky")
        joining = b.send(b.join(v["join"], protocols=both_ways[::-1]), v["join"])
        wait_for_state(script, "PreparingRebalance")
        # Kafka 3.9's coordinator breaks the tie otherwise (Scala's maxBy over its own map).
        tie = (lambda plain: {**plain, "protocol_name": None}) if script.sides[0].version.startswith("3.") else None
        chosen = a.ask(a.join(v["join"], protocols=both_ways), v["join"], "JoinGroup: one vote each", tie)
        joining.get("JoinGroup: one vote each, the follower", tie)
        name = [response.protocol_name for response in chosen]
        syncing = b.send(b.sync(protocol_name=lambda i: name[i]), v["sync"])
        a.ask(a.sync([(a, b"a"), (b, b"b")], protocol_name=lambda i: name[i]), v["sync"], "SyncGroup of the leader",
              tie)
        syncing.get("SyncGroup of the follower", tie)
        a.ask(a.leave(v["leave"]), v["leave"], "LeaveGroup of the leader")
        k = b.ask(b.join(v["join"], protocols=both_ways[::-1]), v["join"], "JoinGroup: the one left leads")[0]
        assert k.leader == k.member_id
        b.ask(b.sync([(b, b"b")], protocol_name=k.protocol_name), v["sync"], "SyncGroup")
        b.ask(b.join(v["join"], protocols=both_ways[::-1]), v["join"], "JoinGroup of the leader in Stable: a "
                                                                         "rebalance, done at once")

    run_script(sides, v, body)


@pytest.mark.parametrize("versions", [NEW, OLD], ids=["newest-versions", "older-versions"])
def test_refused_before_the_group_is_looked_at(sides, versions):
    """No group id, and session timeouts outside group.min/max.session.timeout.ms."""

    def body(script, v):
        m = script.member("m")
        for session_ms in (999, 1800001):
            m.ask(m.join(v["join"], session_ms=session_ms), v["join"], f"JoinGroup with session timeout {session_ms}")
        script.describe("no group made by a refused JoinGroup", exists=False)
        script.group = ""
        m.ask(m.join(v["join"]), v["join"], "JoinGroup without a group id")
        m.ask(m.sync(generation=1), v["sync"], "SyncGroup without a group id")
        m.ask(m.heartbeat(generation=1), v["heartbeat"], "Heartbeat without a group id")
        m.ask(m.commit(1, generation=1), v["commit"], "OffsetCommit without a group id")
        m.ask(m.leave(v["leave"]), v["leave"], "LeaveGroup without a group id")
        script.describe("no group id", exists=False)
        script.fetch("no group id")
        script.delete("no group id")

    run_script(sides, versions, body)


def test_reserved_and_colliding_topic_names(sides):
    """Names Kafka refuses beyond their characters, and how (its messages too, which the comparison leaves out):
    __cluster_metadata (INVALID_REQUEST, answered after the other topics); __consumer_offsets and
    __transaction_state, which exist (TOPIC_ALREADY_EXISTS: Kafka makes them for the first group's and transaction's
    coordinator, done here first; this broker's own logs stand for them); names that collide with an existing
    topic's once '.' and '_' are alike (INVALID_TOPIC_EXCEPTION), though two of one request may; and a name given
    twice (INVALID_REQUEST once, after the others, neither made)."""
    suffix = uuid.uuid4().hex[:8]
    for key_type, key in ((0, f"diff-reserved-{suffix}"), (1, f"diff-reserved-{suffix}")):
        both(sides, FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key]), 4,
             f"FindCoordinator (key type {key_type})", settled=lambda r: r.coordinators[0].error_code == 0)

    def create(names, validate_only=False):
        return CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1,
                                                                              replication_factor=1)
                                           for name in names], timeout_ms=10000, validate_only=validate_only)

    def same(names, what, version=7, validate_only=False):
        k, o = both(sides, create(names, validate_only), version, what)
        answers = [[(t.name, t.error_code, t.error_message) for t in r.topics] for r in (k, o)]
        assert answers[0] == answers[1], f"{what} v{version}: Kafka {answers[0]}, this broker {answers[1]}"
        return answers[1]

    own = ["__cluster_metadata", "__consumer_offsets", "__transaction_state"]
    for version in (2, 7):
        assert [code for _, code, _ in same(own, "CreateTopics of the internal topics' names", version)] == [
            errors.TOPIC_ALREADY_EXISTS.code, errors.TOPIC_ALREADY_EXISTS.code, errors.INVALID_REQUEST.code]
    same(["__consumer.offsets", "__transaction.state", "__cluster.metadata"],
         "CreateTopics of names colliding with internal ones", validate_only=True)
    dot, underscore = f"diff.col-{suffix}", f"diff_und-{suffix}"
    same([dot, underscore], "CreateTopics")
    answers = same([dot.replace(".", "_"), underscore.replace("_", "."), dot, underscore],
                   "CreateTopics of colliding and existing names")
    assert [code for _, code, _ in answers] == [errors.INVALID_TOPIC_EXCEPTION.code] * 2 + [
        errors.TOPIC_ALREADY_EXISTS.code] * 2
    same([f"diff.pair-{suffix}", f"diff_pair-{suffix}"], "CreateTopics of two names that collide with each other")
    twice = [f"diff-twice{i}-{suffix}" for i in range(4)]
    same([twice[0], "__cluster_metadata", twice[0], twice[1], twice[2], twice[2], twice[3], twice[3]],
         "CreateTopics naming topics twice", validate_only=True)
    both(sides, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name) for name in
                                        ("__cluster_metadata", dot.replace(".", "_"))],
                                allow_auto_topic_creation=True), 12, "Metadata of refused names")
    both(sides, produce("__cluster_metadata", 0, batch(b"x")), 9, "Produce to __cluster_metadata")
    internal_topic_served(sides, "__consumer_offsets", ["cleanup.policy", "compression.type", "segment.bytes"])
    internal_topic_served(sides, "__transaction_state", ["cleanup.policy", "compression.type", "segment.bytes",
                                                         "min.insync.replicas", "unclean.leader.election.enable"])


def test_replication_factors_and_assignments_refused(sides):
    """A one-broker cluster refuses more replicas than it has, a factor below 1, and manual assignments naming a
    broker it does not have, one twice, none, or lists of different lengths: Kafka's codes, and from 4.x its
    messages."""
    C = CreateTopicsRequest

    def topic(name, count=-1, factor=-1, assignments=()):
        return C.CreatableTopic(name=f"diff-rf-{name}", num_partitions=count, replication_factor=factor,
                                assignments=[C.CreatableReplicaAssignment(partition_index=i, broker_ids=b)
                                             for i, b in enumerate(assignments)])
    mine = int(node_id(sides[1]))
    assert mine == int(node_id(sides[0]))
    other = 7 if mine != 7 else 8
    body = C(topics=[topic("two", 1, 2), topic("zero", 1, 0), topic("below", 1, -2),
                     topic("unknown", assignments=[[mine, other]]), topic("twice", assignments=[[mine, mine]]),
                     topic("none", assignments=[[]]), topic("uneven", assignments=[[mine], []]),
                     topic("fine", assignments=[[mine], [mine]])], timeout_ms=5000, validate_only=True)
    k, o = both(sides, body, 7, "CreateTopics of replication factors and assignments")
    codes = [(t.name, t.error_code) for t in o.topics]
    assert [code for _, code in codes] == [38, 38, 38, 39, 39, 39, 39, 0], codes
    if not sides[0].version.startswith("3."):
        kafka = [(t.name, t.error_message) for t in k.topics]
        ours = [(t.name, t.error_message.replace(f"broker {other}", "broker <other>") if t.error_message else None)
                for t in o.topics]
        kafka = [(n, m.replace(f"broker {other}", "broker <other>") if m else None) for n, m in kafka]
        assert kafka == ours


def test_share_coordinator_found_and_its_topic_served(sides):
    """Kafka's brokers look for a share partition's coordinator with FindCoordinator key type 2 (v6 on), keyed
    ``group:topic id:partition``; the first such lookup makes __share_group_state. Keys not of that form, and older
    versions, are INVALID_REQUEST; the topic is then served as the other internal topics are."""
    if sides[0].version.startswith("3."):
        pytest.skip("share groups are Kafka 4's")
    topic_id = Uuid.random()
    both(sides, FindCoordinatorRequest(key_type=2, coordinator_keys=[f"diff-share:{topic_id}:0"]), 6,
         "FindCoordinator of a share partition", settled=lambda r: r.coordinators[0].error_code == 0)
    keys = [f"a:b:{topic_id}:3", f"g:{topic_id}:x", f":{topic_id}:0", "g:not-an-id:0", "no-colons",
            f"g:{topic_id}:2147483648", f"g:{topic_id}:-1"]
    k, o = both(sides, FindCoordinatorRequest(key_type=2, coordinator_keys=keys), 6,
                "FindCoordinator of share partition keys, some malformed")
    assert [c.error_code for c in o.coordinators] == [0, 42, 42, 42, 42, 42, 0]
    both(sides, FindCoordinatorRequest(key_type=2, coordinator_keys=[f"g:{topic_id}:0"]), 5,
         "FindCoordinator of a share partition before v6")
    internal_topic_served(sides, "__share_group_state", ["cleanup.policy", "compression.type", "min.insync.replicas",
                                                         "retention.ms", "segment.bytes"])


def internal_topic_served(sides, name, config_keys):
    """An internal topic once its coordinator was found (Kafka makes __consumer_offsets for the first group,
    __transaction_state for the first transactional id): listed, named or not, as an internal topic, its
    partitions aside (Kafka's 50 by default; here one, the coordinator's log: offsets.topic.num.partitions,
    transaction.state.log.num.partitions); read-only to clients (Produce and DeleteRecords
    INVALID_TOPIC_EXCEPTION); the configs Kafka gives it."""
    named = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                            allow_auto_topic_creation=False)
    answers = [side.call(named, 12, settled=lambda r: r.topics[0].error_code == 0) for side in sides]
    for response, plain in answers:
        assert len(plain["topics"]) == 1 and plain["topics"][0]["partitions"]
        assert response.topics[0].topic_id.int, f"{name} has no topic id"
        # each side labels ids in the order it met them, which other tests sharing the brokers make differ
        plain["topics"][0]["partitions"] = plain["topics"][0]["topic_id"] = None
    found = differences(answers[0][1], answers[1][1])
    assert not found, f"Metadata of {name}:\n" + described(found)
    ours = answers[1][0].topics[0]
    assert ours.is_internal and [p.partition_index for p in ours.partitions] == [0]
    for side in sides:
        every = side.call(MetadataRequest(topics=None), 12)[0]
        assert [t.is_internal for t in every.topics if t.name == name] == [True]
    both(sides, produce(name, 0, batch(b"x")), 9, f"Produce to {name}")
    both(sides, DeleteRecordsRequest(timeout_ms=10000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name=name, partitions=[DeleteRecordsRequest.DeleteRecordsPartition(
            partition_index=0, offset=0)])]), 2, f"DeleteRecords of {name}")
    both(sides, DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=2, resource_name=name, configuration_keys=list(config_keys))]), 4,
        f"DescribeConfigs of {name}")


# ---- Produce: every batch checked as Kafka checks it before it is stored ------------------------------------------
# Batches that lie (under a good CRC), records refused one by one, and the rules for producers, sent to both brokers
# one case per partition: the answers must agree on the error, the log start offset and the records listed in
# record_errors (whose texts are each broker's own), and what each stored must read back the same.


def pv_batch(recs, ts_shift=0, **options):
    """A batch (raw_batches.batch) stamped with the clock's time now, give or take ts_shift ms."""
    return raw_batches.batch(recs, base_ts=int(time.time() * 1000) + ts_shift, **options)


def pv_zstd_bomb(size, key=b"k"):
    return raw_batches.zstd_bomb(size, key, base_ts=int(time.time() * 1000))


def pv_edited(data, at, value):
    """data with the bytes at at replaced (a batch's length or magic; the CRC does not cover them)."""
    return data[:at] + value + data[at + len(value):]


def pv_legacy(magic):
    builder = records.RecordBatchBuilder(magic=magic)
    builder.append(b"k", b"v", timestamp=int(time.time() * 1000))
    return builder.build()


PV_KEYED = [pv_record(key=b"k%d" % i, offset_delta=i) for i in range(3)]
PV_HOUR = 3_600_000
# (what, topic, the partition's data, Produce version); both topics bound timestamps to an hour either way (Kafka
# 4's default after, set explicitly: 3.9's default is unbounded), and "compact" keeps records by key.
PV_CASES = [
    ("a good batch", "plain", lambda: pv_batch(PV_KEYED), 9),
    ("fewer records than the count", "plain", lambda: pv_batch(PV_KEYED[:2], count=3), 9),
    ("more records than the count", "plain", lambda: pv_batch(PV_KEYED + [pv_record(offset_delta=3)], count=3), 9),
    ("a count that disagrees with the last offset", "plain", lambda: pv_batch(PV_KEYED[:2], last_delta=2), 9),
    ("garbage records under a good CRC", "plain", lambda: pv_batch([b"\x07garbage" * 3], count=3), 9),
    ("no records", "plain", lambda: pv_batch([], count=0), 9),
    ("a record longer than its batch", "plain", lambda: pv_batch([pv_record(size=100)]), 9),
    ("a record of no bytes", "plain", lambda: pv_batch([b"\0"]), 9),
    ("a key longer than its record", "plain",
     lambda: pv_batch([pv_record(body=b"\0\0\0" + pv_zigzag(50) + b"k", size=5) + b"\0" * 60]), 9),
    ("a negative header count", "plain",
     lambda: pv_batch([pv_record(body=b"\0\0\0" + pv_field(b"k") + pv_field(b"v") + pv_zigzag(-1))]), 9),
    ("more headers than bytes", "plain",
     lambda: pv_batch([pv_record(body=b"\0\0\0" + pv_field(b"k") + pv_field(b"v") + pv_zigzag(100))]), 9),
    ("a null header key", "plain", lambda: pv_batch([pv_record(headers=[(None, b"x")])]), 9),
    ("a byte after the headers", "plain",
     lambda: pv_batch([pv_record(body=b"\0\0\0" + pv_field(b"k") + pv_field(b"v") + b"\0\0")]), 9),
    ("a varint of eleven bytes", "plain",
     lambda: pv_batch([pv_record(body=b"\0" + b"\xff" * 10 + b"\x01\0" + pv_field(b"k") + pv_field(b"v") + b"\0")]), 9),
    ("codec 7", "plain", lambda: pv_batch(PV_KEYED, codec=7), 9),
    ("codec 5", "plain", lambda: pv_batch(PV_KEYED, codec=5), 8),
    ("corrupt lz4", "plain", lambda: pv_batch([], count=3, codec=3, payload=b"\x04\x22\x4d\x18garbage-garbage"), 9),
    ("corrupt gzip", "plain",
     lambda: pv_batch([], count=3, codec=1, payload=b"\x1f\x8b\x08\0\0\0\0\0\0\xffgarbage-garbage"), 9),
    ("corrupt snappy", "plain", lambda: pv_batch([], count=3, codec=2,
                                                 payload=b"\x82SNAPPY\0\0\0\0\x01\0\0\0\x01\0\0\0\x10garbage-garbage-X"),
     9),
    ("corrupt zstd", "plain", lambda: pv_batch([], count=3, codec=4, payload=b"\x28\xb5\x2f\xfdgarbage-garbage"), 9),
    ("lz4: fewer records than the count", "plain", lambda: pv_batch(PV_KEYED[:2], count=3, codec=3), 9),
    ("lz4: garbage records", "plain", lambda: pv_batch([b"\x07garbage" * 3], count=3, codec=3), 9),
    ("lz4: a byte after the last record", "plain", lambda: pv_batch([*PV_KEYED[:2], PV_KEYED[2] + b"\0"], codec=3), 9),
    ("lz4: offsets out of order", "plain",
     lambda: pv_batch([pv_record(offset_delta=d) for d in (0, 5, 7)], codec=3), 9),
    ("gzip: offsets starting at 1", "plain",
     lambda: pv_batch([pv_record(offset_delta=d) for d in (1, 2, 3)], codec=1), 9),
    ("uncompressed: offsets out of order", "plain", lambda: pv_batch([pv_record(offset_delta=d) for d in (0, 5, 7)]),
     9),
    ("two batches", "plain", lambda: pv_batch(PV_KEYED) + pv_batch(PV_KEYED), 9),
    ("a magic-1 batch after a magic-2 one", "plain", lambda: pv_batch(PV_KEYED) + pv_legacy(1), 9),
    ("no data", "plain", lambda: b"", 9),
    ("a batch cut short", "plain", lambda: pv_batch(PV_KEYED)[:-1], 9),
    ("a batch and part of another", "plain", lambda: pv_batch(PV_KEYED) + pv_batch(PV_KEYED)[:40], 9),
    ("a batch and five bytes", "plain", lambda: pv_batch(PV_KEYED) + b"\0" * 5, 9),
    ("a length below any format's", "plain", lambda: pv_edited(pv_batch(PV_KEYED), 8, b"\0\0\0\x0a"), 9),
    ("a length below the header", "plain", lambda: pv_edited(pv_batch(PV_KEYED), 8, b"\0\0\0\x1e"), 9),
    ("magic 3", "plain", lambda: pv_edited(pv_batch(PV_KEYED), 16, b"\x03"), 9),
    ("magic 1, v3", "plain", lambda: pv_legacy(1), 3),
    ("magic 0, v9", "plain", lambda: pv_legacy(0), 9),
    ("base offset 5", "plain", lambda: pv_batch(PV_KEYED, base_offset=5), 9),
    ("a producer id without a sequence", "plain", lambda: pv_batch(PV_KEYED, producer_id=5, sequence=-1), 9),
    ("zstd, v3", "plain", lambda: pv_batch(PV_KEYED, codec=4), 3),
    ("zstd, v6", "plain", lambda: pv_batch(PV_KEYED, codec=4), 6),
    ("zstd, v7", "plain", lambda: pv_batch(PV_KEYED, codec=4), 7),
    ("two hours ahead", "plain", lambda: pv_batch(PV_KEYED, ts_shift=2 * PV_HOUR), 9),
    ("two hours ahead, v7", "plain", lambda: pv_batch(PV_KEYED, ts_shift=2 * PV_HOUR), 7),
    ("two hours ago", "plain", lambda: pv_batch(PV_KEYED, ts_shift=-2 * PV_HOUR), 9),
    ("one record of three two hours ahead", "plain", lambda: pv_batch(
        [pv_record(offset_delta=0), pv_record(offset_delta=1, ts_delta=2 * PV_HOUR), pv_record(offset_delta=2)]), 9),
    ("lz4: two hours ahead", "plain", lambda: pv_batch(PV_KEYED, ts_shift=2 * PV_HOUR, codec=3), 9),
    ("LogAppendTime from a producer, no timestamp", "plain",
     lambda: pv_batch(PV_KEYED, attributes=0x08, max_ts=-1), 9),
    ("no timestamp at all", "plain", lambda: pv_batch(PV_KEYED, ts_shift=-int(time.time() * 1000) - 1), 9),
    ("keys missing", "compact", lambda: pv_batch(
        [pv_record(key=None, offset_delta=0), pv_record(offset_delta=1), pv_record(key=None, offset_delta=2)]), 9),
    ("keys missing, v7", "compact", lambda: pv_batch([pv_record(key=None)]), 7),
    ("keys missing, v8", "compact", lambda: pv_batch([pv_record(key=None)]), 8),
    ("zstd: keys missing", "compact", lambda: pv_batch([pv_record(key=None)], codec=4), 9),
    ("zstd, v5: keys missing", "compact", lambda: pv_batch([pv_record(key=None)], codec=4), 5),
    ("keys missing and offsets out of order", "compact", lambda: pv_batch(
        [pv_record(key=None, offset_delta=0), pv_record(offset_delta=5), pv_record(offset_delta=7)], codec=3), 9),
    ("a key missing and a timestamp two hours ahead", "compact", lambda: pv_batch(
        [pv_record(key=None, offset_delta=0), pv_record(offset_delta=1, ts_delta=2 * PV_HOUR)]), 9),
    ("a keyed zstd batch of 32 MB", "compact", lambda: pv_zstd_bomb(32 << 20), 9),
]


def pv_without_texts(value):
    """A normalised answer without the record errors' texts (each broker words its own)."""
    if isinstance(value, dict):
        return {k: pv_without_texts(v) for k, v in value.items() if k != "batch_index_error_message"}
    if isinstance(value, list):
        return [pv_without_texts(v) for v in value]
    return value


def pv_same(sides, body, version, what):
    answers = [side.call(body, version) for side in sides]
    found = differences(*(pv_without_texts(plain) for _, plain in answers))
    assert not found, f"{what} v{version}: this broker differs from Apache Kafka:\n" + described(found)
    return [response for response, _ in answers]


def pv_topics(sides, suffix):
    hour = {"message.timestamp.after.max.ms": str(PV_HOUR), "message.timestamp.before.max.ms": str(PV_HOUR)}
    configs = {"plain": hour, "compact": {**hour, "cleanup.policy": "compact"}}
    names = {}
    for kind, settings in configs.items():
        count = sum(1 for case in PV_CASES if case[1] == kind)
        names[kind] = f"diff-pv-{kind}-{suffix}"
        both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=names[kind], num_partitions=count, replication_factor=1, configs=[
                CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in settings.items()])],
            timeout_ms=10000), 7, "CreateTopics")
    return names


def test_produce_checks_every_batch_as_kafka_does(sides):
    names = pv_topics(sides, uuid.uuid4().hex[:8])
    used = {kind: 0 for kind in names}
    for what, kind, data, version in PV_CASES:
        partition = used[kind]
        used[kind] += 1
        pv_same(sides, produce(names[kind], partition, data()), version, f"Produce: {what}")
    for kind, name in names.items():
        both(sides, fetch(name, range(used[kind])), 12, f"Fetch of what the {kind} topic's Produce cases stored")


def test_an_unknown_codec_before_produce_v7_fails_the_whole_request(sides):
    """Kafka's request handler reads each batch's codec before v7: one it does not know fails every partition."""
    topic = f"diff-pv-codec-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=2, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
    body = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=pv_batch(PV_KEYED)),
            ProduceRequest.PartitionProduceData(index=1, records=pv_batch(PV_KEYED, codec=7))])])
    for version in (5, 3):
        answers = pv_same(sides, body, version, "Produce of codec 7 beside a good batch")
        assert {p.error_code for p in answers[1].responses[0].partition_responses} == {
            errors.UNKNOWN_SERVER_ERROR.code}
    both(sides, fetch(topic, [0, 1]), 12, "Fetch after the failed request")


def test_produce_where_this_broker_refuses_what_kafka_takes(sides):
    """The documented exceptions: a record this broker's own readers could not read back (a key, value or header
    value length below -1, which Java reads as null; a header key that is not UTF-8) is refused with
    INVALID_RECORD, and a batch that decompresses past the 64 MiB cap with MESSAGE_TOO_LARGE; Kafka takes them.
    And Kafka 3.9 bounds no timestamp by default (message.timestamp.after.max.ms), where 4.x and this broker
    refuse one more than an hour ahead."""
    kafka, ours = sides
    suffix = uuid.uuid4().hex[:8]
    topics = {"plain": f"diff-pv-x-{suffix}", "compact": f"diff-pv-xc-{suffix}"}
    for kind, name in topics.items():
        configs = [CreateTopicsRequest.CreatableTopicConfig(name="cleanup.policy", value="compact")] \
            if kind == "compact" else []
        both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=8, replication_factor=1, configs=configs)], timeout_ms=10000), 7, "CreateTopics")
    # (topic, data, Kafka's answer, this broker's)
    cases = [
        ("plain", pv_batch([pv_record(body=b"\0\0\0" + pv_zigzag(-5) + pv_field(b"v") + b"\0")]), errors.NONE,
         errors.INVALID_RECORD),
        ("plain", pv_batch([pv_record(body=b"\0\0\0" + pv_field(b"k") + pv_zigzag(-7) + b"\0")]), errors.NONE,
         errors.INVALID_RECORD),
        ("plain", pv_batch([pv_record(body=b"\0\0\0" + pv_field(b"k") + pv_field(b"v") + b"\x02" + pv_field(b"h")
                                      + pv_zigzag(-9))]), errors.NONE, errors.INVALID_RECORD),
        ("plain", pv_batch([pv_record(headers=[(b"\xff\xfe", b"x")])]), errors.NONE, errors.INVALID_RECORD),
        ("plain", pv_zstd_bomb(100_000_000), errors.NONE, errors.MESSAGE_TOO_LARGE),
        ("compact", pv_zstd_bomb(100_000_000), errors.NONE, errors.MESSAGE_TOO_LARGE),
        # Kafka decompresses it all, then refuses the record without a key
        ("compact", pv_zstd_bomb(100_000_000, key=None), errors.INVALID_RECORD, errors.MESSAGE_TOO_LARGE),
    ]
    for partition, (kind, data, kafka_answers, ours_answers) in enumerate(cases):
        body = produce(topics[kind], partition, data)
        k, o = (side.call(body, 9)[0].responses[0].partition_responses[0] for side in sides)
        assert (k.error_code, o.error_code) == (kafka_answers.code, ours_answers.code), (partition, k, o)
    ahead = produce(topics["plain"], 7, pv_batch(PV_KEYED, ts_shift=10 * 365 * 86_400_000))
    k, o = (side.call(ahead, 9)[0].responses[0].partition_responses[0] for side in sides)
    assert o.error_code == errors.INVALID_TIMESTAMP.code
    assert k.error_code == (errors.NONE if kafka.version.startswith("3.") else errors.INVALID_TIMESTAMP).code


def connection_outcome(port, frames, asked):
    """Send frames (raw bytes) on one connection, then an ApiVersions v0 probe, and read until the connection
    closes or the probe is answered: [(api name, correlation id, normalised answer)] and then "closed" or
    "open". asked maps each correlation id to (api key, the version its answer is read at)."""
    probe = RequestHeader(request_api_key=ApiKey.API_VERSIONS, request_api_version=0, correlation_id=99,
                          client_id="t")
    asked = {**asked, 99: (ApiKey.API_VERSIONS, 0)}
    seen, labels = [], Labels()
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        try:
            sock.sendall(frames)
            time.sleep(0.2)  # the probe comes after what went before has been read
            sock.sendall(encode_request(probe, ApiVersionsRequest(), 0))
        except OSError:
            pass  # closed already: what was answered before is still read
        while True:
            try:
                raw = _recv_exact(sock, int.from_bytes(_recv_exact(sock, 4), "big"))
            except (ConnectionError, OSError):
                return seen + ["closed"]
            correlation_id = int.from_bytes(raw[:4], "big")
            api_key, version = asked[correlation_id]
            if correlation_id == 99:
                return seen + ["open"]
            body = decode_response(raw, api_key, version).body.to_dict()
            if api_key == ApiKey.API_VERSIONS:  # which APIs each serves is compared elsewhere
                body = body["error_code"]
            seen.append((api(api_key).name, correlation_id, normalise(body, labels)))


def test_hostile_frames_are_answered_as_kafka_answers_them(sides):
    """Frames a hostile or broken client sends, each on a connection of its own: what each broker answers, and
    whether it then closes the connection (an ApiVersions probe after them tells an open one)."""
    def framed(body, version, correlation_id):
        header = RequestHeader(request_api_key=body.api_key, request_api_version=version,
                               correlation_id=correlation_id, client_id="t")
        return encode_request(header, body, version)

    api_versions = framed(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3, 7)
    failing_acks_0 = ProduceRequest(acks=0, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=f"diff-no-such-{uuid.uuid4().hex[:8]}", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=batch(b"v"))])])
    sasl = api(ApiKey.SASL_AUTHENTICATE).request(auth_bytes=b"x")
    cases = [  # (what, bytes, {correlation id: (api key, version of its answer)})
        ("a size prefix of -1 after a whole frame", api_versions + (-1).to_bytes(4, "big", signed=True),
         {7: (ApiKey.API_VERSIONS, 3)}),
        ("a size prefix past socket.request.max.bytes after a whole frame",
         api_versions + (2**31 - 1).to_bytes(4, "big"), {7: (ApiKey.API_VERSIONS, 3)}),
        ("a failing Produce with acks=0", framed(failing_acks_0, 9, 1), {}),
        ("SaslAuthenticate on a PLAINTEXT listener", framed(sasl, 1, 1), {1: (ApiKey.SASL_AUTHENTICATE, 1)}),
        ("ApiVersions at version -1", api_versions[:6] + (-1).to_bytes(2, "big", signed=True) + api_versions[8:],
         {7: (ApiKey.API_VERSIONS, 0)}),
    ]
    for version in (10, 11):
        for name, topic_id in ((None, Uuid.random()), (None, Uuid.ZERO), ("diff-hostile", Uuid.random())):
            body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name, topic_id=topic_id),
                                           MetadataRequest.MetadataRequestTopic(name="diff-other")],
                                   allow_auto_topic_creation=False)
            cases.append((f"Metadata v{version} of a topic named {name!r} with a topic id {topic_id}",
                          framed(body, version, 3), {3: (ApiKey.METADATA, version)}))
    found = []
    for what, frames, asked in cases:
        outcomes = [connection_outcome(side.port, frames, asked) for side in sides]
        if outcomes[0] != outcomes[1]:
            found.append(f"{what}: Kafka {outcomes[0]!r}, this broker {outcomes[1]!r}")
    assert not found, "hostile frames are treated differently:\n" + "\n".join(found)


def test_reassignments_log_dirs_voters_and_tokens(sides):
    """The admin requests a single node answers with refusals or no-ops, as Kafka 4.3.1 answers them on a cluster
    of one: reassignments, moves between log directories, quorum voters, unregistering a broker, and delegation
    tokens without a secret key."""
    kafka, ours = sides
    if kafka.version.startswith("3."):
        pytest.skip("the broker follows Kafka 4.x")
    topic = f"diff-admin-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
    R = AlterPartitionReassignmentsRequest
    for version in (0, 1):
        both(sides, R(timeout_ms=5000, topics=[
            R.ReassignableTopic(name=topic, partitions=[R.ReassignablePartition(partition_index=0, replicas=r)
                                                        for r in ([1], None, [2], [1, 1], [], [1, 2])]
                                + [R.ReassignablePartition(partition_index=1, replicas=[1])]),
            R.ReassignableTopic(name="no-such-topic", partitions=[R.ReassignablePartition(partition_index=0,
                                                                                          replicas=[1])])]),
             version, "AlterPartitionReassignments")
    L = AlterReplicaLogDirsRequest

    def move(side, here):
        where = DescribeLogDirsRequest(topics=None)
        path = side.call(where, 4)[0].results[0].log_dir if here else "/no/such/dir"
        return L(dirs=[L.AlterReplicaLogDir(path=path, topics=[
            L.AlterReplicaLogDirTopic(name=topic, partitions=[0, 5]),
            L.AlterReplicaLogDirTopic(name="no-such-topic", partitions=[0, 3])])])
    for here in (True, False):
        # Kafka answers in a Scala hash map's order: compared topic by topic, partition by partition
        answers = [side.call(move(side, here), 2)[0] for side in sides]
        kafka_said, ours_said = ({(t.topic_name, p.partition_index): p.error_code for t in a.results
                                  for p in t.partitions} for a in answers)
        assert kafka_said == ours_said, f"AlterReplicaLogDirs (own directory: {here}): {kafka_said} {ours_said}"
    both(sides, AddRaftVoterRequest(cluster_id=None, timeout_ms=1000, voter_id=5, voter_directory_id=Uuid.random(),
                                    listeners=[AddRaftVoterRequest.Listener(name="CONTROLLER", host="localhost",
                                                                            port=1)]), 1, "AddRaftVoter")
    both(sides, RemoveRaftVoterRequest(cluster_id=None, voter_id=5, voter_directory_id=Uuid.random()), 0,
         "RemoveRaftVoter")
    both(sides, UnregisterBrokerRequest(broker_id=7), 0, "UnregisterBroker of a broker that is not there")
    for body, version in ((CreateDelegationTokenRequest(owner_principal_type=None, owner_principal_name=None,
                                                        renewers=[], max_lifetime_ms=-1), 3),
                          (DescribeDelegationTokenRequest(owners=None), 3),
                          (RenewDelegationTokenRequest(hmac=b"x", renew_period_ms=1000), 2),
                          (ExpireDelegationTokenRequest(hmac=b"x", expiry_time_period_ms=1000), 2)):
        both(sides, body, version, type(body).__name__ + " over PLAINTEXT")
        clients = [signed_in(side.sasl_port, "alice") for side in sides]
        try:  # over SASL: the tokens themselves are what is refused
            found = differences(*[normalise(client.call(body, version).body.to_dict(), side.labels)
                                  for client, side in zip(clients, sides)])
            assert not found, f"{type(body).__name__} over SASL:\n" + described(found)
        finally:
            for client in clients:
                client.close()
