"""Kafka's record compression codecs, written the way the Java client writes them.

cramjam provides snappy, zstd and lz4's fast compressor (one maintained package
with wheels for every platform); lz4's high-compression levels come from the lz4
package, which binds the C library; gzip uses the standard library's zlib. The
framing Kafka puts around them is done here: the xerial block format around
snappy, the lz4 frame (64 KiB independent blocks, with the header-checksum bug
of magic 0), and zstd's streamed frame.

Every decompressor honours a cap on the output size and checks it before
allocating, from the sizes the format declares, so a small input cannot make
it allocate more than the cap.
"""

import functools
import struct
import zlib

import cramjam
import lz4.block

from .._impl import COMPILED

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
NAMES = ("none", "gzip", "snappy", "lz4", "zstd")

# The Java client's default levels (compression.<codec>.level) and their ranges.
DEFAULT_LEVEL = {GZIP: 6, LZ4: 9, ZSTD: 3}
LEVEL_RANGE = {GZIP: (1, 9), LZ4: (1, 17), ZSTD: (-131072, 22)}


class CodecError(Exception):
    """A compressed payload is corrupt or over the cap (wrapped into RecordsError by callers)."""


class CapError(CodecError):
    """A compressed payload decompresses to more than the cap allows."""


def cap_error(size, cap):
    if size is None:
        return CapError(f"decompresses to more than the {cap}-byte cap on decompressed size")
    return CapError(f"declares {size} decompressed bytes, over the {cap}-byte cap on decompressed size")


def check_level(codec, level):
    if level is None or codec not in LEVEL_RANGE:
        return DEFAULT_LEVEL.get(codec)
    low, high = LEVEL_RANGE[codec]
    if type(level) is not int or not low <= level <= high:
        raise ValueError(f"{NAMES[codec]} compression level must be an int in {low}..{high}, not {level!r}")
    return level


def compress(codec, data, level=None, magic=2):
    level = check_level(codec, level)
    if codec == GZIP:
        return _gzip(data, level)
    if codec == SNAPPY:
        return _xerial_snappy(data)
    if codec == LZ4:
        return _lz4_frame(data, level, broken_checksum=magic == 0)
    if codec == ZSTD:
        if magic < 2:
            raise ValueError("zstd needs record batch magic 2")
        # Java streams zstd (content size unknown), flushes, then ends the frame with an
        # empty last block; doing the same gives the same frame.
        stream = cramjam.zstd.Compressor(level=level)
        stream.compress(data if type(data) is bytes else bytes(data))  # it takes only bytes
        return bytes(stream.flush()) + bytes(stream.finish())
    raise ValueError(f"unknown compression codec {codec}")


def decompress(codec, data, cap, magic=2):
    """The decompressed bytes (a bytes-like object) of data, at most cap of them."""
    try:
        if codec == GZIP:
            return _gunzip(data, cap)
        if codec == SNAPPY:
            return _unsnappy(data, cap)
        if codec == LZ4:
            return unlz4(data, cap, magic)
        if codec == ZSTD:
            if magic < 2:
                raise CodecError("zstd compression is only valid in record batch magic 2")
            return _unzstd(data, cap)
    except (cramjam.DecompressionError, zlib.error) as e:
        raise CodecError(f"corrupt {NAMES[codec]} data: {e}") from None
    raise CodecError(f"unknown compression codec {codec}")


# ---- gzip ------------------------------------------------------------------

# Java's GZIPOutputStream header: no name, no mtime, OS "unknown".
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def _gzip(data, level):
    deflate = zlib.compressobj(level, zlib.DEFLATED, -15)
    body = deflate.compress(data) + deflate.flush()
    return b"".join((_GZIP_HEADER, body, struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)))


# The most any deflate stream expands: a 258-byte match costs at least two bits.
_DEFLATE_RATIO = 1032


def _gunzip(data, cap):
    # Fast path: the trailer's size (mod 2**32) sizes the output buffer. A size
    # deflate cannot reach from this input is a lie and is not allocated; if the
    # size lies otherwise or the stream has several members, the buffer is too
    # small and zlib's streaming inflate below takes over, counting against the
    # cap as it goes.
    view = memoryview(data)
    if len(view) >= 18:
        (hint,) = struct.unpack_from("<I", view, len(view) - 4)
        if hint <= cap and hint <= len(view) * _DEFLATE_RATIO:
            out = bytearray(hint)
            try:
                got = cramjam.gzip.decompress_into(view, out)
            except cramjam.DecompressionError:
                pass
            else:
                if got == hint:
                    return out
    return _gunzip_streaming(view, cap)


def _gunzip_streaming(data, cap):
    parts = []
    total = 0
    rest = data
    while True:
        inflate = zlib.decompressobj(31)
        chunk = inflate.decompress(rest, cap - total + 1)
        total += len(chunk)
        if total > cap:
            raise cap_error(None, cap)
        parts.append(chunk)
        if not inflate.eof:
            raise CodecError("corrupt gzip data: the stream ends early")
        rest = inflate.unused_data
        if not rest:
            break  # concatenated members are read like GZIPInputStream does
    return parts[0] if len(parts) == 1 else b"".join(parts)


# ---- snappy ----------------------------------------------------------------

_XERIAL_HEADER = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
_XERIAL_BLOCK = 32 * 1024


def _xerial_snappy(data):
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    for at in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[at:at + _XERIAL_BLOCK]))
        parts.append(struct.pack(">i", len(block)))
        parts.append(block)
    return b"".join(parts)


# The most a snappy block expands: a 3-byte copy writes at most 64 bytes.
_SNAPPY_RATIO = 22


def _snappy_size(block, cap, total=0):
    """A raw snappy block's declared size, refused when over the cap or beyond what the block can hold."""
    size = cramjam.snappy.decompress_raw_len(block)
    if total + size > cap:
        raise cap_error(size if not total else None, cap)
    if size > len(block) * _SNAPPY_RATIO:
        raise CodecError(f"corrupt snappy data: a {len(block)}-byte block cannot hold {size} bytes")
    return size


def _unsnappy(data, cap):
    view = memoryview(data)
    if len(view) < 16 or view[:8] != _XERIAL_HEADER[:8]:
        out = bytearray(_snappy_size(view, cap))
        cramjam.snappy.decompress_raw_into(view, out)
        return out
    # xerial framing: a 16-byte header, then [int32 size][raw snappy block] ...
    blocks = []
    total = 0
    at = 16
    while at < len(view):
        if len(view) - at < 4:
            raise CodecError(f"corrupt snappy data: truncated xerial block header at byte {at}")
        (n,) = struct.unpack_from(">i", view, at)
        at += 4
        if n < 0 or n > len(view) - at:
            raise CodecError(f"corrupt snappy data: xerial block of {n} bytes at byte {at - 4} "
                             f"overruns the {len(view)}-byte payload")
        block = view[at:at + n]
        at += n
        size = _snappy_size(block, cap, total)
        total += size
        blocks.append((block, size))
    out = bytearray(total)
    target = memoryview(out)
    done = 0
    for block, size in blocks:
        cramjam.snappy.decompress_raw_into(block, target[done:done + size])
        done += size
    return out


# ---- lz4 -------------------------------------------------------------------

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_BLOCK = 64 * 1024
_LZ4_BLOCK_MAX = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}


def _lz4_frame(data, level, broken_checksum):
    """Kafka's lz4 frame: 64 KiB independent blocks, no block or content checksums.

    Magic 0 hashed the 4 magic bytes into the header checksum too, a bug every
    reader of magic 0 expects, so magic 0 keeps it.
    """
    descriptor = b"\x60\x40"  # version 1, independent blocks; 64 KiB maximum block size
    hashed = _LZ4_MAGIC + descriptor if broken_checksum else descriptor
    parts = [_LZ4_MAGIC, descriptor, bytes(((xxh32(hashed) >> 8) & 0xFF,))]
    view = memoryview(data)
    for at in range(0, len(view), _LZ4_BLOCK):
        chunk = view[at:at + _LZ4_BLOCK]
        if level == DEFAULT_LEVEL[LZ4]:
            # Java's default level is LZ4's fast compressor, whose blocks cramjam's match.
            block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        else:
            block = lz4.block.compress(chunk, mode="high_compression", compression=level, store_size=False)
        if len(block) >= len(chunk):
            parts.append(struct.pack("<I", len(chunk) | 0x80000000))
            parts.append(bytes(chunk))
        else:
            parts.append(struct.pack("<I", len(block)))
            parts.append(block)
    parts.append(b"\0\0\0\0")
    return b"".join(parts)


# The most an lz4 block expands: each byte of a match length adds at most 255.
_LZ4_RATIO = 256


def unlz4_py(data, cap, magic):
    """One lz4 frame (what follows its end mark is ignored, as Java does); _clz4.unlz4 is its compiled twin."""
    view = memoryview(data)
    n = len(view)
    if n < 7 or view[:4] != _LZ4_MAGIC:
        raise CodecError("corrupt lz4 data: no lz4 frame magic")
    flg, bd = view[4], view[5]
    if flg >> 6 != 1:
        raise CodecError(f"corrupt lz4 data: frame version {flg >> 6}, expected 1")
    if flg & 1:
        raise CodecError("lz4 frames with a dictionary id are not used by Kafka")
    independent, block_checksum, has_size, content_checksum = flg & 0x20, flg & 0x10, flg & 0x08, flg & 0x04
    block_max = _LZ4_BLOCK_MAX.get((bd >> 4) & 7)
    if block_max is None:
        raise CodecError(f"corrupt lz4 data: bad block size id {(bd >> 4) & 7}")
    header_end = 6 + (8 if has_size else 0)
    if n < header_end + 1:
        raise CodecError("corrupt lz4 data: truncated frame header")
    declared = int.from_bytes(view[6:14], "little") if has_size else None
    checksum = view[header_end]
    right = _header_checksum(bytes(view[4:header_end]))
    if checksum != right:
        # Magic 0 writers hashed the frame magic too; accept that bug where it belongs.
        if magic != 0 or checksum != (xxh32(view[:header_end]) >> 8) & 0xFF:
            raise CodecError(f"corrupt lz4 data: frame header checksum {checksum}, expected {right}")
    if declared is not None and declared > cap:
        raise cap_error(declared, cap)
    # First the block headers, checked against the input, and a bound on the output from what each block
    # can really hold, so that the buffer follows the input's size; then the blocks.
    blocks = []
    bound = 0
    at = header_end + 1
    while True:
        if n - at < 4:
            raise CodecError(f"corrupt lz4 data: truncated block header at byte {at}")
        (size,) = struct.unpack_from("<I", view, at)
        at += 4
        if size == 0:
            break
        stored = size & 0x80000000
        size &= 0x7FFFFFFF
        if size > n - at or size > block_max:
            raise CodecError(f"corrupt lz4 data: block of {size} bytes at byte {at - 4} "
                             f"overruns the payload or the {block_max}-byte block size")
        most = size if stored else min(block_max, size * _LZ4_RATIO)
        blocks.append((at - 4, stored, view[at:at + size], most))
        bound += most
        at += size + (4 if block_checksum else 0)
    if content_checksum:
        at += 4
    if at > n:
        raise CodecError("corrupt lz4 data: truncated frame end")
    # Each block is decoded whole before the cap is checked, so a frame over the cap costs at most one block
    # more than the cap, and a corrupt block is called corrupt whatever the cap.
    out = bytearray(min(bound, cap + block_max))
    total = 0
    for at, stored, block, most in blocks:
        if stored:
            got = block
        else:
            # Linked blocks may copy from the 64 KiB of output before them.
            prefix = b"" if independent else bytes(out[max(0, total - 65536):total])
            try:
                got = lz4.block.decompress(block, uncompressed_size=most, dict=prefix)
            except lz4.block.LZ4BlockError:
                raise CodecError(f"corrupt lz4 data: the block at byte {at} does not decode") from None
        out[total:total + len(got)] = got
        total += len(got)
        if total > cap:
            raise cap_error(None, cap)
    if declared is not None and total != declared:
        raise CodecError(f"corrupt lz4 data: frame declares {declared} bytes, blocks hold {total}")
    return memoryview(out)[:total]


# ---- zstd ------------------------------------------------------------------

_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_BLOCK_MAX = 128 * 1024
_ZSTD_FIRST = 64 * 1024
_ZSTD_GUESS = 16


def _unzstd(data, cap):
    # Java's frames do not declare their size. The block headers bound it, but a
    # compressed block of a few bytes may claim 128 KiB; so the buffer starts at
    # what such data usually expands to and doubles while the output fills it.
    view = memoryview(data)
    bound = _zstd_bound(view)
    size = min(bound, cap, max(_ZSTD_FIRST, len(view) * _ZSTD_GUESS))
    while True:
        out = bytearray(size)
        try:
            return memoryview(out)[:cramjam.zstd.decompress_into(view, out)]
        except cramjam.DecompressionError as e:
            if "whole buffer" not in str(e):
                raise
            if size >= min(bound, cap):
                if bound > cap:
                    raise cap_error(None, cap) from None
                raise CodecError("corrupt zstd data: more output than its blocks declare") from None
        size = min(size * 2, bound, cap)


def _zstd_bound(view):
    """An upper bound of the decompressed size, from frame and block headers."""
    n = len(view)
    at = 0
    bound = 0
    while at < n:
        if n - at < 8:
            raise CodecError(f"corrupt zstd data: truncated frame at byte {at}")
        (magic,) = struct.unpack_from("<I", view, at)
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
            (skip,) = struct.unpack_from("<I", view, at + 4)
            at += 8 + skip
            continue
        if magic != _ZSTD_MAGIC:
            raise CodecError(f"corrupt zstd data: no zstd frame magic at byte {at}")
        fhd = view[at + 4]
        single = fhd & 0x20
        size_bytes = (1 if single else 0, 2, 4, 8)[fhd >> 6]
        p = at + 5
        window = None
        if not single:
            wd = view[p]
            base = 1 << (10 + (wd >> 3))
            window = base + (base >> 3) * (wd & 7)
            p += 1
        p += (0, 1, 2, 4)[fhd & 3]
        if n - p < size_bytes:
            raise CodecError("corrupt zstd data: truncated frame header")
        content = None
        if size_bytes:
            content = int.from_bytes(view[p:p + size_bytes], "little") + (256 if size_bytes == 2 else 0)
            p += size_bytes
        if window is None:
            window = content
        block_max = min(window, _ZSTD_BLOCK_MAX)
        blocks = 0
        while True:
            if n - p < 3:
                raise CodecError(f"corrupt zstd data: truncated block header at byte {p}")
            head = view[p] | view[p + 1] << 8 | view[p + 2] << 16
            p += 3
            kind, size = (head >> 1) & 3, head >> 3
            if kind == 3:
                raise CodecError(f"corrupt zstd data: reserved block type at byte {p - 3}")
            blocks += block_max if kind == 2 else size
            p += 1 if kind == 1 else size
            if head & 1:
                break
        if fhd & 0x04:
            p += 4
        if p > n:
            raise CodecError("corrupt zstd data: truncated frame")
        bound += min(blocks, content) if content is not None else blocks
        at = p
    return bound


# ---- xxHash32 for lz4 frame header checksums (inputs under 16 bytes) -----

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M = 0xFFFFFFFF


def _rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & _M


@functools.lru_cache(maxsize=64)
def _header_checksum(descriptor):
    """An lz4 frame descriptor's checksum byte; frames repeat a handful of descriptors, so each is hashed once."""
    return (xxh32(descriptor) >> 8) & 0xFF


def xxh32(data, seed=0):
    data = bytes(data)
    n = len(data)
    if n >= 16:
        raise ValueError("only short inputs are hashed here")
    h = (seed + _P5 + n) & _M
    at = 0
    while at + 4 <= n:
        h = _rotl((h + int.from_bytes(data[at:at + 4], "little") * _P3) & _M, 17) * _P4 & _M
        at += 4
    while at < n:
        h = _rotl((h + data[at] * _P5) & _M, 11) * _P1 & _M
        at += 1
    h ^= h >> 15
    h = h * _P2 & _M
    h ^= h >> 13
    h = h * _P3 & _M
    return h ^ (h >> 16)


unlz4 = unlz4_py
if COMPILED:
    from ._clz4 import unlz4  # noqa: E402,F811
