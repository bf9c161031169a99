# cython: language_level=3, boundscheck=False, wraparound=False
# lz4 frames decoded in C: the twin of _compression.unlz4_py, with the same bytes out and the same errors.
# Produce and Fetch carry many small frames (one per batch), so the per-frame cost matters as much as the
# per-byte one: the frame is walked, and its blocks decoded, with no Python object but the output.

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from ._compression import CodecError, cap_error

cdef enum:
    MIN_MATCH = 4
    LAST_LITERALS = 5    # a block's last 5 bytes are literals
    MATCH_FIND_LIMIT = 12  # the last match starts at least 12 bytes before the block's end
    RATIO = 256          # the most an lz4 block expands (see _compression)
    CORRUPT = -1

cdef uint32_t P1 = 2654435761U, P2 = 2246822519U, P3 = 3266489917U, P4 = 668265263U, P5 = 374761393U


cdef inline uint32_t le32(const uint8_t* p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline uint32_t rotl(uint32_t x, int r) noexcept nogil:
    return (x << r) | (x >> (32 - r))


cdef uint32_t xxh32_short(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """xxHash32 with seed 0 of fewer than 16 bytes (an lz4 frame descriptor, or magic and descriptor)."""
    cdef uint32_t h = P5 + <uint32_t>n
    while n >= 4:
        h = rotl(h + le32(p) * P3, 17) * P4
        p += 4
        n -= 4
    while n > 0:
        h = rotl(h + p[0] * P5, 11) * P1
        p += 1
        n -= 1
    h ^= h >> 15
    h *= P2
    h ^= h >> 13
    h *= P3
    return h ^ (h >> 16)


cdef inline bint extend(const uint8_t* src, Py_ssize_t* ip, Py_ssize_t n, Py_ssize_t* length,
                        Py_ssize_t most) noexcept nogil:
    """Add a length's extension bytes (each 255 but the last) to length; False when they run past the block or the
    length past most (which also keeps the sum from growing without bound)."""
    cdef uint8_t b
    while True:
        if ip[0] >= n:
            return False
        b = src[ip[0]]
        ip[0] += 1
        length[0] += b
        if length[0] > most:
            return False
        if b != 255:
            return True


cdef Py_ssize_t decode_block(const uint8_t* src, Py_ssize_t n, uint8_t* dst, Py_ssize_t op, Py_ssize_t low,
                             Py_ssize_t end) noexcept nogil:
    """Decode the lz4 block src[:n] into dst from op: the new op, or CORRUPT.

    Matches may reach back to dst[low]. end is where the block's output must stop, as liblz4's safe decoder
    measures it: its rules on the last literals and the last match count from there.
    """
    cdef Py_ssize_t ip = 0, lit, length, offset, start, chunk
    cdef uint8_t token
    if n == 0:
        return CORRUPT
    while True:
        token = src[ip]
        ip += 1
        lit = token >> 4
        if lit == 15 and not extend(src, &ip, n, &lit, n):  # no more literals than the block holds
            return CORRUPT
        if op + lit > end - MATCH_FIND_LIMIT or ip + lit > n - (2 + 1 + LAST_LITERALS):
            # Too near either end for a match to follow: these are the block's last literals.
            if ip + lit != n or op + lit > end:
                return CORRUPT
            memcpy(dst + op, src + ip, lit)
            return op + lit
        memcpy(dst + op, src + ip, lit)
        ip += lit
        op += lit
        offset = src[ip] | (<Py_ssize_t>src[ip + 1] << 8)
        ip += 2
        length = token & 15
        if length == 15 and not extend(src, &ip, n, &length, RATIO * n):
            return CORRUPT
        length += MIN_MATCH
        if offset > op - low or op + length > end - LAST_LITERALS:
            return CORRUPT
        if offset == 0:
            # Invalid by the format, but liblz4 (and so Java, and Kafka) writes zeros for it.
            memset(dst + op, 0, length)
            op += length
            length = 0
        # An overlapping match repeats the offset bytes before it; copying from one fixed start doubles the
        # pattern each time, so no copy overlaps its source.
        start = op - offset
        while length > 0:
            chunk = op - start if op - start < length else length
            memcpy(dst + op, dst + start, chunk)
            op += chunk
            length -= chunk
        if ip >= n:  # a block ends with literals, even none
            return CORRUPT


def unlz4(data, Py_ssize_t cap, int magic):
    """One lz4 frame (what follows its end mark is ignored, as Java does)."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return unlz4_from(<const uint8_t*>view.buf, view.len, cap, magic)
    finally:
        PyBuffer_Release(&view)


cdef object unlz4_from(const unsigned char* p, Py_ssize_t n, Py_ssize_t cap, int magic):
    """unlz4 of the n bytes at p, for the compiled record reader."""
    if n < 7 or le32(p) != 0x184D2204:
        raise CodecError("corrupt lz4 data: no lz4 frame magic")
    cdef int flg = p[4], bd = p[5]
    if flg >> 6 != 1:
        raise CodecError(f"corrupt lz4 data: frame version {flg >> 6}, expected 1")
    if flg & 1:
        raise CodecError("lz4 frames with a dictionary id are not used by Kafka")
    cdef bint independent = flg & 0x20, block_checksum = flg & 0x10, has_size = flg & 0x08
    cdef bint content_checksum = flg & 0x04
    cdef int size_id = (bd >> 4) & 7
    if size_id < 4:
        raise CodecError(f"corrupt lz4 data: bad block size id {size_id}")
    cdef Py_ssize_t block_max = 1 << (8 + 2 * size_id)
    cdef Py_ssize_t header_end = 6 + (8 if has_size else 0)
    if n < header_end + 1:
        raise CodecError("corrupt lz4 data: truncated frame header")
    cdef uint64_t declared = 0
    if has_size:
        declared = le32(p + 6) | (<uint64_t>le32(p + 10) << 32)
    cdef int checksum = p[header_end]
    cdef int right = (xxh32_short(p + 4, header_end - 4) >> 8) & 0xFF
    if checksum != right:
        # Magic 0 writers hashed the frame magic too; accept that bug where it belongs.
        if magic != 0 or checksum != (xxh32_short(p, header_end) >> 8) & 0xFF:
            raise CodecError(f"corrupt lz4 data: frame header checksum {checksum}, expected {right}")
    if has_size and declared > <uint64_t>cap:
        raise cap_error(declared, cap)
    # First the block headers, checked against the input, and a bound on the output from what each block
    # can really hold, so that the buffer follows the input's size; then the blocks.
    cdef Py_ssize_t first = header_end + 1, at = first, bound = 0, size, most
    cdef uint32_t word
    while True:
        if n - at < 4:
            raise CodecError(f"corrupt lz4 data: truncated block header at byte {at}")
        word = le32(p + at)
        at += 4
        if word == 0:
            break
        size = word & 0x7FFFFFFF
        if size > n - at or size > block_max:
            raise CodecError(f"corrupt lz4 data: block of {size} bytes at byte {at - 4} "
                             f"overruns the payload or the {block_max}-byte block size")
        most = size if word & 0x80000000U else min(block_max, size * RATIO)
        bound += most
        at += size + (4 if block_checksum else 0)
    if content_checksum:
        at += 4
    if at > n:
        raise CodecError("corrupt lz4 data: truncated frame end")
    # Each block is decoded whole before the cap is checked, so a frame over the cap costs at most one block
    # more than the cap, and a corrupt block is called corrupt whatever the cap.
    out = PyByteArray_FromStringAndSize(NULL, bound if bound - block_max <= cap else cap + block_max)
    cdef uint8_t* dst = <uint8_t*>PyByteArray_AS_STRING(out)
    cdef Py_ssize_t total = 0
    at = first
    with nogil:
        while True:
            word = le32(p + at)
            at += 4
            if word == 0 or total > cap:
                break
            size = word & 0x7FFFFFFF
            if word & 0x80000000U:
                memcpy(dst + total, p + at, size)
                total += size
            else:
                total = decode_block(p + at, size, dst, total, total if independent else 0,
                                     total + min(block_max, size * RATIO))
                if total == CORRUPT:
                    break
            at += size + (4 if block_checksum else 0)
    if total == CORRUPT:
        raise CodecError(f"corrupt lz4 data: the block at byte {at - 4} does not decode")
    if total > cap:
        raise cap_error(None, cap)
    if has_size and <uint64_t>total != declared:
        raise CodecError(f"corrupt lz4 data: frame declares {declared} bytes, blocks hold {total}")
    return memoryview(out)[:total]
