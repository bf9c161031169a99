# cython: language_level=3
# JSON pieces and Arrow buffers written from the shared growing buffers (kafkaproto.records._cbuffers): what the
# compiled row writers of the capture package (_crecordrows, _carrowcols) share, as inline functions.

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy, strlen

from kafkaproto.records._cbuffers cimport Buf, put, reserve


cdef inline int put_text(Buf* b, const char* s) except -1:
    return put(b, s, strlen(s))


cdef inline object arrow_buffer(pa, Buf* b):
    """A pyarrow Buffer of a copy of b's bytes."""
    return pa.py_buffer(PyBytes_FromStringAndSize(b.data, b.len))


cdef inline int put_int(Buf* b, int64_t v) except -1:
    """v in decimal, as Python's int() prints it."""
    cdef char digits[24]
    cdef int i = 24
    cdef uint64_t u = <uint64_t>v if v >= 0 else <uint64_t>0 - <uint64_t>v
    while True:
        i -= 1
        digits[i] = <char>(48 + u % 10)
        u //= 10
        if u == 0:
            break
    if v < 0:
        i -= 1
        digits[i] = b'-'
    return put(b, digits + i, 24 - i)


cdef inline int put_base64(Buf* b, const unsigned char* p, Py_ssize_t n) except -1:
    """A JSON string of p's bytes in base64 (standard alphabet, padded), as base64.b64encode gives them."""
    cdef const char* B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    cdef char* out = reserve(b, 2 + (n + 2) // 3 * 4)
    cdef Py_ssize_t i = 0
    cdef uint32_t v
    out[0] = b'"'
    out += 1
    while i + 3 <= n:
        v = (<uint32_t>p[i] << 16) | (<uint32_t>p[i + 1] << 8) | p[i + 2]
        out[0] = B64[v >> 18]
        out[1] = B64[(v >> 12) & 63]
        out[2] = B64[(v >> 6) & 63]
        out[3] = B64[v & 63]
        out += 4
        i += 3
    if i < n:  # one or two bytes left: padded
        v = (<uint32_t>p[i] << 16) | ((<uint32_t>p[i + 1] << 8) if n - i == 2 else 0)
        out[0] = B64[v >> 18]
        out[1] = B64[(v >> 12) & 63]
        out[2] = B64[(v >> 6) & 63] if n - i == 2 else b'='
        out[3] = b'='
        out += 4
    out[0] = b'"'
    return 0


cdef inline int put_json_string(Buf* b, const unsigned char* p, Py_ssize_t n, bint ensure_ascii) except -1:
    """UTF-8 text as a JSON string, escaped as json.dumps escapes it: with ensure_ascii (for ASCII text only) DEL
    too; without, every byte from 0x80 on as it is."""
    # The letter of each control character's short escape, u for those written as \u00XX.
    cdef const char* SHORT = b"uuuuuuuubtnufruuuuuuuuuuuuuuuuuu"
    cdef const char* HEX = b"0123456789abcdef"
    cdef Py_ssize_t i
    cdef unsigned char c
    cdef char* e
    put(b, b'"', 1)
    for i in range(n):
        c = p[i]
        if c >= 0x20 and c != b'"' and c != b'\\' and not (c == 0x7F and ensure_ascii):
            reserve(b, 1)[0] = <char>c
        elif c == b'"' or c == b'\\' or (c < 0x20 and SHORT[c] != b'u'):  # \" \\ \b \t \n \f \r
            e = reserve(b, 2)
            e[0], e[1] = b'\\', <char>c if c >= 0x20 else SHORT[c]
        else:
            e = reserve(b, 6)
            memcpy(e, b"\\u00", 4)
            e[4], e[5] = HEX[c >> 4], HEX[c & 15]
    put(b, b'"', 1)
    return 0
