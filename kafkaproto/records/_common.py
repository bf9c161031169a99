"""What the compiled and pure-Python record codecs share: constants, enums, control markers."""

import functools
import operator
import struct
from collections import namedtuple
from enum import IntEnum

from ..exceptions import RecordsError
from . import _compression

DEFAULT_MAX_DECOMPRESSED = 64 * 1024 * 1024

# RecordBatch (magic 2) layout: field offsets from the start of a batch.
BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
BATCH_HEADER_SIZE = BATCH_HEADER.size  # 61
LENGTH_OFFSET = 8
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
RECORD_COUNT_OFFSET = 57
MIN_RECORD_SIZE = 7  # one byte each: length, attributes, timestamp and offset deltas, key, value, header count
LOG_OVERHEAD = 12  # base offset and length, which the length does not count

CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

NO_TIMESTAMP = -1


class Compression(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @classmethod
    def of(cls, value):
        """A Compression from itself, its code or its name ("gzip")."""
        if isinstance(value, str):
            try:
                return cls[value.upper()]
            except KeyError:
                raise ValueError(f"unknown compression {value!r}; one of none, gzip, snappy, lz4, zstd") from None
        return cls(value)


class TimestampType(IntEnum):
    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlType(IntEnum):
    """The type in a control record's key (KIP-98 markers, then KRaft's own)."""
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


ControlMarker = namedtuple("ControlMarker", "type version coordinator_epoch")
ControlMarker.__doc__ = """A control record: its type (ControlType, or the int code when unknown), the key's
version and, for commit/abort markers, the transaction coordinator's epoch (None otherwise)."""

_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")


def control_marker(key, value):
    if key is None or len(key) < 4:
        raise ValueError(f"a control record's key holds version and type (4 bytes), got {key!r}")
    version, code = _CONTROL_KEY.unpack_from(key)
    try:
        kind = ControlType(code)
    except ValueError:
        kind = code
    epoch = None
    if kind in (ControlType.ABORT, ControlType.COMMIT):
        if value is None or len(value) < 6:
            raise ValueError(f"an end-transaction marker's value holds version and coordinator epoch, got {value!r}")
        epoch = _END_TXN_VALUE.unpack_from(value)[1]
    return ControlMarker(kind, version, epoch)


def end_txn_marker(commit, coordinator_epoch):
    """Key and value of a commit or abort control record."""
    key = _CONTROL_KEY.pack(0, ControlType.COMMIT if commit else ControlType.ABORT)
    return key, _END_TXN_VALUE.pack(0, check_int("coordinator_epoch", coordinator_epoch, 32))


class Fault(Exception):
    """A fault in record data at byte ``at`` of the buffer being parsed (made into a RecordsError by callers)."""

    def __init__(self, reason, at):
        self.reason = reason
        self.at = at


def codec_name(codec):
    return _compression.NAMES[codec] if 0 <= codec < 5 else f"unknown({codec})"


def timestamp_type_name(kind):
    return ("NoTimestampType", "CreateTime", "LogAppendTime")[kind + 1]


def decompress(codec, data, cap, magic, position, batch_offset):
    try:
        return _compression.decompress(codec, data, cap, magic)
    except _compression.CodecError as e:
        raise codec_error(e, position, batch_offset) from None


def codec_error(e, position, batch_offset):
    """The RecordsError for a payload the codec refused."""
    kind = "too_large" if isinstance(e, _compression.CapError) else "compression"
    return RecordsError(str(e), position, batch_offset, kind=kind)


# ---- what produced_batches checks beyond the framing (the twins share the wording) ----

INT64_MAX = 0x7FFFFFFFFFFFFFFF
MIN_BATCH_LENGTH = 14  # the smallest length any record format has (a magic 0 message with no key or value)
NO_KEY = "the record has no key, and a compacted topic keeps records by their keys"


def timestamp_fault(timestamp, now_ms, before_ms, after_ms):
    """Why a record's CreateTime timestamp is refused, given the broker's clock and the topic's
    message.timestamp.before.max.ms / after.max.ms; None if it is not. -1 (no timestamp) is let through, as Kafka
    lets it. Differences wrap as Java's long arithmetic does."""
    if timestamp == NO_TIMESTAMP:
        return None
    early = wrap64(now_ms - timestamp)
    if early > before_ms:
        return (f"timestamp {timestamp} is {early} ms before the broker's clock ({now_ms}), more than the "
                f"{before_ms} ms message.timestamp.before.max.ms allows")
    late = wrap64(-early)
    if late > after_ms:
        return (f"timestamp {timestamp} is {late} ms after the broker's clock ({now_ms}), more than the "
                f"{after_ms} ms message.timestamp.after.max.ms allows")
    return None


def no_timestamp_fault():
    return "the batch claims LogAppendTime, which the broker sets, and the record has no timestamp of its own"


def record_errors_error(errors, timestamps, count, position, batch_offset):
    """The RecordsError for records refused one by one: [(index, reason)]; timestamps says whether any is a
    timestamp's."""
    return RecordsError(f"{len(errors)} of the batch's {count} records refused", position, batch_offset,
                        kind="timestamp" if timestamps else "key", record_errors=errors)


def read_committed(batches, aborted_transactions):
    """Which batches a read_committed consumer delivers, as the Java consumer decides it.

    ``aborted_transactions`` is a FetchResponse partition's list (objects with
    ``producer_id`` and ``first_offset``, or such pairs). Yields ``(batch, skip)``
    for every batch: ``skip`` is None when its records are delivered, "aborted"
    when they belong to an aborted transaction, and "control" for control batches.
    """
    pending = sorted(
        ((t.first_offset, t.producer_id) if hasattr(t, "first_offset") else (t[1], t[0])
         for t in aborted_transactions or ()), reverse=True)
    aborted = set()
    for batch in batches:
        if batch.producer_id >= 0:
            while pending and pending[-1][0] <= batch.last_offset:
                aborted.add(pending.pop()[1])
            if batch.is_control:
                marker = batch.control_marker
                if marker is not None and marker.type == ControlType.ABORT:
                    aborted.discard(batch.producer_id)
            elif batch.is_transactional and batch.producer_id in aborted:
                yield batch, "aborted"
                continue
        yield batch, "control" if batch.is_control else None


def arrow():
    """pyarrow, or an ImportError naming the extra that installs it."""
    from .._optional import require
    return require("pyarrow", "arrow", "records.to_arrow")


@functools.cache  # built once: to_arrow asks for it on every call
def arrow_schema():
    pa = arrow()

    header = pa.struct([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.binary())])
    return pa.schema([
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", pa.timestamp("ms")),
        pa.field("timestamp_type", pa.string(), nullable=False),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("headers", pa.list_(pa.field("item", header, nullable=False)), nullable=False),
        pa.field("partition_leader_epoch", pa.int32(), nullable=False),
        pa.field("producer_id", pa.int64(), nullable=False),
        pa.field("producer_epoch", pa.int16(), nullable=False),
        pa.field("sequence", pa.int32(), nullable=False),
        pa.field("transactional", pa.bool_(), nullable=False),
        pa.field("control", pa.bool_(), nullable=False),
        pa.field("compression", pa.string(), nullable=False),
    ])


def check_int(name, value, bits):
    """value as an int of the given width; a float or an out-of-range value names the field."""
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from None
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not lo <= value <= hi:
        raise ValueError(f"{name} {value} is out of range for int{bits} [{lo}, {hi}]")
    return value


def check_offset(base_offset, delta):
    """A record's offset, base_offset + delta, must fit Kafka's int64 offsets."""
    if base_offset + delta > 0x7FFFFFFFFFFFFFFF:
        raise ValueError(f"offset {base_offset + delta} (base_offset {base_offset} + {delta}) is beyond 2**63-1, "
                         "the last offset Kafka has")


def check_builder(b, magic, compression, level, transactional, control, timestamp_type, log_append_time,
                  delete_horizon_ms, base_offset, partition_leader_epoch, producer_id, producer_epoch, base_sequence):
    """Validate a builder's settings and store them on b."""
    if magic not in (0, 1, 2):
        raise ValueError(f"magic must be 0, 1 or 2, not {magic!r}")
    codec = Compression.of(compression)
    if codec == Compression.ZSTD and magic < 2:
        raise ValueError("zstd needs magic 2")
    base_offset = check_int("base_offset", base_offset, 64)
    partition_leader_epoch = check_int("partition_leader_epoch", partition_leader_epoch, 32)
    producer_id = check_int("producer_id", producer_id, 64)
    producer_epoch = check_int("producer_epoch", producer_epoch, 16)
    base_sequence = check_int("base_sequence", base_sequence, 32)
    if delete_horizon_ms is not None:
        delete_horizon_ms = check_int("delete_horizon_ms", delete_horizon_ms, 64)
    timestamp_type = TimestampType(timestamp_type)
    if timestamp_type == TimestampType.NO_TIMESTAMP_TYPE:
        raise ValueError("a builder writes CREATE_TIME or LOG_APPEND_TIME timestamps")
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        if magic == 0:
            raise ValueError("magic 0 has no timestamps")
        if log_append_time is None:
            raise ValueError("LOG_APPEND_TIME needs log_append_time (ms)")
    if log_append_time is not None:
        log_append_time = check_int("log_append_time", log_append_time, 64)
    if magic < 2 and (transactional or control or producer_id != -1 or delete_horizon_ms is not None):
        raise ValueError("producer ids, transactions, control records and delete horizons need magic 2")
    if control and not transactional:
        raise ValueError("control batches are transactional")
    b.magic = magic
    b.compression = codec
    b.compression_level = _compression.check_level(int(codec), level)
    b.transactional = bool(transactional)
    b.control = bool(control)
    b.timestamp_type = timestamp_type
    b.log_append_time = log_append_time
    b.delete_horizon_ms = delete_horizon_ms
    b.base_offset = base_offset
    b.partition_leader_epoch = partition_leader_epoch
    b.producer_id = producer_id
    b.producer_epoch = producer_epoch
    b.base_sequence = base_sequence
    b.attributes = (int(codec) | (TIMESTAMP_TYPE_MASK if timestamp_type == TimestampType.LOG_APPEND_TIME else 0)
                    | (TRANSACTIONAL_MASK if transactional else 0) | (CONTROL_MASK if control else 0)
                    | (DELETE_HORIZON_MASK if delete_horizon_ms is not None else 0))


def wrap64(value):
    """value as Java's long arithmetic leaves it: two's complement, 64 bits."""
    return ((value + 0x8000000000000000) & 0xFFFFFFFFFFFFFFFF) - 0x8000000000000000


def check_timestamp(timestamp):
    """A record's timestamp in ms: -1 (none) or 0 to 2**63-1, as the Java client accepts."""
    if type(timestamp) is not int:
        raise TypeError(f"timestamp must be an int (ms), not {type(timestamp).__name__}")
    if not -1 <= timestamp <= 0x7FFFFFFFFFFFFFFF:
        raise ValueError(f"timestamp must be -1 (none) or 0 to 2**63-1 ms, not {timestamp}")


def check_blob(value, what):
    if value is not None and not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"record {what} must be bytes or None, not {type(value).__name__}")


def encode_header(pair):
    name, value = pair
    if not isinstance(name, str):
        raise TypeError(f"header key must be a str, not {type(name).__name__}")
    check_blob(value, "header value")
    return name.encode(), value


def record_sequence(base_sequence, offset_delta):
    """The producer sequence number of the record offset_delta past its batch's base sequence (-1 when the
    batch has none), wrapping as Java's int does."""
    if base_sequence < 0:
        return -1
    if base_sequence <= 0x7FFFFFFF - offset_delta:
        seq = base_sequence + offset_delta
    else:
        seq = offset_delta - (0x7FFFFFFF - base_sequence) - 1
    return ((seq + 0x80000000) & 0xFFFFFFFF) - 0x80000000
