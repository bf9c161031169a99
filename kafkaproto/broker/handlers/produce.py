"""Produce: append record batches to partition logs, by topic name or (v13) by topic ID.

Each partition's data must be whole magic-2 batches with good CRCs
(CORRUPT_MESSAGE otherwise), each within the topic's max.message.bytes
(MESSAGE_TOO_LARGE). Idempotent batches pass the producer sequence checks
first: a retry of one of the last five batches is acknowledged with the
offset it got the first time, a gap is OUT_OF_ORDER_SEQUENCE_NUMBER.
Transactional batches must come from the transaction's current producer;
up to v11 for a partition added with AddPartitionsToTxn, from v12
(transactions version 2) the partition joins the transaction on its own;
control batches come from the broker only (INVALID_RECORD). acks 0, 1
and -1 all append before answering (there are no followers to wait for); with
acks 0 the server sends no response. Versions 0-2 are advertised, as Kafka 4
does for old librdkafka's sake (KAFKA-18659), but not served: such a request
closes the connection, as it does on Kafka 4.
"""

import time

from ... import errors
from ...exceptions import RecordsError
from ...records import iter_batches
from ...messages import ApiKey, ProduceResponse
from ..dispatch import handles
from ..state.cluster import READ_WRITE
from ..state.log import CONTROL, TRANSACTIONAL, parse_batches
from ..state.transactions import ONGOING, PREPARE_ABORT, PREPARE_COMMIT

IMPLICIT_ADD = 12  # the first Produce version whose transactional batches add their partition (KIP-890)
PartitionResult = ProduceResponse.PartitionProduceResponse


def _result(index, error, base_offset=-1, log_start_offset=-1, message=None, append_time=-1):
    return PartitionResult(index=index, error_code=error.code, base_offset=base_offset,
                           log_append_time_ms=append_time, log_start_offset=log_start_offset, record_errors=[],
                           error_message=message)


def produce_partition(state, topic, index, records, transactional_id, version):
    partition, error = state.partition(topic, index)
    if partition is None:
        return _result(index, error)
    if partition.mode != READ_WRITE:  # being deleted (partition deletion): the proposal's error
        return _result(index, errors.LEADER_NOT_AVAILABLE, message="the partition is being deleted and is read-only")
    config = state.cluster.topic_config(topic)
    max_bytes = int(config["max.message.bytes"])
    try:
        batches = parse_batches(records if records is not None else b"", max_batch_bytes=max_bytes)
    except RecordsError as e:
        error = errors.MESSAGE_TOO_LARGE if "over the limit" in str(e) else errors.CORRUPT_MESSAGE
        return _result(index, error, message=str(e))
    attributes = 0
    for batch in batches:
        attributes |= batch.attributes
    if attributes & CONTROL:
        return _result(index, errors.INVALID_RECORD, message="control batches are written by the broker only")
    if attributes & TRANSACTIONAL:
        error = _transaction_error(state, transactional_id, topic.name, index, batches, version)
        if error is not errors.NONE:
            return _result(index, error, message=f"{error.name} for a transactional batch")
    if "compact" in config["cleanup.policy"] and not _all_keyed(records):
        return _result(index, errors.INVALID_RECORD, message=f"a record without a key, for compacted topic "
                                                             f"{topic.name}")
    producers = state.producers[partition]
    duplicate = None
    for batch in batches:
        error, duplicate = producers.check(batch)
        if error is not errors.NONE:
            return _result(index, error, log_start_offset=partition.log.log_start_offset)
    if duplicate is not None and len(batches) == 1:
        # Kafka answers a retry with the first append's offset and, oddly, its timestamp as the append time.
        offset, timestamp = duplicate
        return _result(index, errors.NONE, offset, partition.log.log_start_offset, append_time=timestamp)
    offset = state.append(partition, records, batches)
    return _result(index, errors.NONE, offset, partition.log.log_start_offset)


def _all_keyed(data):
    """Every record has a key (compacted topics need one); this reads the records."""
    return all(record.key is not None for batch in iter_batches(data) if not batch.is_control for record in batch)


def _transaction_error(state, transactional_id, topic, index, batches, version):
    """Transactional batches must come from the transaction's producer at its epoch. From v12 (transactions
    version 2) the partition joins the transaction here, as Kafka's broker adds it with the coordinator; before,
    it must have been added with AddPartitionsToTxn (TRANSACTION_ABORTABLE at v11, INVALID_TXN_STATE before)."""
    txn = state.transactions.by_id.get(transactional_id) if transactional_id is not None else None
    for batch in batches:
        if txn is None or not batch.is_transactional or batch.producer_id != txn.producer_id:
            return errors.INVALID_TXN_STATE if txn is not None else errors.INVALID_PRODUCER_ID_MAPPING
        if batch.producer_epoch != txn.epoch and (batch.producer_epoch < txn.epoch or version >= IMPLICIT_ADD):
            return errors.INVALID_PRODUCER_EPOCH
    if (topic, index) in txn.partitions and txn.state == ONGOING:
        return errors.NONE
    if version < IMPLICIT_ADD:
        return errors.TRANSACTION_ABORTABLE if version == IMPLICIT_ADD - 1 else errors.INVALID_TXN_STATE
    if txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
        return errors.CONCURRENT_TRANSACTIONS
    if txn.state != ONGOING:
        txn.state = ONGOING
        txn.started = time.monotonic()
    txn.partitions.add((topic, index))
    state.transactions.save(txn)
    return errors.NONE


@handles(ApiKey.PRODUCE, versions=range(3, 14), advertised_min=0)
def produce(ctx, request):
    state = ctx.state
    if request.acks not in (-1, 0, 1):
        error = errors.INVALID_REQUIRED_ACKS
        return _response([(t, [_result(p.index, error) for p in t.partition_data]) for t in request.topic_data])
    out = []
    for item in request.topic_data:
        by_id = ctx.version >= 13
        topic, error = state.topic(None if by_id else item.name, item.topic_id if by_id else None)
        if topic is None:
            out.append((item, [_result(p.index, error) for p in item.partition_data]))
            continue
        out.append((item, [produce_partition(state, topic, p.index, p.records, request.transactional_id, ctx.version)
                           for p in item.partition_data]))
    return _response(out)


def _response(results):
    return ProduceResponse(responses=[
        ProduceResponse.TopicProduceResponse(name=item.name, topic_id=item.topic_id, partition_responses=partitions)
        for item, partitions in results], throttle_time_ms=0)
