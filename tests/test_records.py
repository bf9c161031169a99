"""Record batches and legacy message sets: round trips, validation, hostile input, both implementations."""

import random
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impls import IMPLS, impl_param, records
from raw_batches import batch as _batch, field as _field, record as _record, recrc as _recrc
from raw_batches import zigzag as _zigzag
from kafkaproto.exceptions import RecordsError
from kafkaproto.records import Compression, ControlType, TimestampType, arrow_schema, read_committed
from kafkaproto.records import _compression

CODECS_BY_MAGIC = {0: [0, 1, 2, 3], 1: [0, 1, 2, 3], 2: [0, 1, 2, 3, 4]}

blobs = st.one_of(st.none(), st.binary(max_size=40))
headers = st.lists(st.tuples(st.text(max_size=8), blobs), max_size=3)
record_inputs = st.lists(
    st.tuples(blobs, blobs, headers, st.integers(0, 2**41), st.integers(1, 3)), min_size=1, max_size=12)


def build(mod, magic, codec, rows, **options):
    builder = mod.RecordBatchBuilder(magic=magic, compression=codec, **options)
    offset = options.get("base_offset", 0) - 1
    for key, value, hdrs, timestamp, gap in rows:
        offset += gap
        builder.append(key, value, headers=hdrs if magic == 2 else (), timestamp=timestamp, offset=offset)
    return builder.build()


def expected(magic, rows, base_offset=0, log_append_time=None):
    out = []
    offset = base_offset - 1
    for key, value, hdrs, timestamp, gap in rows:
        offset += gap
        ts = -1 if magic == 0 else log_append_time if log_append_time is not None else timestamp
        out.append((offset, ts, key, value, tuple(hdrs) if magic == 2 else ()))
    return out


def plain(recs):
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in recs]


@st.composite
def batch_specs(draw):
    magic = draw(st.sampled_from([0, 1, 2]))
    codec = draw(st.sampled_from(CODECS_BY_MAGIC[magic]))
    options = {"base_offset": draw(st.integers(0, 2**40))}
    if magic == 2:
        options.update(partition_leader_epoch=draw(st.integers(-1, 2**31 - 1)),
                       producer_id=draw(st.integers(-1, 2**40)), producer_epoch=draw(st.integers(-1, 2**15 - 1)),
                       base_sequence=draw(st.integers(-1, 2**31 - 1)))
        options["transactional"] = options["producer_id"] >= 0 and draw(st.booleans())
    if magic >= 1 and draw(st.booleans()):
        options.update(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=draw(st.integers(0, 2**41)))
    return magic, codec, options


@given(spec=batch_specs(), rows=record_inputs)
@settings(max_examples=300)
def test_round_trip_every_format_and_codec(spec, rows):
    magic, codec, options = spec
    if magic < 2:
        options = {k: v for k, v in options.items() if k not in ("transactional",)}
    built = {impl: build(records(impl), magic, codec, rows, **options) for impl in IMPLS}
    assert len(set(built.values())) == 1, "implementations wrote different bytes"
    data = built["python"]
    want = expected(magic, rows, options["base_offset"], options.get("log_append_time"))
    for impl in IMPLS:
        mod = records(impl)
        batches = list(mod.iter_batches(data))
        got = [r for b in batches for r in b.records()]
        assert plain(got) == want
        assert {b.magic for b in batches} == {magic}
        assert {int(b.compression) for b in batches} == {codec}
        assert batches[-1].last_offset == want[-1][0]
        if magic == 2:
            (b,) = batches
            assert (b.base_offset, b.partition_leader_epoch, b.producer_id, b.producer_epoch, b.base_sequence) == (
                options["base_offset"], options["partition_leader_epoch"], options["producer_id"],
                options["producer_epoch"], options["base_sequence"])
            assert b.is_transactional == options["transactional"] and b.record_count == len(rows)
            assert b.crc_ok() and len(b.raw) == len(data)
        table = mod.to_arrow(data)
        assert table.schema == arrow_schema()
        assert table.column("offset").to_pylist() == [w[0] for w in want]
        assert table.column("value").to_pylist() == [w[3] for w in want]
        assert [[(h["key"], h["value"]) for h in row] for row in table.column("headers").to_pylist()] == [
            list(w[4]) for w in want]
    if len(IMPLS) == 2:
        assert records("python").to_arrow(data).equals(records("compiled").to_arrow(data))


@impl_param
def test_batch_header_fields(impl):
    mod = records(impl)
    b = mod.RecordBatchBuilder(compression="lz4", base_offset=1000, partition_leader_epoch=7, producer_id=42,
                               producer_epoch=3, base_sequence=2**31 - 2, transactional=True)
    b.append(b"k0", b"v0", timestamp=1_700_000_000_005)
    b.append(None, None, timestamp=1_700_000_000_001, headers=[("h", None), ("é", b"x")])
    b.append(b"k2", b"v2", timestamp=1_700_000_000_009, offset=1005)
    data = b.build()
    (batch,) = mod.iter_batches(data)
    assert batch.compression == Compression.LZ4 and batch.timestamp_type == TimestampType.CREATE_TIME
    assert (batch.base_timestamp, batch.max_timestamp) == (1_700_000_000_005, 1_700_000_000_009)
    assert (batch.last_offset_delta, batch.next_offset, batch.record_count) == (5, 1006, 3)
    assert batch.batch_length == len(data) - 12 and batch.crc == struct.unpack_from(">I", data, 17)[0]
    assert not batch.is_control and not batch.has_delete_horizon and batch.delete_horizon_ms is None
    recs = batch.records()
    assert [(r.offset_delta, r.timestamp_delta) for r in recs] == [(0, 0), (1, -4), (5, 4)]
    assert recs[1].headers == (("h", None), ("é", b"x")) and recs[1].key is None
    table = mod.to_arrow(data)
    # sequence numbers wrap at 2**31-1 as Kafka's producers do
    assert table.column("sequence").to_pylist() == [2**31 - 2, 2**31 - 1, 3]
    assert table.column("compression").to_pylist() == ["lz4"] * 3
    assert table.column("transactional").to_pylist() == [True] * 3


@impl_param
def test_delete_horizon_and_log_append_time(impl):
    mod = records(impl)
    b = mod.RecordBatchBuilder(delete_horizon_ms=5000, timestamp_type=TimestampType.LOG_APPEND_TIME,
                               log_append_time=9000)
    b.append(b"k", b"v", timestamp=6000)
    (batch,) = mod.iter_batches(b.build())
    assert batch.has_delete_horizon and batch.delete_horizon_ms == 5000 and batch.base_timestamp == 5000
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    (rec,) = batch.records()
    assert rec.timestamp == 9000 and rec.timestamp_delta == 1000


@impl_param
def test_timestamp_and_offset_arithmetic_wraps_like_java(impl):
    """Deltas are Java longs: -1 then 2**63-1 gives a delta of -2**63, which reads back exactly."""
    mod = records(impl)
    b = mod.RecordBatchBuilder(base_offset=2**63 - 2)
    b.append(None, b"a", timestamp=-1)
    b.append(None, b"b", timestamp=2**63 - 1)
    (batch,) = mod.iter_batches(b.build())
    assert [(r.offset, r.timestamp, r.timestamp_delta) for r in batch] == [
        (2**63 - 2, -1, 0), (2**63 - 1, 2**63 - 1, -(2**63))]
    assert batch.next_offset == -(2**63)  # past the last long, as Java computes it
    for bad in (-2, 2**63):
        with pytest.raises(ValueError, match="timestamp"):
            mod.RecordBatchBuilder().append(None, b"c", timestamp=bad)


@impl_param
def test_legacy_relative_offsets_and_wrapper(impl):
    mod = records(impl)
    for magic in (0, 1):
        b = mod.RecordBatchBuilder(magic=magic, compression="gzip", base_offset=500)
        for i in range(3):
            b.append(b"k%d" % i, b"v%d" % i, timestamp=100 + i)
        data = b.build()
        (wrapper,) = mod.iter_batches(data)
        # The wrapper carries the last offset; magic 1 inner offsets are relative to it.
        assert wrapper.offset == 502 and wrapper.base_offset == 500 and wrapper.magic == magic
        inner_first = struct.unpack_from(">q", _compression.decompress(1, wrapper.value, 1 << 20), 0)[0]
        assert inner_first == (0 if magic == 1 else 500)
        assert [(r.offset, r.timestamp) for r in wrapper] == [(500 + i, -1 if magic == 0 else 100 + i)
                                                               for i in range(3)]
        assert wrapper.timestamp == (-1 if magic == 0 else 102)


@impl_param
def test_control_batches_and_read_committed(impl):
    mod = records(impl)

    def txn(base, pid, n):
        b = mod.RecordBatchBuilder(base_offset=base, producer_id=pid, producer_epoch=0, base_sequence=0,
                                   transactional=True)
        for i in range(n):
            b.append(None, b"p%d-%d" % (pid, i), timestamp=1)
        return b.build()

    def marker(base, pid, commit):
        b = mod.RecordBatchBuilder(base_offset=base, producer_id=pid, producer_epoch=0, transactional=True,
                                   control=True)
        b.append_end_txn_marker(commit, coordinator_epoch=9, timestamp=2)
        return b.build()

    plain_batch = mod.RecordBatchBuilder(base_offset=9)
    plain_batch.append(None, b"plain", timestamp=3)
    # producer 1 commits offsets 0-1, producer 2 aborts 2-3, producer 3 aborts 6 and then commits 8
    data = (txn(0, 1, 2) + txn(2, 2, 2) + marker(4, 1, True) + marker(5, 2, False) + txn(6, 3, 1)
            + marker(7, 3, False) + txn(8, 3, 1) + plain_batch.build() + marker(10, 3, True))
    batches = list(mod.iter_batches(data))
    m = batches[2].control_marker
    assert m.type == ControlType.COMMIT and m.coordinator_epoch == 9 and m.version == 0
    assert batches[3].control_marker.type == ControlType.ABORT and batches[0].control_marker is None

    class Aborted:
        def __init__(self, producer_id, first_offset):
            self.producer_id, self.first_offset = producer_id, first_offset

    verdicts = [(b.base_offset, skip) for b, skip in read_committed(batches, [Aborted(2, 2), (3, 6)])]
    assert verdicts == [(0, None), (2, "aborted"), (4, "control"), (5, "control"), (6, "aborted"), (7, "control"),
                        (8, None), (9, None), (10, "control")]
    table = mod.to_arrow(data)
    assert table.column("control").to_pylist().count(True) == 4


@impl_param
def test_validation_errors_name_batch_and_byte(impl):
    mod = records(impl)
    b = mod.RecordBatchBuilder(base_offset=77)
    b.append(b"key", b"value", timestamp=5)
    good = b.build()
    two = good + good
    bad = bytearray(two)
    bad[len(good) + 70] ^= 0xFF
    with pytest.raises(RecordsError) as e:
        list(mod.iter_batches(bad))
    assert (e.value.position, e.value.batch_offset) == (len(good) + 17, 77) and "CRC32C" in str(e.value)
    assert len(list(mod.iter_batches(bad, validate=False))) == 2

    with pytest.raises(RecordsError, match="overruns the input") as e:
        list(mod.iter_batches(two[:-1]))
    assert e.value.position == len(good) + 8
    assert len(list(mod.iter_batches(two[:-1], allow_partial=True))) == 1

    count = bytearray(good)
    struct.pack_into(">i", count, 57, 2)
    with pytest.raises(RecordsError, match="ends after 1 of its 2 records"):
        list(mod.iter_batches(count, validate=False))[0].records()
    struct.pack_into(">i", count, 57, 0)
    with pytest.raises(RecordsError, match="follow the last of the batch's 0 records") as e:
        list(mod.iter_batches(count, validate=False))[0].records()
    assert e.value.position == 61

    varint = bytearray(good[:61]) + b"\xff" * 7
    struct.pack_into(">i", varint, 8, len(varint) - 12)
    with pytest.raises(RecordsError, match="record length is longer than 5 bytes") as e:
        list(mod.iter_batches(varint, validate=False))[0].records()
    assert e.value.position == 61 and e.value.batch_offset == 77

    with pytest.raises(RecordsError, match="unknown record batch magic 3"):
        list(mod.iter_batches(good[:16] + b"\x03" + good[17:]))


@impl_param
def test_every_truncation_fails_cleanly(impl):
    mod = records(impl)
    for magic, codec in [(2, 0), (2, 4), (1, 0), (1, 2), (0, 3)]:
        b = mod.RecordBatchBuilder(magic=magic, compression=codec)
        for i in range(4):
            b.append(b"k%d" % i, b"value %d" % i * 3, headers=[("h", b"%d" % i)] if magic == 2 else (),
                     timestamp=i)
        data = b.build()
        ends = {batch.position + len(batch.raw) for batch in mod.iter_batches(data)}
        for n in range(1, len(data)):
            if n in ends:  # a prefix of whole messages is a valid, shorter message set
                assert plain(r for batch in mod.iter_batches(data[:n]) for r in batch.records())
                continue
            with pytest.raises(RecordsError):
                for batch in mod.iter_batches(data[:n]):
                    batch.records()
            whole = list(mod.iter_batches(data[:n], allow_partial=True))
            assert len(whole) == sum(end <= n for end in ends)


def _outcome(mod, data):
    try:
        out = []
        for batch in mod.iter_batches(data, validate=False):
            out.append(plain(batch.records()))
        return ("ok", out)
    except RecordsError as e:
        return ("error", str(e))


def test_random_mutations_decode_or_raise_alike():
    rng = random.Random(11)
    sources = []
    for magic, codec in [(2, 0), (2, 0), (2, 1), (2, 3), (1, 0), (1, 1), (0, 2)]:
        b = records("python").RecordBatchBuilder(magic=magic, compression=codec)
        for i in range(5):
            b.append(b"k%d" % i if i % 2 else None, bytes(rng.randrange(256) for _ in range(i * 5)),
                     headers=[("n", b"%d" % i)] * (i % 3) if magic == 2 else (), timestamp=1000 + i)
        sources.append(b.build())
    for _ in range(3000):
        data = bytearray(rng.choice(sources))
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        outcomes = {impl: _outcome(records(impl), bytes(data)) for impl in IMPLS}
        assert len({repr(o) for o in outcomes.values()}) == 1, outcomes


@impl_param
@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression_bomb_is_refused(impl, codec):
    mod = records(impl)
    b = mod.RecordBatchBuilder(compression=codec)
    b.append(None, bytes(8 * 1024 * 1024), timestamp=0)
    data = b.build()
    assert len(data) < 1024 * 1024
    (batch,) = mod.iter_batches(data, max_decompressed=1024 * 1024)
    with pytest.raises(RecordsError, match="cap on decompressed size") as e:
        batch.records()
    assert e.value.position == 61 and e.value.batch_offset == 0
    (batch,) = mod.iter_batches(data, max_decompressed=16 * 1024 * 1024)
    assert len(batch.records()[0].value) == 8 * 1024 * 1024


def test_lying_lz4_and_zstd_headers_do_not_allocate():
    zero = bytes(1 << 20)
    frame = bytearray(_compression.compress(Compression.LZ4, zero))
    frame[4] |= 0x08  # claim a content size...
    frame[6:6] = struct.pack("<Q", 1 << 40)  # ...of a terabyte
    frame[14] = (_compression.xxh32(bytes(frame[4:14])) >> 8) & 0xFF
    with pytest.raises(_compression.CodecError, match="1099511627776"):
        _compression.decompress(Compression.LZ4, bytes(frame), 1 << 24)
    with pytest.raises(_compression.CodecError):
        _compression.decompress(Compression.ZSTD, _compression.compress(Compression.ZSTD, zero)[:-3], 1 << 24)


def test_xxh32_and_the_magic_0_lz4_header():
    xxhash = pytest.importorskip("xxhash")
    rng = random.Random(3)
    for n in range(16):
        data = bytes(rng.randrange(256) for _ in range(n))
        assert _compression.xxh32(data) == xxhash.xxh32(data).intdigest()
    codec = pytest.importorskip("kafka.codec")
    data = b"kafka " * 30000
    assert _compression.decompress(3, codec.lz4_encode_old_kafka(data), 1 << 24, magic=0) == data
    assert codec.lz4_decode_old_kafka(_compression.compress(3, data, magic=0)) == data
    broken = _compression.compress(3, data, magic=0)
    with pytest.raises(_compression.CodecError, match="header checksum"):
        _compression.decompress(3, broken, 1 << 24, magic=1)


def _lz4_outcome(decode, frame, cap, magic):
    try:
        return bytes(decode(frame, cap, magic))
    except _compression.CodecError as e:
        return type(e).__name__, str(e)


def _lz4_frames(rng):
    """lz4 frames as Kafka and other writers make them (linked blocks, checksums, sizes), some corrupted."""
    import lz4.frame

    kind = rng.randrange(4)
    size = rng.choice([0, 1, 17, 300, 5000, 70000, 300000])
    if kind == 0:
        data = rng.randbytes(size)
    elif kind == 1:
        data = bytes(65 + b % 26 for b in rng.randbytes(size))
    elif kind == 2:
        data = bytes([rng.randrange(3)]) * size
    else:
        data = b"".join(rng.choices([b"kafka ", b"topic ", b"record ", b"\x00\xff"], k=size // 6))
    if rng.random() < 0.5:
        frame = _compression.compress(Compression.LZ4, data, magic=rng.choice([0, 2]))
    else:
        frame = lz4.frame.compress(data, block_size=rng.choice([4, 5, 6]), block_linked=rng.random() < 0.5,
                                   content_checksum=rng.random() < 0.3, block_checksum=rng.random() < 0.3,
                                   store_size=rng.random() < 0.5)
    frame = bytearray(frame)
    for _ in range(rng.choice([0, 0, 1, 2, 3])):
        frame[rng.randrange(7, len(frame))] = rng.randrange(256)
    return data, bytes(frame)


@pytest.mark.skipif("compiled" not in IMPLS, reason="the compiled codecs are not built")
def test_lz4_decoders_agree_with_liblz4():
    """The compiled lz4 decoder gives liblz4's bytes and the pure twin's errors, corrupt frames included."""
    from kafkaproto.records._clz4 import unlz4

    rng = random.Random(7)
    corrupt = 0
    for _ in range(1500):
        data, frame = _lz4_frames(rng)
        cap = rng.choice([64 << 20, len(data), max(0, len(data) - 1), 1000])
        magic = rng.choice([0, 2])
        expected = _lz4_outcome(_compression.unlz4_py, frame, cap, magic)
        assert _lz4_outcome(unlz4, frame, cap, magic) == expected
        corrupt += type(expected) is tuple
    assert 300 < corrupt < 1400  # both kinds were tried


def test_codec_levels_are_checked():
    with pytest.raises(ValueError, match="gzip compression level"):
        records("python").RecordBatchBuilder(compression="gzip", compression_level=10)
    with pytest.raises(ValueError, match="unknown compression"):
        records("python").RecordBatchBuilder(compression="brotli")
    data = zlib.decompress(_compression.compress(1, b"x" * 1000, level=1), 31)
    assert data == b"x" * 1000


# ---- produced_batches: what a broker checks before appending -------------------------------------------------


def _produced(mod, data, limit=None):
    try:
        return ("ok", mod.produced_batches(data, limit))
    except RecordsError as e:
        return ("error", str(e), e.position)


@impl_param
def test_produced_batches_give_the_headers_where_they_lie(impl):
    mod = records(impl)
    rows = [(b"k", b"v" * 30, [], 1000, 1), (None, b"w", [("h", b"1")], 2000, 1)]
    data = build(mod, 2, 0, rows) + build(mod, 2, 3, rows, producer_id=7, producer_epoch=2, base_sequence=5)
    found = mod.produced_batches(data)
    assert [position for _, position in found] == [0, len(build(mod, 2, 0, rows))]
    for (header, position), batch in zip(found, mod.iter_batches(data)):
        assert header == (batch.base_offset, batch.batch_length, batch.partition_leader_epoch, batch.magic,
                          batch.crc, batch.attributes, batch.last_offset_delta, batch.base_timestamp,
                          batch.max_timestamp, batch.producer_id, batch.producer_epoch, batch.base_sequence,
                          batch.record_count)
        assert position == batch.position
    assert found[1][0][9:12] == (7, 2, 5)


@impl_param
def test_produced_batches_name_each_fault_and_its_byte(impl):
    mod = records(impl)
    one = build(mod, 2, 0, [(None, b"x" * 100, [], 1, 1)] * 3)
    size = len(one)

    def with_bytes(at, value):
        data = bytearray(one)
        data[at:at + len(value)] = value
        return bytes(data)

    cases = [
        (b"", "no record batch in the data", 0),
        (one[:10], "truncated batch header: 10 bytes left", 0),
        (one + one[:40], "truncated batch header: 40 bytes left", size),
        (build(mod, 1, 0, [(None, b"x", [], 1, 1)]), "magic 1 record data; only magic 2 batches are taken", 16),
        (with_bytes(8, struct.pack(">i", 10)), "batch length 10 is below the 61-byte header", 8),
        (one[:-1], f"batch length {size - 12} overruns the input ({size - 13} bytes left)", 8),
        (with_bytes(size - 1, b"\xff"), "CRC32C mismatch", 17),
    ]
    for data, message, position in cases:
        outcome = _produced(mod, data)
        assert outcome[0] == "error" and message in outcome[1] and outcome[2] == position, (message, outcome)
    assert _produced(mod, one + one, size - 1) == (
        "error", f"batch at offset 0: a batch of {size} bytes is over the limit of {size - 1} (byte 0)", 0)
    assert _produced(mod, one + one, size)[0] == "ok"


@impl_param
def test_produced_batches_refuse_record_counts_that_lie(impl):
    mod = records(impl)
    one = build(mod, 2, 0, [(None, b"x", [], 1, 1)] * 3)
    negative = _recrc(one[:57] + struct.pack(">i", -1) + one[61:])
    assert "record count -1 is negative" in _produced(mod, negative)[1]
    huge = _recrc(one[:57] + struct.pack(">i", 10**6) + one[61:])
    assert "more than" in _produced(mod, huge)[1]
    off_by_one = _recrc(one[:57] + struct.pack(">i", 2) + one[61:])
    assert "record count 2 does not match last offset delta 2" in _produced(mod, off_by_one)[1]


def test_produced_batches_agree_across_implementations_on_mutations():
    rng = random.Random(5)
    mod = records("python")
    sources = [build(mod, 2, codec, [(b"k%d" % i, b"v" * i, [], 1000 + i, 1) for i in range(5)])
               for codec in (0, 1, 3)]
    sources.append(sources[0] + sources[2])
    for _ in range(3000):
        data = bytearray(rng.choice(sources))
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        limit = rng.choice([None, 100, 10**6])
        outcomes = {impl: _produced(records(impl), bytes(data), limit) for impl in IMPLS}
        assert len({repr(o) for o in outcomes.values()}) == 1, outcomes


# ---- produced_batches: the records inside, Kafka's rules for producers, and the kind of each fault -------------


def _checked(mod, data, **options):
    """produced_batches' outcome as plain data: the headers, or the fault's kind, text, byte and record errors."""
    try:
        return ("ok", mod.produced_batches(data, **options))
    except RecordsError as e:
        return ("error", e.kind, str(e), e.position, e.inner_position, e.record_errors)


KEYED = [_record(key=b"k%d" % i, offset_delta=i) for i in range(3)]
BROKER = dict(client=True, single=True, allow_partial=True)


@impl_param
def test_produced_batches_walk_every_record(impl):
    """A batch whose CRC is good but whose records are not is refused, naming the byte; compressed ones too."""
    mod = records(impl)
    cases = [
        (_batch(KEYED[:2], count=3), "record count 3 is more than 20 bytes of records can hold", 57),
        (_batch(KEYED[:2] + [_record(offset_delta=2, value=b"v" * 20)], count=2, last_delta=1),
         "28 bytes follow the last of the batch's 2 records", 81),
        (_batch([b"\x07garbage" * 3], count=3), "record length -4 overruns the batch (23 bytes left)", 61),
        (_batch([_record(size=100)]), "record length 100 overruns the batch (8 bytes left)", 61),
        (_batch([_record(body=b"\0\0\0" + _zigzag(50) + b"k", size=5) + b"\0" * 60]),
         "key length 50 overruns the record (1 bytes left)", 65),
        (_batch([_record(body=b"\0\0\0" + _field(b"k") + _field(b"v") + _zigzag(-1))]), "header count -1 is negative",
         70),
        (_batch([_record(body=b"\0\0\0" + _field(b"k") + _field(b"v") + _zigzag(100))]),
         "truncated header key length", 71),
        (_batch([_record(headers=[(None, b"x")])]), "header key is null", 70),
        (_batch([_record(body=b"\0" + b"\xff" * 10 + b"\x01\0" + _field(b"k") + _field(b"v") + b"\0")]),
         "timestamp delta is longer than 10 bytes", 63),
        (_batch([_record(body=b"\0\0\0" + _field(b"k") + _field(b"v") + b"\0\0")]),
         "record length 9 leaves 1 bytes after its headers", 70),
        (_batch([_record(body=b"\0\0\0" + _zigzag(-5) + _field(b"v") + b"\0")]), "key length -5 is negative", 65),
        (_batch([b"\0"]), "record count 1 is more than 1 bytes of records can hold", 57),
    ]
    for data, message, position in cases:
        outcome = _checked(mod, data)
        assert outcome[:2] == ("error", "invalid") and message in outcome[2] and outcome[3] == position, (
            message, outcome)
    lying = _batch(KEYED[:2], count=3, codec=3)
    assert _checked(mod, lying)[1:] == (
        "invalid", "batch at offset 0: the batch ends after 2 of its 3 records (byte 20 of the decompressed records "
        "of the batch at byte 0)", 0, 20, ())
    garbage = _batch([b"\x07garbage" * 3], count=3, codec=3)
    assert _checked(mod, garbage)[1:4] == ("invalid", "batch at offset 0: record length -4 overruns the batch (23 "
                                           "bytes left) (byte 0 of the decompressed records of the batch at byte 0)", 0)
    assert _checked(mod, _batch(KEYED))[0] == "ok" and _checked(mod, _batch(KEYED, codec=4))[0] == "ok"


@impl_param
def test_produced_batches_say_what_kind_of_fault(impl):
    """Each fault carries the kind a broker answers by (no caller reads the text)."""
    mod = records(impl)
    one = _batch(KEYED)
    bomb = _batch([], count=1, codec=4, payload=_compression.compress(4, _record(value=b"\0" * (1 << 20))))
    cases = [
        (b"", {}, "empty"),
        (one[:-1], BROKER, "empty"),
        (one[:10], {}, "truncated"),
        (one + one[:40], {}, "truncated"),
        (one[:8] + struct.pack(">i", 10) + one[12:], BROKER, "corrupt"),
        (one[:8] + struct.pack(">i", 30) + one[12:], BROKER, "corrupt"),
        (_recrc(one[:16] + b"\x03" + one[17:]), BROKER, "corrupt"),
        (one[:-1] + bytes([one[-1] ^ 1]), BROKER, "corrupt"),
        (build(mod, 1, 0, [(None, b"x", [], 1, 1)]), BROKER, "magic"),
        (one + build(mod, 1, 0, [(None, b"x", [], 1, 1)]), BROKER, "multiple"),
        (one + one, BROKER, "multiple"),
        (one, dict(max_batch_bytes=len(one) - 1), "too_large"),
        (bomb, dict(max_decompressed=1 << 19), "too_large"),
        (_batch(KEYED, codec=7), BROKER, "compression"),
        (_batch([], count=3, codec=3, payload=b"\x04\x22\x4d\x18garbage-garbage"), BROKER, "compression"),
        (_batch([], count=3, codec=4, payload=b"\x28\xb5\x2f\xfdgarbage-garbage"), BROKER, "compression"),
        (_batch(KEYED, last_delta=5), {}, "invalid"),
        (_batch([_record(offset_delta=d) for d in (0, 5, 7)], codec=3), BROKER, "offsets"),
        (_batch([_record(key=None)]), dict(require_keys=True), "key"),
        (_batch(KEYED, base_ts=10**13), dict(now_ms=10**12, timestamp_after_ms=1000), "timestamp"),
    ]
    for data, options, kind in cases:
        outcome = _checked(mod, data, **options)
        assert outcome[:2] == ("error", kind), (kind, options, outcome)
    assert set(RecordsError.KINDS) >= {kind for _, _, kind in cases}
    # The reader's own faults say their kind as well.
    with pytest.raises(RecordsError) as err:
        list(mod.iter_batches(bomb, max_decompressed=1 << 19))[0].records()
    assert err.value.kind == "too_large"


@impl_param
def test_produced_batches_follow_kafkas_rules_for_producers(impl):
    """client=True: base offset 0, at least one record, a sequence with a producer id, and offsets 0..n-1 in
    compressed batches (uncompressed ones Kafka takes as they are); the broker's own batches are not held to it."""
    mod = records(impl)
    refused = [
        (_batch(KEYED, base_offset=5), "base offset 5; a producer's batch starts at offset 0", 0),
        (_batch([], count=0), "record count 0; a producer's batch holds records", 57),
        (_batch(KEYED, producer_id=7, sequence=-1), "base sequence -1 with producer id 7", 53),
        (_batch([_record(offset_delta=d) for d in (1, 2, 3)], codec=1), "offset deltas are not 0 to 2 in order", 0),
    ]
    for data, message, position in refused:
        outcome = _checked(mod, data, client=True)
        assert message in outcome[2] and outcome[3] == position, (message, outcome)
        assert _checked(mod, data)[0] == "ok"
    assert _checked(mod, _batch([_record(offset_delta=d) for d in (0, 5, 7)]), client=True)[0] == "ok"
    assert _checked(mod, _batch([_record(offset_delta=d) for d in (0, 1, 2)], codec=2), client=True)[0] == "ok"


@impl_param
def test_produced_batches_leave_an_incomplete_tail_as_kafka_does(impl):
    """allow_partial: what follows the whole batches and cannot be a whole batch is left out quietly (the caller
    keeps the bytes before it); single: a second whole batch is refused."""
    mod = records(impl)
    one = _batch(KEYED)
    for tail in (b"\0" * 5, one[:16], one[:40], one[:-1]):
        outcome = _checked(mod, one + tail, **BROKER)
        assert outcome[0] == "ok" and [p for _, p in outcome[1]] == [0], tail
        assert _checked(mod, one + tail)[1] == "truncated"
    # a length below any record format's, or an unknown magic, is refused even in the tail, as Kafka refuses it
    assert _checked(mod, one + one[:8] + struct.pack(">i", 2) + b"\0" * 8, **BROKER)[1] == "corrupt"
    assert _checked(mod, one + one[:16] + b"\x07" + b"\0" * 4, **BROKER)[1] == "corrupt"
    assert _checked(mod, one + one[:16] + b"\x01" + b"\0" * 4, **BROKER)[0] == "ok"  # a magic-1 tail is a tail
    assert _checked(mod, one + one, **BROKER)[2] == (f"batch at offset 0: a second batch at byte {len(one)}, where "
                                                     f"one batch is allowed (byte {len(one)})")
    assert len(_checked(mod, one + one, allow_partial=True)[1]) == 2


@impl_param
def test_produced_batches_list_every_record_refused(impl):
    """Keys (compacted topics) and timestamps are refused record by record, every one listed, as Kafka lists
    them; a timestamp among them makes the kind "timestamp"."""
    mod = records(impl)
    now = 1_800_000_000_000
    recs = [_record(key=None, offset_delta=0), _record(offset_delta=1, ts_delta=7_200_000),
            _record(key=None, offset_delta=2, ts_delta=7_200_000), _record(offset_delta=3)]
    data = _batch(recs, base_ts=now)
    outcome = _checked(mod, data, require_keys=True, now_ms=now, timestamp_after_ms=3_600_000)
    assert outcome[1:3] == ("timestamp", "batch at offset 0: 3 of the batch's 4 records refused (byte 0)")
    assert [i for i, _ in outcome[5]] == [0, 1, 2]
    assert "no key" in outcome[5][0][1] and "no key" in outcome[5][2][1]  # the key is looked at first
    assert outcome[5][1][1] == (f"timestamp {now + 7_200_000} is 7200000 ms after the broker's clock ({now}), more "
                                "than the 3600000 ms message.timestamp.after.max.ms allows")
    assert _checked(mod, data, require_keys=True)[1] == "key"
    assert _checked(mod, data, now_ms=now, timestamp_after_ms=7_200_000)[0] == "ok"
    early = _checked(mod, _batch(KEYED, base_ts=now - 7_200_001), now_ms=now, timestamp_before_ms=7_200_000)
    assert early[1] == "timestamp" and "7200001 ms before the broker's clock" in early[5][0][1]
    # no timestamp (-1) passes; Java's long arithmetic wraps, so the earliest timestamp is not "in range"
    assert _checked(mod, _batch(KEYED, base_ts=-1), now_ms=now, timestamp_before_ms=0, timestamp_after_ms=0)[0] == "ok"
    assert _checked(mod, _batch(KEYED, base_ts=-2**63), now_ms=now)[0] == "ok"
    assert _checked(mod, _batch(KEYED, base_ts=-2**63), now_ms=now, timestamp_after_ms=3_600_000)[1] == "timestamp"
    assert _checked(mod, _batch(KEYED, base_ts=-5), now_ms=now)[0] == "ok"
    # a LogAppendTime batch from a producer: its records' timestamp is the batch's, and none at all is refused
    assert _checked(mod, _batch(KEYED, attributes=0x08, max_ts=now), now_ms=now, timestamp_after_ms=0)[0] == "ok"
    lat = _checked(mod, _batch(KEYED, attributes=0x08, max_ts=-1), now_ms=now)
    assert lat[1] == "timestamp" and [i for i, _ in lat[5]] == [0, 1, 2]
    # compressed batches alike, and offsets that are out of order do not hide the records refused
    mixed = _batch([_record(key=None, offset_delta=d) for d in (0, 5, 7)], codec=3)
    assert _checked(mod, mixed, client=True, require_keys=True)[1] == "key"


def test_records_error_keeps_its_kind_through_pickle():
    import pickle

    e = RecordsError("2 of the batch's 3 records refused", 0, 0, None, "key", [(0, "no key"), (2, "no key")])
    again = pickle.loads(pickle.dumps(e))
    assert (again.kind, again.record_errors, str(again)) == ("key", ((0, "no key"), (2, "no key")), str(e))
    assert RecordsError("x", 3).kind is None


def _mutated_records(rng, source, codec):
    """source's records with a few bytes changed, in a batch whose CRC (and compression) is made anew."""
    body = bytearray(b"".join(source))
    for _ in range(rng.randint(1, 3)):
        body[rng.randrange(len(body))] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)])
    count = len(source) + rng.choice([0, 0, 0, -1, 1])
    return _batch([bytes(body)], count=count, codec=codec, base_ts=1_800_000_000_000 + rng.randrange(-3, 4) * 10**7)


def test_produced_batches_agree_across_implementations_on_mutated_records():
    """The twins give the same headers or the same fault (kind, text, bytes, records refused) for records
    mutated under a good CRC, with every check on: the record walk, the producers' rules, keys and timestamps."""
    rng = random.Random(11)
    source = [_record(key=None if i == 2 else b"k%d" % i, value=b"v" * i, headers=[(b"h", b"x")] if i % 2 else (),
                      ts_delta=i * 10**6, offset_delta=i) for i in range(5)]
    kinds = set()
    for n in range(3000):
        codec = (0, 0, 1, 3, 4)[n % 5]
        data = _mutated_records(rng, source, codec)
        options = dict(client=rng.random() < 0.5, require_keys=rng.random() < 0.5, single=True, allow_partial=True)
        if rng.random() < 0.7:
            options.update(now_ms=1_800_000_000_000, timestamp_before_ms=10**7, timestamp_after_ms=10**7)
        outcomes = {impl: _checked(records(impl), data, **options) for impl in IMPLS}
        assert len({repr(o) for o in outcomes.values()}) == 1, (data, options, outcomes)
        kinds.add(outcomes["python"][1] if outcomes["python"][0] == "error" else "ok")
    assert {"ok", "invalid", "key", "timestamp"} <= kinds, kinds
