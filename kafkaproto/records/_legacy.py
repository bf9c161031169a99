"""Legacy message sets (magic 0 and 1), shared by both implementations.

Legacy records have no offset or timestamp deltas (both read 0) and no headers.
A legacy message set is a run of messages; a compressed message is a wrapper
whose value is a whole inner message set. Each top-level message is read as
one batch, the way the Java client does: iterating it gives the message itself,
or the wrapper's inner messages with their absolute offsets.
"""

import struct
import zlib

from ..exceptions import RecordsError
from . import _compression
from ._common import (
    CODEC_MASK,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TimestampType,
    codec_name,
    decompress,
)

_HEAD_V0 = struct.Struct(">qiIbb")   # offset, size, crc, magic, attributes
_HEAD_V1 = struct.Struct(">qiIbbq")  # ... timestamp
_LEN = struct.Struct(">i")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
MIN_SIZE = (14, 22)  # message size (after offset and size) with null key and value, per magic


def _parse(buf, pos, end, where):
    """One message at pos: (offset, size, crc, magic, attributes, timestamp, key, value, next_pos).

    ``where(reason, at)`` makes the RecordsError for a fault at byte ``at``.
    """
    if end - pos < _HEAD_V0.size:
        raise where(f"truncated message header: {end - pos} bytes left", pos)
    offset, size, crc, magic, attributes = _HEAD_V0.unpack_from(buf, pos)
    if magic not in (0, 1):
        raise where(f"message magic {magic} inside a legacy message set", pos + 16)
    if size < MIN_SIZE[magic]:
        raise where(f"message size {size} is below the minimum {MIN_SIZE[magic]} of magic {magic}", pos + 8)
    stop = pos + LOG_OVERHEAD + size
    if stop > end:
        raise where(f"message of {size} bytes overruns the input ({end - pos - LOG_OVERHEAD} bytes left)", pos + 8)
    at = pos + 18
    timestamp = NO_TIMESTAMP
    if magic == 1:
        timestamp = _HEAD_V1.unpack_from(buf, pos)[5]
        at += 8
    fields = []
    for name in ("key", "value"):
        if stop - at < 4:
            raise where(f"truncated {name} length", at)
        (n,) = _LEN.unpack_from(buf, at)
        at += 4
        if n < -1:
            raise where(f"{name} length {n} is negative", at - 4)
        if n == -1:
            fields.append(None)
            continue
        if n > stop - at:
            raise where(f"{name} of {n} bytes overruns the message ({stop - at} bytes left)", at - 4)
        fields.append(bytes(buf[at:at + n]))
        at += n
    if at != stop:
        raise where(f"message size {size} leaves {stop - at} bytes after the value", at)
    return offset, size, crc, magic, attributes, timestamp, fields[0], fields[1], stop


class LegacyBatch:
    """One top-level message of a legacy (magic 0 or 1) message set."""

    __slots__ = ("position", "offset", "size", "crc", "magic", "attributes", "timestamp", "key", "value",
                 "_raw", "_record_cls", "_max_decompressed", "_validate", "_records")

    partition_leader_epoch = -1
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    is_transactional = False
    is_control = False
    has_delete_horizon = False
    delete_horizon_ms = None
    control_marker = None

    def __init__(self, buf, pos, end, record_cls, validate, max_decompressed):
        def where(reason, at):
            return RecordsError(reason, at, None)

        (self.offset, self.size, self.crc, self.magic, self.attributes, self.timestamp,
         self.key, self.value, stop) = _parse(buf, pos, end, where)
        self.position = pos
        self._raw = buf[pos:stop]
        self._record_cls = record_cls
        self._validate = validate
        self._max_decompressed = max_decompressed
        self._records = None
        if validate:
            self._check_crc(self._raw, self.crc, pos, self.offset)

    @staticmethod
    def _check_crc(raw, stored, pos, offset):
        computed = zlib.crc32(raw[16:])
        if computed != stored:
            raise RecordsError(f"CRC32 mismatch: stored {stored:#010x}, computed {computed:#010x}", pos + 12, offset)

    @property
    def raw(self):
        return self._raw

    @property
    def batch_length(self):
        return self.size

    @property
    def compression(self):
        return self.attributes & CODEC_MASK

    @property
    def timestamp_type(self):
        if self.magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        return TimestampType(1 if self.attributes & TIMESTAMP_TYPE_MASK else 0)

    @property
    def max_timestamp(self):
        return self.timestamp

    @property
    def base_timestamp(self):
        return self.timestamp

    @property
    def base_offset(self):
        return self.records()[0].offset if self.compression else self.offset

    @property
    def last_offset(self):
        return self.offset

    @property
    def next_offset(self):
        return self.offset + 1

    @property
    def record_count(self):
        return len(self.records())

    def crc_ok(self):
        return zlib.crc32(self._raw[16:]) == self.crc

    def __len__(self):
        return self.record_count

    def __iter__(self):
        return iter(self.records())

    def records(self):
        if self._records is None:
            self._records = self._read_records()
        return self._records

    def _read_records(self):
        Record = self._record_cls
        codec = self.compression
        if codec == 0:
            return [Record(self.offset, self.timestamp, self.key, self.value, (), self.attributes, 0, 0, self.size)]
        if self.value is None:
            raise RecordsError("compressed wrapper message has a null value", self.position, self.offset)
        inner = decompress(codec, self.value, self._max_decompressed, self.magic, self.position, self.offset)
        pos, end = 0, len(inner)
        batch_pos, wrapper_offset = self.position, self.offset

        def where(reason, at):
            return RecordsError(reason, batch_pos, wrapper_offset, at)

        found = []
        while pos < end:
            start = pos
            offset, size, crc, magic, attributes, timestamp, key, value, pos = _parse(inner, pos, end, where)
            if attributes & CODEC_MASK:
                raise where("compressed message nested inside a compressed wrapper", start + 17)
            if self._validate:
                computed = zlib.crc32(memoryview(inner)[start + 16:pos])
                if computed != crc:
                    raise where(f"CRC32 mismatch: stored {crc:#010x}, computed {computed:#010x}", start + 12)
            found.append((offset, timestamp, key, value, attributes, size, start))
        if not found:
            raise RecordsError("compressed wrapper message holds no messages", self.position, self.offset)
        # Magic 1 wrappers carry relative inner offsets; the wrapper's offset is the last one's.
        # A producer's wrapper (offset 0, before the broker assigns any) leaves them relative, as in Java.
        shift = self.offset - found[-1][0] if self.magic == 1 else 0
        if shift < 0:
            shift = 0
        log_append = self.magic == 1 and self.attributes & TIMESTAMP_TYPE_MASK
        out = []
        for offset, timestamp, key, value, attributes, size, start in found:
            if not _INT64_MIN <= offset + shift <= _INT64_MAX:
                raise where(f"inner offset {offset} plus the wrapper's {shift} overflows int64", start)
            out.append(Record(offset + shift, self.timestamp if log_append else timestamp, key, value, (),
                              attributes, 0, 0, size))
        return out

    def __repr__(self):
        return (f"LegacyBatch(offset={self.offset}, magic={self.magic}, compression={codec_name(self.compression)}, "
                f"size={self.size})")


def build_legacy(magic, codec, level, base_offset, records, timestamp_type, log_append_time):
    """A legacy message set: one message per record, or one compressed wrapper holding them all."""
    log_append = timestamp_type == TimestampType.LOG_APPEND_TIME
    if codec == 0:
        # The broker stamps each message with the log append time.
        return b"".join(_message(magic, base_offset + delta, log_append_time if log_append else timestamp, key, value,
                                 _ts_attr(magic, timestamp_type))
                        for delta, timestamp, key, value in records)
    # Inner messages: relative offsets in magic 1, absolute in magic 0; under log-append time each
    # carries the append time and the timestamp-type flag too (as the Java client writes them).
    inner_attr = _ts_attr(magic, timestamp_type)
    inner = b"".join(_message(magic, delta if magic == 1 else base_offset + delta,
                              log_append_time if log_append else timestamp, key, value, inner_attr)
                     for delta, timestamp, key, value in records)
    last = base_offset + records[-1][0]
    if log_append:
        wrapper_ts = log_append_time
    else:
        wrapper_ts = max(timestamp for _, timestamp, _, _ in records)
    compressed = _compression.compress(codec, inner, level, magic)
    return _message(magic, last, wrapper_ts, None, compressed, codec | _ts_attr(magic, timestamp_type))


def _ts_attr(magic, timestamp_type):
    return TIMESTAMP_TYPE_MASK if magic == 1 and timestamp_type == TimestampType.LOG_APPEND_TIME else 0


def _message(magic, offset, timestamp, key, value, attributes):
    parts = [b"\x00" * 4, bytes((magic, attributes & 0xFF))]
    if magic == 1:
        parts.append(struct.pack(">q", timestamp))
    for field in (key, value):
        if field is None:
            parts.append(b"\xff\xff\xff\xff")
        else:
            parts.append(_LEN.pack(len(field)))
            parts.append(bytes(field))
    body = b"".join(parts)
    crc = zlib.crc32(memoryview(body)[4:])
    return struct.pack(">qiI", offset, len(body), crc) + body[4:]
