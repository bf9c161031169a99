"""Faults and controls a test installs in the broker (kafkaproto/broker/faults.py): through raw requests, and met by
real clients as their own documentation says they meet them (a producer retrying, a consumer resetting its offset,
a transactional producer fenced)."""

import time
import uuid

import pytest

from kafkaproto import errors, records
from kafkaproto.broker import Broker
from kafkaproto.broker.faults import DROP, Delay
from kafkaproto.messages import (ApiKey, CreateTopicsRequest, FetchRequest, FindCoordinatorRequest,
                                 InitProducerIdRequest, InitProducerIdResponse, JoinGroupRequest, ListOffsetsRequest,
                                 MetadataRequest, ProduceRequest)
from test_kafka_broker import RawClient

pytestmark = pytest.mark.above_the_codecs


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with Broker({"log.dirs": str(tmp_path_factory.mktemp("faults"))}) as running:
        yield running


@pytest.fixture
def faults(broker):
    yield broker
    broker.clear_faults()


@pytest.fixture
def client(broker):
    client = RawClient(broker.port)
    yield client
    client.close()


def make_topic(client, partitions=2):
    name = f"faults-{uuid.uuid4().hex[:8]}"
    made = client.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1)], timeout_ms=5000), 7).body
    assert made.topics[0].error_code == 0
    return name, made.topics[0].topic_id


def produce(client, topic, partitions=(0, 1)):
    builder = records.RecordBatchBuilder()
    builder.append(None, b"x")
    data = builder.build()
    answer = client.call(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=i, records=data)
                                    for i in partitions])]), 9).body
    return {p.index: (p.error_code, p.base_offset) for p in answer.responses[0].partition_responses}


def test_a_partition_fault_answers_its_partitions_and_lets_the_rest_through(faults, client):
    topic, _ = make_topic(client)
    fault = faults.add_fault(errors.NOT_LEADER_OR_FOLLOWER, api_keys=[ApiKey.PRODUCE], topic=topic, partition=1,
                             budget=2)
    other = faults.add_fault(errors.UNKNOWN_SERVER_ERROR, api_keys=[ApiKey.PRODUCE], topic="no-such-topic")
    code = errors.NOT_LEADER_OR_FOLLOWER.code
    assert produce(client, topic) == {0: (0, 0), 1: (code, -1)}  # partition 0 written, 1 not
    assert produce(client, topic) == {0: (0, 1), 1: (code, -1)}
    assert produce(client, topic) == {0: (0, 2), 1: (0, 0)}  # its budget spent: removed
    assert (fault.fired, other.fired) == (2, 0)
    other.remove()
    assert produce(client, topic) == {0: (0, 3), 1: (0, 1)}


def test_a_fault_by_topic_id_on_fetch(faults, client):
    topic, topic_id = make_topic(client, 1)
    produce(client, topic, partitions=(0,))
    fault = faults.add_fault(errors.OFFSET_OUT_OF_RANGE, api_keys=[ApiKey.FETCH], topic=topic_id, budget=1)

    def fetch():
        body = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                            topics=[FetchRequest.FetchTopic(topic_id=topic_id, partitions=[FetchRequest.FetchPartition(
                                partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
        partition = client.call(body, 13).body.responses[0].partitions[0]
        return partition.error_code, partition.high_watermark
    assert fetch() == (errors.OFFSET_OUT_OF_RANGE.code, -1)
    assert fetch() == (0, 1)
    assert fault.fired == 1


def test_a_whole_request_fault(faults, client):
    """With a top-level error code the request is not carried out; without one (FindCoordinator v4) it is, and
    each of its answer's error codes is set."""
    fault = faults.add_fault(errors.COORDINATOR_LOAD_IN_PROGRESS, api_keys=[ApiKey.INIT_PRODUCER_ID], budget=1)
    answer = client.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4).body
    assert (answer.error_code, answer.producer_id) == (errors.COORDINATOR_LOAD_IN_PROGRESS.code, -1)
    assert client.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4).body.\
        error_code == 0
    assert fault.fired == 1
    faults.add_fault(errors.COORDINATOR_NOT_AVAILABLE, api_keys=[ApiKey.FIND_COORDINATOR], budget=1)
    found = client.call(FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b"]), 4).body
    assert [c.error_code for c in found.coordinators] == [errors.COORDINATOR_NOT_AVAILABLE.code] * 2
    assert client.call(FindCoordinatorRequest(key="a"), 3).body.error_code == 0


def test_a_fault_for_one_node_and_a_delay(faults, client):
    faults.add_fault(errors.UNKNOWN_SERVER_ERROR, api_keys=[ApiKey.METADATA], node=2)
    assert client.call(MetadataRequest(topics=[]), 12).body.brokers  # another node's fault: not here
    delayed = faults.add_fault(errors.NOT_COORDINATOR, api_keys=[ApiKey.JOIN_GROUP], delay_ms=300, budget=1)
    started = time.monotonic()
    joined = client.call(JoinGroupRequest(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                          member_id="", protocol_type="consumer", protocols=[]), 6).body
    assert joined.error_code == errors.NOT_COORDINATOR.code and time.monotonic() - started >= 0.3
    assert delayed.fired == 1


def test_controls_answer_delay_and_drop(faults, client, broker):
    seen = []

    def control(request):
        seen.append((request.api_key, request.version, request.node_id))
        if request.api_key == ApiKey.METADATA:
            return Delay(250)
        if request.api_key == ApiKey.LIST_OFFSETS:
            return DROP
        return None
    installed = faults.control(control)
    started = time.monotonic()
    assert client.call(MetadataRequest(topics=[]), 12).body.brokers
    assert time.monotonic() - started >= 0.25
    assert seen[-1] == (ApiKey.METADATA, 12, 1)
    with pytest.raises(ConnectionError):
        client.call(ListOffsetsRequest(replica_id=-1, topics=[]), 7)
    installed.remove()
    again = RawClient(broker.port)
    try:
        assert again.call(ListOffsetsRequest(replica_id=-1, topics=[]), 7).body.topics == []
        answered = faults.control(lambda request: InitProducerIdResponse(error_code=errors.PRODUCER_FENCED.code),
                                  api_keys=[ApiKey.INIT_PRODUCER_ID], times=1)
        assert again.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4).body.\
            error_code == errors.PRODUCER_FENCED.code
        assert again.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4).body.\
            error_code == 0
        assert answered.handled == 1
    finally:
        again.close()


# ---- real clients ---------------------------------------------------------------------------------------------

def test_an_idempotent_producer_retries_through_not_leader(faults):
    """librdkafka's idempotent producer meets NOT_LEADER_OR_FOLLOWER twice, refreshes its metadata, retries, and
    the record is written once."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    client = RawClient(faults.port)
    topic, _ = make_topic(client, 1)
    client.close()
    fault = faults.add_fault(errors.NOT_LEADER_OR_FOLLOWER, api_keys=[ApiKey.PRODUCE], topic=topic, budget=2)
    producer = confluent_kafka.Producer({"bootstrap.servers": faults.bootstrap_servers, "enable.idempotence": True,
                                         "retry.backoff.ms": 50, "linger.ms": 0})
    delivered = []
    producer.produce(topic, b"once", on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
    assert producer.flush(20) == 0
    assert delivered == [(None, 0)] and fault.fired == 2
    consumer = confluent_kafka.Consumer({"bootstrap.servers": faults.bootstrap_servers, "group.id": topic,
                                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    consumer.subscribe([topic])
    values = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error():
            if message.error().code() == confluent_kafka.KafkaError._PARTITION_EOF and values:
                break
            continue
        values.append(message.value())
    consumer.close()
    assert values == [b"once"]


def test_a_consumer_resets_its_offset_after_offset_out_of_range(faults):
    """kafka-python's consumer, at a committed offset, meets OFFSET_OUT_OF_RANGE and resets to the earliest
    offset (auto_offset_reset), as its documentation says."""
    kafka = pytest.importorskip("kafka")
    client = RawClient(faults.port)
    topic, _ = make_topic(client, 1)
    for _ in range(3):
        produce(client, topic, partitions=(0,))
    client.close()
    partition = kafka.TopicPartition(topic, 0)
    committer = kafka.KafkaConsumer(bootstrap_servers=faults.bootstrap_servers, group_id=topic,
                                    enable_auto_commit=False)
    committer.commit({partition: kafka.structs.OffsetAndMetadata(2, "", -1)})
    committer.close()
    fault = faults.add_fault(errors.OFFSET_OUT_OF_RANGE, api_keys=[ApiKey.FETCH], topic=topic, budget=1)
    consumer = kafka.KafkaConsumer(bootstrap_servers=faults.bootstrap_servers, group_id=topic,
                                   enable_auto_commit=False, auto_offset_reset="earliest", consumer_timeout_ms=10000)
    consumer.assign([partition])
    offsets = [message.offset for _, message in zip(range(3), consumer)]
    consumer.close()
    assert fault.fired == 1
    assert offsets == [0, 1, 2], "reset to the earliest offset, not left at the committed 2"


def test_a_transactional_producer_is_fenced(faults):
    """librdkafka's transactional producer whose commit is answered PRODUCER_FENCED raises a fatal error."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    client = RawClient(faults.port)
    topic, _ = make_topic(client, 1)
    client.close()
    producer = confluent_kafka.Producer({"bootstrap.servers": faults.bootstrap_servers,
                                         "transactional.id": f"fenced-{topic}"})
    producer.init_transactions(20)
    producer.begin_transaction()
    producer.produce(topic, b"never")
    producer.flush(20)
    fault = faults.add_fault(errors.PRODUCER_FENCED, api_keys=[ApiKey.END_TXN])
    with pytest.raises(confluent_kafka.KafkaException) as raised:
        producer.commit_transaction(20)
    error = raised.value.args[0]
    assert error.fatal() and error.code() == confluent_kafka.KafkaError._FENCED, error
    assert fault.fired == 1


def test_the_pytest_fixture(kafkaproto_faults):
    """The package's kafkaproto_faults fixture: the session's broker, whose faults go when the test ends."""
    fault = kafkaproto_faults.add_fault(errors.CLUSTER_AUTHORIZATION_FAILED, api_keys=[ApiKey.INIT_PRODUCER_ID])
    client = RawClient(kafkaproto_faults.port)
    try:
        assert client.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4).body.\
            error_code == errors.CLUSTER_AUTHORIZATION_FAILED.code
    finally:
        client.close()
    assert fault.fired == 1
