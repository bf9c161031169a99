# cython: language_level=3, boundscheck=False, wraparound=False
# Captured records fields made into output in one pass over their bytes, no Python object per record: the JSON
# text of jsonview.records_json, the Arrow columns of tables.record_batches. Only clean magic-2 batches with ASCII
# header keys are read here; for anything else the answer is "not mine", and the general path (kafkaproto.records)
# reads it, errors and all. So the output is the same either way, as long as this is at least as strict.

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_AsUTF8AndSize, PyUnicode_DecodeASCII
from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free
from libc.string cimport memcpy, memset

from ._carrowcols import repeated
from kafkaproto.records._cbuffers cimport Bits, Buf, put, put_bit, put_i32, put_i64, reserve, sequence_of
from kafkaproto.records._ccrc32c cimport kp_crc32c
from ._cbuffers cimport arrow_buffer, put_base64, put_int, put_json_string, put_text

from ..records import _compression
from ..records._common import DEFAULT_MAX_DECOMPRESSED

kp_crc32c(NULL, 0)

cdef enum:
    HEADER_SIZE = 61
    LOG_OVERHEAD = 12
    MIN_BATCH_LENGTH = 49  # HEADER_SIZE - LOG_OVERHEAD
    MIN_RECORD_SIZE = 7
    CODEC_MASK = 0x07
    TIMESTAMP_TYPE_MASK = 0x08
    TRANSACTIONAL_MASK = 0x10
    CONTROL_MASK = 0x20
    INT32_MAX = 0x7FFFFFFF
    FULL = -2  # RecordRows.add: an Arrow column of the rows gathered would pass 2 GiB

cdef const char* CODECS[5]
CODECS[:] = [b"none", b"gzip", b"snappy", b"lz4", b"zstd"]
cdef const char* TIMESTAMP_TYPES[2]
TIMESTAMP_TYPES[:] = [b"CreateTime", b"LogAppendTime"]


# ---- batches and records, checked --------------------------------------------------------------------------------

cdef inline int64_t be64(const unsigned char* p) noexcept:
    return <int64_t>((<uint64_t>be32(p) << 32) | be32(p + 4))


cdef inline uint32_t be32(const unsigned char* p) noexcept:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline int16_t be16(const unsigned char* p) noexcept:
    return <int16_t>((<uint32_t>p[0] << 8) | p[1])


cdef inline int64_t add64(int64_t a, int64_t b) noexcept:
    return <int64_t>(<uint64_t>a + <uint64_t>b)


cdef struct Head:
    Py_ssize_t start, stop  # where the batch lies in the field
    int64_t base_offset, base_timestamp, max_timestamp, producer_id
    int32_t leader_epoch, base_sequence, count
    int16_t producer_epoch
    int attributes


cdef int next_batch(const unsigned char* buf, Py_ssize_t end, Py_ssize_t pos, Head* h) noexcept:
    """1: a magic-2 batch whose framing holds starts at pos (read into h); 0: the field ends at pos (its end, or a
    last batch cut short, which records.iter_batches(allow_partial=True) passes over); -1: not mine."""
    cdef Py_ssize_t left = end - pos
    if left < 17:
        return 0
    cdef int32_t length = <int32_t>be32(buf + pos + 8)
    if buf[pos + 16] != 2 or length < MIN_BATCH_LENGTH:
        return -1
    if length > left - LOG_OVERHEAD:
        return 0
    cdef const unsigned char* p = buf + pos
    h.start, h.stop = pos, pos + LOG_OVERHEAD + length
    h.base_offset = be64(p)
    h.leader_epoch = <int32_t>be32(p + 12)
    h.attributes = be16(p + 21)
    h.base_timestamp = be64(p + 27)
    h.max_timestamp = be64(p + 35)
    h.producer_id = be64(p + 43)
    h.producer_epoch = be16(p + 51)
    h.base_sequence = <int32_t>be32(p + 53)
    h.count = <int32_t>be32(p + 57)
    return 1


cdef object payload_of(object view, const unsigned char* buf, Head* h, bint validate):
    """The batch's records bytes (decompressed, up to the default cap), or None when the general path must judge the
    batch."""
    cdef Py_ssize_t max_decompressed = DEFAULT_MAX_DECOMPRESSED
    if validate and kp_crc32c(buf + h.start + 21, h.stop - h.start - 21) != be32(buf + h.start + 17):
        return None
    cdef int codec = h.attributes & CODEC_MASK
    cdef Py_ssize_t room = max_decompressed if codec else h.stop - h.start - HEADER_SIZE
    if h.count < 0 or h.count > room // MIN_RECORD_SIZE or codec > 4:
        return None
    if not codec:
        return view[h.start + HEADER_SIZE:h.stop]
    try:
        return _compression.decompress(codec, view[h.start + HEADER_SIZE:h.stop], max_decompressed, 2)
    except Exception:  # corrupt or too large: the general path raises the RecordsError that says so
        return None


cdef inline bint uvarint(const unsigned char* buf, Py_ssize_t* pos, Py_ssize_t end, int nbytes,
                         uint64_t* out) noexcept:
    """An unsigned varint of at most nbytes bytes (5: 32 bits, 10: 64 bits); False where records' reader faults."""
    cdef Py_ssize_t p = pos[0]
    cdef uint64_t value = 0
    cdef int shift = 0, i
    cdef unsigned char b
    for i in range(nbytes):
        if p >= end:
            return False
        b = buf[p]
        p += 1
        value |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            if (nbytes == 5 and value >> 32) or (nbytes == 10 and i == 9 and b > 1):
                return False
            pos[0], out[0] = p, value
            return True
        shift += 7
    return False


cdef inline bint varint(const unsigned char* buf, Py_ssize_t* pos, Py_ssize_t end, int32_t* out) noexcept:
    cdef uint64_t u
    if pos[0] < end and buf[pos[0]] < 0x80:
        u = buf[pos[0]]
        pos[0] += 1
    elif not uvarint(buf, pos, end, 5, &u):
        return False
    cdef uint32_t v = <uint32_t>u
    out[0] = <int32_t>((v >> 1) ^ (-(<int32_t>(v & 1))))
    return True


cdef inline bint blob(const unsigned char* buf, Py_ssize_t* pos, Py_ssize_t end, Py_ssize_t* at,
                      Py_ssize_t* length) noexcept:
    """A varint-length-prefixed blob: its start in at (-1 when null) and its length."""
    cdef int32_t n
    if not varint(buf, pos, end, &n) or n < -1 or n > end - pos[0]:
        return False
    if n == -1:
        at[0], length[0] = -1, 0
        return True
    at[0], length[0] = pos[0], n
    pos[0] += n
    return True


cdef struct Rec:
    Py_ssize_t size
    int64_t timestamp_delta
    int32_t offset_delta
    Py_ssize_t key_at, key_len  # key_at -1: null
    Py_ssize_t value_at, value_len
    Py_ssize_t headers_at
    int32_t header_count


cdef Py_ssize_t parse_record(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end, Rec* r) noexcept:
    """The position after the record at pos, its fields noted in r; -1 when it does not read cleanly."""
    cdef int32_t size, n, i
    cdef uint64_t u
    cdef Py_ssize_t start = pos, stop, k, klen, v, vlen, j
    if not varint(buf, &pos, end, &size) or size < 0 or size > end - pos:
        return -1
    stop = pos + size
    if pos >= stop:
        return -1
    r.size = stop - start
    pos += 1  # attributes: unused by all that reads records
    if pos < stop and buf[pos] < 0x80:
        u = buf[pos]
        pos += 1
    elif not uvarint(buf, &pos, stop, 10, &u):
        return -1
    r.timestamp_delta = <int64_t>((u >> 1) ^ (-(<int64_t>(u & 1))))
    if not varint(buf, &pos, stop, &r.offset_delta):
        return -1
    if not blob(buf, &pos, stop, &r.key_at, &r.key_len) or not blob(buf, &pos, stop, &r.value_at, &r.value_len):
        return -1
    if not varint(buf, &pos, stop, &n) or n < 0:
        return -1
    r.header_count = n
    r.headers_at = pos
    for i in range(n):
        if not blob(buf, &pos, stop, &k, &klen) or k < 0:
            return -1
        for j in range(klen):
            if buf[k + j] >= 0x80:
                return -1  # valid UTF-8 or not, a key for the general path
        if not blob(buf, &pos, stop, &v, &vlen):
            return -1
    return pos if pos == stop else -1


cdef inline Py_ssize_t next_header(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t* k, Py_ssize_t* klen,
                                   Py_ssize_t* v, Py_ssize_t* vlen) noexcept:
    """Walk one header of a record parse_record passed."""
    blob(buf, &pos, INT32_MAX + pos, k, klen)
    blob(buf, &pos, INT32_MAX + pos, v, vlen)
    return pos


cdef class Held:
    """Bytes held in place while read: a records field (sliced: memory is a memoryview of them), a batch's records."""
    cdef Py_buffer view
    cdef bint held
    cdef const unsigned char* buf
    cdef Py_ssize_t end
    cdef object memory

    def __cinit__(self, data, bint sliced=False):
        PyObject_GetBuffer(data, &self.view, PyBUF_SIMPLE)
        self.held = True
        self.buf, self.end = <const unsigned char*>self.view.buf, self.view.len
        if sliced:
            self.memory = data if isinstance(data, memoryview) and data.format == "B" else memoryview(data).cast("B")

    def __dealloc__(self):
        if self.held:
            PyBuffer_Release(&self.view)


def records_json(data, bint ensure_ascii=True, bint validate=True):
    """json.dumps(jsonview.records_json(data), ensure_ascii=ensure_ascii, separators=(",", ":")), or None when the
    field is not all clean magic-2 batches (the general path then writes it, errors and all)."""
    cdef Held field = Held(data, True)
    cdef const unsigned char* buf = field.buf
    cdef Py_ssize_t end = field.end, pos = 0
    cdef Buf out
    cdef Head h
    cdef int found
    memset(&out, 0, sizeof(Buf))
    try:
        put(&out, b"[", 1)
        while True:
            found = next_batch(buf, end, pos, &h)
            if found == 0:
                break
            if found < 0 or not batch_json(&out, field.memory, buf, &h, pos > 0, ensure_ascii, validate):
                return None
            pos = h.stop
        put(&out, b"]", 1)
        return PyUnicode_DecodeASCII(out.data, out.len, NULL)
    finally:
        free(out.data)


cdef bint batch_json(Buf* out, object view, const unsigned char* buf, Head* h, bint comma, bint ensure_ascii,
                     bint validate) except -1:
    data = payload_of(view, buf, h, validate)
    if data is None:
        return False
    cdef Held records = Held(data)
    cdef const unsigned char* p = records.buf
    cdef Py_ssize_t pos = 0, end = records.end, hpos, k = 0, klen = 0, v = 0, vlen = 0
    cdef int32_t index, i
    cdef Rec r
    cdef bint log_append = h.attributes & TIMESTAMP_TYPE_MASK
    if comma:
        put(out, b",", 1)
    put_text(out, b'{"base_offset":')
    put_int(out, h.base_offset)
    put_text(out, b',"magic":2,"compression":"')
    put_text(out, CODECS[h.attributes & CODEC_MASK])
    put_text(out, b'","producer_id":')
    put_int(out, h.producer_id)
    put_text(out, b',"producer_epoch":')
    put_int(out, h.producer_epoch)
    put_text(out, b',"base_sequence":')
    put_int(out, h.base_sequence)
    put_text(out, b',"transactional":true' if h.attributes & TRANSACTIONAL_MASK else b',"transactional":false')
    put_text(out, b',"control":true' if h.attributes & CONTROL_MASK else b',"control":false')
    put_text(out, b',"records":[')
    for index in range(h.count):
        if pos >= end:
            return False
        pos = parse_record(p, pos, end, &r)
        if pos < 0:
            return False
        put_text(out, b'{"offset":' if index == 0 else b',{"offset":')
        put_int(out, add64(h.base_offset, r.offset_delta))
        put_text(out, b',"timestamp":')
        put_int(out, h.max_timestamp if log_append else add64(h.base_timestamp, r.timestamp_delta))
        put_text(out, b',"key":')
        put_blob_json(out, p, r.key_at, r.key_len)
        put_text(out, b',"value":')
        put_blob_json(out, p, r.value_at, r.value_len)
        put_text(out, b',"headers":[')
        hpos = r.headers_at
        for i in range(r.header_count):
            hpos = next_header(p, hpos, &k, &klen, &v, &vlen)
            put_text(out, b'{"key":' if i == 0 else b',{"key":')
            put_json_string(out, p + k, klen, ensure_ascii)
            put_text(out, b',"value":')
            put_blob_json(out, p, v, vlen)
            put(out, b"}", 1)
        put(out, b"]}", 2)
    if pos != end:
        return False
    put(out, b"]}", 2)
    return True


cdef inline int put_blob_json(Buf* out, const unsigned char* p, Py_ssize_t at, Py_ssize_t n) except -1:
    if at < 0:
        return put(out, b"null", 4)
    return put_base64(out, p + at, n)


# ---- Arrow columns -----------------------------------------------------------------------------------------------

cdef enum:
    # Buffers: fixed-width columns, and the offsets and bytes of the variable-width ones.
    OFFSET, TIMESTAMP, TIMESTAMP_TYPE, LEADER_EPOCH, PRODUCER_ID, PRODUCER_EPOCH, SEQUENCE, CODEC, FIELD_ROWS,
    HEADER_OFFSETS, KEY_OFFSETS, KEY, VALUE_OFFSETS, VALUE, HKEY_OFFSETS, HKEY, HVALUE_OFFSETS, HVALUE, NBUFS

cdef enum:
    # Bitmaps: validity, and the boolean columns' values.
    TIMESTAMP_VALID, KEY_VALID, VALUE_VALID, HVALUE_VALID, TRANSACTIONAL, CONTROL, ABORTED, ABORTED_VALID, NBITS

cdef struct Mark:
    Py_ssize_t lens[NBUFS]
    Py_ssize_t bits[NBITS]
    Py_ssize_t nulls[NBITS]
    Py_ssize_t rows, headers


cdef class RecordRows:
    """The rows of many records fields gathered as Arrow column buffers: kafkaproto.records.to_arrow's columns,
    and the "aborted" outcome (transactions.aborted_array's)."""

    cdef Buf bufs[NBUFS]
    cdef Bits bits[NBITS]
    cdef readonly Py_ssize_t rows
    cdef readonly Py_ssize_t fields   # fields with rows since the last build (their row counts: FIELD_ROWS)
    cdef Py_ssize_t headers
    cdef object pa, schema, outcomes

    def __cinit__(self, pa, schema, outcomes):
        """pa: pyarrow; schema: kafkaproto.records.arrow_schema(); outcomes: transactions.outcomes."""
        self.pa, self.schema, self.outcomes = pa, schema, outcomes
        memset(self.bufs, 0, sizeof(self.bufs))
        memset(self.bits, 0, sizeof(self.bits))
        self.reset()

    def __dealloc__(self):
        cdef int i
        for i in range(NBUFS):
            free(self.bufs[i].data)
        for i in range(NBITS):
            free(self.bits[i].buf.data)

    cdef int reset(self) except -1:
        cdef int i
        for i in range(NBUFS):
            self.bufs[i].len = 0
        for i in range(NBITS):
            self.bits[i].buf.len = self.bits[i].n = self.bits[i].nulls = 0
        for i in (HEADER_OFFSETS, KEY_OFFSETS, VALUE_OFFSETS, HKEY_OFFSETS, HVALUE_OFFSETS):
            put_i32(&self.bufs[i], 0)
        self.rows = self.fields = self.headers = 0
        return 0

    cdef void mark(self, Mark* m) noexcept:
        cdef int i
        for i in range(NBUFS):
            m.lens[i] = self.bufs[i].len
        for i in range(NBITS):
            m.bits[i], m.nulls[i] = self.bits[i].n, self.bits[i].nulls
        m.rows, m.headers = self.rows, self.headers

    cdef void rollback(self, Mark* m) noexcept:
        cdef int i
        cdef Bits* b
        for i in range(NBUFS):
            self.bufs[i].len = m.lens[i]
        for i in range(NBITS):
            b = &self.bits[i]
            b.n, b.nulls, b.buf.len = m.bits[i], m.nulls[i], (m.bits[i] + 7) >> 3
            if b.n & 7:
                b.buf.data[b.n >> 3] &= <char>((1 << (b.n & 7)) - 1)
        self.rows, self.headers = m.rows, m.headers

    def add(self, data, bint validate=True, aborted_transactions=None):
        """The rows of every record of a records field (data), added: their number, 0 for none; -1 when the
        field is not one this reads (nothing is added: the general path must), -2 when the rows gathered leave
        no room for it (build, then add again). aborted_transactions: as for transactions.aborted_array."""
        cdef Held field = Held(data, True)
        cdef const unsigned char* buf = field.buf
        cdef Py_ssize_t end = field.end, pos = 0, first
        cdef Head h
        cdef Mark m
        cdef int found, status
        cdef bint transactional = False
        batches = []  # (producer id, transactional, control, first row, rows) of each batch with records
        self.mark(&m)
        while True:
            found = next_batch(buf, end, pos, &h)
            if found == 0:
                break
            payload = payload_of(field.memory, buf, &h, validate) if found > 0 else None
            first = self.rows
            status = -1 if payload is None else self.put_batch(&h, payload)
            if status < 0:
                self.rollback(&m)
                return -1 if status == FULL and m.rows == 0 else status
            if self.rows > first:
                batches.append((h.producer_id, bool(h.attributes & TRANSACTIONAL_MASK),
                                bool(h.attributes & CONTROL_MASK), first, self.rows - first))
                transactional |= (h.attributes & TRANSACTIONAL_MASK) != 0
            pos = h.stop
        if self.rows == m.rows:
            return 0
        self.put_outcomes(batches if transactional else None, aborted_transactions, m.rows)
        put_i64(&self.bufs[FIELD_ROWS], self.rows - m.rows)
        self.fields += 1
        return self.rows - m.rows

    cdef int put_batch(self, Head* h, object data) except -3:
        cdef Held records = Held(data)
        cdef const unsigned char* p = records.buf
        cdef Py_ssize_t pos = 0, end = records.end, hpos, k = 0, klen = 0, v = 0, vlen = 0
        cdef int32_t index, i
        cdef int64_t offset, timestamp
        cdef Rec r
        cdef Buf* bufs = self.bufs
        cdef bint log_append = h.attributes & TIMESTAMP_TYPE_MASK
        cdef unsigned char kind = 1 if log_append else 0, codec = h.attributes & CODEC_MASK
        cdef bint transactional = h.attributes & TRANSACTIONAL_MASK, control = h.attributes & CONTROL_MASK
        for index in range(h.count):
            if pos >= end:
                return -1
            pos = parse_record(p, pos, end, &r)
            if pos < 0:
                return -1
            if bufs[KEY].len + bufs[VALUE].len + bufs[HKEY].len + bufs[HVALUE].len + r.size > INT32_MAX:
                return FULL  # (the four together: each of them could not pass 2 GiB then)
            offset = add64(h.base_offset, r.offset_delta)
            put_i64(&bufs[OFFSET], offset)
            timestamp = h.max_timestamp if log_append else add64(h.base_timestamp, r.timestamp_delta)
            put_i64(&bufs[TIMESTAMP], timestamp)
            put_bit(&self.bits[TIMESTAMP_VALID], timestamp != -1)
            put(&bufs[TIMESTAMP_TYPE], &kind, 1)
            self.put_blob(KEY_OFFSETS, KEY, KEY_VALID, p, r.key_at, r.key_len)
            self.put_blob(VALUE_OFFSETS, VALUE, VALUE_VALID, p, r.value_at, r.value_len)
            hpos = r.headers_at
            for i in range(r.header_count):
                hpos = next_header(p, hpos, &k, &klen, &v, &vlen)
                self.put_blob(HKEY_OFFSETS, HKEY, -1, p, k, klen)
                self.put_blob(HVALUE_OFFSETS, HVALUE, HVALUE_VALID, p, v, vlen)
            self.headers += r.header_count
            put_i32(&bufs[HEADER_OFFSETS], <int32_t>self.headers)
            put_i32(&bufs[LEADER_EPOCH], h.leader_epoch)
            put_i64(&bufs[PRODUCER_ID], h.producer_id)
            put(&bufs[PRODUCER_EPOCH], &h.producer_epoch, 2)
            put_i32(&bufs[SEQUENCE], sequence_of(h.base_sequence, offset - h.base_offset))
            put(&bufs[CODEC], &codec, 1)
            put_bit(&self.bits[TRANSACTIONAL], transactional)
            put_bit(&self.bits[CONTROL], control)
            self.rows += 1
        return 0 if pos == end else -1

    cdef inline int put_blob(self, int offsets, int data, int valid, const unsigned char* p, Py_ssize_t at,
                             Py_ssize_t n) except -1:
        if at >= 0:
            put(&self.bufs[data], p + at, n)
        if valid >= 0:
            put_bit(&self.bits[valid], at >= 0)
        return put_i32(&self.bufs[offsets], <int32_t>self.bufs[data].len)

    cdef int put_outcomes(self, list batches, aborted_transactions, Py_ssize_t first) except -1:
        """The "aborted" column of the field's rows (from row first on), judged as transactions.aborted_array
        judges them: all False outside transactions, else by runs of rows (a producer's data records in a row, or
        one control record), the outcome of each run given by transactions.outcomes."""
        cdef Py_ssize_t row, n, i
        if batches is None:
            for row in range(first, self.rows):
                put_bit(&self.bits[ABORTED], False)
                put_bit(&self.bits[ABORTED_VALID], True)
            return 0
        items, sizes = [], []
        previous = None  # (producer id, transactional) of the data run going on
        for producer_id, transactional, control, row, n in batches:
            if control:
                for i in range(row, row + n):
                    items.append((producer_id, transactional, True, self.marker(i), self.offset(i)))
                    sizes.append(1)
                previous = None
            elif previous == (producer_id, transactional):
                last = len(items) - 1  # (no negative indexes in this module)
                items[last] = items[last][:4] + (self.offset(row + n - 1),)
                sizes[last] += n
            else:
                items.append((producer_id, transactional, False, None, self.offset(row + n - 1)))
                sizes.append(n)
                previous = (producer_id, transactional)
        for outcome, n in zip(self.outcomes(items, aborted_transactions), sizes):
            for i in range(n):
                put_bit(&self.bits[ABORTED], outcome is True)
                put_bit(&self.bits[ABORTED_VALID], outcome is not None)
        return 0

    cdef int64_t offset(self, Py_ssize_t row) noexcept:
        return (<int64_t*>self.bufs[OFFSET].data)[row]

    cdef object marker(self, Py_ssize_t row):
        """The control type in a control record's key (its second int16), None when the key is shorter."""
        cdef int32_t* offsets = <int32_t*>self.bufs[KEY_OFFSETS].data
        cdef const unsigned char* key = <const unsigned char*>self.bufs[KEY].data + offsets[row]
        if not (self.bits[KEY_VALID].buf.data[row >> 3] >> (row & 7)) & 1 or offsets[row + 1] - offsets[row] < 4:
            return None
        return be16(key + 2)

    def build(self):
        """(the record columns in arrow_schema()'s order, the number of rows of each field, the aborted column) of
        the rows gathered, which are let go."""
        pa = self.pa
        cdef Py_ssize_t n = self.rows
        header_type = self.schema.field("headers").type
        header_struct = pa.StructArray.from_arrays(
            [self.binary(pa.string(), self.headers, HKEY_OFFSETS, HKEY, -1),
             self.binary(pa.binary(), self.headers, HVALUE_OFFSETS, HVALUE, HVALUE_VALID)],
            fields=list(header_type.value_type))
        columns = [
            self.fixed(pa.int64(), OFFSET, -1),
            self.fixed(pa.timestamp("ms"), TIMESTAMP, TIMESTAMP_VALID),
            self.names(pa, TIMESTAMP_TYPE, TIMESTAMP_TYPES),
            self.binary(pa.binary(), n, KEY_OFFSETS, KEY, KEY_VALID),
            self.binary(pa.binary(), n, VALUE_OFFSETS, VALUE, VALUE_VALID),
            pa.ListArray.from_buffers(header_type, n, [None, self.buffer(HEADER_OFFSETS)], children=[header_struct]),
            self.fixed(pa.int32(), LEADER_EPOCH, -1),
            self.fixed(pa.int64(), PRODUCER_ID, -1),
            self.fixed(pa.int16(), PRODUCER_EPOCH, -1),
            self.fixed(pa.int32(), SEQUENCE, -1),
            self.fixed(pa.bool_(), -1, TRANSACTIONAL),
            self.fixed(pa.bool_(), -1, CONTROL),
            self.names(pa, CODEC, CODECS),
        ]
        counts = [(<int64_t*>self.bufs[FIELD_ROWS].data)[i] for i in range(self.fields)]
        aborted = pa.Array.from_buffers(pa.bool_(), n, [self.validity(ABORTED_VALID), self.bitmap(ABORTED)])
        self.reset()
        return columns, counts, aborted

    cdef object buffer(self, int i):
        return arrow_buffer(self.pa, &self.bufs[i])

    cdef object bitmap(self, int i):
        return arrow_buffer(self.pa, &self.bits[i].buf)

    cdef object validity(self, int i):
        return None if i < 0 or not self.bits[i].nulls else self.bitmap(i)

    cdef object fixed(self, typ, int values, int valid):
        """A fixed-width column (values: its buffer), or a boolean one (values -1: the bitmap valid)."""
        if values < 0:
            return self.pa.Array.from_buffers(typ, self.rows, [None, self.bitmap(valid)])
        return self.pa.Array.from_buffers(typ, self.rows, [self.validity(valid), self.buffer(values)])

    cdef object binary(self, typ, Py_ssize_t n, int offsets, int data, int valid):
        return self.pa.Array.from_buffers(typ, n, [self.validity(valid), self.buffer(offsets), self.buffer(data)])

    cdef object names(self, pa, int codes, const char** names):
        """A string column from a byte per row, the index of the row's value in names."""
        cdef const unsigned char* code = <const unsigned char*>self.bufs[codes].data
        cdef Py_ssize_t row, start = 0
        values, counts = [], []
        for row in range(1, self.rows + 1):
            if row == self.rows or code[row] != code[start]:
                values.append(names[code[start]].decode("ascii"))
                counts.append(row - start)
                start = row
        return repeated(pa, pa.string(), values, counts)
