"""The broker's resources are bounded by construction: what a client can make it hold, and for how long.

Each test drives a broker over real sockets (in this process, where the test looks into its server, or as a
subprocess, where it measures memory) and holds one bound:
- a waiting Fetch is woken only by appends to its partitions, and dropped (with its descriptor) when its
  client hangs up;
- TLS handshakes count against max.connections and connections.max.idle.ms, and cost memory only within them;
- max.connections.per.ip and queued.max.requests are honoured, and a connection has one request in flight
  (Kafka's muting) while pipelining clients stay fast;
- a frame's buffer grows as its bytes arrive, not from its size prefix;
- failed logins are answered after connection.failed.authentication.delay.ms, and SCRAM does not tell unknown
  users from known ones, nor runs PBKDF2 for either;
- group requests cost the same with 8,000 groups as with a few; a KIP-848 subscription too big for Kafka's
  offsets log is refused as Kafka refuses it, and other members' heartbeats stay cheap; regexes members leave are
  freed; empty groups go, and offsets expire by Kafka's rules;
- an exception in a connection's task is logged with its connection, and the housekeeping survives a partition
  it cannot compact.
"""

import asyncio
import base64
import collections
import concurrent.futures
import gc
import logging
import os
import resource
import select
import socket
import ssl
import statistics
import threading
import time
import tracemalloc

import pytest

from kafkaproto import decode_response, encode_request, errors, records
from kafkaproto.broker import Broker, security, server
from kafkaproto.broker import stream as broker_stream
from kafkaproto.broker.config import BrokerConfig
from kafkaproto.broker.embedded import serve
from kafkaproto.broker.state.groups import Waiter, clock_ms
from kafkaproto.messages import (ApiVersionsRequest, ConsumerGroupHeartbeatRequest, CreateTopicsRequest,
                                 FetchRequest, HeartbeatRequest, IncrementalAlterConfigsRequest, JoinGroupRequest,
                                 LeaveGroupRequest, ListGroupsRequest, ProduceRequest,
                                 RequestHeader, SaslAuthenticateRequest, SaslHandshakeRequest, SyncGroupRequest)

from kafka_jvm import _recv_exact
from test_broker_groups import Pending, join_of
from test_broker_handlers import make_state
from test_broker_security import JAAS_PLAIN, JAAS_SCRAM, Raw, ScramClient, certificates  # noqa: F401 (a fixture)
from test_kafka_broker import RawClient

pytestmark = pytest.mark.above_the_codecs
BROKER_THREAD = "kafkaproto-bounds-broker"


# --- a broker in this process, whose server the tests look into ------------------------------------------------

class Running:
    """serve() on an event loop in a thread of this process; server is the Server, port its first listener's.
    failure holds what ended serve() with an exception."""

    host = "127.0.0.1"

    def __init__(self, tmp_path, overrides=None):
        values = {"listeners": "PLAINTEXT://127.0.0.1:0", "group.initial.rebalance.delay.ms": "0",
                  **({"log.dirs": str(tmp_path / "data")} if tmp_path is not None else {}), **(overrides or {})}
        self.config = BrokerConfig(values, "test")
        self.server = self.loop = self._stop = None
        started, failure = threading.Event(), []
        self.failure = failure

        def ready(server_):
            self.server = server_
            started.set()

        def run():
            self.loop = asyncio.new_event_loop()
            self._stop = asyncio.Event()
            try:
                self.loop.run_until_complete(serve(self.config, ready, self._stop))
            except BaseException as e:
                failure.append(e)
                started.set()
            finally:
                self.loop.close()

        self._thread = threading.Thread(target=run, name=BROKER_THREAD, daemon=True)
        self._thread.start()
        assert started.wait(30) and not failure, failure
        self.port = self.server.listeners[0].port

    @property
    def state(self):
        return self.server.state

    @property
    def alive(self):
        return self._thread.is_alive() and not self.failure

    def on_loop(self, function, timeout=30):
        """function() run on the broker's event loop (where its state may be read safely); its result."""
        done = concurrent.futures.Future()

        def run():
            try:
                done.set_result(function())
            except BaseException as e:
                done.set_exception(e)

        self.loop.call_soon_threadsafe(run)
        return done.result(timeout)

    def close(self):
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --- requests ----------------------------------------------------------------------------------------------------

def frame(body, version, correlation_id=1):
    return encode_request(RequestHeader(request_api_key=body.api_key, request_api_version=version,
                                        correlation_id=correlation_id, client_id="bounds"), body, version)


def read_response(sock, api_key, version):
    size = int.from_bytes(_recv_exact(sock, 4), "big")
    return decode_response(_recv_exact(sock, size), api_key, version)


def create_topic(client, name, partitions=1, **configs):
    body = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1,
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k.replace("_", "."), value=v)
                 for k, v in configs.items()])], timeout_ms=10000)
    assert client.call(body, 7).body.topics[0].error_code == 0


def batch(*pairs):
    builder = records.RecordBatchBuilder()
    for key, value in pairs:
        builder.append(key, value, timestamp=int(time.time() * 1000))
    return builder.build()


def produce_request(topic, partition, data):
    return ProduceRequest(acks=-1, timeout_ms=10000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=data)])])


def produce(client, topic, partition, *pairs):
    response = client.call(produce_request(topic, partition, batch(*pairs)), 9).body
    return response.responses[0].partition_responses[0].error_code


def fetch_request(topic, partitions=(0,), offset=0, max_wait_ms=0, min_bytes=0, partition_max=1 << 20):
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=64 << 20,
                        isolation_level=0, session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                            topic=topic, partitions=[FetchRequest.FetchPartition(
                                partition=p, fetch_offset=offset, partition_max_bytes=partition_max)
                                for p in partitions])])


def values_of(fetch_response):
    return [r.value for t in fetch_response.responses for p in t.partitions
            for b in records.iter_batches(p.records or b"") for r in b]


def closed_by_broker(socks, timeout):
    """The sockets among socks that the broker closes within timeout seconds (each read returns nothing)."""
    closed, deadline = set(), time.monotonic() + timeout
    while len(closed) < len(socks):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        readable, _, _ = select.select([s for s in socks if s not in closed], [], [], left)
        for sock in readable:
            try:
                if sock.recv(1 << 16) == b"":
                    closed.add(sock)
            except OSError:
                closed.add(sock)
    return closed


def own_descriptors():
    return len(os.listdir("/proc/self/fd"))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.fixture
def descriptors_for(request):
    """Raise the soft RLIMIT_NOFILE to at least n for the test (restored after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)

    def ensure(n):
        if soft < n:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(n, 4096)), hard))

    yield ensure
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc")


# --- waiting fetches ---------------------------------------------------------------------------------------------

@needs_proc
def test_waiting_fetches_wake_only_for_their_partition_and_go_with_their_client(tmp_path, monkeypatch):
    """100 fetches wait (up to 10 minutes) on partition 0: appends to partition 1 wake none of them; the 50 whose
    clients hang up are dropped at once, descriptors and all; an append to partition 0 answers the other 50."""
    asked = collections.Counter()
    real = server.dispatch

    def counting(ctx, body):
        asked[type(body).__name__] += 1
        return real(ctx, body)

    monkeypatch.setattr(server, "dispatch", counting)
    with Running(tmp_path) as broker:
        client = RawClient(broker.port)
        create_topic(client, "waits", 2)
        baseline = own_descriptors()
        waiting = [socket.create_connection(("127.0.0.1", broker.port), timeout=30) for _ in range(100)]
        for sock in waiting:
            sock.sendall(frame(fetch_request("waits", (0,), max_wait_ms=600_000, min_bytes=1), 12))
        deadline = time.monotonic() + 10
        while asked["FetchRequest"] < 100 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        assert asked["FetchRequest"] == 100

        started = time.monotonic()
        for i in range(20):
            assert produce(client, "waits", 1, (None, b"elsewhere %d" % i)) == 0
        assert time.monotonic() - started < 2
        assert asked["FetchRequest"] == 100, "appends to partition 1 woke fetches waiting on partition 0"

        for sock in waiting[:50]:  # 100 descriptors: both ends of the 50 that stay
            sock.close()
        deadline = time.monotonic() + 3
        while own_descriptors() > baseline + 100 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert own_descriptors() <= baseline + 100, "the broker kept the connections of fetches whose client left"
        assert broker.on_loop(lambda: sum(map(len, broker.server._waiting.on_partitions.values()))) == 50

        assert produce(client, "waits", 0, (None, b"here")) == 0
        for sock in waiting[50:]:
            answer = read_response(sock, FetchRequest.api_key, 12)
            assert values_of(answer.body) == [b"here"]
            sock.close()
        assert asked["FetchRequest"] == 150  # each woken once, by the one append to its partition
        client.close()


# --- connections: TLS handshakes, per-address limits, the request queue, muting ----------------------------------

def tls_overrides(directory, **more):
    return {"listeners": "SSL://127.0.0.1:0", "listener.security.protocol.map": "SSL:SSL",
            "ssl.keystore.type": "PEM", "ssl.keystore.location": str(directory / "keystore.pem"), **more}


def test_tls_handshakes_count_as_connections_and_as_idle(tmp_path, certificates):  # noqa: F811 (the fixture)
    """Sockets that never start their TLS handshake are connections: 10 of 30 are taken with max.connections=10,
    the others wait in the backlog (as Kafka's acceptor makes them wait), and each wave is closed after
    connections.max.idle.ms, which lets the next one in; then a real TLS client is served."""
    overrides = tls_overrides(certificates, **{"max.connections": "10", "connections.max.idle.ms": "1500"})
    with Running(tmp_path, overrides) as broker:
        opened = time.monotonic()
        silent = [socket.create_connection(("127.0.0.1", broker.port), timeout=10) for _ in range(30)]
        assert not closed_by_broker(silent, 1.0), "connections over max.connections were closed, not made to wait"
        assert broker.on_loop(lambda: broker.server._admission.open_count) == 10
        assert closed_by_broker(silent, 12.0) == set(silent), "silent handshakes outlived connections.max.idle.ms"
        assert 3 * 1.4 <= time.monotonic() - opened < 12.0  # three waves of ten, each idle for 1.5 s
        for sock in silent:
            sock.close()
        context = ssl.create_default_context(cafile=str(certificates / "ca.pem"))
        with context.wrap_socket(socket.create_connection(("127.0.0.1", broker.port), timeout=10),
                                 server_hostname="localhost") as tls:
            tls.sendall(frame(ApiVersionsRequest(), 0))
            assert read_response(tls, ApiVersionsRequest.api_key, 0).body.error_code == 0


@needs_proc
def test_tls_handshakes_cost_memory_only_within_max_connections(tmp_path, certificates, descriptors_for):  # noqa: F811 (the fixture)
    """400 sockets that try to start a handshake and never finish it, with max.connections=50: the broker takes 50
    (the others wait in its listen backlog, or in connect() once that is full, as with Kafka's acceptor), and its
    memory grows by what 50 handshakes take (asyncio gives each a 256 KiB buffer), not 400."""
    descriptors_for(1000)
    broker = Broker(tls_overrides(certificates, **{"max.connections": "50"}), log_dir=tmp_path,
                    subprocess=True).start()
    sockets = []
    try:
        time.sleep(0.5)
        baseline = rss_kib(broker.process.pid)
        for _ in range(400):
            try:
                sockets.append(socket.create_connection(("127.0.0.1", broker.port), timeout=0.2))
            except OSError:  # the listen backlog is full: the next ones would wait in connect() too
                break
            sockets[-1].sendall(b"\x16\x03\x01")  # the start of a ClientHello, then nothing
        time.sleep(1.5)
        assert len(sockets) >= 50
        grown = rss_kib(broker.process.pid) - baseline
        assert grown < 40 * 1024, f"400 stalled handshakes cost {grown} KiB with max.connections=50"
    finally:
        for sock in sockets:
            sock.close()
        broker.stop()
        broker.cleanup()


def test_max_connections_per_ip(tmp_path):
    with Running(tmp_path, {"max.connections.per.ip": "3"}) as broker:
        mine = [socket.create_connection(("127.0.0.1", broker.port), timeout=10) for _ in range(5)]
        assert closed_by_broker(mine, 1.0) == set(mine[3:])
        other = socket.create_connection(("127.0.0.1", broker.port), timeout=10, source_address=("127.0.0.2", 0))
        other.sendall(frame(ApiVersionsRequest(), 0))
        assert read_response(other, ApiVersionsRequest.api_key, 0).body.error_code == 0  # another address
        for sock in mine[:3]:
            sock.sendall(frame(ApiVersionsRequest(), 0))
            assert read_response(sock, ApiVersionsRequest.api_key, 0).body.error_code == 0
            sock.close()
        other.close()


def test_max_connections_per_ip_overrides(tmp_path):
    """An address of its own limit (Kafka's max.connections.per.ip.overrides), here the only one let in: the
    others get max.connections.per.ip=0."""
    with Running(tmp_path, {"max.connections.per.ip": "0",
                            "max.connections.per.ip.overrides": "127.0.0.1:2"}) as broker:
        mine = [socket.create_connection(("127.0.0.1", broker.port), timeout=10) for _ in range(3)]
        assert closed_by_broker(mine, 1.0) == {mine[2]}
        other = socket.create_connection(("127.0.0.1", broker.port), timeout=10, source_address=("127.0.0.2", 0))
        assert closed_by_broker([other], 1.0) == {other}
        for sock in mine[:2]:
            sock.sendall(frame(ApiVersionsRequest(), 0))
            assert read_response(sock, ApiVersionsRequest.api_key, 0).body.error_code == 0
            sock.close()
        other.close()


def test_queued_max_requests_bounds_the_requests_read_and_not_yet_started(tmp_path, monkeypatch):
    """While the broker is busy (its event loop blocked for a second here), 40 connections each send a request:
    with queued.max.requests=5, at most 5 are read before their handling starts (the others wait in their
    sockets), and every one is answered."""
    most = []
    received = broker_stream.Stream.buffer_updated

    def spy(stream, nbytes):
        received(stream, nbytes)
        most.append(stream._queue.size)

    monkeypatch.setattr(broker_stream.Stream, "buffer_updated", spy)
    with Running(tmp_path, {"queued.max.requests": "5"}) as broker:
        socks = [socket.create_connection(("127.0.0.1", broker.port), timeout=30) for _ in range(40)]
        for sock in socks:  # each connection's task now waits for its first request
            sock.sendall(frame(ApiVersionsRequest(), 0, 1))
            assert read_response(sock, ApiVersionsRequest.api_key, 0).body.error_code == 0
        most.clear()
        broker.loop.call_soon_threadsafe(time.sleep, 1.0)
        time.sleep(0.2)
        for sock in socks:
            sock.sendall(frame(ApiVersionsRequest(), 0, 2))
        for sock in socks:
            answer = read_response(sock, ApiVersionsRequest.api_key, 0)
            assert answer.header.correlation_id == 2 and answer.body.error_code == 0
            sock.close()
        assert most and max(most) <= 5, f"{max(most)} requests read and waiting with queued.max.requests=5"


def test_one_request_in_flight_per_connection_and_pipelining_stays_fast(tmp_path):
    """While a connection's Fetch waits, the broker reads ahead at most broker_stream.READ_AHEAD bytes of its requests
    (two of the 40 Produce requests of 100 kB it pipelined behind it; the rest wait in the socket); once the fetch
    is answered, they all are, in order. 2,000 pipelined requests are answered in order, quickly."""
    with Running(tmp_path) as broker:
        client = RawClient(broker.port)
        create_topic(client, "muted", 2)
        sock = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
        sock.sendall(frame(fetch_request("muted", (0,), max_wait_ms=20_000, min_bytes=1), 12, 0))
        time.sleep(0.2)
        data = batch((None, os.urandom(100_000)))
        sender = threading.Thread(target=sock.sendall, args=(b"".join(
            frame(produce_request("muted", 1, data), 9, i) for i in range(1, 41)),), daemon=True)
        sender.start()
        time.sleep(1.0)
        held = broker.on_loop(lambda: max(stream._waiting for stream in broker.server._connections))
        assert held <= 2 * len(data) + 4096, f"{held} bytes of requests read ahead of a waiting fetch"
        assert produce(client, "muted", 0, (None, b"wake")) == 0
        assert read_response(sock, FetchRequest.api_key, 12).header.correlation_id == 0
        answers = [read_response(sock, ProduceRequest.api_key, 9) for _ in range(40)]
        assert [a.header.correlation_id for a in answers] == list(range(1, 41))
        assert [a.body.responses[0].partition_responses[0].base_offset for a in answers] == list(range(40))
        sender.join(10)

        started = time.monotonic()
        piped = threading.Thread(target=sock.sendall, args=(b"".join(
            frame(ApiVersionsRequest(), 3, 100 + i) for i in range(2000)),), daemon=True)
        piped.start()
        ids = [read_response(sock, ApiVersionsRequest.api_key, 3).header.correlation_id for _ in range(2000)]
        assert ids == list(range(100, 2100))
        assert time.monotonic() - started < 10
        sock.close()
        client.close()


def test_answers_read_together_go_out_together_and_none_waits_behind_a_fetch(tmp_path, monkeypatch):
    """The answers to requests read in one receive are held and sent in one system call; an answer held when the
    next request waits (a Fetch for data that does not come) goes out before the wait, not after it."""
    sends = []
    send_held = broker_stream.Stream.send_held

    def counted(stream):
        if stream._held:
            sends.append(len(stream._held))
        send_held(stream)

    monkeypatch.setattr(broker_stream.Stream, "send_held", counted)
    with Running(tmp_path) as broker:
        client = RawClient(broker.port)
        create_topic(client, "held", 1)
        sock = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
        sends.clear()
        sock.sendall(b"".join(frame(ApiVersionsRequest(), 3, i) for i in range(200)))
        assert [read_response(sock, ApiVersionsRequest.api_key, 3).header.correlation_id
                for _ in range(200)] == list(range(200))
        assert sum(sends) == 200 and max(sends) > 1, sends

        started = time.monotonic()
        sock.sendall(frame(produce_request("held", 0, batch((None, b"v"))), 9, 500)
                     + frame(fetch_request("held", (0,), offset=1, max_wait_ms=20_000, min_bytes=1), 12, 501))
        answer = read_response(sock, ProduceRequest.api_key, 9)
        assert answer.header.correlation_id == 500 and time.monotonic() - started < 10
        assert produce(client, "held", 0, (None, b"wake")) == 0  # no error
        assert read_response(sock, FetchRequest.api_key, 12).header.correlation_id == 501
        sock.close()
        client.close()


# --- frames ------------------------------------------------------------------------------------------------------

@needs_proc
def test_a_size_prefix_alone_costs_little(tmp_path, descriptors_for):
    """300 connections send the first 8 bytes of a 1 MB request and stop: the broker's memory grows by what it
    received and a small first step per connection, not by the 1 MB each prefix announces."""
    descriptors_for(1000)
    broker = Broker(log_dir=tmp_path, subprocess=True).start()
    sockets = []
    try:
        time.sleep(0.5)
        baseline = rss_kib(broker.process.pid)
        for _ in range(300):
            sockets.append(socket.create_connection(("127.0.0.1", broker.port), timeout=10))
            sockets[-1].sendall((1 << 20).to_bytes(4, "big") + b"\x00\x00\x00\x12")
        time.sleep(1.5)
        per_connection = (rss_kib(broker.process.pid) - baseline) / len(sockets)
        assert per_connection < 400, f"{per_connection:.0f} KiB a connection for 8 bytes of a 1 MB request"
        client = RawClient(broker.port)  # a real large request is still taken whole
        create_topic(client, "large", max_message_bytes=str(8 << 20))
        value = os.urandom(3 << 20)
        assert produce(client, "large", 0, (None, value)) == 0
        assert values_of(client.call(fetch_request("large", partition_max=8 << 20), 12).body) == [value]
        client.close()
    finally:
        for sock in sockets:
            sock.close()
        broker.stop()
        broker.cleanup()


# --- authentication ----------------------------------------------------------------------------------------------

def sasl_overrides(**more):
    return {"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS_PLAIN,
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": JAAS_SCRAM,
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": JAAS_SCRAM, **more}


def test_a_failed_login_is_answered_after_the_delay_then_closed(tmp_path):
    """connection.failed.authentication.delay.ms (here 400) before the answer to a failed login, as Kafka
    does; a right password is answered at once. One client thread guesses 2-3 passwords a second, not 2,000."""
    with Running(tmp_path, sasl_overrides(**{"connection.failed.authentication.delay.ms": "400"})) as broker:
        started = time.monotonic()
        for attempt in range(4):
            raw = Raw(broker)
            assert raw.ask(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
            sent = time.monotonic()
            answer = raw.ask(SaslAuthenticateRequest(auth_bytes=b"\0alice\0guess-%d" % attempt), 2)
            assert answer.error_code == errors.SASL_AUTHENTICATION_FAILED.code
            assert time.monotonic() - sent >= 0.38
            assert raw.events() is None  # then closed
            raw.close()
        assert time.monotonic() - started >= 1.5

        raw = Raw(broker)  # SaslHandshake v0: raw tokens, and a failure is a closed connection, late too
        assert raw.ask(SaslHandshakeRequest(mechanism="PLAIN"), 0).error_code == 0
        sent = time.monotonic()
        assert raw.raw(b"\0alice\0wrong") is None
        assert time.monotonic() - sent >= 0.38
        raw.close()

        raw = Raw(broker)
        assert raw.ask(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
        sent = time.monotonic()
        assert raw.ask(SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"), 2).error_code == 0
        assert time.monotonic() - sent < 0.3
        raw.close()


def scram_attempt(broker, mechanism, user, password):
    """(salt, iterations, error code and message of the final answer) of one SCRAM login."""
    raw = Raw(broker)
    assert raw.ask(SaslHandshakeRequest(mechanism=mechanism), 1).error_code == 0
    client = ScramClient(mechanism, user, password)
    first = raw.ask(SaslAuthenticateRequest(auth_bytes=client.first()), 2)
    assert first.error_code == 0, "the first message must be answered alike for every user"
    fields = dict(item.split("=", 1) for item in first.auth_bytes.decode().split(","))
    final = raw.ask(SaslAuthenticateRequest(auth_bytes=client.final(first.auth_bytes)), 2)
    raw.close()
    return base64.b64decode(fields["s"]), int(fields["i"]), (final.error_code, final.error_message)


def test_scram_tells_no_unknown_user_and_runs_no_pbkdf2(tmp_path, monkeypatch):
    """An unknown user gets a salt of the same shape, the same at every attempt (as a known user's is), the same
    iterations, and the same refusal as a wrong password; the broker runs PBKDF2 for no attempt."""
    with Running(tmp_path, sasl_overrides(**{"connection.failed.authentication.delay.ms": "0"})) as broker:
        on_broker = []
        real = security.hashlib.pbkdf2_hmac

        def counted(*args, **kwargs):
            if threading.current_thread().name == BROKER_THREAD:
                on_broker.append(args[0])
            return real(*args, **kwargs)

        monkeypatch.setattr(security.hashlib, "pbkdf2_hmac", counted)
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            known = [scram_attempt(broker, mechanism, "alice", "wrong") for _ in range(2)]
            unknown = [scram_attempt(broker, mechanism, "mallory", "anything") for _ in range(2)]
            assert known[0] == known[1] and unknown[0] == unknown[1]  # a salt that stays: no oracle there
            assert [len(a[0]) for a in known + unknown] == [32] * 4
            assert {a[1:] for a in known + unknown} == {known[0][1:]}
            assert known[0][2][0] == errors.SASL_AUTHENTICATION_FAILED.code
        assert on_broker == [], f"PBKDF2 ran {len(on_broker)} times on the broker's event loop"


# --- groups ------------------------------------------------------------------------------------------------------

def subscription(*topics):
    """A ConsumerProtocolSubscription v0 of these topics."""
    out = bytearray(b"\x00\x00") + len(topics).to_bytes(4, "big")
    for topic in topics:
        out += len(topic).to_bytes(2, "big") + topic.encode()
    return bytes(out + b"\xff\xff\xff\xff")


def join_request(group, member_id="", topics=("t",)):
    return JoinGroupRequest(group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000,
                            member_id=member_id, protocol_type="consumer", protocols=[
                                JoinGroupRequest.JoinGroupRequestProtocol(name="range",
                                                                          metadata=subscription(*topics))])


def stable_member(client, group, topics=("t",)):
    """Join a group alone (JoinGroup v3 and SyncGroup); (member id, generation)."""
    joined = client.call(join_request(group, topics=topics), 3).body
    assert joined.error_code == 0
    synced = client.call(SyncGroupRequest(group_id=group, generation_id=joined.generation_id,
                                          member_id=joined.member_id, assignments=[]), 3).body
    assert synced.error_code == 0
    return joined.member_id, joined.generation_id


def heartbeat_ms(client, group, member_id, generation, count=100):
    times = []
    for _ in range(count):
        started = time.perf_counter()
        body = client.call(HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id), 3).body
        times.append(time.perf_counter() - started)
        assert body.error_code == 0
    return statistics.median(times) * 1000


def test_group_requests_cost_the_same_with_8000_groups(tmp_path):
    with Running(tmp_path) as broker:
        client = RawClient(broker.port)
        member_id, generation = stable_member(client, "mine")
        few = heartbeat_ms(client, "mine", member_id, generation)

        def many():  # 8,000 groups, each with a member whose timers run
            for i in range(8000):
                broker.state.groups.join(clock_ms(), f"other-{i}", join_of("", version=3), Waiter())

        broker.on_loop(many)
        with_many = heartbeat_ms(client, "mine", member_id, generation)
        assert with_many < 3 * few + 0.5, f"a heartbeat took {few:.2f} ms beside a few groups, {with_many:.2f} " \
                                          "ms beside 8,000"
        client.close()


def test_refused_joins_leave_no_groups_behind(tmp_path):
    with Running(tmp_path, {"offsets.retention.check.interval.ms": "500"}) as broker:
        client = RawClient(broker.port)
        for i in range(1000):
            refused = JoinGroupRequest(group_id=f"refused-{i}", session_timeout_ms=30000, rebalance_timeout_ms=30000,
                                       member_id="", protocol_type="consumer", protocols=[])
            assert client.call(refused, 3).body.error_code == errors.INCONSISTENT_GROUP_PROTOCOL.code
        deadline = time.monotonic() + 5
        while client.call(ListGroupsRequest(), 4).body.groups and time.monotonic() < deadline:
            time.sleep(0.2)
        assert client.call(ListGroupsRequest(), 4).body.groups == []
        client.close()


def test_group_max_size_is_honoured(tmp_path):
    with Running(tmp_path, {"group.max.size": "1"}) as broker:
        first, second = RawClient(broker.port), RawClient(broker.port)
        stable_member(first, "small")
        assert second.call(join_request("small"), 3).body.error_code == errors.GROUP_MAX_SIZE_REACHED.code
        first.close()
        second.close()


def offsets_state(tmp_path):
    state = make_state(tmp_path, **{"group.initial.rebalance.delay.ms": "0"})
    return state


def settle(state, body, version):
    return Pending(state, body, version).settle()


def test_offsets_expire_as_kafkas_do(tmp_path):
    """Kafka's rules: an Empty group's offsets expire retention after it became Empty (not after their commit);
    a group that never had members, retention after the commit; a Stable consumer group keeps the offsets of
    the topics it subscribes to and loses the others' after retention."""
    state = offsets_state(tmp_path)
    try:
        day = 24 * 3600 * 1000
        now = int(time.time() * 1000)
        old = now - 2 * day
        for group in ("left", "stable"):
            joined = settle(state, join_request(group, topics=("kept",)), 3)
            assert joined.error_code == 0
            synced = settle(state, SyncGroupRequest(group_id=group, generation_id=joined.generation_id,
                                                    member_id=joined.member_id, assignments=[]), 3)
            assert synced.error_code == 0
            state.groups.commit(group, [(("kept", 0), (5, -1, "", old)), (("gone", 0), (6, -1, "", old))])
            if group == "left":
                assert settle(state, LeaveGroupRequest(group_id=group, member_id=joined.member_id), 0) \
                    .error_code == 0
        state.groups.commit("alone", [(("kept", 0), (7, -1, "", old))])

        assert state.groups.expire_offsets(now, day) == 2
        assert "alone" not in state.groups.groups  # never had members: retention after its commit
        assert set(state.groups.committed("left")) == {("kept", 0), ("gone", 0)}  # empty for a moment only
        assert set(state.groups.committed("stable")) == {("kept", 0)}  # it subscribes to "kept" only
        assert state.groups.expire_offsets(now + day + 1000, day) == 2
        assert "left" not in state.groups.groups and "left" not in state.groups.offsets.by_group
        assert set(state.groups.committed("stable")) == {("kept", 0)}
    finally:
        state.close()


def consumer_heartbeat(client, group, member_id, epoch, names=None, regex=None):
    body = ConsumerGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=epoch,
                                         rebalance_timeout_ms=30000 if epoch == 0 else -1,
                                         subscribed_topic_names=names, subscribed_topic_regex=regex,
                                         server_assignor=None, topic_partitions=[] if epoch == 0 else None)
    return client.call(body, 1).body


def consumer_heartbeat_ms(client, group, member_id, epoch, count=50):
    times = []
    for _ in range(count):
        started = time.perf_counter()
        answer = consumer_heartbeat(client, group, member_id, epoch)
        times.append(time.perf_counter() - started)
        assert answer.error_code == 0, answer
        epoch = answer.member_epoch
    return statistics.median(times) * 1000


def test_a_subscription_too_big_for_kafkas_offsets_log_is_refused(tmp_path):
    """Kafka 4.3 writes a member's subscribed names in one record of its offsets log, whose batch must fit in
    message.max.bytes: 300,000 names do not, and the join is UNKNOWN_SERVER_ERROR (without a message, as Kafka
    answers a failed write). 60,000 fit; either way the other members' heartbeats stay cheap."""
    with Running(tmp_path) as broker:
        client = RawClient(broker.port)
        small = consumer_heartbeat(client, "kip848", "small-member-0000000001", 0, names=["t"])
        assert small.error_code == 0
        epoch = small.member_epoch
        huge = consumer_heartbeat(client, "kip848", "huge-member-00000000001", 0,
                                  names=[f"topic-{i:07d}" for i in range(300_000)])
        assert (huge.error_code, huge.error_message) == (errors.UNKNOWN_SERVER_ERROR.code, None)
        assert consumer_heartbeat_ms(client, "kip848", "small-member-0000000001", epoch) < 10
        large = consumer_heartbeat(client, "kip848", "large-member-0000000001", 0,
                                   names=[f"topic-{i:07d}" for i in range(60_000)])
        assert large.error_code == 0
        epoch = consumer_heartbeat(client, "kip848", "small-member-0000000001", epoch).member_epoch
        cost = consumer_heartbeat_ms(client, "kip848", "small-member-0000000001", epoch)
        assert cost < 10, f"a heartbeat took {cost:.1f} ms beside a member of 60,000 topic names"
        client.close()


def test_regexes_a_member_moves_away_from_are_freed(tmp_path):
    """300 heartbeats, each with a new 30 kB regex: the group keeps the last one, and the broker's memory does
    not grow with the ones left behind."""
    with Running(tmp_path) as broker:
        client = RawClient(broker.port)
        create_topic(client, "r0-1")

        def regex(k):
            return "(?:" + "|".join(f"r{k}-{j}" for j in range(3000)) + ")"

        member = "regex-member-0000000001"
        answer = consumer_heartbeat(client, "regexes", member, 0, regex=regex(0))
        assert answer.error_code == 0
        epoch = answer.member_epoch
        for k in range(1, 20):  # warm up (allocator, caches)
            epoch = consumer_heartbeat(client, "regexes", member, epoch, regex=regex(k)).member_epoch
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for k in range(20, 320):
                answer = consumer_heartbeat(client, "regexes", member, epoch, regex=regex(k))
                assert answer.error_code == 0
                epoch = answer.member_epoch
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        kept = broker.on_loop(lambda: list(broker.state.groups.groups["regexes"].regexes))
        assert kept == [regex(319)]
        assert grown < 8 << 20, f"300 regexes left behind took {grown >> 10} KiB"
        client.close()


# --- errors: logged, and the housekeeping goes on ------------------------------------------------------------------

def test_an_error_escaping_a_connection_is_logged_with_it(tmp_path, monkeypatch, caplog):
    def failing(stream, parts):
        raise RuntimeError("Transport is closing")

    monkeypatch.setattr(server, "_send_parts", failing)
    caplog.set_level(logging.INFO)
    with Running(tmp_path) as broker:
        client = RawClient(broker.port)
        create_topic(client, "sent")
        assert produce(client, "sent", 0, (None, os.urandom(100_000))) == 0
        sock = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
        sock.sendall(frame(fetch_request("sent"), 12))
        assert closed_by_broker([sock], 5)  # its answer could not be sent: closed
        sock.close()
        assert client.call(ApiVersionsRequest(), 0).body.error_code == 0  # the others are served
        client.close()
    gc.collect()
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR and r.exc_info
                and "RuntimeError" in r.getMessage() + repr(r.exc_info[1])]
    assert failures and "127.0.0.1" in failures[0].getMessage(), caplog.text
    assert "was never retrieved" not in caplog.text


def test_housekeeping_survives_a_partition_it_cannot_compact(tmp_path, caplog):
    """A compacted topic with a batch that cannot be read: its compaction fails and is logged with the cause
    once, and everything else the housekeeping does goes on, at that turn and the next: another compacted topic
    is compacted, and an idle connection is closed."""
    caplog.set_level(logging.INFO)
    overrides = {"log.cleaner.backoff.ms": "0", "connections.max.idle.ms": "3000"}
    with Running(tmp_path, overrides) as broker:
        client = RawClient(broker.port)
        for name in ("bad", "good"):  # "bad" first: the housekeeping meets it first
            create_topic(client, name, cleanup_policy="delete", internal_segment_bytes="200")
            for i in range(4):
                assert produce(client, name, 0, *[(b"key %d" % k, b"%s %d" % (name.encode(), i)) for k in range(3)]) \
                    == 0
        first_segment = tmp_path / "data" / "bad-0" / f"{0:020d}.log"
        data = bytearray(first_segment.read_bytes())
        data[61:] = b"\xff" * (len(data) - 61)  # the records of its first batch turn to garbage
        first_segment.write_bytes(bytes(data))
        idle = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
        for name in ("bad", "good"):
            body = IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=2, resource_name=name, configs=[
                    IncrementalAlterConfigsRequest.AlterableConfig(name="cleanup.policy", config_operation=0,
                                                                   value="compact")])], validate_only=False)
            assert client.call(body, 1).body.responses[0].error_code == 0
        deadline = time.monotonic() + 10
        good = []
        while time.monotonic() < deadline:
            good = values_of(client.call(fetch_request("good"), 12).body)
            if len(good) < 12:
                break
            time.sleep(0.2)
        assert len(good) < 12, "the topic after the one that failed was never compacted"
        assert closed_by_broker([idle], 8), "the housekeeping stopped closing idle connections"
        idle.close()
        client.close()
    failed = [r for r in caplog.records if "compaction of bad-0 failed" in r.getMessage()]
    assert len(failed) == 1 and failed[0].exc_info, caplog.text


def test_a_negative_idle_time_never_closes_idle_connections(tmp_path):
    """connections.max.idle.ms=-1 is Kafka's "never": a silent connection stays open through housekeeping."""
    with Running(tmp_path, {"connections.max.idle.ms": "-1"}) as broker:
        idle = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
        try:
            assert not closed_by_broker([idle], 2.5)
            client = RawClient(broker.port)
            answer = client.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
            assert answer.body.error_code == 0
            client.close()
        finally:
            idle.close()
