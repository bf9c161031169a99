# cython: language_level=3, boundscheck=False, wraparound=False
# The compiled record codec: the twin of _pyrecords.py, with the same results,
# errors and byte positions. Records are parsed straight from the buffer into
# Record objects, or into Arrow column buffers with no Python object per record.

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.unicode cimport PyUnicode_AsUTF8AndSize, PyUnicode_DecodeUTF8
from libc.stdint cimport INT64_MAX, int8_t, int16_t, int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcmp, memcpy, memset


from kafkaproto._core cimport gc_pause, gc_resume
from kafkaproto.records._cbuffers cimport (Bits, Buf, grow, put_bit, put_i16, put_i32, put_i64, reserve,
                                          sequence_of)
from kafkaproto.records._ccrc32c cimport kp_crc32c
from kafkaproto.records._clz4 cimport unlz4_from

import time

from ..exceptions import RecordsError
from . import _compression
from .checksum import crc32c
from ._common import (
    DEFAULT_MAX_DECOMPRESSED,
    NO_KEY,
    Compression,
    Fault,
    TimestampType,
    arrow,
    arrow_schema,
    check_blob,
    check_builder,
    check_offset,
    check_timestamp,
    codec_error,
    codec_name,
    control_marker,
    decompress,
    encode_header,
    end_txn_marker,
    no_timestamp_fault,
    record_errors_error,
    timestamp_fault,
    timestamp_type_name,
)
from ._legacy import LegacyBatch, build_legacy
from ._pyrecords import scan_batches

kp_crc32c(NULL, 0)

cdef enum:
    HEADER_SIZE = 61
    LOG_OVERHEAD = 12
    ATTRIBUTES_OFFSET = 21
    CRC_OFFSET = 17
    CODEC_MASK = 0x07
    LZ4 = 3
    TIMESTAMP_TYPE_MASK = 0x08
    TRANSACTIONAL_MASK = 0x10
    CONTROL_MASK = 0x20
    DELETE_HORIZON_MASK = 0x40
    INT32_MAX = 0x7FFFFFFF

cdef tuple NO_HEADERS = ()


# Records cannot take part in reference cycles (their fields are read-only and
# hold bytes, str and tuples), so they stay out of the cyclic GC.
@cython.no_gc
@cython.freelist(512)
cdef class Record:
    """One record. ``offset`` and ``timestamp`` are absolute; the rest is as on the wire."""

    cdef readonly int64_t offset
    cdef readonly int64_t timestamp
    cdef readonly object key
    cdef readonly object value
    cdef readonly tuple headers
    cdef readonly int attributes
    cdef readonly int64_t timestamp_delta
    cdef readonly int32_t offset_delta
    cdef readonly int32_t size

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
        cdef Record o = other
        return (self.offset == o.offset and self.timestamp == o.timestamp and self.key == o.key
                and self.value == o.value and self.headers == o.headers)

    __hash__ = None

    def __repr__(self):
        return (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, value={self.value!r}, "
                f"headers={self.headers!r})")


# ---- parsing one record ----------------------------------------------------

cdef struct RecView:
    int32_t size
    int attributes
    int64_t timestamp_delta
    int32_t offset_delta
    Py_ssize_t key_at      # -1: null
    Py_ssize_t key_len
    Py_ssize_t value_at
    Py_ssize_t value_len
    Py_ssize_t headers_at
    int32_t header_count
    bint headers_ascii     # every header key is ASCII, so valid UTF-8 without decoding


cdef int fault(str reason, Py_ssize_t at) except -1:
    gc_resume()  # before any Python code runs (see _core.gc_pause)
    raise Fault(reason, at)


cdef uint64_t uvarint_slow(const unsigned char* buf, Py_ssize_t* pos, Py_ssize_t end, int nbytes,
                           str what) except? 0xFFFFFFFFFFFFFFFF:
    cdef Py_ssize_t start = pos[0], p = pos[0]
    cdef uint64_t value = 0
    cdef int shift = 0, i
    cdef unsigned char b
    cdef int bits = 32 if nbytes == 5 else 64
    for i in range(nbytes):
        if p >= end:
            fault(f"truncated {what}", start)
        b = buf[p]
        p += 1
        value |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            if (bits == 32 and value >> 32) or (bits == 64 and i == 9 and b > 1):
                fault(f"{what} does not fit {bits} bits", start)
            pos[0] = p
            return value
        shift += 7
    fault(f"{what} is longer than {nbytes} bytes", start)


cdef inline int32_t varint(const unsigned char* buf, Py_ssize_t* pos, Py_ssize_t end, str what) except? -1:
    cdef Py_ssize_t p = pos[0]
    cdef uint32_t u
    if p < end and buf[p] < 0x80:
        u = buf[p]
        pos[0] = p + 1
    elif p + 1 < end and buf[p + 1] < 0x80:  # two bytes: lengths and deltas up to 8191
        u = (buf[p] & 0x7F) | (<uint32_t>buf[p + 1] << 7)
        pos[0] = p + 2
    else:
        u = <uint32_t>uvarint_slow(buf, pos, end, 5, what)
    return <int32_t>((u >> 1) ^ (-(<int32_t>(u & 1))))


cdef inline int64_t varlong(const unsigned char* buf, Py_ssize_t* pos, Py_ssize_t end, str what) except? -1:
    cdef Py_ssize_t p = pos[0]
    cdef uint64_t u
    if p < end and buf[p] < 0x80:
        u = buf[p]
        pos[0] = p + 1
    elif p + 1 < end and buf[p + 1] < 0x80:
        u = (buf[p] & 0x7F) | (<uint64_t>buf[p + 1] << 7)
        pos[0] = p + 2
    else:
        u = uvarint_slow(buf, pos, end, 10, what)
    return <int64_t>((u >> 1) ^ (-(<int64_t>(u & 1))))


cdef inline Py_ssize_t blob(const unsigned char* buf, Py_ssize_t* pos, Py_ssize_t end, Py_ssize_t* length,
                            str what, str what_length) except -2:
    """A varint-length-prefixed blob: its start (-1 when null), its length in length[0]."""
    cdef Py_ssize_t at = pos[0]
    cdef int32_t n = varint(buf, pos, end, what_length)
    if n == -1:
        length[0] = 0
        return -1
    if n < -1:
        fault(f"{what} length {n} is negative", at)
    if n > end - pos[0]:
        fault(f"{what} length {n} overruns the record ({end - pos[0]} bytes left)", at)
    at = pos[0]
    pos[0] = at + n
    length[0] = n
    return at


cdef Py_ssize_t parse_record(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end, RecView* r) except -1:
    """Check one record at pos and note where its fields are; returns the position after it."""
    cdef Py_ssize_t start = pos, stop, at, klen, vlen, i, k
    cdef int32_t size = varint(buf, &pos, end, "record length")
    if size < 0 or size > end - pos:
        fault(f"record length {size} overruns the batch ({end - pos} bytes left)", start)
    stop = pos + size
    if pos >= stop:
        fault("truncated record attributes", pos)
    r.size = size
    r.attributes = buf[pos]
    pos += 1
    r.timestamp_delta = varlong(buf, &pos, stop, "timestamp delta")
    r.offset_delta = varint(buf, &pos, stop, "offset delta")
    r.key_at = blob(buf, &pos, stop, &r.key_len, "key", "key length")
    r.value_at = blob(buf, &pos, stop, &r.value_len, "value", "value length")
    cdef int32_t n = varint(buf, &pos, stop, "header count")
    if n < 0:
        fault(f"header count {n} is negative", pos)
    r.header_count = n
    r.headers_at = pos
    r.headers_ascii = True
    for i in range(n):
        at = pos
        k = blob(buf, &pos, stop, &klen, "header key", "header key length")
        if k < 0:
            fault("header key is null", at)
        if not ascii(buf + k, klen):
            r.headers_ascii = False
            try:
                PyUnicode_DecodeUTF8(<const char*>buf + k, klen, NULL)
            except UnicodeDecodeError:
                fault("header key is not UTF-8", at)
        blob(buf, &pos, stop, &vlen, "header value", "header value length")
    if pos != stop:
        fault(f"record length {size} leaves {stop - pos} bytes after its headers", pos)
    return pos


cdef inline bint ascii(const unsigned char* p, Py_ssize_t n) noexcept:
    cdef Py_ssize_t i
    for i in range(n):
        if p[i] >= 0x80:
            return False
    return True


cdef inline Py_ssize_t next_header(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t* k, Py_ssize_t* klen,
                                   Py_ssize_t* v, Py_ssize_t* vlen) noexcept:
    """Walk one header that parse_record already checked."""
    k[0] = blob_unchecked(buf, &pos, klen)
    v[0] = blob_unchecked(buf, &pos, vlen)
    return pos


cdef inline Py_ssize_t blob_unchecked(const unsigned char* buf, Py_ssize_t* pos, Py_ssize_t* length) noexcept:
    cdef uint32_t u = 0
    cdef int shift = 0
    cdef unsigned char b
    cdef Py_ssize_t p = pos[0]
    while True:
        b = buf[p]
        p += 1
        u |= (<uint32_t>(b & 0x7F)) << shift
        if b < 0x80:
            break
        shift += 7
    cdef int32_t n = <int32_t>((u >> 1) ^ (-(<int32_t>(u & 1))))
    if n < 0:
        pos[0] = p
        length[0] = 0
        return -1
    pos[0] = p + n
    length[0] = n
    return p


cdef inline object make_blob(const unsigned char* buf, Py_ssize_t at, Py_ssize_t n):
    if at < 0:
        return None
    return PyBytes_FromStringAndSize(<const char*>buf + at, n)


cdef enum:
    NAME_CACHE = 8


cdef struct NameCache:
    # Header keys repeat from record to record; the previous record's keys, by header index.
    const unsigned char* at[NAME_CACHE]
    Py_ssize_t len[NAME_CACHE]


cdef tuple make_headers(const unsigned char* buf, RecView* r, NameCache* cache, list names):
    if r.header_count == 0:
        return NO_HEADERS
    cdef tuple out = PyTuple_New(r.header_count)
    cdef Py_ssize_t pos = r.headers_at, k, klen, v, vlen, i
    cdef object pair, name
    for i in range(r.header_count):
        pos = next_header(buf, pos, &k, &klen, &v, &vlen)
        if i < NAME_CACHE and cache.len[i] == klen and cache.at[i] != NULL and memcmp(cache.at[i], buf + k, klen) == 0:
            name = names[i]
        else:
            name = PyUnicode_DecodeUTF8(<const char*>buf + k, klen, NULL)
            if i < NAME_CACHE:
                cache.at[i] = buf + k
                cache.len[i] = klen
                names[i] = name
        pair = (name, make_blob(buf, v, vlen))
        Py_INCREF(pair)
        PyTuple_SET_ITEM(out, i, pair)
    return out


cdef struct Cursor:
    # Where decoding of one batch's records stands.
    const unsigned char* buf
    Py_ssize_t pos
    Py_ssize_t end
    int32_t index
    int32_t count
    int64_t base_offset
    int64_t base_timestamp
    int64_t max_timestamp
    bint log_append
    NameCache cache


cdef Record next_record(Cursor* c, list names):
    """The record at the cursor (checked), moving past it."""
    cdef RecView r
    if c.pos >= c.end:
        fault(f"the batch ends after {c.index} of its {c.count} records", c.pos)
    c.pos = parse_record(c.buf, c.pos, c.end, &r)
    c.index += 1
    cdef Record rec = Record.__new__(Record)
    rec.offset = add64(c.base_offset, r.offset_delta)
    rec.timestamp = c.max_timestamp if c.log_append else add64(c.base_timestamp, r.timestamp_delta)
    rec.key = make_blob(c.buf, r.key_at, r.key_len)
    rec.value = make_blob(c.buf, r.value_at, r.value_len)
    rec.headers = make_headers(c.buf, &r, &c.cache, names)
    rec.attributes = r.attributes
    rec.timestamp_delta = r.timestamp_delta
    rec.offset_delta = r.offset_delta
    rec.size = r.size
    return rec


cdef int check_end(Cursor* c) except -1:
    if c.pos != c.end:
        fault(f"{c.end - c.pos} bytes follow the last of the batch's {c.count} records", c.pos)
    return 0


cdef class RecordBatch


@cython.final
cdef class RecordIterator:
    """A batch's records decoded one at a time, so a huge batch never holds them all."""

    cdef RecordBatch batch
    cdef object payload
    cdef Py_buffer view
    cdef bint has_view
    cdef Cursor cursor
    cdef list names

    def __dealloc__(self):
        if self.has_view:
            PyBuffer_Release(&self.view)

    def __iter__(self):
        return self

    def __next__(self):
        cdef Cursor* c = &self.cursor
        try:
            if c.index < c.count:
                return next_record(c, self.names)
            if c.buf != NULL:
                check_end(c)
                c.buf = NULL
        except Fault as f:
            c.index = c.count
            c.buf = NULL
            raise self.batch.fault_error(f) from None
        raise StopIteration


# ---- batches ---------------------------------------------------------------

cdef inline int64_t add64(int64_t a, int64_t b) noexcept:
    """a + b as Java's long arithmetic does it (wrapping, not undefined)."""
    return <int64_t>(<uint64_t>a + <uint64_t>b)


cdef inline int64_t be64(const unsigned char* p) noexcept:
    return <int64_t>((<uint64_t>be32(p) << 32) | <uint32_t>be32(p + 4))


cdef inline uint32_t be32(const unsigned char* p) noexcept:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline int16_t be16(const unsigned char* p) noexcept:
    return <int16_t>((<uint32_t>p[0] << 8) | p[1])


cdef class RecordBatch:
    """One magic-2 record batch over a zero-copy view; its records are decoded on demand."""

    cdef readonly Py_ssize_t position
    cdef readonly int64_t base_offset
    cdef readonly int32_t batch_length
    cdef readonly int32_t partition_leader_epoch
    cdef readonly int magic
    cdef readonly uint32_t crc
    cdef readonly int attributes
    cdef readonly int32_t last_offset_delta
    cdef readonly int64_t base_timestamp
    cdef readonly int64_t max_timestamp
    cdef readonly int64_t producer_id
    cdef readonly int16_t producer_epoch
    cdef readonly int32_t base_sequence
    cdef readonly int32_t record_count
    cdef readonly object raw
    cdef Py_ssize_t max_decompressed

    def __init__(self, raw, Py_ssize_t position, Py_ssize_t max_decompressed):
        cdef Py_buffer view
        PyObject_GetBuffer(raw, &view, PyBUF_SIMPLE)
        try:
            if view.len < HEADER_SIZE:
                raise RecordsError(f"a record batch needs {HEADER_SIZE} bytes, got {view.len}", position)
            self.read_header(<const unsigned char*>view.buf)
        finally:
            PyBuffer_Release(&view)
        self.raw = raw
        self.position = position
        self.max_decompressed = max_decompressed

    cdef void read_header(self, const unsigned char* p) noexcept:
        self.base_offset = be64(p)
        self.batch_length = <int32_t>be32(p + 8)
        self.partition_leader_epoch = <int32_t>be32(p + 12)
        self.magic = <int8_t>p[16]
        self.crc = be32(p + 17)
        self.attributes = be16(p + 21)
        self.last_offset_delta = <int32_t>be32(p + 23)
        self.base_timestamp = be64(p + 27)
        self.max_timestamp = be64(p + 35)
        self.producer_id = be64(p + 43)
        self.producer_epoch = be16(p + 51)
        self.base_sequence = <int32_t>be32(p + 53)
        self.record_count = <int32_t>be32(p + 57)

    @property
    def compression(self):
        codec = self.attributes & CODEC_MASK
        return Compression(codec) if codec < 5 else codec

    @property
    def timestamp_type(self):
        return TimestampType(1 if self.attributes & TIMESTAMP_TYPE_MASK else 0)

    @property
    def is_transactional(self):
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self):
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self):
        return bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def delete_horizon_ms(self):
        return self.base_timestamp if self.attributes & DELETE_HORIZON_MASK else None

    @property
    def last_offset(self):
        return add64(self.base_offset, self.last_offset_delta)

    @property
    def next_offset(self):
        return add64(self.base_offset, <int64_t>self.last_offset_delta + 1)

    def crc_ok(self):
        return crc32c(self.raw[ATTRIBUTES_OFFSET:]) == self.crc

    def __len__(self):
        return self.record_count

    def __iter__(self):
        """The records one at a time: a huge batch costs one record object at a time."""
        cdef RecordIterator it = RecordIterator.__new__(RecordIterator)
        it.batch = self
        it.payload = self.payload()
        PyObject_GetBuffer(it.payload, &it.view, PyBUF_SIMPLE)
        it.has_view = True
        it.names = [None] * NAME_CACHE
        self.start(&it.cursor, &it.view)
        return it

    cdef void start(self, Cursor* c, Py_buffer* view) noexcept:
        memset(c, 0, sizeof(Cursor))
        c.buf = <const unsigned char*>view.buf
        c.end = view.len
        c.count = self.record_count
        c.base_offset = self.base_offset
        c.base_timestamp = self.base_timestamp
        c.max_timestamp = self.max_timestamp
        c.log_append = self.attributes & TIMESTAMP_TYPE_MASK

    cdef object payload(self):
        """The records' bytes: a view of the input, or the decompressed buffer."""
        if self.record_count < 0:
            raise RecordsError(f"record count {self.record_count} is negative", self.position + 57, self.base_offset,
                               kind="invalid")
        codec = self.attributes & CODEC_MASK
        payload = self.raw[HEADER_SIZE:]
        if codec:
            payload = decompress(codec, payload, self.max_decompressed, 2, self.position + HEADER_SIZE,
                                 self.base_offset)
        return payload

    cdef object fault_error(self, f):
        if self.attributes & CODEC_MASK:
            return RecordsError(f.reason, self.position, self.base_offset, f.at, kind="invalid")
        return RecordsError(f.reason, self.position + HEADER_SIZE + f.at, self.base_offset, kind="invalid")

    def records(self):
        """The batch's records, decoded (and decompressed) now."""
        payload = self.payload()
        cdef Py_buffer view
        cdef Cursor c
        cdef list out = []
        cdef list names = [None] * NAME_CACHE
        PyObject_GetBuffer(payload, &view, PyBUF_SIMPLE)
        self.start(&c, &view)
        # Thousands of new objects would trigger collections that find nothing.
        gc_pause(view.len)
        try:
            while c.index < c.count:
                out.append(next_record(&c, names))
            check_end(&c)
            return out
        except Fault as f:
            raise self.fault_error(f) from None
        finally:
            gc_resume()
            PyBuffer_Release(&view)

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
                f"compression={codec_name(self.attributes & CODEC_MASK)}, "
                f"size={self.batch_length + LOG_OVERHEAD})")


def iter_batches(data, *, validate=True, max_decompressed=DEFAULT_MAX_DECOMPRESSED, allow_partial=False):
    """The batches in data, read lazily: each header now, its records when asked for.

    validate checks each batch's CRC as it is reached. allow_partial ends the
    iteration quietly at a truncated last batch, as consumers do with fetch
    responses; otherwise that raises RecordsError.
    """
    return scan_batches(data, validate, max_decompressed, allow_partial, RecordBatch, Record)


def produced_batches(data, max_batch_bytes=None, max_decompressed=DEFAULT_MAX_DECOMPRESSED, *, client=False,
                     single=False, allow_partial=False, require_keys=False, now_ms=None, timestamp_before_ms=None,
                     timestamp_after_ms=None):
    """Record data as a producer sends it, checked where it lies: [(header, position)] (see
    _pyrecords.produced_batches, which behaves the same)."""
    cdef Py_buffer view
    cdef Checks checks
    checks.limit = -1 if max_batch_bytes is None else max_batch_bytes
    checks.max_decompressed = max_decompressed
    checks.client = client
    checks.keys = require_keys
    checks.timestamps = now_ms is not None
    checks.now = now_ms if now_ms is not None else 0
    checks.before = INT64_MAX if timestamp_before_ms is None else timestamp_before_ms
    checks.after = INT64_MAX if timestamp_after_ms is None else timestamp_after_ms
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return _produced(data, <const unsigned char*>view.buf, view.len, single, allow_partial, &checks)
    finally:
        PyBuffer_Release(&view)


cdef struct Checks:
    Py_ssize_t limit
    Py_ssize_t max_decompressed
    bint client
    bint keys
    bint timestamps
    int64_t now
    int64_t before
    int64_t after


cdef list _produced(object data, const unsigned char* buf, Py_ssize_t end, bint single, bint allow_partial,
                    Checks* checks):
    # The framing of the whole data first (where each batch is), as Kafka's request handler reads it; then each
    # batch's header and records, as its log does.
    cdef list spans = []
    cdef list out = []
    cdef Py_ssize_t pos = 0, left, size
    cdef int64_t base_offset
    cdef int32_t length
    cdef int magic
    while pos < end:
        left = end - pos
        if left < LOG_OVERHEAD or (not allow_partial and left <= 16):
            if allow_partial:
                break
            raise RecordsError(f"truncated batch header: {left} bytes left", pos, kind="truncated")
        base_offset = be64(buf + pos)
        length = <int32_t>be32(buf + pos + 8)
        if allow_partial and length < 14:  # MIN_BATCH_LENGTH
            raise RecordsError(f"batch length {length} is below the {HEADER_SIZE}-byte header", pos + 8, base_offset,
                               kind="corrupt")
        if left <= 16:
            break
        magic = buf[pos + 16]
        if magic > 2 or (magic < 2 and not (single and spans)):
            raise RecordsError(f"magic {magic} record data; only magic 2 batches are taken", pos + 16, base_offset,
                               kind="corrupt" if magic > 2 else "magic")
        if not allow_partial:
            if left < HEADER_SIZE:
                raise RecordsError(f"truncated batch header: {left} bytes left", pos, base_offset, kind="truncated")
            if length < HEADER_SIZE - LOG_OVERHEAD:
                raise RecordsError(f"batch length {length} is below the {HEADER_SIZE}-byte header", pos + 8,
                                   base_offset, kind="corrupt")
        if length > left - LOG_OVERHEAD:
            if allow_partial:
                break
            raise RecordsError(f"batch length {length} overruns the input ({left - LOG_OVERHEAD} bytes left)",
                               pos + 8, base_offset, kind="truncated")
        if single and spans:
            raise RecordsError(f"a second batch at byte {pos}, where one batch is allowed", pos, base_offset,
                               kind="multiple")
        size = <Py_ssize_t>length + LOG_OVERHEAD
        spans.append(pos)
        pos += size
    if not spans:
        raise RecordsError("no record batch in the data" if not end else
                           f"no whole record batch in the {end} bytes of data", 0, kind="empty")
    cdef object whole = memoryview(data).cast("B") if not isinstance(data, memoryview) or data.format != "B" else data
    for item in spans:
        pos = item
        out.append((_check_batch(whole, buf, pos, checks), pos))
    return out


cdef tuple _check_batch(object whole, const unsigned char* buf, Py_ssize_t pos, Checks* checks):
    """One batch's header, checked, and its records (see _pyrecords.produced_batches)."""
    cdef int64_t base_offset = be64(buf + pos)
    cdef int32_t length = <int32_t>be32(buf + pos + 8)
    cdef Py_ssize_t size = <Py_ssize_t>length + LOG_OVERHEAD, room
    if checks.client and base_offset != 0:
        raise RecordsError(f"base offset {base_offset}; a producer's batch starts at offset 0", pos, base_offset,
                           kind="invalid")
    if checks.limit >= 0 and size > checks.limit:
        raise RecordsError(f"a batch of {size} bytes is over the limit of {checks.limit}", pos, base_offset,
                           kind="too_large")
    if length < HEADER_SIZE - LOG_OVERHEAD:
        raise RecordsError(f"batch length {length} is below the {HEADER_SIZE}-byte header", pos + 8, base_offset,
                           kind="corrupt")
    cdef uint32_t crc = be32(buf + pos + CRC_OFFSET)
    cdef uint32_t computed = kp_crc32c(buf + pos + ATTRIBUTES_OFFSET, size - ATTRIBUTES_OFFSET)
    if computed != crc:
        raise RecordsError(f"CRC32C mismatch: stored {crc:#010x}, computed {computed:#010x}", pos + CRC_OFFSET,
                           base_offset, kind="corrupt")
    cdef int16_t attributes = be16(buf + pos + ATTRIBUTES_OFFSET)
    cdef int codec = attributes & CODEC_MASK
    cdef int32_t last_delta = <int32_t>be32(buf + pos + 23)
    cdef int64_t base_ts = be64(buf + pos + 27), max_ts = be64(buf + pos + 35), producer_id = be64(buf + pos + 43)
    cdef int32_t base_sequence = <int32_t>be32(buf + pos + 53)
    cdef int32_t count = <int32_t>be32(buf + pos + 57)
    if codec > 4:
        raise RecordsError(f"unknown compression codec {codec}", pos + ATTRIBUTES_OFFSET, base_offset,
                           kind="compression")
    if count < 0:
        raise RecordsError(f"record count {count} is negative", pos + 57, base_offset, kind="invalid")
    if checks.client and count == 0:
        raise RecordsError("record count 0; a producer's batch holds records", pos + 57, base_offset, kind="invalid")
    room = checks.max_decompressed if codec else size - HEADER_SIZE
    if count > room // 7:  # MIN_RECORD_SIZE
        raise RecordsError(f"record count {count} is more than {room} bytes of records can hold", pos + 57,
                           base_offset, kind="invalid")
    if count != <int64_t>last_delta + 1 and not attributes & CONTROL_MASK:
        raise RecordsError(f"record count {count} does not match last offset delta {last_delta}", pos + 23,
                           base_offset, kind="invalid")
    if checks.client and producer_id >= 0 and base_sequence < 0:
        raise RecordsError(f"base sequence {base_sequence} with producer id {producer_id}; an idempotent batch "
                           "numbers its records", pos + 53, base_offset, kind="invalid")
    cdef Walk w
    w.count = count
    w.base_ts = base_ts
    w.max_ts = max_ts
    w.log_append = attributes & TIMESTAMP_TYPE_MASK
    w.timestamp_errors = False
    w.in_order = True
    cdef Py_buffer view
    cdef object refused
    try:
        if codec == LZ4:  # the common codec, decoded with no Python call between
            try:
                payload = unlz4_from(buf + pos + HEADER_SIZE, size - HEADER_SIZE, checks.max_decompressed, 2)
            except _compression.CodecError as e:
                raise codec_error(e, pos + HEADER_SIZE, base_offset) from None
        elif codec:
            payload = decompress(codec, whole[pos + HEADER_SIZE:pos + size], checks.max_decompressed, 2,
                                 pos + HEADER_SIZE, base_offset)
        if codec:
            PyObject_GetBuffer(payload, &view, PyBUF_SIMPLE)
            try:
                refused = walk_records(<const unsigned char*>view.buf, 0, view.len, checks, &w)
            finally:
                PyBuffer_Release(&view)
        else:
            refused = walk_records(buf, pos + HEADER_SIZE, pos + size, checks, &w)
    except Fault as f:
        if codec:
            raise RecordsError(f.reason, pos, base_offset, f.at, kind="invalid") from None
        raise RecordsError(f.reason, f.at, base_offset, kind="invalid") from None
    if refused is not None:
        raise record_errors_error(refused, w.timestamp_errors, count, pos, base_offset)
    if checks.client and codec and not w.in_order:
        raise RecordsError(f"the records' offset deltas are not 0 to {count - 1} in order", pos, base_offset,
                           kind="offsets")
    return (base_offset, length, <int32_t>be32(buf + pos + 12), 2, crc, attributes, last_delta, base_ts, max_ts,
            producer_id, be16(buf + pos + 51), base_sequence, count)


cdef struct Walk:
    # One batch's records as walk_records finds them.
    int32_t count
    int64_t base_ts
    int64_t max_ts
    bint log_append
    bint timestamp_errors  # some record's timestamp is refused
    bint in_order          # offset deltas 0, 1, ...


cdef list walk_records(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end, Checks* checks, Walk* w):
    """Check w.count records in buf[pos:end], each framed as it must be, and what checks asks of them: the records
    refused one by one [(index, reason)], or None. One pass, and no object made unless a record is refused.
    Raises Fault for a malformed record."""
    cdef RecView r
    cdef int32_t index
    cdef int64_t ts, early
    cdef list refused = None
    for index in range(w.count):
        if pos >= end:
            fault(f"the batch ends after {index} of its {w.count} records", pos)
        pos = parse_record(buf, pos, end, &r)
        if checks.keys and r.key_at < 0:
            if refused is None:
                refused = []
            refused.append((index, NO_KEY))
            continue
        if checks.timestamps:
            ts = w.max_ts if w.log_append else add64(w.base_ts, r.timestamp_delta)
            if ts != -1:
                early = <int64_t>(<uint64_t>checks.now - <uint64_t>ts)
                if early > checks.before or <int64_t>(<uint64_t>0 - <uint64_t>early) > checks.after:
                    if refused is None:
                        refused = []
                    refused.append((index, timestamp_fault(ts, checks.now, checks.before, checks.after)))
                    w.timestamp_errors = True
                    continue
            elif w.log_append:
                if refused is None:
                    refused = []
                refused.append((index, no_timestamp_fault()))
                w.timestamp_errors = True
                continue
        if r.offset_delta != index:
            w.in_order = False
    if pos != end:
        fault(f"{end - pos} bytes follow the last of the batch's {w.count} records", pos)
    return refused


# ---- Arrow -----------------------------------------------------------------

cdef struct BinCol:
    Buf offsets   # int32, one more than the rows
    Buf data
    Bits valid


cdef int bin_init(BinCol* c) except -1:
    put_i32(&c.offsets, 0)
    return 0


cdef inline int bin_put(BinCol* c, const void* p, Py_ssize_t n, bint valid) except -1:
    if valid:
        if c.data.len + n > INT32_MAX:
            raise RecordsError("more than 2 GiB of keys, values or headers for one Arrow column", 0)
        memcpy(reserve(&c.data, n), p, n)
    put_bit(&c.valid, valid)
    put_i32(&c.offsets, <int32_t>c.data.len)
    return 0


cdef void buf_free(Buf* b) noexcept:
    free(b.data)
    b.data = NULL


cdef struct Columns:
    Py_ssize_t rows
    Buf offset
    Buf timestamp
    Bits timestamp_valid
    BinCol timestamp_type
    BinCol key
    BinCol value
    Buf header_offsets
    BinCol header_key
    BinCol header_value
    Buf leader_epoch
    Buf producer_id
    Buf producer_epoch
    Buf sequence
    Bits transactional
    Bits control
    BinCol compression


cdef void bin_free(BinCol* c) noexcept:
    buf_free(&c.offsets)
    buf_free(&c.data)
    buf_free(&c.valid.buf)


cdef void columns_free(Columns* c) noexcept:
    cdef Buf* bufs[10]
    cdef BinCol* cols[6]
    bufs[:] = [&c.offset, &c.timestamp, &c.timestamp_valid.buf, &c.header_offsets, &c.leader_epoch, &c.producer_id,
               &c.producer_epoch, &c.sequence, &c.transactional.buf, &c.control.buf]
    cols[:] = [&c.timestamp_type, &c.key, &c.value, &c.header_key, &c.header_value, &c.compression]
    for i in range(10):
        buf_free(bufs[i])
    for i in range(6):
        bin_free(cols[i])


cdef struct BatchInfo:
    const char* timestamp_type
    Py_ssize_t timestamp_type_len
    const char* compression
    Py_ssize_t compression_len
    int32_t leader_epoch
    int64_t producer_id
    int16_t producer_epoch
    int32_t base_sequence
    int64_t base_offset
    bint transactional
    bint control


cdef int put_row(Columns* c, BatchInfo* b, int64_t offset, int64_t timestamp) except -1:
    """The per-row columns other than key, value and headers."""
    put_i64(&c.offset, offset)
    put_i64(&c.timestamp, timestamp)
    put_bit(&c.timestamp_valid, timestamp != -1)
    bin_put(&c.timestamp_type, b.timestamp_type, b.timestamp_type_len, True)
    put_i32(&c.leader_epoch, b.leader_epoch)
    put_i64(&c.producer_id, b.producer_id)
    put_i16(&c.producer_epoch, b.producer_epoch)
    put_i32(&c.sequence, sequence_of(b.base_sequence, offset - b.base_offset))
    put_bit(&c.transactional, b.transactional)
    put_bit(&c.control, b.control)
    bin_put(&c.compression, b.compression, b.compression_len, True)
    c.rows += 1
    return 0


cdef int arrow_v2(Columns* c, BatchInfo* b, RecordBatch batch) except -1:
    payload = batch.payload()
    cdef Py_buffer view
    cdef const unsigned char* buf
    cdef Py_ssize_t pos = 0, end, hpos, k, klen, v, vlen
    cdef int32_t index, h
    cdef RecView r
    cdef bint log_append = batch.attributes & TIMESTAMP_TYPE_MASK
    PyObject_GetBuffer(payload, &view, PyBUF_SIMPLE)
    try:
        buf = <const unsigned char*>view.buf
        end = view.len
        for index in range(batch.record_count):
            if pos >= end:
                fault(f"the batch ends after {index} of its {batch.record_count} records", pos)
            pos = parse_record(buf, pos, end, &r)
            put_row(c, b, add64(batch.base_offset, r.offset_delta),
                    batch.max_timestamp if log_append else add64(batch.base_timestamp, r.timestamp_delta))
            bin_put(&c.key, buf + r.key_at, r.key_len, r.key_at >= 0)
            bin_put(&c.value, buf + r.value_at, r.value_len, r.value_at >= 0)
            hpos = r.headers_at
            for h in range(r.header_count):
                hpos = next_header(buf, hpos, &k, &klen, &v, &vlen)
                bin_put(&c.header_key, buf + k, klen, True)
                bin_put(&c.header_value, buf + v, vlen, v >= 0)
            put_i32(&c.header_offsets, <int32_t>c.header_key.valid.n)
        if pos != end:
            fault(f"{end - pos} bytes follow the last of the batch's {batch.record_count} records", pos)
    except Fault as f:
        raise batch.fault_error(f) from None
    finally:
        PyBuffer_Release(&view)
    return 0


cdef int put_object(BinCol* c, object value) except -1:
    cdef Py_buffer view
    if value is None:
        return bin_put(c, NULL, 0, False)
    PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
    try:
        bin_put(c, view.buf, view.len, True)
    finally:
        PyBuffer_Release(&view)
    return 0


cdef int arrow_legacy(Columns* c, BatchInfo* b, batch) except -1:
    for rec in batch.records():
        put_row(c, b, rec.offset, rec.timestamp)
        put_object(&c.key, rec.key)
        put_object(&c.value, rec.value)
        put_i32(&c.header_offsets, <int32_t>c.header_key.valid.n)
    return 0


cdef object to_buffer(Buf* b):
    if b.data == NULL:
        return b""
    return PyBytes_FromStringAndSize(b.data, b.len)


# Rows point at these names' bytes, so they live as long as the module.
TIMESTAMP_TYPE_NAMES = tuple(timestamp_type_name(kind).encode() for kind in (-1, 0, 1))
CODEC_NAMES = tuple(codec_name(codec).encode() for codec in range(8))


def to_arrow(data, *, validate=True, max_decompressed=DEFAULT_MAX_DECOMPRESSED, allow_partial=False):
    """A pyarrow Table with one row per record of every batch in data (see arrow_schema())."""
    pa = arrow()

    cdef Columns c
    cdef BatchInfo info
    memset(&c, 0, sizeof(Columns))
    try:
        bin_init(&c.timestamp_type)
        bin_init(&c.key)
        bin_init(&c.value)
        bin_init(&c.header_key)
        bin_init(&c.header_value)
        bin_init(&c.compression)
        put_i32(&c.header_offsets, 0)
        for batch in scan_batches(data, validate, max_decompressed, allow_partial, RecordBatch, Record):
            ts_name = TIMESTAMP_TYPE_NAMES[int(batch.timestamp_type) + 1]
            codec = CODEC_NAMES[int(batch.compression)]
            info.timestamp_type = PyBytes_AS_STRING(ts_name)
            info.timestamp_type_len = len(ts_name)
            info.compression = PyBytes_AS_STRING(codec)
            info.compression_len = len(codec)
            info.leader_epoch = batch.partition_leader_epoch
            info.producer_id = batch.producer_id
            info.producer_epoch = batch.producer_epoch
            info.base_sequence = batch.base_sequence
            info.base_offset = batch.base_offset if type(batch) is RecordBatch else 0
            info.transactional = batch.is_transactional
            info.control = batch.is_control
            if type(batch) is RecordBatch:
                arrow_v2(&c, &info, <RecordBatch>batch)
            else:
                arrow_legacy(&c, &info, batch)
        return build_table(pa, &c)
    finally:
        columns_free(&c)


cdef object bits_buffer(pa, Bits* b):
    return None if b.nulls == 0 else pa.py_buffer(to_buffer(&b.buf))


cdef object bin_array(pa, typ, BinCol* c):
    return pa.Array.from_buffers(typ, c.valid.n, [bits_buffer(pa, &c.valid), pa.py_buffer(to_buffer(&c.offsets)),
                                                  pa.py_buffer(to_buffer(&c.data))])


cdef object fixed_array(pa, typ, Py_ssize_t n, Buf* b, Bits* valid):
    return pa.Array.from_buffers(typ, n, [None if valid == NULL else bits_buffer(pa, valid),
                                          pa.py_buffer(to_buffer(b))])


cdef object bool_array(pa, Bits* b):
    return pa.Array.from_buffers(pa.bool_(), b.n, [None, pa.py_buffer(to_buffer(&b.buf))])


cdef object build_table(pa, Columns* c):
    schema = arrow_schema()
    n = c.rows
    header_type = schema.field("headers").type
    header_struct = pa.StructArray.from_arrays(
        [bin_array(pa, pa.string(), &c.header_key), bin_array(pa, pa.binary(), &c.header_value)],
        fields=list(header_type.value_type))
    headers = pa.ListArray.from_buffers(header_type, n, [None, pa.py_buffer(to_buffer(&c.header_offsets))],
                                        children=[header_struct])
    columns = [
        fixed_array(pa, pa.int64(), n, &c.offset, NULL),
        fixed_array(pa, pa.timestamp("ms"), n, &c.timestamp, &c.timestamp_valid),
        bin_array(pa, pa.string(), &c.timestamp_type),
        bin_array(pa, pa.binary(), &c.key),
        bin_array(pa, pa.binary(), &c.value),
        headers,
        fixed_array(pa, pa.int32(), n, &c.leader_epoch, NULL),
        fixed_array(pa, pa.int64(), n, &c.producer_id, NULL),
        fixed_array(pa, pa.int16(), n, &c.producer_epoch, NULL),
        fixed_array(pa, pa.int32(), n, &c.sequence, NULL),
        bool_array(pa, &c.transactional),
        bool_array(pa, &c.control),
        bin_array(pa, pa.string(), &c.compression),
    ]
    return pa.Table.from_arrays(columns, schema=schema)


# ---- building ----------------------------------------------------------------

cdef inline int put_uvarint(Buf* b, uint64_t u) except -1:
    while u >= 0x80:
        reserve(b, 1)[0] = <char>((u & 0x7F) | 0x80)
        u >>= 7
    reserve(b, 1)[0] = <char>u
    return 0


cdef inline int put_varint(Buf* b, int32_t v) except -1:
    return put_uvarint(b, <uint32_t>((<uint32_t>v << 1) ^ <uint32_t>(v >> 31)))


cdef inline int put_varlong(Buf* b, int64_t v) except -1:
    return put_uvarint(b, (<uint64_t>v << 1) ^ <uint64_t>(v >> 63))


cdef int put_blob(Buf* b, object value) except -1:
    cdef Py_buffer view
    cdef Py_ssize_t n
    if value is None:
        reserve(b, 1)[0] = 1  # zigzag(-1)
        return 0
    if type(value) is bytes:
        n = PyBytes_GET_SIZE(value)
        put_varint(b, <int32_t>n)
        memcpy(reserve(b, n), PyBytes_AS_STRING(value), n)
        return 0
    PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
    try:
        put_varint(b, <int32_t>view.len)
        memcpy(reserve(b, view.len), view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return 0


cdef class RecordBatchBuilder:
    """Builds one record batch (magic 2) or legacy message set (magic 0/1), as the Java client writes it."""

    cdef public object magic, compression, compression_level, transactional, control, timestamp_type
    cdef public object log_append_time, delete_horizon_ms, attributes
    cdef public int64_t base_offset
    cdef public int32_t partition_leader_epoch, base_sequence
    cdef public int64_t producer_id
    cdef public int16_t producer_epoch
    cdef Buf body           # magic 2: the records, encoded as they are appended
    cdef Buf record         # scratch for one record, whose length prefix comes first
    cdef int32_t count
    cdef int32_t last_delta
    cdef int64_t base_timestamp, max_timestamp
    cdef list legacy        # magic 0/1: (offset delta, timestamp, key, value)

    def __init__(self, *, magic=2, compression=Compression.NONE, compression_level=None, base_offset=0,
                 partition_leader_epoch=-1, producer_id=-1, producer_epoch=-1, base_sequence=-1,
                 transactional=False, control=False, timestamp_type=TimestampType.CREATE_TIME,
                 log_append_time=None, delete_horizon_ms=None):
        check_builder(self, magic, compression, compression_level, transactional, control, timestamp_type,
                      log_append_time, delete_horizon_ms, base_offset, partition_leader_epoch, producer_id,
                      producer_epoch, base_sequence)
        self.last_delta = -1
        self.legacy = []

    def __dealloc__(self):
        buf_free(&self.body)
        buf_free(&self.record)

    def append(self, key, value, *, headers=(), timestamp=None, offset=None):
        """Add a record; returns its offset. timestamp defaults to now (ms), offset to the next one."""
        cdef int64_t delta
        if offset is None:
            delta = <int64_t>self.last_delta + 1
        else:
            if type(offset) is not int:
                raise TypeError(f"offset must be an int, not {type(offset).__name__}")
            asked = offset - self.base_offset  # a Python int: offset may be any size
            if asked <= self.last_delta:
                raise ValueError(f"offset {offset} is not above the last appended offset "
                                 f"{self.base_offset + self.last_delta}")
            if asked > INT32_MAX:
                raise ValueError(f"offset {offset} is more than 2**31-1 past the base offset {self.base_offset}")
            delta = asked
        if self.base_offset > INT64_MAX - delta:
            check_offset(self.base_offset, delta)
        if self.magic == 0:
            timestamp = -1
        elif timestamp is None:
            timestamp = time.time_ns() // 1_000_000
        else:
            check_timestamp(timestamp)
        if not (key is None or type(key) is bytes):
            check_blob(key, "key")
        if not (value is None or type(value) is bytes):
            check_blob(value, "value")
        cdef int64_t ts = timestamp
        if self.magic < 2:
            if headers:
                raise ValueError("record headers need magic 2")
            self.legacy.append((delta, ts, key, value))
        else:
            self.put_record(<int32_t>delta, ts, key, value, headers)
        self.last_delta = <int32_t>delta
        self.count += 1
        return self.base_offset + delta

    cdef int put_record(self, int32_t delta, int64_t ts, key, value, headers) except -1:
        cdef Buf* r = &self.record
        cdef Py_ssize_t n
        cdef const char* name
        r.len = 0
        reserve(r, 1)[0] = 0  # attributes
        base = self.base_timestamp if self.count else (ts if self.delete_horizon_ms is None
                                                       else self.delete_horizon_ms)
        put_varlong(r, <int64_t>(<uint64_t>ts - <uint64_t><int64_t>base))
        put_varint(r, delta)
        put_blob(r, key)
        put_blob(r, value)
        put_varint(r, <int32_t>len(headers))
        for pair in headers:
            hkey, hvalue = pair
            if type(hkey) is not str:
                encode_header(pair)  # raises the TypeError
            name = PyUnicode_AsUTF8AndSize(hkey, &n)
            put_varint(r, <int32_t>n)
            memcpy(reserve(r, n), name, n)
            if not (hvalue is None or type(hvalue) is bytes):
                check_blob(hvalue, "header value")
            put_blob(r, hvalue)
        # Only now, with the record checked, does it join the batch.
        if self.count == 0:
            self.base_timestamp = base
            self.max_timestamp = ts
        elif ts > self.max_timestamp:
            self.max_timestamp = ts
        put_varint(&self.body, <int32_t>r.len)
        memcpy(reserve(&self.body, r.len), r.data, r.len)
        return 0

    def append_end_txn_marker(self, commit, coordinator_epoch=0, timestamp=None):
        """Add a commit or abort control record (the builder must be transactional and control)."""
        if not (self.control and self.transactional):
            raise ValueError("end-transaction markers belong in transactional control batches")
        key, value = end_txn_marker(commit, coordinator_epoch)
        return self.append(key, value, timestamp=timestamp)

    def __len__(self):
        return self.count

    def build(self):
        """The batch's bytes; b"" when no record was appended (Java's empty records)."""
        if self.count == 0:
            return b""
        if self.magic < 2:
            return build_legacy(self.magic, self.compression, self.compression_level, self.base_offset,
                                self.legacy, self.timestamp_type, self.log_append_time)
        cdef const char* body = self.body.data
        cdef Py_ssize_t body_len = self.body.len
        compressed = None
        if self.compression:
            compressed = _compression.compress(self.compression, PyBytes_FromStringAndSize(body, body_len),
                                               self.compression_level)
            body = PyBytes_AS_STRING(compressed)
            body_len = len(compressed)
        cdef int64_t max_ts = self.log_append_time if self.timestamp_type == TimestampType.LOG_APPEND_TIME \
            else self.max_timestamp
        out = PyBytes_FromStringAndSize(NULL, HEADER_SIZE + body_len)
        cdef unsigned char* p = <unsigned char*>PyBytes_AS_STRING(out)
        put_be64(p, self.base_offset)
        put_be32(p + 8, <uint32_t>(HEADER_SIZE - LOG_OVERHEAD + body_len))
        put_be32(p + 12, <uint32_t>self.partition_leader_epoch)
        p[16] = 2
        put_be16(p + 21, <uint32_t>self.attributes)
        put_be32(p + 23, <uint32_t>self.last_delta)
        put_be64(p + 27, self.base_timestamp)
        put_be64(p + 35, max_ts)
        put_be64(p + 43, self.producer_id)
        put_be16(p + 51, <uint32_t>self.producer_epoch)
        put_be32(p + 53, <uint32_t>self.base_sequence)
        put_be32(p + 57, <uint32_t>self.count)
        memcpy(p + HEADER_SIZE, body, body_len)
        put_be32(p + CRC_OFFSET, kp_crc32c(p + ATTRIBUTES_OFFSET, HEADER_SIZE - ATTRIBUTES_OFFSET + body_len))
        return out


cdef inline void put_be64(unsigned char* p, int64_t v) noexcept:
    put_be32(p, <uint32_t>(<uint64_t>v >> 32))
    put_be32(p + 4, <uint32_t>v)


cdef inline void put_be32(unsigned char* p, uint32_t v) noexcept:
    p[0] = <unsigned char>(v >> 24)
    p[1] = <unsigned char>(v >> 16)
    p[2] = <unsigned char>(v >> 8)
    p[3] = <unsigned char>v


cdef inline void put_be16(unsigned char* p, uint32_t v) noexcept:
    p[0] = <unsigned char>(v >> 8)
    p[1] = <unsigned char>v
