# cython: language_level=3
# A growing C buffer and a growing bitmap, with the writes into them that the compiled Arrow builders share: the
# record codec's (records._crecords) and the capture's row writers (capture._crecordrows, _carrowcols).

from libc.stdint cimport INT32_MAX, int16_t, int32_t, int64_t
from libc.stdlib cimport realloc
from libc.string cimport memcpy


cdef struct Buf:
    char* data
    Py_ssize_t len, cap


cdef inline int grow(Buf* b, Py_ssize_t need) except -1:
    cdef Py_ssize_t cap = b.cap * 2 if b.cap else 4096
    while cap < b.len + need:
        cap *= 2
    cdef char* p = <char*>realloc(b.data, cap)
    if p == NULL:
        raise MemoryError()
    b.data, b.cap = p, cap
    return 0


cdef inline char* reserve(Buf* b, Py_ssize_t n) except NULL:
    if b.cap - b.len < n or b.data == NULL:
        grow(b, n)
    cdef char* p = b.data + b.len
    b.len += n
    return p


cdef inline int put(Buf* b, const void* p, Py_ssize_t n) except -1:
    memcpy(reserve(b, n), p, n)
    return 0


cdef inline int put_i16(Buf* b, int16_t v) except -1:
    return put(b, &v, 2)


cdef inline int put_i32(Buf* b, int32_t v) except -1:
    return put(b, &v, 4)


cdef inline int put_i64(Buf* b, int64_t v) except -1:
    return put(b, &v, 8)


cdef struct Bits:
    Buf buf
    Py_ssize_t n, nulls


cdef inline int put_bit(Bits* b, bint v) except -1:
    if b.n & 7 == 0:
        reserve(&b.buf, 1)[0] = 0
    if v:
        b.buf.data[b.n >> 3] |= <char>(1 << (b.n & 7))
    else:
        b.nulls += 1
    b.n += 1
    return 0


cdef inline int32_t sequence_of(int32_t base, int64_t delta) noexcept:
    """A record's sequence number: the batch's base sequence plus its offset delta, wrapping as Kafka wraps it."""
    if base < 0:
        return -1
    if base <= INT32_MAX - delta:
        return <int32_t>(base + delta)
    return <int32_t>(delta - (INT32_MAX - base) - 1)
