#!/usr/bin/env python
"""Capture reading benchmark: kafkaproto.capture and ``kafkaproto capture`` against tshark, one command, one run.

    python benchmarks/capture.py [--quick] [--big] [--repeats N] [--json PATH] [--profile] [--only PARTS]
    python benchmarks/capture.py --json benchmarks/capture-results.json --profile     # the full run
    python benchmarks/capture.py --only traffic,traffic-profile                       # real traffic alone

Two kinds of capture are read: a synthetic one, many short connections with few records each (the replays
below), and recorded traffic of real clients moving many records (benchmarks/record_traffic.py).

The synthetic capture. The real captures in tests/data/captures/*.pcap (eight clients against real brokers, about
1,200 packets) are replayed many times into one classic pcap file of at least 200 MiB (50 MiB with --quick, and
one of 1 GiB more with --big). Every replay of a file gives each of its TCP connections a fresh client address and
port and fresh initial sequence numbers (the IPv4 and TCP headers are rewritten, their checksums made right),
keeps the original spacing in time of its packets, and starts 0.2 to 1.8 s after the replay before it, so
several replays overlap and their packets interleave while every connection's packets stay in order and
timestamps never go back. All brokers answer on 10.0.0.1:9092. The file is written as a stream into
``.bench/`` and reused when its description there matches; a small capture of the same kind is made first and
read by both tools to check that they see the same requests and responses (tshark also verifies every IPv4 and
TCP checksum in it).

The recorded traffic (part "traffic"; each capture by its name too): a Kafka 4.3.1 broker on the loopback
interface, recorded with tcpdump while one client produces 200,000 records of 100 B into 4 partitions and reads
them all back. java-perf is Kafka's ProducerPerformance and ConsumerPerformance from the 4.3.1 jars (Produce v13,
Fetch v18, lz4), versions tshark 4.0 does not know ("Unsupported version": it reads Produce v13 with v8's layout,
topic names where v13 has topic IDs, until a field is malformed, and pairs no Fetch response with its request);
kafkajs is kafkajs 2.2.4 (Produce v7, Fetch v11, uncompressed), whose every record tshark 4.0 shows. The
captures are recorded when .bench/ has none of the same description (root, tcpdump, java and node needed), else
reused.

What is timed, each as its own process pinned to one core (``taskset -c 0``), from start to exit:

  reader          ``for ex in read_capture(path, ports=[9092])``: every request and response body decoded
                  (synthetic capture only, as are the next one and --follow over the capture cut into 8 files)
  reader headers  the same with ``decode=False`` (request headers only; Produce bodies for acks)
  CLI summary     ``kafkaproto capture FILE --ports PORT`` (the summary, printed to a file)
  tshark fields   ``tshark -r FILE -d tcp.port==PORT,kafka -T fields -e frame.number -e kafka.request_key
                  -e kafka.request.version -e kafka.correlation_id -e kafka.len`` > /dev/null
  ... as pcapng   the CLI summary and tshark fields again on the synthetic capture written as pcapng (by
                  editcap), the format Wireshark and dumpcap write
  CLI jsonl       ``kafkaproto capture FILE --ports PORT --format jsonl --output x.jsonl``: a row per exchange
                  with both bodies decoded whole, records included
  CLI parquet     the same rows with ``--format parquet --output x.parquet``
  CLI records     ``kafkaproto capture FILE --ports PORT --records --format parquet --output x.parquet``: every
                  record batch read (decompressed, CRC checked), a row per record
  tshark -V       ``tshark -r FILE -d tcp.port==PORT,kafka -V`` > /dev/null: every packet fully dissected
                  and printed, records included: the tshark peer of the rows

Rates are packets (and MB of file, and records) per second of wall time: the median of --repeats runs,
interleaved (one run of each command on a capture in turn), so that the same-run ratios (kafkaproto's rate /
tshark's on the same file) stand up to a noisy machine. CPU seconds come from wait4(), the peak resident memory
(max RSS) from /usr/bin/time. The commands keep their Python bytecode in .bench/pycache, as an installed package
does, even where PYTHONDONTWRITEBYTECODE is set, and each output of the CLI runs once before anything is timed.
The machine's load is measured too: the CPU time other processes used during the run (/proc/stat, less this
run's own), and the 1-minute load average.

Records decoded: kafkaproto's are the rows of --records, and the records in the decoded bodies of the jsonl and
Parquet rows (counted in the output of the first run); tshark's are the records its dissection shows, counted
as kafka.record_attributes fields in an untimed ``-T fields`` run (one per record, as in -V's output; for the
synthetic capture, each source's count times its replays). With the recorded traffic, the same commands also
run on tests/data/captures/kafkajs.pcap (20 KB): their start-up, which is in every wall time above.

Memory: the CLI's summary and records runs on the small check capture, the 50 MiB one (the quick run's),
the main one and, with --big, the 1 GiB one. A command whose memory passes --memory-cap (4 GB) is stopped,
so as not to starve the machine.

Spark (when ``kafkaproto.spark`` and pyspark both import): the ``kafka-pcap`` data source counts exchanges
by API (``groupBy("api_name").count()``) over 8 files (each an eighth of the main capture's size, together
as big as it) and over the main capture alone, on local[1] and local[2], each master in its own process
(not pinned), timed after a warm-up query in two tasks. The single file is read with ``splits`` 1 and 2
(every split reads the whole file and decodes the connections that hash to it); its speed-up compares the
faster of the two on local[1] with splits=2 on local[2].

Targets: on the synthetic capture, the reader, the CLI summary, --follow and records at least 5x tshark's
packets/s (records against tshark -V, the others against its fields); on every capture the jsonl and Parquet
rows at least 2x tshark -V; on the recorded traffic the summary at least 5x tshark's fields, --records to
Parquet at least 3x tshark -V on kafkajs (which tshark decodes fully) and at least 1,000,000 records/s on
java-perf; the CLI's peak memory under 500 MB and flat (on the largest synthetic capture within 10 % + 16 MiB
of that on the next largest, both of 50 MiB or more: not judged by --quick); Spark at least 1.7x faster on
local[2] than on local[1].

--profile (or --only profile) times each layer of reading on its own, in this process on one core, on the
synthetic capture's first 30 MiB (pcap records, link headers, TCP and framing, body decoding, the summary, the
record tables, Parquet), then runs cProfile over the reader and the CLI's two paths and prints the functions
with the most time of their own; it also does traffic-profile: cProfile over the CLI's rows (--records to
Parquet, --format jsonl and parquet) on the whole java-perf capture.
"""

import argparse
import contextlib
import cProfile
import hashlib
import heapq
import io
import json
import os
import platform
import pstats
import random
import resource
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

try:
    import kafkaproto
except ImportError:  # not installed: use the source tree this script lives in
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import kafkaproto

from kafkaproto.capture import link, pcap, read_capture

REPO = Path(__file__).resolve().parent.parent
SOURCES = sorted((REPO / "tests" / "data" / "captures").glob("*.pcap"))
CACHE = REPO / ".bench"
MIB = 1 << 20
GENERATOR = 1  # bump when what the generator writes changes: cached captures are then made again

BROKER_IP = bytes((10, 0, 0, 1))
BROKER_PORT = 9092
FIRST_PORT, LAST_PORT = 32768, 60999  # Linux's ephemeral port range
START_NS = 1_767_225_600 * 10**9  # 2026-01-01T00:00:00Z
REPLAY_GAP_NS = (200_000_000, 1_800_000_000)  # a replay starts this long after the one before it

TSHARK = shutil.which("tshark") or "/usr/bin/tshark"
EDITCAP = shutil.which("editcap") or "/usr/bin/editcap"  # tshark's package has it
TASKSET = shutil.which("taskset")
TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
# The timed commands keep their compiled bytecode, as an installed package does (pip writes it at install): with
# PYTHONDONTWRITEBYTECODE set, as it may be in a development shell, every run of the CLI compiled kafkaproto's
# modules from source again (about 0.1 s of each start).
CHILD_ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
             "PYTHONPYCACHEPREFIX": str(CACHE / "pycache")}
FIELDS = ["frame.number", "kafka.request_key", "kafka.request.version", "kafka.correlation_id", "kafka.len"]

PACKETS_TARGET = 5.0  # kafkaproto's packets/s over tshark's: the reader, the summary (and, here, records)
ROWS_TARGET = 2.0  # the jsonl and Parquet exchange rows over tshark -V
# The recorded traffic (benchmarks/record_traffic.py): what --records to Parquet should reach on each. tshark 4.0
# decodes kafkajs's records fully (Produce v7, Fetch v11), not those of the Java client at Kafka 4's versions.
# librdkafka's is a third client's traffic, held to the summary's and the rows' targets only.
TRAFFIC_RECORDS_TARGETS = {"java-perf": {"records_per_s": 1_000_000}, "kafkajs": {"vs_tshark": 3.0},
                           "librdkafka": {}}
# A capture of a few KB: the commands' start-up (imports, the first file opened), measured on their own.
TINY = REPO / "tests" / "data" / "captures" / "kafkajs.pcap"
MEMORY_LIMIT = 500 * 10**6
FLAT_FROM = 50 * MIB  # memory flatness is judged between two captures of at least this size
SPARK_TARGET = 1.7

_RECORD = struct.Struct("<IIII")  # pcap record header: seconds, microseconds, captured length, wire length
_FILE_HEADER = struct.Struct("<IHHiIII")
# A frame's bytes 24..52 (Ethernet + IPv4 without options + TCP): IPv4 checksum, addresses, ports, sequence and
# acknowledgement numbers, the TCP data offset, flags and window (kept), the TCP checksum.
_REWRITE = struct.Struct(">H4s4sHHII4sH")
_WORDS = struct.Struct(">HH")


# ---------------------------------------------------------------------------
# The source captures, as templates for replays
# ---------------------------------------------------------------------------

def checksum_sum(data):
    """The ones' complement sum of data's 16-bit words (unfolded: fold() it)."""
    if len(data) % 2:
        data += b"\x00"
    return sum(struct.unpack(f">{len(data) // 2}H", data))


def fold(total):
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def words(value32):
    hi, lo = divmod(value32, 0x10000)
    return hi + lo


def address_words(address):
    return sum(_WORDS.unpack(address))


class Source:
    """One source capture: its packets, ready to be rewritten, and what reading it gives."""

    def __init__(self, path):
        self.path = path
        self.name = path.stem
        self.digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        packets = list(pcap.read_packets(str(path)))
        segments = [link.tcp_segment(p.link_type, p.data) for p in packets]
        for p, seg in zip(packets, segments):
            if p.link_type != link.LINKTYPE_ETHERNET or type(seg) is str or p.data[12:15] != b"\x08\x00\x45" \
                    or len(p.data) != p.original_length or len(p.data) < 54:
                raise ValueError(f"{path}: packet at byte {p.offset} is not a whole Ethernet/IPv4/TCP frame "
                                 f"without IP options; the generator rewrites only those")
        ports = Counter(port for seg in segments for port in (seg.sport, seg.dport))
        self.broker_port = ports.most_common(1)[0][0]
        conns = {}  # client port -> index
        isn = []  # per connection: [client's first seq, broker's first seq]
        t0 = packets[0].timestamp_ns
        self.packets = []
        for p, seg in zip(packets, segments):
            if self.broker_port not in (seg.sport, seg.dport):
                raise ValueError(f"{path}: a connection not on the broker port {self.broker_port}")
            from_client = seg.dport == self.broker_port
            client_port = seg.sport if from_client else seg.dport
            if client_port not in conns:
                conns[client_port] = len(conns)
                isn.append([None, None])
            index = conns[client_port]
            side = 0 if from_client else 1
            if isn[index][side] is None:
                isn[index][side] = seg.seq
            self.packets.append(self._template(p.timestamp_ns - t0, index, from_client, p.data, seg))
        self.isn = isn
        self.connections = len(conns)
        self.duration_ns = packets[-1].timestamp_ns - t0
        self.bytes = sum(_RECORD.size + len(p.data) for p in packets)
        exchanges = list(read_capture(str(path), ports=[self.broker_port]))
        self.statuses = Counter(ex.status for ex in exchanges)
        self.exchanges = len(exchanges)
        self.records = self._count_records()

    @staticmethod
    def _template(rel_ns, index, from_client, data, seg):
        """What a replay needs of one packet; its checksums made right first, so that rewriting keeps them so."""
        frame = bytearray(data)
        total_length = struct.unpack_from(">H", frame, 16)[0]
        tcp_length = total_length - 20
        frame[24:26] = b"\x00\x00"
        ip_checksum = ~fold(checksum_sum(bytes(frame[14:34]))) & 0xFFFF
        frame[50:52] = b"\x00\x00"
        pseudo = frame[26:34] + struct.pack(">HH", 6, tcp_length)
        tcp_checksum = ~fold(checksum_sum(bytes(pseudo + frame[34:34 + tcp_length]))) & 0xFFFF
        has_ack = bool(seg.flags & link.ACK)
        old_addresses = address_words(frame[26:30]) + address_words(frame[30:34])
        # RFC 1624: HC' = ~(~HC + ~m + m'). The ~HC and ~m terms, summed, per packet; m' is added per replay.
        ip_base = (~ip_checksum & 0xFFFF) + 4 * 0xFFFF - old_addresses
        tcp_base = ((~tcp_checksum & 0xFFFF) + 10 * 0xFFFF - old_addresses - seg.sport - seg.dport
                    - words(seg.seq) - words(seg.ack))
        return (rel_ns, index, from_client, bytes(frame[:24]), bytes(frame[46:50]), bytes(frame[52:]),
                seg.seq, seg.ack, has_ack, ip_base, tcp_base)

    def _count_records(self):
        try:
            from kafkaproto.capture import tables
            return tables.records_table(read_capture(str(self.path), ports=[self.broker_port])).num_rows
        except ImportError:
            return None


def replay(src, start_ns, client_ip, ports, rng):
    """(timestamp_ns, pcap record bytes) of one replay of src, in its packets' order."""
    conns = []
    pair = address_words(client_ip) + address_words(BROKER_IP)
    for client_isn, broker_isn in src.isn:
        port = next(ports)
        up = (rng.getrandbits(32) - client_isn) & 0xFFFFFFFF
        down = (rng.getrandbits(32) - (broker_isn or 0)) & 0xFFFFFFFF
        conns.append((port, up, down, pair + port + BROKER_PORT))
    pack = _REWRITE.pack
    record = _RECORD.pack
    for rel_ns, index, from_client, head, mid, tail, seq, ack, has_ack, ip_base, tcp_base in src.packets:
        port, up, down, constant = conns[index]
        if from_client:
            seq = (seq + up) & 0xFFFFFFFF
            if has_ack:
                ack = (ack + down) & 0xFFFFFFFF
            src_ip, dst_ip, sport, dport = client_ip, BROKER_IP, port, BROKER_PORT
        else:
            seq = (seq + down) & 0xFFFFFFFF
            if has_ack:
                ack = (ack + up) & 0xFFFFFFFF
            src_ip, dst_ip, sport, dport = BROKER_IP, client_ip, BROKER_PORT, port
        ip_sum = ip_base + pair
        ip_sum = (ip_sum & 0xFFFF) + (ip_sum >> 16)
        ip_sum = (ip_sum & 0xFFFF) + (ip_sum >> 16)
        tcp_sum = tcp_base + constant + (seq >> 16) + (seq & 0xFFFF) + (ack >> 16) + (ack & 0xFFFF)
        tcp_sum = (tcp_sum & 0xFFFF) + (tcp_sum >> 16)
        tcp_sum = (tcp_sum & 0xFFFF) + (tcp_sum >> 16)
        ts = start_ns + rel_ns
        length = len(head) + _REWRITE.size + len(tail)
        seconds, ns = divmod(ts, 10**9)
        yield ts, b"".join((record(seconds, ns // 1000, length, length), head,
                            pack(~ip_sum & 0xFFFF, src_ip, dst_ip, sport, dport, seq, ack, mid, ~tcp_sum & 0xFFFF),
                            tail))


def port_cycle():
    while True:
        yield from range(FIRST_PORT, LAST_PORT + 1)


def client_address(replay_index):
    """A client host per replay: 10.1.0.1, 10.1.0.2, ..."""
    n = replay_index + 1
    return bytes((10, 1 + (n >> 16), (n >> 8) & 0xFF, n & 0xFF))


def write_capture(path, target_bytes, sources, seed):
    """Write replays of sources into path until it holds target_bytes (whole replays only); its description."""
    rng = random.Random(seed)
    ports = port_cycle()
    heap = []  # (next timestamp, replay index, record bytes, replay iterator)
    order = []  # the files in the order replays cycle through them, shuffled every round
    replays = Counter()
    written = packets = 0
    next_start = START_NS
    last_ts = 0
    stopping = False
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb", buffering=0) as f:
        f.write(_FILE_HEADER.pack(0xA1B2C3D4, 2, 4, 0, 0, 262144, link.LINKTYPE_ETHERNET))
        written = _FILE_HEADER.size
        chunk, chunk_bytes = [], 0
        while True:
            if not stopping and (not heap or next_start <= heap[0][0]):
                if not order:
                    order = list(sources)
                    rng.shuffle(order)
                src = order.pop()
                index = sum(replays.values())
                replays[src.name] += 1
                it = replay(src, next_start, client_address(index), ports, rng)
                ts, rec = next(it)
                heapq.heappush(heap, (ts, index, rec, it))
                next_start += rng.randint(*REPLAY_GAP_NS)
                continue
            if not heap:
                break
            ts, index, rec, it = heap[0]
            nxt = next(it, None)
            if nxt is None:
                heapq.heappop(heap)
            else:
                heapq.heapreplace(heap, (nxt[0], index, nxt[1], it))
            assert ts >= last_ts
            last_ts = ts
            chunk.append(rec)
            chunk_bytes += len(rec)
            packets += 1
            if chunk_bytes >= MIB:
                f.write(b"".join(chunk))
                written += chunk_bytes
                chunk, chunk_bytes = [], 0
                stopping = stopping or written >= target_bytes
        f.write(b"".join(chunk))
        written += chunk_bytes
    os.replace(tmp, path)
    by_name = {s.name: s for s in sources}
    return {
        "generator": GENERATOR, "seed": seed, "target_bytes": target_bytes,
        "sources": {s.name: s.digest for s in sources},
        "bytes": written, "packets": packets, "replays": dict(sorted(replays.items())),
        "connections": sum(by_name[n].connections * c for n, c in replays.items()),
        "exchanges": sum(by_name[n].exchanges * c for n, c in replays.items()),
        "records": (None if any(s.records is None for s in sources)
                    else sum(by_name[n].records * c for n, c in replays.items())),
        "duration_s": (last_ts - START_NS) / 1e9,
    }


def ensure_capture(name, target_bytes, sources, seed):
    """The cached capture .bench/NAME.pcap and its description, made first if missing or made differently."""
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"{name}.pcap"
    meta_path = CACHE / f"{name}.json"
    want = {"generator": GENERATOR, "seed": seed, "target_bytes": target_bytes,
            "sources": {s.name: s.digest for s in sources}}
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if {k: meta.get(k) for k in want} == want and path.stat().st_size == meta["bytes"]:
            return path, meta
    print(f"  writing {path.relative_to(REPO)} ({target_bytes / MIB:,.0f} MiB) ...", end="", flush=True)
    t = time.perf_counter()
    meta = write_capture(path, target_bytes, sources, seed)
    meta_path.write_text(json.dumps(meta, indent=2))
    print(f" {time.perf_counter() - t:.0f} s", flush=True)
    return path, meta


def describe(path, meta):
    return (f"{path.relative_to(REPO)}: {meta['bytes'] / MIB:,.1f} MiB, {meta['packets']:,} packets, "
            f"{meta['connections']:,} connections, {sum(meta['replays'].values()):,} replays, "
            f"{meta['exchanges']:,} exchanges, {meta['records'] or 0:,} records, {meta['duration_s']:,.0f} s "
            f"of traffic")


# ---------------------------------------------------------------------------
# Child processes: timed from start to exit, CPU and peak memory from wait4()
# ---------------------------------------------------------------------------

def kafkaproto_command():
    """The installed console script next to this Python, else ``python -m kafkaproto``."""
    script = Path(sys.executable).with_name("kafkaproto")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kafkaproto"]


def rss_of(pid):
    """Resident memory of a running process, in bytes (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def descendants(pid):
    """The processes below pid (Linux: /proc/PID/task/*/children)."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids = [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            continue
        for kid in kids:
            found.append(kid)
            found.extend(descendants(kid))
    return found


def run_child(cmd, stdout=None, cwd=None, memory_cap=None, pin=False):
    """Run cmd (pinned to core 0 if pin); wall seconds, CPU seconds, peak RSS in bytes and what it printed (when
    stdout is None).

    The peak RSS comes from /usr/bin/time, which forks the command from a small process: a process started
    straight from this one would count this one's memory at the fork in its own peak. A command growing past
    memory_cap bytes is stopped (the machine is shared) and reported with "capped".
    """
    with tempfile.NamedTemporaryFile("w+", dir=CACHE) as peak, tempfile.TemporaryFile() as err, \
            contextlib.ExitStack() as stack:
        out = stack.enter_context(open(stdout, "wb")) if stdout else stack.enter_context(tempfile.TemporaryFile())
        full = ([TIME, "-f", "%M", "-o", peak.name] if TIME else []) + cmd
        if pin and TASKSET:
            full = [TASKSET, "-c", "0"] + full
        t = time.perf_counter()
        p = subprocess.Popen(full, stdout=out, stderr=err, cwd=cwd or CACHE, env=CHILD_ENV)
        capped = []
        done = threading.Event()

        def watch():
            while not done.wait(0.25):
                pids = descendants(p.pid) + [p.pid]
                rss = max((rss_of(pid) or 0) for pid in pids)
                if rss > memory_cap:
                    capped.append(rss)
                    for pid in pids:  # the command (and what it started) first, then the wrapper
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                    return

        if memory_cap:
            threading.Thread(target=watch, daemon=True).start()
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        done.set()
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        messages = err.read().decode(errors="replace")
        printed = ""
        if not stdout:
            out.seek(0)
            printed = out.read().decode(errors="replace")
        peak.seek(0)
        lines = peak.read().split()
    max_rss = int(lines[-1]) * 1024 if TIME and lines and lines[-1].isdigit() else usage.ru_maxrss * 1024
    if capped:
        max_rss = max(max_rss, capped[0])
    elif p.returncode:
        raise RuntimeError(f"{' '.join(map(str, full))} exited with {p.returncode}:\n{messages[-3000:]}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "max_rss": max_rss, "printed": printed,
            "capped": bool(capped)}


def child_read(path, port, decode):
    """In a child: read the capture, print what came out as JSON."""
    reader = read_capture(path, ports=[port], decode=decode)
    statuses = Counter()
    for ex in reader:
        statuses[ex.status] += 1
    print(json.dumps({"statuses": statuses, "packets": reader.stats.packets, "bytes": reader.stats.bytes,
                      "connections": reader.stats.connections, "skipped": dict(reader.stats.skipped)}))


class Case:
    """One thing to time: a command, how to check what it did, its tshark peer and the ratio it should reach.

    A check may note on the case how many records the command decoded (``records``)."""

    def __init__(self, key, label, cmd, stdout=None, check=None, peer=None, target=None):
        self.key, self.label, self.cmd, self.stdout, self.check, self.peer = key, label, cmd, stdout, check, peer
        self.target = target
        self.records = None
        self.runs = []

    def run(self, memory_cap=None):
        r = run_child(self.cmd, stdout=self.stdout, memory_cap=memory_cap, pin=True)
        if self.check and not r["capped"]:
            self.check(self, r)
        r.pop("printed")
        self.runs.append(r)
        return r

    def result(self, meta):
        """Medians over the runs; a command stopped for its memory has no rate."""
        wall = statistics.median(r["wall_s"] for r in self.runs)
        cpu = statistics.median(r["cpu_s"] for r in self.runs)
        capped = any(r["capped"] for r in self.runs)
        records = None if capped else self.records
        return {"label": self.label, "command": " ".join(map(str, self.cmd)), "wall_s": wall, "cpu_s": cpu,
                "packets_per_s": None if capped else meta["packets"] / wall,
                "mb_per_s": None if capped else meta["bytes"] / 1e6 / wall,
                "packets_per_cpu_s": None if capped else meta["packets"] / cpu,
                "records": records, "records_per_s": None if records is None else records / wall,
                "target": self.target, "max_rss": max(r["max_rss"] for r in self.runs), "capped": capped,
                "runs": self.runs}


def records_in(doc):
    """How many records a decoded body holds, as the CLI writes bodies out: a record batch is an object with
    "magic" and a list of "records"."""
    count, stack = 0, [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "magic" in item and isinstance(item.get("records"), list):
                count += len(item["records"])
            else:
                stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


def child_count(path, what):
    """In a child: rows, and with what == "records" the records in the bodies, of a jsonl or Parquet output."""
    rows = records = 0
    if path.endswith(".jsonl"):
        with open(path, "rb") as f:
            for line in f:
                rows += 1
                if what == "records":
                    ex = json.loads(line)
                    records += records_in(ex.get("request")) + records_in(ex.get("response"))
    else:
        import pyarrow.parquet as pq

        if what != "records":
            rows = pq.read_metadata(path).num_rows
        else:
            for batch in pq.ParquetFile(path).iter_batches(columns=["request", "response"]):
                rows += batch.num_rows
                for column in batch.columns:
                    records += sum(records_in(json.loads(text)) for text in column.to_pylist() if text)
    print(json.dumps({"rows": rows, "records": records if what == "records" else None}))


def count_output(path, records):
    """Rows (and records in the bodies, when asked) of an output file, counted in a child: reading the footer of
    a Parquet file of many row groups takes a lot of memory, which would otherwise stay in this process."""
    run = subprocess.run([sys.executable, os.path.abspath(__file__), "--child-count", str(path),
                          "records" if records else "rows"], capture_output=True, text=True)
    if run.returncode:
        raise RuntimeError(f"counting {path} failed:\n{run.stderr[-3000:]}")
    return json.loads(run.stdout)


def output_cases(path, port, work, expect):
    """The CLI's outputs on one capture beside their tshark peers: the summary against tshark -T fields, and the
    rows (jsonl, Parquet exchanges, --records to Parquet) against tshark -V.

    expect: {"exchanges": N, "records": N or None}. Every run is checked against it (the summary's count, the rows
    written); the records in the jsonl and Parquet exchanges' decoded bodies are counted on the first run."""
    kp = kafkaproto_command()
    base = kp + ["capture", str(path), "--ports", str(port)]
    jsonl, exchanges_parquet, records_parquet = work / "rows.jsonl", work / "rows.parquet", work / "records.parquet"

    def summary_check(case, r):
        first = r["printed"].splitlines()[0]
        want = f"{expect['exchanges']} exchanges in 1 file(s): "
        if not first.startswith(want):
            raise AssertionError(f"kafkaproto capture summary of {path.name}: {first!r}, expected {want!r}...")

    def rows_check(out):
        def check(case, r):
            got = count_output(out, records=case.records is None)
            out.unlink()
            if got["rows"] != expect["exchanges"]:
                raise AssertionError(f"{case.label} on {path.name}: {got['rows']} rows, expected "
                                     f"{expect['exchanges']} exchanges")
            if got["records"] is not None:
                case.records = got["records"]
        return check

    def records_check(case, r):
        rows = count_output(records_parquet, records=False)["rows"]
        records_parquet.unlink()
        want = expect["records"] if expect["records"] is not None else case.records
        if want is not None and rows != want:
            raise AssertionError(f"{case.label} on {path.name}: {rows} rows, expected {want}")
        case.records = rows

    tshark = [TSHARK, "-r", str(path), "-d", f"tcp.port=={port},kafka"]
    return [
        Case("cli_summary", "kafkaproto capture (summary)", base, check=summary_check, peer="tshark",
             target=PACKETS_TARGET),
        Case("tshark", "tshark -T fields (headers)", tshark + ["-T", "fields"] + [x for f in FIELDS for x in ("-e", f)],
             stdout=os.devnull),
        Case("cli_jsonl", "kafkaproto capture --format jsonl", base + ["--format", "jsonl", "--output", str(jsonl)],
             check=rows_check(jsonl), peer="tshark_full", target=ROWS_TARGET),
        Case("cli_parquet", "kafkaproto capture --format parquet",
             base + ["--format", "parquet", "--output", str(exchanges_parquet)], check=rows_check(exchanges_parquet),
             peer="tshark_full", target=ROWS_TARGET),
        Case("cli_records", "kafkaproto capture --records -> Parquet",
             base + ["--records", "--format", "parquet", "--output", str(records_parquet)], check=records_check,
             peer="tshark_full"),
        Case("tshark_full", "tshark -V (every field)", tshark + ["-V"], stdout=os.devnull),
    ]


def tshark_counts(path, port):
    """What tshark makes of a capture, from one untimed run: the Kafka requests and responses it dissects, the
    responses it pairs with their request, and the records it shows (a kafka.record_attributes field each, as
    in its -V output)."""
    out = run_child([TSHARK, "-r", str(path), "-d", f"tcp.port=={port},kafka", "-T", "fields",
                     "-e", "kafka.correlation_id", "-e", "kafka.request_frame", "-e", "kafka.record_attributes"])
    counts = Counter()
    for line in out["printed"].splitlines():
        for name, value in zip(("pdus", "paired_responses", "records"), line.split("\t")):
            counts[name] += value.count(",") + 1 if value else 0
    return dict(counts)


def split_pcap(path, folder, parts):
    """A classic pcap cut into ``parts`` files of whole records, as a capture tool's ring would write it (connections
    run across the cuts). The files' names sort in order, and their times say so too."""
    data = path.read_bytes()
    header, order = data[:24], "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    starts, at = [], 24
    while at + 16 <= len(data):
        starts.append(at)
        at += 16 + struct.unpack_from(order + "I", data, at + 8)[0]
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for k in range(parts):
        first, last = starts[k * len(starts) // parts], (starts + [len(data)])[(k + 1) * len(starts) // parts]
        piece = folder / f"ring{k:03d}.pcap"
        piece.write_bytes(header + data[first:last])
        os.utime(piece, ns=(10**18 + k * 10**9,) * 2)
    return folder


def read_cases(path, meta, work):
    """The timed commands on a replayed capture: the reader both ways, the CLI's outputs (output_cases), the
    capture followed as a ring of 8 files, and tshark; with the checks of what kafkaproto made of it."""
    me = [sys.executable, os.path.abspath(__file__)]
    kp = kafkaproto_command()
    ring = split_pcap(path, work / "ring", 8)

    def reader_check(case, r):
        got = json.loads(r["printed"])
        want = {"ok": meta["exchanges"]}
        if got["statuses"] != want or got["packets"] != meta["packets"]:
            raise AssertionError(f"read_capture on {path.name}: {got}, expected {want} and {meta['packets']} packets")

    def summary_check(case, r, files=1):
        first = r["printed"].splitlines()[0]
        want = f"{meta['exchanges']} exchanges in {files} file(s): {meta['exchanges']} ok"
        if first != want:
            raise AssertionError(f"kafkaproto capture summary: {first!r}, expected {want!r}")

    outputs = {c.key: c for c in output_cases(path, BROKER_PORT, work, meta)}
    outputs["cli_summary"].check = summary_check  # every exchange of the replays is whole
    outputs["cli_records"].target = PACKETS_TARGET
    # The same capture as pcapng (what Wireshark and dumpcap write), summarised by both tools.
    pcapng = work / f"{path.stem}.pcapng"
    subprocess.run([EDITCAP, "-F", "pcapng", str(path), str(pcapng)], check=True)
    as_pcapng = {c.key: c for c in output_cases(pcapng, BROKER_PORT, work, meta)}
    summary_pcapng, tshark_pcapng = as_pcapng["cli_summary"], as_pcapng["tshark"]
    summary_pcapng.key, summary_pcapng.label = "cli_summary_pcapng", "kafkaproto capture (summary), as pcapng"
    summary_pcapng.check, summary_pcapng.peer = summary_check, "tshark_pcapng"
    tshark_pcapng.key, tshark_pcapng.label = "tshark_pcapng", "tshark -T fields (headers), as pcapng"
    return [
        Case("reader", "kafkaproto read_capture", me + ["--child-read", str(path)], check=reader_check,
             peer="tshark", target=PACKETS_TARGET),
        Case("reader_headers", "kafkaproto read_capture(decode=False)", me + ["--child-read", str(path),
             "--child-headers"], check=reader_check, peer="tshark", target=PACKETS_TARGET),
        outputs["cli_summary"],
        # The same capture as a ring of 8 files, followed (the last file is finished after 0.2 s of no growth).
        Case("cli_follow", "kafkaproto capture --follow (8-file ring)",
             kp + ["capture", "--follow", str(ring), "--idle", "0.2", "--ports", str(BROKER_PORT)],
             check=lambda case, r: summary_check(case, r, files=8), peer="tshark",  # a followed ring counts each file
             target=PACKETS_TARGET),
        outputs["tshark"], summary_pcapng, tshark_pcapng, outputs["cli_jsonl"], outputs["cli_parquet"],
        outputs["cli_records"], outputs["tshark_full"],
    ]


# ---------------------------------------------------------------------------
# The machine's load: other processes' CPU during the run
# ---------------------------------------------------------------------------

class Load:
    """CPU time the whole machine spent (/proc/stat) less what this process and its children spent."""

    def __init__(self):
        self.start = self._sample()
        self.loadavg = [os.getloadavg()]

    @staticmethod
    def _sample():
        try:
            with open("/proc/stat") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
            busy = (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait
        except (OSError, ValueError, IndexError):
            busy = None
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.perf_counter(), busy, me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    def note(self):
        self.loadavg.append(os.getloadavg())

    def summary(self):
        self.note()
        t1, busy1, own1 = self._sample()
        t0, busy0, own0 = self.start
        out = {"wall_s": t1 - t0, "own_cores": (own1 - own0) / (t1 - t0),
               "loadavg_1min_min": min(x[0] for x in self.loadavg), "loadavg_1min_max": max(x[0] for x in self.loadavg)}
        if busy0 is not None and busy1 is not None:
            out["others_cores"] = max(0.0, (busy1 - busy0 - (own1 - own0)) / (t1 - t0))
        return out


def print_load(load, when):
    others = f"{load['others_cores']:.2f}" if "others_cores" in load else "?"
    print(f"load {when} ({load['wall_s']:.0f} s): other processes used {others} of the {os.cpu_count()} cores on "
          f"average (this run {load['own_cores']:.2f}); 1-minute load average {load['loadavg_1min_min']:.2f} to "
          f"{load['loadavg_1min_max']:.2f}")


# ---------------------------------------------------------------------------
# Equivalence: both tools see the same requests and responses in a small capture
# ---------------------------------------------------------------------------

def check_small(path, meta):
    """tshark finds every request and response kafkaproto does, and every checksum right."""
    out = run_child([TSHARK, "-r", str(path), "-d", f"tcp.port=={BROKER_PORT},kafka", "-o", "tcp.check_checksum:TRUE",
                     "-o", "ip.check_checksum:TRUE", "-T", "fields", "-e", "kafka.correlation_id",
                     "-e", "ip.checksum.status", "-e", "tcp.checksum.status"])["printed"]
    frames = kafka_pdus = 0
    bad = Counter()
    for line in out.splitlines():
        correlation_ids, ip_status, tcp_status = line.split("\t")
        frames += 1
        kafka_pdus += len([c for c in correlation_ids.split(",") if c])
        bad["IPv4"] += ip_status != "1"
        bad["TCP"] += tcp_status != "1"
    if frames != meta["packets"] or kafka_pdus != 2 * meta["exchanges"] or any(bad.values()):
        raise AssertionError(f"tshark on {path.name}: {frames} packets, {kafka_pdus} Kafka requests and responses, "
                             f"checksums not good: {dict(bad)}; kafkaproto: {meta['packets']} packets, "
                             f"{meta['exchanges']} exchanges")
    return {"packets": frames, "kafka_pdus": kafka_pdus}


# ---------------------------------------------------------------------------
# Spark
# ---------------------------------------------------------------------------

def spark_available():
    try:
        import pyspark  # noqa: F401
    except ImportError as e:
        return f"pyspark does not import ({e})"
    try:
        import kafkaproto.spark  # noqa: F401
    except ImportError as e:
        return f"kafkaproto.spark does not import ({e})"
    return None


def child_spark(master, spec):
    """In a child: one Spark session on master; time each workload of spec after a warm-up; print JSON."""
    from kafkaproto import spark as kspark

    spec = json.loads(spec)
    session = kspark.session(master, "kafkaproto-bench", config={
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.driver.memory": "1g",
        "spark.sql.shuffle.partitions": "2", "spark.python.worker.reuse": "true"})
    session.sparkContext.setLogLevel("ERROR")

    def query(paths, splits):
        reader = session.read.format("kafka-pcap").option("ports", str(BROKER_PORT))
        if splits:
            reader = reader.option("splits", str(splits))
        rows = reader.load(paths).groupBy("api_name").count().collect()
        return sum(r["count"] for r in rows)

    query(spec["warmup"]["paths"], spec["warmup"]["splits"])
    out = {w["key"]: [] for w in spec["workloads"]}
    for _ in range(spec["repeats"]):
        for w in spec["workloads"]:
            t = time.perf_counter()
            n = query(w["paths"], w["splits"])
            out[w["key"]].append(time.perf_counter() - t)
            if n != w["exchanges"]:
                raise AssertionError(f"{w['key']} on {master}: {n} rows, expected {w['exchanges']}")
    session.stop()
    print(json.dumps(out))


def spark_bench(captures, files, repeats):
    """The kafka-pcap data source on local[1] and local[2]: 8 files, and the main capture in splits."""
    (check_path, _), (main_path, main_meta) = captures["check"], captures["main"]
    eight = {"paths": [str(p) for p, _ in files], "exchanges": sum(m["exchanges"] for _, m in files),
             "packets": sum(m["packets"] for _, m in files), "bytes": sum(m["bytes"] for _, m in files)}
    one = {"paths": [str(main_path)], "exchanges": main_meta["exchanges"], "packets": main_meta["packets"],
           "bytes": main_meta["bytes"]}
    plans = {
        "local[1]": [dict(eight, key="8 files", splits=None), dict(one, key="1 file, splits=1", splits=1),
                     dict(one, key="1 file, splits=2", splits=2)],
        "local[2]": [dict(eight, key="8 files", splits=None), dict(one, key="1 file, splits=2", splits=2)],
    }
    results = {}
    me = [sys.executable, os.path.abspath(__file__)]
    for master, workloads in plans.items():
        # The warm-up reads the small capture in two splits, so that local[2] starts both of its Python workers.
        spec = {"warmup": {"paths": [str(check_path)], "splits": 2}, "workloads": workloads, "repeats": repeats}
        print(f"  spark {master} ...", end="", file=sys.stderr, flush=True)
        r = run_child(me + ["--child-spark", master, json.dumps(spec)])
        print(f" {r['wall_s']:.0f} s", file=sys.stderr, flush=True)
        times = json.loads(r["printed"].strip().splitlines()[-1])
        for w in workloads:
            samples = times[w["key"]]
            median = statistics.median(samples)
            results.setdefault(w["key"], {})[master] = {
                "s": median, "samples": samples, "packets_per_s": w["packets"] / median,
                "mb_per_s": w["bytes"] / 1e6 / median, "files": len(w["paths"]), "splits": w["splits"]}
    return results


def print_spark(results):
    print("\nSpark kafka-pcap, groupBy(api_name).count(), median seconds (packets/s)")
    print(f"  {'workload':<18} {'local[1]':>22} {'local[2]':>22} {'speed-up':>9}")
    for key, by in results.items():
        cells = [f"{by[m]['s']:.2f} s ({by[m]['packets_per_s']:,.0f}/s)" if m in by else "-"
                 for m in ("local[1]", "local[2]")]
        print(f"  {key:<18} {cells[0]:>22} {cells[1]:>22} {spark_speedup(results, key) or '-':>9}")


def spark_speedup(results, key):
    """local[1] / local[2] for a workload; the single file compares its best split count on each."""
    if key == "1 file, splits=1":
        return None
    one = results[key].get("local[1]")
    if key == "1 file, splits=2":
        one = min((results[k]["local[1]"] for k in results if k.startswith("1 file") and "local[1]" in results[k]),
                  key=lambda m: m["s"], default=None)
    two = results[key].get("local[2]")
    if not one or not two:
        return None
    return f"{one['s'] / two['s']:.2f}x"


# ---------------------------------------------------------------------------
# Where kafkaproto's time goes
# ---------------------------------------------------------------------------

def head_of(path, size, out):
    """The first size bytes' worth of whole packets of a classic pcap path, written to out."""
    with open(path, "rb") as f, open(out, "wb") as w:
        w.write(f.read(_FILE_HEADER.size))
        written = _FILE_HEADER.size
        while written < size:
            header = f.read(_RECORD.size)
            if len(header) < _RECORD.size:
                break
            length = _RECORD.unpack(header)[2]
            w.write(header + f.read(length))
            written += _RECORD.size + length
    return out


def cli_runner(path, *extra, port=BROKER_PORT):
    """The CLI's run() on path, in this process, its printing swallowed."""
    from kafkaproto.cli import capture as capture_cli

    parser = argparse.ArgumentParser()
    capture_cli.add_arguments(parser)
    args = parser.parse_args([str(path), "--ports", str(port), "--no-progress", *extra])

    def run():
        with contextlib.redirect_stdout(io.StringIO()):
            capture_cli.run(args)
    return run


def drain(iterable):
    for _ in iterable:
        pass


def stage_times(path, work, repeats):
    """Each layer of reading timed on its own in this process (no profiler), the fastest of repeats runs: what
    each adds to the one it builds on."""
    from kafkaproto.capture import tables
    from kafkaproto.cli import capture as capture_cli

    name = str(path)
    parquet = work / "stages.parquet"

    def segments():
        tcp_segment = link.tcp_segment
        for packet in pcap.read_packets(name):
            tcp_segment(packet.link_type, packet.data)

    def summary():
        s = capture_cli.Summary()
        for ex in read_capture(name, ports=[BROKER_PORT]):
            s.add(name, ex)

    steps = [  # (label, what it runs, the step it adds to)
        ("pcap.read_packets: pcap records", lambda: drain(pcap.read_packets(name)), None),
        ("+ link.tcp_segment: Ethernet, IPv4, TCP headers", segments, 0),
        ("read_capture(decode=False): + TCP, frames, pairs, headers",
         lambda: drain(read_capture(name, ports=[BROKER_PORT], decode=False)), 1),
        ("read_capture: + TCP, frames, pairs, bodies decoded",
         lambda: drain(read_capture(name, ports=[BROKER_PORT])), 1),
        ("read_capture + Summary.add (the CLI summary)", summary, 3),
        ("read_capture + tables.record_batches", lambda: drain(tables.record_batches(
            read_capture(name, ports=[BROKER_PORT]), file=name)), 3),
        ("+ written to Parquet (the CLI's --records)", cli_runner(path, "--records", "--output", str(parquet)), 5),
    ]
    out = []
    best = [float("inf")] * len(steps)
    for _ in range(repeats):
        for i, (_, fn, _) in enumerate(steps):
            t = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t)
    for (label, _, base), elapsed in zip(steps, best):
        out.append({"stage": label, "s": elapsed, "adds_to": None if base is None else steps[base][0],
                    "added_s": elapsed - (out[base]["s"] if base is not None else 0.0)})
    parquet.unlink(missing_ok=True)
    return out


def print_stages(stages, meta):
    print(f"\nStages of reading on the first 30 MiB ({meta['packets']:,} packets), each timed alone in one process "
          "on one core, fastest run; 'added': its time less that of the step it builds on")
    for i, row in enumerate(stages):
        base = f"over {[r['stage'] for r in stages].index(row['adds_to']) + 1}" if row["adds_to"] else ""
        print(f"  {i + 1}. {row['stage']:<58} {row['s']:>6.2f} s {meta['packets'] / row['s']:>10,.0f} packets/s  "
              f"added {row['added_s']:>5.2f} s {base}")


def profile(path, work, top=16):
    """cProfile over the reader (decode on and off) and the CLI's summary and records paths: the top functions
    by own time. Compiled code (the codecs, pyarrow) is not seen by the profiler, so its time is counted as
    the own time of the Python function that called it; the profiler also slows Python functions more than
    compiled ones: read the shares as a guide, and the stage times above as the measure."""
    parquet = work / "profile.parquet"
    runs = {
        "read_capture": lambda: drain(read_capture(str(path), ports=[BROKER_PORT])),
        "read_capture(decode=False)": lambda: drain(read_capture(str(path), ports=[BROKER_PORT], decode=False)),
        "kafkaproto capture (summary)": cli_runner(path),
        "kafkaproto capture --records -> Parquet": cli_runner(path, "--records", "--output", str(parquet)),
    }
    return profile_runs(runs, path, [parquet], top)


def profile_traffic(path, port, work, top=20):
    """cProfile over the CLI's rows (--records to Parquet, --format jsonl and parquet) on a recorded capture, after a
    run of each on a small capture (so that imports and first calls are not in the profile)."""
    parquet, jsonl, rows = work / "profile-records.parquet", work / "profile.jsonl", work / "profile-rows.parquet"
    paths = [parquet, jsonl, rows]
    tiny_port = Source(TINY).broker_port
    for extra in (("--records", "--format", "parquet", "--output", str(parquet)),
                  ("--format", "jsonl", "--output", str(jsonl)), ("--format", "parquet", "--output", str(rows))):
        cli_runner(TINY, *extra, port=tiny_port)()
    runs = {
        "kafkaproto capture --records -> Parquet": cli_runner(path, "--records", "--format", "parquet", "--output",
                                                             str(parquet), port=port),
        "kafkaproto capture --format jsonl": cli_runner(path, "--format", "jsonl", "--output", str(jsonl),
                                                        port=port),
        "kafkaproto capture --format parquet": cli_runner(path, "--format", "parquet", "--output", str(rows),
                                                          port=port),
    }
    return profile_runs(runs, path, paths, top)


def profile_runs(runs, path, outputs, top):
    """Each of runs under cProfile, its top functions by own time printed; outputs removed after each."""
    out = {}
    for name, fn in runs.items():
        prof = cProfile.Profile()
        t = time.perf_counter()
        prof.runcall(fn)
        elapsed = time.perf_counter() - t
        stats = pstats.Stats(prof)
        total = stats.total_tt
        rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]
        print(f"\nprofile: {name} on {path.name} ({elapsed:.1f} s under the profiler)")
        print(f"  {'own s':>6} {'own %':>6} {'cum %':>6} {'calls':>10}  function")
        table = []
        for (filename, line, func), (_, calls, own, cum, _) in rows:
            where = func if filename == "~" else f"{_short(filename)}:{line}({func})"
            print(f"  {own:>6.2f} {100 * own / total:>5.1f}% {100 * cum / total:>5.1f}% {calls:>10,}  {where}")
            table.append({"function": where, "own_s": own, "own_share": own / total, "cum_share": cum / total,
                          "calls": calls})
        out[name] = {"profiled_s": elapsed, "top": table}
        for output in outputs:
            output.unlink(missing_ok=True)
    return out


def _short(filename):
    parts = Path(filename).parts
    for anchor in ("kafkaproto", "pyarrow"):
        if anchor in parts:
            return "/".join(parts[len(parts) - parts[::-1].index(anchor) - 1:])
    return Path(filename).name


@contextlib.contextmanager
def on_one_core():
    """This process on core 0 for a while, as the timed commands are."""
    if not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(before)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


# ---------------------------------------------------------------------------
# Running the parts
# ---------------------------------------------------------------------------

def time_cases(cases, repeats, load, memory_cap):
    """Every case once per repeat, in turn; progress on stderr."""
    for i in range(repeats):
        for c in cases:
            r = c.run(memory_cap)
            load.note()
            stopped = f" (stopped at {fmt_mb(r['max_rss'])})" if r["capped"] else ""
            print(f"  [{i + 1}/{repeats}] {c.label}: {r['wall_s']:.1f} s{stopped}", file=sys.stderr, flush=True)


def memory_rows(captures, results, work, load, memory_cap):
    """Peak memory of the CLI's summary and records runs on each capture; the main capture's from its timed runs."""
    rows = []
    for role, (path, meta) in sorted(captures.items(), key=lambda kv: kv[1][1]["bytes"]):
        for c in read_cases(path, meta, work):
            if c.key not in ("cli_summary", "cli_records"):
                continue
            if role == "main" and c.key in results:
                r = results[c.key]
            else:
                print(f"  {c.label} on {path.name} ...", end="", file=sys.stderr, flush=True)
                r = c.run(memory_cap)
                load.note()
                print(f" {r['wall_s']:.0f} s", file=sys.stderr, flush=True)
            what = "summary" if c.key == "cli_summary" else "records"
            rows.append({"what": what, "capture": path.name, "bytes": meta["bytes"], "max_rss": r["max_rss"],
                         "capped": r["capped"], "wall_s": r["wall_s"],
                         "packets_per_s": None if r["capped"] else meta["packets"] / r["wall_s"]})
    return rows


def print_memory(rows, results, memory_cap):
    print("\nPeak memory (max RSS) of kafkaproto capture, one run per capture size (the timed runs' maximum "
          "for the main capture)")
    for m in rows:
        stopped = f"  stopped: over the {fmt_mb(memory_cap)} cap" if m["capped"] else \
            f"  ({m['packets_per_s']:,.0f} packets/s)"
        print(f"  {m['what']:<8} {m['capture']:<26} {fmt_mb(m['bytes']):>9} file {fmt_mb(m['max_rss']):>9}{stopped}")
    if "tshark" in results:
        print(f"  (tshark on the main capture: -T fields {fmt_mb(results['tshark']['max_rss'])}, "
              f"-V {fmt_mb(results['tshark_full']['max_rss'])})")


# ---------------------------------------------------------------------------
# Tables and targets
# ---------------------------------------------------------------------------

def fmt_mb(n):
    return f"{n / 1e6:,.0f} MB"


def print_rates(title, results):
    print(f"\n{title}")
    print(f"  {'what':<40} {'wall s':>7} {'packets/s':>10} {'MB/s':>6} {'CPU s':>6} {'max RSS':>8} {'records':>9} "
          f"{'records/s':>10} {'vs tshark':>9} {'CPU':>6}")
    for r in results.values():
        if r["packets_per_s"] is None:
            print(f"  {r['label']:<40} stopped: memory over the cap ({fmt_mb(r['max_rss'])})")
            continue
        peer = results.get(r["peer"]) if r["peer"] else None
        ratio = cpu_ratio = ""
        if peer and peer["packets_per_s"]:
            ratio = f"{r['packets_per_s'] / peer['packets_per_s']:.2f}x"
            cpu_ratio = f"{r['packets_per_cpu_s'] / peer['packets_per_cpu_s']:.2f}x"
        records = "" if r.get("records") is None else f"{r['records']:,}"
        per_s = "" if r.get("records_per_s") is None else f"{r['records_per_s']:,.0f}"
        print(f"  {r['label']:<40} {r['wall_s']:>7.2f} {r['packets_per_s']:>10,.0f} {r['mb_per_s']:>6.2f} "
              f"{r['cpu_s']:>6.2f} {fmt_mb(r['max_rss']):>8} {records:>9} {per_s:>10} {ratio:>9} {cpu_ratio:>6}")
    print("  vs tshark: wall-time rate over tshark's in the same run (the reader and summary rows against tshark -T "
          "fields, the rows outputs against tshark -V); CPU: the same per CPU second; records: those each command "
          "decoded (tshark: those -V shows)")


def ratio_targets(results, prefix=""):
    """Each row with a peer and a target: its rate over its peer's, in the same run."""
    targets = []
    for r in results.values():
        peer = results.get(r["peer"]) if r["peer"] else None
        if not peer or not r.get("target"):
            continue
        name = f"{prefix}{r['label']}: at least {r['target']:g}x tshark's rate ({peer['label']})"
        if r["packets_per_s"] is None or peer["packets_per_s"] is None:
            targets.append({"target": name, "pass": False, "detail": "stopped: memory over the cap"})
            continue
        ratio = r["packets_per_s"] / peer["packets_per_s"]
        cpu_ratio = r["packets_per_cpu_s"] / peer["packets_per_cpu_s"]
        targets.append({"target": name, "pass": ratio >= r["target"], "ratio": ratio,
                        "detail": f"{peer['wall_s']:.2f} s / {r['wall_s']:.2f} s = {ratio:.2f}x "
                                  f"({cpu_ratio:.2f}x per CPU second)"})
    return targets


def evaluate(results, memory, spark):
    targets = []

    def add(name, ok, detail):
        targets.append({"target": name, "pass": bool(ok), "detail": detail})

    targets.extend(ratio_targets(results))
    for what in ("summary", "records"):
        rows = sorted((m for m in memory if m["what"] == what), key=lambda m: m["bytes"])
        if not rows:
            continue
        peak = max(m["max_rss"] for m in rows)
        over = any(m["capped"] for m in rows)
        add(f"CLI {what}: peak memory under {fmt_mb(MEMORY_LIMIT)}", peak < MEMORY_LIMIT and not over,
            ", ".join(f"{fmt_mb(m['max_rss'])}{' (stopped, still growing)' if m['capped'] else ''} on "
                      f"{fmt_mb(m['bytes'])}" for m in rows))
        # Flat: the largest capture's peak is that of the next largest. Buffers that fill up to a fixed size
        # (the CLI's Parquet row groups) are full in both only from 50 MiB on, so smaller ones are not compared.
        if len(rows) >= 2 and rows[-2]["bytes"] >= FLAT_FROM:
            base, top = rows[-2], rows[-1]
            limit = 1.1 * base["max_rss"] + 16 * MIB
            add(f"CLI {what}: memory flat ({fmt_mb(base['bytes'])} -> {fmt_mb(top['bytes'])} capture, within "
                f"10 % + 16 MiB)", top["max_rss"] <= limit and not top["capped"],
                f"{fmt_mb(base['max_rss'])} -> {fmt_mb(top['max_rss'])}{'+' if top['capped'] else ''} "
                f"({top['max_rss'] / base['max_rss']:.2f}x)")
    for key in spark or {}:
        ratio = spark_speedup(spark, key)
        if ratio:
            add(f"Spark {key}: local[2] at least {SPARK_TARGET}x faster than local[1]",
                float(ratio[:-1]) >= SPARK_TARGET, ratio)
    return targets


# ---------------------------------------------------------------------------
# Recorded traffic: real clients moving many records (benchmarks/record_traffic.py)
# ---------------------------------------------------------------------------

def recorded_captures(names):
    """(name, path, meta) of each recorded capture, recorded first when .bench/ has none that matches; one that
    cannot be recorded here (no tcpdump, java or node, not root) is skipped with why."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import record_traffic

    found = []
    for name in names:
        try:
            path, meta = record_traffic.ensure(name)
        except SystemExit as e:
            print(f"  {name}: skipped, could not be recorded: {e}")
            continue
        found.append((name, path, meta))
    return found


def what_is_in(path, port):
    """Untimed, in this process: the exchanges kafkaproto reads in a capture, and the versions of its Produce and
    Fetch requests."""
    statuses, versions = Counter(), Counter()
    for ex in read_capture(str(path), ports=[port]):
        statuses[ex.status] += 1
        if ex.api_key in (0, 1):
            versions[f"{ex.api_name} v{ex.api_version}"] += 1
    return {"exchanges": sum(statuses.values()), "statuses": dict(statuses), "versions": dict(versions),
            "records": None}


def warm_up(work):
    """Each of the CLI's outputs once on a small capture, untimed: the children's bytecode cache is filled before
    anything is timed."""
    port = Source(TINY).broker_port
    for c in output_cases(TINY, port, work, what_is_in(TINY, port)):
        if c.key.startswith("cli_"):
            c.run()


def traffic_bench(captures, work, repeats, load, memory_cap):
    """The CLI's outputs and tshark on each recorded capture (each capture's commands interleaved), then on a
    capture of a few KB for the commands' start-up."""
    out = {}
    for name, path, meta in captures:
        port = meta["broker_port"]
        expect = what_is_in(path, port)
        counts = tshark_counts(path, port)
        cases = output_cases(path, port, work, expect)
        target = TRAFFIC_RECORDS_TARGETS.get(name, {})
        for c in cases:
            if c.key == "cli_records":
                c.target = target.get("vs_tshark")
        print(f"\ntiming {len(cases)} commands x {repeats} on {path.name} ...", file=sys.stderr, flush=True)
        time_cases(cases, repeats, load, memory_cap)
        results = {c.key: dict(c.result(meta), peer=c.peer) for c in cases}
        results["tshark_full"]["records"] = counts.get("records", 0)
        results["tshark_full"]["records_per_s"] = counts.get("records", 0) / results["tshark_full"]["wall_s"]
        out[name] = {"capture": path.name, "meta": meta, "kafkaproto": expect, "tshark": counts, "results": results,
                     "records_target": target}
    tiny_port = Source(TINY).broker_port
    cases = output_cases(TINY, tiny_port, work, what_is_in(TINY, tiny_port))
    print(f"\ntiming {len(cases)} commands x {repeats} on {TINY.name} (start-up) ...", file=sys.stderr, flush=True)
    time_cases(cases, repeats, load, memory_cap)
    startup = {c.key: {"label": c.label, "wall_s": statistics.median(r["wall_s"] for r in c.runs),
                       "cpu_s": statistics.median(r["cpu_s"] for r in c.runs),
                       "max_rss": max(r["max_rss"] for r in c.runs)} for c in cases}
    return out, {"capture": TINY.name, "bytes": TINY.stat().st_size, "results": startup}


def print_traffic(traffic, startup, repeats):
    for name, case in traffic.items():
        meta, kp, ts = case["meta"], case["kafkaproto"], case["tshark"]
        d, client = meta["description"], meta["client"]
        versions = ", ".join(sorted(kp["versions"]))
        print(f"\n{name}: {case['capture']}, {meta['bytes'] / 1e6:,.1f} MB, {meta['packets']:,} packets, "
              f"{kp['exchanges']:,} exchanges ({versions}); {d['client']}, {d['records']:,} records of "
              f"{d['record_size']} B into {d['partitions']} partitions, {d['compression']}: produced "
              f"{client['produced']:,}, consumed {client['consumed']:,}")
        print(f"  tshark dissects {ts.get('pdus', 0):,} Kafka requests and responses (kafkaproto pairs "
              f"{kp['exchanges']:,} exchanges, {2 * kp['exchanges']:,} messages) and pairs "
              f"{ts.get('paired_responses', 0):,} responses with their request")
        print_rates(f"{name}: each command on one core, median of {repeats}", case["results"])
    print(f"\nStart-up: the same commands on {startup['capture']} ({startup['bytes'] / 1e3:,.0f} KB), median of "
          f"{repeats}")
    for r in startup["results"].values():
        print(f"  {r['label']:<40} {r['wall_s']:>6.2f} s  CPU {r['cpu_s']:>5.2f} s  {fmt_mb(r['max_rss']):>7}")


def traffic_targets(traffic):
    targets = []
    for name, case in traffic.items():
        targets.extend(ratio_targets(case["results"], prefix=f"{name}: "))
        floor = case["records_target"].get("records_per_s")
        r = case["results"]["cli_records"]
        if floor:
            rate = r["records_per_s"]
            targets.append({"target": f"{name}: {r['label']} at least {floor:,} records/s",
                            "pass": bool(rate and rate >= floor),
                            "detail": "stopped: memory over the cap" if rate is None else
                            f"{r['records']:,} records in {r['wall_s']:.2f} s = {rate:,.0f} records/s"})
    return targets


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

PARTS = ("rates", "memory", "spark", "profile", "traffic", "traffic-profile")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a 50 MiB capture, one repeat: a smoke run")
    ap.add_argument("--big", action="store_true", help="also a 1 GiB capture, for the CLI's memory")
    ap.add_argument("--repeats", type=int, help="runs of each command (default 3, --quick 1)")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    ap.add_argument("--only", help=f"comma-separated parts: {', '.join(PARTS)}, or the name of a recorded capture "
                                   f"(java-perf, kafkajs: its traffic table alone) (default: all but the profiles)")
    ap.add_argument("--profile", action="store_true", help="also time the reader's stages and profile it, and "
                                                           "profile the CLI's rows on the Kafka 4 capture")
    ap.add_argument("--memory-cap", type=float, default=4.0, metavar="GB",
                    help="stop a child whose memory grows past this (default 4 GB; the machine is shared)")
    ap.add_argument("--child-read", metavar="PATH", help=argparse.SUPPRESS)
    ap.add_argument("--child-headers", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-spark", nargs=2, metavar=("MASTER", "SPEC"), help=argparse.SUPPRESS)
    ap.add_argument("--child-count", nargs=2, metavar=("PATH", "WHAT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_read:
        return child_read(args.child_read, BROKER_PORT, decode=not args.child_headers)
    if args.child_spark:
        return child_spark(*args.child_spark)
    if args.child_count:
        return child_count(*args.child_count)

    parts = set(args.only.split(",")) if args.only else {"rates", "memory", "spark", "traffic"}
    if args.profile:
        parts |= {"profile", "traffic-profile"}
    unknown = parts - set(PARTS) - set(TRAFFIC_RECORDS_TARGETS)
    if unknown:
        ap.error(f"--only: no part named {', '.join(sorted(unknown))} (there are {', '.join(PARTS)}, "
                 f"{', '.join(TRAFFIC_RECORDS_TARGETS)})")
    traffic_names = [n for n in TRAFFIC_RECORDS_TARGETS if n in parts] or \
        (list(TRAFFIC_RECORDS_TARGETS) if "traffic" in parts else [])
    profile_names = ["java-perf"] if "traffic-profile" in parts else []
    synthetic = bool(parts & {"rates", "memory", "spark", "profile"})
    repeats = args.repeats or (1 if args.quick else 3)
    size = (50 if args.quick else 200) * MIB
    memory_cap = int(args.memory_cap * 1e9)
    t0 = time.perf_counter()
    load = Load()
    print(f"kafkaproto {kafkaproto.__version__}  compiled={kafkaproto.compiled()}  {kafkaproto.__file__}")
    if not kafkaproto.compiled():
        print("WARNING: kafkaproto is running its pure-Python fallback; these numbers do not measure the "
              "compiled codecs")
    tshark_version = subprocess.run([TSHARK, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"{tshark_version}; commands pinned with {'taskset -c 0' if TASKSET else 'nothing (no taskset)'}")
    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}")
    print(f"repeats={repeats}, median of wall times; ratio = kafkaproto's rate / tshark's on the same file (same run); "
          f"1-minute load average at the start {os.getloadavg()[0]:.2f}")

    captures, equivalence, sources = {}, None, []
    if synthetic:
        print("\nCaptures (replays of tests/data/captures/*.pcap):", flush=True)
        sources = [Source(p) for p in SOURCES]
        for s in sources:
            print(f"  {s.name:<14} {len(s.packets):>4} packets, {s.connections:>2} connections, broker port "
                  f"{s.broker_port}, {s.exchanges} exchanges ({dict(s.statuses)}), {s.records} records")
        captures = {"check": ensure_capture("capture-check", 2 * MIB, sources, seed=1),
                    "main": ensure_capture(f"capture-{size // MIB}MiB", size, sources, seed=2)}
        if size > FLAT_FROM and "memory" in parts:  # the quick run's capture: a second size for the memory
            captures["mid"] = ensure_capture(f"capture-{FLAT_FROM // MIB}MiB", FLAT_FROM, sources, seed=2)
        if args.big and "memory" in parts:
            captures["big"] = ensure_capture("capture-1024MiB", 1024 * MIB, sources, seed=3)
        for path, meta in captures.values():
            print(f"  {describe(path, meta)}")
        (check_path, check_meta), (main_path, main_meta) = captures["check"], captures["main"]
        equivalence = check_small(check_path, check_meta)
        print(f"  check: tshark reads {equivalence['packets']:,} packets, {equivalence['kafka_pdus']:,} Kafka "
              f"requests and responses in {check_path.name} (kafkaproto: {check_meta['exchanges']:,} exchanges, all "
              f"ok); every IPv4 and TCP checksum good")
    recorded = []
    if traffic_names or profile_names:
        print("\nRecorded traffic (benchmarks/record_traffic.py):", flush=True)
        recorded = recorded_captures(dict.fromkeys(traffic_names + profile_names))
        for name, path, meta in recorded:
            print(f"  {name}: {path.relative_to(REPO)}, {meta['bytes'] / 1e6:,.1f} MB, {meta['packets']:,} packets, "
                  f"broker port {meta['broker_port']}, recorded {meta['recorded_at']}")

    work = Path(tempfile.mkdtemp(prefix="work-", dir=CACHE))
    results, memory, spark, stages, profiles, load_commands = {}, [], None, None, None, None
    traffic, startup, traffic_profiles = {}, None, None
    try:
        if parts & {"rates", "memory"} or traffic_names:
            warm_up(work)
        if "rates" in parts or "memory" in parts:
            cases = read_cases(main_path, main_meta, work)
            if "rates" not in parts:
                cases = [c for c in cases if c.key in ("cli_summary", "cli_records")]
            print(f"\ntiming {len(cases)} commands x {repeats} on {main_path.name} ...", file=sys.stderr, flush=True)
            time_cases(cases, repeats, load, memory_cap)
            keys = {c.key for c in cases}
            for c in cases:
                results[c.key] = dict(c.result(main_meta), peer=c.peer if c.peer in keys else None)
            if "rates" in parts:
                # tshark's records: each source's, as many times as it was replayed
                shown = sum(tshark_counts(s.path, s.broker_port).get("records", 0) * main_meta["replays"].get(s.name, 0)
                            for s in sources)
                results["tshark_full"]["records"] = shown
                results["tshark_full"]["records_per_s"] = shown / results["tshark_full"]["wall_s"]
                print_rates(f"synthetic: {main_path.name}: {main_meta['bytes'] / MIB:,.0f} MiB, "
                            f"{main_meta['packets']:,} packets, {main_meta['exchanges']:,} exchanges; each command on "
                            f"one core, median of {repeats}", results)
        if "memory" in parts:
            memory = memory_rows(captures, results, work, load, memory_cap)
            print_memory(memory, results, memory_cap)
        timed = [(name, path, meta) for name, path, meta in recorded if name in traffic_names]
        if timed:
            traffic, startup = traffic_bench(timed, work, repeats, load, memory_cap)
            print_traffic(traffic, startup, repeats)
        load_commands = load.summary() if results or memory or traffic else None
        if "spark" in parts:
            missing = spark_available()
            if missing:
                print(f"\nSpark: skipped, {missing}")
            else:
                files = [ensure_capture(f"{main_path.stem}-part{i + 1}of8", size // 8, sources, seed=100 + i)
                         for i in range(8)]
                spark = spark_bench(captures, files, repeats)
                load.note()
                print_spark(spark)
        if "profile" in parts:
            sample = head_of(main_path, 30 * MIB, work / "profile.pcap")
            sample_meta = {"packets": sum(1 for _ in pcap.read_packets(str(sample)))}
            with on_one_core():
                stages = stage_times(sample, work, repeats)
                print_stages(stages, sample_meta)
                profiles = profile(sample, work)
            load.note()
        for name, path, meta in recorded:
            if name in profile_names:
                with on_one_core():
                    traffic_profiles = profile_traffic(path, meta["broker_port"], work)
                load.note()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    loaded = load.summary()
    print()
    if load_commands:
        print_load(load_commands, "while the commands above ran")
    print_load(loaded, "over the whole run")
    targets = evaluate(results, memory, spark) + traffic_targets(traffic)
    print("\nTargets:")
    for t in targets:
        print(f"  {'PASS' if t['pass'] else 'FAIL'}  {t['target']}: {t['detail']}")
    elapsed = time.perf_counter() - t0
    print(f"\n{sum(t['pass'] for t in targets)}/{len(targets)} targets pass; run took {elapsed:.0f} s")

    if args.json:
        doc = {
            "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
            "kafkaproto": {"version": kafkaproto.__version__, "compiled": kafkaproto.compiled(),
                           "file": kafkaproto.__file__},
            "tshark": tshark_version, "pinned": bool(TASKSET), "python": sys.version,
            "platform": platform.platform(), "cpus": os.cpu_count(), "repeats": repeats,
            "captures": {role: meta for role, (_, meta) in captures.items()},
            "equivalence": equivalence, "results": results, "memory": memory, "spark": spark,
            "traffic": traffic, "startup": startup, "traffic_profile": traffic_profiles,
            "stages": stages, "profile": profiles, "load": loaded, "load_commands": load_commands,
            "targets": targets, "elapsed_s": elapsed,
        }
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
