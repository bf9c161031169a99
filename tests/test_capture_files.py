"""Capture files and link layers: kafkaproto.capture.pcap and kafkaproto.capture.link.

Files are written by tests/capture_files.py (and checked with tshark where it is installed), read
back, and compared field by field; then damaged: cut at every byte, given impossible lengths, and
mutated at random, where only packets and CaptureFormatError may come out. The real captures in
tests/data/captures/ must read as TCP segments throughout.
"""

import gzip
import io
import ipaddress
import pickle
import random
import shutil
import struct
import subprocess
import tracemalloc
from contextlib import nullcontext
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import capture_files as cf
from kafkaproto.capture import pcap
from kafkaproto.capture.link import (ACK, FIN, LINKTYPE_ETHERNET, LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_LINUX_SLL,
                                     LINKTYPE_LINUX_SLL2, LINKTYPE_LOOP, LINKTYPE_NULL, LINKTYPE_RAW, PSH, RST, SYN,
                                     Segment, address_text, tcp_segment)
from kafkaproto.capture.pcap import CaptureFormatError, Packet, open_capture, read_packets
from kafkaproto.exceptions import KafkaProtoError

CAPTURES = sorted((Path(__file__).parent / "data" / "captures").glob("*.pcap"))
T0 = 1_700_000_000_123_456_789  # a timestamp with every digit set, to catch lost precision
A4, B4 = "10.0.0.1", "192.168.200.2"
A6, B6 = "2001:db8::1", "fe80::1234:5678"


def v4_frame(payload=b"kafka", *, sport=50000, dport=9092, seq=1000, **ip):
    return cf.ethernet(cf.ipv4(A4, B4, cf.tcp(sport, dport, seq, payload), **ip))


def read_all(source, **kwargs):
    """Every packet read, and the error that ended the reading (None if it ended cleanly)."""
    packets = []
    try:
        for p in read_packets(source, **kwargs):
            packets.append(p)
    except CaptureFormatError as exc:
        return packets, exc
    return packets, None


def read_bytes(data):
    packets, error = read_all(io.BytesIO(data))
    assert error is None, error
    return packets


# -- classic pcap -------------------------------------------------------------------------------------


@pytest.mark.parametrize("big_endian", [False, True], ids=["little", "big"])
@pytest.mark.parametrize("nanos", [False, True], ids=["us", "ns"])
def test_pcap_reads_back(big_endian, nanos):
    frames = [v4_frame(b"x" * n, seq=n) for n in (0, 1, 3, 100, 1400)]
    stamps = [T0 + i * 1_000_003 for i in range(len(frames))]
    data = cf.pcap(zip(stamps, frames), nanos=nanos, big_endian=big_endian)
    packets = read_bytes(data)
    offset = 24
    for packet, stamp, frame in zip(packets, stamps, frames, strict=True):
        assert packet == Packet(stamp if nanos else stamp // 1000 * 1000, LINKTYPE_ETHERNET, frame, len(frame),
                                offset, 0)
        assert type(packet.data) is bytes
        offset += 16 + len(frame)


def test_pcap_snaplen_and_original_length():
    frame = v4_frame(b"y" * 500)
    packets = read_bytes(cf.pcap([(T0, frame), (T0, frame, 9000)], snaplen=100))
    assert [(len(p.data), p.original_length) for p in packets] == [(100, len(frame)), (100, 9000)]


@pytest.mark.parametrize("link_type", [LINKTYPE_RAW, LINKTYPE_LINUX_SLL2, 147])
def test_pcap_link_type_of_the_file(link_type):
    (packet,) = read_bytes(cf.pcap([(T0, b"\x45" + bytes(30))], link_type=link_type))
    assert packet.link_type == link_type


def test_pcap_link_type_upper_bits_are_not_the_link_type():
    data = bytearray(cf.pcap([(T0, v4_frame())]))
    struct.pack_into("<I", data, 20, 0x1400_0000 | LINKTYPE_ETHERNET)  # FCS length bits set
    assert read_bytes(bytes(data))[0].link_type == LINKTYPE_ETHERNET


@pytest.mark.parametrize("big_endian", [False, True], ids=["little", "big"])
def test_modified_pcap(big_endian):
    order = ">" if big_endian else "<"
    frames = [v4_frame(b"a"), v4_frame(b"bb" * 40)]
    data = struct.pack(order + "IHHiIII", 0xA1B2CD34, 2, 4, 0, 0, 65535, 1)
    for i, frame in enumerate(frames):
        data += struct.pack(order + "IIIIIHBB", 1_700_000_000 + i, 5, len(frame), len(frame), 3, 0x0800, 0, 0) + frame
    packets = read_bytes(data)
    assert [p.data for p in packets] == frames
    assert [p.timestamp_ns for p in packets] == [1_700_000_000_000_005_000, 1_700_000_001_000_005_000]
    assert [p.offset for p in packets] == [24, 24 + 24 + len(frames[0])]


def test_empty_pcap_has_no_packets():
    assert read_bytes(cf.pcap([])) == []


class Trickle:
    """A stream that gives at most ``step`` bytes a read, so that records straddle every read."""

    def __init__(self, data, step):
        self.data, self.pos, self.step = data, 0, step

    def read(self, n=-1):
        n = self.step if n < 0 else min(n, self.step)
        chunk = self.data[self.pos:self.pos + n]
        self.pos += len(chunk)
        return chunk

    def seekable(self):
        return False


def python_read_all(source):
    """read_all by the pure-Python readers whatever is built."""
    saved = pcap.compiled_pcap, pcap.compiled_pcapng
    pcap.compiled_pcap = pcap.compiled_pcapng = None
    try:
        return read_all(source)
    finally:
        pcap.compiled_pcap, pcap.compiled_pcapng = saved


def same_reading(data, step=None):
    """The compiled and the Python reader give the same packets and the same error (message and offset)."""
    source = (lambda: Trickle(data, step)) if step else (lambda: io.BytesIO(data))
    compiled, compiled_error = read_all(source())
    python, python_error = python_read_all(source())
    assert compiled == python
    assert (str(compiled_error), getattr(compiled_error, "offset", None)) == \
        (str(python_error), getattr(python_error, "offset", None))
    return compiled, compiled_error


@pytest.mark.skipif(pcap.compiled_pcap is None, reason="the compiled pcap reader is not in use")
@pytest.mark.parametrize("path", CAPTURES, ids=[p.stem for p in CAPTURES])
def test_the_compiled_pcap_reader_reads_as_the_python_one(path):
    """Whole, cut anywhere (inside a record's header or its bytes), a length made too large, swapped to the
    other byte order, and read a few bytes at a time."""
    data = path.read_bytes()
    packets, error = same_reading(data)
    assert packets and error is None
    for step in (1, 7, 1000):
        assert same_reading(data, step) == (packets, None)
    rng = random.Random(path.name)
    for cut in sorted(rng.sample(range(len(data)), 40)) + [24, 24 + 8, 24 + 16, len(data) - 1]:
        same_reading(data[:cut])
    for record in rng.sample([p.offset for p in packets], 10):
        damaged = bytearray(data)
        damaged[record + 8:record + 12] = struct.pack("<I", rng.choice([len(data), pcap.MAX_PCAP_CAPLEN + 1]))
        assert same_reading(bytes(damaged))[1] is not None
    swapped = cf.pcap([(p.timestamp_ns, p.data, p.original_length) for p in packets], big_endian=True, nanos=True,
                      link_type=packets[0].link_type)
    assert same_reading(swapped) == (packets, None)


# -- pcapng -------------------------------------------------------------------------------------------


INTERFACES = (
    (LINKTYPE_ETHERNET, 6),                  # microseconds, the default (no if_tsresol written)
    (LINKTYPE_RAW, 9),                       # nanoseconds
    (LINKTYPE_LINUX_SLL2, 0x80 | 20, 3600),  # 2^-20 s, an hour's offset
    (LINKTYPE_NULL, 3, -7),                  # milliseconds, a negative offset
    (LINKTYPE_LINUX_SLL, 12, 1_699_999_000), # picoseconds (since an offset: 64 bits hold 200 days of them)
)


def frame_for(link_type, payload=b"kafka"):
    ip = cf.ipv4(A4, B4, cf.tcp(40000, 9092, 7, payload))
    return {LINKTYPE_ETHERNET: cf.ethernet, LINKTYPE_RAW: cf.raw, LINKTYPE_LINUX_SLL2: cf.sll2,
            LINKTYPE_NULL: cf.null_loopback, LINKTYPE_LINUX_SLL: cf.sll}[link_type](ip)


def expected_timestamp(interface, stamp):
    link_type, tsresol, *rest = interface
    tsoffset = rest[0] if rest else 0
    return cf.timestamp_ns(cf.ticks(stamp, tsresol, tsoffset), tsresol, tsoffset)


@pytest.mark.skipif(pcap.compiled_pcapng is None, reason="the compiled pcapng reader is not in use")
@pytest.mark.parametrize("big_endian", [False, True], ids=["little", "big"])
def test_the_compiled_pcapng_reader_reads_as_the_python_one(big_endian):
    """Real traffic, interfaces of every resolution and offset, a section of simple packets and an obsolete
    packet block; whole, cut anywhere, with lengths, interfaces, times and captured lengths made wrong, and read a
    few bytes at a time."""
    real = [p for path in CAPTURES[:3] for p in read_bytes(path.read_bytes())]
    items = [(i % len(INTERFACES), T0 + i * 987_654_321, frame_for(INTERFACES[i % len(INTERFACES)][0], b"p" * i))
             for i in range(40)]
    data = (cf.pcapng([(0, p.timestamp_ns, p.data, p.original_length) for p in real],
                      interfaces=[(real[0].link_type, 9)], big_endian=big_endian)
            + cf.pcapng(items, interfaces=INTERFACES, big_endian=big_endian)
            + cf.pcapng([(0, 0, frame_for(LINKTYPE_ETHERNET, b"s" * i)) for i in range(5)], simple=True,
                        big_endian=big_endian)
            + cf.section_header(big_endian=big_endian)
            + cf.interface_description(LINKTYPE_ETHERNET, big_endian=big_endian)
            + cf.obsolete_packet(0, cf.ticks(T0), frame_for(LINKTYPE_ETHERNET), big_endian=big_endian))
    packets, error = same_reading(data)
    assert len(packets) == len(real) + 46 and error is None
    for step in (1, 7, 1000):
        assert same_reading(data, step) == (packets, None)
    rng = random.Random(big_endian)
    for cut in sorted(rng.sample(range(len(data)), 60)) + [4, 8, 12, 27, 28]:
        same_reading(data[:cut])
    u32 = ">I" if big_endian else "<I"
    blocks = [p.offset for p in packets if p.timestamp_ns]  # enhanced packet blocks
    for field, values in ((4, [len(data), 13, 16, pcap.MAX_PCAPNG_BLOCK + 4, 1 << 31]),  # block length
                          (8, [5, 1 << 31]),                                               # interface
                          (12, [0xFFFFFFFF]),                                              # time, high bits
                          (20, [1 << 20, 0xFFFFFFFF])):                                    # captured length
        for block in rng.sample(blocks, 5):
            damaged = bytearray(data)
            damaged[block + field:block + field + 4] = struct.pack(u32, rng.choice(values))
            assert same_reading(bytes(damaged))[1] is not None, (field, block)
    damaged = bytearray(data)  # a length whose copy at the block's end differs
    block = rng.choice(blocks)
    length = struct.unpack_from(u32, data, block + 4)[0]
    damaged[block + length - 4:block + length] = struct.pack(u32, length + 4)
    assert same_reading(bytes(damaged))[1] is not None



@pytest.mark.parametrize("big_endian", [False, True], ids=["little", "big"])
def test_pcapng_interfaces_of_different_link_types_and_resolutions(big_endian):
    items = [(i % len(INTERFACES), T0 + i * 987_654_321, frame_for(INTERFACES[i % len(INTERFACES)][0], b"p" * i))
             for i in range(12)]
    packets = read_bytes(cf.pcapng(items, interfaces=INTERFACES, big_endian=big_endian))
    assert len(packets) == len(items)
    for packet, (interface, stamp, frame) in zip(packets, items):
        assert packet.interface == interface
        assert packet.link_type == INTERFACES[interface][0]
        assert packet.data == frame and packet.original_length == len(frame)
        assert packet.timestamp_ns == expected_timestamp(INTERFACES[interface], stamp)
        assert isinstance(tcp_segment(packet.link_type, packet.data), Segment)


def test_pcapng_timestamps_exact():
    # The reader converts with integers: these are exact in each resolution.
    cases = [((1, 9), T0), ((1, 6), T0 // 1000 * 1000), ((1, 0x80 | 9), 1_700_000_000_001_953_125),
             ((1, 0x80 | 20, 100), 1_700_000_100_001_953_125), ((1, 3, -3600), 1_700_000_000_123_000_000),
             ((1, 0), 1_700_000_000_000_000_000), ((1, 15, 1_700_000_000), T0)]
    for interface, stamp in cases:
        (packet,) = read_bytes(cf.pcapng([(0, stamp, v4_frame())], interfaces=(interface,)))
        assert packet.timestamp_ns == stamp, interface


def test_pcapng_timestamp_of_2_to_the_minus_n_rounds_down():
    units = (1_700_000_000 << 20) + 1  # one tick past the second: 953.67... ns
    data = cf.section_header() + cf.interface_description(1, 0x80 | 20) + cf.enhanced_packet(0, units, v4_frame())
    assert read_bytes(data)[0].timestamp_ns == 1_700_000_000_000_000_953


def test_pcapng_sections_of_either_byte_order_each_with_their_interfaces():
    first = cf.pcapng([(0, T0, frame_for(LINKTYPE_RAW)), (1, T0 + 1000, frame_for(LINKTYPE_ETHERNET))],
                      interfaces=((LINKTYPE_RAW, 9), (LINKTYPE_ETHERNET, 6)))
    second = cf.pcapng([(0, T0 + 2000, frame_for(LINKTYPE_LINUX_SLL))], interfaces=((LINKTYPE_LINUX_SLL, 9),),
                       big_endian=True)
    third = cf.pcapng([(0, T0 + 3000, frame_for(LINKTYPE_NULL))], interfaces=((LINKTYPE_NULL, 9),))
    packets = read_bytes(first + second + third)
    assert [(p.link_type, p.interface, p.timestamp_ns) for p in packets] == [
        (LINKTYPE_RAW, 0, T0), (LINKTYPE_ETHERNET, 1, T0 // 1000 * 1000 + 1000), (LINKTYPE_LINUX_SLL, 0, T0 + 2000),
        (LINKTYPE_NULL, 0, T0 + 3000)]
    assert packets[2].offset == len(first) + len(cf.section_header(big_endian=True)) + len(
        cf.interface_description(LINKTYPE_LINUX_SLL, 9, big_endian=True))
    # A later section forgets the interfaces of the one before.
    data = first + cf.section_header(big_endian=True) + cf.enhanced_packet(1, 0, v4_frame(), big_endian=True)
    packets, error = read_all(io.BytesIO(data))
    assert len(packets) == 2 and error.offset == len(first) + len(cf.section_header(big_endian=True))
    assert "interface 1" in str(error)


@pytest.mark.parametrize("big_endian", [False, True], ids=["little", "big"])
def test_pcapng_other_blocks_are_skipped(big_endian):
    be = big_endian
    frame = v4_frame()
    blocks = [cf.section_header(big_endian=be), cf.interface_description(1, 9, big_endian=be),
              cf.block(cf.NAME_RESOLUTION, struct.pack(">HH4s", 1, 8, bytes(4)) + b"host" + bytes(4), big_endian=be),
              cf.enhanced_packet(0, 5, frame, comment=b"a comment", big_endian=be),
              cf.block(cf.INTERFACE_STATISTICS, bytes(12), big_endian=be),
              cf.block(cf.DECRYPTION_SECRETS, b"TLSK" + struct.pack("<I", 3) + b"abc", big_endian=be),
              cf.block(cf.CUSTOM, b"\x00\x00\x7f\xfe" + b"private", big_endian=be),
              cf.block(0x12345678, b"", big_endian=be),
              cf.enhanced_packet(0, 6, frame, big_endian=be)]
    packets = read_bytes(b"".join(blocks))
    assert [(p.timestamp_ns, p.data) for p in packets] == [(5, frame), (6, frame)]
    assert packets[1].offset == sum(map(len, blocks[:-1]))


@pytest.mark.parametrize("big_endian", [False, True], ids=["little", "big"])
def test_pcapng_simple_packet_blocks(big_endian):
    frames = [v4_frame(b"s" * n) for n in (0, 1, 2, 3, 200)]
    packets = read_bytes(cf.pcapng([(0, T0, f) for f in frames], interfaces=((LINKTYPE_ETHERNET, 6),),
                                   big_endian=big_endian, simple=True))
    assert [(p.data, p.original_length, p.timestamp_ns, p.interface) for p in packets] == [
        (f, len(f), 0, 0) for f in frames]


def test_pcapng_simple_packet_captured_length():
    frame = v4_frame(b"z" * 300)
    # Cut by the interface's snap length: the block holds snaplen bytes, padded.
    data = cf.pcapng([(0, T0, frame)], interfaces=((LINKTYPE_ETHERNET, 6, 0, 101),), simple=True)
    (packet,) = read_bytes(data)
    assert (packet.data, packet.original_length) == (frame[:101], len(frame))
    # No snap length: what the block holds (its padding included, which the format cannot tell apart).
    data = cf.section_header() + cf.interface_description(1) + cf.simple_packet(frame[:101], len(frame))
    assert read_bytes(data)[0].data == frame[:101] + bytes(3)
    # A block holding more than the original length: the original length.
    data = cf.section_header() + cf.interface_description(1) + cf.simple_packet(frame, 60)
    assert read_bytes(data)[0].data == frame[:60]


@pytest.mark.parametrize("big_endian", [False, True], ids=["little", "big"])
def test_pcapng_obsolete_packet_block(big_endian):
    frame = v4_frame(b"old")
    data = (cf.section_header(big_endian=big_endian) + cf.interface_description(1, 9, big_endian=big_endian)
            + cf.interface_description(101, 6, big_endian=big_endian)
            + cf.obsolete_packet(1, 1_700_000_000_000_001, frame[14:], big_endian=big_endian)
            + cf.obsolete_packet(0, 42, frame, 1000, big_endian=big_endian))
    packets = read_bytes(data)
    assert [(p.interface, p.link_type, p.timestamp_ns, p.data, p.original_length) for p in packets] == [
        (1, 101, 1_700_000_000_000_001_000, frame[14:], len(frame) - 14), (0, 1, 42, frame, 1000)]


def test_pcapng_packet_before_any_interface():
    for packet_block in (cf.enhanced_packet(0, 0, b"abc"), cf.simple_packet(b"abc"), cf.obsolete_packet(0, 0, b"a")):
        packets, error = read_all(io.BytesIO(cf.section_header() + packet_block))
        assert packets == [] and error.offset == len(cf.section_header())


def test_pcapng_of_unsupported_version():
    data = bytearray(cf.pcapng([(0, T0, v4_frame())]))
    struct.pack_into("<H", data, 12, 2)
    packets, error = read_all(io.BytesIO(bytes(data)))
    assert packets == [] and error.offset == 0 and "version 2.0" in str(error)


# -- opening: paths, file objects, gzip ----------------------------------------------------------------


class Unseekable(io.RawIOBase):
    """A stream that can only be read, a little at a time (like a pipe)."""

    def __init__(self, data, step=3):
        self._data = data
        self._step = step

    def readable(self):
        return True

    def readinto(self, buffer):
        n = min(len(buffer), self._step, len(self._data))
        buffer[:n] = self._data[:n]
        self._data = self._data[n:]
        return n


SAMPLE = cf.pcap([(T0 + i, v4_frame(b"g" * i)) for i in range(50)], nanos=True)
SAMPLE_NG = cf.pcapng([(0, T0 + i, v4_frame(b"g" * i)) for i in range(50)], interfaces=((1, 9),))


@pytest.mark.parametrize("data", [SAMPLE, SAMPLE_NG], ids=["pcap", "pcapng"])
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_sources(tmp_path, data, compress):
    expected = read_bytes(data)
    assert len(expected) == 50
    content = gzip.compress(data) if compress else data
    path = tmp_path / "capture.pcap"
    path.write_bytes(content)
    assert list(read_packets(path)) == expected
    assert list(read_packets(str(path))) == expected
    assert list(read_packets(io.BytesIO(content))) == expected
    assert list(read_packets(Unseekable(content))) == expected
    assert list(read_packets(io.BufferedReader(Unseekable(content), 1))) == expected
    with open(path, "rb") as f:
        assert list(read_packets(f)) == expected
        assert not f.closed  # a file passed in is the caller's to close
    with open_capture(path) as f:
        assert f.read() == data


def test_gzip_is_streamed_not_read_whole(monkeypatch):
    data = cf.pcap([(T0, v4_frame(b"q" * 1000))] * 3000)  # 3 MB
    reads = []
    original = gzip.GzipFile.read1

    def spy(self, size=-1):
        reads.append(size)
        return original(self, size)

    monkeypatch.setattr(gzip.GzipFile, "read1", spy)
    assert len(list(read_packets(io.BytesIO(gzip.compress(data))))) == 3000
    assert reads and all(0 < size <= pcap.CHUNK_SIZE for size in reads)


def test_bad_gzip_data_is_a_capture_format_error():
    compressed = gzip.compress(SAMPLE)
    expected = read_bytes(SAMPLE)
    for cut in (len(compressed) // 2, len(compressed) - 9):  # ends without its end marker, or without its trailer
        packets, error = read_all(io.BytesIO(compressed[:cut]))
        assert packets == expected[:len(packets)] and "truncated" in str(error)
    packets, error = read_all(io.BytesIO(compressed[:-4]))  # the data is whole, the length after it is not
    assert len(packets) == 50 and "truncated" in str(error)
    damaged = bytearray(compressed)
    damaged[-6] ^= 0xFF  # the CRC no longer matches
    packets, error = read_all(io.BytesIO(bytes(damaged)))
    assert len(packets) == 50 and isinstance(error, CaptureFormatError)


def test_text_mode_file_is_refused(tmp_path):
    path = tmp_path / "x.pcap"
    path.write_bytes(SAMPLE)
    with open(path, encoding="latin-1") as f, pytest.raises(TypeError):
        read_packets(f)


def test_file_opened_by_the_reader_is_closed(tmp_path, monkeypatch):
    opened = []
    real_open = open

    def tracking_open(*args, **kwargs):
        f = real_open(*args, **kwargs)
        opened.append(f)
        return f

    monkeypatch.setattr("builtins.open", tracking_open)
    compressed = gzip.compress(SAMPLE)
    for content, damaged in ((SAMPLE, False), (compressed, False), (SAMPLE[:-5], True), (compressed[:-5], True),
                             (b"junk" * 10, True)):
        path = tmp_path / "c.pcap"
        path.write_bytes(content)
        with pytest.raises(CaptureFormatError) if damaged else nullcontext():
            list(read_packets(path))  # read to the end, or to an error
        try:
            packets = read_packets(path)
        except CaptureFormatError:
            continue
        next(packets)
        packets.close()  # abandoned part way
    assert len(opened) == 10 and all(f.closed for f in opened)


# -- errors -------------------------------------------------------------------------------------------


def test_not_a_capture_raises_at_once():
    for data in (b"", b"\xd4\xc3", b"GIF89a" + bytes(100), b"%PDF" + bytes(100)):
        with pytest.raises(CaptureFormatError, match="not a pcap or pcapng file") as info:
            read_packets(io.BytesIO(data))
        assert info.value.offset == 0


def test_error_names_file_and_offset(tmp_path):
    path = tmp_path / "capture.pcapng"
    data = bytearray(SAMPLE_NG)
    at = len(cf.section_header()) + len(cf.interface_description(1, 9))
    struct.pack_into("<I", data, at + 4, 0xFFFFFFFF)
    path.write_bytes(bytes(data))
    packets, error = read_all(path)
    assert packets == [] and error.offset == at
    assert isinstance(error, KafkaProtoError) and isinstance(error, ValueError)
    assert error.name == str(path)
    assert str(error).startswith(f"{path}: block at byte {at} declares 4294967295 bytes")
    assert str(pickle.loads(pickle.dumps(error))) == str(error)
    _, error = read_all(io.BytesIO(bytes(data)), name="given.pcapng")
    assert str(error).startswith("given.pcapng: ")
    _, error = read_all(io.BytesIO(bytes(data)))
    assert error.name is None and str(error).startswith("block at byte")


def ng_with_block_length(value, at_end=None):
    """SAMPLE_NG with its first packet block's declared length (at its start, or at its end) replaced."""
    data = bytearray(SAMPLE_NG)
    at = len(cf.section_header()) + len(cf.interface_description(1, 9))
    length = struct.unpack_from("<I", data, at + 4)[0]
    if at_end is None:
        struct.pack_into("<I", data, at + 4, value)
    else:
        struct.pack_into("<I", data, at + length - 4, value)
    return bytes(data), at


@pytest.mark.parametrize("value", [0xFFFFFFFF, 0xFFFFFFFC, 64 << 20 | 4, 0, 4, 8, 13, 34, 60 << 20, 2_000_000])
def test_pcapng_bogus_block_length(value):
    data, at = ng_with_block_length(value)
    tracemalloc.start()
    try:
        packets, error = read_all(io.BytesIO(data))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert packets == [] and error.offset == at, error
    assert peak < 3 * pcap.CHUNK_SIZE + 10 * len(data)


def test_pcapng_mismatched_trailing_length():
    data, at = ng_with_block_length(1234, at_end=True)
    packets, error = read_all(io.BytesIO(data))
    assert packets == [] and error.offset == at and "at its end" in str(error)


def test_pcapng_packet_longer_than_its_block():
    data = bytearray(SAMPLE_NG)
    at = len(cf.section_header()) + len(cf.interface_description(1, 9))
    struct.pack_into("<I", data, at + 20, 10_000)  # captured length
    packets, error = read_all(io.BytesIO(bytes(data)))
    assert packets == [] and error.offset == at and "10000 captured bytes" in str(error)


def test_pcapng_bad_section_header():
    data = bytearray(SAMPLE_NG)
    data[8:12] = b"abcd"  # byte-order magic
    assert read_all(io.BytesIO(bytes(data)))[1].offset == 0
    short = cf.block(cf.SECTION_HEADER, struct.pack("<I", 0x1A2B3C4D) + bytes(8))  # 24 bytes, not 28
    assert "at least 28" in str(read_all(io.BytesIO(short))[1])


def test_pcapng_bad_interface_options():
    bad_tsresol = cf.block(cf.INTERFACE_DESCRIPTION, struct.pack("<HHI", 1, 0, 0) + cf.options([(9, b"\x06\x06")]))
    bad_overrun = cf.block(cf.INTERFACE_DESCRIPTION, struct.pack("<HHIHH", 1, 0, 0, 2, 200) + bytes(8))
    for idb in (bad_tsresol, bad_overrun):
        packets, error = read_all(io.BytesIO(cf.section_header() + idb))
        assert error.offset == len(cf.section_header()), error


def test_pcap_caplen_above_limit():
    data = bytearray(SAMPLE)
    second = 24 + 16 + len(v4_frame(b""))
    struct.pack_into("<I", data, second + 8, pcap.MAX_PCAP_CAPLEN + 1)
    tracemalloc.start()
    try:
        packets, error = read_all(io.BytesIO(bytes(data)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(packets) == 1 and error.offset == second
    assert peak < 3 * pcap.CHUNK_SIZE


def test_pcap_caplen_past_the_end_reads_only_what_is_there():
    data = bytearray(SAMPLE)
    struct.pack_into("<I", data, 24 + 8, pcap.MAX_PCAP_CAPLEN)  # allowed, but the file is far shorter
    tracemalloc.start()
    try:
        packets, error = read_all(io.BytesIO(bytes(data)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert packets == [] and error.offset == 24 and "truncated" in str(error)
    assert peak < 3 * pcap.CHUNK_SIZE


PCAP_FRAMES = [v4_frame(b"a" * i) for i in range(4)]
PCAP_SMALL = cf.pcap([(T0, f) for f in PCAP_FRAMES], nanos=True)
PCAP_ENDS = [24 + sum(16 + len(f) for f in PCAP_FRAMES[:i]) for i in range(len(PCAP_FRAMES) + 1)]
NG_BLOCKS = [cf.section_header(), cf.interface_description(1, 9),
             cf.interface_description(LINKTYPE_RAW, 0x80 | 10, tsoffset=5),
             cf.enhanced_packet(1, 12345, frame_for(LINKTYPE_RAW)), cf.enhanced_packet(0, 1, v4_frame(b"abc")),
             cf.section_header(big_endian=True), cf.interface_description(LINKTYPE_LINUX_SLL, big_endian=True),
             cf.block(cf.INTERFACE_STATISTICS, bytes(12), big_endian=True),
             cf.obsolete_packet(0, 2, frame_for(LINKTYPE_LINUX_SLL), big_endian=True),
             cf.section_header(), cf.interface_description(1), cf.simple_packet(v4_frame(b"simple"))]
NG_SMALL = b"".join(NG_BLOCKS)
NG_ENDS = [sum(map(len, NG_BLOCKS[:i])) for i in range(1, len(NG_BLOCKS) + 1)]


@pytest.mark.parametrize("data, ends", [(PCAP_SMALL, PCAP_ENDS), (NG_SMALL, NG_ENDS)], ids=["pcap", "pcapng"])
def test_every_cut_point(data, ends, monkeypatch):
    """A file cut anywhere yields the packets wholly before the cut, then fails at the record cut through."""
    full = read_bytes(data)
    assert len(full) == 4 and ends[-1] == len(data)
    for chunk in (pcap.CHUNK_SIZE, 5):
        monkeypatch.setattr(pcap, "CHUNK_SIZE", chunk)
        for cut in range(len(data)):
            packets, error = read_all(io.BytesIO(data[:cut]))
            assert packets == [p for p in full if any(p.offset < end <= cut for end in ends)], cut
            if cut in ends:
                assert error is None, (cut, error)
            else:
                start = max([0] + [end for end in ends if end <= cut])
                assert error is not None and error.offset == start, (cut, error)
                assert "truncated" in str(error) or cut < 4, (cut, error)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunk=st.integers(1, 300), sizes=st.lists(st.integers(0, 200), max_size=20), ng=st.booleans())
def test_chunk_size_does_not_matter(monkeypatch, chunk, sizes, ng):
    if ng:
        data = cf.pcapng([(0, T0 + n, v4_frame(b"c" * n)) for n in sizes], interfaces=((1, 9),))
    else:
        data = cf.pcap([(T0 + n, v4_frame(b"c" * n)) for n in sizes], nanos=True)
    expected = read_bytes(data)
    monkeypatch.setattr(pcap, "CHUNK_SIZE", chunk)
    assert read_bytes(data) == expected
    assert [len(p.data) for p in expected] == [len(v4_frame(b"c" * n)) for n in sizes]


# -- random mutation ----------------------------------------------------------------------------------


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(6)
        at = rng.randrange(len(data) + 1)
        if kind == 0 and data:  # random bytes
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind == 1 and len(data) >= 4:  # an interesting 32-bit value, in either byte order
            at = rng.randrange(0, len(data) - 3) & ~3 if rng.random() < 0.7 else rng.randrange(len(data) - 3)
            value = rng.choice([0, 1, 3, 4, 8, 11, 12, 16, 28, 32, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFC,
                                64 << 20, 262144 * 4, 262144 * 4 + 1, rng.randrange(1 << 32)])
            data[at:at + 4] = value.to_bytes(4, rng.choice(["little", "big"]))
        elif kind == 2:  # cut
            del data[at:]
        elif kind == 3:  # remove a range
            del data[at:at + rng.randint(1, 40)]
        elif kind == 4:  # duplicate a range
            data[at:at] = data[at:at + rng.randint(1, 80)]
        elif kind == 5 and data:  # flip a bit
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


FUZZ_SEEDS = [
    cf.pcap([(T0 + i, f) for i, f in enumerate([v4_frame(b"k" * 30), cf.ethernet(cf.ipv6(A6, B6, cf.tcp(1, 2, 3))),
                                                v4_frame(b"", more_fragments=True)])]),
    cf.pcap([(T0, cf.sll(cf.ipv4(A4, B4, cf.tcp(1, 2, 3, b"abc")))), (T0, cf.sll(b"\x60"))],
            link_type=LINKTYPE_LINUX_SLL, big_endian=True),
    NG_SMALL,
    cf.pcapng([(i % 3, T0 + i, frame_for(INTERFACES[i % 3][0], b"m" * i)) for i in range(5)],
              interfaces=INTERFACES[:3], big_endian=True),
]


def exercise(data):
    """Reads a capture to its end; only packets, segments, reasons and CaptureFormatError may come out."""
    count = 0
    try:
        for packet in read_packets(io.BytesIO(data)):
            assert type(packet) is Packet and type(packet.data) is bytes
            assert packet.offset + len(packet.data) <= len(data) or data[:2] == b"\x1f\x8b"
            result = tcp_segment(packet.link_type, packet.data)
            assert type(result) in (Segment, str)
            count += 1
    except CaptureFormatError as exc:
        assert 0 <= exc.offset <= max(len(data), 1 << 30)
    return count


@pytest.mark.parametrize("seed", range(len(FUZZ_SEEDS)))
def test_random_mutations(seed, monkeypatch):
    rng = random.Random(seed)
    base = FUZZ_SEEDS[seed]
    assert exercise(base) > 0
    for i in range(1500):
        if i == 750:
            monkeypatch.setattr(pcap, "CHUNK_SIZE", 7)
        exercise(mutate(rng, base))


def test_random_mutations_of_gzip():
    rng = random.Random(99)
    compressed = gzip.compress(FUZZ_SEEDS[0])
    for _ in range(300):
        exercise(mutate(rng, compressed))


# -- link layers --------------------------------------------------------------------------------------


V4 = (A4, B4, cf.ipv4)
V6 = (A6, B6, cf.ipv6)
WRAPPINGS = [
    (LINKTYPE_ETHERNET, cf.ethernet, (V4, V6)),
    (LINKTYPE_ETHERNET, lambda ip: cf.ethernet(ip, vlans=((0x8100, 100),)), (V4, V6)),
    (LINKTYPE_ETHERNET, lambda ip: cf.ethernet(ip, vlans=((0x88A8, 7), (0x8100, 100))), (V4, V6)),
    (LINKTYPE_ETHERNET, lambda ip: cf.ethernet(ip, vlans=((0x9100, 7), (0x9100, 8), (0x8100, 9))), (V4, V6)),
    (LINKTYPE_LINUX_SLL, cf.sll, (V4, V6)),
    (LINKTYPE_LINUX_SLL2, cf.sll2, (V4, V6)),
    (LINKTYPE_NULL, cf.null_loopback, (V4, V6)),
    (LINKTYPE_NULL, lambda ip: cf.null_loopback(ip, byteorder="big"), (V4, V6)),
    (LINKTYPE_NULL, lambda ip: cf.null_loopback(ip, family=2 if ip[0] >> 4 == 4 else 24), (V4, V6)),
    (LINKTYPE_NULL, lambda ip: cf.null_loopback(ip, family=2 if ip[0] >> 4 == 4 else 28), (V4, V6)),
    (LINKTYPE_LOOP, cf.loop, (V4, V6)),
    (LINKTYPE_RAW, cf.raw, (V4, V6)),
    (12, cf.raw, (V4, V6)),
    (14, cf.raw, (V4, V6)),
    (LINKTYPE_IPV4, cf.raw, (V4,)),
    (LINKTYPE_IPV6, cf.raw, (V6,)),
]
WRAPPING_IDS = ["ethernet", "vlan", "qinq", "vlan3", "sll", "sll2", "null", "null-big", "null-24", "null-28", "loop",
                "raw", "dlt12", "dlt14", "ipv4", "ipv6"]


@pytest.mark.parametrize("link_type, wrap, versions", WRAPPINGS, ids=WRAPPING_IDS)
def test_every_link_type(link_type, wrap, versions):
    for src, dst, ip in versions:
        frame = wrap(ip(src, dst, cf.tcp(40001, 9092, 0xFFFFFFFF, b"payload", ack=77, flags=ACK | PSH | FIN)))
        segment = tcp_segment(link_type, frame)
        assert segment == Segment(ipaddress.ip_address(src).packed, 40001, ipaddress.ip_address(dst).packed,
                                  9092, 0xFFFFFFFF, 77, ACK | PSH | FIN, b"payload", 0)
        assert (address_text(segment.src), address_text(segment.dst)) == (src, dst)
        # Every cut inside the headers is a truncated header; inside the payload, bytes missing.
        headers = len(frame) - len(b"payload")
        for cut in range(len(frame)):
            result = tcp_segment(link_type, frame[:cut])
            if cut < headers:
                assert result == "truncated header", (cut, result)
            else:
                assert result.payload == b"payload"[:cut - headers] and result.missing == len(frame) - cut


def test_flags():
    for flags in (SYN, SYN | ACK, RST, FIN | ACK, 0x1FF):
        assert tcp_segment(LINKTYPE_RAW, cf.ipv4(A4, B4, cf.tcp(1, 2, 3, flags=flags))).flags == flags


def test_tcp_options_are_skipped():
    options = b"\x02\x04\x05\xb4\x04\x02\x08\x0a" + bytes(8) + b"\x01\x03\x03\x07"  # MSS, SACK ok, timestamps, ws
    segment = tcp_segment(LINKTYPE_RAW, cf.ipv4(A4, B4, cf.tcp(1, 2, 3, b"data", options=options)))
    assert segment.payload == b"data"
    maximum = bytes(40)
    assert tcp_segment(LINKTYPE_RAW, cf.ipv6(A6, B6, cf.tcp(1, 2, 3, b"x", options=maximum))).payload == b"x"


def test_ipv4_options_are_skipped():
    packet = cf.ipv4(A4, B4, cf.tcp(1, 2, 3, b"data"), options=b"\x94\x04\x00\x00" + b"\x01" * 4)  # router alert
    assert tcp_segment(LINKTYPE_RAW, packet).payload == b"data"


def test_ethernet_padding_and_trailer_are_not_payload():
    frame = cf.ethernet(cf.ipv4(A4, B4, cf.tcp(1, 2, 3, b"ab")))
    assert len(frame) < 60
    padded = frame + bytes(60 - len(frame)) + b"\xde\xad\xbe\xef"  # padding to the minimum, then a frame check sequence
    segment = tcp_segment(LINKTYPE_ETHERNET, padded)
    assert (segment.payload, segment.missing) == (b"ab", 0)
    ack_only = cf.ethernet(cf.ipv4(A4, B4, cf.tcp(1, 2, 3, flags=ACK))) + bytes(6)
    assert tcp_segment(LINKTYPE_ETHERNET, ack_only).payload == b""
    v6 = cf.ethernet(cf.ipv6(A6, B6, cf.tcp(1, 2, 3, b"ab"))) + b"trailer"
    assert tcp_segment(LINKTYPE_ETHERNET, v6).payload == b"ab"


def test_snaplen_cut_gives_missing():
    frame = v4_frame(b"m" * 1000)
    (packet,) = read_bytes(cf.pcap([(T0, frame)], snaplen=200))
    segment = tcp_segment(packet.link_type, packet.data)
    assert segment.payload == b"m" * (200 - 54) and segment.missing == 1000 - (200 - 54)
    v6 = cf.sll2(cf.ipv6(A6, B6, cf.tcp(1, 2, 3, b"n" * 500), extension_headers=(0,)))
    segment = tcp_segment(LINKTYPE_LINUX_SLL2, v6[:120])
    assert segment.payload == v6[20 + 48 + 20:120] and segment.missing == 500 - len(segment.payload)


def test_segmentation_offload_total_length_zero():
    packet = bytearray(cf.ipv4(A4, B4, cf.tcp(1, 2, 3, b"q" * 3000)))
    packet[2:4] = b"\x00\x00"  # captured on the sender before the NIC filled it in
    segment = tcp_segment(LINKTYPE_RAW, bytes(packet))
    assert segment.payload == b"q" * 3000 and segment.missing == 0


@pytest.mark.parametrize("headers", [(0,), (43,), (60,), (0, 60, 43, 60), (51,), (0, 51, 60),
                                     ((60, b"\x01\x0c" + bytes(12)),), ((0, b"\x01\x14" + bytes(20)), 43)])
def test_ipv6_extension_headers(headers):
    packet = cf.ipv6(A6, B6, cf.tcp(5, 6, 7, b"behind extensions"), extension_headers=headers)
    segment = tcp_segment(LINKTYPE_RAW, packet)
    assert segment.payload == b"behind extensions" and (segment.sport, segment.dport) == (5, 6)


ETH = LINKTYPE_ETHERNET


@pytest.mark.parametrize("link_type, frame, reason", [
    (ETH, cf.ethernet(b"\x00\x01\x08\x00" + bytes(24), ethertype=0x0806), "not IP (ethertype 0x0806)"),
    (ETH, cf.ethernet(cf.ipv4(A4, B4, bytes(8)), vlans=((0x8100, 5),), ethertype=0x8847), "not IP (ethertype 0x8847)"),
    (ETH, cf.ethernet(cf.ipv4(A4, B4, bytes(8), proto=17)), "not TCP (protocol 17)"),
    (ETH, cf.ethernet(cf.ipv6(A6, B6, bytes(8), proto=58)), "not TCP (protocol 58)"),
    (ETH, cf.ethernet(cf.ipv6(A6, B6, bytes(8), proto=17, extension_headers=(0, 60))), "not TCP (protocol 17)"),
    (ETH, cf.ethernet(cf.ipv4(A4, B4, cf.tcp(1, 2, 3, b"x"), more_fragments=True)), "IPv4 fragment"),
    (ETH, cf.ethernet(cf.ipv4(A4, B4, b"tail of it", fragment_offset=1480)), "IPv4 fragment"),
    (ETH, cf.ethernet(cf.ipv6(A6, B6, cf.tcp(1, 2, 3), extension_headers=(44,))), "IPv6 fragment"),
    (ETH, cf.ethernet(cf.ipv6(A6, B6, cf.tcp(1, 2, 3), extension_headers=(0, 44))), "IPv6 fragment"),
    (LINKTYPE_NULL, cf.null_loopback(cf.ipv4(A4, B4, cf.tcp(1, 2, 3)), family=17), "not IP (address family 17)"),
    (LINKTYPE_LOOP, cf.loop(cf.ipv4(A4, B4, cf.tcp(1, 2, 3)), family=2 << 24), "not IP (address family 33554432)"),
    (LINKTYPE_RAW, cf.raw(b"\x50" + bytes(40)), "not IP (version 5)"),
    (LINKTYPE_LINUX_SLL, cf.sll(bytes(40), protocol=0x0806), "not IP (ethertype 0x0806)"),
    (ETH, cf.ethernet(b"\x46\x00\x00\x3c" + bytes(5) + b"\x06" + bytes(10)), "truncated header"),  # in options
    (ETH, cf.ethernet(b""), "truncated header"),
    (ETH, cf.ethernet(b"\x44" + bytes(30)), "bad IPv4 header"),  # header length 16
    (ETH, cf.ethernet(b"\x65" + bytes(30), ethertype=0x0800), "bad IPv4 header"),  # version 6
    (ETH, cf.ethernet(cf.ipv4(A4, B4, cf.tcp(1, 2, 3), total_length=19)), "bad IPv4 header"),
    (ETH, cf.ethernet(cf.ipv4(A4, B4, cf.tcp(1, 2, 3), total_length=30)), "bad TCP header"),
    (ETH, cf.ethernet(cf.ipv4(A4, B4, bytes(12) + b"\x40" + bytes(7))), "bad TCP header"),  # data offset 16
    (ETH, cf.ethernet(cf.ipv4(A4, B4, bytes(12) + b"\xf0" + bytes(7))), "bad TCP header"),  # 60, past the packet
    (ETH, cf.ethernet(cf.ipv4(A4, B4, cf.tcp(1, 2, 3)), ethertype=0x86DD), "bad IPv6 header"),  # version 4
    (ETH, cf.ethernet(cf.ipv6(A6, B6, bytes(8), extension_headers=((0, bytes(14)),), payload_length=10)),
     "bad IPv6 header"),  # an extension header longer than the payload
], ids=lambda v: v if isinstance(v, str) else "")
def test_reasons(link_type, frame, reason):
    assert tcp_segment(link_type, frame) == reason


def test_unknown_link_type():
    assert tcp_segment(147, v4_frame()) == "link type 147"
    assert tcp_segment(LINKTYPE_IPV4, b"") == "truncated header"


def test_address_text():
    assert address_text(bytes([10, 0, 0, 1])) == "10.0.0.1"
    assert address_text(bytes(15) + b"\x01") == "::1"
    assert address_text(bytes.fromhex("20010db8000000000000000000000001")) == "2001:db8::1"
    with pytest.raises(ValueError):
        address_text(b"\x01\x02")


LINK_TYPES = [LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_LOOP, LINKTYPE_LINUX_SLL, LINKTYPE_IPV4,
              LINKTYPE_IPV6, LINKTYPE_LINUX_SLL2, 12, 14, 147]


@settings(max_examples=2000, deadline=None)
@given(link_type=st.sampled_from(LINK_TYPES), data=st.binary(max_size=120))
def test_tcp_segment_never_raises_on_bytes(link_type, data):
    result = tcp_segment(link_type, data)
    if isinstance(result, Segment):
        assert len(result.src) in (4, 16) and len(result.src) == len(result.dst)
        assert result.missing >= 0 and 0 <= result.flags <= 0x1FF
        assert result.payload in data
    else:
        assert isinstance(result, str) and result


@settings(max_examples=500, deadline=None)
@given(payload=st.binary(max_size=30), options=st.sampled_from([b"", b"\x01" * 4, bytes(40)]),
       total_length=st.one_of(st.none(), st.integers(0, 120)), snap=st.integers(0, 130),
       flips=st.lists(st.tuples(st.integers(14, 80), st.integers(0, 255)), max_size=3),
       trailer=st.binary(max_size=6))
def test_ethernet_ipv4_shortcut_answers_as_the_general_way(payload, options, total_length, snap, flips, trailer):
    """Untagged Ethernet IPv4 frames take a shortcut; raw IP takes the general way: both must agree."""
    frame = bytearray(cf.ethernet(cf.ipv4(A4, B4, cf.tcp(1, 2, 3, payload, options=options),
                                          total_length=total_length)) + trailer)
    for at, value in flips:
        if at < len(frame):
            frame[at] = value
    frame = bytes(frame[:snap])
    if frame[12:14] == b"\x08\x00" and frame[14:15] and frame[14] >> 4 == 4:
        assert tcp_segment(LINKTYPE_ETHERNET, frame) == tcp_segment(LINKTYPE_RAW, frame[14:])


@settings(max_examples=300, deadline=None)
@given(wrapping=st.sampled_from(WRAPPINGS), payload=st.binary(max_size=64), cut=st.integers(0, 200),
       flip=st.tuples(st.integers(0, 199), st.integers(0, 255)))
def test_tcp_segment_never_raises_on_damaged_frames(wrapping, payload, cut, flip):
    link_type, wrap, versions = wrapping
    src, dst, ip = versions[-1]
    frame = bytearray(wrap(ip(src, dst, cf.tcp(1, 2, 3, payload)))[:cut])
    if flip[0] < len(frame):
        frame[flip[0]] = flip[1]
    result = tcp_segment(link_type, bytes(frame))
    assert type(result) in (Segment, str)


# -- real captures and tshark --------------------------------------------------------------------------


@pytest.mark.parametrize("path", CAPTURES, ids=[p.stem for p in CAPTURES])
def test_real_captures(path):
    packets = list(read_packets(path))
    assert len(packets) > 50
    payload = 0
    for packet in packets:
        segment = tcp_segment(packet.link_type, packet.data)
        assert isinstance(segment, Segment), (packet.offset, segment)
        assert segment.missing == 0
        payload += len(segment.payload)
    assert payload > 1000
    assert packets == sorted(packets, key=lambda p: p.offset)
    stamps = [p.timestamp_ns for p in packets]
    assert stamps == sorted(stamps) and stamps[0] > 1_600_000_000 * 10 ** 9


def tshark(path, *fields):
    result = subprocess.run(["tshark", "-r", str(path), "-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
                             "-T", "fields",
                             "-E", "separator=|"] + [a for f in fields for a in ("-e", f)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    complaints = [line for line in result.stderr.splitlines() if line.strip() and "Running as user" not in line]
    assert not complaints, complaints
    return [line.split("|") for line in result.stdout.splitlines()]


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
def test_tshark_reads_the_files_written(tmp_path):
    frames = [(LINKTYPE_ETHERNET, v4_frame(b"e" * 10)),
              (LINKTYPE_ETHERNET, cf.ethernet(cf.ipv6(A6, B6, cf.tcp(1, 9092, 3, b"6" * 20), extension_headers=(0,)),
                                              vlans=((0x8100, 10),))),
              (LINKTYPE_RAW, cf.ipv4(A4, B4, cf.tcp(2, 9092, 3, b"r" * 30))),
              (LINKTYPE_LINUX_SLL, cf.sll(cf.ipv4(A4, B4, cf.tcp(3, 9092, 3, b"s" * 40)))),
              (LINKTYPE_LINUX_SLL2, cf.sll2(cf.ipv6(A6, B6, cf.tcp(4, 9092, 3, b"t" * 50)))),
              (LINKTYPE_NULL, cf.null_loopback(cf.ipv4(A4, B4, cf.tcp(5, 9092, 3, b"n" * 60)))),
              (LINKTYPE_LOOP, cf.loop(cf.ipv6(A6, B6, cf.tcp(6, 9092, 3, b"l" * 70))))]
    files = {}
    for i, (link_type, frame) in enumerate(frames):  # one file per link type, of alternating formats
        files[f"{i}.pcap"] = cf.pcap([(T0, frame), (T0 + 10**9, frame, len(frame) + 100)], link_type=link_type,
                                     nanos=i % 2 == 0, big_endian=i % 3 == 0)
    interfaces = tuple((link_type, resolution, *extra) for (link_type, _), (resolution, *extra) in zip(
        frames, [(6,), (9,), (0x80 | 20, 100), (3,), (9, -5), (6,), (0x80 | 10,)]))
    items = [(i, T0 + i * 10**6, frame) for i, (_, frame) in enumerate(frames)]
    files["all.pcapng"] = cf.pcapng(items, interfaces=interfaces)
    files["all-big.pcapng"] = cf.pcapng(items, interfaces=interfaces, big_endian=True) + cf.pcapng(
        items[:1], interfaces=interfaces[:1])
    files["simple.pcapng"] = cf.pcapng([(0, T0, v4_frame(b"q" * 33))], simple=True)
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        rows = tshark(path, "frame.time_epoch", "frame.len", "frame.cap_len", "tcp.len", "ip.checksum.status",
                      "frame.interface_id", "_ws.malformed", "tcp.checksum.status")
        packets = list(read_packets(path))
        assert len(rows) == len(packets), name
        for row, packet in zip(rows, packets):
            seconds, _, fraction = row[0].partition(".")
            segment = tcp_segment(packet.link_type, packet.data)
            if "simple" not in name:
                assert int(seconds) * 10**9 + int(fraction.ljust(9, "0")) == packet.timestamp_ns, (name, row)
            assert (int(row[1]), int(row[2]), int(row[3])) == (
                packet.original_length, len(packet.data), len(segment.payload) + segment.missing), (name, row)
            assert row[4] in ("", "1"), (name, row)  # 1: the IPv4 header checksum is good
            if name.endswith(".pcapng") and "simple" not in name:
                assert int(row[5]) == packet.interface
            assert row[6] == "", (name, row)  # nothing malformed
            assert row[7] == "1", (name, row)  # the TCP checksum is good
