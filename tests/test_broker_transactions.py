"""Transactions on the broker, without sockets: markers, the last stable offset, aborted ranges for
read_committed, fencing, and what a restart does with a transaction a crash left open."""


import pytest

from kafkaproto import errors, records
from kafkaproto.broker.state.clock import clock_ms
from kafkaproto.broker.dispatch import HANDLERS
from kafkaproto.messages import (AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, ApiKey, EndTxnRequest,
                                 FetchRequest, InitProducerIdRequest, ListOffsetsRequest, OffsetFetchRequest,
                                 TxnOffsetCommitRequest)

from test_broker_groups import call
from test_broker_handlers import create, make_state, produce

# The broker is the same code over either codec implementation (conftest.py: the pure-Python pass).
pytestmark = pytest.mark.above_the_codecs

TID = "txn-1"


@pytest.fixture
def state(tmp_path):
    state = make_state(tmp_path)
    create(state, "t", partitions=2)
    yield state
    state.close()


def init(state, version=4, tid=TID):
    response = call(state, InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000), version)
    assert response.error_code == 0
    return response.producer_id, response.producer_epoch


def add_partitions(state, pid, epoch, partitions=(0,), version=3, tid=TID):
    topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="t", partitions=list(partitions))
    if version < 4:
        response = call(state, AddPartitionsToTxnRequest(v3_and_below_transactional_id=tid,
                                                         v3_and_below_producer_id=pid,
                                                         v3_and_below_producer_epoch=epoch,
                                                         v3_and_below_topics=[topic]), version)
        return [p.partition_error_code for t in response.results_by_topic_v3_and_below
                for p in t.results_by_partition]
    txn = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(transactional_id=tid, producer_id=pid,
                                                                   producer_epoch=epoch, topics=[topic])
    response = call(state, AddPartitionsToTxnRequest(transactions=[txn]), version)
    return [p.partition_error_code for t in response.results_by_transaction[0].topic_results
            for p in t.results_by_partition]


def txn_batch(pid, epoch, sequence, *values):
    builder = records.RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=sequence,
                                        transactional=True)
    for value in values:
        builder.append(None, value, timestamp=1_700_000_000_000)
    return builder.build()


def produce_txn(state, data, partition=0, tid=TID, version=11):
    from kafkaproto.messages import ProduceRequest
    part = ProduceRequest.PartitionProduceData(index=partition, records=data)
    body = ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name="t", partition_data=[part])])
    return call(state, body, version).responses[0].partition_responses[0]


def end(state, pid, epoch, commit, version=3, tid=TID):
    return call(state, EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit),
                version).error_code


def fetch_committed(state, partition=0, offset=0):
    part = FetchRequest.FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20)
    body = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=1,
                        session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic="t", partitions=[part])])
    return call(state, body, 12).responses[0].partitions[0]


def visible(part):
    """What a read_committed consumer keeps of a fetched partition."""
    aborted = [(a.producer_id, a.first_offset) for a in part.aborted_transactions]
    batches = list(records.iter_batches(part.records or b""))
    return [r.value for batch, skip in records.read_committed(batches, aborted) if skip is None for r in batch]


def latest(state, isolation):
    part = ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)
    body = ListOffsetsRequest(replica_id=-1, isolation_level=isolation,
                              topics=[ListOffsetsRequest.ListOffsetsTopic(name="t", partitions=[part])])
    return call(state, body, 5).topics[0].partitions[0].offset


def test_commit_and_abort_as_a_read_committed_consumer_sees_them(state):
    pid, epoch = init(state)
    assert add_partitions(state, pid, epoch) == [0]
    assert produce_txn(state, txn_batch(pid, epoch, 0, b"c1", b"c2")).error_code == 0
    open_part = fetch_committed(state)
    assert open_part.last_stable_offset == 0 and open_part.high_watermark == 2 and not open_part.records
    assert (latest(state, 0), latest(state, 1)) == (2, 0)
    assert end(state, pid, epoch, True) == 0
    assert end(state, pid, epoch, True) == 0  # a retry of the same end
    assert add_partitions(state, pid, epoch) == [0]
    produce_txn(state, txn_batch(pid, epoch, 2, b"a1"))
    assert end(state, pid, epoch, False) == 0
    assert end(state, pid, epoch, True) == errors.INVALID_TXN_STATE.code
    part = fetch_committed(state)
    assert part.last_stable_offset == part.high_watermark == 5  # two records, marker, one record, marker
    assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(pid, 3)]
    assert visible(part) == [b"c1", b"c2"]
    controls = [b for b in records.iter_batches(part.records) if b.is_control]
    assert [(b.base_offset, b.producer_id) for b in controls] == [(2, pid), (4, pid)]


def test_transaction_offsets_take_effect_only_on_commit(state):
    pid, epoch = init(state)

    def commit_offsets(offset):
        assert call(state, AddOffsetsToTxnRequest(transactional_id=TID, producer_id=pid, producer_epoch=epoch,
                                                  group_id="g"), 3).error_code == 0
        topic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="t", partitions=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=1, committed_offset=offset)])
        response = call(state, TxnOffsetCommitRequest(transactional_id=TID, group_id="g", producer_id=pid,
                                                      producer_epoch=epoch, generation_id_or_member_epoch=-1,
                                                      topics=[topic]), 3)
        assert response.topics[0].partitions[0].error_code == 0

    def committed():
        return call(state, OffsetFetchRequest(group_id="g", topics=None), 7).topics

    commit_offsets(7)
    assert committed() == []
    assert end(state, pid, epoch, False) == 0
    assert committed() == []
    commit_offsets(9)
    assert end(state, pid, epoch, True) == 0
    assert committed()[0].partitions[0].committed_offset == 9


def test_a_new_instance_fences_the_old_one_and_aborts_its_transaction(state):
    pid, epoch = init(state)
    add_partitions(state, pid, epoch)
    produce_txn(state, txn_batch(pid, epoch, 0, b"left open"))
    pid2, epoch2 = init(state)
    assert (pid2, epoch2) == (pid, epoch + 1)
    assert add_partitions(state, pid, epoch, version=1) == [errors.INVALID_PRODUCER_EPOCH.code]
    assert add_partitions(state, pid, epoch, version=3) == [errors.PRODUCER_FENCED.code]
    assert end(state, pid, epoch, True) == errors.PRODUCER_FENCED.code
    assert produce_txn(state, txn_batch(pid, epoch, 1, b"x")).error_code == errors.INVALID_PRODUCER_EPOCH.code
    part = fetch_committed(state)
    assert part.last_stable_offset == 2 and visible(part) == []  # the open transaction was aborted


def test_transactional_data_needs_the_partition_added(state):
    pid, epoch = init(state)
    add_partitions(state, pid, epoch, partitions=[0])
    # As Kafka 4 answers (tests/test_broker_differential.py): v11 knows TRANSACTION_ABORTABLE, older versions
    # get INVALID_TXN_STATE; from v12 the partition would join the transaction.
    assert produce_txn(state, txn_batch(pid, epoch, 0, b"v"), partition=1).error_code == \
        errors.TRANSACTION_ABORTABLE.code
    assert produce_txn(state, txn_batch(pid, epoch, 0, b"v"), partition=1, version=10).error_code == \
        errors.INVALID_TXN_STATE.code
    assert produce_txn(state, txn_batch(pid, epoch, 0, b"v"), tid="other").error_code == \
        errors.INVALID_PRODUCER_ID_MAPPING.code
    assert add_partitions(state, pid, epoch, partitions=[0, 9]) == [errors.OPERATION_NOT_ATTEMPTED.code,
                                                                   errors.UNKNOWN_TOPIC_OR_PARTITION.code]
    # transactional data with no transactional id: refused before anything is looked at, as Kafka refuses it
    assert produce(state, txn_batch(pid, epoch, 0, b"v")).error_code == \
        errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code


def test_verify_only_checks_membership(state):
    pid, epoch = init(state)
    add_partitions(state, pid, epoch, partitions=[0], version=5)
    topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="t", partitions=[0, 1])
    txn = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(transactional_id=TID, producer_id=pid,
                                                                   producer_epoch=epoch, verify_only=True,
                                                                   topics=[topic])
    response = call(state, AddPartitionsToTxnRequest(transactions=[txn]), 5)
    codes = [p.partition_error_code for p in response.results_by_transaction[0].topic_results[0].results_by_partition]
    assert codes == [0, errors.INVALID_TXN_STATE.code]


def test_a_transaction_open_at_a_crash_is_aborted_on_restart(tmp_path):
    state = make_state(tmp_path)
    create(state, "t")
    pid, epoch = init(state)
    add_partitions(state, pid, epoch)
    produce_txn(state, txn_batch(pid, epoch, 0, b"in flight"))
    state.cluster.metadata.close()  # no clean shutdown
    state = make_state(tmp_path)
    part = fetch_committed(state)
    assert part.last_stable_offset == part.high_watermark == 2 and visible(part) == []
    assert state.transactions.by_id[TID].state == "CompleteAbort"
    state.close()


def test_a_commit_a_crash_interrupted_is_finished_as_a_commit(tmp_path):
    state = make_state(tmp_path)
    create(state, "t")
    pid, epoch = init(state)
    add_partitions(state, pid, epoch)
    produce_txn(state, txn_batch(pid, epoch, 0, b"decided"))
    txn = state.transactions.by_id[TID]
    txn.state = "PrepareCommit"  # recorded, then the process died before the markers
    state.transactions.save(txn)
    state.cluster.metadata.close()
    state = make_state(tmp_path)
    assert visible(fetch_committed(state)) == [b"decided"]
    state.close()


def test_transactions_past_their_timeout_are_aborted(state):
    pid, epoch = init(state)
    add_partitions(state, pid, epoch)
    produce_txn(state, txn_batch(pid, epoch, 0, b"slow"))
    assert not state.transactions.expire(clock_ms())
    assert state.transactions.expire(clock_ms() + 61_000)
    assert visible(fetch_committed(state)) == []
    assert end(state, pid, epoch, True) == errors.PRODUCER_FENCED.code


def end_v2(state, pid, epoch, commit):
    response = call(state, EndTxnRequest(transactional_id=TID, producer_id=pid, producer_epoch=epoch,
                                         committed=commit), 5)
    return response.error_code, response.producer_id, response.producer_epoch


def test_version_2_ends_past_the_last_epoch_under_a_new_producer_id(state):
    """The epoch bump of the end at the last usable epoch (32766): markers at 32767, then a new producer id at
    epoch 0, and the end retried from the old id is answered the same (Kafka's rotation on overflow)."""
    pid, _ = init(state)
    txn = state.transactions.by_id[TID]
    txn.epoch = 32766
    assert produce_txn(state, txn_batch(pid, 32766, 0, b"last"), version=12).error_code == 0
    code, new_pid, new_epoch = end_v2(state, pid, 32766, True)
    assert code == 0 and new_pid != pid and new_epoch == 0
    markers = [b for b in records.iter_batches(fetch_committed(state).records) if b.is_control]
    assert [(b.producer_id, b.producer_epoch) for b in markers] == [(pid, 32767)]
    assert end_v2(state, pid, 32766, True) == (0, new_pid, 0)
    assert produce_txn(state, txn_batch(new_pid, 0, 0, b"next"), version=12).error_code == 0


def test_version_2_a_timed_out_transaction_is_fenced_by_one_bump(state):
    pid, epoch = init(state)
    assert produce_txn(state, txn_batch(pid, epoch, 0, b"slow"), version=12).error_code == 0
    assert state.transactions.expire(clock_ms() + 61_000)
    markers = [b for b in records.iter_batches(fetch_committed(state).records) if b.is_control]
    assert [b.producer_epoch for b in markers] == [epoch + 1]
    # The producer's own abort, from the epoch it had, is a retry of the abort that happened: answered as done.
    assert end_v2(state, pid, epoch, False) == (0, pid, epoch + 1)
    assert end_v2(state, pid, epoch, True)[0] == errors.INVALID_TXN_STATE.code


def test_version_2_an_end_a_crash_interrupted_is_finished_at_the_bumped_epoch(tmp_path):
    state = make_state(tmp_path)
    create(state, "t")
    pid, epoch = init(state)
    produce_txn(state, txn_batch(pid, epoch, 0, b"decided"), version=12)
    txn = state.transactions.by_id[TID]
    txn.last_producer, txn.epoch, txn.state = (pid, epoch), epoch + 1, "PrepareCommit"  # as an EndTxn v5 records
    state.transactions.save(txn)
    state.cluster.metadata.close()
    state = make_state(tmp_path)
    part = fetch_committed(state)
    assert visible(part) == [b"decided"]
    assert [b.producer_epoch for b in records.iter_batches(part.records) if b.is_control] == [epoch + 1]
    assert end_v2(state, pid, epoch, True) == (0, pid, epoch + 1)
    state.close()


@pytest.mark.parametrize("key", [ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.TXN_OFFSET_COMMIT,
                                 ApiKey.END_TXN, ApiKey.INIT_PRODUCER_ID])
def test_every_transaction_api_at_every_version(state, key):
    for version in HANDLERS[key].versions:
        tid = f"v{key}-{version}"
        pid, epoch = init(state, tid=tid)
        assert add_partitions(state, pid, epoch, version=version if key == ApiKey.ADD_PARTITIONS_TO_TXN else 3,
                              tid=tid) == [0]
        if key == ApiKey.ADD_OFFSETS_TO_TXN or key == ApiKey.TXN_OFFSET_COMMIT:
            assert call(state, AddOffsetsToTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                                      group_id="g"),
                        version if key == ApiKey.ADD_OFFSETS_TO_TXN else 3).error_code == 0
        if key == ApiKey.TXN_OFFSET_COMMIT:
            topic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="t", partitions=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1)])
            body = TxnOffsetCommitRequest(transactional_id=tid, group_id="g", producer_id=pid, producer_epoch=epoch,
                                          topics=[topic])
            assert call(state, body, version).topics[0].partitions[0].error_code == 0
        if key == ApiKey.INIT_PRODUCER_ID:
            response = call(state, InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=1000), version)
            assert (response.error_code, response.producer_epoch) == (0, epoch + 1)
            continue
        assert end(state, pid, epoch, True, version=version if key == ApiKey.END_TXN else 3, tid=tid) == 0


def described(state):
    """What kafka-transactions shows: DescribeTransactions of TID and DescribeProducers of t-0, as plain data."""
    from kafkaproto.messages import DescribeProducersRequest, DescribeTransactionsRequest
    txn = call(state, DescribeTransactionsRequest(transactional_ids=[TID]), 0).transaction_states[0]
    producers = call(state, DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
        name="t", partition_indexes=[0])]), 0).topics[0].partitions[0].active_producers
    return txn.to_dict(), [p.to_dict() for p in producers]


def test_what_kafka_transactions_shows_survives_a_restart(tmp_path):
    """The state, start time and partitions of a transaction, and each producer's last sequence, timestamp,
    coordinator epoch and open transaction, read again from the logs after a clean restart."""
    from kafkaproto.messages import WriteTxnMarkersRequest
    state = make_state(tmp_path)
    create(state, "t", partitions=2)
    pid, epoch = init(state)
    assert add_partitions(state, pid, epoch, partitions=(0, 1)) == [0, 0]
    assert produce_txn(state, txn_batch(pid, epoch, 0, b"a", b"b")).error_code == 0
    other = call(state, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4).producer_id
    marker = WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=other, producer_epoch=0, transaction_result=False, coordinator_epoch=3,
        topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name="t", partition_indexes=[0])])
    written = call(state, WriteTxnMarkersRequest(markers=[marker]), 1).markers[0].topics[0].partitions[0]
    assert written.error_code == 0
    before = described(state)
    txn, producers = before
    assert txn["transaction_state"] == "Ongoing" and txn["transaction_start_time_ms"] > 0
    assert txn["topics"] == [{"topic": "t", "partitions": [0, 1]}]
    by_id = {p["producer_id"]: p for p in producers}
    assert (by_id[pid]["last_sequence"], by_id[pid]["last_timestamp"], by_id[pid]["current_txn_start_offset"]) == (
        1, 1_700_000_000_000, 0)
    assert (by_id[other]["coordinator_epoch"], by_id[other]["last_sequence"]) == (3, -1)
    state.close()
    state = make_state(tmp_path)
    try:
        # a transaction open at a restart is aborted then (test_a_transaction_open_at_a_crash_is_aborted_on_restart)
        txn_after, producers_after = described(state)
        assert txn_after["transaction_start_time_ms"] == txn["transaction_start_time_ms"]
        by_id_after = {p["producer_id"]: p for p in producers_after}
        assert by_id_after[other] == by_id[other]
        assert by_id_after[pid]["current_txn_start_offset"] == -1
    finally:
        state.close()


def log_values(state):
    """(transactional id, state, partitions, client transactions version, value version) of every record of the
    transaction coordinator's log in Kafka's format, decoded as Kafka's records."""
    from kafkaproto.coordinator_records import decode_transaction_key, decode_transaction_value
    from kafkaproto.broker.state.transactions import STATES
    out = []
    for segment in state.transactions.logs.logs[0].segments:
        for b in records.iter_batches(segment.read(0, segment.size)):
            for r in b:
                if bytes(r.key[:2]) != b"\x00\x00":  # a record of the older JSON layout
                    continue
                value, version = decode_transaction_value(r.value)
                out.append((decode_transaction_key(r.key), STATES[value.transaction_status],
                            None if value.transaction_partitions is None else
                            [(p.topic, p.partition_ids) for p in value.transaction_partitions],
                            value.client_transaction_version, version))
    return out


def test_the_log_holds_kafkas_records_and_a_commit_interrupted_keeps_its_offsets(tmp_path):
    """Every change is a TransactionLogKey and TransactionLogValue (v1, as Kafka writes them with transactions
    version 2 finalized): Empty without partitions, then Ongoing with them (and __consumer_offsets' once a group
    joined), then the prepare and the end. The offsets a transaction will commit are kept in the log too: a
    commit a crash interrupted commits them after the restart."""
    state = make_state(tmp_path)
    create(state, "t", partitions=2)
    pid, epoch = init(state)
    assert add_partitions(state, pid, epoch, partitions=(1, 0)) == [0, 0]
    assert call(state, AddOffsetsToTxnRequest(transactional_id=TID, producer_id=pid, producer_epoch=epoch,
                                              group_id="g"), 3).error_code == 0
    topic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="t", partitions=[
        TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=1, committed_offset=12,
                                                               committed_metadata="m")])
    assert call(state, TxnOffsetCommitRequest(transactional_id=TID, group_id="g", producer_id=pid,
                                              producer_epoch=epoch, generation_id_or_member_epoch=-1,
                                              topics=[topic]), 3).topics[0].partitions[0].error_code == 0
    assert log_values(state) == [
        (TID, "Empty", None, 0, 1),
        (TID, "Ongoing", [("t", [0, 1])], 0, 1),
        (TID, "Ongoing", [("__consumer_offsets", [0]), ("t", [0, 1])], 0, 1),
        (TID, "Ongoing", [("__consumer_offsets", [0]), ("t", [0, 1])], 0, 1)]
    txn = state.transactions.by_id[TID]
    txn.state = "PrepareCommit"  # recorded, then the process died before the markers
    state.transactions.save(txn)
    state.cluster.metadata.close()
    state = make_state(tmp_path)
    try:
        assert call(state, OffsetFetchRequest(group_id="g", topics=None), 7).topics[0].partitions[0].to_dict()[
            "committed_offset"] == 12
        assert [row[1] for row in log_values(state)[-3:]] == ["PrepareCommit", "PrepareCommit", "CompleteCommit"]
        assert log_values(state)[-1][2] == []
    finally:
        state.close()


def test_version_2_the_log_records_the_client_version_and_a_retried_end_survives_a_restart(tmp_path):
    """A producer of transactions version 2 (Produce v12, EndTxn v5) is recorded as Kafka records it
    (ClientTransactionVersion 2); after a restart an EndTxn retried with the epoch before the bump is answered
    as the first one was."""
    state = make_state(tmp_path)
    create(state, "t")
    pid, epoch = init(state, version=5)
    assert produce_txn(state, txn_batch(pid, epoch, 0, b"v2"), version=12).error_code == 0
    response = call(state, EndTxnRequest(transactional_id=TID, producer_id=pid, producer_epoch=epoch,
                                         committed=True), 5)
    assert response.error_code == 0 and response.producer_epoch == epoch + 1
    assert [row[1:4] for row in log_values(state)] == [
        ("Empty", None, 0), ("Ongoing", [("t", [0])], 2), ("PrepareCommit", [("t", [0])], 2),
        ("CompleteCommit", [], 2)]
    state.close()
    state = make_state(tmp_path)
    try:
        again = call(state, EndTxnRequest(transactional_id=TID, producer_id=pid, producer_epoch=epoch,
                                          committed=True), 5)
        assert (again.error_code, again.producer_id, again.producer_epoch) == (0, pid, epoch + 1)
        assert end(state, pid, epoch, False, version=5) == errors.INVALID_TXN_STATE.code
    finally:
        state.close()


def test_a_log_in_the_older_json_format_loads_and_is_written_again_once(tmp_path):
    """Before the log held Kafka's records each value was JSON under the bare transactional id: such a log loads
    with nothing lost (the producer, state, partitions, groups, pending offsets, the producer before the last
    bump), is written again in Kafka's format at that start, and not at the next."""
    import json
    import os
    from kafkaproto.broker.state.log import PartitionLog, parse_batches
    from kafkaproto.broker.state.transactions import STATE_DIR
    old = {"pid": 4, "epoch": 3, "timeout": 60000, "state": "PrepareCommit", "partitions": [["t", 0]],
           "groups": ["g"], "offsets": {"g": [["t", 0, 21, -1, "md"]]}, "last": [4, 2], "start": 1_700_000_000_000}
    gone = {"pid": 5, "epoch": 0, "timeout": 1000, "state": "Empty", "partitions": [], "groups": [], "offsets": {},
            "last": None, "start": -1}
    state = make_state(tmp_path)
    create(state, "t")
    state.close()
    txn_log = PartitionLog(os.path.join(str(tmp_path), STATE_DIR), recover=True)
    builder = records.RecordBatchBuilder()
    builder.append(b"old", json.dumps(old).encode(), timestamp=1)
    builder.append(b"gone", json.dumps(gone).encode(), timestamp=1)
    builder.append(b"gone", None, timestamp=1)
    data = builder.build()
    txn_log.append(data, parse_batches(data))
    txn_log.close()
    state = make_state(tmp_path)
    try:
        assert set(state.transactions.by_id) == {"old"}
        assert [row[:4] for row in log_values(state)[-2:]] == [
            ("old", "PrepareCommit", [("__consumer_offsets", [0]), ("t", [0])], 2),
            ("old", "CompleteCommit", [], 2)]
        txn = state.transactions.by_id["old"]
        assert (txn.producer_id, txn.epoch, txn.start_time_ms, txn.last_producer) == (4, 3, 1_700_000_000_000,
                                                                                        (4, 2))
        assert call(state, OffsetFetchRequest(group_id="g", topics=None), 7).topics[0].partitions[0].to_dict()[
            "committed_offset"] == 21
        written = state.transactions.logs.logs[0].log_end_offset
    finally:
        state.close()
    state = make_state(tmp_path)
    try:
        assert state.transactions.logs.logs[0].log_end_offset == written
        assert state.transactions.by_id["old"].state == "CompleteCommit"
    finally:
        state.close()


def test_a_record_of_no_known_state_is_skipped(tmp_path, caplog):
    """A value whose TransactionStatus is none of Kafka's states (or whose bytes do not read) is logged and
    skipped; the records after it load."""
    import os
    from kafkaproto.coordinator_records import TransactionLogValue, encode_transaction_key, encode_transaction_value
    from kafkaproto.broker.state.log import PartitionLog, parse_batches
    from kafkaproto.broker.state.transactions import STATE_DIR
    txn_log = PartitionLog(os.path.join(str(tmp_path), STATE_DIR), recover=True)
    builder = records.RecordBatchBuilder()
    for tid, status in (("bad", -1), ("worse", 8)):
        builder.append(encode_transaction_key(tid), encode_transaction_value(TransactionLogValue(
            producer_id=1, transaction_status=status)), timestamp=1)
    builder.append(encode_transaction_key("torn"), b"\x00\x01\x00", timestamp=1)
    builder.append(encode_transaction_key("good"), encode_transaction_value(TransactionLogValue(
        producer_id=2, producer_epoch=3, transaction_timeout_ms=1000, transaction_status=4,
        transaction_partitions=[])), timestamp=1)
    data = builder.build()
    txn_log.append(data, parse_batches(data))
    txn_log.close()
    state = make_state(tmp_path)
    try:
        assert set(state.transactions.by_id) == {"good"}
        assert state.transactions.by_id["good"].state == "CompleteCommit"
        assert caplog.text.count("is not a transaction's state") == 3
    finally:
        state.close()
