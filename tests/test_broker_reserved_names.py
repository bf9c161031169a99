"""Topic names the broker refuses beyond the legal characters: the names of its own logs (__cluster_metadata,
__consumer_offsets, __transaction_state), whose directories a topic of that name would have, and names that collide
with an existing topic's once '.' and '_' are made alike. They are refused with Apache Kafka's codes and messages
(tests/test_broker_differential.py compares them with Kafka 3.9.2 and 4.3.1) by CreateTopics and by Metadata's
auto-creation, and no topic of such a name can reach a log's directory, even one an older version recorded."""

import logging
import os

import pytest

from kafkaproto import errors, records
from kafkaproto.broker import Broker
from kafkaproto.broker.state.cluster import METADATA_DIR, RESERVED_TOPICS, TopicNameRefused, partition_dir_name
from kafkaproto.broker.state.log import parse_batches
from kafkaproto.messages import CreateTopicsRequest, MetadataRequest
from kafkaproto.metadata import (PartitionRecord, TopicRecord, UserScramCredentialRecord, decode_record,
                                 encode_record)
from kafkaproto.uuid import Uuid

from test_broker_handlers import batch, call, create, fetch, make_state, produce

pytestmark = pytest.mark.above_the_codecs

OWN_LOGS = ["__cluster_metadata", "__consumer_offsets", "__share_group_state", "__transaction_state"]


def create_many(state, names, version=7, validate_only=False):
    """[(name, error name, message)] of one CreateTopics request, in the order of the answer."""
    body = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1,
                                                                          replication_factor=1) for name in names],
                               timeout_ms=1000, validate_only=validate_only)
    return [(t.name, errors.by_code(t.error_code).name, t.error_message)
            for t in call(state, body, version).topics]


def metadata(state, names, auto=True, version=12):
    body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name) for name in names],
                           allow_auto_topic_creation=auto)
    return [(t.name, errors.by_code(t.error_code).name, t.is_internal, len(t.partitions))
            for t in call(state, body, version).topics]


def scram_record(user):
    """A metadata record that, replayed, would give user a SCRAM-SHA-256 password."""
    return encode_record(UserScramCredentialRecord(name=user, mechanism=1, salt=b"s" * 16, stored_key=b"k" * 32,
                                                   server_key=b"v" * 32, iterations=4096))


def metadata_records(log_dir):
    path = os.path.join(log_dir, METADATA_DIR, f"{0:020d}.log")
    with open(path, "rb") as f:
        return [decode_record(r.value)[0] for b in records.iter_batches(f.read()) for r in b]


def test_kafka_python_cannot_produce_to_the_broker_s_own_logs(tmp_path):
    """kafka-python's send() to each of the names: the topic is not created (Metadata answers
    UNKNOWN_TOPIC_OR_PARTITION until the client gives up), nothing reaches the log of that name, the broker starts
    again on its data, and the SCRAM record sent as a value gives no one a password."""
    kafka = pytest.importorskip("kafka")
    data = tmp_path / "data"
    with Broker(log_dir=data) as broker:  # auto.create.topics.enable is on, as in Kafka
        producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all", max_block_ms=3000)
        outcomes = {}
        for name in OWN_LOGS:
            try:
                outcomes[name] = producer.send(name, scram_record(f"intruder-{name}")).get(10)
            except Exception as e:  # whatever the client raises: not acknowledged
                outcomes[name] = e
        producer.close()
        # The broker serves on: a topic of a legal name is still made on first use.
        producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all")
        producer.send("orders", b"one").get(10)
        producer.close()
    acknowledged = {name: outcome for name, outcome in outcomes.items() if not isinstance(outcome, Exception)}
    assert not acknowledged, f"acknowledged writes to the broker's own logs: {acknowledged}"
    assert all(isinstance(outcome, kafka.errors.KafkaTimeoutError) for outcome in outcomes.values()), outcomes
    assert sorted(p.name for p in data.iterdir() if p.is_dir()) == sorted(OWN_LOGS_DIRS + ["orders-0"])
    kinds = [type(r).__name__ for r in metadata_records(data)]
    assert "UserScramCredentialRecord" not in kinds and kinds.count("TopicRecord") == 1
    with Broker(log_dir=data) as broker:  # starts again
        consumer = kafka.KafkaConsumer("orders", bootstrap_servers=broker.bootstrap_servers,
                                       auto_offset_reset="earliest", consumer_timeout_ms=10000)
        assert [m.value for m in consumer] == [b"one"]
        consumer.close()
    state = make_state(data)
    try:
        assert set(state.cluster.topics) == {"orders"}
        assert state.cluster.scram == {} and state.credentials.scram == {}
    finally:
        state.close()


OWN_LOGS_DIRS = [f"{name}-0" for name in OWN_LOGS]


def test_create_topics_refuses_them_as_kafka_does(state):
    assert create_many(state, OWN_LOGS) == [
        ("__consumer_offsets", "TOPIC_ALREADY_EXISTS", "Topic '__consumer_offsets' already exists."),
        ("__share_group_state", "TOPIC_ALREADY_EXISTS", "Topic '__share_group_state' already exists."),
        ("__transaction_state", "TOPIC_ALREADY_EXISTS", "Topic '__transaction_state' already exists."),
        # dropped before the others are looked at, and answered after them
        ("__cluster_metadata", "INVALID_REQUEST", "Creation of internal topic __cluster_metadata is prohibited.")]
    for version in (2, 5):
        assert create_many(state, ["__cluster_metadata"], version, validate_only=True) == [
            ("__cluster_metadata", "INVALID_REQUEST", "Creation of internal topic __cluster_metadata is prohibited.")]
    assert create_many(state, ["__consumer.offsets", "__transaction.state", "__cluster.metadata"],
                       validate_only=True) == [
        ("__consumer.offsets", "INVALID_TOPIC_EXCEPTION",
         "Topic '__consumer.offsets' collides with existing topic: __consumer_offsets"),
        ("__transaction.state", "INVALID_TOPIC_EXCEPTION",
         "Topic '__transaction.state' collides with existing topic: __transaction_state"),
        ("__cluster.metadata", "NONE", None)]  # no topic is called __cluster_metadata
    assert set(state.cluster.topics) == set()


def test_names_that_collide_once_dot_and_underscore_are_alike(state):
    assert [e for _, e, _ in create_many(state, ["c1.x", "c2_y", "c3-z"])] == ["NONE"] * 3
    assert create_many(state, ["c1_x", "c2.y", "c1.x", "c2_y", "c3-z"]) == [
        ("c1_x", "INVALID_TOPIC_EXCEPTION", "Topic 'c1_x' collides with existing topic: c1.x"),
        ("c2.y", "INVALID_TOPIC_EXCEPTION", "Topic 'c2.y' collides with existing topic: c2_y"),
        ("c1.x", "TOPIC_ALREADY_EXISTS", "Topic 'c1.x' already exists."),  # existing wins over colliding
        ("c2_y", "TOPIC_ALREADY_EXISTS", "Topic 'c2_y' already exists."),
        ("c3-z", "TOPIC_ALREADY_EXISTS", "Topic 'c3-z' already exists.")]
    # The topics of one request are checked against those before it: two of them may collide with each other.
    assert create_many(state, ["c4.q", "c4_q"]) == [("c4.q", "NONE", None), ("c4_q", "NONE", None)]
    assert create_many(state, ["c4_q_", "c4.q"], validate_only=True)[1][1] == "TOPIC_ALREADY_EXISTS"
    # A deleted topic's name no longer collides.
    state.delete_topic(state.cluster.topics["c1.x"])
    assert create_many(state, ["c1_x"]) == [("c1_x", "NONE", None)]
    assert set(state.cluster.topics) == {"c1_x", "c2_y", "c3-z", "c4.q", "c4_q"}


def test_a_name_given_twice_is_answered_once_after_the_others(state):
    assert create_many(state, ["d1", "__cluster_metadata", "d1", "d2", "d3", "d3"]) == [
        ("d2", "NONE", None),
        ("d1", "INVALID_REQUEST", "Duplicate topic name."),  # a Java HashSet's order: d1's bucket is before d3's
        ("d3", "INVALID_REQUEST", "Duplicate topic name."),
        ("__cluster_metadata", "INVALID_REQUEST", "Creation of internal topic __cluster_metadata is prohibited.")]
    assert set(state.cluster.topics) == {"d2"}  # neither copy of d1 or d3 is made


def test_metadata_does_not_create_them(tmp_path):
    state = make_state(tmp_path)  # auto.create.topics.enable=true, Kafka's default
    try:
        create(state, "m1.x")
        assert metadata(state, OWN_LOGS + ["m1_x", "__consumer.offsets"]) == [
            ("__cluster_metadata", "UNKNOWN_TOPIC_OR_PARTITION", False, 0),
            ("__consumer_offsets", "UNKNOWN_TOPIC_OR_PARTITION", True, 0),  # Kafka flags its internal topics' names
            ("__share_group_state", "UNKNOWN_TOPIC_OR_PARTITION", True, 0),
            ("__transaction_state", "UNKNOWN_TOPIC_OR_PARTITION", True, 0),
            ("m1_x", "UNKNOWN_TOPIC_OR_PARTITION", False, 0),
            ("__consumer.offsets", "UNKNOWN_TOPIC_OR_PARTITION", False, 0)]
        assert metadata(state, OWN_LOGS, auto=False, version=4)[1] == (
            "__consumer_offsets", "UNKNOWN_TOPIC_OR_PARTITION", True, 0)
        # Two colliding names of one request are both made, as Kafka's controller makes them.
        assert metadata(state, ["m2.y", "m2_y", "__cluster.metadata"]) == [
            ("m2.y", "NONE", False, 1), ("m2_y", "NONE", False, 1), ("__cluster.metadata", "NONE", False, 1)]
        assert set(state.cluster.topics) == {"m1.x", "m2.y", "m2_y", "__cluster.metadata"}
        assert produce(state, batch(b"x"), topic="__cluster_metadata").error_code == \
            errors.UNKNOWN_TOPIC_OR_PARTITION.code
    finally:
        state.close()


def test_no_topic_of_those_names_reaches_a_log_directory(state, tmp_path):
    for name in RESERVED_TOPICS:
        with pytest.raises(TopicNameRefused, match="the broker's own logs"):
            partition_dir_name(name, 0)
        with pytest.raises(TopicNameRefused):  # the check below the handlers' own
            state.cluster.create_topic(name, 1)
    create(state, "t")
    with pytest.raises(TopicNameRefused, match="already exists"):
        state.cluster.create_topic("t", 1)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == sorted(OWN_LOGS_DIRS + ["t-0"])
    assert partition_dir_name("__cluster_metadata-0", 0) == "__cluster_metadata-0-0"


def test_a_topic_of_such_a_name_in_an_older_metadata_log_is_not_served(tmp_path, caplog):
    """An older version let clients create __consumer_offsets: a metadata log that records it starts, without that
    topic, and the offsets log stays the broker's own: served as Kafka's internal topic (its records are there)
    under an id of its own."""
    state = make_state(tmp_path)
    create(state, "t")
    produce(state, batch(b"a"))
    topic_id = Uuid.random()
    state.cluster._commit([TopicRecord(name="__consumer_offsets", topic_id=topic_id),
                           PartitionRecord(partition_id=0, topic_id=topic_id, replicas=[1], isr=[1], leader=1,
                                           leader_epoch=0, partition_epoch=0)])
    state.groups.commit("g", [(("t", 0), (1, 0, "", 0))])
    state.close()
    with caplog.at_level(logging.ERROR, logger="kafkaproto.broker"):
        state = make_state(tmp_path)
    try:
        assert "holds a topic named __consumer_offsets" in caplog.text
        assert set(state.cluster.topics) == {"t", "__consumer_offsets"} and topic_id not in state.cluster.by_id
        assert metadata(state, ["__consumer_offsets"], auto=False) == [("__consumer_offsets", "NONE", True, 1)]
        assert state.cluster.topics["__consumer_offsets"].partitions[0].log is state.groups.offsets.logs.logs[0]
        assert produce(state, batch(b"x"), topic="__consumer_offsets").error_code == \
            errors.INVALID_TOPIC_EXCEPTION.code
        assert state.groups.committed("g")[("t", 0)][0] == 1
        assert [r.value for r in records.read_records(fetch(state).responses[0].partitions[0].records)] == [b"a"]
        assert not [p for p in tmp_path.iterdir() if p.name.endswith("-stray")]
    finally:
        state.close()


def test_records_that_are_not_the_broker_s_in_its_offsets_and_transaction_logs_are_skipped(tmp_path, caplog):
    """What an older version let a client write into __consumer_offsets-0 and __transaction_state-0 (a record its
    Produce appended there): the broker starts, and reads its own records around them."""
    state = make_state(tmp_path)
    state.groups.commit("g", [(("t", 0), (5, 0, "", 0))])
    for plog in (state.groups.offsets.logs.logs[0], state.transactions.logs.logs[0]):
        data = records.RecordBatchBuilder()
        data.append(None, b"not json", timestamp=0)
        data.append(b"\xff", b"[1]", timestamp=0)
        built = data.build()
        plog.append(built, parse_batches(built))
    state.groups.commit("g", [(("t", 1), (7, 0, "", 0))])
    state.close()
    with caplog.at_level(logging.ERROR, logger="kafkaproto.broker"):
        state = make_state(tmp_path)
    try:
        assert {k: v[0] for k, v in state.groups.committed("g").items()} == {("t", 0): 5, ("t", 1): 7}
        assert state.transactions.by_id == {}
        assert caplog.text.count("skipped") == 4
    finally:
        state.close()


@pytest.fixture
def state(tmp_path):
    state = make_state(tmp_path)
    yield state
    state.close()


def test_produce_to_them_is_answered_as_kafka_answers(state):
    """Kafka never lets a client append to an internal topic (INVALID_TOPIC_EXCEPTION); __cluster_metadata is no
    topic to its clients (UNKNOWN_TOPIC_OR_PARTITION)."""
    answers = {name: errors.by_code(produce(state, batch(b"x"), topic=name).error_code).name for name in OWN_LOGS}
    assert answers == {"__cluster_metadata": "UNKNOWN_TOPIC_OR_PARTITION",
                       "__consumer_offsets": "INVALID_TOPIC_EXCEPTION",
                       "__share_group_state": "INVALID_TOPIC_EXCEPTION",
                       "__transaction_state": "INVALID_TOPIC_EXCEPTION"}


def test_consumer_offsets_is_kafkas_internal_topic_once_a_group_is_found(tmp_path):
    """Kafka's group coordinator makes __consumer_offsets when it is first asked for a group: from then on it is
    listed (internal, one partition: the coordinator's log), read like any topic (Fetch, ListOffsets; a fetch
    waiting on it wakes when the coordinator writes), written by the coordinator alone, and kept, with its id,
    across a restart."""
    from kafkaproto import coordinator_records
    from kafkaproto.messages import (AlterConfigsRequest, CreatePartitionsRequest, DeleteRecordsRequest,
                                     DeleteTopicsRequest, FindCoordinatorRequest, ListOffsetsRequest,
                                     OffsetCommitRequest, OffsetFetchRequest)

    state = make_state(tmp_path)
    try:
        create(state, "t")
        assert metadata(state, ["__consumer_offsets"], auto=False) == [
            ("__consumer_offsets", "UNKNOWN_TOPIC_OR_PARTITION", True, 0)]
        found = call(state, FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4)
        assert found.coordinators[0].error_code == 0
        assert metadata(state, ["__consumer_offsets"], auto=False) == [("__consumer_offsets", "NONE", True, 1)]
        topic = state.cluster.topics["__consumer_offsets"]
        woken = []
        topic.partitions[0].producers.on_append = woken.append  # what the server's waiting fetches hang on
        state.groups.commit("g", [(("t", 0), (5, -1, "", 0))])
        assert woken
        read = records.read_records(fetch(state, topic="__consumer_offsets").responses[0].partitions[0].records)
        keys = [coordinator_records.decode_key(r.key)[0] for r in read]
        assert [(k.group, k.topic, k.partition) for k in keys] == [("g", "t", 0)]
        latest = call(state, ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name="__consumer_offsets", partitions=[ListOffsetsRequest.ListOffsetsPartition(
                partition_index=0, timestamp=-1)])]), 7).topics[0].partitions[0]
        assert (latest.error_code, latest.offset) == (0, 1)
        # Read-only to clients: Kafka refuses Produce and DeleteRecords so; this broker also keeps its partitions,
        # configs and the topic itself (Kafka lets an admin change or delete them).
        assert produce(state, batch(b"x"), topic="__consumer_offsets").error_code == errors.INVALID_TOPIC_EXCEPTION.code
        deleted = call(state, DeleteRecordsRequest(timeout_ms=1000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
            name="__consumer_offsets", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(
                partition_index=0, offset=1)])]), 2).topics[0].partitions[0]
        assert (deleted.error_code, deleted.low_watermark) == (errors.INVALID_TOPIC_EXCEPTION.code, -1)
        assert call(state, DeleteTopicsRequest(topic_names=["__consumer_offsets"], timeout_ms=1000), 5).responses[
            0].error_code == errors.INVALID_REQUEST.code
        assert call(state, CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
            name="__consumer_offsets", count=2, assignments=None)], timeout_ms=1000), 3).results[
            0].error_code == errors.INVALID_REQUEST.code
        assert call(state, AlterConfigsRequest(resources=[AlterConfigsRequest.AlterConfigsResource(
            resource_type=2, resource_name="__consumer_offsets", configs=[AlterConfigsRequest.AlterableConfig(
                name="retention.ms", value="1000")])]), 2).responses[0].error_code == errors.INVALID_REQUEST.code
        topic_id = topic.topic_id
        assert state.groups.offsets.logs.logs[0].log_end_offset == 1
        # A group that consumes it (a lag monitor, say) commits and fetches its offsets as for any topic.
        committed = call(state, OffsetCommitRequest(
            group_id="lag", generation_id_or_member_epoch=-1, member_id="", topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(name="__consumer_offsets", partitions=[
                    OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]), 8)
        assert committed.topics[0].partitions[0].error_code == 0
        fetched = call(state, OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
            group_id="lag", topics=None)]), 8).groups[0].topics
        assert [(t.name, [(p.partition_index, p.committed_offset) for p in t.partitions]) for t in fetched] == [
            ("__consumer_offsets", [(0, 1)])]
    finally:
        state.close()
    state = make_state(tmp_path)
    try:
        assert state.cluster.topics["__consumer_offsets"].topic_id == topic_id
        assert metadata(state, ["__consumer_offsets"], auto=False) == [("__consumer_offsets", "NONE", True, 1)]
    finally:
        state.close()


def test_transaction_state_is_kafkas_internal_topic_once_a_transactional_id_is_found(tmp_path):
    """Kafka's transaction coordinator makes __transaction_state when it is first asked for a transactional id:
    from then on it is listed (internal, one partition: the coordinator's log), read like any topic, written by
    the coordinator alone, and kept, with its id, across a restart."""
    from kafkaproto import coordinator_records
    from kafkaproto.messages import (DeleteRecordsRequest, DeleteTopicsRequest, FindCoordinatorRequest,
                                     InitProducerIdRequest, ListOffsetsRequest)

    state = make_state(tmp_path)
    try:
        assert metadata(state, ["__transaction_state"], auto=False) == [
            ("__transaction_state", "UNKNOWN_TOPIC_OR_PARTITION", True, 0)]
        found = call(state, FindCoordinatorRequest(key_type=1, coordinator_keys=["tx"]), 4)
        assert found.coordinators[0].error_code == 0
        assert metadata(state, ["__transaction_state"], auto=False) == [("__transaction_state", "NONE", True, 1)]
        topic = state.cluster.topics["__transaction_state"]
        assert topic.partitions[0].log is state.transactions.logs.logs[0]
        assert call(state, InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60000),
                    4).error_code == 0
        read = records.read_records(fetch(state, topic="__transaction_state").responses[0].partitions[0].records)
        assert [coordinator_records.decode_transaction_key(r.key) for r in read] == ["tx"]
        value, version = coordinator_records.decode_transaction_value(read[0].value)
        assert (value.transaction_status, value.transaction_partitions, version) == (0, None, 1)
        latest = call(state, ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name="__transaction_state", partitions=[ListOffsetsRequest.ListOffsetsPartition(
                partition_index=0, timestamp=-1)])]), 7).topics[0].partitions[0]
        assert (latest.error_code, latest.offset) == (0, 1)
        assert produce(state, batch(b"x"), topic="__transaction_state").error_code == \
            errors.INVALID_TOPIC_EXCEPTION.code
        deleted = call(state, DeleteRecordsRequest(timeout_ms=1000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
            name="__transaction_state", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(
                partition_index=0, offset=1)])]), 2).topics[0].partitions[0]
        assert deleted.error_code == errors.INVALID_TOPIC_EXCEPTION.code
        assert call(state, DeleteTopicsRequest(topic_names=["__transaction_state"], timeout_ms=1000), 5).responses[
            0].error_code == errors.INVALID_REQUEST.code
        topic_id = topic.topic_id
    finally:
        state.close()
    state = make_state(tmp_path)
    try:
        assert state.cluster.topics["__transaction_state"].topic_id == topic_id
        assert metadata(state, ["__transaction_state"], auto=False) == [("__transaction_state", "NONE", True, 1)]
    finally:
        state.close()


def test_transaction_state_is_served_at_start_when_its_log_holds_records(tmp_path):
    """A data directory whose transaction log has records but no topic id (one an older version wrote) serves
    __transaction_state from the start."""
    from kafkaproto.broker.state.transactions import STATE_DIR
    from kafkaproto.messages import InitProducerIdRequest

    state = make_state(tmp_path)
    try:
        assert call(state, InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60000),
                    4).error_code == 0
    finally:
        state.close()
    os.remove(os.path.join(tmp_path, STATE_DIR, "partition.metadata"))
    state = make_state(tmp_path)
    try:
        assert metadata(state, ["__transaction_state"], auto=False) == [("__transaction_state", "NONE", True, 1)]
    finally:
        state.close()


def test_share_group_state_is_kafkas_internal_topic_once_share_state_is_written(tmp_path):
    """__share_group_state is made by the first lookup of a share partition's coordinator (FindCoordinator key type
    2) or the first share state written: listed (internal, one partition: the share coordinator's log), read like
    any topic, in Kafka's share coordinator records, written by the coordinator alone, and kept across a restart."""
    from kafkaproto import coordinator_records
    from kafkaproto.messages import FindCoordinatorRequest, InitializeShareGroupStateRequest

    state = make_state(tmp_path)
    try:
        assert metadata(state, ["__share_group_state"], auto=False) == [
            ("__share_group_state", "UNKNOWN_TOPIC_OR_PARTITION", True, 0)]
        create(state, "shared", 1)
        topic_id = state.cluster.topics["shared"].topic_id
        older = call(state, FindCoordinatorRequest(key_type=2, coordinator_keys=[f"g:{topic_id}:0"]), 5)
        assert older.coordinators[0].error_code == errors.INVALID_REQUEST.code  # share partitions from v6
        assert metadata(state, ["__share_group_state"], auto=False)[0][1] == "UNKNOWN_TOPIC_OR_PARTITION"
        call(state, InitializeShareGroupStateRequest(group_id="g", topics=[
            InitializeShareGroupStateRequest.InitializeStateData(topic_id=topic_id, partitions=[
                InitializeShareGroupStateRequest.PartitionData(partition=0, state_epoch=1, start_offset=4)])]), 0)
        assert metadata(state, ["__share_group_state"], auto=False) == [("__share_group_state", "NONE", True, 1)]
        read = records.read_records(fetch(state, topic="__share_group_state").responses[0].partitions[0].records)
        assert [coordinator_records.decode_share_key(r.key) for r in read] == [
            (coordinator_records.SHARE_SNAPSHOT, ("g", topic_id, 0))]
        value, _ = coordinator_records.decode_share_value(read[0].value, coordinator_records.SHARE_SNAPSHOT)
        assert (value.start_offset, value.state_epoch, value.state_batches) == (4, 1, [])
        assert produce(state, batch(b"x"), topic="__share_group_state").error_code == \
            errors.INVALID_TOPIC_EXCEPTION.code
        served_id = state.cluster.topics["__share_group_state"].topic_id
    finally:
        state.close()
    state = make_state(tmp_path)
    try:
        assert state.cluster.topics["__share_group_state"].topic_id == served_id
        assert state.shares.get("g", topic_id, 0).start == 4
        found = call(state, FindCoordinatorRequest(key_type=2, coordinator_keys=[f"g:{topic_id}:0", "g:x:0"]), 6)
        assert [c.error_code for c in found.coordinators] == [0, errors.INVALID_REQUEST.code]
    finally:
        state.close()
