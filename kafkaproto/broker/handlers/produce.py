"""Produce: append record batches to partition logs, by topic name or (v13) by topic ID.

Each partition's data is checked as Apache Kafka's broker checks it, and in its
order, before anything is appended (records.produced_batches does it in one pass):
- the request (the partition answered with no log start offset): exactly one
  magic-2 batch (INVALID_RECORD; an incomplete batch after it is dropped, as
  Kafka drops it), no zstd before v7 (UNSUPPORTED_COMPRESSION_TYPE), no unknown
  codec before v7 (the whole request UNKNOWN_SERVER_ERROR, as Kafka fails it);
- the batch: base offset 0 (INVALID_RECORD), within the topic's
  max.message.bytes (MESSAGE_TOO_LARGE), a good CRC (CORRUPT_MESSAGE), a known
  codec and a payload that decompresses (UNKNOWN_SERVER_ERROR), a record count
  that matches its offsets and its records, a sequence wherever there is a
  producer id, and every record well formed (INVALID_RECORD);
- each record: a key on a compacted topic (INVALID_RECORD), a timestamp within
  message.timestamp.before.max.ms / after.max.ms of the broker's clock
  (INVALID_TIMESTAMP); from v8 record_errors lists every record refused, and
  error_message sums them up; in a compressed batch, offset deltas 0..n-1
  (UNKNOWN_SERVER_ERROR, which is what Kafka answers).
A compressed batch that decompresses to more than the 64 MiB cap is refused
with MESSAGE_TOO_LARGE (Kafka takes it; this broker's own readers could not).

Idempotent batches then pass the producer sequence checks: a retry of one of
the last five batches is acknowledged with the offset it got the first time, a
gap is OUT_OF_ORDER_SEQUENCE_NUMBER. Transactional batches must come from the
transaction's current producer; up to v11 for a partition added with
AddPartitionsToTxn, from v12 (transactions version 2) the partition joins the
transaction on its own; control batches come from the broker only
(INVALID_RECORD). acks 0, 1 and -1 all append before answering (there are no
followers to wait for); with acks 0 the server sends no response. Versions 0-2
are advertised, as Kafka 4 does for old librdkafka's sake (KAFKA-18659), but
not served: such a request closes the connection, as it does on Kafka 4.

With an authorizer, a request with transactional data needs WRITE on its transactional id (else every
partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and each topic WRITE (else TOPIC_AUTHORIZATION_FAILED,
whether the topic exists or not).
"""


from typing import NamedTuple

from ... import errors
from ...exceptions import RecordsError
from ...records import produced_batches
from ...records.header import ATTRIBUTES_OFFSET, CODEC_MASK, LENGTH_OFFSET, LOG_OVERHEAD, MAGIC_OFFSET
from ...messages import ApiKey, ProduceResponse
from ..topic_configs import segment_size
from ..dispatch import Close, handles
from ..state.cluster import INTERNAL_TOPICS, READ_WRITE
from ..state.log import CONTROL, TRANSACTIONAL, Batch, StorageError
from ..state.acls import TOPIC, TRANSACTIONAL_ID, WRITE
from ..state.quotas import PRODUCE as PRODUCER_BYTE_RATE
from ..state.clock import clock_ms

ZSTD_VERSION = 7  # the first Produce version that may carry zstd (KIP-110)
ZSTD = 4
PartitionResult = ProduceResponse.PartitionProduceResponse
RecordError = ProduceResponse.BatchIndexAndErrorMessage

# What a refusal of produced_batches is answered with, by its kind: the error, and whether the answer carries the
# log start offset. Kafka's request handler refuses the framing, its log the rest, and only the log's answers
# (but for a size or a CRC) say where the log starts.
REFUSED = {
    "truncated": (errors.CORRUPT_MESSAGE, False),
    "corrupt": (errors.CORRUPT_MESSAGE, False),
    "magic": (errors.INVALID_RECORD, False),
    "empty": (errors.INVALID_RECORD, False),
    "multiple": (errors.INVALID_RECORD, False),
    "too_large": (errors.MESSAGE_TOO_LARGE, False),
    "compression": (errors.UNKNOWN_SERVER_ERROR, True),
    "invalid": (errors.INVALID_RECORD, True),
    "offsets": (errors.UNKNOWN_SERVER_ERROR, True),
    "key": (errors.INVALID_RECORD, True),
    "timestamp": (errors.INVALID_TIMESTAMP, True),
}


def _result(index, error, base_offset=-1, log_start_offset=-1, message=None, append_time=-1, record_errors=()):
    return PartitionResult(index=index, error_code=error.code, base_offset=base_offset,
                           log_append_time_ms=append_time, log_start_offset=log_start_offset,
                           record_errors=[RecordError(batch_index=i, batch_index_error_message=m)
                                          for i, m in record_errors] if record_errors else [],
                           error_message=message)


def _refused(index, e, partition):
    """The answer to data produced_batches refused."""
    error, with_start = REFUSED.get(e.kind, (errors.CORRUPT_MESSAGE, False))
    message = str(e)
    if e.record_errors:
        shown = "; ".join(f"record {i}: {reason}" for i, reason in e.record_errors[:3])
        message = f"{e.reason}: {shown}{'; ...' if len(e.record_errors) > 3 else ''}"
    return _result(index, error, log_start_offset=partition.log.log_start_offset if with_start else -1,
                   message=message, record_errors=e.record_errors)


def _first_codec(data):
    """The compression codec of data's first batch where Kafka's request handler reads it (a whole magic-2 batch
    comes first), else None."""
    if data is None or len(data) < 23:
        return None
    length = int.from_bytes(data[LENGTH_OFFSET:LENGTH_OFFSET + 4], "big", signed=True)
    if length < 14 or length + LOG_OVERHEAD > len(data) or data[MAGIC_OFFSET] != 2:
        return None
    return data[ATTRIBUTES_OFFSET + 1] & CODEC_MASK


class _Limits(NamedTuple):
    """The topic configs each Produce checks, parsed."""
    max_message_bytes: int
    compacted: bool
    create_time: bool
    before_ms: int
    after_ms: int
    segment_bytes: int


def _limits(config):
    return _Limits(int(config["max.message.bytes"]), "compact" in config["cleanup.policy"],
                   config["message.timestamp.type"] == "CreateTime", int(config["message.timestamp.before.max.ms"]),
                   int(config["message.timestamp.after.max.ms"]), segment_size(config))


def produce_partition(state, topic, index, records, transactional_id, version):
    partition, error = state.partition(topic, index)
    if partition is None:
        return _result(index, error)
    if partition.mode != READ_WRITE:  # being deleted (partition deletion): the proposal's error
        return _result(index, errors.LEADER_NOT_AVAILABLE, message="the partition is being deleted and is read-only")
    limits = state.cluster.derived_config(topic, _limits)
    data = records if records is not None else b""
    if version < ZSTD_VERSION and _first_codec(data) == ZSTD:
        return _result(index, errors.UNSUPPORTED_COMPRESSION_TYPE,
                       message=f"zstd needs Produce v{ZSTD_VERSION} or later, not v{version}")
    try:
        found = produced_batches(
            data, limits.max_message_bytes, client=True, single=True, allow_partial=True,
            require_keys=limits.compacted, now_ms=state.now_ms() if limits.create_time else None,
            timestamp_before_ms=limits.before_ms, timestamp_after_ms=limits.after_ms)
    except RecordsError as e:
        return _refused(index, e, partition)
    batches = [Batch(header, position) for header, position in found]
    end = batches[-1].position + batches[-1].size
    if end < len(data):
        data = memoryview(data)[:end]  # an incomplete batch after the whole ones is left out, as Kafka leaves it
    attributes = 0
    for batch in batches:
        attributes |= batch.attributes
    if attributes & CONTROL:
        return _result(index, errors.INVALID_RECORD, message="control batches are written by the broker only")
    if attributes & TRANSACTIONAL:
        error = state.transactions.produce_error(clock_ms(), transactional_id, topic.name, index, batches, version)
        if error is not errors.NONE:
            return _result(index, error, message=f"{error.name} for a transactional batch")
    if len(data) > limits.segment_bytes:  # Kafka's log takes no append larger than one segment
        return _result(index, errors.RECORD_LIST_TOO_LARGE,
                       message=f"{len(data)} bytes of batches are more than a segment of this topic holds "
                               f"({limits.segment_bytes})")
    producers = partition.producers
    duplicate = None
    for batch in batches:
        error, duplicate = producers.check(batch)
        if error is not errors.NONE:
            return _result(index, error, log_start_offset=partition.log.log_start_offset)
    if duplicate is not None and len(batches) == 1:
        # Kafka answers a retry with the first append's offset and, oddly, its timestamp as the append time.
        offset, timestamp = duplicate
        return _result(index, errors.NONE, offset, partition.log.log_start_offset, append_time=timestamp)
    try:
        offset = state.append(partition, data, batches)
    except StorageError as e:  # the log is cut back to where the append began: nothing half made
        return _result(index, errors.KAFKA_STORAGE_ERROR, message=str(e))
    return PartitionResult(index=index, base_offset=offset, log_start_offset=partition.log.log_start_offset)


@handles(ApiKey.PRODUCE, versions=range(3, 14), advertised_min=0)
def produce(ctx, request):
    response = _produce(ctx, request)
    # Over its quota, the producer is told to wait, and the connection is muted meanwhile (with acks 0 it is
    # only muted), as Kafka throttles it.
    response.throttle_time_ms = ctx.throttled(PRODUCER_BYTE_RATE, sum(
        len(p.records) for t in request.topic_data for p in t.partition_data if p.records is not None))
    if request.acks == 0:
        # No answer is sent with acks 0, so a failure is told the one way Kafka has: the connection is closed,
        # and the producer refreshes its metadata when it reconnects.
        failed = {errors.by_code(p.error_code).name for t in response.responses for p in t.partition_responses
                  if p.error_code != errors.NONE.code}
        if failed:
            return Close(f"a Produce with acks=0 failed ({', '.join(sorted(failed))})")
    return response


def _produce(ctx, request):
    state = ctx.state
    if request.acks not in (-1, 0, 1):
        error = errors.INVALID_REQUIRED_ACKS
        return _response([(t, [_result(p.index, error) for p in t.partition_data]) for t in request.topic_data])
    if ctx.version < ZSTD_VERSION and _unknown_codec(state, request, ctx.version):
        # Kafka's request handler reads the codec of each partition's batch before v7, and one it does not know
        # fails the whole request.
        error = errors.UNKNOWN_SERVER_ERROR
        return _response([(t, [_result(p.index, error) for p in t.partition_data]) for t in request.topic_data])
    if _has_transactional(request) and not (request.transactional_id is not None and ctx.allowed(
            WRITE, TRANSACTIONAL_ID, request.transactional_id)):
        error = errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return _response([(t, [_result(p.index, error) for p in t.partition_data]) for t in request.topic_data])
    out = []
    for item in request.topic_data:
        by_id = ctx.version >= 13
        topic, error = state.topic(None if by_id else item.name, item.topic_id if by_id else None)
        name = topic.name if by_id and topic is not None else item.name
        if name is not None and not ctx.allowed(WRITE, TOPIC, name):
            topic, error = None, errors.TOPIC_AUTHORIZATION_FAILED
        elif topic is None and not by_id and item.name in INTERNAL_TOPICS:
            error = errors.INVALID_TOPIC_EXCEPTION  # Kafka's answer: clients never append to internal topics
        if topic is None:
            out.append((item, [_result(p.index, error) for p in item.partition_data]))
            continue
        if topic.is_internal:  # an internal topic, once its coordinator made it: written by the coordinator only
            out.append((item, [_result(p.index, errors.INVALID_TOPIC_EXCEPTION if 0 <= p.index < len(topic.partitions)
                                       else errors.UNKNOWN_TOPIC_OR_PARTITION) for p in item.partition_data]))
            continue
        out.append((item, [produce_partition(state, topic, p.index, p.records, request.transactional_id, ctx.version)
                           for p in item.partition_data]))
    return _response(out)


def _has_transactional(request):
    """Whether a partition's data begins with a transactional batch (Kafka authorizes the transactional id of
    such a request before anything else)."""
    for item in request.topic_data:
        for p in item.partition_data:
            data = p.records
            if data is not None and len(data) > ATTRIBUTES_OFFSET + 1 and data[MAGIC_OFFSET] == 2 and (
                    data[ATTRIBUTES_OFFSET + 1] & TRANSACTIONAL):
                return True
    return False


def _unknown_codec(state, request, version):
    """Whether a partition that exists is sent a batch whose codec is none that Kafka knows."""
    for item in request.topic_data:
        topic, _ = state.topic(None if version >= 13 else item.name, item.topic_id if version >= 13 else None)
        if topic is None:
            continue
        for p in item.partition_data:
            codec = _first_codec(p.records)
            if codec is not None and codec > ZSTD and state.partition(topic, p.index)[0] is not None:
                return True
    return False


def _response(results):
    return ProduceResponse(responses=[
        ProduceResponse.TopicProduceResponse(name=item.name, topic_id=item.topic_id, partition_responses=partitions)
        for item, partitions in results], throttle_time_ms=0)
