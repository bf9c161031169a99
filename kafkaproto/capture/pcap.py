"""Packets from capture files: classic pcap and pcapng, plain or gzip-compressed.

``read_packets(path)`` streams a file's packets as ``Packet`` tuples (timestamp in nanoseconds since
the epoch, link type, captured bytes, length on the wire, byte offset of the record, interface).

Classic pcap (libpcap's savefile): either byte order, microsecond (magic a1b2c3d4) or nanosecond
(a1b23c4d) timestamps, and the "modified" variant (a1b2cd34) whose record headers are 24 bytes. One
link type holds for the whole file.

pcapng: any number of sections, each in its own byte order; a section's interfaces each have their own
link type, snap length and timestamp resolution (``if_tsresol``, a power of 10 or of 2) and offset
(``if_tsoffset``). Packets come from Enhanced Packet Blocks, Simple Packet Blocks (interface 0, no
timestamp: 0 is given) and the obsolete Packet Block; every other block is skipped by its length.

The file is read in chunks, so memory stays bounded whatever its size. No declared length is believed:
each is checked against a limit and against the bytes actually present before anything is sliced, and
a file that is damaged or cut short raises ``CaptureFormatError`` naming the byte offset (in the
decompressed file) of the record at fault, after every whole packet before it has been yielded.
"""

import gzip
import io
import os
import struct
import zlib
from typing import NamedTuple

from kafkaproto._impl import COMPILED
from kafkaproto.exceptions import KafkaProtoError

__all__ = ["CaptureFormatError", "Packet", "check_capture", "open_capture", "read_packets"]

CHUNK_SIZE = 1 << 20
# A classic pcap record may hold at most this many bytes: four times the largest snap length tcpdump
# uses, so damaged headers are caught before anything is read for them.
MAX_PCAP_CAPLEN = 262144 * 4
MAX_PCAPNG_BLOCK = 64 << 20

_GZIP_MAGIC = b"\x1f\x8b"
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"  # the Section Header Block type; it reads the same in both byte orders
_PCAP_MAGICS = {  # first four bytes -> (byte order, nanoseconds per timestamp fraction unit, modified)
    b"\xd4\xc3\xb2\xa1": ("<", 1000, False),
    b"\xa1\xb2\xc3\xd4": (">", 1000, False),
    b"\x4d\x3c\xb2\xa1": ("<", 1, False),
    b"\xa1\xb2\x3c\x4d": (">", 1, False),
    b"\x34\xcd\xb2\xa1": ("<", 1000, True),
    b"\xa1\xb2\xcd\x34": (">", 1000, True),
}
_BYTE_ORDER_MAGICS = {b"\x4d\x3c\x2b\x1a": "<", b"\x1a\x2b\x3c\x4d": ">"}

_SECTION_HEADER = 0x0A0D0D0A
_INTERFACE_DESCRIPTION = 1
_OBSOLETE_PACKET = 2
_SIMPLE_PACKET = 3
_ENHANCED_PACKET = 6

_OPTION_END = 0
_IF_TSRESOL = 9
_IF_TSOFFSET = 14


class CaptureFormatError(KafkaProtoError, ValueError):
    """A capture file that cannot be read: what is wrong, and at which byte.

    ``offset`` is the byte offset, in the decompressed file, of the record or block at fault;
    ``name`` the file's name (None if unknown); ``reason`` the message without the name.
    """

    def __init__(self, reason, offset, name=None):
        self.reason = reason
        self.offset = offset
        self.name = name
        super().__init__(reason)

    def __str__(self):
        return f"{self.name}: {self.reason}" if self.name else self.reason

    def __reduce__(self):
        return (CaptureFormatError, (self.reason, self.offset, self.name))


class Packet(NamedTuple):
    """One captured packet."""

    timestamp_ns: int      # nanoseconds since the epoch
    link_type: int         # LINKTYPE_* of the interface it was captured on
    data: bytes            # the bytes captured (possibly fewer than were on the wire)
    original_length: int   # its length on the wire
    offset: int            # byte offset of its record or block in the decompressed file
    interface: int         # pcapng interface id; 0 for classic pcap


def open_capture(source):
    """A binary file object reading the capture ``source`` (a path or a binary file object), decompressed.

    A gzip stream (magic 1f 8b) is decompressed as it is read. A file this opens is closed by closing
    what it returns; a file object passed in is left open.
    """
    if isinstance(source, (str, bytes, os.PathLike)):
        raw = open(source, "rb")
        try:
            return _decompressing(raw, owns=True)
        except BaseException:
            raw.close()
            raise
    return _decompressing(source, owns=False)


def read_packets(source, name=None):
    """The packets of a pcap or pcapng capture, in file order, as an iterator of ``Packet``.

    ``source`` is a path or a binary file object (gzip-compressed or not); ``name`` is used in error
    messages and defaults to the path. The file's header is read by this call, so a missing file or one
    that is not a capture raises here; damage further on raises ``CaptureFormatError`` when reached.
    A file this opens is closed when the iterator is exhausted, closed, or dropped.
    """
    if name is None:
        if isinstance(source, (str, bytes, os.PathLike)):
            name = os.fsdecode(source)
        elif isinstance(getattr(source, "name", None), str):
            name = source.name
    stream = open_capture(source)
    owned = stream is not source
    try:
        data = _Input(stream, name, owned)
        have = data.fill(4)
        magic = data.buf[:4]
        if magic == _PCAPNG_MAGIC:
            if compiled_pcapng is not None:  # the same packets
                return compiled_pcapng(data)
            packets = _pcapng_packets(data)
        elif magic in _PCAP_MAGICS:
            if compiled_pcap is not None:  # the same packets; it reads the file header itself
                return compiled_pcap(data, *_PCAP_MAGICS[magic])
            packets = _pcap_packets(data, *_PCAP_MAGICS[magic])
        else:
            raise _not_a_capture(data, magic, have)
        # Runs the reader up to its first packet: it reads the file header, and from then on closes
        # the file however it ends (a reader never started would not).
        next(packets)
    except BaseException:
        if owned:
            stream.close()
        raise
    return packets


def check_capture(path, name=None):
    """Raises unless the file at ``path`` opens and starts as a pcap or pcapng file (gzip-compressed or not).

    OSError (FileNotFoundError, PermissionError, IsADirectoryError) for a file that cannot be opened,
    CaptureFormatError for one that is not a capture at all (empty, or starting with anything but a capture's
    magic number). Damage further on (a file header cut short, a gzip stream cut) is left to reading, which
    reports it after whatever could be read.
    """
    if name is None:
        name = os.fsdecode(path)
    stream = open_capture(path)
    try:
        data = _Input(stream, name, True)
        try:
            have = data.fill(4)
        except CaptureFormatError:  # a gzip stream damaged in its first bytes: reading says so
            return
        magic = bytes(data.buf[:4])
        if magic != _PCAPNG_MAGIC and magic not in _PCAP_MAGICS:
            raise _not_a_capture(data, magic, have)
    finally:
        stream.close()


def _not_a_capture(data, magic, have):
    return data.error(f"not a pcap or pcapng file (it starts with {magic.hex() or 'nothing'}"
                      f"{'' if have >= 4 else f' and has only {have} bytes'})", 0)


# -- opening ---------------------------------------------------------------------------------------


class _ClosingGzipFile(gzip.GzipFile):
    """A GzipFile that also closes the file it decompresses (GzipFile leaves a passed-in file open)."""

    def __init__(self, fileobj):
        super().__init__(fileobj=fileobj, mode="rb")
        self._source = fileobj

    def close(self):
        try:
            super().close()
        finally:
            self._source.close()


class _Rejoined(io.RawIOBase):
    """The bytes already read from an unseekable stream, then the rest of it."""

    def __init__(self, head, stream, owns):
        super().__init__()
        self._head = head
        self._stream = stream
        self._read = getattr(stream, "read1", None) or stream.read  # what is there, not a full buffer's worth
        self._owns = owns

    def readable(self):
        return True

    def readinto(self, buffer):
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._read(len(buffer))
        if not data:
            return 0
        buffer[:len(data)] = data
        return len(data)

    def close(self):
        try:
            if self._owns and not self.closed:
                self._stream.close()
        finally:
            super().close()


def _decompressing(stream, owns):
    """``stream`` from its start, gzip-decompressed if it starts with gzip's magic."""
    head = _peek(stream, 2)
    if head is None:  # the stream can neither peek nor seek: read, then put the bytes back in front
        head = _read_up_to(stream, 2)
        stream = _Rejoined(head, stream, owns)
        owns = True  # closing the wrapper closes the stream if it should
    if head != _GZIP_MAGIC:
        return stream
    return _ClosingGzipFile(stream) if owns else gzip.GzipFile(fileobj=stream, mode="rb")


def _peek(stream, n):
    """The first ``n`` bytes of ``stream`` (fewer at its end) without consuming them; None if it cannot tell."""
    peek = getattr(stream, "peek", None)
    if peek is not None:
        try:
            head = peek(n)
        except (OSError, ValueError):
            head = None
        # A pipe may peek fewer bytes than asked while more are on the way; only an empty peek means the end.
        if head is not None and (len(head) >= n or not head):
            return _binary(head[:n])
    try:
        if not stream.seekable():
            return None
        start = stream.tell()
        head = _read_up_to(stream, n)
        stream.seek(start)
    except (AttributeError, OSError):
        return None
    return head


def _read_up_to(stream, n):
    parts = []
    got = 0
    while got < n:
        data = _binary(stream.read(n - got))
        if not data:
            break
        parts.append(data)
        got += len(data)
    return b"".join(parts)


def _binary(data):
    if isinstance(data, str):
        raise TypeError("a capture must be read from a binary file, not a text one")
    return bytes(data)


# -- reading ---------------------------------------------------------------------------------------


class _Input:
    """The decompressed file as a window of bytes: ``buf[pos:]`` is unread, ``base`` is buf[0]'s offset."""

    __slots__ = ("stream", "read", "name", "owned", "buf", "pos", "base", "eof")

    def __init__(self, stream, name, owned):
        self.stream = stream
        # read1 returns what one read of the layer below gives: a gzip stream damaged further on still
        # hands over the data before the damage (read would lose it with the exception).
        self.read = getattr(stream, "read1", None) or stream.read
        self.name = name
        self.owned = owned  # close the stream when done
        self.buf = b""
        self.pos = 0
        self.base = 0
        self.eof = False

    def fill(self, need):
        """Makes ``need`` bytes available from ``pos`` on, reading chunks; returns how many are.

        Fewer than ``need`` only at the end of the file. Reads never exceed a chunk, so a length
        declared by the file cannot make this allocate more than the file holds.
        """
        have = len(self.buf) - self.pos
        if have >= need or self.eof:
            return have
        parts = [self.buf[self.pos:]]
        self.base += self.pos
        self.pos = 0
        while have < need:
            more = self._read_chunk(self.base + have)
            if not more:
                self.eof = True
                break
            parts.append(more)
            have += len(more)
        self.buf = b"".join(parts)
        return have

    def _read_chunk(self, offset):
        try:
            return self.read(CHUNK_SIZE)
        except EOFError:
            raise self.error(f"truncated: the gzip stream ends after byte {offset} of the decompressed file, "
                             f"before its end marker", offset) from None
        except (zlib.error, gzip.BadGzipFile) as exc:
            raise self.error(f"bad gzip data after byte {offset} of the decompressed file: {exc}", offset) from None

    def error(self, reason, offset):
        return CaptureFormatError(reason, offset, self.name)

    def close(self):
        if self.owned:
            self.stream.close()


def _pcap_packets(data, order, fraction_ns, modified):
    """Packets of a classic pcap file; yields None first, once its header is read."""
    have = data.fill(24)
    if have < 24:
        raise data.error(f"truncated: the pcap file header at byte 0 needs 24 bytes; {have} are left", 0)
    link_type = struct.unpack_from(order + "I", data.buf, 20)[0] & 0xFFFF  # the upper bits say FCS length
    data.pos = 24
    record = struct.Struct(order + ("IIII8x" if modified else "IIII"))  # modified adds ifindex, protocol, type
    unpack = record.unpack_from
    header_size = record.size
    new = tuple.__new__
    packet = Packet
    max_caplen = MAX_PCAP_CAPLEN
    try:
        yield None
        while True:
            buf = data.buf
            pos = data.pos
            base = data.base
            end = len(buf)
            last_header = end - header_size
            need = header_size
            while pos <= last_header:
                seconds, fraction, caplen, wire_length = unpack(buf, pos)
                if caplen > max_caplen:
                    raise data.error(f"packet record at byte {base + pos} declares {caplen} captured bytes; "
                                     f"a pcap record holds at most {max_caplen}", base + pos)
                start = pos + header_size
                stop = start + caplen
                if stop > end:
                    need = header_size + caplen
                    break
                yield new(packet, (seconds * 1_000_000_000 + fraction * fraction_ns, link_type, buf[start:stop],
                                   wire_length, base + pos, 0))
                pos = stop
            data.pos = pos
            have = data.fill(need)
            if have < need:
                if have == 0:
                    return
                offset = data.base + data.pos
                if have < header_size:
                    raise data.error(f"truncated: packet record at byte {offset} has {have} of its "
                                     f"{header_size}-byte header", offset)
                raise data.error(f"truncated: packet record at byte {offset} declares {need - header_size} captured "
                                 f"bytes; {have - header_size} are left", offset)
    finally:
        data.close()


class _Layout(NamedTuple):
    """The structs of one pcapng byte order."""

    block_head: struct.Struct        # block type, total length
    u32: struct.Struct
    enhanced: struct.Struct          # interface, timestamp high, low, captured length, original length
    obsolete: struct.Struct          # interface (16 bits), drops (16 bits), then as enhanced
    interface: struct.Struct         # link type, reserved, snap length
    option: struct.Struct            # code, length
    version: struct.Struct           # major, minor
    i64: struct.Struct


_LAYOUTS = {order: _Layout(struct.Struct(order + "II"), struct.Struct(order + "I"), struct.Struct(order + "IIIII"),
                           struct.Struct(order + "HHIIII"), struct.Struct(order + "HHI"), struct.Struct(order + "HH"),
                           struct.Struct(order + "HH"), struct.Struct(order + "q"))
            for order in "<>"}


def _unpackers(layout):
    return layout.block_head.unpack_from, layout.u32.unpack_from, layout.enhanced.unpack_from


class _Interface(NamedTuple):
    link_type: int
    snaplen: int
    multiplier: int   # timestamp_ns = ticks * multiplier // divisor + offset_ns
    divisor: int
    offset_ns: int


class _Section:
    """What a pcapng reader knows of the section it is in: its byte order's structs and its interfaces."""

    __slots__ = ("layout", "interfaces")

    def __init__(self):
        self.layout = _LAYOUTS["<"]  # until the first Section Header Block says otherwise
        self.interfaces = []

    def head(self, data, buf, pos):
        """(block type, length) of the block header at pos; a section header sets the byte order first."""
        block_type, length = self.layout.block_head.unpack_from(buf, pos)
        if block_type == _SECTION_HEADER:
            order = _BYTE_ORDER_MAGICS.get(buf[pos + 8:pos + 12])
            if order is None:
                raise data.error(f"section header block at byte {data.base + pos} has no byte-order magic "
                                 f"(found {buf[pos + 8:pos + 12].hex()})", data.base + pos)
            self.layout = _LAYOUTS[order]
            length = self.layout.u32.unpack_from(buf, pos + 4)[0]
        return block_type, length

    def other_block(self, data, buf, pos, length, block_type):
        """A whole, checked block other than an Enhanced Packet Block: the fields of its packet (time_ns,
        link_type, start, stop, wire_length, interface), or None for a block that holds none."""
        base = data.base
        layout = self.layout
        if block_type == _INTERFACE_DESCRIPTION:
            self.interfaces.append(_interface(data, layout, buf, pos, length))
        elif block_type == _SECTION_HEADER:
            if length < 28:
                raise _short_block(data, "section header", base + pos, length, 28)
            major, minor = layout.version.unpack_from(buf, pos + 12)
            if major != 1:
                raise data.error(f"section header block at byte {base + pos} is of pcapng version "
                                 f"{major}.{minor}; only 1.x is read", base + pos)
            self.interfaces = []
        elif block_type == _SIMPLE_PACKET:
            if length < 16:
                raise _short_block(data, "simple packet", base + pos, length, 16)
            if not self.interfaces:
                raise _unknown_interface(data, base + pos, 0, self.interfaces)
            wire_length = layout.u32.unpack_from(buf, pos + 8)[0]
            link_type, snaplen, _, _, _ = self.interfaces[0]
            caplen = min(wire_length, length - 16, snaplen or wire_length)
            return 0, link_type, pos + 12, pos + 12 + caplen, wire_length, 0
        elif block_type == _OBSOLETE_PACKET:
            if length < 32:
                raise _short_block(data, "packet", base + pos, length, 32)
            interface, _, high, low, caplen, wire_length = layout.obsolete.unpack_from(buf, pos + 8)
            if caplen > length - 32:
                raise _overlong_packet(data, "packet", base + pos, caplen, length - 32)
            return (self.stamp(data, base + pos, interface, high, low), self.interfaces[interface].link_type,
                    pos + 28, pos + 28 + caplen, wire_length, interface)
        return None

    def stamp(self, data, offset, interface, high, low):
        """A packet block's time in nanoseconds, from its interface's resolution and offset."""
        if interface >= len(self.interfaces):
            raise _unknown_interface(data, offset, interface, self.interfaces)
        _, _, multiplier, divisor, offset_ns = self.interfaces[interface]
        time_ns = ((high << 32) | low) * multiplier // divisor + offset_ns
        if not _NS_MIN <= time_ns <= _NS_MAX:
            raise _time_out_of_range(data, offset, time_ns)
        return time_ns

    def check(self, data, buf, pos, length, end):
        """Whether the block at pos, of that declared length, is whole in buf[:end]; raises if the length is
        impossible or its copy at the block's end differs."""
        if length < 12 or length & 3 or length > MAX_PCAPNG_BLOCK:
            raise data.error(f"block at byte {data.base + pos} declares {length} bytes; a block is a multiple of 4 "
                             f"bytes from 12 to {MAX_PCAPNG_BLOCK}", data.base + pos)
        if pos + length > end:
            return False
        trailer = self.layout.u32.unpack_from(buf, pos + length - 4)[0]
        if trailer != length:
            raise data.error(f"block at byte {data.base + pos} declares {length} bytes at its start and "
                             f"{trailer} at its end", data.base + pos)
        return True


def _pcapng_packets(data):
    """Packets of a pcapng file; yields None first. Enhanced Packet Blocks, nearly all of a capture, are read
    here; the other blocks, and whatever is wrong with a block, by _Section."""
    section = _Section()
    unpack_head, unpack_u32, unpack_enhanced = _unpackers(section.layout)
    new = tuple.__new__
    packet = Packet
    max_block = MAX_PCAPNG_BLOCK
    try:
        yield None
        while True:
            buf = data.buf
            pos = data.pos
            base = data.base
            end = len(buf)
            need = 12
            while pos + 12 <= end:
                block_type, length = unpack_head(buf, pos)
                if block_type == _SECTION_HEADER:  # sets the byte order (or says there is none)
                    block_type, length = section.head(data, buf, pos)
                    unpack_head, unpack_u32, unpack_enhanced = _unpackers(section.layout)
                if length < 12 or length & 3 or length > max_block or pos + length > end or \
                        unpack_u32(buf, pos + length - 4)[0] != length:
                    if not section.check(data, buf, pos, length, end):
                        need = length
                        break
                if block_type == _ENHANCED_PACKET:
                    if length < 32:
                        raise _short_block(data, "enhanced packet", base + pos, length, 32)
                    interface, high, low, caplen, wire_length = unpack_enhanced(buf, pos + 8)
                    if caplen > length - 32:
                        raise _overlong_packet(data, "enhanced packet", base + pos, caplen, length - 32)
                    time_ns = section.stamp(data, base + pos, interface, high, low)
                    yield new(packet, (time_ns, section.interfaces[interface].link_type,
                                       buf[pos + 28:pos + 28 + caplen], wire_length, base + pos, interface))
                else:
                    found = section.other_block(data, buf, pos, length, block_type)
                    if found is not None:
                        time_ns, link_type, start, stop, wire_length, interface = found
                        yield new(packet, (time_ns, link_type, buf[start:stop], wire_length, base + pos, interface))
                pos += length
            data.pos = pos
            have = data.fill(need)
            if have < need:
                if have == 0:
                    return
                raise _truncated_block(data, section.layout, have)
    finally:
        data.close()


def _interface(data, layout, buf, pos, length):
    """The Interface Description Block at ``pos``: link type, snap length and timestamp conversion."""
    offset = data.base + pos
    if length < 20:
        raise _short_block(data, "interface description", offset, length, 20)
    link_type, _, snaplen = layout.interface.unpack_from(buf, pos + 8)
    multiplier, divisor, offset_ns = 1000, 1, 0  # microseconds unless if_tsresol says otherwise
    at = pos + 16
    options_end = pos + length - 4
    while at + 4 <= options_end:
        code, size = layout.option.unpack_from(buf, at)
        if code == _OPTION_END:
            break
        value = at + 4
        if value + size > options_end:
            raise data.error(f"interface description block at byte {offset}: option {code} declares {size} bytes; "
                             f"{options_end - value} are left in the block", offset)
        if code == _IF_TSRESOL:
            if size != 1:
                raise data.error(f"interface description block at byte {offset}: if_tsresol has {size} bytes, "
                                 f"not 1", offset)
            resolution = buf[value]
            exponent = resolution & 0x7F
            if resolution & 0x80:  # 2^-exponent seconds per tick
                multiplier, divisor = 1_000_000_000, 1 << exponent
            elif exponent <= 9:  # 10^-exponent seconds per tick
                multiplier, divisor = 10 ** (9 - exponent), 1
            else:
                multiplier, divisor = 1, 10 ** (exponent - 9)
        elif code == _IF_TSOFFSET:
            if size != 8:
                raise data.error(f"interface description block at byte {offset}: if_tsoffset has {size} bytes, "
                                 f"not 8", offset)
            offset_ns = layout.i64.unpack_from(buf, value)[0] * 1_000_000_000
        at = value + ((size + 3) & ~3)
    return _Interface(link_type, snaplen, multiplier, divisor, offset_ns)


# A packet's time in nanoseconds since the epoch must fit 64 bits (the years 1677 to 2262), as rows keep it
_NS_MIN, _NS_MAX = -(1 << 63), (1 << 63) - 1


def _time_out_of_range(data, offset, time_ns):
    return data.error(f"packet block at byte {offset} is stamped {time_ns // 1_000_000_000} s from the epoch, "
                      f"outside the years 1677 to 2262 that 64-bit nanoseconds hold", offset)


def _short_block(data, kind, offset, length, minimum):
    return data.error(f"{kind} block at byte {offset} is {length} bytes; it needs at least {minimum}", offset)


def _overlong_packet(data, kind, offset, caplen, room):
    return data.error(f"{kind} block at byte {offset} declares {caplen} captured bytes; it holds {room}", offset)


def _unknown_interface(data, offset, interface, interfaces):
    return data.error(f"packet block at byte {offset} is of interface {interface}; the section describes "
                      f"{len(interfaces)}", offset)


def _truncated_block(data, layout, have):
    """The error for a file that ends ``have`` bytes into the block at ``data.pos``."""
    offset = data.base + data.pos
    if have < 8:
        return data.error(f"truncated: block at byte {offset} has {have} of its 8-byte header", offset)
    length = layout.u32.unpack_from(data.buf, data.pos + 4)[0]
    if data.buf[data.pos:data.pos + 4] == _PCAPNG_MAGIC:
        order = _BYTE_ORDER_MAGICS.get(data.buf[data.pos + 8:data.pos + 12])
        if order is None:
            return data.error(f"truncated: section header block at byte {offset} has {have} bytes", offset)
        length = _LAYOUTS[order].u32.unpack_from(data.buf, data.pos + 4)[0]
    return data.error(f"truncated: block at byte {offset} declares {length} bytes; {have} are left", offset)


compiled_pcap = compiled_pcapng = None
if COMPILED:  # the records of both kinds, compiled: the capture loop reads them in place
    from ._cpcap import PcapngRecords as compiled_pcapng  # noqa: E402
    from ._cpcap import PcapRecords as compiled_pcap  # noqa: E402
