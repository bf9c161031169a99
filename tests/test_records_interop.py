"""Records against kafka-python's and aiokafka's record codecs: their bytes decode here, ours decode there.

Bytes are compared too where the writers agree with the Java client's layout and
the compressor is deterministic: uncompressed batches and message sets, and
snappy and zstd batches. (gzip headers carry the time of writing in both peers;
their lz4 frames use other frame flags than the Java client; their compressed
legacy wrappers carry offset 0 where the Java client writes the last offset.)
"""

import random

import pytest

from impls import IMPLS, records

kafka_records = pytest.importorskip("kafka.record")
aiokafka_records = pytest.importorskip("aiokafka.record.memory_records")
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioDefaultBuilder  # noqa: E402
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder as AioLegacyBuilder  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder as KpDefaultBuilder  # noqa: E402
from kafka.record.legacy_records import LegacyRecordBatchBuilder as KpLegacyBuilder  # noqa: E402

CASES = [(magic, codec) for magic in (0, 1, 2) for codec in range(5) if not (codec == 4 and magic < 2)]
# Where the Python peers and the Java client write different bytes, kafkaproto writes Java's
# (tests/test_kafka_records.py): they write zstd in one shot (the frame declares its size),
# Java streams it. Their snappy is cramjam's, like ours.
BYTE_IDENTICAL = {(0, 0), (1, 0), (2, 0), (2, 2)}


def sample_rows(magic, n=60, seed=5):
    rng = random.Random(seed * 31 + magic)
    rows = []
    for i in range(n):
        key = None if i % 7 == 3 else b"key-%04d" % i
        value = None if i % 11 == 5 else (b"value %d " % i) * rng.randrange(1, 12)
        hdrs = [("trace", b"%08x" % rng.randrange(2**32)), ("empty", None)][: i % 3] if magic == 2 else []
        rows.append((i, 1_700_000_000_000 + rng.randrange(100_000) if magic else None, key, value, hdrs))
    return rows


def want(magic, rows):
    return [(o, -1 if magic == 0 else ts, k, v, [tuple(h) for h in hs]) for o, ts, k, v, hs in rows]


def peer_build(peer, magic, codec, rows):
    if magic == 2:
        cls = KpDefaultBuilder if peer == "kafka-python" else AioDefaultBuilder
        b = cls(2, codec, 0, -1, -1, -1, 10**8)
    else:
        cls = KpLegacyBuilder if peer == "kafka-python" else AioLegacyBuilder
        b = cls(magic, codec, 10**8)
    for offset, ts, key, value, hdrs in rows:
        b.append(offset, timestamp=ts if magic else None, key=key, value=value, headers=hdrs)
    return bytes(b.build())


def peer_read(peer, data):
    out = []
    if peer == "kafka-python":
        mr = kafka_records.MemoryRecords(data)
    else:
        mr = aiokafka_records.MemoryRecords(data)
    while True:
        batch = mr.next_batch()
        if batch is None:
            break
        for r in batch:
            # Peers give magic 0's missing timestamp as None; Kafka (and kafkaproto) use -1.
            timestamp = -1 if r.timestamp is None else r.timestamp
            out.append((r.offset, timestamp, r.key, r.value, [tuple(h) for h in r.headers]))
    return out


def our_build(impl, magic, codec, rows, leader_epoch=-1):
    options = {"partition_leader_epoch": leader_epoch} if magic == 2 else {}
    b = records(impl).RecordBatchBuilder(magic=magic, compression=codec, **options)
    for offset, ts, key, value, hdrs in rows:
        b.append(key, value, headers=hdrs, timestamp=ts, offset=offset)
    return b.build()


def ours_read(impl, data):
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers))
            for batch in records(impl).iter_batches(data) for r in batch.records()]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("peer", ["kafka-python", "aiokafka"])
@pytest.mark.parametrize("magic,codec", CASES)
def test_peer_bytes_decode_here(impl, peer, magic, codec):
    if peer == "aiokafka" and magic == 0 and codec == 3:
        pytest.skip("aiokafka does not write magic-0 lz4")
    rows = sample_rows(magic)
    data = peer_build(peer, magic, codec, rows)
    assert ours_read(impl, data) == want(magic, rows)
    table = records(impl).to_arrow(data)
    assert table.column("value").to_pylist() == [r[3] for r in rows]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("peer", ["kafka-python", "aiokafka"])
@pytest.mark.parametrize("magic,codec", CASES)
def test_our_bytes_decode_in_peer(impl, peer, magic, codec):
    if peer == "aiokafka" and magic == 0 and codec == 3:
        pytest.skip("aiokafka cannot read magic-0 lz4 (it lacks the frame header-checksum fix-up)")
    rows = sample_rows(magic)
    data = our_build(impl, magic, codec, rows)
    assert peer_read(peer, data) == want(magic, rows)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("peer", ["kafka-python", "aiokafka"])
@pytest.mark.parametrize("magic,codec", sorted(BYTE_IDENTICAL))
def test_byte_identical_with_peer(impl, peer, magic, codec):
    rows = sample_rows(magic)
    # kafka-python writes partition leader epoch 0; aiokafka, like the Java producer, -1.
    epoch = 0 if peer == "kafka-python" else -1
    assert our_build(impl, magic, codec, rows, epoch) == peer_build(peer, magic, codec, rows)
