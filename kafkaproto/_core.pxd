# cython: language_level=3
# The compiled codec core: one bounds-checked Reader, one growable Writer and
# the Kafka primitives as inline functions, so generated code calls them with
# no Python overhead. Cold paths (raising errors) live in _core.pyx.

from cpython.object cimport PyObject
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy


cdef class Reader:
    cdef const unsigned char* buf
    cdef Py_ssize_t pos
    cdef Py_ssize_t end
    cdef Py_buffer view
    cdef bint has_view
    cdef object data       # the object decoded from, kept alive
    cdef object _mv        # memoryview over data, made on first zero-copy slice

    cdef object slice(self, Py_ssize_t start, Py_ssize_t stop)


cdef class Writer:
    cdef char* data        # scratch buffer (malloc'd, reused across writers)
    cdef Py_ssize_t pos    # bytes written to data
    cdef Py_ssize_t cap
    cdef list blobs        # large buffers not copied into data: [(position in data, object), ...]
    cdef Py_ssize_t blob_bytes

    cdef int grow(self, Py_ssize_t need) except -1
    cdef void _release(self) noexcept
    cdef int defer(self, object value, Py_ssize_t n) except -1
    cdef int rollback(self, Py_ssize_t pos, Py_ssize_t nblobs) except -1
    cpdef bytes finish(self)
    cpdef list finish_parts(self)


cdef class Struct:
    cdef public object unknown_tagged_fields

    cdef int _read(self, Reader r, int v) except -1
    cdef int _write(self, Writer w, int v) except -1


# Cold paths, implemented in _core.pyx.
cdef int raise_short(Reader r, Py_ssize_t n, const char* what) except -1
cdef int raise_decode(Reader r, str reason) except -1
cdef object make_uuid(const unsigned char* p)
cdef object decode_utf8(Reader r, Py_ssize_t n)
cdef uint32_t read_uvarint_slow(Reader r) except? 0xFFFFFFFF
cdef int write_buffer(Writer w, object value, bint compact, str what) except -1
cdef int write_length(Writer w, Py_ssize_t n, bint compact, bint short_len, str what) except -1
cdef object index_value(object value)
cdef bint gc_pause(Py_ssize_t nbytes) noexcept
cdef void gc_resume() noexcept
cdef int write_str(Writer w, object value, bint compact) except -1
cdef int write_uuid(Writer w, object value) except -1
cdef dict read_unknown_tag(Reader r, dict unknown, uint32_t tag, Py_ssize_t size)
cdef int write_tagged(Writer w, list known, object unknown, tuple tags, int v) except -1
cdef Py_ssize_t read_array_len(Reader r, bint compact, Py_ssize_t min_item) except -2
cdef object bad_value(object value, str what)
cdef Py_ssize_t bad_length(Reader r, Py_ssize_t n, bint compact, bint nullable, int kind) except -2



# ---- reading -------------------------------------------------------------

cdef inline int need(Reader r, Py_ssize_t n, const char* what) except -1:
    if r.end - r.pos < n:
        raise_short(r, n, what)
    return 0


cdef inline bint read_bool(Reader r) except -1:
    need(r, 1, "bool")
    cdef unsigned char b = r.buf[r.pos]
    r.pos += 1
    return b != 0


cdef inline int8_t read_int8(Reader r) except? -1:
    need(r, 1, "int8")
    cdef int8_t v = <int8_t>r.buf[r.pos]
    r.pos += 1
    return v


cdef inline uint16_t read_uint16(Reader r) except? 0xFFFF:
    if r.end - r.pos < 2:
        raise_short(r, 2, "int16")
        return 0xFFFF
    cdef const unsigned char* p = r.buf + r.pos
    r.pos += 2
    return (<uint16_t>p[0] << 8) | p[1]


cdef inline int16_t read_int16(Reader r) except? -1:
    if r.end - r.pos < 2:
        raise_short(r, 2, "int16")
        return -1
    cdef const unsigned char* p = r.buf + r.pos
    r.pos += 2
    return <int16_t>((<uint16_t>p[0] << 8) | p[1])


cdef inline uint32_t read_uint32(Reader r) except? 0xFFFFFFFF:
    if r.end - r.pos < 4:
        raise_short(r, 4, "int32")
        return 0xFFFFFFFF
    cdef const unsigned char* p = r.buf + r.pos
    r.pos += 4
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline int32_t read_int32(Reader r) except? -1:
    if r.end - r.pos < 4:
        raise_short(r, 4, "int32")
        return -1
    cdef const unsigned char* p = r.buf + r.pos
    r.pos += 4
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3])


cdef inline int64_t read_int64(Reader r) except? -1:
    if r.end - r.pos < 8:
        raise_short(r, 8, "int64")
        return -1
    cdef const unsigned char* p = r.buf + r.pos
    r.pos += 8
    return <int64_t>(
        (<uint64_t>p[0] << 56) | (<uint64_t>p[1] << 48) | (<uint64_t>p[2] << 40) | (<uint64_t>p[3] << 32)
        | (<uint64_t>p[4] << 24) | (<uint64_t>p[5] << 16) | (<uint64_t>p[6] << 8) | p[7])


cdef inline double read_float64(Reader r) except? -1:
    cdef int64_t bits = read_int64(r)
    cdef double d
    memcpy(&d, &bits, 8)
    return d


cdef inline uint32_t read_uvarint(Reader r) except? 0xFFFFFFFF:
    # One-byte varints (lengths, tag counts) are by far the most common.
    if r.pos < r.end and r.buf[r.pos] < 0x80:
        r.pos += 1
        return r.buf[r.pos - 1]
    return read_uvarint_slow(r)


cdef inline int64_t read_uvarlong(Reader r) except? -1:
    cdef uint64_t v = 0
    cdef int shift = 0
    cdef unsigned char b
    while True:
        if r.pos >= r.end:
            raise_short(r, 1, "varlong")
        b = r.buf[r.pos]
        r.pos += 1
        v |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            return <int64_t>v
        shift += 7
        if shift > 63:
            raise_decode(r, "varlong is longer than 10 bytes")


cdef inline int32_t read_varint(Reader r) except? -1:
    cdef uint32_t u = read_uvarint(r)
    return <int32_t>((u >> 1) ^ (-(<int32_t>(u & 1))))


cdef inline int64_t read_varlong(Reader r) except? -1:
    cdef uint64_t u = <uint64_t>read_uvarlong(r)
    return <int64_t>((u >> 1) ^ (-(<int64_t>(u & 1))))


cdef inline object read_uuid(Reader r):
    need(r, 16, "uuid")
    r.pos += 16
    return make_uuid(r.buf + r.pos - 16)


# The longest array, bytes or compact string: Kafka's readers take lengths
# (plus one, when compact) as a signed int32.
cdef enum:
    MAX_LENGTH = 0x7FFFFFFE


# Kinds of length-prefixed values, for read_length and error messages.
cdef enum:
    K_STRING = 0
    K_BYTES = 1
    K_RECORDS = 2


cdef inline Py_ssize_t read_length(Reader r, bint compact, bint nullable, int kind) except -2:
    """A string/bytes/records length prefix, checked against the input left; -1 means null."""
    cdef Py_ssize_t n
    if compact:
        n = <Py_ssize_t>read_uvarint(r) - 1
    elif kind == K_STRING:
        n = read_int16(r)
    else:
        n = read_int32(r)
    if n < 0:
        return bad_length(r, n, compact, nullable, kind)
    if r.end - r.pos < n:
        raise_short(r, n, b"string" if kind == K_STRING else b"bytes" if kind == K_BYTES else b"records")
    return n


cdef inline object read_string(Reader r, bint compact, bint nullable):
    cdef Py_ssize_t n = read_length(r, compact, nullable, K_STRING)
    if n < 0:
        return None
    return decode_utf8(r, n)


cdef inline object read_bytes(Reader r, bint compact, bint nullable):
    cdef Py_ssize_t n = read_length(r, compact, nullable, K_BYTES)
    if n < 0:
        return None
    r.pos += n
    return (<const char*>r.buf)[r.pos - n:r.pos]


cdef inline object read_records(Reader r, bint compact, bint nullable):
    """Records stay a zero-copy memoryview slice of the input."""
    cdef Py_ssize_t n = read_length(r, compact, nullable, K_RECORDS)
    if n < 0:
        return None
    r.pos += n
    return r.slice(r.pos - n, r.pos)


# ---- writing -------------------------------------------------------------

# An int field's value as C: an int converts (and is range-checked) as it is;
# anything else goes through __index__ first, so a float fails instead of truncating.
cdef inline int8_t as_int8(object v) except? -1:
    if type(v) is not int:
        v = index_value(v)
    return v


cdef inline int16_t as_int16(object v) except? -1:
    if type(v) is not int:
        v = index_value(v)
    return v


cdef inline uint16_t as_uint16(object v) except? 0xFFFF:
    if type(v) is not int:
        v = index_value(v)
    return v


cdef inline int32_t as_int32(object v) except? -1:
    if type(v) is not int:
        v = index_value(v)
    return v


cdef inline uint32_t as_uint32(object v) except? 0xFFFFFFFF:
    if type(v) is not int:
        v = index_value(v)
    return v


cdef inline int64_t as_int64(object v) except? -1:
    if type(v) is not int:
        v = index_value(v)
    return v


cdef inline uint64_t as_uint64(object v) except? 0xFFFFFFFFFFFFFFFF:
    if type(v) is not int:
        v = index_value(v)
    return v


cdef inline char* reserve(Writer w, Py_ssize_t n) except NULL:
    if w.cap - w.pos < n:
        w.grow(n)
    cdef char* p = w.data + w.pos
    w.pos += n
    return p


cdef inline int write_int8(Writer w, int8_t v) except -1:
    reserve(w, 1)[0] = <char>v
    return 0


cdef inline int write_bool(Writer w, object v) except -1:
    if v is True:
        reserve(w, 1)[0] = 1
    elif v is False:
        reserve(w, 1)[0] = 0
    else:
        raise bad_value(v, "bool")
    return 0


cdef inline int write_uint16(Writer w, uint16_t v) except -1:
    cdef char* p = reserve(w, 2)
    p[0] = <char>(v >> 8)
    p[1] = <char>v
    return 0


cdef inline int write_int16(Writer w, int16_t v) except -1:
    return write_uint16(w, <uint16_t>v)


cdef inline int write_uint32(Writer w, uint32_t v) except -1:
    cdef char* p = reserve(w, 4)
    p[0] = <char>(v >> 24)
    p[1] = <char>(v >> 16)
    p[2] = <char>(v >> 8)
    p[3] = <char>v
    return 0


cdef inline int write_int32(Writer w, int32_t v) except -1:
    return write_uint32(w, <uint32_t>v)


cdef inline int write_int64(Writer w, int64_t v) except -1:
    cdef uint64_t u = <uint64_t>v
    cdef char* p = reserve(w, 8)
    p[0] = <char>(u >> 56)
    p[1] = <char>(u >> 48)
    p[2] = <char>(u >> 40)
    p[3] = <char>(u >> 32)
    p[4] = <char>(u >> 24)
    p[5] = <char>(u >> 16)
    p[6] = <char>(u >> 8)
    p[7] = <char>u
    return 0


cdef inline int write_float64(Writer w, double d) except -1:
    cdef int64_t bits
    memcpy(&bits, &d, 8)
    return write_int64(w, bits)


cdef inline int write_uvarint(Writer w, uint32_t v) except -1:
    cdef char* p
    if v < 0x80:
        reserve(w, 1)[0] = <char>v
        return 0
    while v >= 0x80:
        reserve(w, 1)[0] = <char>((v & 0x7F) | 0x80)
        v >>= 7
    reserve(w, 1)[0] = <char>v
    return 0


cdef inline int write_uvarlong(Writer w, uint64_t v) except -1:
    while v >= 0x80:
        reserve(w, 1)[0] = <char>((v & 0x7F) | 0x80)
        v >>= 7
    reserve(w, 1)[0] = <char>v
    return 0


cdef inline int write_varint(Writer w, int32_t v) except -1:
    return write_uvarint(w, (<uint32_t>v << 1) ^ <uint32_t>(v >> 31))


cdef inline int write_varlong(Writer w, int64_t v) except -1:
    return write_uvarlong(w, (<uint64_t>v << 1) ^ <uint64_t>(v >> 63))


cdef inline int write_raw(Writer w, const char* src, Py_ssize_t n) except -1:
    memcpy(reserve(w, n), src, n)
    return 0


cdef inline int write_null(Writer w, bint compact, bint short_len) except -1:
    """The null marker of a nullable string (short_len), bytes, records or array."""
    if compact:
        return write_uvarint(w, 0)
    if short_len:
        return write_int16(w, -1)
    return write_int32(w, -1)


cdef inline int write_string(Writer w, object value, bint compact, bint nullable) except -1:
    if value is None:
        if not nullable:
            raise bad_value(value, "string")
        return write_null(w, compact, True)
    return write_str(w, value, compact)


cdef inline int write_bytes(Writer w, object value, bint compact, bint nullable) except -1:
    if value is None:
        if not nullable:
            raise bad_value(value, "bytes")
        return write_null(w, compact, False)
    return write_buffer(w, value, compact, "bytes")


cdef inline int write_array_len(Writer w, Py_ssize_t n, bint compact) except -1:
    if n > MAX_LENGTH:
        return write_length(w, n, compact, False, "array")
    if compact:
        return write_uvarint(w, <uint32_t>(n + 1))
    return write_int32(w, <int32_t>n)
