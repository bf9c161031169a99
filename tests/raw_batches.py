"""Record batches written byte by byte, for the faults kafkaproto's own builders cannot make: records that lie
about their lengths, counts and offsets that disagree, codecs no one knows, decompression bombs. Each batch gets a
good CRC over whatever it holds, so that the checks behind the CRC are reached."""

import struct

import cramjam
from crc32c import crc32c

from kafkaproto.records import _compression


def uvarint(u):
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def zigzag(v):
    return uvarint(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)


def field(value):
    """A record's varint-length-prefixed bytes (key, value, header name or value); None is length -1."""
    return zigzag(-1) if value is None else zigzag(len(value)) + value


def record(key=b"k", value=b"v", headers=(), ts_delta=0, offset_delta=0, body=None, size=None):
    """One record as the wire has it, or any body under any length."""
    if body is None:
        body = (b"\0" + zigzag(ts_delta) + zigzag(offset_delta) + field(key) + field(value) + zigzag(len(headers))
                + b"".join(field(name) + field(hvalue) for name, hvalue in headers))
    return zigzag(len(body) if size is None else size) + body


def recrc(data):
    """data with its CRC made good again (after editing what the CRC covers)."""
    data = bytearray(data)
    data[17:21] = struct.pack(">I", crc32c(bytes(data[21:])))
    return bytes(data)


def batch(recs, count=None, last_delta=None, codec=0, base_ts=1_700_000_000_000, max_ts=None, attributes=None,
          base_offset=0, producer_id=-1, sequence=-1, payload=None):
    """A magic-2 batch around records as given (compressed with codec when it is one kafkaproto knows), whatever
    its header says."""
    body = b"".join(recs)
    if payload is None:
        payload = body if codec in (0, 5, 6, 7) else _compression.compress(codec, body)
    count = len(recs) if count is None else count
    header = struct.pack(">qiibIhiqqqhii", base_offset, 49 + len(payload), -1, 2, 0,
                         codec if attributes is None else attributes, count - 1 if last_delta is None else last_delta,
                         base_ts, base_ts if max_ts is None else max_ts, producer_id, 0, sequence, count)
    return recrc(header + payload)


def zstd_bomb(size, key=b"k", **options):
    """A batch of one record whose value is size zero bytes, zstd-compressed as it streams (a few KiB for 100 MB)."""
    head = b"\0\0\0" + field(key) + zigzag(size)
    stream = cramjam.zstd.Compressor(level=3)
    stream.compress(zigzag(len(head) + size + 1) + head)
    chunk = b"\0" * (1 << 24)
    for at in range(0, size, len(chunk)):
        stream.compress(chunk[:min(len(chunk), size - at)])
    stream.compress(b"\0")
    return batch([], count=1, codec=4, payload=bytes(stream.flush()) + bytes(stream.finish()), **options)
