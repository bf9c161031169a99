"""Inputs an attacker would try: each test pins one defect that such inputs found, in both implementations."""

import gc
import mmap
import struct
import tracemalloc
from decimal import Decimal
from fractions import Fraction

import pytest

from impls import IMPLS, classes, impl_param, records
from kafkaproto import FrameBuffer, FrameError, split_frames
from kafkaproto.exceptions import DecodeError, EncodeError, EncodeTypeError, RecordsError
from kafkaproto.records import _compression
from kafkaproto.records._legacy import _message

MiB = 1 << 20


def peak_bytes(fn):
    """Peak Python-heap bytes allocated while fn runs (its result or exception is discarded)."""
    tracemalloc.start()
    try:
        fn()
    except Exception:  # noqa: BLE001 - only the memory is measured
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


# ---- the encoder ---------------------------------------------------------------


class Resizer:
    """An int whose conversion resizes a bytearray, as another thread could between two fields."""

    def __init__(self, victim):
        self.victim = victim

    def __index__(self):
        self.victim.clear()
        self.victim.extend(b"\xee" * 16)
        return 0


@impl_param
def test_a_large_bytearray_cannot_be_resized_under_the_encoder(impl):
    cls = classes(impl)["EnvelopeResponse"]
    data = bytearray(b"\x01" * 8192)  # over the size a compiled writer copies late
    msg = cls(response_data=data, error_code=Resizer(data))
    try:
        out = msg.encode(0)
    except BufferError:
        return  # the buffer was pinned: resizing failed cleanly
    assert cls.decode(out, 0).response_data == b"\x01" * 8192


@impl_param
@pytest.mark.parametrize("value", [1.9, -0.5, Decimal("3"), Fraction(7, 2), 2.0])
def test_non_integers_in_int_fields_are_refused(impl, value):
    cls = classes(impl)["MetadataResponse"]
    with pytest.raises(EncodeTypeError, match=r"MetadataResponse.throttle_time_ms: expected an integer \(int32\)"):
        cls(throttle_time_ms=value).encode(12)
    part = cls.MetadataResponsePartition(leader_id=value)
    with pytest.raises(EncodeTypeError, match=r"topics\[0\].partitions\[0\].leader_id"):
        cls(topics=[cls.MetadataResponseTopic(partitions=[part])]).encode(12)


class Index:
    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


def test_objects_with_index_are_ints_in_both_implementations():
    out = {impl: classes(impl)["MetadataResponse"](throttle_time_ms=Index(7)).encode(12) for impl in IMPLS}
    assert len(set(out.values())) == 1
    assert out["python"][:4] == b"\0\0\0\7"


@impl_param
def test_builder_refuses_floats_and_out_of_range_header_values(impl):
    mod = records(impl)
    with pytest.raises(TypeError, match="base_offset must be an int, not float"):
        mod.RecordBatchBuilder(base_offset=1.5)
    for field, value, bits in [("producer_epoch", 2**15, 16), ("base_sequence", 2**31, 32),
                               ("partition_leader_epoch", -2**31 - 1, 32), ("producer_id", 2**63, 64),
                               ("base_offset", -2**63 - 1, 64), ("delete_horizon_ms", 2**63, 64)]:
        with pytest.raises(ValueError, match=f"{field} {value} is out of range for int{bits}"):
            mod.RecordBatchBuilder(**{field: value})
    with pytest.raises(ValueError, match="log_append_time"):
        mod.RecordBatchBuilder(timestamp_type=1, log_append_time=2**64)
    with pytest.raises(TypeError, match="producer_id must be an int"):
        mod.RecordBatchBuilder(producer_id=Decimal(3))
    builder = mod.RecordBatchBuilder(transactional=True, control=True, producer_id=1)
    with pytest.raises(ValueError, match="coordinator_epoch"):
        builder.append_end_txn_marker(True, coordinator_epoch=2**31)
    with pytest.raises(TypeError, match="timestamp must be an int"):
        mod.RecordBatchBuilder().append(b"k", b"v", timestamp=1.5)


@impl_param
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_builder_refuses_offsets_past_the_last_long_at_the_call(impl, magic):
    """Record offsets stop at 2**63-1, as in Java's MemoryRecordsBuilder; the append that would pass it raises,
    not the build, and nothing is appended."""
    for compression in ("none", "gzip"):
        builder = records(impl).RecordBatchBuilder(magic=magic, base_offset=2**63 - 1, compression=compression)
        assert builder.append(b"k", b"v", timestamp=1) == 2**63 - 1
        with pytest.raises(ValueError, match=r"offset 9223372036854775808 \(base_offset 9223372036854775807 \+ 1\) "
                                             r"is beyond 2\*\*63-1"):
            builder.append(b"k", b"v", timestamp=1)
        assert len(builder) == 1
        (batch,) = records(impl).iter_batches(builder.build())
        assert [r.offset for r in batch] == [2**63 - 1]


@impl_param
def test_builder_refuses_an_offset_of_any_size_by_value(impl):
    builder = records(impl).RecordBatchBuilder(base_offset=5)
    for offset in (2**70, 2**64, 2**63, 5 + 2**31):
        with pytest.raises(ValueError, match=f"offset {offset} is more than 2\\*\\*31-1 past the base offset 5"):
            builder.append(b"k", b"v", offset=offset)
    for offset in (-2**70, 4):
        with pytest.raises(ValueError, match=f"offset {offset} is not above the last appended offset 4"):
            builder.append(b"k", b"v", offset=offset)
    assert builder.append(b"k", b"v", offset=5 + 2**31 - 1) == 5 + 2**31 - 1


def huge_buffer(size):
    """A writable buffer of size bytes whose pages are never touched (so it costs no memory)."""
    try:
        return mmap.mmap(-1, size)
    except (OSError, OverflowError, ValueError) as exc:
        pytest.skip(f"cannot map {size} bytes here: {exc}")


@impl_param
def test_lengths_beyond_what_kafka_reads_are_refused(impl):
    cls = classes(impl)["SaslAuthenticateRequest"]
    two_gib = huge_buffer(2**31)
    try:
        with pytest.raises(EncodeError, match=r"SaslAuthenticateRequest.auth_bytes: 2147483648 bytes is longer"):
            cls(auth_bytes=two_gib).encode(0)  # int32 length
    finally:
        two_gib.close()
    four_gib = huge_buffer(2**32 - 1)
    try:
        with pytest.raises(EncodeError, match=r"auth_bytes: 4294967295 bytes is longer than 2147483646"):
            cls(auth_bytes=four_gib).encode(2)  # compact length
    finally:
        four_gib.close()


@impl_param
def test_unknown_tagged_fields_are_validated_on_every_encode(impl):
    cls = classes(impl)["ApiVersionsResponse"]
    cases = [
        ({5: 7}, EncodeTypeError, r"unknown_tagged_fields\[5\]: expected bytes, got int"),
        ({5: "text"}, EncodeTypeError, r"unknown_tagged_fields\[5\]: expected bytes, got str"),
        ({0: b"\0"}, EncodeError, "tag 0 is a known field at this version"),
        ({2**31: b""}, EncodeError, "tag 2147483648 is not a uint31"),
        ({-1: b""}, EncodeError, "tag -1 is not a uint31"),
        ({"5": b""}, EncodeError, "tag '5' is not a uint31"),
        ([(5, b"")], EncodeTypeError, "expected a dict"),
    ]
    for unknown, error, message in cases:
        with pytest.raises(error, match=message):
            cls(unknown_tagged_fields=unknown).encode(3)
    # Nested structs too, and what is valid still round-trips.
    key = cls.ApiVersion(api_key=1, unknown_tagged_fields={9: 7})
    with pytest.raises(EncodeTypeError, match=r"api_keys\[0\].unknown_tagged_fields\[9\]"):
        cls(api_keys=[key]).encode(3)
    fine = cls(unknown_tagged_fields={7: bytearray(b"ab"), 5: memoryview(b"c")})
    assert cls.decode(fine.encode(3), 3).unknown_tagged_fields == {5: b"c", 7: b"ab"}


# ---- the collector pause ---------------------------------------------------------


@pytest.fixture
def other_code_disables_gc(monkeypatch):
    """Whenever Python code runs inside a decode (as another thread could), it switches the collector off."""
    seen = []
    originals = {}
    for cls, name in [(DecodeError, "__init__"), (records_fault(), "__init__")]:
        original = cls.__init__
        originals[cls] = original

        def patched(self, *args, _original=original, **kwargs):
            seen.append(gc.isenabled())
            gc.disable()
            _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, patched)
    was = gc.isenabled()
    gc.enable()
    yield seen
    gc.enable() if was else gc.disable()


def records_fault():
    from kafkaproto.records._common import Fault
    return Fault


def big_metadata_frame(impl):
    cls = classes(impl)["MetadataResponse"]
    topics = [cls.MetadataResponseTopic(name=f"topic-{i}", partitions=[
        cls.MetadataResponsePartition(partition_index=p, replica_nodes=[1, 2, 3]) for p in range(20)])
        for i in range(40)]
    return cls, cls(topics=topics).encode(12)


@impl_param
def test_a_failing_large_decode_leaves_the_collector_as_other_code_set_it(impl, other_code_disables_gc):
    cls, data = big_metadata_frame(impl)
    assert len(data) > 16384
    with pytest.raises(DecodeError):
        cls.decode(data[:-100], 12)
    assert other_code_disables_gc == [True], "Python code ran while the collector was paused"
    assert not gc.isenabled(), "the decode switched the collector back on over another thread's choice"


@impl_param
def test_a_failing_large_records_decode_leaves_the_collector_alone(impl, other_code_disables_gc):
    mod = records(impl)
    builder = mod.RecordBatchBuilder()
    for i in range(2000):
        builder.append(b"k", b"value-%d" % i, timestamp=1000)
    data = bytearray(builder.build())
    data[-1] = 0x7F  # the last record's header count now overruns it
    (batch,) = mod.iter_batches(bytes(data), validate=False)
    with pytest.raises(RecordsError):
        batch.records()
    assert other_code_disables_gc == [True]
    assert not gc.isenabled()


@impl_param
def test_successful_large_decodes_keep_the_collector_setting(impl):
    cls, data = big_metadata_frame(impl)
    was = gc.isenabled()
    try:
        for state in (True, False):
            gc.enable() if state else gc.disable()
            cls.decode(data, 12)
            assert gc.isenabled() is state
    finally:
        gc.enable() if was else gc.disable()


# ---- records ---------------------------------------------------------------------------


def lz4_frame_header(descriptor):
    return b"\x04\x22\x4d\x18" + descriptor + bytes([(_compression.xxh32(descriptor) >> 8) & 0xFF])


def test_lz4_reads_one_frame_only():
    empty_dependent = lz4_frame_header(b"\x40\x40") + b"\0\0\0\0"
    import cramjam
    second = bytes(cramjam.lz4.compress(b"\0" * (8 * MiB)))
    peak = peak_bytes(lambda: _compression.decompress(_compression.LZ4, empty_dependent + second, MiB))
    assert len(_compression.decompress(_compression.LZ4, empty_dependent + second, MiB)) == 0
    assert peak < MiB


def lying_payloads():
    """Small compressed payloads whose headers claim far more than they hold."""
    zstd = struct.pack("<I", 0xFD2FB528) + b"\x00\x58"  # window 4 MiB, size unknown
    for i in range(500):  # compressed blocks of one byte, each allowed 128 KiB of output
        head = (1 if i == 499 else 0) | (2 << 1) | (1 << 3)
        zstd += struct.pack("<I", head)[:3] + b"\xff"
    descriptor = b"\x60\x70"  # independent blocks of up to 4 MiB
    lz4 = lz4_frame_header(descriptor)
    for _ in range(100):
        lz4 += struct.pack("<I", 1) + b"\xf0"
    lz4 += b"\0\0\0\0"
    dependent = lz4_frame_header(b"\x40\x70")
    for _ in range(100):
        dependent += struct.pack("<I", 1) + b"\xf0"
    dependent += b"\0\0\0\0"
    gzip = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"\x03\x00" + b"\0\0\0\0" + struct.pack("<I", 60 * MiB)
    snappy = b"\x80\x80\x80\x1e" + b"\x00" * 10  # declares 60 MiB
    xerial = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01" + (struct.pack(">i", 14) + snappy) * 3
    return {"zstd": (4, zstd), "lz4": (3, lz4), "lz4-dependent": (3, dependent), "gzip": (1, gzip),
            "snappy": (2, snappy), "xerial": (2, xerial)}


@pytest.mark.parametrize("name", list(lying_payloads()))
def test_lying_compressed_sizes_allocate_what_the_input_can_hold(name):
    codec, payload = lying_payloads()[name]
    assert len(payload) < 4096
    peak = peak_bytes(lambda: _compression.decompress(codec, payload, 64 * MiB))
    assert peak < 2 * MiB, f"{name}: {peak} bytes for a {len(payload)}-byte payload"


def test_lz4_content_size_smaller_than_its_block_is_a_codec_error():
    import cramjam
    block = bytes(cramjam.lz4.compress_block(b"abc" * 1000, store_size=False))
    frame = lz4_frame_header(b"\x68\x40" + struct.pack("<Q", 10)) + struct.pack("<I", len(block)) + block + b"\0" * 4
    with pytest.raises(_compression.CodecError, match="frame declares 10 bytes, blocks hold 3000"):
        _compression.decompress(_compression.LZ4, frame, MiB)


def empty_records_batch(mod, count, codec):
    builder = mod.RecordBatchBuilder(compression=codec)
    for _ in range(count):
        builder.append(None, None, timestamp=0)
    return builder.build()


@impl_param
def test_iterating_a_huge_batch_holds_one_record_at_a_time(impl):
    mod = records(impl)
    data = empty_records_batch(mod, 100_000, "zstd")
    (batch,) = mod.iter_batches(data)
    count = 0

    def walk():
        nonlocal count
        for _record in batch:
            count += 1
    peak = peak_bytes(walk)
    assert count == 100_000
    # The decompressed payload is ~0.9 MB; 100k record objects would be over 10 MB.
    assert peak < 3 * MiB, peak


@impl_param
def test_lazy_iteration_reports_faults_where_records_does(impl):
    mod = records(impl)
    data = bytearray(empty_records_batch(mod, 10, "none"))
    data[-3] = 0x7F
    (batch,) = mod.iter_batches(bytes(data), validate=False)
    with pytest.raises(RecordsError) as eager:
        batch.records()
    got = []
    with pytest.raises(RecordsError) as lazy:
        for record in batch:
            got.append(record.offset)
    assert str(lazy.value) == str(eager.value)
    assert got == list(range(9))


@impl_param
def test_negative_record_count_is_a_records_error(impl):
    mod = records(impl)
    data = bytearray(empty_records_batch(mod, 2, "none"))
    data[57:61] = struct.pack(">i", -5)
    with pytest.raises(RecordsError, match="record count -5 is negative") as err:
        list(mod.iter_batches(bytes(data), validate=False))
    assert err.value.position == 57


def all_records(mod, data):
    return [r for b in mod.iter_batches(data) for r in b.records()]


@impl_param
@pytest.mark.parametrize("cut", range(13, 26))
def test_truncated_legacy_messages_are_records_errors(impl, cut):
    mod = records(impl)
    builder = mod.RecordBatchBuilder(magic=0)
    builder.append(b"k", b"v")
    with pytest.raises(RecordsError):
        all_records(mod, builder.build()[:cut])


@impl_param
def test_legacy_inner_offsets_that_overflow_are_records_errors(impl):
    mod = records(impl)
    inner = _message(1, 1, 5, b"k", b"v", 0) + _message(1, 0, 5, b"k", b"v", 0)
    wrapper = _message(1, 2**63 - 1, 5, None, _compression.compress(1, inner), 1)
    with pytest.raises(RecordsError, match="inner offset 1 plus the wrapper's 9223372036854775807 overflows int64"):
        all_records(mod, wrapper)


def test_to_arrow_agrees_on_sequences_that_wrap():
    pytest.importorskip("pyarrow")
    tables = []
    for impl in IMPLS:
        mod = records(impl)
        builder = mod.RecordBatchBuilder(base_offset=2**63 - 4, producer_id=1, producer_epoch=0,
                                         base_sequence=2**31 - 2)
        for _ in range(4):
            builder.append(b"k", b"v", timestamp=1)
        tables.append(mod.to_arrow(builder.build()))
    assert all(t.equals(tables[0]) for t in tables)
    assert tables[0].column("sequence").to_pylist() == [2**31 - 2, 2**31 - 1, 0, 1]


# ---- frames --------------------------------------------------------------------------------


def test_frames_before_a_bad_size_are_handed_out_first():
    good = [b"one", b"two!"]
    stream = b"".join(struct.pack(">i", len(f)) + f for f in good) + struct.pack(">i", -7) + b"xx"
    buf = FrameBuffer()
    assert buf.feed(stream) == good
    with pytest.raises(FrameError, match="frame size -7 at stream offset 15"):
        buf.feed(b"")
    with pytest.raises(FrameError):
        buf.feed(b"more")
    with pytest.raises(FrameError, match="frame size -7"):
        split_frames(stream)

