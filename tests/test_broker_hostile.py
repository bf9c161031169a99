"""A hostile client against one broker: a hypothesis state machine sends random sequences of requests with
hostile values and checks, after every step, that the broker is still up, bounded and holds what it acknowledged.

The steps, against one in-process broker (small bounds: max.connections, queued.max.requests,
socket.request.max.bytes, open segment files, fetch sessions):
- Produce to the topics the machine tracks: good batches of every codec (acknowledged ones are the model),
  and batches Kafka refuses (a CRC that does not match, a record count or last offset delta that lies, codecs
  5 to 7, timestamps hours ahead, a keyless record for a compacted topic, a batch over max.message.bytes, a
  zstd bomb past the decompression cap, two batches, a base offset, magic 1, a cut batch, no data), plus
  idempotent producers that retry (a retry is answered with its first offset and not written twice) and skip
  sequence numbers, at acks -1, 1 and 0 and invalid acks;
- Fetch (random and out-of-range offsets, huge and negative byte limits, waits, read_committed, sessions) and
  ListOffsets (earliest, latest, by timestamp), each answer checked against the model;
- CreateTopics, DeleteTopics, CreatePartitions and IncrementalAlterConfigs with reserved, colliding, too long
  and misspelt names, repeated names, partition counts and replication factors out of range, config values
  out of range (DescribeConfigs then shows that the tracked topics kept theirs);
- classic groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and KIP-848 ones (ConsumerGroupHeartbeat) with
  random ids, members, generations and epochs, subscriptions of up to ~100 KiB and regexes good and bad;
  OffsetCommit and OffsetFetch, whose acknowledged commits are the model too;
- any request the broker serves, at any version, with values hypothesis makes up (tests/strategies.py);
- connections: byte streams of whole frames, garbage, unknown API keys and versions, lying size prefixes,
  frames of exactly socket.request.max.bytes and over it, cut at random places and sent in pieces, ending with
  a half-close, an abrupt close, or held open half-sent; floods past max.connections (those over it wait, and
  are served as others close); pipelines over several
  connections past queued.max.requests; clients that hang up while their fetch waits;
- a restart: the broker stops cleanly and starts again on the same directory and port.

After every step:
- the broker's thread runs, it accepts a new connection and answers ApiVersions;
- it has logged no error (a handler's exception, a connection task that failed, a housekeeping step);
- its connections, queued requests, waiting requests and fetch sessions are within their configured bounds,
  and the process within a bound of descriptors and of resident memory;
- every acknowledged record is at its offset with its key, value, headers and timestamp, and nothing else is
  in the tracked partitions (on a compacted topic: each key's latest record at least, and only acknowledged
  ones); every acknowledged commit is what OffsetFetch answers.
Each frame sent must be answered when kafkaproto decodes it into a request the broker serves (an ApiVersions
at a version it lacks: at version 0), with a response that re-encodes to the same bytes and has only known
error codes, and its connection must be closed, unanswered, otherwise (as Kafka closes it).

CI runs EXAMPLES sequences of STEPS steps (about 30 s on two cores). For a longer search:
KAFKAPROTO_HOSTILE_EXAMPLES=500 KAFKAPROTO_HOSTILE_STEPS=100 pytest -n 0 tests/test_broker_hostile.py
"""

import functools
import itertools
import logging
import os
import select
import socket
import struct
import time

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, assume, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule, \
    run_state_machine_as_test

from kafkaproto import decode_request, decode_response, encode_request, encode_response, errors, records
from kafkaproto.broker.dispatch import HANDLERS, load_handlers
from kafkaproto.connection import ProtocolError, ServerConnection
from kafkaproto.exceptions import KafkaProtoError
from kafkaproto.messages import (AlterClientQuotasRequest, ApiKey, ApiVersionsRequest, ConsumerGroupHeartbeatRequest,
                                 CreatePartitionsRequest,
                                 CreateTopicsRequest, DeleteTopicsRequest, DescribeConfigsRequest, FetchRequest,
                                 HeartbeatRequest, IncrementalAlterConfigsRequest, InitProducerIdRequest,
                                 JoinGroupRequest, LeaveGroupRequest, ListOffsetsRequest, MetadataRequest,
                                 OffsetCommitRequest, OffsetFetchRequest, ProduceRequest, RequestHeader,
                                 SaslAuthenticateRequest, SyncGroupRequest)
from kafkaproto.registry import api
from kafkaproto.uuid import Uuid

from strategies import message
from test_broker_bounds import Running

pytestmark = pytest.mark.above_the_codecs

EXAMPLES = int(os.environ.get("KAFKAPROTO_HOSTILE_EXAMPLES") or 10)
STEPS = int(os.environ.get("KAFKAPROTO_HOSTILE_STEPS") or 40)

# --- the broker's bounds, small enough for a hostile client to reach -------------------------------------------
MAX_CONNECTIONS = 24
QUEUED_MAX_REQUESTS = 8
REQUEST_MAX_BYTES = 256 * 1024
SEGMENT_FILES_MAX = 16
FETCH_SESSION_SLOTS = 20
OVERRIDES = {
    "max.connections": str(MAX_CONNECTIONS),
    "queued.max.requests": str(QUEUED_MAX_REQUESTS),
    "socket.request.max.bytes": str(REQUEST_MAX_BYTES),
    "kafkaproto.open.segment.files.max": str(SEGMENT_FILES_MAX),
    "max.incremental.fetch.session.cache.slots": str(FETCH_SESSION_SLOTS),
    "log.segment.delete.delay.ms": "0",
    "log.cleaner.backoff.ms": "200",
    "log.retention.check.interval.ms": "500",
    "offsets.retention.check.interval.ms": "1000",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "50",
    "group.max.session.timeout.ms": "5000",
    "group.consumer.session.timeout.ms": "1000",
    "group.consumer.min.session.timeout.ms": "500",
    "group.consumer.max.session.timeout.ms": "2000",
    "group.consumer.heartbeat.interval.ms": "200",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.max.heartbeat.interval.ms": "500",
    "group.consumer.regex.refresh.interval.ms": "10000",
}
# The configs of the topics whose records are tracked, set at creation so that no broker-wide change (which the
# machine makes too) turns on retention, compaction or a limit their good batches would break.
TOPIC_MAX_MESSAGE_BYTES = 64 * 1024
PINNED = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1",
          "max.message.bytes": str(TOPIC_MAX_MESSAGE_BYTES), "message.timestamp.after.max.ms": "3600000",
          "message.timestamp.before.max.ms": "9223372036854775807", "min.insync.replicas": "1",
          "compression.type": "producer", "message.timestamp.type": "CreateTime"}
PLAIN = {**PINNED, "internal.segment.bytes": "4096"}  # small segments: many files, reads that end at each
COMPACTED = {**PINNED, "cleanup.policy": "compact", "min.compaction.lag.ms": "0", "delete.retention.ms": "500",
             "segment.ms": "300", "internal.segment.bytes": "2048"}

# What alter_configs may change on a tracked topic (the model follows internal.segment.bytes).
SETTABLE = {"segment.ms", "index.interval.bytes", "file.delete.delay.ms", "max.compaction.lag.ms", "segment.bytes",
            "internal.segment.bytes"}

HELD_MAX = 6  # connections the machine keeps open half-sent or silent
ANSWER_SECONDS = 10  # no answer within this is a hang
RSS_SLACK_KIB = 320 * 1024  # resident memory may grow this much over the start of the run
FD_SLACK = 40  # descriptors beyond the sockets the machine holds and the segment files the broker may keep

# The bomb's value decompresses past the broker's cap (64 MiB) and the bounded one's stays well under it.
BOMB_BYTES = 65 << 20
BOUNDED_BOMB_BYTES = 1 << 20

load_handlers()
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
ZSTD_FROM = 7  # Produce version
NOW = lambda: int(time.time() * 1000)  # noqa: E731 (a clock, as the broker reads it)
names = itertools.count()


# --- the broker, in this process ---------------------------------------------------------------------------------

class HostileBroker:
    """A Running broker (test_broker_bounds) on one data directory and, once it has one, one port: stop() and
    start() again is a restart."""

    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.port = 0
        self.running = None

    def start(self):
        self.running = Running(None, {**OVERRIDES, "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                                      "log.dirs": str(self.log_dir)})
        self.port = self.running.port
        return self

    @property
    def server(self):
        return self.running.server

    @property
    def failure(self):
        return self.running.failure

    @property
    def alive(self):
        return self.running is not None and self.running.alive

    def on_loop(self, function):
        return self.running.on_loop(function, ANSWER_SECONDS)

    def stop(self):
        if self.running is None:
            return
        running, self.running = self.running, None
        running.close()
        assert not running._thread.is_alive(), "the broker did not stop within 30 s"
        assert not running.failure, f"the broker failed: {running.failure}"


class BrokerErrors(logging.Handler):
    """What the broker logs at ERROR and above: each is a failure of the step that caused it."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        self.seen = []

    def emit(self, record):
        self.seen.append(self.format(record))

    def take(self):
        seen, self.seen = self.seen, []
        return seen


# --- the wire ------------------------------------------------------------------------------------------------------

class Closed(Exception):
    """The broker closed the connection."""


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except ConnectionResetError as e:
            raise Closed(f"reset after {len(buf)} of {n} bytes") from e
        if not chunk:
            raise Closed(f"closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def read_frame(sock):
    return recv_exact(sock, int.from_bytes(recv_exact(sock, 4), "big"))


def closes(sock, timeout=ANSWER_SECONDS):
    """Whether the broker closes sock within timeout, sending nothing more first (raises if it sends bytes)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if not select.select([sock], [], [], left)[0]:
            return False
        try:
            data = sock.recv(1 << 16)
        except (ConnectionResetError, BrokenPipeError):
            return True
        if not data:
            return True
        raise AssertionError(f"the broker sent {len(data)} more bytes where it should have closed: {data[:64]!r}")


def frame_of(body, version, correlation_id, client_id="hostile"):
    header = RequestHeader(request_api_key=body.api_key, request_api_version=version, correlation_id=correlation_id,
                           client_id=client_id)
    return encode_request(header, body, version)


def error_codes(value):
    """Every error code in a response's to_dict() form."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key.endswith("error_code") and isinstance(item, int):
                yield item
            else:
                yield from error_codes(item)
    elif isinstance(value, list):
        for item in value:
            yield from error_codes(item)


def check_answer(raw, api_key, version, correlation_id):
    """The body of a response frame, checked: its correlation id, its bytes (the broker's own encoding: decoded
    and encoded again, the same), and its error codes (each one Kafka has)."""
    response = decode_response(raw, api_key, version)
    assert response.header.correlation_id == correlation_id, (
        f"{api(api_key).name} v{version}: correlation id {response.header.correlation_id}, sent {correlation_id}")
    again = encode_response(response.header, response.body, response.version)
    assert again[4:] == raw, f"{api(api_key).name} v{version}: the answer does not re-encode to its bytes"
    for code in error_codes(response.body.to_dict()):
        assert not errors.by_code(code).name.startswith("UNKNOWN_CODE"), (
            f"{api(api_key).name} v{version} answers error code {code}, which Kafka does not have")
    return response.body


class Client:
    """A well-behaved connection: one request, then its answer."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=ANSWER_SECONDS)
        self.correlation_id = 0

    def send(self, body, version):
        self.correlation_id += 1
        self.sock.sendall(frame_of(body, version, self.correlation_id))
        return self.correlation_id

    def receive(self, api_key, version, correlation_id):
        return check_answer(read_frame(self.sock), api_key, version, correlation_id)

    def call(self, body, version):
        return self.receive(body.api_key, version, self.send(body, version))

    def close(self):
        self.sock.close()


def answered_within(socks, seconds, ids):
    """The sockets among socks whose ApiVersions v0 (correlation id: ids[socket]) is answered within seconds."""
    answered, deadline = set(), time.monotonic() + seconds
    while len(answered) < len(socks):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        readable, _, _ = select.select([s for s in socks if s not in answered], [], [], left)
        for sock in readable:
            check_answer(read_frame(sock), ApiKey.API_VERSIONS, 0, ids[sock])
            answered.add(sock)
    return answered


def api_versions(port):
    """ApiVersions v3 on a new connection: its error code (Closed when the connection is refused)."""
    client = Client(port)
    try:
        body = ApiVersionsRequest(client_software_name="kafkaproto-hostile", client_software_version="1.0")
        return client.call(body, 3).error_code
    finally:
        client.close()


# --- what the broker must do with a frame ------------------------------------------------------------------------

def served(api_key, version):
    handler = HANDLERS.get(api_key)
    return handler is not None and handler.enabled is None and version in handler.versions


ANSWER, ANSWER_V0, SILENT, CLOSE = "answer", "answer at v0", "silent", "close"


def fate(frame):
    """(what the broker must do with a frame's payload, api key, version, correlation id): ANSWER a request it
    decodes and serves, ANSWER_V0 an ApiVersions at a version it lacks (KIP-511), SILENT a Produce with acks=0
    (no answer; Kafka closes the connection when one fails), CLOSE anything else."""
    try:
        request = decode_request(frame, True)  # bytes after the body are ignored, as Kafka ignores them
    except KafkaProtoError:
        try:
            ServerConnection(max_frame=REQUEST_MAX_BYTES).receive_frame(frame)
        except ProtocolError as e:
            if e.header is not None:
                return ANSWER_V0, ApiKey.API_VERSIONS, 0, e.header.correlation_id
        return CLOSE, None, None, None
    header = request.header
    key, version = header.request_api_key, header.request_api_version
    if not served(key, version):
        if key == ApiKey.API_VERSIONS:
            return ANSWER_V0, key, 0, header.correlation_id
        return CLOSE, key, version, header.correlation_id
    if key == ApiKey.PRODUCE and request.body.acks == 0:
        return SILENT, key, version, header.correlation_id
    if unreadable_acls(key, request.body):
        return CLOSE, key, version, header.correlation_id
    return ANSWER, key, version, header.correlation_id


def unreadable_acls(key, body):
    """Whether an ACL request names UNKNOWN (0) as a resource type, pattern type, operation or permission type:
    Kafka cannot make an ACL binding or filter of it, and closes the connection."""
    if key == ApiKey.CREATE_ACLS:
        return any(0 in (c.resource_type, c.resource_pattern_type, c.operation, c.permission_type)
                   for c in body.creations)
    filters = [body] if key == ApiKey.DESCRIBE_ACLS else body.filters if key == ApiKey.DELETE_ACLS else []
    return any(0 in (f.resource_type_filter, f.pattern_type_filter, f.operation, f.permission_type)
               for f in filters)


def expected(stream):
    """What the broker must do with a byte stream: ([fate of each whole frame up to the first that closes the
    connection], how the stream ends: BAD_FRAME (a frame that closes it), BAD_PREFIX (a size prefix over
    socket.request.max.bytes or negative: Kafka closes the connection before reading further), CUT (bytes that
    do not make a whole frame) or WHOLE)."""
    fates = []
    position = 0
    while True:
        if len(stream) - position < 4:
            return fates, WHOLE if position == len(stream) else CUT
        size = int.from_bytes(stream[position:position + 4], "big", signed=True)
        if size < 0 or size > REQUEST_MAX_BYTES:
            return fates, BAD_PREFIX
        if len(stream) - position - 4 < size:
            return fates, CUT
        what = fate(stream[position + 4:position + 4 + size])
        if what[0] == CLOSE:
            return fates, BAD_FRAME
        fates.append(what)
        position += 4 + size


WHOLE, CUT, BAD_FRAME, BAD_PREFIX = "whole", "cut", "a frame that closes", "a size prefix that closes"
# The broker reads a size prefix it must close the connection on with the frames before it, in one read, and
# leaves the connection open until more bytes come (test_a_bad_size_prefix_after_a_frame_closes_the_connection).
# While that is so, a stream that ends so is given one more byte, and must be closed then.
LATE_PREFIX_CHECK = True


# --- record batches ------------------------------------------------------------------------------------------------

def with_crc(raw):
    raw = bytearray(raw)
    raw[17:21] = struct.pack(">I", crc32c(bytes(raw[21:])))
    return bytes(raw)


def patched(raw, offset, fmt, value):
    """A batch with one header field changed and its CRC made right again."""
    raw = bytearray(raw)
    struct.pack_into(fmt, raw, offset, value)
    return with_crc(raw)


def build(recs, codec="none", **options):
    builder = records.RecordBatchBuilder(compression=codec, **options)
    for key, value, headers, timestamp in recs:
        builder.append(key, value, headers=headers, timestamp=timestamp)
    return builder.build()


@functools.lru_cache(maxsize=None)
def bomb(size):
    """A zstd batch of one record whose value is size zero bytes."""
    return build([(b"bomb", bytes(size), (), NOW())], "zstd")


class Rec:
    """A record as the model keeps it."""

    __slots__ = ("offset", "key", "value", "headers", "timestamp")

    def __init__(self, offset, key, value, headers, timestamp):
        self.offset, self.key, self.value, self.headers, self.timestamp = offset, key, value, headers, timestamp

    def same(self, record):
        return (record.offset, record.key, record.value, tuple(record.headers), record.timestamp) == (
            self.offset, self.key, self.value, tuple(self.headers), self.timestamp)

    def __repr__(self):
        value = self.value if self.value is None or len(self.value) < 40 else f"<{len(self.value)} bytes>"
        return f"Rec({self.offset}, {self.key!r}, {value!r}, {self.headers!r}, {self.timestamp})"


class Tracked:
    """A topic whose records the model keeps: [records by offset] per partition."""

    def __init__(self, name, topic_id, partitions, compacted, segment):
        self.name, self.topic_id, self.compacted = name, topic_id, compacted
        self.partitions = [[] for _ in range(partitions)]
        self.segment = segment  # bytes: no append may be larger (Kafka's RECORD_LIST_TOO_LARGE)

    def end(self, partition):
        return len(self.partitions[partition])

    def append(self, partition, good):
        """An acknowledged batch's records, at the end of the partition's log."""
        end = self.end(partition)
        self.partitions[partition].extend(Rec(end + i, k, v, h, t) for i, (k, v, h, t) in enumerate(good))

    def check(self, partition, data, start=0, whole=True):
        """The records a Fetch from start answered for partition (data: its records field), against the model: in
        order and equal from start; all of them if whole. A compacted topic's log may have lost older records
        of a key, and a tombstone once delete.retention.ms is past."""
        model = self.partitions[partition]
        got = []
        for batch in records.iter_batches(data or b""):
            got += [r for r in batch if r.offset >= start and (not got or r.offset > got[-1].offset)]
        where = f"{self.name}-{partition} from {start}"
        if not self.compacted:
            for mine, theirs in zip(model[start:], got):
                assert mine.same(theirs), f"{where}: at offset {mine.offset} the log has {theirs}, acknowledged {mine}"
            assert len(got) <= len(model) - start, f"{where}: records past the acknowledged ones: {got[len(model):]}"
            if whole:
                assert len(got) == len(model) - start, (
                    f"{where}: {len(got)} records read back, {len(model) - start} acknowledged")
            return
        offsets = [r.offset for r in got]
        assert offsets == sorted(set(offsets)), f"{where}: offsets out of order or repeated: {offsets}"
        for theirs in got:
            assert theirs.offset < len(model), f"{where}: a record past the acknowledged ones: {theirs}"
            assert model[theirs.offset].same(theirs), (
                f"{where}: at offset {theirs.offset} the log has {theirs}, acknowledged {model[theirs.offset]}")
        if whole:
            latest = {}
            for mine in model[start:]:
                latest[mine.key] = mine
            present = set(offsets)
            for mine in latest.values():
                assert mine.value is None or mine.offset in present, (
                    f"{where}: the latest record of key {mine.key!r} is gone: {mine}")


# --- strategies ----------------------------------------------------------------------------------------------------
# A rule's draws never depend on the broker's answers or on the machine's state, only on earlier draws: hypothesis
# replays a sequence by its draws, and the broker (one for the module) is not the same at each replay. A choice
# among things the state holds is an index into them (``choose``).

key_bytes = st.binary(max_size=6)
small_values = st.one_of(st.none(), st.binary(max_size=48))
headers = st.lists(st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=8))), max_size=2)
hostile_ints = st.sampled_from([0, -1, -2, 1, 2**31 - 1, -2**31, 2**15, 10_001])
hostile_longs = st.sampled_from([0, -1, -2, 2**63 - 1, -2**63, 2**31, 1 << 40])
indexes = st.integers(0, 2**16 - 1)
RESERVED = ["__cluster_metadata", "__consumer_offsets", "__transaction_state", "__consumer.offsets",
            "__transaction.state"]
BAD_NAMES = ["", ".", "..", "a" * 250, "a/b", "a b", "é", "a\x00b", "topic!", "-" * 249 + "x"]
REGEXES = ["", ".*", "hx.*", "(", "[", "a{1000000}", "(a+)+$", "(?P<x>a)", "\\", "x" * 5000, "(?i)HX.*",
           "[[:alpha:]]+", "\\p{Greek}", "a**", "(?=x)", "a" * 300 + "|" + "b" * 300]


@st.composite
def record_specs(draw):
    """(key, whether it is null, value, headers, how long ago) of the records of a good batch."""
    return [(draw(key_bytes), draw(st.booleans()), draw(small_values), tuple(draw(headers)),
             draw(st.integers(0, 10**9))) for _ in range(draw(st.integers(1, 4)))]


def good_records(specs, compacted, now):
    """(key, value, headers, timestamp) from record_specs: a compacted topic's records all have keys."""
    return [(key if compacted or not null else None, value, headers_, now - ago)
            for key, null, value, headers_, ago in specs]


def pick(data, options, label=None):
    """One of a constant list of options."""
    return data.draw(st.sampled_from(options), label=label)


def choose(data, options, label=None):
    """One of options, a list the machine's state holds (None when it is empty)."""
    i = data.draw(indexes, label=label)
    return options[i % len(options)] if options else None


def position(data, end, label=None):
    """An offset of a log that ends at end: its start, its end, or one between."""
    where, i = data.draw(st.tuples(st.sampled_from(["start", "end", "inside", "inside"]), indexes), label=label)
    return {"start": 0, "end": end}.get(where, i % (end + 1))


# --- the machine ---------------------------------------------------------------------------------------------------

class HostileClients(RuleBasedStateMachine):
    broker = None  # the module's HostileBroker and its BrokerErrors, set by the test
    errors = None
    limits = None  # {"fds": ..., "rss": ...}: the baselines the process is held to

    def __init__(self):
        super().__init__()
        self.run = next(names)
        self.topics = {}  # name -> Tracked, in the order made
        self.decoys = {}  # topics this machine made whose records are not tracked (a dict: ordered)
        self.commits = {}  # group -> {(topic, partition): (offset, metadata)}
        # idempotent producers: [producer id, epoch, {(topic, partition): (next sequence, last batch, its records,
        # its base offset)}]
        self.producers = []
        self.members = {}  # classic group -> [(member id, generation)] the broker gave out
        self.consumers = {}  # KIP-848 group -> {member id: epoch}
        self.held = []  # (socket, bytes still to send, the fates of the frames those bytes complete)
        self.client = None
        self.restarts = 0
        self.steps = 0
        self.errors.take()  # what the broker logged after the last sequence failed: that failure's

    # --- helpers ---

    @property
    def port(self):
        return self.broker.port

    def connect(self):
        if self.client is None:
            self.client = Client(self.port)
        return self.client

    def call(self, body, version):
        try:
            return self.connect().call(body, version)
        except (Closed, OSError):
            self.drop_client()
            raise

    def drop_client(self):
        if self.client is not None:
            self.client.close()
            self.client = None

    def name(self, what):
        return f"hx{self.run}-{what}-{next(names)}"

    def tracked(self, data, label="topic"):
        return choose(data, list(self.topics.values()), label)

    def create_tracked(self, partitions, compacted):
        name = self.name("c" if compacted else "t")
        configs = COMPACTED if compacted else PLAIN
        body = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=1,
            configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])],
            timeout_ms=10000)
        (topic,) = self.call(body, 7).topics
        assert topic.error_code == 0, f"{name}: {errors.by_code(topic.error_code).name} {topic.error_message}"
        self.topics[name] = Tracked(name, topic.topic_id, partitions, compacted,
                                    int(configs["internal.segment.bytes"]))
        return self.topics[name]

    def forget(self, name):
        """A topic was deleted: its records, commits and sequences are no longer the model's."""
        self.topics.pop(name, None)
        self.decoys.pop(name, None)
        for offsets in self.commits.values():
            for key in [k for k in offsets if k[0] == name]:
                del offsets[key]
        for producer in self.producers:
            for key in [k for k in producer[2] if k[0] == name]:
                del producer[2][key]

    def all_names(self):
        return list(self.topics) + list(self.decoys)

    @initialize()
    def setup(self):
        self.create_tracked(3, compacted=False)
        self.create_tracked(2, compacted=True)

    def teardown(self):
        for sock, _, _ in self.held:
            sock.close()
        self.held = []
        try:
            names_ = self.all_names()
            if names_ and self.broker.alive:
                self.call(DeleteTopicsRequest(topic_names=names_, timeout_ms=10000), 5)
        finally:
            self.drop_client()
        logged = self.errors.take()
        assert not logged, "the broker logged errors:\n" + "\n".join(logged)

    @precondition(lambda self: len(self.topics) < 4)
    @rule(compacted=st.booleans(), partitions=st.integers(1, 3))
    def track_topic(self, compacted, partitions):
        self.create_tracked(partitions, compacted)

    # --- Produce ---

    BATCH_KINDS = ["good", "good", "good", "bad crc", "count lies", "last delta lies", "codec", "future",
                   "oversize", "two batches", "base offset", "magic 1", "cut", "empty", "null", "transactional",
                   "tail", "bomb", "bounded bomb", "bad partition", "keyless", "tombstone", "idempotent"]

    def part(self, data, topic, version, acks, now):
        """(kind, partition index, records field, what the broker must do with it, the records it holds if
        good)."""
        kind, codec, index, specs, more, n = data.draw(st.tuples(
            st.sampled_from(self.BATCH_KINDS), st.sampled_from(CODECS), indexes, record_specs(), record_specs(),
            indexes), label="batch")
        if kind in ("keyless", "tombstone") and not topic.compacted or kind == "idempotent" and acks == 0:
            kind = "good"
        index %= len(topic.partitions)
        good = good_records(specs, topic.compacted, now)
        if kind in ("good", "tail", "tombstone", "idempotent", "bounded bomb"):
            fate_ = "good"
            options = {}
            if kind == "tombstone":
                good = [(good[0][0], None, (), now)]
            elif kind == "bounded bomb":
                codec = CODECS[1 + n % 4]
                good = [(b"big", bytes(BOUNDED_BOMB_BYTES), (), now)]
            elif kind == "idempotent":
                options = dict(producer_id=1 + n * 7919 + self.run * 104729, producer_epoch=n % 5,
                               base_sequence=n % 3 * 1000)
                fate_ = "either"  # an unknown producer's batch: Kafka takes it (KIP-360)
            raw = build(good, codec, **options)
            if codec == "zstd" and version < ZSTD_FROM or len(raw) > topic.segment:
                fate_ = "refused"  # zstd before v7; RECORD_LIST_TOO_LARGE
            if kind == "tail":
                raw += bytes(1 + n % 11)  # under a batch's offset and length: dropped, as Kafka drops it
            return kind, index, raw, fate_, good
        raw = build(good, codec)
        if kind == "bad crc":
            flip = 21 + n % (len(raw) - 21)
            raw = raw[:flip] + bytes([raw[flip] ^ (1 << n % 8)]) + raw[flip + 1:]
        elif kind == "count lies":
            raw = patched(raw, 57, ">i", len(good) + [-1, 1, 1000, -1000, 2**31 - 1 - len(good)][n % 5])
        elif kind == "last delta lies":
            raw = patched(raw, 23, ">i", len(good) - 1 + [-1, 1, 2**20][n % 3])
        elif kind == "codec":
            attributes = struct.unpack_from(">h", raw, 21)[0]
            raw = patched(raw, 21, ">h", (attributes & ~7) | 5 + n % 3)
        elif kind == "future":
            ahead = [2 * 3600 * 1000 + n * 1000, 10**12, 2**63 - 1 - now][n % 3]
            raw = build([(k, v, h, now + ahead) for k, v, h, _ in good], codec)
        elif kind == "oversize":
            raw = build([(b"k", b"\x5a" * (TOPIC_MAX_MESSAGE_BYTES + 1 + n), (), now)])
        elif kind == "two batches":
            raw = raw + build(good_records(more, topic.compacted, now), codec)
        elif kind == "base offset":
            raw = patched(raw, 0, ">q", [1, 5, -1, 2**40][n % 4])
        elif kind == "magic 1":
            raw = build([(k or b"k", v, (), now) for k, v, _, _ in good], magic=1)
        elif kind == "cut":
            raw = raw[:1 + n % (len(raw) - 1)]
        elif kind == "empty":
            raw = b""
        elif kind == "null":
            raw = None
        elif kind == "transactional":
            raw = build(good, codec, producer_id=n, producer_epoch=0, base_sequence=0, transactional=True)
        elif kind == "bomb":
            raw = bomb(BOMB_BYTES)
        elif kind == "keyless":
            raw = build([(None, v, h, t) for _, v, h, t in good], codec)
        elif kind == "bad partition":
            index = [len(topic.partitions), len(topic.partitions) + 7, -1, 2**31 - 1][n % 4]
        return kind, index, raw, "refused", None

    @rule(data=st.data())
    def produce(self, data):
        """A Produce of one to three partitions' batches, good and bad: the good ones acknowledged at the end of
        their log (the model takes them), the bad ones refused."""
        now = NOW()
        version = data.draw(st.integers(3, 13), label="version")
        acks = pick(data, [-1, -1, 1, 0, 2, -2, 5], "acks")
        chosen, kinds = [], []
        for _ in range(data.draw(st.integers(1, 3), label="parts")):
            topic = self.tracked(data)
            kind, index, raw, fate_, good = self.part(data, topic, version, acks, now)
            if (topic.name, index) not in {(t.name, i) for t, i, _, _, _ in chosen}:
                chosen.append((topic, index, raw, fate_, good))
                kinds.append(kind)
        # Before v7 Kafka reads each batch's codec as it parses the request: one it does not know fails it whole.
        whole_request_refused = acks not in (-1, 0, 1) or version < ZSTD_FROM and any(
            kind == "codec" and 0 <= index < len(topic.partitions)
            for kind, (topic, index, _, _, _) in zip(kinds, chosen))
        # A transactional batch in a request without a transactional id: Kafka refuses the request whole
        # (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), whichever partition it is for.
        whole_request_refused = whole_request_refused or "transactional" in kinds
        by_topic = {}
        for topic, index, raw, _, _ in chosen:
            by_topic.setdefault(topic.name, (topic, []))[1].append(
                ProduceRequest.PartitionProduceData(index=index, records=raw))
        body = ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
            name="" if version >= 13 else topic.name, topic_id=topic.topic_id if version >= 13 else Uuid.ZERO,
            partition_data=parts) for topic, parts in by_topic.values()])
        note(f"Produce v{version} acks={acks}: " + ", ".join(
            f"{t.name}-{i} {k} ({f}, {None if r is None else len(r)} bytes)"
            for k, (t, i, r, f, _) in zip(kinds, chosen)))
        if acks == 0:
            self.produce_unanswered(body, version, chosen, whole_request_refused)
            return
        answer = self.call(body, version)
        results = {(t.name if version < 13 else str(t.topic_id), p.index): p
                   for t in answer.responses for p in t.partition_responses}
        for kind, (topic, index, _, fate_, good) in zip(kinds, chosen):
            result = results.pop((topic.name if version < 13 else str(topic.topic_id), index))
            error = errors.by_code(result.error_code).name
            where = f"Produce v{version} acks={acks} to {topic.name}-{index}, {kind}"
            if whole_request_refused or fate_ == "refused":
                assert result.error_code != 0, f"{where}: acknowledged at {result.base_offset}; Kafka refuses it"
                continue
            if fate_ == "good":
                assert result.error_code == 0, f"{where}: {error} {result.error_message}"
            if result.error_code == 0:
                end = topic.end(index)
                assert result.base_offset == end, f"{where}: acknowledged at {result.base_offset}, log end {end}"
                if version >= 5:
                    assert result.log_start_offset == 0, f"{where}: log start {result.log_start_offset}"
                topic.append(index, good)
        assert not results, f"answers for partitions not asked: {sorted(results)}"

    def produce_unanswered(self, body, version, chosen, refused):
        """acks=0: no answer. As Kafka, the broker appends the good batches and closes the connection when any
        partition failed (the one way to tell the producer); else an ApiVersions on it is answered."""
        client = self.connect()
        client.send(body, version)
        failed = refused or any(f != "good" for _, _, _, f, _ in chosen)
        try:
            probe = client.call(ApiVersionsRequest(), 0)
        except (Closed, OSError):
            self.drop_client()
            assert failed, "the connection was closed after an acks=0 Produce of good batches only"
        else:
            assert probe.error_code == 0
            assert not failed, "the connection stayed open after an acks=0 Produce that failed"
        if not refused:
            for topic, index, _, fate_, good in chosen:
                if fate_ == "good":
                    topic.append(index, good)

    @rule(data=st.data())
    def idempotent_producer(self, data):
        """An idempotent producer's batches: in sequence (acknowledged), retried (answered with the first offset,
        not written again), or past a gap (OUT_OF_ORDER_SEQUENCE_NUMBER)."""
        new, which, what, gap, specs, codec = data.draw(st.tuples(
            st.booleans(), indexes, st.sampled_from(["next", "next", "retry", "gap"]), st.integers(1, 5),
            record_specs(), st.sampled_from(CODECS[:4])), label="idempotent")
        topic = self.tracked(data)
        index = data.draw(indexes, label="partition") % len(topic.partitions)
        if new or not self.producers:
            answer = self.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000,
                                                     producer_id=-1, producer_epoch=-1), 4)
            assert answer.error_code == 0, errors.by_code(answer.error_code).name
            self.producers.append([answer.producer_id, answer.producer_epoch, {}])
        pid, epoch, sequences = self.producers[which % len(self.producers)]
        next_sequence, last, last_recs, last_offset = sequences.get((topic.name, index), (0, None, None, None))
        if last is None and what == "retry":
            what = "next"
        sequence = next_sequence + (gap if what == "gap" else 0)
        if what == "retry":
            raw, good = last, last_recs
        else:
            good = good_records(specs, topic.compacted, NOW())
            raw = build(good, codec, producer_id=pid, producer_epoch=epoch, base_sequence=sequence)
        if what == "gap" and last is None:
            what = "first"  # a producer's first batch to a partition may start anywhere, as in Kafka
        body = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
            name=topic.name, partition_data=[ProduceRequest.PartitionProduceData(index=index, records=raw)])])
        result = self.call(body, 9).responses[0].partition_responses[0]
        where = f"idempotent producer {pid} ({what}) to {topic.name}-{index}"
        error = errors.by_code(result.error_code).name
        if len(raw) > topic.segment:
            assert result.error_code == errors.RECORD_LIST_TOO_LARGE.code, f"{where}: {error}"
        elif what == "gap":
            assert result.error_code == errors.OUT_OF_ORDER_SEQUENCE_NUMBER.code, f"{where}: {error}"
        elif what == "retry":
            assert result.error_code == 0 and result.base_offset == last_offset, (
                f"{where}: {error} at {result.base_offset}, first acknowledged at {last_offset}")
        else:
            end = topic.end(index)
            assert result.error_code == 0 and result.base_offset == end, f"{where}: {error} at {result.base_offset}"
            topic.append(index, good)
            sequences[(topic.name, index)] = (sequence + len(good), raw, good, end)

    # --- Fetch and ListOffsets ---

    @rule(data=st.data())
    def fetch(self, data):
        """A sessionless Fetch of tracked partitions from random offsets (in and out of range) with random
        limits, plus unknown topics and partitions: each tracked partition answered as the model says."""
        version = data.draw(st.integers(4, 18), label="version")
        by_id = version >= 13
        wanted = {}
        for _ in range(data.draw(st.integers(1, 4), label="partitions")):
            topic = self.tracked(data)
            index = data.draw(indexes, label="partition") % len(topic.partitions)
            end = topic.end(index)
            offset = data.draw(st.one_of(st.just(None), st.sampled_from([-1, 1, 2**63 - 1, -2**63])), label="offset")
            offset = position(data, end) if offset is None else (end + 1 if offset == 1 else offset)
            most = data.draw(st.one_of(st.integers(-1, 1 << 16), st.sampled_from([2**31 - 1, -2**31, 0])),
                             label="partition max bytes")
            wanted[(topic.name, index)] = (topic, offset, most)
        strange = data.draw(st.lists(st.tuples(st.sampled_from(["unknown topic", "bad partition"]),
                                               st.integers(-5, 2**31 - 1), indexes), max_size=2), label="strange")
        topics = {}
        for (name, index), (topic, offset, most) in wanted.items():
            topics.setdefault(name, (topic, []))[1].append(
                FetchRequest.FetchPartition(partition=index, fetch_offset=offset, partition_max_bytes=most))
        extra = []
        for kind, index, which in strange:
            if kind == "unknown topic":
                extra.append(FetchRequest.FetchTopic(topic=self.name("missing"), topic_id=Uuid.random(),
                                                     partitions=[FetchRequest.FetchPartition(partition=index)]))
            else:
                topic = list(self.topics.values())[which % len(self.topics)]
                if not 0 <= index < len(topic.partitions) and (topic.name, index) not in wanted:
                    topics.setdefault(topic.name, (topic, []))[1].append(
                        FetchRequest.FetchPartition(partition=index, fetch_offset=0, partition_max_bytes=1024))
        body = FetchRequest(
            replica_id=-1, max_wait_ms=pick(data, [0, 0, 1, 50, -1], "max wait"),
            min_bytes=pick(data, [0, 1, 1 << 20, -1], "min bytes"),
            max_bytes=pick(data, [2**31 - 1, 1 << 20, 1, 0, -1], "max bytes"),
            isolation_level=pick(data, [0, 1], "isolation"), session_id=0, session_epoch=-1,
            topics=[FetchRequest.FetchTopic(topic="" if by_id else topic.name,
                                            topic_id=topic.topic_id if by_id else Uuid.ZERO, partitions=parts)
                    for topic, parts in topics.values()] + extra)
        answer = self.call(body, version)
        assert answer.error_code == 0, errors.by_code(answer.error_code).name
        by_key = {t.topic_id if by_id else t.topic: t for t in answer.responses}
        for (name, index), (topic, offset, _) in wanted.items():
            response = by_key[topic.topic_id if by_id else name]
            (partition,) = [p for p in response.partitions if p.partition_index == index]
            end = topic.end(index)
            where = f"Fetch v{version} of {name}-{index} at {offset}"
            if not 0 <= offset <= end:
                assert partition.error_code == errors.OFFSET_OUT_OF_RANGE.code, (
                    f"{where} (log 0..{end}): {errors.by_code(partition.error_code).name}")
                continue
            assert partition.error_code == 0, f"{where}: {errors.by_code(partition.error_code).name}"
            assert partition.high_watermark == end, f"{where}: high watermark {partition.high_watermark}, log end {end}"
            assert version < 5 or partition.log_start_offset == 0, f"{where}: log start {partition.log_start_offset}"
            topic.check(index, partition.records, offset, whole=False)

    @rule(data=st.data())
    def fetch_session(self, data):
        """Open a fetch session on a topic's partitions, then go on with it (moving and forgetting partitions),
        close it, or use an epoch or id that is not the broker's: each partition answered from where the
        session has it."""
        version = data.draw(st.integers(7, 18), label="version")
        what = pick(data, ["go on", "go on", "wrong epoch", "unknown session", "close"], "what")
        wrong_epoch = pick(data, [0 + 5, 2**31 - 1, -2], "wrong epoch")
        starts = data.draw(st.lists(st.tuples(st.sampled_from(["start", "end", "inside"]), indexes), min_size=8,
                                    max_size=8), label="positions")
        moves = data.draw(st.lists(st.tuples(st.sampled_from(["stay", "move", "forget"]), indexes), min_size=8,
                                   max_size=8), label="moves")
        topic = self.tracked(data)
        by_id = version >= 13

        def at(where_, i, partition):
            return {"start": 0, "end": topic.end(partition)}.get(where_, i % (topic.end(partition) + 1))

        def request(session_id, epoch, offsets, forgotten=()):
            return FetchRequest(
                replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 24, isolation_level=0,
                session_id=session_id, session_epoch=epoch,
                topics=[FetchRequest.FetchTopic(topic="" if by_id else topic.name,
                                                topic_id=topic.topic_id if by_id else Uuid.ZERO,
                                                partitions=[FetchRequest.FetchPartition(
                                                    partition=i, fetch_offset=o, partition_max_bytes=1 << 20)
                                                    for i, o in offsets.items()])] if offsets else [],
                forgotten_topics_data=[FetchRequest.ForgottenTopic(
                    topic="" if by_id else topic.name, topic_id=topic.topic_id if by_id else Uuid.ZERO,
                    partitions=list(forgotten))] if forgotten else [])

        def check(answer, positions):
            for response in answer.responses:
                for p in response.partitions:
                    assert p.partition_index in positions, f"the session answered partition {p.partition_index}"
                    assert p.error_code == 0, errors.by_code(p.error_code).name
                    topic.check(p.partition_index, p.records, positions[p.partition_index], whole=False)

        positions = {i: at(*starts[i % 8], i) for i in range(len(topic.partitions))}
        opened = self.call(request(0, 0, positions), version)
        assert opened.error_code == 0, errors.by_code(opened.error_code).name
        check(opened, positions)
        if opened.session_id == 0:
            return  # no room for it: answered without one, as Kafka does
        if what == "wrong epoch":
            answer = self.call(request(opened.session_id, wrong_epoch, {}), version)
            assert answer.error_code == errors.INVALID_FETCH_SESSION_EPOCH.code, answer.error_code
        elif what == "unknown session":
            answer = self.call(request(opened.session_id ^ 0x5A5A5A5A or 1, 1, {}), version)
            assert answer.error_code == errors.FETCH_SESSION_ID_NOT_FOUND.code, answer.error_code
        elif what == "close":
            assert self.call(request(opened.session_id, -1, {}), version).error_code == 0
        else:
            moved = {i: at(move[0] == "move" and "inside" or "end", move[1], i)
                     for i, move in ((i, moves[i % 8]) for i in positions) if move[0] == "move"}
            forgotten = [i for i in positions if moves[i % 8][0] == "forget"]
            positions.update(moved)
            for i in forgotten:
                positions.pop(i)
            answer = self.call(request(opened.session_id, 1, moved, forgotten), version)
            assert answer.error_code == 0, errors.by_code(answer.error_code).name
            check(answer, positions)

    @rule(data=st.data())
    def list_offsets(self, data):
        """ListOffsets of a tracked topic's partitions: latest is the log's end, earliest 0, max timestamp within
        the log, and by timestamp the first record at or after it."""
        version = data.draw(st.integers(1, 11), label="version")
        asks = data.draw(st.lists(st.one_of(st.none(), st.sampled_from([-1, -2, -3]), st.integers(0, 2 * 10**9)),
                                  min_size=8, max_size=8), label="timestamps")
        isolation = data.draw(st.integers(0, 1), label="isolation")
        topic = self.tracked(data)
        now = NOW()
        asked = {}
        for index in range(len(topic.partitions)):
            t = asks[index % 8]
            if t is not None and not (t == -3 and version < 7):
                # by timestamp: around the records' (which are up to 10**9 ms old)
                asked[index] = t if t < 0 else now - 10**9 - 1000 + t
        if not asked:
            return
        body = ListOffsetsRequest(replica_id=-1, isolation_level=isolation if version >= 2 else 0, timeout_ms=1000,
                                  topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic.name, partitions=[
                                      ListOffsetsRequest.ListOffsetsPartition(partition_index=i, timestamp=t)
                                      for i, t in asked.items()])])
        answer = self.call(body, version)
        for p in answer.topics[0].partitions:
            model = topic.partitions[p.partition_index]
            t = asked[p.partition_index]
            where = f"ListOffsets v{version} {topic.name}-{p.partition_index} at {t}"
            assert p.error_code == 0, f"{where}: {errors.by_code(p.error_code).name}"
            if t == -1:
                assert p.offset == len(model), f"{where}: {p.offset}, the log ends at {len(model)}"
            elif t == -2:
                assert p.offset == 0, f"{where}: {p.offset}"
            elif t == -3:
                assert (p.offset == -1) if not model else 0 <= p.offset < len(model), f"{where}: {p.offset}"
            elif not topic.compacted:
                first = next((r.offset for r in model if r.timestamp >= t), -1)
                assert p.offset == first, f"{where}: {p.offset}, the first record at or after it is {first}"

    # --- topics ---

    @rule(data=st.data())
    def create_topics(self, data):
        """Topics with reserved, bad, colliding or repeated names, bad counts, factors, assignments and configs:
        refused (and not made); the good ones made (Metadata then knows them)."""
        drawn = data.draw(st.lists(st.tuples(
            st.sampled_from(["good", "reserved", "bad name", "collides", "exists", "partitions", "factor",
                             "config", "assignment"]),
            st.integers(1, 3), indexes, st.booleans(), st.booleans()), min_size=1, max_size=4), label="topics")
        validate_only = data.draw(st.booleans(), label="validate only")
        version = data.draw(st.integers(2, 7), label="version")
        existing = self.all_names()
        dotted = [n for n in existing if "." in n]
        specs = []
        for kind, partitions, n, dots, default in drawn:
            topic = CreateTopicsRequest.CreatableTopic(name=self.name("d"), num_partitions=partitions,
                                                       replication_factor=1, assignments=[], configs=[])
            if kind == "reserved":
                topic.name = RESERVED[n % len(RESERVED)]
            elif kind == "bad name":
                topic.name = BAD_NAMES[n % len(BAD_NAMES)]
            elif kind == "exists" and existing:
                topic.name = existing[n % len(existing)]
            elif kind == "collides" and dotted:
                # another topic's name once '.' and '_' are taken as alike
                topic.name = dotted[n % len(dotted)].replace(".", "_", 1)
            elif kind == "partitions":
                topic.num_partitions = [0, -2, -2**31, 10_001, 2**31 - 1][n % 5]
            elif kind == "factor":
                topic.replication_factor = [0, -2, 2, 3, 2**15 - 1][n % 5]
            elif kind == "config":
                name, value = [("retention.ms", "-2"), ("segment.bytes", "abc"), ("cleanup.policy", "x"),
                               ("max.message.bytes", "-1"), ("no.such.config", "1"), ("min.insync.replicas", "0"),
                               ("segment.ms", "0"), ("retention.ms", "9223372036854775808"),
                               ("compression.type", "brotli"), ("message.timestamp.type", "Later"),
                               ("retention.bytes", "")][n % 11]
                topic.configs = [CreateTopicsRequest.CreatableTopicConfig(name=name, value=value)]
            elif kind == "assignment":
                topic.num_partitions = topic.replication_factor = -1
                topic.assignments = [CreateTopicsRequest.CreatableReplicaAssignment(
                    partition_index=[0, 1, -1][n % 3], broker_ids=[[], [7], [1, 1], [-1]][n % 4])]
            else:
                kind = "good"
                if dots:
                    topic.name = topic.name.replace("-", ".")  # for a later one to collide with
                if default:
                    topic.num_partitions = -1  # the broker's default
            specs.append((kind, topic))
        validate_only = validate_only or any(t.num_partitions > 10_000 for _, t in specs)
        note(f"CreateTopics v{version} validate_only={validate_only}: {specs}")
        answer = self.call(CreateTopicsRequest(timeout_ms=10000, validate_only=validate_only,
                                               topics=[t for _, t in specs]), version)
        asked = [t.name for _, t in specs]
        repeated = {n for n in asked if asked.count(n) > 1}
        made = []
        results = {r.name: r for r in answer.topics}  # Kafka answers in an order of its own, a name once
        assert sorted(results) == sorted(set(asked)), f"CreateTopics answered {sorted(results)} for {asked}"
        for kind, topic in specs:
            result = results[topic.name]
            code = errors.by_code(result.error_code).name
            where = f"CreateTopics v{version} of {kind} topic {topic.name!r}"
            if kind != "good" or topic.name in repeated:
                assert result.error_code != 0, f"{where}: answered NONE"
            else:
                assert result.error_code == 0 or code == "POLICY_VIOLATION", f"{where}: {code} {result.error_message}"
            if result.error_code == 0 and not validate_only and topic.name not in made:
                made.append(topic.name)
                self.decoys[topic.name] = True
        looked = sorted(set(made) | (repeated - set(existing)))
        if looked:
            found = self.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in looked],
                                              allow_auto_topic_creation=False), 12)
            for topic in found.topics:
                if topic.name in made:
                    assert topic.error_code == 0, f"{topic.name} was answered as made; Metadata does not know it"
                else:
                    assert topic.error_code != 0, f"{topic.name}, named twice in one CreateTopics, was made"

    @rule(data=st.data())
    def delete_topics(self, data):
        """DeleteTopics of tracked topics (by name or id: deleted, and no longer tracked), made-up ones, reserved
        and bad names, random ids, null names: those that do not exist are refused."""
        version = data.draw(st.integers(1, 6), label="version")
        drawn = data.draw(st.lists(st.tuples(st.sampled_from(
            ["tracked", "decoy", "reserved", "missing", "bad name", "by id", "random id", "null"]), indexes),
            min_size=1, max_size=3), label="topics")
        entries = []
        deletable = len(self.topics) - 1  # the machine keeps a topic to write to
        for kind, n in drawn:
            if version < 6 and kind in ("by id", "random id", "null"):
                kind = "missing"
            if kind in ("tracked", "by id"):
                topic = list(self.topics.values())[n % len(self.topics)]
                if deletable <= 0 or any(name == topic.name for _, name, _ in entries):
                    continue
                deletable -= 1
                entries.append((kind, topic.name, topic.topic_id if kind == "by id" else None))
            elif kind == "decoy":
                if self.decoys:
                    entries.append((kind, list(self.decoys)[n % len(self.decoys)], None))
            elif kind == "reserved":
                entries.append((kind, RESERVED[n % 3], None))
            elif kind == "missing":
                entries.append((kind, self.name("missing"), None))
            elif kind == "bad name":
                entries.append((kind, BAD_NAMES[n % len(BAD_NAMES)], None))
            elif kind == "random id":
                entries.append((kind, None, Uuid.random()))
            else:
                entries.append((kind, None, None))
        if not entries:
            return
        if version >= 6:
            body = DeleteTopicsRequest(timeout_ms=10000, topics=[
                DeleteTopicsRequest.DeleteTopicState(name=None if topic_id else name, topic_id=topic_id or Uuid.ZERO)
                for _, name, topic_id in entries])
        else:
            body = DeleteTopicsRequest(timeout_ms=10000, topic_names=[name for _, name, _ in entries])
        note(f"DeleteTopics v{version}: {entries}")
        answer = self.call(body, version)
        names_ = [name for _, name, topic_id in entries if name is not None and topic_id is None]
        repeated = {n for n in names_ if names_.count(n) > 1}
        by_name = {r.name: r for r in answer.responses if r.name is not None}
        by_id = {r.topic_id: r for r in answer.responses if version >= 6 and r.topic_id != Uuid.ZERO}
        for kind, name, topic_id in entries:
            result = by_id.get(topic_id) if topic_id is not None else by_name.get(name)
            if result is None and topic_id is None and name is None:
                result = next((r for r in answer.responses if r.name is None and r.topic_id == Uuid.ZERO), None)
            assert result is not None, f"DeleteTopics v{version}: no answer for {kind} {name or topic_id}"
            code = errors.by_code(result.error_code).name
            where = f"DeleteTopics v{version} of {kind} {name or topic_id}"
            if kind in ("tracked", "by id", "decoy") and name not in repeated:
                assert result.error_code == 0, f"{where}: {code} {result.error_message}"
            if kind in ("missing", "bad name", "random id", "null"):
                assert result.error_code != 0, f"{where}: deleted"
            if result.error_code == 0 and name is not None:
                self.forget(name)

    @rule(data=st.data())
    def create_partitions(self, data):
        """CreatePartitions of a tracked topic: one or two more (the model takes them), as many or fewer, more
        than 10,000 more, bad assignments, missing or reserved topics (refused)."""
        kind, grow, n, validate_only, version = data.draw(st.tuples(
            st.sampled_from(["grow", "grow", "same", "shrink", "huge", "assignment", "missing", "reserved"]),
            st.integers(1, 2), indexes, st.booleans(), st.integers(0, 3)), label="create partitions")
        topic = self.tracked(data)
        now = len(topic.partitions)
        count = {"grow": now + grow, "same": now, "shrink": max(now - 1, 0),
                 "huge": [2**31 - 1, now + 10_001, -1, 0][n % 4]}.get(kind, now + 1)
        name = {"missing": self.name("missing"), "reserved": RESERVED[n % 3]}.get(kind, topic.name)
        assignments = None
        if kind == "assignment":
            assignments = [CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=[[7], [], [1, 1]][n % 3])]
        validate_only = validate_only or kind == "huge"
        body = CreatePartitionsRequest(timeout_ms=10000, validate_only=validate_only, topics=[
            CreatePartitionsRequest.CreatePartitionsTopic(name=name, count=count, assignments=assignments)])
        (result,) = self.call(body, version).results
        where = f"CreatePartitions {kind} of {name} ({now}) to {count}"
        if kind == "grow":
            assert result.error_code == 0, f"{where}: {errors.by_code(result.error_code).name}"
            if not validate_only:
                topic.partitions += [[] for _ in range(count - now)]
        else:
            assert result.error_code != 0, f"{where}: answered NONE"

    @rule(data=st.data())
    def alter_configs(self, data):
        """IncrementalAlterConfigs of a tracked topic: changes the topic can take, and sometimes one it must
        refuse (then the resource is refused whole); DescribeConfigs shows the pinned configs kept. Sometimes of
        the broker, with values good and bad."""
        segment_ms, segment_bytes = data.draw(st.tuples(st.integers(1000, 10**10), st.integers(2048, 1 << 20)))
        harmless = [("segment.ms", str(segment_ms)), ("index.interval.bytes", "0"), ("file.delete.delay.ms", "0"),
                    ("max.compaction.lag.ms", "9223372036854775807"), ("retention.ms", "-1"),
                    ("retention.bytes", "-1"), ("segment.bytes", "1048576"),
                    ("internal.segment.bytes", str(segment_bytes))]
        refused = [(0, "retention.ms", "-2"), (0, "retention.ms", "x"), (0, "retention.bytes", "1e3"),
                   (0, "cleanup.policy", "never"), (2, "cleanup.policy", "bogus"), (2, "retention.ms", "5"),
                   (3, "segment.ms", "1"), (0, "segment.ms", "0"), (0, "max.message.bytes", "-5"),
                   (0, "min.insync.replicas", "0"), (0, "compression.type", "gzip"),
                   (0, "message.timestamp.type", "LogAppendTime"), (0, "no.such.config", "1"),
                   (0, "segment.bytes", "2147483648"), (0, "message.timestamp.after.max.ms", "-1"),
                   (5, "retention.ms", "1"), (-1, "retention.ms", "1")]
        broker, good, bad, validate_only, version = data.draw(st.tuples(
            st.booleans(), st.lists(st.sampled_from(harmless), min_size=1, max_size=3, unique=True),
            st.lists(st.sampled_from(refused), max_size=2), st.booleans(), st.integers(0, 1)), label="alter")
        if broker:
            self.alter_broker(data)
            return
        topic = self.tracked(data)
        changes = [(0, k, v) for k, v in good] + bad
        body = IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=2, resource_name=topic.name, configs=[
                IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=op, value=v)
                for op, k, v in changes])])
        (result,) = self.call(body, version).responses
        where = f"IncrementalAlterConfigs of {topic.name}: {changes}"
        code = errors.by_code(result.error_code).name
        if bad:
            assert result.error_code != 0, f"{where}: answered NONE"
        else:
            assert result.error_code == 0, f"{where}: {code} {result.error_message}"
            if not validate_only:
                topic.segment = next((int(v) for k, v in good if k == "internal.segment.bytes"), topic.segment)
        pinned = {k: v for k, v in (COMPACTED if topic.compacted else PLAIN).items() if k not in SETTABLE}
        described = self.call(DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=2, resource_name=topic.name, configuration_keys=list(pinned))]), 4).results[0]
        assert described.error_code == 0
        have = {c.name: c.value for c in described.configs}
        for key, value in pinned.items():
            assert have.get(key) == value, f"{topic.name}: {key}={have.get(key)} after {where}; it was {value}"

    def alter_broker(self, data):
        (key, values), value, name, operation, validate_only = data.draw(st.tuples(
            st.sampled_from([("log.retention.ms", ["-1", "604800000", "-2", "abc"]),
                             ("log.segment.bytes", ["1048576", "1", "-5"]),
                             ("log.cleanup.policy", ["delete", "compact", "none"]),
                             ("message.max.bytes", ["1048588", "-1", "x"]),
                             ("log.message.timestamp.after.max.ms", ["3600000", "-1"]),
                             ("num.partitions", ["3"]), ("socket.request.max.bytes", ["1"]), ("no.such", ["1"])]),
            indexes, st.sampled_from(["", "1", "2", "-1", "abc"]), st.sampled_from([0, 0, 1, 2, 9]),
            st.booleans()), label="broker config")
        body = IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=4, resource_name=name, configs=[
                IncrementalAlterConfigsRequest.AlterableConfig(name=key, config_operation=operation,
                                                               value=values[value % len(values)])])])
        self.call(body, 1)

    # --- groups ---

    def group_id(self, data):
        return pick(data, [f"hx{self.run}-g0", f"hx{self.run}-g1", "", " ", "x" * 300, "hx-shared"], "group")

    @rule(data=st.data())
    def classic_group(self, data):
        """JoinGroup, SyncGroup, Heartbeat, LeaveGroup and OffsetCommit with members the broker gave out or made
        up, random generations, big metadata and assignments."""
        group = self.group_id(data)
        what, known_one, which, made_up, generation = data.draw(st.tuples(
            st.sampled_from(["join", "join", "sync", "heartbeat", "leave", "commit"]), st.booleans(), indexes,
            st.sampled_from(["", "nobody", "x" * 1000]), hostile_ints), label="member")
        join = data.draw(st.tuples(
            st.integers(0, 9), st.sampled_from([0, 16, 1024, 60_000]),
            st.sampled_from([50, 500, 5000, -1, 0, 5001, 2**31 - 1]), st.sampled_from([50, 300, -1, 0]),
            st.sampled_from([None, "static-1", ""]), st.sampled_from(["consumer", "", "connect"]),
            st.lists(st.sampled_from(["range", "roundrobin", ""]), max_size=3), st.sampled_from([None, "because"])),
            label="join")
        other = data.draw(st.tuples(
            st.integers(0, 5), st.lists(st.tuples(st.booleans(), st.sampled_from([0, 10, 50_000])), max_size=3),
            st.sampled_from([None, "consumer", "x"]), st.sampled_from([None, "range"]),
            st.lists(st.tuples(st.sampled_from(["mine", "", "ghost"]), st.sampled_from([None, "static-1"])),
                     max_size=3), hostile_longs, st.integers(2, 9)), label="other")
        known = self.members.setdefault(group, [])
        member, generation = known[which % len(known)] if known and known_one else (made_up, generation)
        if what == "join":
            version, size, session, rebalance, instance, protocol_type, protocols, reason = join
            if version == 0 and session > 500:
                session = 500  # v0 waits its session timeout for the other members to join
            body = JoinGroupRequest(
                group_id=group, session_timeout_ms=session, rebalance_timeout_ms=rebalance, member_id=member,
                group_instance_id=instance if version >= 5 else None, protocol_type=protocol_type,
                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=p, metadata=b"\0" * size) for p in protocols],
                reason=reason if version >= 8 else None)
            answer = self.call(body, version)
            if answer.member_id:
                known.append((answer.member_id, answer.generation_id))
                del known[:-4]
            return
        version, assignments, protocol_type, protocol_name, leaving, offset, commit_version = other
        if what == "sync":
            self.call(SyncGroupRequest(
                group_id=group, generation_id=generation, member_id=member,
                protocol_type=protocol_type if version >= 5 else None,
                protocol_name=protocol_name if version >= 5 else None,
                assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=member if mine else "someone",
                                                                         assignment=b"\1" * size)
                             for mine, size in assignments]), version)
        elif what == "heartbeat":
            self.call(HeartbeatRequest(group_id=group, generation_id=generation, member_id=member), version % 5)
        elif what == "leave":
            members = [LeaveGroupRequest.MemberIdentity(member_id=member if who == "mine" else who,
                                                        group_instance_id=instance)
                       for who, instance in leaving] if version >= 3 else []
            self.call(LeaveGroupRequest(group_id=group, member_id=member if version < 3 else "", members=members),
                      version)
        else:
            topic = self.tracked(data)
            self.call(OffsetCommitRequest(
                group_id=group, generation_id_or_member_epoch=generation, member_id=member,
                topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=topic.name, partitions=[
                    OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])]),
                commit_version)

    @rule(data=st.data())
    def consumer_group(self, data):
        """ConsumerGroupHeartbeat: join with subscriptions (names, good and bad regexes, up to ~100 KiB of
        names), heartbeat with the epochs the broker gave or others, leave."""
        group = self.group_id(data)
        (version, what, which, strange_member, strange_epoch, leave_epoch, subscribe, count, named, regex, instance,
         rack, rebalance, assignor, owned) = data.draw(st.tuples(
            st.integers(0, 1), st.sampled_from(["join", "join", "heartbeat", "leave", "strange"]), indexes,
            st.sampled_from(["", "x" * 1000, "unknown-member", None]), hostile_ints, st.sampled_from([-1, -2]),
            st.booleans(), st.sampled_from([0, 1, 3, 2000]), indexes, st.one_of(st.none(), st.sampled_from(REGEXES)),
            st.sampled_from([None, "i1", ""]), st.sampled_from([None, "r"]), st.sampled_from([-1, 0, 1000, 2**31 - 1]),
            st.sampled_from([None, "uniform", "range", "bogus", ""]), st.sampled_from(["none", "empty", "random"])),
            label="heartbeat")
        known = self.consumers.setdefault(group, {})
        member, epoch = "", 0
        if what != "join" and known:
            member = list(known)[which % len(known)]
            epoch = known[member]
        if what == "leave":
            epoch = leave_epoch
        elif what == "strange":
            member = str(Uuid.random()) if strange_member is None else strange_member
            epoch = strange_epoch
        subscription = None
        if what in ("join", "strange") or subscribe:
            choices = list(self.topics) + ["missing", ""]
            subscription = [choices[(named + i) % len(choices)] for i in range(min(count, 3))] + [
                f"hx{self.run}-n{i:045d}" for i in range(max(count - 3, 0))]
        body = ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=epoch, instance_id=instance, rack_id=rack,
            rebalance_timeout_ms=rebalance, subscribed_topic_names=subscription,
            subscribed_topic_regex=regex if version >= 1 else None, server_assignor=assignor,
            topic_partitions={"none": None, "empty": [], "random": [ConsumerGroupHeartbeatRequest.TopicPartitions(
                topic_id=Uuid.random(), partitions=[0, -1])]}[owned])
        answer = self.call(body, version)
        if answer.error_code == 0 and answer.member_id:
            if epoch in (-1, -2):
                known.pop(answer.member_id, None)
            else:
                known[answer.member_id] = answer.member_epoch
        elif member in known and answer.error_code in (errors.UNKNOWN_MEMBER_ID.code,
                                                       errors.FENCED_MEMBER_EPOCH.code):
            known.pop(member, None)

    @rule(data=st.data())
    def commit_offsets(self, data):
        """OffsetCommit of a group no one joins: acknowledged commits are the model (OffsetFetch must answer
        them); commits Kafka refuses (metadata over 4096 bytes, a partition that does not exist) are refused."""
        group = pick(data, [f"hx{self.run}-commits-0", f"hx{self.run}-commits-1"], "group")
        version = data.draw(st.integers(2, 10), label="version")
        drawn = data.draw(st.lists(st.tuples(
            st.sampled_from(["good", "good", "metadata too large", "bad partition", "null metadata"]), indexes,
            st.text(max_size=20), st.one_of(st.integers(0, 10**6), hostile_longs)), min_size=1, max_size=3),
            label="commits")
        topic = self.tracked(data)
        by_id = version >= 10
        parts = {}
        for kind, n, metadata, offset in drawn:
            index = n % len(topic.partitions)
            if kind == "metadata too large":
                metadata = "m" * (4097 + n % 2000)
            elif kind == "bad partition":
                index = [len(topic.partitions), -1, 2**31 - 1][n % 3]
            elif kind == "null metadata":
                metadata = None
            parts[index] = (kind, offset, metadata)
        body = OffsetCommitRequest(
            group_id=group, generation_id_or_member_epoch=-1, member_id="",
            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
                name="" if by_id else topic.name, topic_id=topic.topic_id if by_id else Uuid.ZERO,
                partitions=[OffsetCommitRequest.OffsetCommitRequestPartition(
                    partition_index=i, committed_offset=o, committed_metadata=m) for i, (_, o, m) in parts.items()])])
        answer = self.call(body, version)
        for p in answer.topics[0].partitions:
            kind, offset, metadata = parts[p.partition_index]
            where = f"OffsetCommit v{version} {group} {topic.name}-{p.partition_index} ({kind})"
            if kind in ("metadata too large", "bad partition"):
                assert p.error_code != 0, f"{where}: answered NONE"
            else:
                assert p.error_code == 0, f"{where}: {errors.by_code(p.error_code).name}"
                self.commits.setdefault(group, {})[(topic.name, p.partition_index)] = (offset, metadata or "")

    # --- any request, at any version ---

    @rule(data=st.data())
    def any_request(self, data):
        """A request of any API the broker serves, at a version it serves or not, with values hypothesis makes
        up, on a new connection: answered, or the connection closed, as its fate says."""
        key = pick(data, SERVED_KEYS, "api")
        cls = api(key).request
        versions = list(HANDLERS[key].versions) if data.draw(st.integers(0, 9)) else list(cls.valid_versions)
        version = pick(data, versions, "version")
        body = data.draw(message(cls, version), label="body")
        tame(body, version)
        header = RequestHeader(request_api_key=key, request_api_version=version,
                               correlation_id=data.draw(st.integers(-2**31, 2**31 - 1)),
                               client_id=data.draw(st.one_of(st.none(), st.text(max_size=20))))
        end = pick(data, ["half-close", "wait"], "end")
        try:
            frame = encode_request(header, body, version)
        except (KafkaProtoError, ValueError, OverflowError, TypeError):
            assume(False)
        assume(len(frame) - 4 <= REQUEST_MAX_BYTES)
        self.exchange([frame], end)

    # --- connections ---

    FRAME_KINDS = ["request", "request", "garbage", "unknown api", "unknown version", "at the limit",
                   "over the limit", "negative size", "short prefix", "long prefix", "api versions v9", "tiny"]

    @rule(data=st.data())
    def raw_stream(self, data):
        """Frames good and bad in one stream, cut into pieces: each answered or the connection closed, as
        ``expected`` says."""
        drawn = data.draw(st.lists(st.tuples(
            st.sampled_from(self.FRAME_KINDS), st.integers(0, 2**31 - 1), st.booleans(), st.integers(0, 2),
            st.binary(max_size=64), indexes), min_size=1, max_size=5), label="frames")
        end = pick(data, ["half-close", "abrupt", "hold", "wait"], "end")
        cuts = data.draw(st.lists(st.integers(1, 1 << 18), max_size=4), label="cuts")
        pieces = []
        for kind, cid, metadata, version, payload, n in drawn:
            good = frame_of(MetadataRequest(topics=[]), 12, cid) if metadata else \
                frame_of(ApiVersionsRequest(), version, cid)
            if kind == "request":
                pieces.append(good)
            elif kind == "garbage":
                pieces.append(len(payload).to_bytes(4, "big") + payload)
            elif kind == "unknown api":
                api_key = [-1, -2**15, 100, 2**15 - 1, 77, 10000][n % 6]
                pieces.append(good[:4] + struct.pack(">h", api_key) + good[6:])
            elif kind == "unknown version":
                key = [0, 1, 3, 18, 19, 11][n % 6]
                bad_version = [-1, -2**15, 2**15 - 1, 19, 200][n // 6 % 5]
                pieces.append(good[:4] + struct.pack(">hh", key, bad_version) + good[8:])
            elif kind == "at the limit":
                padding = bytes(REQUEST_MAX_BYTES + 4 - len(good))  # after the body: ignored, as Kafka ignores it
                pieces.append(REQUEST_MAX_BYTES.to_bytes(4, "big") + good[4:] + padding)
            elif kind == "over the limit":
                size = [REQUEST_MAX_BYTES + 1, 2**31 - 1, REQUEST_MAX_BYTES * 4][n % 3]
                pieces.append(size.to_bytes(4, "big") + good[4:])
            elif kind == "negative size":
                pieces.append(struct.pack(">i", [-1, -2**31][n % 2]) + good[4:])
            elif kind == "short prefix":
                pieces.append((n % (len(good) - 4)).to_bytes(4, "big") + good[4:])
            elif kind == "long prefix":
                pieces.append((len(good) - 3 + n % 1000).to_bytes(4, "big") + good[4:])
            elif kind == "api versions v9":
                body = frame_of(ApiVersionsRequest(client_software_name="x", client_software_version="1"), 3, cid)
                pieces.append(body[:6] + struct.pack(">h", [5, 9, 2**15 - 1][n % 3]) + body[8:])
            else:
                pieces.append(payload[:n % 4])
        self.exchange(pieces, end, cuts)

    def exchange(self, pieces, end, cuts=()):
        """Send pieces on a new connection (in chunks at cuts), then end it: "wait" (every frame the broker
        must answer is answered, in order, and the connection closed if the stream ends in a way that closes
        it), "hold" (the same, then the connection is kept open), "half-close" (a client that stops sending
        is gone, for Kafka too: the answers that come are right and in order, and the connection is closed) or
        "abrupt" (hung up at once)."""
        stream = b"".join(pieces)
        fates, ending = expected(stream)
        note(f"stream of {len(stream)} bytes: {[f[0] for f in fates]}, then {ending}; {end}")
        closing = ending in (BAD_FRAME, BAD_PREFIX)
        sock = self.open_socket()
        try:
            sent = 0
            for cut in sorted(set(cuts)) + [len(stream)]:
                if sent < min(cut, len(stream)):
                    try:
                        sock.sendall(stream[sent:cut])
                    except (BrokenPipeError, ConnectionResetError):
                        assert closing, "the broker closed a connection whose stream was good so far"
                        return
                    sent = min(cut, len(stream))
            if end == "abrupt":
                return
            if end == "half-close":
                try:
                    sock.shutdown(socket.SHUT_WR)
                except OSError:  # the broker has closed it already (ENOTCONN)
                    assert closing, "the broker closed a connection whose stream was good"
            for what, key, version, correlation_id in fates:
                if what == SILENT:
                    continue
                try:
                    raw = read_frame(sock)
                except socket.timeout:
                    raise AssertionError(f"no answer within {ANSWER_SECONDS} s to {api(key).name} v{version}") from None
                except Closed as e:
                    if end == "half-close":
                        return
                    raise AssertionError(f"closed before answering {api(key).name} v{version}: {e}") from None
                check_answer(raw, key, version, correlation_id)
            if closing or end == "half-close":
                if not closes(sock, 0.3 if LATE_PREFIX_CHECK and ending == BAD_PREFIX and fates else ANSWER_SECONDS):
                    assert LATE_PREFIX_CHECK and ending == BAD_PREFIX and fates, \
                        f"the connection stayed open after a stream that ends: {ending}, {end}"
                    sock.sendall(b"\0")
                    assert closes(sock), f"the connection stayed open after a stream that ends: {ending}, {end}"
            elif end == "hold" and len(self.held) < HELD_MAX:
                self.held.append((sock, b"", []))
                sock = None
        finally:
            if sock is not None:
                sock.close()

    def open_socket(self):
        # Never closed at once: at max.connections a connection waits in the backlog until one closes (the ones
        # this machine closed a moment ago may not have been counted out yet).
        return socket.create_connection(("127.0.0.1", self.port), timeout=ANSWER_SECONDS)

    @precondition(lambda self: len(self.held) < HELD_MAX)
    @rule(metadata=st.booleans(), sent=indexes)
    def hold_connection(self, metadata, sent):
        """A connection left silent, or with part of a request sent (a size prefix, some of its bytes)."""
        frame = frame_of(MetadataRequest(topics=[]), 12, 1) if metadata else \
            frame_of(ApiVersionsRequest(client_software_name="x", client_software_version="1"), 3, 1)
        sent %= len(frame)
        sock = self.open_socket()
        if sent:
            sock.sendall(frame[:sent])
        self.held.append((sock, frame[sent:], [fate(frame[4:])]))

    @precondition(lambda self: self.held)
    @rule(which=indexes, what=st.sampled_from(["finish", "hang up", "half-close"]))
    def finish_held(self, which, what):
        """A held connection sends the rest of its request (answered), hangs up, or half-closes (closed)."""
        sock, rest, fates = self.held.pop(which % len(self.held))
        try:
            if what == "hang up":
                return
            if what == "finish" and rest:
                sock.sendall(rest)
                for _, key, version, correlation_id in fates:
                    check_answer(read_frame(sock), key, version, correlation_id)
                return
            sock.shutdown(socket.SHUT_WR)
            assert closes(sock), "a half-closed connection stayed open"
        finally:
            sock.close()

    @rule(extra=st.integers(1, 8))
    def flood(self, extra):
        """More connections than max.connections at once, each sending ApiVersions: the broker takes only as many
        as it has room for; the others wait in its backlog (as Kafka's acceptor makes them wait) and are each
        answered once connections close."""
        socks = [socket.create_connection(("127.0.0.1", self.port), timeout=ANSWER_SECONDS)
                 for _ in range(MAX_CONNECTIONS + extra)]
        try:
            ids = {sock: i for i, sock in enumerate(socks)}
            for sock, i in ids.items():
                sock.sendall(frame_of(ApiVersionsRequest(), 0, i))
            room = MAX_CONNECTIONS - len(self.held) - (self.client is not None)
            first = answered_within(socks, 1.0, ids)
            assert first, "no connection of the flood was served"
            assert len(first) <= room, (f"{len(first)} of {len(socks)} connections answered beside "
                                        f"{MAX_CONNECTIONS - room} others, with max.connections={MAX_CONNECTIONS}")
            waiting = [s for s in socks if s not in first]
            for sock in first:  # each frees a slot for one that waits
                sock.close()
            deadline = time.monotonic() + 3 * ANSWER_SECONDS
            while waiting and time.monotonic() < deadline:
                served = answered_within(waiting, 0.5, ids)
                for sock in served:
                    sock.close()
                waiting = [s for s in waiting if s not in served]
            assert not waiting, f"{len(waiting)} connections that waited for max.connections were never served"
        finally:
            for sock in socks:
                sock.close()

    @rule(connections=st.integers(1, 5), requests=st.integers(1, 40), slow=st.booleans())
    def pipeline(self, connections, requests, slow):
        """Several connections each send many requests without waiting (past queued.max.requests over all of
        them); every one is answered, in order. A slow one reads nothing until the others are done."""
        socks = [self.open_socket() for _ in range(connections)]
        try:
            for sock in socks:
                sock.sendall(b"".join(frame_of(MetadataRequest(topics=[]) if i % 3 else ApiVersionsRequest(),
                                               12 if i % 3 else 0, i) for i in range(requests)))
            for sock in (socks[1:] + socks[:1]) if slow else socks:
                for i in range(requests):
                    check_answer(read_frame(sock), ApiKey.METADATA if i % 3 else ApiKey.API_VERSIONS,
                                 12 if i % 3 else 0, i)
        finally:
            for sock in socks:
                sock.close()

    @rule(data=st.data())
    def abandoned_fetch(self, data):
        """A Fetch that waits (min_bytes never reached) whose client hangs up: dropped with its connection."""
        wait = data.draw(st.integers(0, 5), label="wait")
        topic = self.tracked(data)
        sock = self.open_socket()
        body = FetchRequest(replica_id=-1, max_wait_ms=60000, min_bytes=1 << 30, max_bytes=1 << 20,
                            isolation_level=0, session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                                topic=topic.name, partitions=[FetchRequest.FetchPartition(
                                    partition=i, fetch_offset=topic.end(i), partition_max_bytes=1 << 20)
                                    for i in range(len(topic.partitions))])])
        sock.sendall(frame_of(body, 12, 1))
        time.sleep(0.01 * wait)
        sock.close()

    # --- restart ---

    @precondition(lambda self: self.restarts < 1 and self.steps >= 5)
    @rule()
    def restart(self):
        """The broker stops cleanly and starts again on its directory and port: the invariants then check
        every acknowledged record and commit again."""
        for sock, _, _ in self.held:
            sock.close()
        self.held = []
        self.drop_client()
        self.broker.stop()
        self.broker.start()
        self.restarts += 1

    # --- what holds after every step ---

    @invariant()
    def broker_holds(self):
        self.steps += 1
        assert self.broker.alive, f"the broker's thread ended: {self.broker.failure}"
        logged = self.errors.take()
        assert not logged, "the broker logged errors:\n" + "\n".join(logged)
        deadline = time.monotonic() + 3
        while True:
            try:
                assert api_versions(self.port) == 0
                break
            except (Closed, OSError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)  # connections this step closed may not have been counted out yet
        bounds = self.broker.on_loop(lambda: bounds_of(self.broker.server))
        assert bounds["connections"] <= MAX_CONNECTIONS and bounds["queued"] <= QUEUED_MAX_REQUESTS and \
            bounds["waiting"] <= bounds["connections"] and bounds["sessions"] <= FETCH_SESSION_SLOTS, bounds
        self.check_resources()
        self.check_records()
        self.check_commits()

    def check_resources(self):
        mine = 2 * (len(self.held) + (self.client is not None))
        bound = self.limits["fds"] + mine + SEGMENT_FILES_MAX + FD_SLACK
        deadline = time.monotonic() + 3
        while descriptors() > bound and time.monotonic() < deadline:
            time.sleep(0.05)  # the broker's ends of connections closed this step
        assert descriptors() <= bound, f"{descriptors()} descriptors open, bound {bound}"
        rss = rss_kib()
        self.limits["peak"] = max(self.limits.get("peak", 0), rss)
        assert rss <= self.limits["rss"] + RSS_SLACK_KIB, f"resident memory {rss} KiB, at start {self.limits['rss']}"

    def check_records(self):
        """Every tracked partition read from 0 to its high watermark (a fetch answers from one segment: read on
        from where each answer ends) and held to the model."""
        positions = {(name, i): 0 for name, topic in self.topics.items() for i in range(len(topic.partitions))}
        read = {key: [] for key in positions}
        while positions:
            body = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=2**31 - 1, isolation_level=0,
                                session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                                    topic=name, partitions=[FetchRequest.FetchPartition(
                                        partition=i, fetch_offset=offset, partition_max_bytes=2**31 - 1)
                                        for (n, i), offset in positions.items() if n == name])
                                    for name in dict.fromkeys(n for n, _ in positions)])
            answer = self.call(body, 12)
            for response in answer.responses:
                topic = self.topics[response.topic]
                for p in response.partitions:
                    key = (topic.name, p.partition_index)
                    where = f"{topic.name}-{p.partition_index} from {positions[key]}"
                    assert p.error_code == 0, f"{where}: {errors.by_code(p.error_code).name}"
                    end = topic.end(p.partition_index)
                    assert p.high_watermark == end, f"{where}: high watermark {p.high_watermark}, acknowledged {end}"
                    assert p.log_start_offset == 0, f"{where}: log start {p.log_start_offset}"
                    batches = list(records.iter_batches(p.records or b""))
                    read[key].append(bytes(p.records or b""))
                    if not batches or batches[-1].next_offset >= end:
                        del positions[key]
                    else:
                        positions[key] = batches[-1].next_offset
        for (name, index), parts in read.items():
            self.topics[name].check(index, b"".join(parts))

    def check_commits(self):
        groups = [g for g, offsets in self.commits.items() if offsets]
        if not groups:
            return
        body = OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=g, topics=None)
                                          for g in groups], require_stable=False)
        answer = self.call(body, 8)
        for group in answer.groups:
            assert group.error_code == 0, f"OffsetFetch {group.group_id}: {errors.by_code(group.error_code).name}"
            have = {(t.name, p.partition_index): (p.committed_offset, p.metadata)
                    for t in group.topics for p in t.partitions}
            for key, value in self.commits[group.group_id].items():
                assert have.get(key) == value, f"{group.group_id} {key}: committed {value}, fetched {have.get(key)}"


SERVED_KEYS = sorted(k for k, h in HANDLERS.items() if h.enabled is None)


def tame(body, version):
    """Bound what would make a made-up request wait long (its answer is waited for) or cost the broker's disk
    (it would only be slow): waits of at most 100 ms, topics and partitions validated but not made. And steer
    clear of the bugs the tests at the end of this module hold, so that a long search finds others."""
    if isinstance(body, MetadataRequest) and version in (10, 11) and body.topics:
        # test_metadata_v10_and_v11_refuse_topic_ids_and_null_names
        for topic in body.topics:
            topic.name = topic.name or "hostile"
            topic.topic_id = Uuid.ZERO
    if isinstance(body, FetchRequest) and body.max_wait_ms > 100:
        body.max_wait_ms %= 101
    elif isinstance(body, JoinGroupRequest):
        if body.rebalance_timeout_ms > 300:
            body.rebalance_timeout_ms %= 301
        if version == 0 and body.session_timeout_ms > 300:
            body.session_timeout_ms %= 301
    elif isinstance(body, (CreateTopicsRequest, CreatePartitionsRequest)) and version >= 1:
        body.validate_only = True
    elif isinstance(body, AlterClientQuotasRequest):
        body.validate_only = True  # quotas in force would throttle, hold or refuse the steps that follow
    elif isinstance(body, CreateTopicsRequest):
        assume(all(t.num_partitions <= 2 for t in body.topics))


def bounds_of(server):
    """What a client makes the server hold, read on its event loop."""
    return {"connections": server._admission.open_count, "queued": server._queue.size,
            # Requests waiting, each once however many partitions it watches.
            "waiting": len(set(server._waiting.anyone).union(*server._waiting.on_partitions.values())),
            "sessions": len(server.state.fetch_sessions.sessions)}


def descriptors():
    return len(os.listdir("/proc/self/fd"))


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


# --- the test ------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hostile_broker(tmp_path_factory):
    seen = BrokerErrors()
    logger = logging.getLogger("kafkaproto.broker")
    logger.addHandler(seen)
    broker = HostileBroker(tmp_path_factory.mktemp("hostile") / "data").start()
    try:
        yield broker, seen
        seen.take()  # each test checks what it made the broker log
    finally:
        try:
            broker.stop()
        finally:
            logger.removeHandler(seen)
    assert not seen.take(), "the broker logged errors while it stopped"


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors and memory in /proc")
def test_hostile_clients_leave_the_broker_up_bounded_and_whole(hostile_broker):
    broker, seen = hostile_broker
    bomb(BOMB_BYTES)  # built before the baseline: the machine's own memory
    assert api_versions(broker.port) == 0
    HostileClients.broker, HostileClients.errors = broker, seen
    HostileClients.limits = {"fds": descriptors(), "rss": rss_kib()}
    run_state_machine_as_test(HostileClients, settings=settings(
        max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]))
    grown = HostileClients.limits.get("peak", 0) - HostileClients.limits["rss"]
    print(f"resident memory grew by at most {grown} KiB over {EXAMPLES} sequences of {STEPS} steps")


# --- what the machine found, each once a difference from Kafka (test_broker_differential sends the same frames) ---

def connection(broker):
    return socket.create_connection(("127.0.0.1", broker.port), timeout=ANSWER_SECONDS)


def test_a_bad_size_prefix_after_a_frame_closes_the_connection(hostile_broker):
    broker, _ = hostile_broker
    for prefix in (REQUEST_MAX_BYTES + 1, -1):
        with connection(broker) as sock:
            sock.sendall(frame_of(ApiVersionsRequest(), 0, 1) + prefix.to_bytes(4, "big", signed=True))
            check_answer(read_frame(sock), ApiKey.API_VERSIONS, 0, 1)
            assert closes(sock, 3), f"size prefix {prefix}: the connection stayed open"


def test_an_acks_0_produce_that_fails_closes_the_connection(hostile_broker):
    broker, _ = hostile_broker
    body = ProduceRequest(acks=0, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="hostile-no-such-topic", partition_data=[ProduceRequest.PartitionProduceData(
            index=0, records=build([(b"k", b"v", (), NOW())]))])])
    with connection(broker) as sock:
        sock.sendall(frame_of(body, 9, 1) + frame_of(ApiVersionsRequest(), 0, 2))
        assert closes(sock, 3), "the connection stayed open after a failed acks=0 Produce"


def test_sasl_authenticate_on_a_plaintext_listener_keeps_the_connection(hostile_broker):
    broker, _ = hostile_broker
    with connection(broker) as sock:
        sock.sendall(frame_of(SaslAuthenticateRequest(auth_bytes=b"x"), 1, 1))
        answer = check_answer(read_frame(sock), ApiKey.SASL_AUTHENTICATE, 1, 1)
        assert answer.error_code == errors.ILLEGAL_SASL_STATE.code
        sock.sendall(frame_of(ApiVersionsRequest(), 0, 2))
        try:
            check_answer(read_frame(sock), ApiKey.API_VERSIONS, 0, 2)
        except Closed:
            raise AssertionError("closed after answering SaslAuthenticate ILLEGAL_SASL_STATE") from None


def test_api_versions_at_a_negative_version_is_answered_at_version_0(hostile_broker):
    broker, _ = hostile_broker
    good = frame_of(ApiVersionsRequest(client_software_name="x", client_software_version="1"), 3, 7)
    with connection(broker) as sock:
        sock.sendall(good[:6] + struct.pack(">h", -1) + good[8:])
        try:
            answer = check_answer(read_frame(sock), ApiKey.API_VERSIONS, 0, 7)
        except Closed:
            raise AssertionError("ApiVersions v-1 closed the connection") from None
        assert answer.error_code == errors.UNSUPPORTED_VERSION.code


def test_metadata_v10_and_v11_refuse_topic_ids_and_null_names(hostile_broker):
    broker, seen = hostile_broker
    for version in (10, 11):
        for name, topic_id in ((None, Uuid.random()), (None, Uuid.ZERO), ("hostile", Uuid.random())):
            body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name, topic_id=topic_id)],
                                   allow_auto_topic_creation=False)
            with connection(broker) as sock:
                sock.sendall(frame_of(body, version, 3))
                try:
                    answer = check_answer(read_frame(sock), ApiKey.METADATA, version, 3)
                except Closed:
                    raise AssertionError(f"Metadata v{version} of topic {name!r} by id {topic_id}: the "
                                         f"connection was closed; the broker logged {seen.take()}") from None
            assert [(t.name, t.error_code) for t in answer.topics] == [(name or "", errors.INVALID_REQUEST.code)]
