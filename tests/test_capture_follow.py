"""Captures that do not end: a pipe (kafkaproto capture -), an interface (--interface), a growing file or a ring of
files a capture tool rotates (--follow, kafkaproto.capture.follow), and the live view (--live); an hour of traffic
read with bounded memory."""

import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

import capture_files as cf
from kafkaproto.capture import TopicNames, follow, held, read_capture
from kafkaproto.capture.pcap import read_packets
from kafkaproto.capture.summary import Summary
from kafkaproto.cli.capture import print_summary
from kafkaproto.cli.live import LiveView
from kafkaproto.messages import (ApiKey, FetchRequest, FetchResponse, MetadataRequest, MetadataResponse,
                                 ProduceRequest, ProduceResponse, RequestHeader, ResponseHeader)
from kafkaproto.protocol import encode_request, encode_response
from kafkaproto.records import RecordBatchBuilder
from kafkaproto.uuid import Uuid

from test_capture import Tcp, wire_frame

CAPTURES = {p.stem: p for p in sorted((Path(__file__).parent / "data" / "captures").glob("*.pcap"))}
JAVA = CAPTURES["java-4.3.1"]


def kafkaproto(*args, stdin=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "kafkaproto", *map(str, args)], input=stdin, capture_output=True,
                          timeout=timeout)


def pieces(path, parts):
    """The capture's packets cut into ``parts`` pcap files (wherever the cuts fall, inside connections too)."""
    packets = list(read_packets(path))
    out = []
    for k in range(parts):
        part = packets[k * len(packets) // parts:(k + 1) * len(packets) // parts]
        out.append(cf.pcap([(p.timestamp_ns, p.data, p.original_length) for p in part], link_type=part[0].link_type,
                           nanos=True))
    return out


def plain(exchanges):
    return sorted((ex.connection, ex.correlation_id, ex.status, ex.api_name) for ex in exchanges)


def write_slowly(folder, files, pause=0.3):
    """A capture tool's ring: each file written in two halves, a pause between, then the next file."""
    def run():
        for i, data in enumerate(files):
            with open(folder / f"ring{i}.pcap", "wb") as f:
                f.write(data[:len(data) // 2])
                f.flush()
                time.sleep(pause)
                f.write(data[len(data) // 2:])
            time.sleep(pause)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_ring_is_one_stream_across_its_files(tmp_path):
    """Connections go on from file to file: the exchanges are the whole capture's, each request paired with its
    answer whichever file holds it."""
    writer = write_slowly(tmp_path, pieces(JAVA, 4))
    reader = follow(str(tmp_path), idle=1.5, poll=0.05)
    got = list(reader)
    writer.join()
    assert plain(got) == plain(read_capture(JAVA)) and all(ex.status == "ok" for ex in got)
    assert [os.path.basename(f) for f in reader.packets.files] == [f"ring{i}.pcap" for i in range(4)]
    assert reader.packets.notes == []


def test_a_growing_file(tmp_path):
    data = JAVA.read_bytes()
    path = tmp_path / "growing.pcap"
    path.write_bytes(data[:len(data) // 3])

    def grow():
        time.sleep(0.4)
        with open(path, "ab") as f:
            f.write(data[len(data) // 3:])

    thread = threading.Thread(target=grow)
    thread.start()
    got = list(follow(str(path), idle=1.0, poll=0.05))
    thread.join()
    assert plain(got) == plain(read_capture(JAVA))


def test_a_damaged_file_in_a_ring_is_noted_and_passed(tmp_path):
    files = pieces(JAVA, 3)
    files[1] = files[1][:len(files[1]) - 7]  # a record cut short: the file ends inside it
    for i, data in enumerate(files):
        (tmp_path / f"ring{i}.pcap").write_bytes(data)
        os.utime(tmp_path / f"ring{i}.pcap", ns=(i * 10**9 + 10**18, i * 10**9 + 10**18))
    reader = follow(str(tmp_path), idle=0.5, poll=0.05)
    got = list(reader)
    assert len(reader.packets.files) == 3 and len(reader.packets.notes) == 1 and "ring1.pcap" in \
        reader.packets.notes[0]
    assert sum(ex.status == "ok" for ex in got) >= len(list(read_capture(JAVA))) - 4


def test_the_command_line_says_what_a_followed_file_or_ring_could_not_read(tmp_path):
    """A followed file that is not a capture: exit status 2 naming it; a ring with one damaged file: the others'
    summary, exit status 0, and the damaged file named on standard error."""
    (tmp_path / "notes.txt").write_bytes(b"hello, this is not a capture")
    alone = kafkaproto("capture", "--follow", tmp_path / "notes.txt", "--idle", "0.5")
    assert alone.returncode == 2 and b"notes.txt: not a pcap or pcapng file" in alone.stderr, alone.stderr
    ring = tmp_path / "ring"
    ring.mkdir()
    files = pieces(JAVA, 3)
    files[1] = files[1][:len(files[1]) - 7]
    for i, data in enumerate(files):
        (ring / f"ring{i}.pcap").write_bytes(data)
        os.utime(ring / f"ring{i}.pcap", ns=(i * 10**9 + 10**18, i * 10**9 + 10**18))
    damaged = kafkaproto("capture", "--follow", ring, "--idle", "0.5")
    assert damaged.returncode == 0 and b"3 file(s)" in damaged.stdout, damaged.stderr
    assert b"not read to its end" in damaged.stderr and b"ring1.pcap" in damaged.stderr


def test_a_file_the_ring_writes_again_is_read_again(tmp_path):
    """tcpdump -W N reuses its files' names: one written again later (newer) is read again."""
    first, second = pieces(CAPTURES["kafka-python"], 1)[0], pieces(CAPTURES["librdkafka"], 1)[0]
    (tmp_path / "ring0.pcap").write_bytes(first)
    reader = follow(str(tmp_path), idle=1.5, poll=0.05)

    def rewrite():
        time.sleep(0.5)
        (tmp_path / "ring0.pcap").write_bytes(second)

    thread = threading.Thread(target=rewrite)
    thread.start()
    got = list(reader)
    thread.join()
    clients = {ex.client_id for ex in got}
    assert any(c and c.startswith("kafka-python") for c in clients) and any(c and c.startswith("librdkafka")
                                                                             for c in clients)


def test_the_command_line_reads_a_pipe():
    run = kafkaproto("capture", "-", "--format", "jsonl", stdin=JAVA.read_bytes())
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert run.returncode == 0 and len(rows) == len(list(read_capture(JAVA)))


def on_a_terminal(*args, timeout=120):
    """(exit status, standard output) of the command with its standard output on a pseudo-terminal."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "kafkaproto", *map(str, args)], stdout=follower,
                            stderr=subprocess.DEVNULL)
    os.close(follower)
    out = bytearray()

    def drain():  # the terminal's buffer is small: read as it comes
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO once the command has ended and its side is closed
                return
            if not data:
                return
            out.extend(data)

    reader = threading.Thread(target=drain)
    reader.start()
    code = proc.wait(timeout)
    reader.join(10)
    os.close(leader)
    return code, out.decode().replace("\r\n", "\n")


def test_the_command_line_follows_a_ring_and_draws_it_live(tmp_path):
    writer = write_slowly(tmp_path, pieces(JAVA, 3), pause=0.6)
    code, out = on_a_terminal("capture", "--follow", tmp_path, "--idle", "2", "--live")
    writer.join()
    frames = out.split("\x1b[H\x1b[J")
    assert code == 0 and len(frames) >= 3, out[:500]
    last = frames[-1]
    assert "api" in last and "req/s" in last and "Produce" in last
    assert "64 exchanges in 3 file(s): 64 ok" in last  # the summary after the last frame, counting the ring's files


def test_live_into_a_file_writes_plain_tables(tmp_path):
    """Standard output that is not a terminal gets no escape codes: plain tables, then the summary."""
    writer = write_slowly(tmp_path, pieces(JAVA, 3), pause=0.6)
    run = kafkaproto("capture", "--follow", tmp_path, "--idle", "2", "--live")
    writer.join()
    out = run.stdout.decode()
    assert run.returncode == 0 and "\x1b" not in out, out[:500]
    table, summary = out.split("\n\n", 1)
    assert table.startswith("kafkaproto capture of ") and "req/s" in table and "Produce" in table
    assert summary.startswith("64 exchanges in 3 file(s): 64 ok")


def test_the_live_view_draws_plainly_off_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    ex = next(ex for ex in read_capture(JAVA) if ex.api_name == "Produce")
    for out, escapes in ((io.StringIO(), False), (Terminal(), True)):
        live = LiveView(out, interval=0.01)
        live.add(ex)
        live.start()
        time.sleep(0.1)
        live.stop()
        assert ("\x1b[" in out.getvalue()) == escapes and "Produce" in out.getvalue()
        # Off a terminal, a table every window (10 s) at most: here only the last.
        assert escapes or out.getvalue().count("req/s") == 1


def test_a_growing_file_counts_as_one_file(tmp_path):
    path = tmp_path / "growing.pcap"
    path.write_bytes(JAVA.read_bytes())
    run = kafkaproto("capture", "--follow", path, "--idle", "0.5")
    assert run.returncode == 0 and run.stdout.decode().startswith("64 exchanges in 1 file(s): 64 ok")


def test_the_command_line_captures_an_interface(tmp_path):
    """--interface runs dumpcap or tcpdump on a pipe: a client talking to a broker on the loopback interface."""
    if not (shutil.which("dumpcap") or shutil.which("tcpdump")):
        pytest.skip("neither dumpcap nor tcpdump is installed")
    kafka = pytest.importorskip("kafka")
    from kafkaproto.broker import Broker

    with Broker() as broker:
        capture = subprocess.Popen([sys.executable, "-m", "kafkaproto", "capture", "--interface", "lo", "--ports",
                                    str(broker.port), "--duration", "6", "--format", "jsonl"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(2)  # the tool starts capturing
        producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        producer.send("on-the-wire", b"seen").get(20)
        producer.close()
        out, err = capture.communicate(timeout=60)
    if capture.returncode != 0 and b"ermission" in err:
        pytest.skip(f"capturing is not permitted here: {err.decode()[-200:]}")
    rows = [json.loads(line) for line in out.splitlines()]
    assert capture.returncode == 0, err.decode()[-500:]
    assert {"ApiVersions", "Metadata", "Produce"} <= {row["api_name"] for row in rows}
    assert any("on-the-wire" in row["topics"] for row in rows if row["api_name"] == "Produce")


# ---- an hour of traffic ------------------------------------------------------------------------------------------

class _Stream(io.RawIOBase):
    """A pcap made as it is read, from a generator of (time ns, segment): never held whole."""

    def __init__(self, segments):
        super().__init__()
        self._chunks = self._pcap(segments)
        self._left = b""

    @staticmethod
    def _pcap(segments):
        header = cf.pcap([], nanos=True)
        yield header
        for time_ns, seg in segments:
            yield cf.pcap([(time_ns, *wire_frame(seg))], nanos=True)[len(header):]

    def readable(self):
        return True

    def readinto(self, buffer):
        while not self._left:
            self._left = next(self._chunks, b"")
            if not self._left:
                return 0
        n = min(len(buffer), len(self._left))
        buffer[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


def hour_of_traffic(minutes=60, start=1_700_000_000 * 10**9):
    """Capture-time traffic: two producers and a consumer that stay all along (a request every 2 s each, topics by
    ID), a short-lived client every 4 s (Metadata naming the topic, then a produce), and every minute a client that
    goes silent without closing (left for the reader's idle sweep)."""
    topic_id = Uuid.random()
    batch = RecordBatchBuilder()
    batch.append(b"k", b"v" * 100, timestamp=1)
    records = batch.build()
    port = iter(range(20000, 65000))

    def exchange(tcp, key, version, correlation_id, request, response):
        header = RequestHeader(request_api_key=key, request_api_version=version, correlation_id=correlation_id,
                               client_id="hour")
        return tcp.send(True, encode_request(header, request, version)) + \
            tcp.send(False, encode_response(ResponseHeader(correlation_id=correlation_id), response, version))

    def produce(tcp, n):
        request = ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            topic_id=topic_id, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])])
        response = ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(
            topic_id=topic_id, partition_responses=[ProduceResponse.PartitionProduceResponse(index=0, base_offset=n)])])
        return exchange(tcp, ApiKey.PRODUCE, 13, n, request, response)

    def fetch(tcp, n):
        request = FetchRequest(replica_id=-1, max_wait_ms=500, topics=[FetchRequest.FetchTopic(
            topic_id=topic_id, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=n)])])
        response = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic_id=topic_id, partitions=[
            FetchResponse.PartitionData(partition_index=0, high_watermark=n + 1, records=records)])])
        return exchange(tcp, ApiKey.FETCH, 17, n, request, response)

    def metadata(tcp, n):
        response = MetadataResponse(topics=[MetadataResponse.MetadataResponseTopic(
            name="hourly", topic_id=topic_id, partitions=[])])
        return exchange(tcp, ApiKey.METADATA, 12, n, MetadataRequest(topics=None), response)

    staying = [Tcp(client=("10.0.0.2", next(port))) for _ in range(3)]
    yield from ((start, seg) for tcp in staying for seg in tcp.handshake())
    for second in range(0, minutes * 60, 2):
        now = start + second * 10**9
        for i, tcp in enumerate(staying):
            yield from ((now + i * 1000, seg) for seg in (fetch(tcp, second) if i == 2 else produce(tcp, second)))
        if second % 4 == 0:
            tcp = Tcp(client=("10.0.0.3", next(port)))
            segs = tcp.handshake() + metadata(tcp, 1) + produce(tcp, 2) + tcp.close()
            yield from ((now + 5000, seg) for seg in segs)
        if second % 60 == 0:
            tcp = Tcp(client=("10.0.0.4", next(port)))
            yield from ((now + 9000, seg) for seg in tcp.handshake() + produce(tcp, 3))  # and never closed


def test_an_hour_of_traffic_in_bounded_memory():
    """The command line's reading (topic names, holding back, the summary, the live view) over an hour of capture
    time: what it keeps after the first quarter of an hour does not grow over the next three."""
    names = TopicNames()
    summary, live = Summary(names), LiveView(io.StringIO())
    tracemalloc.start()
    marks = {}
    try:
        count = 0
        for ex in held(read_capture(_Stream(hour_of_traffic()), names=names)):
            summary.add("hour", ex)
            live.add(ex)
            count += 1
            minute = (ex.request_time_ns - 1_700_000_000 * 10**9) // (60 * 10**9) if ex.request_time_ns else 0
            if minute in (15, 59) and minute not in marks:
                marks[minute] = tracemalloc.get_traced_memory()[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count > 6000
    assert marks[59] - marks[15] < 1 << 20, marks  # under 1 MiB more after 44 more minutes
    assert peak < 32 << 20, peak
    out = io.StringIO()
    print_summary(summary, out)
    assert "hourly" in out.getvalue().split("topics by bytes produced")[1]  # the IDs named all along
    rows = {name: rate for name, rate, *_ in live.rows()}
    assert rows["Produce"] > 1 and rows["Fetch"] > 0.4  # the last 10 s: two producers and a consumer
