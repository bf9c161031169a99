"""The broker's protocol logic without sockets: requests go through the codecs to a handler and back.

Each test builds a BrokerState on a temporary directory, so the on-disk rules
(partition.metadata, renamed directories, stray ones, torn tails) are checked
on real files.
"""

import os

import pytest

from kafkaproto import decode_request, encode_request, errors, records
from kafkaproto.broker import BrokerConfig
from kafkaproto.broker.dispatch import (ANSWER_API_VERSIONS_V0, CLOSE, HANDLERS, Context, NotHandled, Wait,
                                        advertised, dispatch, load_handlers, unserved)
from kafkaproto.broker.state import BrokerState
from kafkaproto.broker.state.clock import clock_ms
from kafkaproto.broker.state.data_dir import read_partition_metadata, remove_directories
from kafkaproto.broker.config import STANDARD_AUTHORIZER, Listener
from kafkaproto.messages import (AlterClientQuotasRequest, AlterConfigsRequest, ApiKey, ApiVersionsRequest,
                                 CreateAclsRequest, CreateTopicsRequest, DeleteAclsRequest, DeleteRecordsRequest,
                                 DeleteTopicsRequest, DescribeAclsRequest, DescribeClientQuotasRequest,
                                 DescribeConfigsRequest, DescribeLogDirsRequest, DescribeProducersRequest,
                                 DescribeQuorumRequest, DescribeTopicPartitionsRequest, DescribeTransactionsRequest,
                                 ElectLeadersRequest, FetchRequest, IncrementalAlterConfigsRequest,
                                 InitProducerIdRequest, ListConfigResourcesRequest, ListOffsetsRequest,
                                 ListPartitionReassignmentsRequest, ListTransactionsRequest, MetadataRequest,
                                 ProduceRequest, RequestHeader, UpdateFeaturesRequest, WriteTxnMarkersRequest, api)
from kafkaproto.uuid import Uuid

# The broker is the same code over either codec implementation (conftest.py: the pure-Python pass).
pytestmark = pytest.mark.above_the_codecs

load_handlers()


def make_state(path, **overrides):
    config = BrokerConfig({"log.dirs": str(path), **overrides})
    state = BrokerState(config)
    state.advertised = [Listener("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT")]
    return state


@pytest.fixture
def state(tmp_path):
    state = make_state(tmp_path)
    yield state
    state.close()


def call(state, body, version, final=True):
    """The response a client would read: the request and the response both go through the codecs."""
    header = RequestHeader(request_api_key=body.api_key, request_api_version=version, correlation_id=7,
                           client_id="tests")
    request = decode_request(encode_request(header, body, version)[4:])
    response = dispatch(Context(state, request.header, final=final), request.body)
    if isinstance(response, Wait):
        return response
    return type(response).decode(response.encode(version), version)


def create(state, name, partitions=1, version=7, **configs):
    topic = CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1,
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])
    return call(state, CreateTopicsRequest(topics=[topic], timeout_ms=1000), version).topics[0]


def batch(*values, producer_id=-1, epoch=-1, sequence=-1):
    builder = records.RecordBatchBuilder(producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)
    for value in values:
        builder.append(b"k", value, timestamp=1_700_000_000_000)
    return builder.build()


def produce(state, data, topic="t", partition=0, version=11, topic_id=Uuid.ZERO, acks=-1):
    part = ProduceRequest.PartitionProduceData(index=partition, records=data)
    body = ProduceRequest(acks=acks, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, topic_id=topic_id, partition_data=[part])])
    return call(state, body, version).responses[0].partition_responses[0]


def fetch(state, offset=0, topic="t", partition=0, version=12, topic_id=Uuid.ZERO, max_bytes=1 << 20,
          min_bytes=1, max_wait_ms=0, final=True):
    part = FetchRequest.FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes)
    body = FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
                        isolation_level=0, session_id=0, session_epoch=-1,
                        topics=[FetchRequest.FetchTopic(topic=topic, topic_id=topic_id, partitions=[part])])
    return call(state, body, version, final=final)


def values(data):
    return [r.value for r in records.read_records(data)]


def test_api_versions_lists_exactly_the_handlers(state):
    response = call(state, ApiVersionsRequest(client_software_name="tests", client_software_version="1"), 3)
    table = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert table == {key: (low, high) for key, low, high in advertised(state)}
    assert 10000 not in table  # DeletePartitions only when delete.topic.partition.enable is set
    assert table[ApiKey.PRODUCE] == (0, 13)  # advertised from 0 for old librdkafka, refused below 3
    for key, (_, high) in table.items():
        assert high < api(key).valid_versions.stop


def test_api_versions_refuses_a_malformed_software_name(state):
    response = call(state, ApiVersionsRequest(client_software_name="-bad", client_software_version="1"), 3)
    assert response.error_code == errors.INVALID_REQUEST.code


def test_create_gives_a_random_topic_id_and_writes_partition_metadata(state, tmp_path):
    result = create(state, "orders", partitions=3)
    assert result.error_code == 0 and result.num_partitions == 3
    assert result.topic_id.int != 0 and not str(result.topic_id).startswith("-")
    for index in range(3):
        directory = tmp_path / f"orders-{index}"
        assert read_partition_metadata(directory) == result.topic_id
        assert (directory / "partition.metadata").read_text() == f"version: 0\ntopic_id: {result.topic_id}\n"
    assert create(state, "orders").error_code == errors.TOPIC_ALREADY_EXISTS.code
    assert create(state, "bad/name").error_code == errors.INVALID_TOPIC_EXCEPTION.code
    assert create(state, "x", unknown_config="1").error_code == errors.INVALID_CONFIG.code


def test_metadata_by_name_and_by_topic_id(state):
    topic_id = create(state, "t", partitions=2).topic_id
    by_name = call(state, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")],
                                          allow_auto_topic_creation=False), 12)
    (topic,) = by_name.topics
    assert (topic.name, topic.topic_id, len(topic.partitions)) == ("t", topic_id, 2)
    assert by_name.controller_id == 1 and by_name.brokers[0].port == 9092
    by_id = call(state, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=topic_id)]), 12)
    assert by_id.topics[0].name == "t"
    stale = call(state, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=Uuid.random())]), 12)
    assert stale.topics[0].error_code == errors.UNKNOWN_TOPIC_ID.code and stale.topics[0].name is None
    missing = call(state, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="nope")],
                                          allow_auto_topic_creation=False), 12)
    assert missing.topics[0].error_code == errors.UNKNOWN_TOPIC_OR_PARTITION.code


def test_metadata_creates_topics_when_allowed(tmp_path):
    state = make_state(tmp_path, **{"num.partitions": "4"})
    response = call(state, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="auto")],
                                           allow_auto_topic_creation=True), 9)
    assert response.topics[0].error_code == 0 and len(response.topics[0].partitions) == 4
    state.close()
    state = make_state(tmp_path / "off", **{"auto.create.topics.enable": "false"})
    response = call(state, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="auto")],
                                           allow_auto_topic_creation=True), 9)
    assert response.topics[0].error_code == errors.UNKNOWN_TOPIC_OR_PARTITION.code
    state.close()


def test_produce_then_fetch_by_name_and_by_id(state):
    topic_id = create(state, "t").topic_id
    first = produce(state, batch(b"a", b"b"))
    assert (first.error_code, first.base_offset) == (0, 0)
    second = produce(state, batch(b"c"), version=13, topic_id=topic_id)
    assert (second.error_code, second.base_offset) == (0, 2)
    part = fetch(state).responses[0].partitions[0]
    assert part.high_watermark == 3 and values(part.records) == [b"a", b"b", b"c"]
    by_id = fetch(state, offset=2, version=13, topic_id=topic_id).responses[0]
    assert by_id.topic_id == topic_id and values(by_id.partitions[0].records) == [b"c"]
    # the batch holding the offset comes whole: offset 1 returns the batch from offset 0
    assert [r.offset for r in records.read_records(fetch(state, offset=1).responses[0].partitions[0].records)] == [
        0, 1, 2]


def test_fetch_limits_and_waiting(state):
    create(state, "t")
    for _ in range(5):
        produce(state, batch(b"x" * 1000))
    size = len(batch(b"x" * 1000))
    part = fetch(state, max_bytes=size * 2 + 10).responses[0].partitions[0]
    assert len(part.records) == size * 2
    part = fetch(state, max_bytes=10).responses[0].partitions[0]
    assert len(part.records) == size  # one whole batch even over the limit
    assert fetch(state, offset=5, max_wait_ms=500, final=False) == Wait(500)
    assert fetch(state, offset=5, max_wait_ms=500, final=True).responses[0].partitions[0].records in (b"", None)
    out_of_range = fetch(state, offset=6).responses[0].partitions[0]
    assert out_of_range.error_code == errors.OFFSET_OUT_OF_RANGE.code


def test_produce_below_v3_is_advertised_but_not_served(state):
    """Kafka 4 lists Produce from v0 (old librdkafka gives up otherwise) and closes the connection on v0-2."""
    assert next(low for key, low, _ in advertised(state) if key == ApiKey.PRODUCE) == 0
    create(state, "t")
    for version in (0, 1, 2):
        header = RequestHeader(request_api_key=ApiKey.PRODUCE, request_api_version=version, correlation_id=1)
        assert unserved(state, header) == CLOSE
        with pytest.raises(NotHandled):
            produce(state, batch(b"v"), version=version)
    assert unserved(state, RequestHeader(request_api_key=ApiKey.PRODUCE, request_api_version=3)) is None
    assert fetch(state).responses[0].partitions[0].high_watermark == 0


@pytest.mark.parametrize("api_key, version", [(ApiKey.API_VERSIONS, 5), (ApiKey.FETCH, 3), (ApiKey.METADATA, 99),
                                              (ApiKey.VOTE, 0), (9999, 0)])
def test_what_is_not_served_is_refused_as_kafka_does(state, api_key, version):
    header = RequestHeader(request_api_key=api_key, request_api_version=version, correlation_id=1)
    expected = ANSWER_API_VERSIONS_V0 if api_key == ApiKey.API_VERSIONS else CLOSE
    assert unserved(state, header) == expected


def test_produce_refuses_bad_data(state):
    create(state, "t", **{"max.message.bytes": "2000"})
    good = bytearray(batch(b"v"))
    good[-1] ^= 1  # the CRC no longer matches
    assert produce(state, bytes(good)).error_code == errors.CORRUPT_MESSAGE.code
    assert produce(state, b"\x00" * 30).error_code == errors.CORRUPT_MESSAGE.code
    assert produce(state, batch(b"v" * 3000)).error_code == errors.MESSAGE_TOO_LARGE.code
    assert produce(state, batch(b"v"), partition=5).error_code == errors.UNKNOWN_TOPIC_OR_PARTITION.code
    assert produce(state, batch(b"v"), topic="nope").error_code == errors.UNKNOWN_TOPIC_OR_PARTITION.code
    assert produce(state, batch(b"v"), version=13, topic_id=Uuid.random()).error_code == errors.UNKNOWN_TOPIC_ID.code
    assert fetch(state).responses[0].partitions[0].high_watermark == 0


def test_idempotent_producer_sequences(state):
    create(state, "t")
    pid = call(state, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4)
    assert pid.error_code == 0 and pid.producer_id >= 0
    p = dict(producer_id=pid.producer_id, epoch=pid.producer_epoch)
    assert produce(state, batch(b"a", b"b", sequence=0, **p)).base_offset == 0
    assert produce(state, batch(b"c", sequence=2, **p)).base_offset == 2
    retry = produce(state, batch(b"a", b"b", sequence=0, **p))
    assert (retry.error_code, retry.base_offset) == (0, 0)  # acknowledged, not appended again
    gap = produce(state, batch(b"e", sequence=5, **p))
    assert gap.error_code == errors.OUT_OF_ORDER_SEQUENCE_NUMBER.code
    assert fetch(state).responses[0].partitions[0].high_watermark == 3
    old = produce(state, batch(b"f", producer_id=pid.producer_id, epoch=pid.producer_epoch - 1, sequence=3))
    assert old.error_code == errors.INVALID_PRODUCER_EPOCH.code
    other = call(state, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4)
    assert other.producer_id != pid.producer_id


def test_producer_state_and_ids_survive_a_restart(tmp_path):
    state = make_state(tmp_path)
    create(state, "t")
    pid = call(state, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4).producer_id
    produce(state, batch(b"a", producer_id=pid, epoch=0, sequence=0))
    state.close()
    state = make_state(tmp_path)
    retry = produce(state, batch(b"a", producer_id=pid, epoch=0, sequence=0))
    assert (retry.error_code, retry.base_offset) == (0, 0)
    assert produce(state, batch(b"b", producer_id=pid, epoch=0, sequence=3)).error_code == \
        errors.OUT_OF_ORDER_SEQUENCE_NUMBER.code
    assert call(state, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4).producer_id != pid
    state.close()


def test_list_offsets(state):
    create(state, "t")
    for ts in (1000, 3000, 2000):
        builder = records.RecordBatchBuilder()
        builder.append(None, b"v", timestamp=ts)
        produce(state, builder.build())

    def query(timestamp, version=8):
        part = ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=timestamp)
        body = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name="t",
                                                                                              partitions=[part])])
        got = call(state, body, version).topics[0].partitions[0]
        return got.error_code, got.offset, got.timestamp

    assert query(-2) == (0, 0, -1)
    assert query(-1) == (0, 3, -1)
    assert query(-3) == (0, 1, 3000)
    assert query(1500) == (0, 1, 3000)
    assert query(2500) == (0, 1, 3000)
    assert query(9999) == (0, -1, -1)


def test_delete_and_recreate_gives_a_new_id_and_never_old_data(state, tmp_path):
    old_id = create(state, "t").topic_id
    produce(state, batch(b"old"))
    body = DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(topic_id=old_id)], timeout_ms=1000)
    deleted = call(state, body, 6).responses[0]
    assert (deleted.error_code, deleted.name) == (0, "t")
    renamed = [name for name in os.listdir(tmp_path) if name.startswith("t-0.")]
    assert len(renamed) == 1 and renamed[0].endswith("-delete")
    again = call(state, body, 6).responses[0]
    assert again.error_code == errors.UNKNOWN_TOPIC_ID.code
    new_id = create(state, "t").topic_id
    assert new_id != old_id
    assert fetch(state).responses[0].partitions[0].high_watermark == 0
    stale = fetch(state, version=13, topic_id=old_id).responses[0].partitions[0]
    assert stale.error_code == errors.UNKNOWN_TOPIC_ID.code
    assert produce(state, batch(b"x"), version=13, topic_id=old_id).error_code == errors.UNKNOWN_TOPIC_ID.code
    remove_directories(state.cluster.take_due_deletes(now=float("inf")))
    assert not [name for name in os.listdir(tmp_path) if name.endswith("-delete")]


def test_deleted_topic_directories_wait_log_segment_delete_delay_ms(tmp_path):
    # Kafka's broker key; file.delete.delay.ms is only its topic-level name.
    state = make_state(tmp_path, **{"log.segment.delete.delay.ms": "5000"})
    topic_id = create(state, "t").topic_id
    produce(state, batch(b"x"))
    started = clock_ms()
    body = DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(topic_id=topic_id)], timeout_ms=1000)
    assert call(state, body, 6).responses[0].error_code == 0
    remove_directories(state.cluster.take_due_deletes(now=started + 4000))
    assert [name for name in os.listdir(tmp_path) if name.endswith("-delete")]
    remove_directories(state.cluster.take_due_deletes(now=clock_ms() + 5000))
    assert not [name for name in os.listdir(tmp_path) if name.endswith("-delete")]
    state.close()


def test_unknown_directories_are_set_aside_not_served_or_deleted(tmp_path):
    state = make_state(tmp_path)
    create(state, "t")
    state.close()
    stray = tmp_path / "ghost-0"
    stray.mkdir()
    (stray / "partition.metadata").write_text(f"version: 0\ntopic_id: {Uuid.random()}\n")
    (stray / "00000000000000000000.log").write_bytes(batch(b"ghost"))
    state = make_state(tmp_path)
    aside = [name for name in os.listdir(tmp_path) if name.startswith("ghost-0.")]
    assert len(aside) == 1 and aside[0].endswith("-stray")
    assert (tmp_path / aside[0] / "00000000000000000000.log").exists()
    assert "ghost" not in state.cluster.topics
    state.close()


def test_a_mismatched_partition_metadata_is_inconsistent_topic_id(tmp_path):
    state = make_state(tmp_path)
    create(state, "t")
    state.close()
    (tmp_path / "t-0" / "partition.metadata").write_text(f"version: 0\ntopic_id: {Uuid.random()}\n")
    state = make_state(tmp_path)
    assert produce(state, batch(b"v")).error_code == errors.INCONSISTENT_TOPIC_ID.code
    assert fetch(state).responses[0].partitions[0].error_code == errors.INCONSISTENT_TOPIC_ID.code
    state.close()


def test_a_torn_tail_is_cut_after_an_unclean_stop(tmp_path, caplog):
    state = make_state(tmp_path)
    create(state, "t")
    produce(state, batch(b"a"))
    produce(state, batch(b"b"))
    log_file = tmp_path / "t-0" / "00000000000000000000.log"
    whole = log_file.stat().st_size
    state.cluster.metadata.close()  # no clean shutdown marker: as if killed
    for topic in state.cluster.topics.values():
        for partition in topic.partitions:
            partition.log.close()
    with open(log_file, "ab") as f:
        f.write(batch(b"c")[:40])  # half a batch, as a crash mid-write leaves it
    state = make_state(tmp_path)
    assert "truncated" in caplog.text
    assert log_file.stat().st_size == whole
    assert values(fetch(state).responses[0].partitions[0].records) == [b"a", b"b"]
    assert produce(state, batch(b"c")).base_offset == 2
    state.close()


def test_segments_roll_and_reads_cross_them(tmp_path):
    state = make_state(tmp_path)
    create(state, "t", **{"internal.segment.bytes": "300"})  # Kafka's segment.bytes is at least 1 MiB
    for i in range(10):
        produce(state, batch(b"%03d" % i * 30))
    segments = sorted(p.name for p in (tmp_path / "t-0").glob("*.log"))
    assert len(segments) > 3 and segments[1] != segments[0]
    got = []
    offset = 0
    while offset < 10:
        part = fetch(state, offset=offset, max_bytes=1).responses[0].partitions[0]
        batch_values = values(part.records)
        got += batch_values
        offset += len(batch_values)
    assert got == [b"%03d" % i * 30 for i in range(10)]
    state.close()
    state = make_state(tmp_path)
    assert fetch(state, offset=9).responses[0].partitions[0].high_watermark == 10
    state.close()


def sample_request(key, version, topic_id):
    """A typical request of one API at one version, naming topic "t" (created, with data) and an unknown one."""
    from kafkaproto.messages import (CreatePartitionsRequest, DescribeClusterRequest, FindCoordinatorRequest,
                                     OffsetForLeaderEpochRequest)
    by_id = dict(topic_id=topic_id) if version >= 13 else {}
    by_name = {} if version >= 13 else dict(name="t")
    if key == ApiKey.API_VERSIONS:
        return ApiVersionsRequest(client_software_name="t", client_software_version="1")
    if key == ApiKey.METADATA:
        wanted = [MetadataRequest.MetadataRequestTopic(name="t"), MetadataRequest.MetadataRequestTopic(name="none")]
        if version >= 12:
            wanted.append(MetadataRequest.MetadataRequestTopic(topic_id=topic_id))
        return MetadataRequest(topics=wanted, **(dict(allow_auto_topic_creation=False) if version >= 4 else {}))
    if key == ApiKey.PRODUCE:
        part = ProduceRequest.PartitionProduceData(index=0, records=batch(b"v"))
        return ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[
            ProduceRequest.TopicProduceData(partition_data=[part], **by_id, **by_name)])
    if key == ApiKey.FETCH:
        part = FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
        topic = FetchRequest.FetchTopic(partitions=[part], **by_id, **({} if version >= 13 else dict(topic="t")))
        return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, session_id=0,
                            session_epoch=-1, topics=[topic])
    if key == ApiKey.LIST_OFFSETS:
        return ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name="t", partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])])
    if key == ApiKey.CREATE_TOPICS:
        return CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="t", num_partitions=1, replication_factor=1)], timeout_ms=1000)
    if key == ApiKey.DELETE_TOPICS:
        if version >= 6:
            return DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name="none")], timeout_ms=1000)
        return DeleteTopicsRequest(topic_names=["none"], timeout_ms=1000)
    if key == ApiKey.CREATE_PARTITIONS:
        return CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(name="t", count=1)],
                                       timeout_ms=1000)
    if key == ApiKey.DESCRIBE_CLUSTER:
        return DescribeClusterRequest()
    if key == ApiKey.FIND_COORDINATOR:
        return FindCoordinatorRequest(coordinator_keys=["g"]) if version >= 4 else FindCoordinatorRequest(key="g")
    if key == ApiKey.INIT_PRODUCER_ID:
        return InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000)
    if key == ApiKey.DESCRIBE_CONFIGS:
        return DescribeConfigsRequest(resources=[
            DescribeConfigsRequest.DescribeConfigsResource(resource_type=2, resource_name="t", configuration_keys=None),
            DescribeConfigsRequest.DescribeConfigsResource(resource_type=4, resource_name="1",
                                                           configuration_keys=None)], include_synonyms=True)
    if key == ApiKey.INCREMENTAL_ALTER_CONFIGS:
        return IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=2, resource_name="t", configs=[IncrementalAlterConfigsRequest.AlterableConfig(
                name="retention.ms", config_operation=0, value="60000")])])
    if key == ApiKey.DESCRIBE_TOPIC_PARTITIONS:
        return DescribeTopicPartitionsRequest(topics=[DescribeTopicPartitionsRequest.TopicRequest(name="t")],
                                              response_partition_limit=100)
    if key == ApiKey.OFFSET_FOR_LEADER_EPOCH:
        return OffsetForLeaderEpochRequest(topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
            topic="t", partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0, leader_epoch=0)])])
    if key == ApiKey.LIST_PARTITION_REASSIGNMENTS:
        return ListPartitionReassignmentsRequest(topics=None)
    if key == ApiKey.DELETE_RECORDS:
        return DeleteRecordsRequest(timeout_ms=1000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
            name="t", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=0)])])
    if key == ApiKey.DESCRIBE_LOG_DIRS:
        return DescribeLogDirsRequest(topics=None)
    if key == ApiKey.ELECT_LEADERS:
        return ElectLeadersRequest(topic_partitions=[ElectLeadersRequest.TopicPartitions(topic="t", partitions=[0])])
    if key == ApiKey.ALTER_CONFIGS:
        return AlterConfigsRequest(resources=[AlterConfigsRequest.AlterConfigsResource(
            resource_type=2, resource_name="t", configs=[AlterConfigsRequest.AlterableConfig(
                name="retention.ms", value="60000")])])
    if key == ApiKey.CREATE_ACLS:
        return CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
            resource_type=2, resource_name="t", resource_pattern_type=3, principal="User:a", host="*", operation=3,
            permission_type=3)])
    if key in (ApiKey.DESCRIBE_ACLS, ApiKey.DELETE_ACLS):
        acl_filter = dict(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                          principal_filter=None, host_filter=None, operation=1, permission_type=1)
        if key == ApiKey.DESCRIBE_ACLS:
            return DescribeAclsRequest(**acl_filter)
        return DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(**acl_filter)])
    if key == ApiKey.ALTER_CLIENT_QUOTAS:
        return AlterClientQuotasRequest(entries=[AlterClientQuotasRequest.EntryData(
            entity=[AlterClientQuotasRequest.EntityData(entity_type="user", entity_name="u")],
            ops=[AlterClientQuotasRequest.OpData(key="producer_byte_rate", value=1e9, remove=False)])])
    if key == ApiKey.DESCRIBE_CLIENT_QUOTAS:
        return DescribeClientQuotasRequest(components=[], strict=False)
    if key == ApiKey.UPDATE_FEATURES:
        return UpdateFeaturesRequest(feature_updates=[UpdateFeaturesRequest.FeatureUpdateKey(
            feature="group.version", max_version_level=1, upgrade_type=1)])
    if key == ApiKey.DESCRIBE_QUORUM:
        return DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
            topic_name="__cluster_metadata", partitions=[DescribeQuorumRequest.PartitionData(partition_index=0)])])
    if key == ApiKey.LIST_CONFIG_RESOURCES:
        return ListConfigResourcesRequest()
    if key == ApiKey.DESCRIBE_PRODUCERS:
        return DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(name="t", partition_indexes=[0])])
    if key == ApiKey.DESCRIBE_TRANSACTIONS:
        return DescribeTransactionsRequest(transactional_ids=["none"])
    if key == ApiKey.LIST_TRANSACTIONS:
        return ListTransactionsRequest(state_filters=["Ongoing"])
    if key == ApiKey.WRITE_TXN_MARKERS:
        return WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
            producer_id=1, producer_epoch=0, transaction_result=False, coordinator_epoch=0, topics=[
                WriteTxnMarkersRequest.WritableTxnMarkerTopic(name="t", partition_indexes=[0])])])
    shared = _share_sample(key, topic_id) or _admin_sample(key)
    if shared is not None:
        return shared
    raise AssertionError(f"no sample request for api key {key}: add one")


def _share_sample(key, topic_id):
    """Share groups' requests (a member that joins, fetches and acknowledges; the offsets and state APIs)."""
    from kafkaproto import messages as M
    member = "m" * 22
    if key == ApiKey.SHARE_GROUP_HEARTBEAT:
        return M.ShareGroupHeartbeatRequest(group_id="sg", member_id=member, member_epoch=0,
                                            subscribed_topic_names=["t"])
    if key == ApiKey.SHARE_GROUP_DESCRIBE:
        return M.ShareGroupDescribeRequest(group_ids=["sg", "none"])
    if key == ApiKey.SHARE_FETCH:
        F = M.ShareFetchRequest
        return F(group_id="sg", member_id=member, share_session_epoch=0, max_records=10, batch_size=10,
                 topics=[F.FetchTopic(topic_id=topic_id, partitions=[F.FetchPartition(partition_index=0)])])
    if key == ApiKey.SHARE_ACKNOWLEDGE:
        A = M.ShareAcknowledgeRequest
        return A(group_id="sg", member_id=member, share_session_epoch=-1, topics=[A.AcknowledgeTopic(
            topic_id=topic_id, partitions=[A.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                A.AcknowledgementBatch(first_offset=0, last_offset=0, acknowledge_types=[1])])])])
    if key == ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS:
        D = M.DescribeShareGroupOffsetsRequest
        return D(groups=[D.DescribeShareGroupOffsetsRequestGroup(group_id="sg", topics=None)])
    if key == ApiKey.ALTER_SHARE_GROUP_OFFSETS:
        A = M.AlterShareGroupOffsetsRequest
        return A(group_id="sg2", topics=[A.AlterShareGroupOffsetsRequestTopic(topic_name="t", partitions=[
            A.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=0)])])
    if key == ApiKey.DELETE_SHARE_GROUP_OFFSETS:
        X = M.DeleteShareGroupOffsetsRequest
        return X(group_id="sg2", topics=[X.DeleteShareGroupOffsetsRequestTopic(topic_name="t")])
    state_apis = {ApiKey.INITIALIZE_SHARE_GROUP_STATE: (M.InitializeShareGroupStateRequest, "InitializeStateData",
                                                        {"state_epoch": 1, "start_offset": 0}),
                  ApiKey.READ_SHARE_GROUP_STATE: (M.ReadShareGroupStateRequest, "ReadStateData", {}),
                  ApiKey.WRITE_SHARE_GROUP_STATE: (M.WriteShareGroupStateRequest, "WriteStateData",
                                                   {"state_epoch": 1, "start_offset": 0, "state_batches": []}),
                  ApiKey.DELETE_SHARE_GROUP_STATE: (M.DeleteShareGroupStateRequest, "DeleteStateData", {}),
                  ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: (M.ReadShareGroupStateSummaryRequest,
                                                          "ReadStateSummaryData", {})}
    if key in state_apis:
        request, data, fields = state_apis[key]
        return request(group_id="sg3", topics=[getattr(request, data)(topic_id=topic_id, partitions=[
            request.PartitionData(partition=0, **fields)])])
    return None


def _admin_sample(key):
    """The admin requests a single node answers with no-ops or refusals."""
    from kafkaproto import messages as M
    from kafkaproto.uuid import Uuid
    if key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
        R = M.AlterPartitionReassignmentsRequest
        return R(topics=[R.ReassignableTopic(name="t", partitions=[R.ReassignablePartition(partition_index=0,
                                                                                          replicas=[1])])])
    if key == ApiKey.ALTER_REPLICA_LOG_DIRS:
        L = M.AlterReplicaLogDirsRequest
        return L(dirs=[L.AlterReplicaLogDir(path="/elsewhere", topics=[L.AlterReplicaLogDirTopic(
            name="t", partitions=[0])])])
    if key == ApiKey.ADD_RAFT_VOTER:
        return M.AddRaftVoterRequest(voter_id=2, voter_directory_id=Uuid.random(), listeners=[])
    if key == ApiKey.REMOVE_RAFT_VOTER:
        return M.RemoveRaftVoterRequest(voter_id=2, voter_directory_id=Uuid.random())
    if key == ApiKey.UNREGISTER_BROKER:
        return M.UnregisterBrokerRequest(broker_id=2)
    if key == ApiKey.CREATE_DELEGATION_TOKEN:
        return M.CreateDelegationTokenRequest(renewers=[], max_lifetime_ms=-1)
    if key == ApiKey.DESCRIBE_DELEGATION_TOKEN:
        return M.DescribeDelegationTokenRequest(owners=None)
    if key == ApiKey.RENEW_DELEGATION_TOKEN:
        return M.RenewDelegationTokenRequest(hmac=b"h", renew_period_ms=1)
    if key == ApiKey.EXPIRE_DELEGATION_TOKEN:
        return M.ExpireDelegationTokenRequest(hmac=b"h", expiry_time_period_ms=1)
    if key == ApiKey.STREAMS_GROUP_HEARTBEAT:
        H = M.StreamsGroupHeartbeatRequest
        return H(group_id="app", member_id="m" * 22, member_epoch=0, endpoint_information_epoch=-1,
                 rebalance_timeout_ms=30000, process_id="p", active_tasks=[], standby_tasks=[], warmup_tasks=[],
                 topology=H.Topology(epoch=0, subtopologies=[H.Subtopology(subtopology_id="0", source_topics=["t"],
                                                                            state_changelog_topics=[H.TopicInfo(
                                                                                name="app-store-changelog")])]),
                 user_endpoint=H.Endpoint(host="localhost", port=8080))
    if key == ApiKey.STREAMS_GROUP_DESCRIBE:
        return M.StreamsGroupDescribeRequest(group_ids=["app", "none"])
    if key == ApiKey.GET_TELEMETRY_SUBSCRIPTIONS:
        return M.GetTelemetrySubscriptionsRequest(client_instance_id=Uuid.ZERO)
    if key == ApiKey.PUSH_TELEMETRY:
        return M.PushTelemetryRequest(client_instance_id=Uuid.random(), subscription_id=0, terminating=False,
                                      compression_type=0, metrics=b"")
    return None


GROUP_APIS = {ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.OFFSET_COMMIT,
              ApiKey.OFFSET_FETCH, ApiKey.LIST_GROUPS, ApiKey.DESCRIBE_GROUPS, ApiKey.DELETE_GROUPS,
              ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE, ApiKey.OFFSET_DELETE}
TRANSACTION_APIS = {ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.TXN_OFFSET_COMMIT,
                    ApiKey.END_TXN}
SECURITY_APIS = {ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE, ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                 ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS}


def test_every_handler_answers_at_every_version_it_serves(tmp_path):
    """Each response must be writable at the request's version: no field set that the version lacks.
    (The group, transaction and security APIs go through whole lives at each version in test_broker_groups.py,
    test_broker_consumer_groups.py, test_broker_transactions.py and test_broker_security.py.) The broker has an
    authorizer, and the client is a super user: the ACL APIs answer, and every check is passed."""
    state = make_state(tmp_path, **{"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ANONYMOUS"})
    topic_id = create(state, "t").topic_id
    produce(state, batch(b"a"))
    for key, handler in HANDLERS.items():
        if key in GROUP_APIS or key in TRANSACTION_APIS or key in SECURITY_APIS:
            continue
        if handler.enabled is not None:  # a feature this broker does not enable (tests/test_partition_deletion.py)
            continue
        for version in handler.versions:
            response = call(state, sample_request(key, version, topic_id), version)
            assert type(response).__name__ == api(key).response.__name__, (key, version)
            assert getattr(response, "error_code", 0) == REFUSED.get(key, 0), (key, version)
    state.close()


# What a single node answers as Kafka does on a cluster of one (tests/test_broker_differential.py compares them)
REFUSED = {ApiKey.ADD_RAFT_VOTER: errors.UNSUPPORTED_VERSION.code,
           ApiKey.REMOVE_RAFT_VOTER: errors.UNSUPPORTED_VERSION.code,
           ApiKey.UNREGISTER_BROKER: errors.BROKER_ID_NOT_REGISTERED.code,
           # a push from a client instance that never asked for its subscription
           ApiKey.PUSH_TELEMETRY: errors.UNKNOWN_SUBSCRIPTION_ID.code,
           **{key: errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED.code for key in (
               ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.DESCRIBE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN,
               ApiKey.EXPIRE_DELEGATION_TOKEN)}}


def alter(state, resource_type, name, *changes, version=1):
    configs = [IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=op, value=v)
               for k, op, v in changes]
    body = IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=resource_type, resource_name=name, configs=configs)])
    return call(state, body, version).responses[0]


def describe(state, resource_type, name, version=4):
    body = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=None)])
    result = call(state, body, version).results[0]
    return result.error_code, {c.name: (c.value, c.config_source) for c in result.configs}


def test_topic_configs_described_altered_and_kept(tmp_path):
    state = make_state(tmp_path, **{"log.retention.ms": "1000000"})
    create(state, "t", **{"retention.bytes": "5000"})
    error, configs = describe(state, 2, "t")
    assert error == 0
    # a default the broker's configuration sets is named by its source there, as Kafka names it
    assert configs["retention.bytes"] == ("5000", 1) and configs["retention.ms"] == ("1000000", 4)
    assert alter(state, 2, "t", ("retention.ms", 0, "60000"), ("retention.bytes", 1, None)).error_code == 0
    assert alter(state, 2, "t", ("message.timestamp.type", 0, "LogAppendTime")).error_code == \
        errors.INVALID_CONFIG.code
    assert alter(state, 2, "t", ("retention.ms", 0, "soon")).error_code == errors.INVALID_CONFIG.code
    assert alter(state, 2, "t", ("no.such.config", 0, "1")).error_code == errors.INVALID_CONFIG.code
    assert alter(state, 2, "nope", ("retention.ms", 0, "1")).error_code == errors.UNKNOWN_TOPIC_OR_PARTITION.code
    state.close()
    state = make_state(tmp_path, **{"log.retention.ms": "1000000"})
    _, configs = describe(state, 2, "t")
    assert configs["retention.ms"] == ("60000", 1) and configs["retention.bytes"] == ("-1", 5)
    assert describe(state, 2, "nope")[0] == errors.UNKNOWN_TOPIC_OR_PARTITION.code
    state.close()


def test_broker_configs_and_dynamic_topic_defaults(state):
    error, configs = describe(state, 4, "1")
    assert error == 0 and configs["log.dirs"][1] == 4 and configs["num.partitions"] == ("1", 5)
    assert alter(state, 4, "1", ("log.retention.ms", 0, "123456")).error_code == 0
    assert describe(state, 4, "1")[1]["log.retention.ms"] == ("123456", 2)
    create(state, "t")
    assert describe(state, 2, "t")[1]["retention.ms"] == ("123456", 2)  # the broker's dynamic default
    assert alter(state, 4, "1", ("num.partitions", 0, "3")).error_code == errors.INVALID_REQUEST.code
    assert alter(state, 4, "2", ("log.retention.ms", 0, "1")).error_code == errors.INVALID_REQUEST.code


def test_a_dynamic_broker_setting_takes_effect_and_stays(tmp_path):
    """log.cleaner.backoff.ms, which Kafka changes while running: the housekeeping reads the new value, and the
    metadata log keeps it over a restart; deleted, the file's value is back."""
    state = make_state(tmp_path, **{"log.cleaner.backoff.ms": "15000"})
    assert alter(state, 4, "1", ("log.cleaner.backoff.ms", 0, "500")).error_code == 0
    assert state.config["log.cleaner.backoff.ms"] == 500 and describe(state, 4, "1")[1][
        "log.cleaner.backoff.ms"] == ("500", 2)
    state.close()
    state = make_state(tmp_path, **{"log.cleaner.backoff.ms": "15000"})
    assert state.config["log.cleaner.backoff.ms"] == 500
    assert alter(state, 4, "1", ("log.cleaner.backoff.ms", 1, None)).error_code == 0
    assert state.config["log.cleaner.backoff.ms"] == 15000
    assert describe(state, 4, "1")[1]["log.cleaner.backoff.ms"] == ("15000", 4)
    state.close()


def test_retention_deletes_whole_old_segments(tmp_path):
    state = make_state(tmp_path)
    create(state, "t", **{"internal.segment.bytes": "200"})
    for i in range(6):
        builder = records.RecordBatchBuilder()
        builder.append(None, b"x" * 100, timestamp=1000 + i)
        produce(state, builder.build())
    log = state.cluster.topics["t"].partitions[0].log
    assert len(log.segments) == 6
    assert state.enforce_retention(now_ms=5000) == 0  # within the 7 days of the default
    alter(state, 2, "t", ("retention.bytes", 0, "400"))
    assert state.enforce_retention(now_ms=5000) == 3 and log.log_start_offset == 3
    assert fetch(state, offset=0).responses[0].partitions[0].error_code == errors.OFFSET_OUT_OF_RANGE.code
    assert values(fetch(state, offset=3).responses[0].partitions[0].records)[0] == b"x" * 100
    alter(state, 2, "t", ("retention.bytes", 1, None), ("retention.ms", 0, "1000"))
    assert state.enforce_retention(now_ms=10_000) == 2 and len(log.segments) == 1  # the active one stays
    state.close()
    state = make_state(tmp_path)
    assert state.cluster.topics["t"].partitions[0].log.log_start_offset == 5
    state.close()


def test_describe_topic_partitions_pages(state):
    create(state, "a", partitions=3)
    create(state, "b", partitions=2)
    body = DescribeTopicPartitionsRequest(topics=[], response_partition_limit=4)
    first = call(state, body, 0)
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in first.topics] == [("a", [0, 1, 2]),
                                                                                          ("b", [0])]
    assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("b", 1)
    body.cursor = DescribeTopicPartitionsRequest.Cursor(topic_name="b", partition_index=1)
    second = call(state, body, 0)
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in second.topics] == [("b", [1])]
    assert second.next_cursor is None


def keyed(*pairs, timestamp=1_700_000_000_000):
    builder = records.RecordBatchBuilder()
    for key, value in pairs:
        builder.append(key, value, timestamp=timestamp)
    return builder.build()


def everything(state, topic="t"):
    """(offset, key, value) of every record, fetched batch after batch."""
    out, offset = [], 0
    while True:
        part = fetch(state, offset=offset, topic=topic).responses[0].partitions[0]
        got = records.read_records(part.records or b"")
        got = [r for r in got if r.offset >= offset]
        if not got:
            return out
        out += [(r.offset, r.key, r.value) for r in got]
        offset = got[-1].offset + 1


def test_compaction_keeps_the_latest_record_of_each_key(tmp_path):
    state = make_state(tmp_path)
    create(state, "t", **{"cleanup.policy": "compact", "internal.segment.bytes": "150"})
    produce(state, keyed((b"a", b"1"), (b"b", b"1")))
    produce(state, keyed((b"a", b"2")))
    produce(state, keyed((b"c", b"1"), (b"b", None)))  # b deleted
    produce(state, keyed((b"a", b"3")))
    produce(state, keyed((b"d", b"1")))  # the active segment, never compacted
    assert produce(state, keyed((None, b"no key"))).error_code == errors.INVALID_RECORD.code
    before = everything(state)
    assert state.compact(now_ms=1_700_000_000_000) == 3  # a=1, a=2 and b=1
    after = everything(state)
    assert after == [(3, b"c", b"1"), (4, b"b", None), (5, b"a", b"3"), (6, b"d", b"1")]
    assert [r for r in before if r in after] == after  # offsets and values unchanged
    assert state.compact(now_ms=1_700_000_000_000 + 86_400_001) == 1  # the tombstone, once old enough
    assert everything(state) == [(3, b"c", b"1"), (5, b"a", b"3"), (6, b"d", b"1")]
    assert fetch(state, offset=0).responses[0].partitions[0].error_code == 0  # gaps read past, from offset 0
    state.close()
    state = make_state(tmp_path)
    assert everything(state) == [(3, b"c", b"1"), (5, b"a", b"3"), (6, b"d", b"1")]
    assert produce(state, keyed((b"e", b"1"))).base_offset == 7
    state.close()


def test_compact_and_delete_both_apply_and_delete_alone_never_compacts(tmp_path):
    state = make_state(tmp_path)
    create(state, "plain", **{"internal.segment.bytes": "150"})
    for i in range(4):
        produce(state, keyed((b"k", b"%d" % i)), topic="plain")
    assert state.compact() == 0 and len(everything(state, "plain")) == 4
    assert alter(state, 2, "plain", ("cleanup.policy", 0, "compact,delete")).error_code == 0
    removed = state.compact(now_ms=1_700_000_000_000)
    left = everything(state, "plain")
    assert removed >= 2 and removed + len(left) == 4 and left[-1] == (3, b"k", b"3")
    assert state.enforce_retention(now_ms=1_700_000_000_000 + 8 * 86_400_000) >= 1
    state.close()


def session_fetch(state, session_id, epoch, topics=(), forgotten=(), version=12, min_bytes=0):
    """A Fetch in a session: topics [(name or ID, partition, fetch offset)], forgotten [(name or ID, partition)]."""
    by_id = version >= 13

    def topic_fields(key):
        return {"topic_id": key} if by_id else {"topic": key}

    grouped = {}
    for key, index, offset in topics:
        grouped.setdefault(key, []).append(FetchRequest.FetchPartition(partition=index, fetch_offset=offset,
                                                                      partition_max_bytes=1 << 20))
    body = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=min_bytes, max_bytes=1 << 20, session_id=session_id,
                        session_epoch=epoch,
                        topics=[FetchRequest.FetchTopic(partitions=ps, **topic_fields(k)) for k, ps in grouped.items()],
                        forgotten_topics_data=[FetchRequest.ForgottenTopic(partitions=[i], **topic_fields(k))
                                               for k, i in forgotten])
    return call(state, body, version)


def answered(response):
    return sorted((t.topic or str(t.topic_id), p.partition_index, len(p.records or b""), p.error_code)
                  for t in response.responses for p in t.partitions)


def test_fetch_sessions_answer_only_what_changed(state):
    create(state, "t", partitions=2)
    produce(state, batch(b"a"), partition=0)
    opened = session_fetch(state, 0, 0, [("t", 0, 0), ("t", 1, 0)])
    assert opened.session_id != 0 and [p[:2] for p in answered(opened)] == [("t", 0), ("t", 1)]
    sid = opened.session_id
    quiet = session_fetch(state, sid, 1, [("t", 0, 1)])  # moved past the record: nothing new anywhere
    assert quiet.error_code == 0 and answered(quiet) == []
    produce(state, batch(b"b"), partition=1)
    news = session_fetch(state, sid, 2)
    assert [(p[0], p[1]) for p in answered(news)] == [("t", 1)] and answered(news)[0][2] > 0
    assert session_fetch(state, sid, 2).error_code == errors.INVALID_FETCH_SESSION_EPOCH.code
    assert session_fetch(state, 12345, 1).error_code == errors.FETCH_SESSION_ID_NOT_FOUND.code
    forgot = session_fetch(state, sid, 3, forgotten=[("t", 1)])
    assert forgot.error_code == 0 and state.fetch_sessions.get(sid).partitions.keys() == {("t", 0)}
    closed = session_fetch(state, sid, -1, [("t", 0, 0)])
    assert closed.session_id == 0 and [p[:2] for p in answered(closed)] == [("t", 0)]
    assert session_fetch(state, sid, 4).error_code == errors.FETCH_SESSION_ID_NOT_FOUND.code


def test_fetch_sessions_and_topic_ids(state):
    topic_id = create(state, "t").topic_id
    by_name = session_fetch(state, 0, 0, [("t", 0, 0)], version=12)
    mixed = session_fetch(state, by_name.session_id, 1, version=13)
    assert mixed.error_code == errors.FETCH_SESSION_TOPIC_ID_ERROR.code
    by_id = session_fetch(state, 0, 0, [(topic_id, 0, 0)], version=13)
    assert by_id.responses[0].topic_id == topic_id
    state.delete_topic(state.cluster.topics["t"])
    gone = session_fetch(state, by_id.session_id, 1, version=13)
    assert answered(gone) == [(str(topic_id), 0, 0, errors.UNKNOWN_TOPIC_ID.code)]


def test_broker_configs_are_described_with_their_kafka_types(tmp_path):
    """DescribeConfigs v3+ gives each broker config the type Kafka's ConfigDef gives it: LONG for the ms and
    bytes settings Kafka defines as longs, not INT."""
    state = make_state(tmp_path)
    body = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=4, resource_name="1", configuration_keys=None)], include_synonyms=False,
        include_documentation=False)
    types = {c.name: c.config_type for c in call(state, body, 4).results[0].configs}
    assert (types["log.retention.ms"], types["log.retention.check.interval.ms"], types["connections.max.idle.ms"],
            types["num.partitions"], types["auto.create.topics.enable"], types["listeners"]) == (5, 5, 5, 3, 1, 7)
    state.close()


def test_configs_are_documented_when_asked(state):
    """Asked for documentation (v3+), every config of a topic, a broker and a group gets a line: what this broker
    says of the setting where it has a description, its type, and whether this broker acts on it; unasked, none
    (null), as Kafka answers."""
    call(state, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name="t", num_partitions=1, replication_factor=1)], timeout_ms=1000), 5)

    def described(version, asked):
        body = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=kind, resource_name=name, configuration_keys=None)
            for kind, name in ((2, "t"), (4, "1"), (32, "g"))], include_synonyms=False, include_documentation=asked)
        return {(r.resource_type, c.name): c.documentation for r in call(state, body, version).results
                for c in r.configs}

    docs = described(4, True)
    assert len(docs) > 300 and all(docs.values()), [key for key, doc in docs.items() if not doc]
    assert docs[(4, "listeners")].startswith("Where to accept connections") and "acted on" in docs[(4, "listeners")]
    assert "does not act on it" in docs[(4, "num.io.threads")] and "does not act" in docs[(2, "min.compaction.lag.ms")]
    assert "log.retention.ms, else log.retention.minutes, else log.retention.hours" in docs[(2, "retention.ms")]
    assert "group.consumer.session.timeout.ms" in docs[(32, "consumer.session.timeout.ms")]
    assert set(described(4, False).values()) == {None}
