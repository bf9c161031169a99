"""kafkaproto.capture on hostile input: every case ends with a clear error or status, in bounded memory and time.

- Files cut short (plain and gzip) end with one "capture error" exchange naming the offset, after exactly the
  exchanges the whole packets before the cut make; impossible block and record lengths, random bytes and empty
  files do the same. Nothing raises.
- Kafka size prefixes of 2 GB and of 100 MiB + 1 allocate nothing of that size, are reported, and the frames after
  them are still found.
- A capture of very many tiny connections is read in bounded time, and max_connections bounds its memory.
- What is not Kafka (HTTP, TLS, raw SASL tokens, API keys and versions kafkaproto does not know, responses nobody
  asked for) is reported as such, never decoded as Kafka.
"""

import gzip
import io
import json
import os
import random
import signal
import struct
import subprocess
import sys
import textwrap
import tracemalloc
import zlib
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import capture_files as cf
from kafkaproto import encode_request, encode_response
from kafkaproto.capture import (CAPTURE_ERROR, DECODE_ERROR, GAP, OK, STATUSES, UNMATCHED_RESPONSE, UNSUPPORTED,
                                CaptureFormatError, Exchanges, read_capture)
from kafkaproto.capture.link import LINKTYPE_ETHERNET, tcp_segment
from kafkaproto.capture.pcap import read_packets
from kafkaproto.messages import (ApiVersionsRequest, MetadataRequest, MetadataResponse, RequestHeader,
                                 ResponseHeader, SaslHandshakeRequest, SaslHandshakeResponse)
from test_capture import T0, Tcp, metadata_round, pcap_bytes, wire_frame

CAPTURES_DIR = Path(__file__).parent / "data" / "captures"
MAX_FRAME = 100 * 1024 * 1024  # kafkaproto's default frame limit, Kafka's socket.request.max.bytes


@contextmanager
def within(seconds):
    """Fail instead of hanging: a reading still going after ``seconds`` is interrupted."""
    def expired(signum, frame):
        raise TimeoutError(f"still reading after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def read_all(source, seconds=30, **options):
    """(exchanges, stats) of a capture; any exception, or a reading that does not end, fails the test."""
    reader = read_capture(source, **options)
    with within(seconds):
        out = list(reader)
    for ex in out:
        assert ex.status in STATUSES
        ex.to_dict()  # every exchange, however odd, must still turn into plain values and text
        repr(ex)
    return out, reader.stats


def peak_memory(source, **options):
    """(exchanges, stats, peak bytes Python allocated while reading)."""
    tracemalloc.start()
    try:
        out, stats = read_all(source, **options)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, stats, peak


def dicts(exchanges):
    return [ex.to_dict() for ex in exchanges]


def phases(data):
    """The exchanges of an intact capture, split in two: those its packets complete, and those the end of the
    capture adds (requests never answered, frames cut). A damaged file's capture error comes between them."""
    exchanges = Exchanges()
    during = []
    if len(data) >= 24:
        for number, packet in enumerate(read_packets(io.BytesIO(data)), 1):
            seg = tcp_segment(packet.link_type, packet.data)
            if type(seg) is not str:
                during += exchanges.packet(seg, packet.timestamp_ns, number)
    return during, exchanges.finish()


def assert_ends_with_capture_error(out, intact_prefix, offset):
    """``out`` is what the intact prefix of the file gives, with one capture error naming ``offset`` between
    the exchanges its packets complete and those the end adds."""
    during, after = phases(intact_prefix)
    errors = [i for i, ex in enumerate(out) if ex.status == CAPTURE_ERROR]
    assert errors == [len(during)], [ex for ex in out if ex.status == CAPTURE_ERROR]
    damaged = out[errors[0]]
    assert damaged.error_offset == offset, (damaged.error, offset)
    assert f"byte {offset}" in damaged.error or (offset == 0 and "not a pcap or pcapng file" in damaged.error)
    assert damaged.api_key is None and damaged.connection is None
    assert dicts(out[:errors[0]]) == dicts(during)
    assert dicts(out[errors[0] + 1:]) == dicts(after)


def request_frame(api_cls, version, correlation_id, body, client_id="hostile"):
    header = RequestHeader(request_api_key=api_cls.api_key, request_api_version=version,
                           correlation_id=correlation_id, client_id=client_id)
    return encode_request(header, body, version)


def response_frame(version, correlation_id, body):
    return encode_response(ResponseHeader(correlation_id=correlation_id), body, version)


def statuses(out):
    return [(ex.status, ex.correlation_id) for ex in out]


# -- files cut short --------------------------------------------------------------------------------------------


def record_offsets(data):
    return [p.offset for p in read_packets(io.BytesIO(data))]


def cut_points(data, every):
    """Cuts inside the file header, and around every ``every``-th record: at its start (a clean end), one byte
    in, inside its header, just after its header, and one byte short of its end."""
    starts = record_offsets(data)
    ends = starts[1:] + [len(data)]
    cuts = {0, 1, 3, 4, 23}
    for start, end in list(zip(starts, ends, strict=True))[::every]:
        cuts |= {start, start + 1, start + 15, start + 16, start + 17, end - 1}
    return sorted(c for c in cuts if c < len(data))


@pytest.mark.parametrize("name, every", [("kafkajs", 1), ("java-4.3.1", 4)])
def test_a_file_cut_anywhere_ends_with_a_capture_error(name, every):
    data = (CAPTURES_DIR / f"{name}.pcap").read_bytes()
    starts = record_offsets(data)
    for cut in cut_points(data, every):
        out, stats = read_all(io.BytesIO(data[:cut]))
        if cut >= 24 and cut in starts:  # a cut between records is a shorter capture, not a damaged one
            assert stats.error is None and dicts(out) == dicts(read_capture(io.BytesIO(data[:cut])))
            continue
        record = max((s for s in starts if s <= cut), default=0)
        intact = data[:record] if record >= 24 else b""
        assert_ends_with_capture_error(out, intact, record)
        assert stats.error == next(ex.error for ex in out if ex.status == CAPTURE_ERROR)
        assert stats.packets == sum(1 for s in starts if s < record)


@pytest.mark.parametrize("name", ["kafkajs", "librdkafka"])
def test_a_gzip_file_cut_anywhere_ends_with_a_capture_error(name, tmp_path):
    data = (CAPTURES_DIR / f"{name}.pcap").read_bytes()
    starts = record_offsets(data)
    compressed = gzip.compress(data)
    cuts = sorted(set(range(0, len(compressed), 97)) | set(range(len(compressed) - 9, len(compressed))))
    path = tmp_path / "cut.pcap.gz"
    for cut in cuts:
        path.write_bytes(compressed[:cut])
        if cut < 2:  # not even gzip's magic: a file that is not a capture, refused by read_capture itself
            with pytest.raises(CaptureFormatError, match="not a pcap or pcapng file"):
                read_capture(path)
            continue
        out, _ = read_all(path)
        # The reader gets what the compressed bytes at hand decompress to, and names where that ends.
        decompressed = zlib.decompressobj(wbits=31).decompress(compressed[:cut])
        if len(decompressed) < 24:
            assert [ex.status for ex in out] == [CAPTURE_ERROR]
            continue
        record = max(s for s in starts + [len(data)] if s <= len(decompressed))
        assert_ends_with_capture_error(out, data[:record], len(decompressed))
        assert next(ex for ex in out if ex.status == CAPTURE_ERROR).error.startswith(f"{path}: ")


def test_an_empty_file():
    out, stats = read_all(io.BytesIO(b""))
    assert [(ex.status, ex.error_offset) for ex in out] == [(CAPTURE_ERROR, 0)]
    assert "not a pcap or pcapng file" in out[0].error
    assert (stats.packets, stats.connections, stats.error) == (0, 0, out[0].error)


def test_a_path_that_is_not_there_raises_at_once(tmp_path):
    """read_capture checks a path when it is called: the README's snippet, given a wrong path, stops there with the
    path named, not later on a row that has no topic."""
    missing = tmp_path / "missing.pcap"
    with pytest.raises(FileNotFoundError, match="missing.pcap"):
        read_capture(missing)
    with pytest.raises(FileNotFoundError, match="missing.pcap"):
        read_capture(str(missing), ports=[9092])
    with pytest.raises(IsADirectoryError):
        read_capture(tmp_path)


@pytest.mark.parametrize("content", [b"", b"ab", b"not a capture\n", gzip.compress(b"nor this", mtime=0)],
                         ids=["empty", "two bytes", "text", "gzip of text"])
def test_a_path_that_is_not_a_capture_raises_at_once(tmp_path, content):
    path = tmp_path / "notes.pcap"
    path.write_bytes(content)
    with pytest.raises(CaptureFormatError, match="notes.pcap: not a pcap or pcapng file") as info:
        read_capture(path)
    assert info.value.offset == 0 and isinstance(info.value, ValueError)
    with pytest.raises(CaptureFormatError, match="named: not a pcap"):
        read_capture(str(path), name="named")
    # A file object is read when iterated, and says what it is in a capture error exchange (as Spark's rows do).
    out, stats = read_all(io.BytesIO(content))
    assert [ex.status for ex in out] == [CAPTURE_ERROR] and "not a pcap or pcapng file" in stats.error


def test_a_damaged_capture_still_gives_what_it_holds(tmp_path):
    """Only "not a capture at all" raises: a capture cut short is read up to the cut, as before."""
    data = (CAPTURES_DIR / "kafkajs.pcap").read_bytes()
    for cut in (10, 30, 9000):
        path = tmp_path / "cut.pcap"
        path.write_bytes(data[:cut])
        out, stats = read_all(path)
        assert [ex.status for ex in out].count(CAPTURE_ERROR) == 1 and "truncated" in stats.error


def test_record_rows_of_a_damaged_file_have_every_place_column(tmp_path):
    """capture.records' row for a damaged file names no place (None) but has the columns other rows have, so
    code reading row["topic"] sees None and the row's error, not a KeyError."""
    from kafkaproto.capture import records

    cut = tmp_path / "cut.pcap"
    cut.write_bytes((CAPTURES_DIR / "kafkajs.pcap").read_bytes()[:9000])
    rows = list(records(read_capture(cut)))
    damaged = rows[-1]
    assert damaged["error"].startswith("capture error: ") and damaged["topic"] is None
    assert {"connection", "api_name", "side", "topic", "topic_id", "partition"} <= set(damaged)


# -- impossible lengths ------------------------------------------------------------------------------------------


def small_conversation(exchanges=4):
    tcp = Tcp()
    segs = tcp.handshake()
    for correlation_id in range(1, exchanges + 1):
        segs += metadata_round(tcp, correlation_id)
    return segs + tcp.close()


def pcapng_blocks(segs):
    """A pcapng file of the segments, and the offset of each packet's block."""
    head = cf.section_header() + cf.interface_description(LINKTYPE_ETHERNET, 9)
    blocks = [cf.enhanced_packet(0, T0 + i * 1000, wire_frame(seg)[0]) for i, seg in enumerate(segs)]
    offsets, at = [], len(head)
    for b in blocks:
        offsets.append(at)
        at += len(b)
    return head + b"".join(blocks), offsets


@pytest.mark.parametrize("length", [0xFFFFFFFF, 0xFFFFFFFC, (64 << 20) + 4, 2_000_000_000, 13, 8, 0],
                         ids=lambda n: f"{n:#x}")
@pytest.mark.parametrize("both_ends", [False, True], ids=["start", "both-ends"])
def test_pcapng_bogus_block_length(length, both_ends):
    segs = small_conversation()
    data, offsets = pcapng_blocks(segs)
    k = len(segs) // 2
    damaged = bytearray(data)
    struct.pack_into("<I", damaged, offsets[k] + 4, length)
    if both_ends:  # the trailing copy agrees with the bogus length, where it would fall inside the file
        end = offsets[k] + length - 4
        if offsets[k] + 12 <= end + 4 <= len(damaged):
            struct.pack_into("<I", damaged, end, length)
    out, stats, peak = peak_memory(io.BytesIO(bytes(damaged)))
    assert peak < 4 << 20, f"{peak} bytes allocated for a block that declares {length}"
    intact = cf.pcapng([(0, T0 + i * 1000, wire_frame(seg)[0]) for i, seg in enumerate(segs[:k])],
                       interfaces=((LINKTYPE_ETHERNET, 9),))
    assert_ends_with_capture_error(out, intact, offsets[k])
    assert stats.packets == k


@pytest.mark.parametrize("caplen", [0xFFFFFFFF, 0x80000000, 4 << 20])
def test_pcap_record_length_beyond_the_limit(caplen, tmp_path):
    segs = small_conversation()
    data = pcap_bytes(segs)
    offsets = record_offsets(data)
    k = len(segs) // 2
    damaged = bytearray(data)
    struct.pack_into("<I", damaged, offsets[k] + 8, caplen)
    path = tmp_path / "damaged.pcap"
    path.write_bytes(damaged)
    out, stats, peak = peak_memory(path)
    assert peak < 4 << 20, f"{peak} bytes allocated for a record that declares {caplen}"
    assert_ends_with_capture_error(out, data[:offsets[k]], offsets[k])
    assert f"declares {caplen} captured bytes" in stats.error


def test_pcap_record_longer_than_the_file(tmp_path):
    """A length the format allows (1 MiB) that the file does not hold: read up to the end, no further."""
    segs = small_conversation()
    data = pcap_bytes(segs)
    offsets = record_offsets(data)
    k = len(segs) - 3
    damaged = bytearray(data)
    struct.pack_into("<I", damaged, offsets[k] + 8, 1 << 20)
    path = tmp_path / "damaged.pcap"
    path.write_bytes(damaged)
    out, _, peak = peak_memory(path)
    assert peak < 4 << 20
    assert_ends_with_capture_error(out, data[:offsets[k]], offsets[k])


PCAP_HEAD = cf.pcap([])
PCAPNG_HEAD = cf.section_header() + cf.interface_description(LINKTYPE_ETHERNET, 6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(head=st.sampled_from([b"", PCAP_HEAD, PCAPNG_HEAD, gzip.compress(PCAP_HEAD)[:-8]]),
       body=st.binary(max_size=3000))
def test_random_bytes(head, body):
    out, stats = read_all(io.BytesIO(head + body), seconds=10)
    errors = [ex for ex in out if ex.status == CAPTURE_ERROR]
    assert len(errors) <= 1
    assert (stats.error is None) == (not errors)
    if errors:
        assert errors[0].error == stats.error and isinstance(errors[0].error_offset, int)


def mutated(rng, data, starts):
    """A real capture with bytes of its packets changed (link, IP and TCP headers, Kafka sizes, payloads) and
    now and then a timestamp (time jumping back, or far ahead past idle_ns). Record lengths are left alone, so
    that every packet is still read."""
    out = bytearray(data)
    ends = starts[1:] + [len(data)]
    for _ in range(rng.choice([1, 4, 16, 64])):
        record = rng.randrange(len(starts))
        if rng.random() < 0.1:
            out[starts[record] + rng.randrange(8)] = rng.randrange(256)  # seconds or microseconds
            continue
        at = starts[record] + 16 + rng.randrange(min(120, ends[record] - starts[record] - 16))
        if rng.random() < 0.3:
            value = rng.choice([b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x00\x00\x00", b"\x06\x40\x00\x01"])
            n = min(4, ends[record] - at)  # within the packet, and the file keeps its length
            out[at:at + n] = value[:n]
        else:
            out[at] = rng.randrange(256)
    return bytes(out)


@pytest.mark.parametrize("name", ["kafka-python", "java-3.9.2"])
def test_mutated_real_captures(name):
    data = (CAPTURES_DIR / f"{name}.pcap").read_bytes()
    starts = record_offsets(data)
    rng = random.Random(name)
    seen = Counter()
    for _ in range(150):
        out, stats = read_all(io.BytesIO(mutated(rng, data, starts)), seconds=10)
        assert stats.error is None and stats.packets == len(starts)
        seen.update(ex.status for ex in out)
    assert seen[OK] > 0 and len(seen) > 2, seen  # the damage showed, and most of the traffic still read


# -- Kafka size prefixes that cannot be right ----------------------------------------------------------------


def traffic_with_bogus_size(side, size, junk=b"\x01" * 100):
    """Metadata 1 and 2, then ``size`` as a size prefix and ``junk`` on one side, then Metadata 3 and 4."""
    tcp = Tcp()
    segs = tcp.handshake() + metadata_round(tcp, 1) + metadata_round(tcp, 2)
    from_client = side == "client"
    segs += tcp.send(True, request_frame(MetadataRequest, 12, 3, MetadataRequest(topics=[])))
    segs += tcp.send(from_client, struct.pack(">i", size) + junk)
    segs += tcp.send(False, response_frame(12, 3, MetadataResponse()))
    return segs + metadata_round(tcp, 4) + tcp.close()


@pytest.mark.parametrize("size", [0x7FFFFFFF, MAX_FRAME + 1, -1, -0x80000000], ids=lambda n: f"{n:#x}")
@pytest.mark.parametrize("side", ["client", "broker"])
def test_impossible_size_prefix(tmp_path, side, size):
    path = tmp_path / "bogus.pcap"
    path.write_bytes(pcap_bytes(traffic_with_bogus_size(side, size)))
    out, stats, peak = peak_memory(path)
    assert peak < 2 << 20, f"{peak} bytes allocated for a frame of {size}"  # 1 MiB of it is the file reader's chunk
    gaps = [ex for ex in out if ex.status == GAP]
    assert len(gaps) == 1 and f"a frame size of {size} " in gaps[0].error and side in gaps[0].error, gaps
    assert gaps[0].correlation_id is None and gaps[0].api_key is None
    # The stream finds its footing again right after: every real exchange is read, and only the 104 bytes of
    # nonsense are lost.
    assert sorted(ex.correlation_id for ex in out if ex.status == OK) == [1, 2, 3, 4]
    assert "104 bytes skipped" in gaps[0].error and stats.gap_bytes == 0


@pytest.mark.parametrize("junk", ["random", "zeros"])
def test_impossible_size_prefix_then_megabytes_of_junk(tmp_path, junk):
    """Past a bad size, the search for the next frame holds at most about 1 MiB, however much junk follows."""
    size = 3 << 20 if junk == "random" else 256 << 10  # zeros are slow to search (each byte is a candidate)
    filler = random.Random(5).randbytes(size) if junk == "random" else bytes(size)
    path = tmp_path / "junk.pcap"
    path.write_bytes(pcap_bytes(traffic_with_bogus_size("client", 0x7FFFFFFF, filler)))
    out, _, peak = peak_memory(path, seconds=60)
    assert peak < 6 << 20, peak
    assert sorted(ex.correlation_id for ex in out if ex.status == OK) == [1, 2, 3, 4]


def test_a_size_that_fits_but_never_arrives(tmp_path):
    """A size prefix of exactly the limit, then the connection ends: memory follows the bytes that came, not the
    size, and the frame is reported cut."""
    tcp = Tcp()
    segs = tcp.handshake() + metadata_round(tcp, 1)
    segs += tcp.send(True, struct.pack(">i", MAX_FRAME) + request_frame(MetadataRequest, 12, 2,
                                                                           MetadataRequest(topics=[])))
    segs += tcp.close()
    path = tmp_path / "big.pcap"
    path.write_bytes(pcap_bytes(segs))
    out, _, peak = peak_memory(path)
    assert peak < 2 << 20
    assert statuses(out)[0] == (OK, 1)
    (cut,) = [ex for ex in out if ex.status == GAP]
    assert cut.request_size == MAX_FRAME and "lost" in cut.error


# -- very many connections -------------------------------------------------------------------------------------

# 1,000,000 connections take one to two minutes per reading on a shared 2-core machine (50 to 140 µs per new
# connection, measured), and showing the bound takes two readings; 100,000 show the same bound (the bounded
# reading's memory does not grow with the count: 38 MiB at both sizes) in a tenth of the time.
# KAFKAPROTO_MANY_CONNECTIONS=1000000 runs the full size.
MANY = int(os.environ.get("KAFKAPROTO_MANY_CONNECTIONS", "100000"))


def write_many_connections(path, count):
    """A capture of ``count`` connections of one packet each, written as it is generated (never whole in memory):
    even ones a SYN alone, odd ones a small ApiVersions request from a client the capture joined late."""
    request = request_frame(ApiVersionsRequest, 3, 1, ApiVersionsRequest(client_software_name="a",
                                                                         client_software_version="1"))
    syn = bytearray(wire_frame(Tcp().handshake()[0])[0])
    data = bytearray(wire_frame(Tcp().send(True, request)[0])[0])
    record = struct.Struct("<IIII")
    with open(path, "wb") as f:
        f.write(cf.pcap([]))
        for i in range(count):
            frame = data if i % 2 else syn
            # A client address and port of its own (10.a.b.c : port): every packet is a new connection. The
            # reader checks no checksums, so they are left as they are.
            struct.pack_into(">BBB", frame, 27, (i >> 16) & 0xFF, (i >> 8) & 0xFF, i & 0xFF)
            struct.pack_into(">H", frame, 34, 1024 + (i >> 24))
            stamp = T0 // 1000 + i  # a microsecond apart: no connection goes idle
            f.write(record.pack(stamp // 1_000_000, stamp % 1_000_000, len(frame), len(frame)))
            f.write(frame)


# Reads a capture in a fresh process and reports its peak resident memory, so that one reading's memory is not
# mixed with another's (or with pytest's). The peak is VmHWM, which belongs to the new address space: ru_maxrss
# would not do, as Linux carries it over exec, so every child would report at least pytest's own peak.
READER = textwrap.dedent("""
    import json, re, resource, sys, time
    from collections import Counter
    from kafkaproto.capture import read_capture
    def peak_mib():
        try:
            with open("/proc/self/status") as status:
                return int(re.search(r"VmHWM:\\s*(\\d+) kB", status.read())[1]) / 1024
        except OSError:  # no /proc: the best there is
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024 if sys.platform != "darwin" else 2**20)
    path, options = sys.argv[1], json.loads(sys.argv[2])
    start = time.perf_counter()
    reader = read_capture(path, **options)
    seen = Counter(ex.status for ex in reader)
    print(json.dumps({"seconds": time.perf_counter() - start, "statuses": seen,
                      "connections": reader.stats.connections, "packets": reader.stats.packets,
                      "rss_mib": peak_mib()}))
""")


def read_in_subprocess(path, **options):
    done = subprocess.run([sys.executable, "-c", READER, str(path), json.dumps(options)], capture_output=True,
                          text=True, timeout=600, check=True, cwd=path.parent)
    return json.loads(done.stdout)


def test_very_many_tiny_connections(tmp_path):
    path = tmp_path / "many.pcap"
    write_many_connections(path, MANY)
    empty = tmp_path / "none.pcap"
    empty.write_bytes(cf.pcap([]))
    baseline = read_in_subprocess(empty)  # the interpreter and kafkaproto alone
    bounded = read_in_subprocess(path, max_connections=1000)
    # Every connection was counted, and every request was reported when its connection was pushed out.
    assert bounded["packets"] == bounded["connections"] == MANY
    assert bounded["statuses"] == {"unmatched request": MANY // 2}
    assert bounded["rss_mib"] - baseline["rss_mib"] < 64, bounded
    default = read_in_subprocess(path)  # max_connections=100_000: at this size, every connection stays open
    assert default["statuses"] == bounded["statuses"] and default["connections"] == MANY
    # Holding them all costs far more: the bound is what kept the first reading small.
    assert default["rss_mib"] - baseline["rss_mib"] > 3 * max(8, bounded["rss_mib"] - baseline["rss_mib"]), \
        (bounded, default)
    print(f"\n{MANY} connections: {bounded['seconds']:.1f} s and {bounded['rss_mib']:.0f} MiB with "
          f"max_connections=1000, {default['seconds']:.1f} s and {default['rss_mib']:.0f} MiB with the default "
          f"(baseline {baseline['rss_mib']:.0f} MiB)")


# -- what is not Kafka ------------------------------------------------------------------------------------------

HTTP_REQUEST = b"GET /metrics HTTP/1.1\r\nHost: broker:9092\r\nAccept: */*\r\n\r\n"
HTTP_RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"
CLIENT_HELLO = bytes.fromhex("16030100c8010000c40303") + bytes(range(32)) + bytes.fromhex("00") + \
    bytes.fromhex("0004130113020100") + bytes.fromhex("0097") + bytes(0x97)
SERVER_HELLO = bytes.fromhex("160303005a020000560303") + bytes(86)
APPLICATION_DATA = bytes.fromhex("1703030040") + bytes(64)


def conversation_of(client_bytes, broker_bytes, *, syn=True, rounds=2):
    tcp = Tcp()
    segs = tcp.handshake() if syn else []
    for _ in range(rounds):
        segs += tcp.send(True, client_bytes) + tcp.send(False, broker_bytes)
    return segs + tcp.close()


@pytest.mark.parametrize("syn", [True, False], ids=["from-syn", "joined-late"])
@pytest.mark.parametrize("ports", [None, [9092]], ids=["detected", "ports"])
def test_http_is_not_read_as_kafka(syn, ports):
    segs = conversation_of(HTTP_REQUEST, HTTP_RESPONSE, syn=syn)
    out, stats = read_all(io.BytesIO(pcap_bytes(segs)), ports=ports)
    assert all(ex.api_key is None and ex.correlation_id is None and ex.status != OK for ex in out), out
    assert stats.gap_bytes == 0
    if not syn and ports is None:  # nothing says it is Kafka, and nothing in it reads as Kafka
        # Counted up to the first FIN, which ends the connection; the peer's FIN then belongs to none.
        assert out == [] and stats.skipped == {"no Kafka request found in the connection": len(segs) - 1}
    elif syn:  # seen from its start, the first bytes cannot begin a Kafka frame: one exchange says so
        assert [ex.status for ex in out] == [UNSUPPORTED] and "not Kafka" in out[0].error, out
        assert "GET /metrics" in out[0].error
    else:  # joined late on a broker's port: no frame start is ever found in either direction
        assert [ex.status for ex in out] == [GAP, GAP] and all("unreadable" in ex.error for ex in out), out


@pytest.mark.parametrize("syn", [True, False], ids=["from-syn", "joined-late"])
@pytest.mark.parametrize("ports", [None, [9092]], ids=["detected", "ports"])
def test_tls_is_reported_encrypted(syn, ports):
    segs = conversation_of(CLIENT_HELLO, SERVER_HELLO, syn=syn, rounds=1)
    tcp_tail = segs[-2:]
    segs = segs[:-2] + conversation_of(APPLICATION_DATA, APPLICATION_DATA, syn=False)[:-2] + tcp_tail
    out, stats = read_all(io.BytesIO(pcap_bytes(segs)), ports=ports)
    assert [(ex.status, ex.api_key) for ex in out] == [(UNSUPPORTED, None)]
    assert "TLS" in out[0].error and out[0].client_port == 40000 and out[0].broker_port == 9092
    assert stats.skipped == {}


def test_tls_joined_after_the_handshake_is_skipped():
    """No SYN, no ClientHello, no ports: only encrypted records. Nothing says which side is the broker."""
    segs = conversation_of(APPLICATION_DATA, APPLICATION_DATA, syn=False, rounds=3)
    out, stats = read_all(io.BytesIO(pcap_bytes(segs)))
    assert out == []
    assert stats.skipped == {"TLS (encrypted)": len(segs) - 1}  # the last FIN comes after the connection ended
    out, _ = read_all(io.BytesIO(pcap_bytes(segs)), ports=[9092])
    assert [(ex.status, "TLS" in ex.error) for ex in out] == [(UNSUPPORTED, True)]


@pytest.mark.parametrize("mechanism, token_rounds", [("PLAIN", 1), ("SCRAM-SHA-256", 2), ("GSSAPI", 3)])
def test_raw_sasl_tokens_after_sasl_handshake_v0(mechanism, token_rounds):
    tcp = Tcp()
    segs = tcp.handshake()
    segs += tcp.send(True, request_frame(SaslHandshakeRequest, 0, 1, SaslHandshakeRequest(mechanism=mechanism)))
    segs += tcp.send(False, response_frame(0, 1, SaslHandshakeResponse(error_code=0, mechanisms=[mechanism])))
    for _ in range(token_rounds):
        # Raw tokens: a size and bytes, no Kafka header. Some look like the start of a request on purpose.
        token = b"\x00admin\x00secret" if mechanism == "PLAIN" else b"\x00\x03\x00\x01" + bytes(range(60))
        segs += tcp.send(True, struct.pack(">i", len(token)) + token)
        answer = b"" if mechanism == "PLAIN" else b"\x00\x00\x00\x02" + bytes(26)  # as a response: correlation 2
        segs += tcp.send(False, struct.pack(">i", len(answer)) + answer)
    segs += metadata_round(tcp, 2) + tcp.close()
    out, _ = read_all(io.BytesIO(pcap_bytes(segs)))
    tokens = [("client" if ex.request_size is not None else "broker") for ex in out if ex.status == UNSUPPORTED]
    assert [(ex.status, ex.api_name) for ex in out if ex.status != UNSUPPORTED] == \
        [(OK, "SaslHandshake"), (OK, "Metadata")]
    assert tokens == ["client", "broker"] * token_rounds
    assert all("raw SASL token" in ex.error and ex.api_key is None for ex in out if ex.status == UNSUPPORTED)
    (metadata,) = [ex for ex in out if ex.api_name == "Metadata"]
    assert metadata.correlation_id == 2 and metadata.response.throttle_time_ms == 2


def raw_request(api_key, version, correlation_id, client_id=b"probe", body=b"\x00\x01\x02\x03"):
    """A request frame by hand: header v1 fields (key, version, correlation id, client id), then a body."""
    payload = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id + body
    return struct.pack(">i", len(payload)) + payload


@pytest.mark.parametrize("api_key, version", [(999, 0), (-2, 1), (3, 99), (18, 99), (0, 32767)],
                         ids=["key-999", "key-negative", "metadata-v99", "apiversions-v99", "produce-v32767"])
def test_unknown_api_or_version_is_unsupported_and_still_paired(api_key, version):
    tcp = Tcp()
    segs = tcp.handshake() + metadata_round(tcp, 1)
    segs += tcp.send(True, raw_request(api_key, version, 7))
    segs += tcp.send(False, struct.pack(">ii", 10, 7) + b"opaque")
    segs += metadata_round(tcp, 8) + tcp.close()
    out, _ = read_all(io.BytesIO(pcap_bytes(segs)))
    assert statuses(out) == [(OK, 1), (UNSUPPORTED, 7), (OK, 8)]
    ex = out[1]
    assert (ex.api_key, ex.api_version, ex.client_id) == (api_key, version, "probe")
    assert ex.request_size == 4 + 10 + 5 and ex.response_size == 10 and ex.response_packet is not None
    assert ex.latency_ns > 0 and ex.request is None and ex.response is None and ex.error


def test_a_known_request_that_does_not_decode_is_a_decode_error_still_paired():
    tcp = Tcp()
    good = request_frame(MetadataRequest, 12, 7, MetadataRequest(topics=[]))
    broken = struct.pack(">i", len(good) - 4 + 3) + good[4:] + b"\xff\xff\xff"  # three bytes too many
    segs = tcp.handshake() + tcp.send(True, broken)
    segs += tcp.send(False, response_frame(12, 7, MetadataResponse())) + metadata_round(tcp, 8) + tcp.close()
    out, _ = read_all(io.BytesIO(pcap_bytes(segs)))
    assert statuses(out) == [(DECODE_ERROR, 7), (OK, 8)]
    assert out[0].api_name == "Metadata" and out[0].response_packet is not None and out[0].error


def test_a_response_nobody_asked_for_is_unmatched():
    tcp = Tcp()
    segs = tcp.handshake()
    segs += tcp.send(True, request_frame(MetadataRequest, 12, 5, MetadataRequest(topics=[])))
    segs += tcp.send(False, response_frame(12, 99, MetadataResponse()))  # no request had 99
    segs += tcp.send(False, response_frame(12, 5, MetadataResponse()))
    segs += tcp.close()
    out, _ = read_all(io.BytesIO(pcap_bytes(segs)))
    assert statuses(out) == [(UNMATCHED_RESPONSE, 99), (OK, 5)]
    stray = out[0]
    assert stray.api_key is None and stray.response_size == len(response_frame(12, 99, MetadataResponse())) - 4
    assert stray.response_packet is not None and stray.request_packet is None


def test_tiny_frames_on_both_sides():
    """Frames too short to hold a header: each one is reported, and the stream goes on after it."""
    tcp = Tcp()
    segs = tcp.handshake() + tcp.send(True, struct.pack(">i", 3) + b"abc") + metadata_round(tcp, 1)
    segs += tcp.send(True, request_frame(MetadataRequest, 12, 2, MetadataRequest(topics=[])))
    segs += tcp.send(False, struct.pack(">i", 2) + b"xy")
    segs += tcp.send(False, response_frame(12, 2, MetadataResponse())) + tcp.close()
    out, _ = read_all(io.BytesIO(pcap_bytes(segs)))
    assert statuses(out) == [(DECODE_ERROR, None), (OK, 1), (DECODE_ERROR, None), (OK, 2)]
    assert "correlation id" in out[2].error


def test_every_kind_of_trouble_fits_the_exchanges_table(tmp_path):
    """Exchanges of every status, from the cases above, make a valid table that Parquet takes."""
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from kafkaproto.capture import tables

    tcp = Tcp()
    unknown = tcp.handshake() + tcp.send(True, raw_request(999, 0, 7)) + tcp.send(False, struct.pack(">ii", 10, 7) +
                                                                                    b"opaque")
    unknown += tcp.send(False, response_frame(12, 99, MetadataResponse())) + tcp.close()
    cases = [pcap_bytes(unknown), pcap_bytes(traffic_with_bogus_size("client", 0x7FFFFFFF)),
             pcap_bytes(conversation_of(CLIENT_HELLO, SERVER_HELLO)), pcap_bytes(small_conversation())[:-10], b""]
    exchanges = [ex for data in cases for ex in read_all(io.BytesIO(data))[0]]
    assert {ex.status for ex in exchanges} == {OK, UNSUPPORTED, GAP, UNMATCHED_RESPONSE, CAPTURE_ERROR}
    table = tables.exchanges_table(exchanges, file="trouble.pcap")
    table.validate(full=True)
    pq.write_table(table, tmp_path / "trouble.parquet")
    back = pq.read_table(tmp_path / "trouble.parquet")
    assert back.equals(table) and back.num_rows == len(exchanges)
    assert back.column("api_key").to_pylist() == [ex.api_key for ex in exchanges]


# -- strings that would act on a terminal or on the report's page -------------------------------------------------

# A client id that clears the screen, homes the cursor and retitles the window; a topic holding an 8-bit CSI, a
# right-to-left override and DEL; a software name that blinks. Each as every text output must show it, in the one
# convention kafkaproto keeps (summary.escape_controls: Python's \x, \u and \U escapes).
HOSTILE_CLIENT = "cli\x1b[2J\x1b[H\x1b]0;owned\x07ent"
HOSTILE_TOPIC = "orders\x9b31m\u202edlrow\x7f"
HOSTILE_SOFTWARE = "lib\x1b[5mkafka"
SHOWN = {HOSTILE_CLIENT: r"cli\x1b[2J\x1b[H\x1b]0;owned\x07ent", HOSTILE_TOPIC: r"orders\x9b31m\u202edlrow\x7f",
         HOSTILE_SOFTWARE: r"lib\x1b[5mkafka"}


def named_traffic(tcp, topics, client_id, software, first_correlation_id=1):
    """One connection's exchanges naming ``topics`` everywhere a summary looks: ApiVersions (the software), a
    Metadata answer (names and ids), a Produce to each (answered NOT_LEADER_OR_FOLLOWER: an error code) and a Fetch
    of each with records."""
    from kafkaproto.messages import (ApiVersionsResponse, FetchRequest, FetchResponse, ProduceRequest,
                                     ProduceResponse)
    from kafkaproto.records import RecordBatchBuilder
    from kafkaproto.uuid import Uuid

    batch = RecordBatchBuilder()
    batch.append(b"key", b"value", timestamp=1_700_000_000_000)
    data = batch.build()
    rounds = [(3, ApiVersionsRequest(client_software_name=software, client_software_version="1.0"),
               ApiVersionsResponse(api_keys=[]))]
    rounds.append((12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics]),
                   MetadataResponse(topics=[MetadataResponse.MetadataResponseTopic(
                       name=t, topic_id=Uuid.random(), partitions=[MetadataResponse.MetadataResponsePartition(
                           partition_index=0, leader_id=1)]) for t in topics])))
    for topic in topics:
        rounds.append((9, ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=data)])]),
            ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name=topic, partition_responses=[
                ProduceResponse.PartitionProduceResponse(index=0, error_code=6)])])))
        rounds.append((12, FetchRequest(max_wait_ms=500, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
            FetchRequest.FetchPartition(partition=0, fetch_offset=0)])]),
            FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic=topic, partitions=[
                FetchResponse.PartitionData(partition_index=0, high_watermark=1, records=data)])])))
    segs = []
    for correlation_id, (version, request, response) in enumerate(rounds, first_correlation_id):
        header = RequestHeader(request_api_key=request.api_key, request_api_version=version,
                               correlation_id=correlation_id, client_id=client_id)
        segs += tcp.send(True, encode_request(header, request, version))
        segs += tcp.send(False, response_frame(version, correlation_id, response))
    return segs


def hostile_capture(topics=(HOSTILE_TOPIC,), client_id=HOSTILE_CLIENT, software=HOSTILE_SOFTWARE):
    """named_traffic on one connection, then a request never answered (an exchange not ok, listed by file)."""
    tcp = Tcp()
    segs = tcp.handshake() + named_traffic(tcp, topics, client_id, software)
    header = RequestHeader(request_api_key=MetadataRequest.api_key, request_api_version=12, correlation_id=99,
                           client_id=client_id)
    segs += tcp.send(True, encode_request(header, MetadataRequest(topics=[]), 12))
    return pcap_bytes(segs + tcp.close())


def assert_inert(text, what):
    """Nothing in text a terminal acts on: every character printable, or a line's end."""
    acting = sorted({char for char in text if not (char.isprintable() or char == "\n")})
    assert not acting, f"{what}: raw {acting} in {text[:400]!r}"


def capture_command(*args, cwd, timeout=120):
    return subprocess.run([sys.executable, "-m", "kafkaproto", "capture", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout)


@pytest.mark.parametrize("raw, shown", [
    ("\x1b[2J", r"\x1b[2J"), ("\x00\t\n\r\x7f", r"\x00\x09\x0a\x0d\x7f"), ("\x9b31m\x85", r"\x9b31m\x85"),
    ("\u202eabc\u2066\u200f", r"\u202eabc\u2066\u200f"), ("\u2028\u2029\u00a0", r"\u2028\u2029\xa0"),
    ("\udcff", r"\udcff"), ("tag\U000e0041", r"tag\U000e0041"),
    ("kafka-é-中-🙂 a\\x1b", "kafka-é-中-🙂 a\\x1b")],
    ids=["csi", "c0", "c1", "bidi", "separators", "surrogate", "tag", "kept"])
def test_escape_controls(raw, shown):
    from kafkaproto.capture.summary import escape_controls

    assert escape_controls(raw) == shown
    assert_inert(escape_controls(raw), raw)


def test_every_text_output_escapes_what_a_capture_says(tmp_path):
    """The summary (with --check, and --live off a terminal) shows the client id, topic and software escaped, and
    the capture file's own name where it lists what is not ok; rows keep every string exactly (JSON escapes them
    itself, CSV holds them)."""
    import csv

    path = Path("traffic\x1b[31m.pcap")  # in tmp_path, where the commands run
    (tmp_path / path).write_bytes(hostile_capture())
    checked = capture_command(path, "--check", cwd=tmp_path)
    assert checked.returncode == 1, checked.stderr
    assert_inert(checked.stdout, "summary")
    assert_inert(checked.stderr, "--check")
    assert checked.stderr == "kafkaproto capture: 2 exchange(s) with errors (--check)\n"
    summary = checked.stdout
    assert summary.count(SHOWN[HOSTILE_TOPIC]) == 2  # produced and fetched
    client_line = next(line for line in summary.splitlines() if SHOWN[HOSTILE_CLIENT] in line)
    assert client_line.split() == [SHOWN[HOSTILE_CLIENT], "5", SHOWN[HOSTILE_SOFTWARE], "1.0"]
    assert r"  traffic\x1b[31m.pcap: unmatched request: 10.0.0.2:40000 -> 10.0.0.1:9092" in summary

    live = capture_command(path, "--live", cwd=tmp_path)
    assert live.returncode == 0, live.stderr
    assert_inert(live.stdout, "--live")
    assert live.stdout.startswith(r"kafkaproto capture traffic\x1b[31m.pcap: ") and SHOWN[HOSTILE_TOPIC] in live.stdout

    rows = capture_command(path, "--format", "jsonl", cwd=tmp_path)
    assert rows.returncode == 0, rows.stderr
    exchanges = [json.loads(line) for line in rows.stdout.splitlines()]
    assert {row["client_id"] for row in exchanges} == {HOSTILE_CLIENT}
    assert {topic for row in exchanges for topic in row["topics"]} == {HOSTILE_TOPIC}
    assert exchanges[0]["request"]["client_software_name"] == HOSTILE_SOFTWARE
    assert capture_command(path, "--output", tmp_path / "rows.csv", cwd=tmp_path).returncode == 0
    with open(tmp_path / "rows.csv", newline="", encoding="utf-8") as f:
        assert {row["client_id"] for row in csv.DictReader(f)} == {HOSTILE_CLIENT}


def test_a_followed_ring_names_its_files_escaped(tmp_path):
    """A ring whose unreadable file's name holds an escape sequence: named escaped on standard error, after the
    readable file's summary; a ring of nothing readable: the error line escaped, exit status 2."""
    ring = tmp_path / "ring"
    ring.mkdir()
    (ring / "ring0.pcap").write_bytes(hostile_capture())
    (ring / "ring1\x1b[2J.pcap").write_bytes(b"\x1b]0;owned\x07 and no capture")
    for i, name in enumerate(("ring0.pcap", "ring1\x1b[2J.pcap")):
        os.utime(ring / name, ns=(i * 10**9 + 10**18, i * 10**9 + 10**18))
    run = capture_command("--follow", ring, "--idle", "0.5", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert_inert(run.stdout, "summary")
    assert_inert(run.stderr, "notes")
    assert SHOWN[HOSTILE_CLIENT] in run.stdout and "2 file(s)" in run.stdout
    assert r"not read to its end: " in run.stderr and r"ring1\x1b[2J.pcap: not a pcap or pcapng file" in run.stderr
    os.remove(ring / "ring0.pcap")
    failed = capture_command("--follow", ring, "--idle", "0.5", cwd=tmp_path)
    assert failed.returncode == 2 and failed.stdout.startswith("0 exchanges")
    assert_inert(failed.stderr, "error")
    assert failed.stderr.startswith("kafkaproto: error: ") and r"ring1\x1b[2J.pcap: not a pcap" in failed.stderr


def test_live_on_a_terminal_draws_only_its_own_escapes(tmp_path):
    """On a terminal the live view redraws with its own escape codes (home, clear); everything between them, and
    the summary after, is inert."""
    from test_capture_follow import on_a_terminal

    path = tmp_path / "live\x1b[2J\x1b]0;owned\x07.pcap"
    path.write_bytes(hostile_capture())
    code, out = on_a_terminal("capture", path, "--live")
    frames = out.split("\x1b[H\x1b[J")
    assert code == 0 and len(frames) >= 2, out[:500]
    for frame in frames:
        assert_inert(frame, "a live frame")
    title = frames[-1].splitlines()[0]
    assert title.startswith("kafkaproto capture ") and r"/live\x1b[2J\x1b]0;owned\x07.pcap: " in title
    assert SHOWN[HOSTILE_TOPIC] in frames[-1] and SHOWN[HOSTILE_CLIENT] in frames[-1]


def test_a_report_of_a_file_whose_name_is_not_utf8(tmp_path):
    """A capture file named with bytes that are not UTF-8 (kept as surrogates by Python): the summary and the report
    name it with those bytes escaped, instead of failing to write them."""
    pytest.importorskip("plotly")
    name = os.fsdecode(b"bad\xff.pcap")
    (tmp_path / name).write_bytes(hostile_capture())
    run = capture_command(name, "--report", "report.html", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert r"  bad\udcff.pcap: unmatched request: " in run.stdout
    assert r"<title>Kafka traffic bad\udcff.pcap</title>" in (tmp_path / "report.html").read_text(encoding="utf-8")


# Names that end the report's script elements early, open a comment that swallows their end, or make an element.
PAGE_TOPICS = ("</script><!--<script>", "</script><script>window.injected = 'topic'</script>")
PAGE_CLIENT = "<img src=x onerror=\"window.injected = 'client'\"><b>bold</b> &amp; &#60; \u2028"


def test_the_report_shows_any_name_exactly_and_runs_none(tmp_path):
    """Topic and client names made to break out of the page's JSON, or into its markup: in Chromium the page
    renders every chart with no error, runs no script of theirs, holds no element of theirs, and shows each name
    exactly, in its numbers and on its charts."""
    from test_capture_report import report_page

    pytest.importorskip("plotly")
    capture = tmp_path / "traffic.pcap"
    capture.write_bytes(hostile_capture(PAGE_TOPICS, PAGE_CLIENT, "</script>"))
    page_path = tmp_path / "report.html"
    run = capture_command(capture, "--report", page_path, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    with report_page(page_path) as (page, problems):
        injected = page.evaluate("typeof window.injected")
        images = page.evaluate("document.querySelectorAll('img').length")
        shown = json.loads(page.evaluate("document.getElementById('kafkaproto-report').textContent"))
        ticks = page.evaluate("['topics', 'clients'].map(id => Array.from("
                              "document.getElementById(id).querySelectorAll('.xtick text')).map(t => t.textContent))")
    assert problems == []
    assert injected == "undefined" and images == 0
    assert sorted(name for name, _ in shown["topics_produced"]) == sorted(PAGE_TOPICS)
    assert sorted(name for name, _ in shown["topics_fetched"]) == sorted(PAGE_TOPICS)
    assert shown["clients"] == [[PAGE_CLIENT, 3 + 2 * len(PAGE_TOPICS)]]
    topics_chart, clients_chart = ticks
    assert sorted(topics_chart) == sorted(PAGE_TOPICS) and clients_chart == [PAGE_CLIENT]


@pytest.mark.parametrize("tsresol, offset_s, at", [(0, 0, 92), (9, 2**62, 104)], ids=["seconds-ticks", "offset"])
def test_a_packet_stamped_past_64_bit_nanoseconds_is_a_capture_error(tmp_path, tsresol, offset_s, at):
    """pcapng's ticks (a second each with if_tsresol 0) and if_tsoffset can stamp a packet beyond what 64-bit
    nanoseconds hold: the reader stops there with an error naming the block, and every output says so."""
    from kafkaproto.capture.link import LINKTYPE_ETHERNET

    tcp = Tcp()
    segs = tcp.handshake() + metadata_round(tcp, 1) + tcp.close()
    data = cf.section_header() + cf.interface_description(LINKTYPE_ETHERNET, tsresol, tsoffset=offset_s) + b"".join(
        cf.enhanced_packet(0, 2**62 + i, wire_frame(seg)[0]) for i, seg in enumerate(segs))
    path = tmp_path / "far.pcapng"
    path.write_bytes(data)
    (error,) = read_capture(path)
    assert error.status == CAPTURE_ERROR and error.error.startswith(
        f"{path}: packet block at byte {at} is stamped ") and "outside the years 1677 to 2262" in error.error
    for args in ([], ["--format", "jsonl"], ["--format", "csv"], ["--records", "--format", "jsonl"],
                 ["--format", "parquet", "--output", tmp_path / "far.parquet"], ["--report", tmp_path / "far.html"]):
        done = subprocess.run([sys.executable, "-m", "kafkaproto", "capture", path, *args], capture_output=True,
                              text=True, cwd=tmp_path)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stderr)
