"""Produce checks every batch as Apache Kafka's broker does before it stores or acknowledges anything: the framing
of the request, each batch's header, every record inside (decompressing compressed batches), and, record by
record, the keys of compacted topics and the timestamps' distance from the broker's clock. The answers (error
codes, log start offsets, record_errors) are Kafka 4.3's; tests/test_broker_differential.py compares them with
Kafka 3.9.2 and 4.3.1 case by case."""

import tracemalloc

import pytest

from kafkaproto import errors, records
from kafkaproto.broker import Broker
from kafkaproto.messages import ProduceRequest
import raw_batches
from raw_batches import field, record, zigzag
from test_broker_handlers import call, create, fetch, make_state
from test_kafka_broker import RawClient

# The broker is the same code over either codec implementation (conftest.py: the pure-Python pass).
pytestmark = pytest.mark.above_the_codecs

NOW = 1_800_000_000_000


@pytest.fixture
def state(tmp_path):
    state = make_state(tmp_path)
    state.now_ms = lambda: NOW
    yield state
    state.close()


def batch(recs, **options):
    """A batch (raw_batches.batch) stamped at NOW, the time this module's broker reads."""
    return raw_batches.batch(recs, **{"base_ts": NOW, **options})


def zstd_bomb(size, key=b"k"):
    return raw_batches.zstd_bomb(size, key, base_ts=NOW)


KEYED = [record(key=b"k%d" % i, offset_delta=i) for i in range(3)]


def produce(state, data, topic="t", partitions=(0,), version=9):
    body = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=p, records=data) for p in partitions])])
    return call(state, body, version).responses[0].partition_responses


def answer(state, data, **options):
    """(error name, log start offset) of a one-partition Produce, and the batch indexes of its record_errors."""
    (part,) = produce(state, data, **options)
    return errors.by_code(part.error_code).name, part.log_start_offset, [e.batch_index for e in
                                                                                  part.record_errors or ()]


def stored(state, topic="t"):
    return fetch(state, topic=topic).responses[0].partitions[0].high_watermark


def test_records_that_lie_under_a_good_crc_are_refused(state):
    """Kafka walks every record of a batch (INVALID_RECORD); this broker stored them, and every consumer failed."""
    create(state, "t")
    cases = [
        batch(KEYED[:2], count=3),                                          # fewer records than the count
        batch(KEYED + [record(offset_delta=3)], count=3),                   # more
        batch(KEYED[:2], count=2, last_delta=2),                            # count and last offset disagree
        batch([b"\x07garbage" * 3], count=3),                               # garbage
        batch([record(size=100)]),                                          # a record longer than the batch
        batch([record(body=b"\0\0\0" + zigzag(50) + b"k", size=5) + b"\0" * 60]),  # a key longer than its record
        batch([record(body=b"\0\0\0" + field(b"k") + field(b"v") + zigzag(-1))]),  # a negative header count
        batch([record(body=b"\0\0\0" + field(b"k") + field(b"v") + b"\0\0")]),    # a byte after the headers
        batch([record(body=b"\0" + b"\xff" * 10 + b"\x01\0" + field(b"k") + field(b"v") + b"\0")]),  # a long varint
        batch([b"\0"]),                                                     # a record of no bytes
        batch(KEYED[:2], count=3, codec=3),                                 # compressed: fewer records
        batch([b"\x07garbage" * 3], count=3, codec=1),                      # compressed garbage
        batch([], count=0),                                                 # no records
    ]
    for data in cases:
        assert answer(state, data) == ("INVALID_RECORD", 0, []), data
    assert stored(state) == 0
    assert answer(state, batch(KEYED)) == ("NONE", 0, [])
    assert answer(state, batch(KEYED, codec=3)) == ("NONE", 0, [])


def test_codecs_kafka_does_not_know_and_payloads_that_do_not_decompress(state):
    create(state, "t", partitions=2)
    assert answer(state, batch(KEYED, codec=7)) == ("UNKNOWN_SERVER_ERROR", 0, [])
    assert answer(state, batch(KEYED, codec=5), version=7) == ("UNKNOWN_SERVER_ERROR", 0, [])
    for codec, payload in ((1, b"\x1f\x8b\x08\0\0\0\0\0\0\xffgarbage-garbage"), (3, b"\x04\x22\x4d\x18garbage"),
                           (4, b"\x28\xb5\x2f\xfdgarbage-garbage")):
        assert answer(state, batch([], count=3, codec=codec, payload=payload)) == ("UNKNOWN_SERVER_ERROR", 0, [])
    # Before v7 Kafka's request handler reads the codec, and one it does not know fails the whole request.
    body = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name="t", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=batch(KEYED)),
            ProduceRequest.PartitionProduceData(index=1, records=batch(KEYED, codec=7))]),
        ProduceRequest.TopicProduceData(name="nope", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=batch(KEYED))])])
    parts = [p for t in call(state, body, 5).responses for p in t.partition_responses]
    assert [(p.error_code, p.base_offset) for p in parts] == [(errors.UNKNOWN_SERVER_ERROR.code, -1)] * 3
    assert stored(state) == 0


def test_one_batch_per_partition_and_what_may_follow_it(state):
    create(state, "t")
    one = batch(KEYED)
    assert answer(state, one + one) == ("INVALID_RECORD", -1, [])
    assert answer(state, b"") == ("INVALID_RECORD", -1, [])
    assert answer(state, one[:-1]) == ("INVALID_RECORD", -1, [])      # no whole batch
    legacy = records.RecordBatchBuilder(magic=1)
    legacy.append(b"k", b"v", timestamp=NOW)
    for version in (3, 9):
        assert answer(state, legacy.build(), version=version) == ("INVALID_RECORD", -1, [])
    assert answer(state, one[:16] + b"\x05" + one[17:]) == ("CORRUPT_MESSAGE", -1, [])
    assert stored(state) == 0
    # An incomplete batch after the whole one is dropped, as Kafka drops it: the whole one is stored alone.
    assert answer(state, one + one[:40]) == ("NONE", 0, [])
    part = fetch(state).responses[0].partitions[0]
    assert part.high_watermark == 3 and len(part.records) == len(one)
    assert [r.key for r in records.read_records(part.records)] == [b"k0", b"k1", b"k2"]


def test_zstd_needs_produce_v7(state):
    create(state, "t")
    for version in (3, 5, 6):
        assert answer(state, batch(KEYED, codec=4), version=version) == ("UNSUPPORTED_COMPRESSION_TYPE", -1, [])
    assert stored(state) == 0
    assert answer(state, batch(KEYED, codec=4), version=7) == ("NONE", 0, [])


def test_timestamps_far_from_the_clock_are_refused_record_by_record(state):
    """message.timestamp.after.max.ms (an hour by default, as in Kafka 4) and before.max.ms (unbounded by
    default) bound each record's CreateTime timestamp; v8+ answers list the records refused."""
    create(state, "t")
    create(state, "old", **{"message.timestamp.before.max.ms": "3600000"})
    ten_years = 10 * 365 * 86_400_000
    (part,) = produce(state, batch(KEYED, base_ts=NOW + ten_years))
    assert (part.error_code, part.log_start_offset) == (errors.INVALID_TIMESTAMP.code, 0)
    assert [e.batch_index for e in part.record_errors] == [0, 1, 2]
    assert "ms after the broker's clock" in part.record_errors[0].batch_index_error_message
    assert "3 of the batch's 3 records refused" in part.error_message
    mixed = [record(offset_delta=0), record(offset_delta=1, ts_delta=7_200_000), record(offset_delta=2)]
    assert answer(state, batch(mixed, codec=3)) == ("INVALID_TIMESTAMP", 0, [1])
    assert answer(state, batch(KEYED, base_ts=NOW + ten_years), version=7) == ("INVALID_TIMESTAMP", 0, [])
    assert answer(state, batch(KEYED, base_ts=NOW - ten_years), topic="old") == ("INVALID_TIMESTAMP", 0, [0, 1, 2])
    assert stored(state) == 0 and stored(state, "old") == 0
    assert answer(state, batch(KEYED, base_ts=NOW - ten_years)) == ("NONE", 0, [])
    assert answer(state, batch(KEYED, base_ts=NOW + 3_600_000), topic="old") == ("NONE", 0, [])


def test_compacted_topics_refuse_records_without_keys_one_by_one(state):
    create(state, "c", **{"cleanup.policy": "compact"})
    recs = [record(key=None, offset_delta=0), record(offset_delta=1), record(key=None, offset_delta=2)]
    for codec in (0, 3, 4):
        (part,) = produce(state, batch(recs, codec=codec), topic="c")
        assert (part.error_code, part.log_start_offset) == (errors.INVALID_RECORD.code, 0)
        assert [e.batch_index for e in part.record_errors] == [0, 2]
        assert "no key" in part.record_errors[0].batch_index_error_message and "record 2" in part.error_message
    assert answer(state, batch(recs), topic="c", version=7) == ("INVALID_RECORD", 0, [])
    assert stored(state, "c") == 0


def test_what_kafka_asks_of_producers(state):
    create(state, "t")
    assert answer(state, batch(KEYED, base_offset=5)) == ("INVALID_RECORD", 0, [])
    assert answer(state, batch(KEYED, producer_id=7, sequence=-1)) == ("INVALID_RECORD", 0, [])
    out_of_order = [record(key=b"k", offset_delta=d) for d in (0, 5, 7)]
    # Kafka rewrites such a compressed batch, and fails doing it; the uncompressed one it takes as it is.
    assert answer(state, batch(out_of_order, codec=3)) == ("UNKNOWN_SERVER_ERROR", 0, [])
    assert stored(state) == 0
    assert answer(state, batch(out_of_order)) == ("NONE", 0, [])


def test_a_decompression_bomb_is_answered_within_the_cap(state):
    """A batch that decompresses past the 64 MiB cap gets MESSAGE_TOO_LARGE (Kafka decompresses it whole and takes
    it; this broker's own readers could not read it back), with no more memory than the cap's worth."""
    create(state, "c", **{"cleanup.policy": "compact"})
    bomb = zstd_bomb(256 << 20)
    tracemalloc.start()
    try:
        assert answer(state, bomb, topic="c") == ("MESSAGE_TOO_LARGE", -1, [])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 160 << 20, peak
    assert answer(state, zstd_bomb(32 << 20), topic="c") == ("NONE", 0, [])  # within the cap: taken


def test_a_bomb_to_a_compacted_topic_gets_an_answer_on_the_wire():
    """It closed the connection before: the check for keys decoded the records and hit the cap unanswered."""
    with Broker() as broker:
        client = RawClient(broker.port)
        try:
            from kafkaproto.messages import CreateTopicsRequest
            client.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
                name="c", num_partitions=1, replication_factor=1, configs=[
                    CreateTopicsRequest.CreatableTopicConfig(name="cleanup.policy", value="compact")])],
                timeout_ms=5000), 7)
            for data, error in ((zstd_bomb(100_000_000), errors.MESSAGE_TOO_LARGE),
                                (zstd_bomb(100_000_000, key=None), errors.MESSAGE_TOO_LARGE),
                                (batch(KEYED, base_ts=int(__import__("time").time() * 1000)), errors.NONE)):
                body = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
                    name="c", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=data)])])
                part = client.call(body, 9).body.responses[0].partition_responses[0]
                assert part.error_code == error.code
        finally:
            client.close()


def test_an_append_larger_than_a_segment_is_refused(tmp_path):
    """Kafka's log refuses batches larger than the topic's segment size (internal.segment.bytes or segment.bytes)
    with RECORD_LIST_TOO_LARGE, so no append can make a segment per record."""
    from test_broker_handlers import batch, create, make_state, produce

    state = make_state(tmp_path)
    try:
        assert create(state, "tiny", **{"internal.segment.bytes": "100"}).error_code == 0
        data = batch(b"x" * 200)
        answer = produce(state, data, topic="tiny")
        assert errors.by_code(answer.error_code) is errors.RECORD_LIST_TOO_LARGE and answer.log_start_offset == -1
        assert create(state, "roomy", **{"internal.segment.bytes": str(len(data))}).error_code == 0
        assert produce(state, data, topic="roomy").error_code == 0
    finally:
        state.close()
