"""The broker's limits and bounded resources: partitions per request, creations that fail half-way, open segment
files, and accept() when the process is out of file descriptors.

The subprocess tests start ``python -m kafkaproto.broker`` with a low RLIMIT_NOFILE (set in the child before it
runs). The full-size descriptor test, 50,000 partitions under a limit of 4,096 in requests of 9,999 (the most
Kafka makes in one topic: 10,000 records with the TopicRecord), takes over a minute (making a partition syncs two
files) and runs when KAFKAPROTO_HEAVY_TESTS=1; CI runs the same test with 1,500 partitions under a limit of 512,
in requests of 500.
"""

import asyncio
import errno
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from kafkaproto import errors, records
from kafkaproto.broker import Broker, server
from kafkaproto.broker.config import BrokerConfig
from kafkaproto.broker.embedded import STARTED
from kafkaproto.broker.state import log as segment_log
from kafkaproto.broker.state.cluster import METADATA_DIR
from kafkaproto.messages import (ApiVersionsRequest, CreatePartitionsRequest, CreateTopicsRequest,
                                 DeleteTopicsRequest, FetchRequest, MetadataRequest, ProduceRequest)
from kafkaproto.metadata import decode_record

from test_broker_handlers import call, create, fetch, make_state, produce
from test_kafka_broker import RawClient

pytestmark = pytest.mark.above_the_codecs


def grow(state, *pairs, validate_only=False):
    """CreatePartitions of (topic, count) pairs; [(name, error code)] in the order answered."""
    # assignments=None, as clients send it: an empty list asks for no new partition at all.
    topics = [CreatePartitionsRequest.CreatePartitionsTopic(name=n, count=c, assignments=None) for n, c in pairs]
    body = CreatePartitionsRequest(topics=topics, timeout_ms=1000, validate_only=validate_only)
    return [(r.name, r.error_code) for r in call(state, body, 3).results]


def partition_dirs(path, topic):
    return sorted(name for name in os.listdir(path) if re.fullmatch(re.escape(topic) + r"-\d+(\..*)?", name))


def metadata_topic_records(path):
    """Names of the topics that TopicRecords in the metadata log create."""
    names = []
    directory = os.path.join(path, METADATA_DIR)
    for name in sorted(os.listdir(directory)):
        if name.endswith(".log"):
            with open(os.path.join(directory, name), "rb") as f:
                for batch in records.iter_batches(f.read()):
                    for record in batch:
                        decoded = decode_record(record.value)[0]
                        if type(decoded).__name__ == "TopicRecord":
                            names.append(decoded.name)
    return names


# --- partitions per request


def test_create_partitions_counts_what_the_request_adds(tmp_path):
    """Kafka's rule: the topic whose new partitions take the request past 10,000, and every later one that adds
    any, get UNKNOWN_SERVER_ERROR; the topics before it grow; nothing of a refused topic is made."""
    state = make_state(tmp_path)
    try:
        for name in ("a", "b", "c", "d"):
            assert create(state, name).error_code == 0
        ok, over = errors.NONE.code, errors.UNKNOWN_SERVER_ERROR.code
        assert grow(state, ("a", 10_001), validate_only=True) == [("a", ok)]  # 10,000 added: the limit itself
        assert grow(state, ("a", 10_002), validate_only=True) == [("a", over)]
        # Refused topics add nothing to the count; a topic over the limit leaves no room for later ones.
        assert grow(state, ("a", 2), ("nope", 5), ("b", 10_001), ("c", 1), ("d", 2),
                    validate_only=True) == [("a", ok), ("nope", errors.UNKNOWN_TOPIC_OR_PARTITION.code),
                                            ("b", over), ("c", errors.INVALID_PARTITIONS.code), ("d", over)]
        assert grow(state, ("a", 3), ("b", 10_001), ("c", 2)) == [("a", ok), ("b", over), ("c", over)]
        assert [len(state.cluster.topics[n].partitions) for n in "abcd"] == [3, 1, 1, 1]
        assert partition_dirs(tmp_path, "a") == ["a-0", "a-1", "a-2"]
        assert partition_dirs(tmp_path, "b") == ["b-0"] and partition_dirs(tmp_path, "c") == ["c-0"]
    finally:
        state.close()


def create_many(state, *counts, validate_only=True, configs=0):
    """CreateTopics of topics t0, t1, ... with those partition counts (and that many configs each); the codes."""
    topics = [CreateTopicsRequest.CreatableTopic(
        name=f"t{i}", num_partitions=n, replication_factor=1,
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=name, value="1000")
                 for name in ("retention.ms", "segment.ms", "delete.retention.ms")[:configs]])
        for i, n in enumerate(counts)]
    body = CreateTopicsRequest(topics=topics, timeout_ms=1000, validate_only=validate_only)
    return [t.error_code for t in call(state, body, 7).topics]


def test_create_topics_counts_records_as_kafka_does(tmp_path):
    """Over 10,000 partitions, or over 10,000 records (a topic's TopicRecord, ConfigRecords and
    PartitionRecords), and every topic is refused with POLICY_VIOLATION, validate_only or not."""
    state = make_state(tmp_path)
    try:
        ok, refused = errors.NONE.code, errors.POLICY_VIOLATION.code
        assert create_many(state, 9_999) == [ok]
        assert create_many(state, 10_000) == [refused]
        assert create_many(state, 5_000, 4_999) == [refused, refused]
        assert create_many(state, 4_999, 4_999) == [ok, ok]
        assert create_many(state, 9_998, configs=1) == [ok]
        assert create_many(state, 9_998, configs=2) == [refused]
        assert create_many(state, 5_000, 0, 4_999) == [refused, refused, refused]
        assert create_many(state, 9_999, 0) == [ok, errors.INVALID_PARTITIONS.code]  # the refused take no room
        assert create_many(state, 9_999, 1, validate_only=False) == [refused, refused]
        assert not state.cluster.topics and not partition_dirs(tmp_path, "t0")
    finally:
        state.close()


# --- creations that fail half-way leave nothing


class Failing:
    """Stands in for an os function: a call whose path argument ends with `target` raises OSError(code) (once,
    or every time with always=True); the others run the real function."""

    def __init__(self, real, target, code, argument=0, always=False):
        self.real, self.target, self.code, self.argument, self.always = real, target, code, argument, always
        self.failed = 0

    def __call__(self, *args, **kwargs):
        if str(args[self.argument]).endswith(self.target) and (self.always or not self.failed):
            self.failed += 1
            raise OSError(self.code, os.strerror(self.code))
        return self.real(*args, **kwargs)


def assert_restart_shows(tmp_path, topic, partitions):
    """A fresh start on the same directory serves topic with that many partitions (0: not at all), and sets
    nothing aside."""
    state = make_state(tmp_path)
    try:
        found = state.cluster.topics.get(topic)
        assert (len(found.partitions) if found else 0) == partitions
        assert partition_dirs(tmp_path, topic) == [f"{topic}-{i}" for i in range(partitions)]
        assert not [name for name in os.listdir(tmp_path) if name.endswith(("-stray", "-delete"))]
    finally:
        state.close()


# The third partition's directory cannot be made, or the second one's partition.metadata cannot be put in place.
@pytest.mark.parametrize("where, target, argument, code", [("mkdir", "t-2", 0, errno.EMFILE),
                                                          ("replace", "t-1/partition.metadata", 1, errno.ENOSPC)])
def test_a_topic_that_cannot_be_made_whole_leaves_nothing(tmp_path, monkeypatch, where, target, argument, code):
    state = make_state(tmp_path)
    try:
        failing = Failing(getattr(os, where), target, code, argument)
        monkeypatch.setattr(os, where, failing)
        result = create(state, "t", partitions=5)
        monkeypatch.undo()
        assert failing.failed == 1 and result.error_code == errors.UNKNOWN_SERVER_ERROR.code
        assert os.strerror(code) in result.error_message
        assert "t" not in state.cluster.topics and partition_dirs(tmp_path, "t") == []
        assert "t" not in metadata_topic_records(tmp_path)
        assert len(state.files) <= 4  # the metadata, offsets, transaction and share logs: the new ones closed
    finally:
        state.close()
    assert_restart_shows(tmp_path, "t", 0)
    state = make_state(tmp_path)
    try:
        assert create(state, "t", partitions=5).error_code == 0  # the same name, made whole this time
    finally:
        state.close()
    assert_restart_shows(tmp_path, "t", 5)


def test_a_metadata_write_that_fails_leaves_no_topic_and_no_directories(tmp_path, monkeypatch):
    state = make_state(tmp_path)
    try:
        size = os.path.getsize(os.path.join(tmp_path, METADATA_DIR, f"{0:020d}.log"))
        real = os.pwrite

        def half_then_full(fd, data, position):  # a torn write: half of it lands, then the disk is full
            real(fd, bytes(data[:len(data) // 2]), position)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(segment_log.os, "pwrite", half_then_full)
        result = create(state, "t", partitions=3)
        monkeypatch.undo()
        assert result.error_code == errors.UNKNOWN_SERVER_ERROR.code and "No space" in result.error_message
        assert os.path.getsize(os.path.join(tmp_path, METADATA_DIR, f"{0:020d}.log")) == size  # cut off again
        assert partition_dirs(tmp_path, "t") == [] and "t" not in state.cluster.topics
    finally:
        state.close()
    assert_restart_shows(tmp_path, "t", 0)


def test_partitions_that_cannot_all_be_made_leave_the_topic_as_it_was(tmp_path, monkeypatch):
    state = make_state(tmp_path)
    try:
        assert create(state, "t", partitions=2).error_code == 0
        assert produce(state, produce_batch(b"kept")).error_code == 0
        monkeypatch.setattr(os, "mkdir", Failing(os.mkdir, "t-4", errno.EMFILE))
        assert grow(state, ("t", 6)) == [("t", errors.UNKNOWN_SERVER_ERROR.code)]
        monkeypatch.undo()
        assert len(state.cluster.topics["t"].partitions) == 2 and partition_dirs(tmp_path, "t") == ["t-0", "t-1"]
    finally:
        state.close()
    assert_restart_shows(tmp_path, "t", 2)
    state = make_state(tmp_path)
    try:
        assert fetched(state) == [b"kept"]
        assert grow(state, ("t", 6)) == [("t", 0)]
    finally:
        state.close()
    assert_restart_shows(tmp_path, "t", 6)


def produce_batch(*values):
    builder = records.RecordBatchBuilder()
    for value in values:
        builder.append(None, value, timestamp=1_700_000_000_000)
    return builder.build()


def records_of(partition_response):
    return [r.value for b in records.iter_batches(partition_response.records or b"") for r in b]


def fetched(state, **kwargs):
    return records_of(fetch(state, **kwargs).responses[0].partitions[0])


# --- open segment files


def open_descriptors(under):
    """This process's descriptors open on files under a directory (other threads' files are not counted)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith(str(under))
        except OSError:
            pass  # closed meanwhile
    return count


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
def test_segment_files_stay_within_the_bound_and_partitions_at_rest_hold_none(tmp_path):
    state = make_state(tmp_path, **{"kafkaproto.open.segment.files.max": "8"})
    try:
        assert state.files.limit == 8
        assert create(state, "t", partitions=40, **{"internal.segment.bytes": "200"}).error_code == 0
        for p in range(40):
            for i in range(3):  # 200-byte segments: each append after the first rolls a new one
                assert produce(state, produce_batch(b"%d-%d" % (p, i)), partition=p).error_code == 0
        assert len(state.files) <= 8 and open_descriptors(tmp_path) <= 8
        for p in range(40):
            got = []
            while len(got) < 3:
                got += fetched(state, offset=len(got), partition=p)
            assert got == [b"%d-%d" % (p, i) for i in range(3)]
        assert len(state.files) <= 8 and open_descriptors(tmp_path) <= 8
    finally:
        state.close()
    assert open_descriptors(tmp_path) == 0
    state = make_state(tmp_path, **{"kafkaproto.open.segment.files.max": "8"})
    try:
        assert len(state.files) <= 8 and open_descriptors(tmp_path) <= 8
        assert fetched(state, partition=39)[:1] == [b"39-0"]
    finally:
        state.close()


def test_a_segment_open_out_of_descriptors_gives_back_another_one(tmp_path, monkeypatch):
    files = segment_log.OpenFiles(100)
    plog = segment_log.PartitionLog(str(tmp_path / "p-0"), files=files)
    other = segment_log.PartitionLog(str(tmp_path / "p-1"), files=files)
    assert len(files) == 2  # new segments start open: they are about to be written
    plog.segments[0].close()
    monkeypatch.setattr(os, "open", Failing(os.open, f"{0:020d}.log", errno.EMFILE))
    assert plog.segments[0].read(0, 10) == b""  # opened on the second try, after the other's was closed
    assert plog.segments[0].is_open and not other.segments[0].is_open and len(files) == 1
    plog.close()
    other.close()


# --- in a subprocess, under a low RLIMIT_NOFILE


class LimitedBroker:
    """``python -m kafkaproto.broker`` with RLIMIT_NOFILE set to nofile in the child; its log lines collected."""

    def __init__(self, log_dir, nofile, overrides=()):
        self.lines = []
        # -P: the installed, compiled package, not a source tree in the working directory (as Broker does).
        args = [sys.executable] + (["-P"] if sys.version_info >= (3, 11) else []) + [
            "-m", "kafkaproto.broker", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
            "--override", f"log.dirs={log_dir}"]
        for item in overrides:
            args += ["--override", item]
        self.process = subprocess.Popen(
            args, stderr=subprocess.PIPE, text=True,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile)))
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.wait_for_line(STARTED.pattern, timeout=120)
        self.port = int(next(STARTED.search(line) for line in self.lines if STARTED.search(line)).group(2))

    def _read(self):
        for line in self.process.stderr:
            self.lines.append(line)

    def wait_for_line(self, pattern, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(re.search(pattern, line) for line in self.lines):
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.process.kill()
        raise AssertionError(f"no log line matching {pattern!r}; the last ones:\n" + "".join(self.lines[-20:]))

    def descriptors(self):
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(10)
        assert self.process.returncode == 0, "".join(self.lines[-20:])


def create_topics(client, names, partitions):
    body = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name=n, num_partitions=partitions,
                                                                          replication_factor=1) for n in names],
                               timeout_ms=60000)
    return [t.error_code for t in client.call(body, 7).body.topics]


def produce_to(client, targets, value):
    """One Produce of a record (value % (topic, partition)) to each target; the error codes."""
    data = {}
    for topic, p in targets:
        data.setdefault(topic, []).append(ProduceRequest.PartitionProduceData(
            index=p, records=produce_batch(value % (topic.encode(), p))))
    body = ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name=t, partition_data=parts) for t, parts in data.items()])
    return {(t.name, p.index): p.error_code for t in client.call(body, 9).body.responses
            for p in t.partition_responses}


def fetch_from(client, targets):
    """{(topic, partition): [values]} of one Fetch from offset 0 of each target."""
    by_topic = {}
    for topic, p in targets:
        by_topic.setdefault(topic, []).append(FetchRequest.FetchPartition(partition=p, fetch_offset=0,
                                                                          partition_max_bytes=1 << 16))
    body = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=64 << 20, isolation_level=0,
                        session_id=0, session_epoch=-1,
                        topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()])
    out = {}
    for t in client.call(body, 12).body.responses:
        for p in t.partitions:
            assert p.error_code == 0, (t.topic, p.partition_index, p.error_code)
            out[(t.topic, p.partition_index)] = records_of(p)
    return out


def partition_counts(client):
    body = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    return {t.name: len(t.partitions) for t in client.call(body, 12).body.topics if t.name.startswith("many-")}


HEAVY = os.environ.get("KAFKAPROTO_HEAVY_TESTS") == "1"


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
@pytest.mark.parametrize("total, nofile, per_topic", [(50_000, 4096, 9_999) if HEAVY else (1_500, 512, 500)])
def test_many_more_partitions_than_file_descriptors(tmp_path, total, nofile, per_topic):
    topics = {f"many-{i}": min(per_topic, total - i * per_topic) for i in range(-(-total // per_topic))}
    spread = [(t, p) for t, n in topics.items() for p in range(0, n, 7)]  # more than the open-file bound
    broker = LimitedBroker(tmp_path, nofile)
    try:
        client = RawClient(broker.port)
        for name, n in topics.items():  # a request per topic
            assert create_topics(client, [name], n) == [0]
        assert partition_counts(client) == topics
        assert set(produce_to(client, spread, b"%s-%d").values()) == {0}
        expected = {(t, p): [b"%s-%d" % (t.encode(), p)] for t, p in spread}
        assert fetch_from(client, spread) == expected
        assert broker.descriptors() < nofile // 2 + 64  # the segment files' half, and a little
        client.close()
    finally:
        broker.stop()
    broker = LimitedBroker(tmp_path, nofile)
    try:
        client = RawClient(broker.port)
        assert partition_counts(client) == topics
        assert fetch_from(client, spread) == expected
        others = [(t, p) for t, n in topics.items() for p in range(3, n, 7)]
        assert set(produce_to(client, others, b"again %s-%d").values()) == {0}
        assert fetch_from(client, others[::5]) == {(t, p): [b"again %s-%d" % (t.encode(), p)]
                                                   for t, p in others[::5]}
        assert broker.descriptors() < nofile // 2 + 64
        client.close()
    finally:
        broker.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_NOFILE and EMFILE as Linux has them")
def test_accept_out_of_descriptors_backs_off_with_one_line_each_way(tmp_path):
    nofile = 128
    broker = LimitedBroker(tmp_path, nofile)
    clients = []
    try:
        # Every descriptor the broker has left goes to a connection, and some more wait in the backlog.
        while not any("accept() is out of file descriptors" in line for line in broker.lines):
            clients.append(socket.create_connection(("127.0.0.1", broker.port), timeout=10))
            assert len(clients) <= nofile + 20, "the broker never ran out of descriptors"
            if len(clients) >= nofile:
                time.sleep(0.05)
        time.sleep(2.5)  # retries happen meanwhile: asyncio's own loop would log a traceback for each
        for sock in clients[:len(clients) - nofile // 2]:  # what is left, accepted or waiting, fits
            sock.close()
        broker.wait_for_line("accepting connections again")
        fresh = RawClient(broker.port)
        assert fresh.call(ApiVersionsRequest(), 0).body.error_code == 0
        fresh.close()
    finally:
        for sock in clients:
            sock.close()
        broker.stop()
    log = "".join(broker.lines)
    assert log.count("accept() is out of file descriptors") == 1, log
    assert log.count("accepting connections again") == 1, log
    assert "Traceback" not in log and "out of system resource" not in log, log


def test_sockets_get_kafkas_buffer_sizes_keepalive_and_no_nagle():
    """socket.receive.buffer.bytes on the listening socket before bind (its connections inherit it),
    socket.send.buffer.bytes on each accepted one; -1 leaves the system's. Linux doubles what is asked for."""
    defaults = BrokerConfig({})
    assert (defaults["socket.send.buffer.bytes"], defaults["socket.receive.buffer.bytes"]) == (-1, 102400)

    async def accepted(receive_buffer, send_buffer):
        [listener] = await server._listen("127.0.0.1", 0, receive_buffer)
        with listener, socket.create_connection(listener.getsockname(), timeout=10):
            listener.setblocking(True)
            conn, _ = listener.accept()
            with conn:
                server._tune(conn, send_buffer)
                return {name: conn.getsockopt(level, option) for name, level, option in (
                    ("rcvbuf", socket.SOL_SOCKET, socket.SO_RCVBUF), ("sndbuf", socket.SOL_SOCKET, socket.SO_SNDBUF),
                    ("keepalive", socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                    ("nodelay", socket.IPPROTO_TCP, socket.TCP_NODELAY))}

    sized = asyncio.run(accepted(32768, 16384))
    assert sized == {"rcvbuf": 65536, "sndbuf": 32768, "keepalive": 1, "nodelay": 1}
    with socket.socket() as plain:
        os_defaults = plain.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF), plain.getsockopt(
            socket.SOL_SOCKET, socket.SO_SNDBUF)
    untouched = asyncio.run(accepted(-1, -1))
    assert untouched["rcvbuf"] != 65536 and untouched["sndbuf"] != 32768
    assert untouched["rcvbuf"] >= os_defaults[0] and untouched["keepalive"] == 1


def test_a_deleted_topic_is_removed_off_the_event_loop(monkeypatch):
    """Removing a topic's files can take the file system a tenth of a second a gigabyte; the broker's event loop
    (thread kafkaproto-broker) keeps serving meanwhile."""
    threads, removed = [], threading.Event()

    def remove(paths):
        threads.append(threading.current_thread().name)
        removed_paths.extend(paths)
        real(paths)
        removed.set()

    real, removed_paths = server.remove_directories, []
    monkeypatch.setattr(server, "remove_directories", remove)
    with Broker({"log.segment.delete.delay.ms": "0"}) as broker:
        client = RawClient(broker.port)
        topic = CreateTopicsRequest.CreatableTopic(name="gone", num_partitions=2, replication_factor=1)
        assert client.call(CreateTopicsRequest(topics=[topic], timeout_ms=10000), 7).body.topics[0].error_code == 0
        body = DeleteTopicsRequest(topic_names=["gone"], timeout_ms=10000)
        assert client.call(body, 5).body.responses[0].error_code == 0
        assert removed.wait(10), "the deleted topic's directories were never removed"
        assert client.call(ApiVersionsRequest(), 0).body.error_code == 0  # still serving
        client.close()
        assert threads and "kafkaproto-broker" not in threads
        assert len(removed_paths) == 2 and not any(os.path.exists(p) for p in removed_paths)
