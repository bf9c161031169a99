"""The pure-Python record codec; _crecords.pyx is its compiled twin, byte for byte."""

import struct
import time

from ..exceptions import RecordsError
from . import _compression
from .checksum import crc32c
from ._common import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER,
    BATCH_HEADER_SIZE,
    CODEC_MASK,
    CONTROL_MASK,
    CRC_OFFSET,
    DEFAULT_MAX_DECOMPRESSED,
    DELETE_HORIZON_MASK,
    INT64_MAX,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MIN_BATCH_LENGTH,
    MIN_RECORD_SIZE,
    NO_KEY,
    NO_TIMESTAMP,
    RECORD_COUNT_OFFSET,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    Compression,
    TimestampType,
    Fault,
    arrow,
    arrow_schema,
    record_sequence,
    check_blob,
    check_builder,
    check_offset,
    check_timestamp,
    codec_name,
    control_marker,
    decompress,
    encode_header,
    end_txn_marker,
    no_timestamp_fault,
    record_errors_error,
    timestamp_fault,
    timestamp_type_name,
    wrap64,
)
from ._legacy import LegacyBatch, build_legacy

_INT32_MAX = 0x7FFFFFFF
_OFFSET_LENGTH = struct.Struct(">qi")


class Record:
    """One record. ``offset`` and ``timestamp`` are absolute; the rest is as on the wire."""

    __slots__ = ("offset", "timestamp", "key", "value", "headers", "attributes", "timestamp_delta", "offset_delta",
                 "size")

    def __init__(self, offset, timestamp, key, value, headers=(), attributes=0, timestamp_delta=0, offset_delta=0,
                 size=-1):
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = tuple(headers)
        self.attributes = attributes
        self.timestamp_delta = timestamp_delta
        self.offset_delta = offset_delta
        self.size = size

    def __eq__(self, other):
        if not isinstance(other, Record):
            return NotImplemented
        return (self.offset == other.offset and self.timestamp == other.timestamp and self.key == other.key
                and self.value == other.value and tuple(self.headers) == tuple(other.headers))

    __hash__ = None

    def __repr__(self):
        return (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, value={self.value!r}, "
                f"headers={self.headers!r})")


def _uvarint(buf, pos, end, nbytes, what):
    """An unsigned varint of at most nbytes bytes (5 for int32, 10 for int64)."""
    start = pos
    value = shift = 0
    for _ in range(nbytes):
        if pos >= end:
            raise Fault(f"truncated {what}", start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            bits = 32 if nbytes == 5 else 64
            if value >> bits:
                raise Fault(f"{what} does not fit {bits} bits", start)
            return value, pos
        shift += 7
    raise Fault(f"{what} is longer than {nbytes} bytes", start)


def _varint(buf, pos, end, what):
    if pos < end and buf[pos] < 0x80:  # one byte, the common case
        u = buf[pos]
        return (u >> 1) ^ -(u & 1), pos + 1
    u, pos = _uvarint(buf, pos, end, 5, what)
    return (u >> 1) ^ -(u & 1), pos


def _varlong(buf, pos, end, what):
    if pos < end and buf[pos] < 0x80:
        u = buf[pos]
        return (u >> 1) ^ -(u & 1), pos + 1
    u, pos = _uvarint(buf, pos, end, 10, what)
    return (u >> 1) ^ -(u & 1), pos


def _iter_records(buf, pos, end, count, base_offset, base_timestamp, log_append_time):
    """count v2 records from buf[pos:end], one at a time; raises Fault at the first fault."""
    for index in range(count):
        if pos >= end:
            raise Fault(f"the batch ends after {index} of its {count} records", pos)
        start = pos
        size, pos = _varint(buf, pos, end, "record length")
        if size < 0 or size > end - pos:
            raise Fault(f"record length {size} overruns the batch ({end - pos} bytes left)", start)
        stop = pos + size
        if pos >= stop:
            raise Fault("truncated record attributes", pos)
        attributes = buf[pos]
        ts_delta, pos = _varlong(buf, pos + 1, stop, "timestamp delta")
        offset_delta, pos = _varint(buf, pos, stop, "offset delta")
        key, pos = _blob(buf, pos, stop, "key")
        value, pos = _blob(buf, pos, stop, "value")
        n, pos = _varint(buf, pos, stop, "header count")
        if n < 0:
            raise Fault(f"header count {n} is negative", pos)
        headers = ()
        if n:
            headers = []
            for _ in range(n):
                at = pos
                name, pos = _blob(buf, pos, stop, "header key")
                if name is None:
                    raise Fault("header key is null", at)
                try:
                    name = name.decode()
                except UnicodeDecodeError:
                    raise Fault("header key is not UTF-8", at) from None
                hvalue, pos = _blob(buf, pos, stop, "header value")
                headers.append((name, hvalue))
            headers = tuple(headers)
        if pos != stop:
            raise Fault(f"record length {size} leaves {stop - pos} bytes after its headers", pos)
        timestamp = log_append_time if log_append_time is not None else wrap64(base_timestamp + ts_delta)
        yield Record(wrap64(base_offset + offset_delta), timestamp, key, value, headers, attributes, ts_delta,
                     offset_delta, size)
    if pos != end:
        raise Fault(f"{end - pos} bytes follow the last of the batch's {count} records", pos)


def _blob(buf, pos, end, what):
    at = pos
    n, pos = _varint(buf, pos, end, f"{what} length")
    if n == -1:
        return None, pos
    if n < -1 or n > end - pos:
        raise Fault(f"{what} length {n} overruns the record ({end - pos} bytes left)" if n >= 0
                     else f"{what} length {n} is negative", at)
    return bytes(buf[pos:pos + n]), pos + n


class RecordBatch:
    """One magic-2 record batch over a zero-copy view; its records are decoded on demand."""

    __slots__ = ("position", "base_offset", "batch_length", "partition_leader_epoch", "magic", "crc", "attributes",
                 "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
                 "base_sequence", "record_count", "_raw", "_max_decompressed")

    def __init__(self, raw, position, max_decompressed):
        if len(raw) < BATCH_HEADER_SIZE:
            raise RecordsError(f"a record batch needs {BATCH_HEADER_SIZE} bytes, got {len(raw)}", position)
        (self.base_offset, self.batch_length, self.partition_leader_epoch, self.magic, self.crc, self.attributes,
         self.last_offset_delta, self.base_timestamp, self.max_timestamp, self.producer_id, self.producer_epoch,
         self.base_sequence, self.record_count) = BATCH_HEADER.unpack_from(raw)
        self._raw = raw
        self.position = position
        self._max_decompressed = max_decompressed

    raw = property(lambda self: self._raw, doc="The batch's bytes (a memoryview of the input).")
    compression = property(lambda self: Compression(self.attributes & CODEC_MASK)
                           if self.attributes & CODEC_MASK < 5 else self.attributes & CODEC_MASK)
    timestamp_type = property(lambda self: TimestampType(1 if self.attributes & TIMESTAMP_TYPE_MASK else 0))
    is_transactional = property(lambda self: bool(self.attributes & TRANSACTIONAL_MASK))
    is_control = property(lambda self: bool(self.attributes & CONTROL_MASK))
    has_delete_horizon = property(lambda self: bool(self.attributes & DELETE_HORIZON_MASK))
    delete_horizon_ms = property(lambda self: self.base_timestamp if self.attributes & DELETE_HORIZON_MASK else None)
    last_offset = property(lambda self: wrap64(self.base_offset + self.last_offset_delta))
    next_offset = property(lambda self: wrap64(self.base_offset + self.last_offset_delta + 1))

    def crc_ok(self):
        return crc32c(self._raw[ATTRIBUTES_OFFSET:]) == self.crc

    def __len__(self):
        return self.record_count

    def __iter__(self):
        """The records one at a time: a huge batch costs one record object at a time."""
        if self.record_count < 0:
            raise RecordsError(f"record count {self.record_count} is negative", self.position + 57, self.base_offset,
                               kind="invalid")
        codec = self.attributes & CODEC_MASK
        payload = self._raw[BATCH_HEADER_SIZE:]
        if codec:
            payload = decompress(codec, payload, self._max_decompressed, 2, self.position + BATCH_HEADER_SIZE,
                                 self.base_offset)
        lat = self.max_timestamp if self.attributes & TIMESTAMP_TYPE_MASK else None
        try:
            yield from _iter_records(payload, 0, len(payload), self.record_count, self.base_offset,
                                     self.base_timestamp, lat)
        except Fault as f:
            if codec:
                raise RecordsError(f.reason, self.position, self.base_offset, f.at, kind="invalid") from None
            raise RecordsError(f.reason, self.position + BATCH_HEADER_SIZE + f.at, self.base_offset,
                               kind="invalid") from None

    def records(self):
        """The batch's records, decoded (and decompressed) now."""
        return list(self)

    @property
    def control_marker(self):
        """For a control batch, its first record as a ControlMarker; None otherwise."""
        if not self.attributes & CONTROL_MASK:
            return None
        records = self.records()
        if not records:
            return None
        try:
            return control_marker(records[0].key, records[0].value)
        except ValueError as e:
            raise RecordsError(str(e), self.position, self.base_offset) from None

    def __repr__(self):
        return (f"RecordBatch(base_offset={self.base_offset}, records={self.record_count}, "
                f"compression={codec_name(self.attributes & CODEC_MASK)}, size={self.batch_length + LOG_OVERHEAD})")


def iter_batches(data, *, validate=True, max_decompressed=DEFAULT_MAX_DECOMPRESSED, allow_partial=False):
    """The batches in data, read lazily: each header now, its records when asked for.

    validate checks each batch's CRC as it is reached. allow_partial ends the
    iteration quietly at a truncated last batch, as consumers do with fetch
    responses; otherwise that raises RecordsError.
    """
    return scan_batches(data, validate, max_decompressed, allow_partial, RecordBatch, Record)


def scan_batches(data, validate, max_decompressed, allow_partial, batch_cls, record_cls):
    view = memoryview(data).cast("B") if not isinstance(data, memoryview) or data.format != "B" else data
    end = len(view)
    pos = 0
    while pos < end:
        left = end - pos
        if left < MAGIC_OFFSET + 1:
            if allow_partial:
                return
            raise RecordsError(f"truncated batch header: {left} bytes left", pos, kind="truncated")
        base_offset, length = _OFFSET_LENGTH.unpack_from(view, pos)
        magic = view[pos + MAGIC_OFFSET]
        if magic == 2:
            if length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
                raise RecordsError(f"batch length {length} is below the {BATCH_HEADER_SIZE}-byte header",
                                   pos + 8, base_offset, kind="corrupt")
        elif magic > 2:
            raise RecordsError(f"unknown record batch magic {magic}", pos + MAGIC_OFFSET, base_offset, kind="corrupt")
        if length < 0 or length > left - LOG_OVERHEAD:
            if allow_partial and length >= 0:
                return
            raise RecordsError(f"batch length {length} overruns the input ({left - LOG_OVERHEAD} bytes left)",
                               pos + 8, base_offset, kind="truncated")
        stop = pos + LOG_OVERHEAD + length
        if magic < 2:
            yield LegacyBatch(view, pos, stop, record_cls, validate, max_decompressed)
        else:
            batch = batch_cls(view[pos:stop], pos, max_decompressed)
            if validate and not batch.crc_ok():
                raise RecordsError(f"CRC32C mismatch: stored {batch.crc:#010x}, computed "
                                   f"{crc32c(view[pos + ATTRIBUTES_OFFSET:stop]):#010x}", pos + CRC_OFFSET,
                                   base_offset, kind="corrupt")
            count = batch.record_count
            if count < 0:
                raise RecordsError(f"record count {count} is negative", pos + RECORD_COUNT_OFFSET, base_offset,
                                   kind="invalid")
            # What the bytes (or the cap on decompressing them) can hold bounds the count, before anything
            # sizes itself by it (list(batch) asks len(batch) first).
            room = max_decompressed if batch.attributes & CODEC_MASK else stop - pos - BATCH_HEADER_SIZE
            if count > room // MIN_RECORD_SIZE:
                raise RecordsError(f"record count {count} is more than {room} bytes of records can hold",
                                   pos + RECORD_COUNT_OFFSET, base_offset, kind="invalid")
            yield batch
        pos = stop


def produced_batches(data, max_batch_bytes=None, max_decompressed=DEFAULT_MAX_DECOMPRESSED, *, client=False,
                     single=False, allow_partial=False, require_keys=False, now_ms=None, timestamp_before_ms=None,
                     timestamp_after_ms=None):
    """Record data as a producer sends it, checked where it lies: [(header, position)] of its batches, each
    header as BATCH_HEADER unpacks it. RecordsError names the first fault, its byte and its kind.

    What a broker checks before it appends, in Kafka's order: first the framing of the whole data (whole magic-2
    batches; with single, exactly one); then each batch: no larger than max_batch_bytes, a good CRC, a known
    codec, a record count the bytes can hold that matches the last offset delta (control batches aside), and
    every record inside well formed, which decompresses compressed batches (at most max_decompressed bytes).

    allow_partial: an incomplete batch at the end is left out quietly (the caller keeps the bytes before it), as
    Kafka leaves it, instead of raising. client: the rules Kafka keeps for batches that producers send (not for
    the broker's own): base offset 0, at least one record, a base sequence wherever there is a producer id, and
    in compressed batches record offset deltas 0, 1, ... in order. require_keys: every record has a key (a
    compacted topic's). now_ms: record timestamps are checked against the broker's clock, at most
    timestamp_before_ms earlier and timestamp_after_ms later (None: no bound), as CreateTime topics check them.
    Records refused one by one (no key, a timestamp out of range) are all listed, in the error's record_errors.
    """
    view = memoryview(data).cast("B") if not isinstance(data, memoryview) or data.format != "B" else data
    checks = (client, require_keys, now_ms, INT64_MAX if timestamp_before_ms is None else timestamp_before_ms,
              INT64_MAX if timestamp_after_ms is None else timestamp_after_ms)
    return [(_check_batch(view, pos, size, max_batch_bytes, max_decompressed, checks), pos)
            for pos, size in _spans(view, single, allow_partial)]


def _spans(view, single, allow_partial):
    """[(position, size)] of the batches in view, from their lengths and magic bytes alone."""
    end = len(view)
    spans = []
    pos = 0
    while pos < end:
        left = end - pos
        if left < LOG_OVERHEAD or (not allow_partial and left <= MAGIC_OFFSET):
            if allow_partial:
                break
            raise RecordsError(f"truncated batch header: {left} bytes left", pos, kind="truncated")
        base_offset, length = _OFFSET_LENGTH.unpack_from(view, pos)
        if allow_partial and length < MIN_BATCH_LENGTH:
            raise RecordsError(f"batch length {length} is below the {BATCH_HEADER_SIZE}-byte header", pos + 8,
                               base_offset, kind="corrupt")
        if left <= MAGIC_OFFSET:
            break
        magic = view[pos + MAGIC_OFFSET]
        if magic > 2 or magic < 2 and not (single and spans):
            raise RecordsError(f"magic {magic} record data; only magic 2 batches are taken", pos + MAGIC_OFFSET,
                               base_offset, kind="corrupt" if magic > 2 else "magic")
        if not allow_partial:
            if left < BATCH_HEADER_SIZE:
                raise RecordsError(f"truncated batch header: {left} bytes left", pos, base_offset, kind="truncated")
            if length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
                raise RecordsError(f"batch length {length} is below the {BATCH_HEADER_SIZE}-byte header", pos + 8,
                                   base_offset, kind="corrupt")
        if length > left - LOG_OVERHEAD:
            if allow_partial:
                break
            raise RecordsError(f"batch length {length} overruns the input ({left - LOG_OVERHEAD} bytes left)",
                               pos + 8, base_offset, kind="truncated")
        if single and spans:
            raise RecordsError(f"a second batch at byte {pos}, where one batch is allowed", pos, base_offset,
                               kind="multiple")
        spans.append((pos, length + LOG_OVERHEAD))
        pos += length + LOG_OVERHEAD
    if not spans:
        what = "no record batch in the data" if not end else f"no whole record batch in the {end} bytes of data"
        raise RecordsError(what, 0, kind="empty")
    return spans


def _check_batch(view, pos, size, max_batch_bytes, max_decompressed, checks):
    """One batch's header, checked, and its records (see produced_batches)."""
    client, require_keys, now_ms, before_ms, after_ms = checks
    base_offset, length = _OFFSET_LENGTH.unpack_from(view, pos)
    if client and base_offset != 0:
        raise RecordsError(f"base offset {base_offset}; a producer's batch starts at offset 0", pos, base_offset,
                           kind="invalid")
    if max_batch_bytes is not None and size > max_batch_bytes:
        raise RecordsError(f"a batch of {size} bytes is over the limit of {max_batch_bytes}", pos, base_offset,
                           kind="too_large")
    if length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
        raise RecordsError(f"batch length {length} is below the {BATCH_HEADER_SIZE}-byte header", pos + 8,
                           base_offset, kind="corrupt")
    header = BATCH_HEADER.unpack_from(view, pos)
    (_, _, _, _, crc, attributes, last_delta, base_ts, max_ts, producer_id, _, base_sequence, count) = header
    computed = crc32c(view[pos + ATTRIBUTES_OFFSET:pos + size])
    if computed != crc:
        raise RecordsError(f"CRC32C mismatch: stored {crc:#010x}, computed {computed:#010x}", pos + CRC_OFFSET,
                           base_offset, kind="corrupt")
    codec = attributes & CODEC_MASK
    if codec > 4:
        raise RecordsError(f"unknown compression codec {codec}", pos + ATTRIBUTES_OFFSET, base_offset,
                           kind="compression")
    if count < 0:
        raise RecordsError(f"record count {count} is negative", pos + RECORD_COUNT_OFFSET, base_offset,
                           kind="invalid")
    if client and count == 0:
        raise RecordsError("record count 0; a producer's batch holds records", pos + RECORD_COUNT_OFFSET,
                           base_offset, kind="invalid")
    room = max_decompressed if codec else size - BATCH_HEADER_SIZE
    if count > room // MIN_RECORD_SIZE:
        raise RecordsError(f"record count {count} is more than {room} bytes of records can hold",
                           pos + RECORD_COUNT_OFFSET, base_offset, kind="invalid")
    if count != last_delta + 1 and not attributes & CONTROL_MASK:
        raise RecordsError(f"record count {count} does not match last offset delta {last_delta}", pos + 23,
                           base_offset, kind="invalid")
    if client and producer_id >= 0 and base_sequence < 0:
        raise RecordsError(f"base sequence {base_sequence} with producer id {producer_id}; an idempotent batch "
                           "numbers its records", pos + 53, base_offset, kind="invalid")
    payload, first = view, pos + BATCH_HEADER_SIZE
    stop = pos + size
    if codec:
        payload = decompress(codec, view[first:stop], max_decompressed, 2, first, base_offset)
        first, stop = 0, len(payload)
    log_append = max_ts if attributes & TIMESTAMP_TYPE_MASK else None
    try:
        refused, timestamps, in_order = _walk_records(payload, first, stop, count, base_ts, log_append, checks)
    except Fault as f:
        if codec:
            raise RecordsError(f.reason, pos, base_offset, f.at, kind="invalid") from None
        raise RecordsError(f.reason, f.at, base_offset, kind="invalid") from None
    if refused:
        raise record_errors_error(refused, timestamps, count, pos, base_offset)
    if client and codec and not in_order:
        raise RecordsError(f"the records' offset deltas are not 0 to {count - 1} in order", pos, base_offset,
                           kind="offsets")
    return header


def _walk_records(buf, pos, end, count, base_ts, log_append, checks):
    """Check count records in buf[pos:end], framed as _iter_records reads them, and what checks asks of them, without
    making them: ([(index, reason)] of the records refused, whether a timestamp is among them, whether the offset
    deltas are 0, 1, ... in order). Raises Fault for a malformed record, as _iter_records would."""
    _, require_keys, now_ms, before_ms, after_ms = checks
    refused = []
    timestamps = False
    in_order = True
    for index in range(count):
        if pos >= end:
            raise Fault(f"the batch ends after {index} of its {count} records", pos)
        start = pos
        size, pos = _varint(buf, pos, end, "record length")
        if size < 0 or size > end - pos:
            raise Fault(f"record length {size} overruns the batch ({end - pos} bytes left)", start)
        stop = pos + size
        if pos >= stop:
            raise Fault("truncated record attributes", pos)
        ts_delta, pos = _varlong(buf, pos + 1, stop, "timestamp delta")
        offset_delta, pos = _varint(buf, pos, stop, "offset delta")
        key, pos = _skip_blob(buf, pos, stop, "key")
        _, pos = _skip_blob(buf, pos, stop, "value")
        n, pos = _varint(buf, pos, stop, "header count")
        if n < 0:
            raise Fault(f"header count {n} is negative", pos)
        for _ in range(n):
            at = pos
            name, pos = _skip_blob(buf, pos, stop, "header key")
            if name < 0:
                raise Fault("header key is null", at)
            try:
                bytes(buf[pos - name:pos]).decode()
            except UnicodeDecodeError:
                raise Fault("header key is not UTF-8", at) from None
            _, pos = _skip_blob(buf, pos, stop, "header value")
        if pos != stop:
            raise Fault(f"record length {size} leaves {stop - pos} bytes after its headers", pos)
        if require_keys and key < 0:
            refused.append((index, NO_KEY))
            continue
        if now_ms is not None:
            timestamp = log_append if log_append is not None else wrap64(base_ts + ts_delta)
            reason = timestamp_fault(timestamp, now_ms, before_ms, after_ms) if timestamp != NO_TIMESTAMP else \
                no_timestamp_fault() if log_append is not None else None
            if reason is not None:
                refused.append((index, reason))
                timestamps = True
                continue
        if offset_delta != index:
            in_order = False
    if pos != end:
        raise Fault(f"{end - pos} bytes follow the last of the batch's {count} records", pos)
    return refused, timestamps, in_order


def _skip_blob(buf, pos, end, what):
    """A varint-length-prefixed field's length (-1: null) and the position after it, checked as _blob checks it."""
    at = pos
    n, pos = _varint(buf, pos, end, f"{what} length")
    if n == -1:
        return -1, pos
    if n < -1 or n > end - pos:
        raise Fault(f"{what} length {n} overruns the record ({end - pos} bytes left)" if n >= 0
                    else f"{what} length {n} is negative", at)
    return n, pos + n


def to_arrow(data, *, validate=True, max_decompressed=DEFAULT_MAX_DECOMPRESSED, allow_partial=False):
    pa = arrow()

    cols = {name: [] for name in arrow_schema().names}
    for batch in iter_batches(data, validate=validate, max_decompressed=max_decompressed,
                              allow_partial=allow_partial):
        ts_type = timestamp_type_name(batch.timestamp_type)
        codec = codec_name(batch.compression)
        for rec in batch.records():
            cols["offset"].append(rec.offset)
            cols["timestamp"].append(None if rec.timestamp == NO_TIMESTAMP else rec.timestamp)
            cols["timestamp_type"].append(ts_type)
            cols["key"].append(rec.key)
            cols["value"].append(rec.value)
            cols["headers"].append([{"key": k, "value": v} for k, v in rec.headers])
            cols["partition_leader_epoch"].append(batch.partition_leader_epoch)
            cols["producer_id"].append(batch.producer_id)
            cols["producer_epoch"].append(batch.producer_epoch)
            cols["sequence"].append(record_sequence(batch.base_sequence, rec.offset_delta) if batch.magic == 2 else -1)
            cols["transactional"].append(batch.is_transactional)
            cols["control"].append(batch.is_control)
            cols["compression"].append(codec)
    return pa.table(cols, schema=arrow_schema())


class RecordBatchBuilder:
    """Builds one record batch (magic 2) or legacy message set (magic 0/1), as the Java client writes it."""

    def __init__(self, *, magic=2, compression=Compression.NONE, compression_level=None, base_offset=0,
                 partition_leader_epoch=-1, producer_id=-1, producer_epoch=-1, base_sequence=-1,
                 transactional=False, control=False, timestamp_type=TimestampType.CREATE_TIME,
                 log_append_time=None, delete_horizon_ms=None):
        check_builder(self, magic, compression, compression_level, transactional, control, timestamp_type,
                      log_append_time, delete_horizon_ms, base_offset, partition_leader_epoch, producer_id,
                      producer_epoch, base_sequence)
        self._records = []  # (offset delta, timestamp, key, value, headers as encoded pairs)

    def append(self, key, value, *, headers=(), timestamp=None, offset=None):
        """Add a record; returns its offset. timestamp defaults to now (ms), offset to the next one."""
        delta, timestamp = _next_record(self, timestamp, offset)
        check_blob(key, "key")
        check_blob(value, "value")
        if headers and self.magic < 2:
            raise ValueError("record headers need magic 2")
        encoded = tuple(encode_header(h) for h in headers)
        self._records.append((delta, timestamp, key, value, encoded))
        return self.base_offset + delta

    def append_end_txn_marker(self, commit, coordinator_epoch=0, timestamp=None):
        """Add a commit or abort control record (the builder must be transactional and control)."""
        if not (self.control and self.transactional):
            raise ValueError("end-transaction markers belong in transactional control batches")
        key, value = end_txn_marker(commit, coordinator_epoch)
        return self.append(key, value, timestamp=timestamp)

    def __len__(self):
        return len(self._records)

    def build(self):
        """The batch's bytes; b"" when no record was appended (Java's empty records)."""
        if not self._records:
            return b""
        if self.magic < 2:
            return build_legacy(self.magic, self.compression, self.compression_level, self.base_offset,
                                [r[:4] for r in self._records], self.timestamp_type, self.log_append_time)
        base_ts = self.delete_horizon_ms if self.delete_horizon_ms is not None else self._records[0][1]
        body = bytearray()
        for delta, timestamp, key, value, headers in self._records:
            rec = bytearray(b"\0")
            _put_varlong(rec, wrap64(timestamp - base_ts))
            _put_varint(rec, delta)
            _put_blob(rec, key)
            _put_blob(rec, value)
            _put_varint(rec, len(headers))
            for name, hvalue in headers:
                _put_blob(rec, name)
                _put_blob(rec, hvalue)
            _put_varint(body, len(rec))
            body += rec
        if self.compression:
            body = _compression.compress(self.compression, body, self.compression_level)
        return _frame_batch(self, base_ts, body)


def _frame_batch(builder, base_ts, body):
    records = builder._records
    max_ts = builder.log_append_time if builder.timestamp_type == TimestampType.LOG_APPEND_TIME \
        else max(r[1] for r in records)
    out = bytearray(BATCH_HEADER.pack(
        builder.base_offset, BATCH_HEADER_SIZE - LOG_OVERHEAD + len(body), builder.partition_leader_epoch, 2, 0,
        builder.attributes, records[-1][0], base_ts, max_ts, builder.producer_id, builder.producer_epoch,
        builder.base_sequence, len(records)))
    out += body
    out[CRC_OFFSET:ATTRIBUTES_OFFSET] = crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]).to_bytes(4, "big")
    return bytes(out)


def _next_record(b, timestamp, offset):
    records = b._records
    last = records[-1][0] if records else -1
    if offset is None:
        delta = last + 1
    else:
        if type(offset) is not int:
            raise TypeError(f"offset must be an int, not {type(offset).__name__}")
        delta = offset - b.base_offset
        if delta <= last:
            raise ValueError(f"offset {offset} is not above the last appended offset {b.base_offset + last}")
        if delta > _INT32_MAX:
            raise ValueError(f"offset {offset} is more than 2**31-1 past the base offset {b.base_offset}")
    check_offset(b.base_offset, delta)
    if b.magic == 0:
        return delta, NO_TIMESTAMP
    if timestamp is None:
        timestamp = time.time_ns() // 1_000_000
    check_timestamp(timestamp)
    return delta, timestamp


def _put_varint(out, v):
    _put_uvarint(out, ((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)


def _put_varlong(out, v):
    _put_uvarint(out, ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _put_uvarint(out, u):
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)


def _put_blob(out, value):
    if value is None:
        out.append(1)  # zigzag(-1)
        return
    _put_varint(out, len(value))
    out += value
