# cython: language_level=3, boundscheck=False, wraparound=False
# Arrow columns from Python values, and record rows from Arrow columns to JSON lines, compiled: the context columns
# of tables.record_batches, the text columns of capture._arrowcols, and the command line's --records JSON lines.

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_AsUTF8AndSize, PyUnicode_DecodeUTF8
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uintptr_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy, memset

from kafkaproto.records._cbuffers cimport Bits, Buf, put, put_bit, put_i32, put_i64, reserve
from ._cbuffers cimport arrow_buffer, put_base64, put_int, put_json_string, put_text

cdef enum:
    INT32_MAX = 0x7FFFFFFF


def repeated(pa, typ, values, counts):
    """An Arrow column of type typ (string, int16, int32, int64 or timestamp) holding values[i] counts[i] times
    over (None: null): where each row's records field came from."""
    cdef Buf data, offsets
    cdef Bits valid
    cdef Py_ssize_t n = 0, c, j, length = 0
    cdef int width = 0 if pa.types.is_string(typ) else typ.bit_width
    cdef int64_t number = 0
    cdef int16_t number16 = 0
    cdef const char* text = NULL
    cdef bint present
    memset(&data, 0, sizeof(Buf))
    memset(&offsets, 0, sizeof(Buf))
    memset(&valid, 0, sizeof(Bits))
    try:
        put_i32(&offsets, 0)
        for value, c in zip(values, counts):
            present = value is not None
            if width == 0:
                encoded = value.encode() if present else b""
                text, length = <const char*>encoded, len(encoded)
                if data.len + c * length > INT32_MAX:
                    raise ValueError(f"{n + c} rows of {typ} context: more than 2 GiB for one Arrow column")
            else:
                number = value if present else 0
                number16 = <int16_t>number
            for j in range(c):
                put_bit(&valid, present)
                if width == 0:
                    put(&data, text, length)
                    put_i32(&offsets, <int32_t>data.len)
                elif width == 64:
                    put_i64(&data, number)
                elif width == 32:
                    put_i32(&data, <int32_t>number)
                else:
                    put(&data, &number16, 2)
            n += c
        buffers = [arrow_buffer(pa, &valid.buf) if valid.nulls else None] + (
            [arrow_buffer(pa, &offsets)] if width == 0 else [])
        return pa.Array.from_buffers(typ, n, buffers + [arrow_buffer(pa, &data)])
    finally:
        free(data.data)
        free(offsets.data)
        free(valid.buf.data)


def text_column(pa, values):
    """A string Arrow column of values (str or None), their UTF-8 copied once, from where the str keeps it."""
    cdef Py_ssize_t n = len(values), i, size, total = 0
    cdef const char* text
    cdef Bits valid
    cdef bytes offsets = PyBytes_FromStringAndSize(NULL, 4 * (n + 1)), data
    cdef int32_t* at = <int32_t*>(<char*>offsets)
    memset(&valid, 0, sizeof(Bits))
    try:
        at[0] = 0
        for i in range(n):
            if values[i] is not None:
                PyUnicode_AsUTF8AndSize(values[i], &size)
                total += size
                if total > INT32_MAX:
                    raise ValueError(f"{total} bytes of text for one Arrow column of {n} rows: more than its 32-bit "
                                     "offsets reach (2 GiB); write fewer rows to a batch")
            at[i + 1] = <int32_t>total
            put_bit(&valid, values[i] is not None)
        data = PyBytes_FromStringAndSize(NULL, total)
        for i in range(n):
            if values[i] is not None:
                text = PyUnicode_AsUTF8AndSize(values[i], &size)
                memcpy(<char*>data + at[i], text, size)
        return pa.Array.from_buffers(pa.string(), n, [arrow_buffer(pa, &valid.buf) if valid.nulls else None,
                                                      pa.py_buffer(offsets), pa.py_buffer(data)])
    finally:
        free(valid.buf.data)


# ---- record rows as JSON lines -----------------------------------------------------------------------------------

cdef enum:
    # How a column is written.
    TEXT, BINARY, INT, BOOL, NS_TIME, MS_TIME, HEADERS


cdef struct Column:
    int kind
    int width                     # bytes of an INT
    bint nulls                    # every value null
    const uint8_t* valid          # NULL: no nulls
    const char* data
    const int32_t* offsets
    const uint8_t* item_key_valid  # HEADERS: the header values' validity ...
    const char* item_key           # ... the keys' and values' bytes and offsets
    const int32_t* item_key_offsets
    const uint8_t* item_value_valid
    const char* item_value
    const int32_t* item_value_offsets


cdef const char* address(buffer) except? NULL:
    if buffer is None:
        return NULL
    return <const char*><uintptr_t>buffer.address


cdef int column_of(array, Column* c, int kind) except -1:
    """c pointed at array's buffers; -1 (no exception) when array is sliced, which this does not read."""
    if array.offset:
        return -1
    buffers = array.buffers()
    c.kind = kind
    c.nulls = array.null_count == len(array)
    c.valid = <const uint8_t*>address(buffers[0]) if array.null_count else NULL
    if c.nulls:
        return 0
    if kind == TEXT or kind == BINARY:
        c.offsets, c.data = <const int32_t*>address(buffers[1]), address(buffers[2])
    elif kind == HEADERS:
        headers = array.values
        keys, values = headers.field(0), headers.field(1)
        if headers.offset or keys.offset or values.offset or headers.null_count or keys.null_count:
            return -1
        c.offsets = <const int32_t*>address(buffers[1])
        kb, vb = keys.buffers(), values.buffers()
        c.item_key_offsets, c.item_key = <const int32_t*>address(kb[1]), address(kb[2])
        c.item_value_valid = <const uint8_t*>address(vb[0]) if values.null_count else NULL
        c.item_value_offsets, c.item_value = <const int32_t*>address(vb[1]), address(vb[2])
    else:
        c.data = address(buffers[1])
    return 0


cdef inline bint bit(const uint8_t* bits, Py_ssize_t i) noexcept:
    return (bits[i >> 3] >> (i & 7)) & 1


cdef int put_datetime(Buf* out, int64_t value, int64_t per_second, int digits) except -1:
    """value (a count of 1/per_second seconds since 1970, UTC) as datetime's isoformat() writes it for digits 6
    (microseconds, left out when 0) or as the command line's _iso for digits 9 (nanoseconds and a Z); 0 when the
    year is outside 1000-9999, where those differ."""
    cdef int64_t seconds = value // per_second, fraction = value % per_second
    cdef int64_t days = seconds // 86400, rest = seconds % 86400
    # Days since 1970-01-01 to a civil date (Howard Hinnant's days_from_civil, inverted).
    cdef int64_t z = days + 719468
    cdef int64_t era = (z if z >= 0 else z - 146096) // 146097
    cdef int64_t doe = z - era * 146097
    cdef int64_t yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    cdef int64_t doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    cdef int64_t mp = (5 * doy + 2) // 153
    cdef int64_t day = doy - (153 * mp + 2) // 5 + 1, month = mp + 3 if mp < 10 else mp - 9
    cdef int64_t year = yoe + era * 400 + (month <= 2)
    cdef char text[40]
    cdef int i, n
    cdef int64_t parts[6]
    if year < 1000 or year > 9999:
        return 0
    parts[:] = [year, month, day, rest // 3600, rest // 60 % 60, rest % 60]
    n = 0
    for i in range(6):
        n = write_digits(text, n, parts[i], 4 if i == 0 else 2)
        if i < 5:
            text[n] = SEPARATORS[i]
            n += 1
    if digits == 6:
        fraction = fraction * (1000000 // per_second)
        if fraction:
            text[n] = b"."
            n = write_digits(text, n + 1, fraction, 6)
    else:
        text[n] = b"."
        n = write_digits(text, n + 1, fraction, 9)
        text[n] = b"Z"
        n += 1
    put(out, b'"', 1)
    put(out, text, n)
    put(out, b'"', 1)
    return 1


cdef const char* SEPARATORS = b"--T::"  # after the year, month, day, hour and minute


cdef inline int write_digits(char* text, int at, int64_t value, int width) noexcept:
    cdef int i
    for i in range(width - 1, -1, -1):
        text[at + i] = <char>(48 + value % 10)
        value //= 10
    return at + width


cdef int put_value(Buf* out, Column* c, Py_ssize_t row) except -1:
    """A row's value of column c as JSON; 0 when it is one this does not write."""
    cdef Py_ssize_t start, stop, i
    cdef int64_t number
    if c.nulls or (c.valid != NULL and not bit(c.valid, row)):
        put(out, b"null", 4)
        return 1
    if c.kind == TEXT or c.kind == BINARY:
        start, stop = c.offsets[row], c.offsets[row + 1]
        if c.kind == TEXT:
            put_json_string(out, <const unsigned char*>c.data + start, stop - start, False)
        else:
            put_base64(out, <const unsigned char*>c.data + start, stop - start)
    elif c.kind == INT:
        if c.width == 8:
            number = (<const int64_t*>c.data)[row]
        elif c.width == 4:
            number = (<const int32_t*>c.data)[row]
        else:
            number = (<const int16_t*>c.data)[row]
        put_int(out, number)
    elif c.kind == BOOL:
        put_text(out, b"true" if bit(<const uint8_t*>c.data, row) else b"false")
    elif c.kind == NS_TIME or c.kind == MS_TIME:
        number = (<const int64_t*>c.data)[row]
        return put_datetime(out, number, 1000000000 if c.kind == NS_TIME else 1000, 9 if c.kind == NS_TIME else 6)
    else:  # HEADERS
        put(out, b"[", 1)
        for i in range(c.offsets[row], c.offsets[row + 1]):
            put_text(out, b'{"key":' if i == c.offsets[row] else b',{"key":')
            start, stop = c.item_key_offsets[i], c.item_key_offsets[i + 1]
            put_json_string(out, <const unsigned char*>c.item_key + start, stop - start, False)
            put_text(out, b',"value":')
            if c.item_value_valid != NULL and not bit(c.item_value_valid, i):
                put(out, b"null", 4)
            else:
                start, stop = c.item_value_offsets[i], c.item_value_offsets[i + 1]
                put_base64(out, <const unsigned char*>c.item_value + start, stop - start)
            put(out, b"}", 1)
        put(out, b"]", 1)
    return 1


def record_lines(pa, batch):
    """The rows of a RecordBatch of tables.record_schema() as the command line's --records JSON lines (each the
    row with bytes in base64, the time as its _iso writes it, the timestamp as datetime.isoformat() does, through
    json.dumps(ensure_ascii=False)), or None for a batch this does not write: one with error rows, sliced
    columns, or times outside the years 1000-9999."""
    cdef Py_ssize_t n = batch.num_rows, count = batch.num_columns
    if batch.column(batch.schema.get_field_index("error")).null_count != n:
        return None
    cdef Column* columns = <Column*>calloc(count, sizeof(Column))
    if columns == NULL:
        raise MemoryError()
    try:
        return lines_of(pa, batch, columns, count, n)
    finally:
        free(columns)


cdef object lines_of(pa, batch, Column* columns, Py_ssize_t count, Py_ssize_t n):
    cdef Buf out
    cdef Py_ssize_t row, i
    names = batch.schema.names
    if not all(name.isidentifier() and name.isascii() for name in names):
        return None
    cdef list keys = [((',"' if i else '{"') + names[i] + '":').encode() for i in range(count)]
    types = pa.types
    for i in range(count):
        typ = batch.schema.field(i).type
        kind = (TEXT if types.is_string(typ) else BINARY if types.is_binary(typ) else BOOL if types.is_boolean(typ)
                else HEADERS if types.is_list(typ) else INT if types.is_integer(typ)
                else (NS_TIME if typ.unit == "ns" else MS_TIME) if types.is_timestamp(typ) and typ.unit in ("ns", "ms")
                else -1)
        if kind < 0 or column_of(batch.column(i), &columns[i], kind) < 0:
            return None
        columns[i].width = typ.bit_width // 8 if kind == INT else 0
    memset(&out, 0, sizeof(Buf))
    try:
        for row in range(n):
            for i in range(count):
                put(&out, <const char*>keys[i], len(keys[i]))
                if not put_value(&out, &columns[i], row):
                    return None
            put(&out, b"}\n", 2)
        return PyUnicode_DecodeUTF8(out.data, out.len, NULL)
    finally:
        free(out.data)
