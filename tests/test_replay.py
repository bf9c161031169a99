"""kafkaproto.replay without a network: the plan a capture gives, what cannot be replayed and why, the replayer
driven against an in-memory broker that answers as "another broker" would (the capture's answers with other ids
and offsets), the requests it rewrites, and the comparison's rules.

The other broker renames what brokers make up: producer ids (+1000), topic IDs (bytes reversed), member ids
(a suffix), fetch session ids (+7), and offsets (+5: its log holds five more records before the capture's). A
replay that tracks each value from the answer that introduced it sends exactly the capture's requests renamed
the same way, and finds no divergence; change one field of one answer and it finds that one.
"""

import copy
import io
import struct
from collections import defaultdict, deque
from pathlib import Path

import pytest

from kafkaproto import errors, records
from kafkaproto.capture import read_capture
from kafkaproto.connection import RequestReceived, ServerConnection
from kafkaproto.messages import (ApiKey, ApiVersionsResponse, MetadataRequest, MetadataResponse,
                                 RequestHeader, ResponseHeader, SaslHandshakeRequest, SaslHandshakeResponse,
                                 WriteTxnMarkersRequest, WriteTxnMarkersResponse)
from kafkaproto.protocol import encode_request, encode_response
from kafkaproto import fields
from kafkaproto.replay import Plan, Replayer
from kafkaproto.replay.plan import not_ready
from kafkaproto.replay.report import compare_with_capture
from kafkaproto.uuid import Uuid

from test_capture import Tcp, metadata_round, pcap_bytes
from test_capture_hostile import APPLICATION_DATA, CLIENT_HELLO, SERVER_HELLO

pytestmark = pytest.mark.above_the_codecs  # the same code over either codec implementation (conftest.py)

CAPTURES = sorted((Path(__file__).parent / "data" / "captures").glob("*.pcap"))
SHIFT = 5


def plan_of(path):
    return Plan.of(read_capture(path))


# ---- "another broker": the capture's values renamed ----------------------------------------------------------

def renamed(body, answer, shift=SHIFT, members=None):
    """body as another broker's session would carry it (see the module's doc); None stays None. shift: how far
    its offsets lie; members: the member ids the broker made up (KIP-848 clients choose their own)."""
    if body is None:
        return None

    def producer(pid, epoch):
        return (pid + 1000 if pid >= 0 else pid), epoch

    def change(role, value, where, obj):
        if role == fields.PRODUCER_ID and value >= 0:
            return value + 1000
        if role == fields.TOPIC_ID and value != Uuid.ZERO:
            return Uuid.from_bytes(value.bytes[::-1])
        if role == fields.MEMBER and value and (members is None or value in members):
            return value + "-there"
        if role == fields.SESSION and value:
            return value + 7
        if role == fields.OFFSET and value >= 0:
            return value + shift
        if role == fields.RECORDS and value is not None and len(value):
            return patch(value, producer, shift if answer else 0)
        return value

    return fields.edit(body, change)


def made_up_members(plan):
    """The member ids the capture's broker made up: those its JoinGroup answers gave."""
    return {s.answer.member_id for s in plan.steps if s.exchange.api_key == ApiKey.JOIN_GROUP and s.answer}


def patch(data, producer, shift):
    from kafkaproto.replay.rewrite import _patch_batches
    return _patch_batches(data, producer=producer, offset_delta=shift)


class OtherBroker:
    """In memory: a ServerConnection per replayed connection, answering each request with its step's captured
    answer renamed (or what ``answer(step, attempt)`` gives), and keeping what it was sent."""

    def __init__(self, plan, answer=None):
        self.expected = defaultdict(deque)
        for step in plan.steps:
            if step.skip is None:
                self.expected[step.connection].append(step)
        members = made_up_members(plan)
        self.answer = answer or (lambda step, attempt: renamed(step.answer, True, members=members))
        self.servers = {}
        self.received = defaultdict(list)  # step index -> [request bodies]

    def handle(self, key, data):
        out = b""
        for event in self.servers[key].receive_data(data):
            assert isinstance(event, RequestReceived)
            queue = self.expected[key]
            step = queue[0]
            attempts = self.received[step.index]
            attempts.append(event.body)
            reply = self.answer(step, len(attempts)) if event.expects_response else None
            if reply is None or not not_ready(reply):
                queue.popleft()  # answered for good (a not-ready answer is asked again)
            if reply is not None:
                out += self.servers[key].send_response(event, reply, version=step.exchange.api_version)
        return out


def replay_offline(plan, broker, speed=None, pauses=None, **options):
    """Drive a Replayer (with options) against an in-memory broker on a clock of its own; the finished Replayer.
    pauses, a list, gets (time, Pause) of each wait the replayer announces."""
    replayer = Replayer(plan, speed=speed, setup=False, **options)
    now = 0.0
    replayer.start(now)
    for _ in range(100_000):
        actions = replayer.actions(now)
        for action in actions:
            kind, key = action[0], action[1]
            if kind == "connect":
                broker.servers[key] = ServerConnection()
            elif kind == "send":
                reply = broker.handle(key, action[2])
                if reply:
                    replayer.received(key, reply, now)
            elif kind == "wait" and pauses is not None:
                pauses.append((now, action[2]))
        if replayer.finished:
            return replayer
        if not actions:
            wakeup = replayer.wakeup()
            assert wakeup is not None, "the replayer waits for nothing and is not finished"
            now = max(now, wakeup)
    raise AssertionError("the replay did not finish")


@pytest.mark.parametrize("path", CAPTURES, ids=[p.stem for p in CAPTURES])
def test_requests_are_rewritten_with_what_the_target_made_up(path):
    """Every request the replayer sends is the captured one with the other broker's ids and offsets, learned from
    the answers that introduced them; nothing diverges, and offsets are reported as shifted."""
    plan = plan_of(path)
    broker = OtherBroker(plan)
    replayer = replay_offline(plan, broker)
    sent = 0
    for step in plan.steps:
        if step.skip is not None:
            assert step.index not in broker.received
            continue
        (request,) = broker.received[step.index]
        assert request.to_dict() == renamed(step.request, False, members=made_up_members(plan)).to_dict(), step
        sent += 1
    assert sent > 20
    report = compare_with_capture(plan, replayer)
    assert report.ok, report.divergences[:5]
    assert sum(report.compared.values()) >= sent - 3  # all but the answers the capture lacks or acks=0 owes
    assert report.shifts and {delta for _, delta in report.shifts.values()} == {SHIFT}, report.shifts
    # Record batches were rewritten whole: every one sent still has a good CRC.
    for requests in broker.received.values():
        for request in requests:
            for topic in getattr(request, "topic_data", ()):
                for part in topic.partition_data:
                    assert all(b.crc_ok() for b in records.iter_batches(part.records))


def test_one_field_changed_is_one_divergence():
    path = next(p for p in CAPTURES if p.stem == "java-4.3.1")
    plan = plan_of(path)
    fetches = [s for s in plan.steps if s.exchange.api_key == ApiKey.FETCH and s.skip is None
               and any(p.records for t in s.answer.responses for p in t.partitions)]
    target = fetches[0]

    def answer(step, attempt):
        body = renamed(step.answer, True)
        if step is target:
            part = body.responses[0].partitions[0]
            builder = records.RecordBatchBuilder()
            builder.append(b"k", b"not what was produced", timestamp=1)
            part.records = part.records[:0] + builder.build()
        return body

    report = compare_with_capture(plan, replay_offline(plan, OtherBroker(plan, answer)))
    assert report.divergences and {d.step for d in report.divergences} == {target.index}
    assert all(d.path.startswith("response.responses[0].partitions[0].records") for d in report.divergences)


def test_a_target_not_ready_is_asked_again():
    """Where the target answers COORDINATOR_LOAD_IN_PROGRESS and the capture did not, the request goes again with
    a new correlation id until the answer is ready; only that answer is compared."""
    plan = plan_of(next(p for p in CAPTURES if p.stem == "librdkafka"))
    joins = [s for s in plan.steps if s.exchange.api_key == ApiKey.JOIN_GROUP and s.skip is None]

    def answer(step, attempt):
        body = renamed(step.answer, True)
        if step is joins[0] and attempt < 3:
            body = type(body)(error_code=errors.COORDINATOR_LOAD_IN_PROGRESS.code)
        return body

    broker = OtherBroker(plan, answer)
    replayer = replay_offline(plan, broker)
    assert len(broker.received[joins[0].index]) == 3
    assert replayer.results[joins[0].index].attempts == 3
    assert compare_with_capture(plan, replayer).ok


def test_requests_wait_for_the_answers_the_capture_saw_first():
    """A step is sent only after every answer the capture saw arrive before it was sent, on any connection."""
    plan = plan_of(next(p for p in CAPTURES if p.stem == "java-4.3.1"))
    order = []

    def answer(step, attempt):
        order.append(step.index)
        return renamed(step.answer, True)

    replay_offline(plan, OtherBroker(plan, answer))
    ranked = sorted((s for s in plan.steps if s.rank is not None), key=lambda s: s.rank)
    position = {index: i for i, index in enumerate(order)}
    for step in plan.steps:
        if step.skip is None:
            # the answers before it in the capture were all given before this request reached the broker
            assert all(position[earlier.index] < position[step.index] for earlier in ranked[:step.after]), step
    assert order == sorted(order, key=lambda i: plan.steps[i].exchange.request_time_ns)


def test_at_the_capture_pace_requests_keep_their_spacing():
    plan = plan_of(next(p for p in CAPTURES if p.stem == "kafka-python"))
    replayer = replay_offline(plan, OtherBroker(plan), speed=2.0)
    first = plan.steps[0].exchange.request_time_ns
    for result in replayer.results:
        if result.sent is not None:
            assert result.sent >= (result.step.exchange.request_time_ns - first) / 1e9 / 2.0 - 1e-9


# ---- what cannot be replayed ------------------------------------------------------------------------------------

def frames(tcp, correlation_id, request, response, version, key):
    header = RequestHeader(request_api_key=key, request_api_version=version, correlation_id=correlation_id,
                           client_id="c")
    return (tcp.send(True, encode_request(header, request, version))
            + tcp.send(False, encode_response(ResponseHeader(correlation_id=correlation_id), response, version)))


def test_connections_that_cannot_be_replayed_say_why():
    segs = []
    port = iter(range(40000, 40100))

    def connection(build, syn=True):
        tcp = Tcp(client=("10.0.0.2", next(port)))
        nonlocal segs
        segs += (tcp.handshake() if syn else []) + build(tcp) + tcp.close()

    connection(lambda tcp: metadata_round(tcp, 1))  # replayable
    connection(lambda tcp: tcp.send(True, CLIENT_HELLO) + tcp.send(False, SERVER_HELLO)
               + tcp.send(True, APPLICATION_DATA))
    connection(lambda tcp: metadata_round(tcp, 7), syn=False)
    connection(lambda tcp: frames(tcp, 1, SaslHandshakeRequest(mechanism="SCRAM-SHA-512"),
                                  SaslHandshakeResponse(error_code=0, mechanisms=["SCRAM-SHA-512"]), 1,
                                  ApiKey.SASL_HANDSHAKE))
    connection(lambda tcp: frames(tcp, 1, SaslHandshakeRequest(mechanism="PLAIN"),
                                  SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN"]), 0, ApiKey.SASL_HANDSHAKE)
               + tcp.send(True, struct.pack(">i", 12) + b"\x00user\x00secret") + tcp.send(False, bytes(4)))
    connection(lambda tcp: frames(tcp, 1, WriteTxnMarkersRequest(markers=[]), WriteTxnMarkersResponse(markers=[]), 1,
                                  ApiKey.WRITE_TXN_MARKERS))

    def cut(tcp):  # a request whose middle the capture lost
        header = RequestHeader(request_api_key=ApiKey.METADATA, request_api_version=12, correlation_id=1,
                               client_id="c")
        data = tcp.send(True, encode_request(header, MetadataRequest(topics=[
            MetadataRequest.MetadataRequestTopic(name="t" * 3000)]), 12))
        return [data[0]] + data[2:]

    connection(cut)
    plan = Plan.of(read_capture(io.BytesIO(pcap_bytes(segs)), ports=[9092]))
    reasons = {client[1]: reason for _, client, reason in plan.not_replayable}
    assert sorted(reasons) == list(range(40001, 40007)), plan.not_replayable
    assert "TLS" in reasons[40001]
    assert "joined" in reasons[40002]
    assert "SCRAM" in reasons[40003] and "nonce" in reasons[40003]
    assert "raw" in reasons[40004] and "SaslHandshake v0" in reasons[40004]
    assert "cluster's own" in reasons[40005] and "WRITE_TXN_MARKERS" in reasons[40005]
    assert "cannot be read" in reasons[40006]
    assert [(s.exchange.client_port, s.exchange.api_name) for s in plan.steps] == [(40000, "Metadata")]


def test_answers_that_only_said_not_ready_are_not_replayed():
    """The client asked again: the replay sends only the attempt that was answered (rule loading)."""
    plan = plan_of(next(p for p in CAPTURES if p.stem == "aiokafka"))
    skipped = [s for s in plan.steps if s.skip]
    assert len(skipped) == 17 and all("not ready" in s.skip for s in skipped)
    assert {s.exchange.api_name for s in skipped} == {"JoinGroup", "FindCoordinator"}
    assert all(s.rank is None for s in skipped)


# ---- the comparison's rules ---------------------------------------------------------------------------------------

def only(plan, key):
    """A plan of the first step of one API (and its captured answer)."""
    step = next(s for s in plan.steps if s.exchange.api_key == key and s.skip is None)
    plan.steps = [step]
    step.index, step.after, step.rank = 0, 0, 0
    return plan, step


def replay_one(plan, reply):
    return compare_with_capture(plan, replay_offline(plan, OtherBroker(plan, lambda step, attempt: reply)))


def test_api_versions_is_compared_for_what_the_capture_uses():
    plan, step = only(plan_of(next(p for p in CAPTURES if p.stem == "java-4.3.1")), ApiKey.API_VERSIONS)
    versions = {ApiKey.END_TXN: {5}, ApiKey.METADATA: {13}}
    plan.versions = versions
    mine = step.answer
    fewer = ApiVersionsResponse(error_code=0, throttle_time_ms=0, api_keys=[
        ApiVersionsResponse.ApiVersion(api_key=k.api_key, min_version=k.min_version,
                                       max_version=4 if k.api_key == ApiKey.END_TXN else k.max_version)
        for k in mine.api_keys if k.api_key != ApiKey.PRODUCE], finalized_features=mine.finalized_features)
    report = replay_one(plan, fewer)  # Produce is gone, but the capture does not use it
    assert [(d.path, d.right) for d in report.divergences] == [
        ("response.apis the capture uses.EndTxn", "lacks v5")]
    fewer.api_keys = [k for k in fewer.api_keys if k.api_key != ApiKey.END_TXN or k.max_version == 4] + []
    fewer.finalized_features = []
    report = replay_one(plan, fewer)
    assert ("response.finalized features.transaction.version", 2, 0) in {(d.path, d.left, d.right)
                                                                         for d in report.divergences}


def test_topics_the_capture_never_names_are_left_out():
    plan, step = only(plan_of(next(p for p in CAPTURES if p.stem == "kafka-python")), ApiKey.METADATA)
    reply = copy.deepcopy(step.answer)  # another broker's answer, with more topics than the capture names
    reply.topics.append(MetadataResponse.MetadataResponseTopic(name="someone-elses", topic_id=Uuid.random(),
                                                               partitions=[]))
    reply.topics.append(MetadataResponse.MetadataResponseTopic(name="__consumer_offsets", is_internal=True))
    report = replay_one(plan, reply)
    assert report.ok and report.excused["other-topics"] == 2


def fetch_with_batches():
    """A plan of the first Fetch of the Java 4.3.1 capture whose answer holds several batches in a partition."""
    plan = plan_of(next(p for p in CAPTURES if p.stem == "java-4.3.1"))
    step = next(s for s in plan.steps if s.exchange.api_key == ApiKey.FETCH and s.skip is None and any(
        len(list(records.iter_batches(p.records))) > 1 for t in s.answer.responses for p in t.partitions))
    plan.steps = [step]
    step.index, step.after, step.rank = 0, 0, 0
    return plan, step


def first_batch_only(part):
    return bytes(part.records)[:12 + struct.unpack_from(">i", part.records, 8)[0]]


def test_a_fetch_may_hold_fewer_of_the_same_batches():
    """A fetch answers with what the log holds when its wait ends (rule fetch-wait): the first batch alone, with
    its high watermark then, is the same log read earlier."""
    plan, step = fetch_with_batches()
    reply = renamed(step.answer, True, shift=0)
    part = next(p for t in reply.responses for p in t.partitions if len(list(records.iter_batches(p.records))) > 1)
    part.records = first_batch_only(part)
    part.high_watermark = part.last_stable_offset = next(iter(records.iter_batches(part.records))).last_offset + 1
    report = replay_one(plan, reply)
    assert report.ok and report.excused["fetch-wait"] >= 1


def test_a_fetch_may_not_hold_other_batches():
    plan, step = fetch_with_batches()
    reply = renamed(step.answer, True, shift=0)
    part = next(p for t in reply.responses for p in t.partitions if len(list(records.iter_batches(p.records))) > 1)
    builder = records.RecordBatchBuilder()
    builder.append(b"k", b"something else", timestamp=1)
    part.records = builder.build()
    report = replay_one(plan, reply)
    assert not report.ok and all(".records" in d.path for d in report.divergences)


def test_offsets_move_from_where_the_logs_part():
    """A target whose log holds five more records from offset 10 on: offsets answers paired stand for their own
    counterparts (the log's start stays 0), offsets from 10 on move by 5, older ones are left alone."""
    from kafkaproto.replay.rewrite import Values

    values = Values(plan_of(CAPTURES[0]))
    values.shifts[("t", 0)] = (10, 5)
    values.offsets[("t", 0)] = {0: 0, 10: 15}
    where = fields.Where(topic="t", partition=0)
    assert [values._offset(where, v, True) for v in (-1, 0, 5, 10, 12)] == [-1, 0, 5, 15, 17]
    assert [values._offset(where, v, False) for v in (-1, 0, 3, 15, 17)] == [-1, 0, 3, 10, 12]
    assert values._offset(fields.Where(topic="other", partition=0), 12, True) == 12


def test_roles_cover_every_field_the_specs_mark():
    """Every field a spec marks as a producer id or a broker id, in every message, has the role the replay
    rewrites it by (names vary: V3AndBelowProducerId, OngoingTxnProducerId, ...)."""
    from kafkaproto import registry

    seen, checked = set(), 0

    def walk(cls):
        nonlocal checked
        if cls in seen:
            return
        seen.add(cls)
        roles = {attr: role for attr, role, _, _ in fields.roles(cls)}
        for f in cls._fields:
            if f.entity == "producerId":
                assert roles.get(f.attr) == fields.PRODUCER_ID, (cls._qualname, f.name)
                checked += 1
            elif f.entity == "brokerId" and f.kind == "int32":
                assert roles.get(f.attr) == fields.NODE, (cls._qualname, f.name)
                checked += 1
            if f.struct is not None:
                walk(f.struct)

    for cls in registry.classes().values():
        walk(cls)
    assert checked > 50


def test_a_plan_from_exchange_rows_is_the_plan_from_the_file():
    """Rows written with bodies "exact" (a Parquet file's, a Spark job's) carry everything a replay needs."""
    import json

    from kafkaproto.capture import tables

    path = next(p for p in CAPTURES if p.stem == "franz-go")
    rows = [json.loads(json.dumps(tables.exchange_row(ex, str(path), bodies="exact"))) for ex in read_capture(path)]
    from_rows, from_file = Plan.of_rows(rows), plan_of(path)
    assert [(s.connection, s.after, s.skip, s.header, s.request, s.answer) for s in from_rows.steps] == \
        [(s.connection, s.after, s.skip, s.header, s.request, s.answer) for s in from_file.steps]
    assert compare_with_capture(from_rows, replay_offline(from_rows, OtherBroker(from_rows))).ok
    # Rows whose records were spelled out cannot give back the bytes sent: said, with where.
    spelled = [tables.exchange_row(ex, str(path)) for ex in read_capture(path)]
    with pytest.raises(ValueError, match=r"ProduceRequest \(row request\)\.topic_data\[0\]\.partition_data\[0\]"
                                         r"\.records: records spelled out"):
        Plan.of_rows(spelled)


def test_clocks_that_disagree_do_not_stall_the_replay():
    """An answer stamped before the requests that came before it (a capture merged from hosts whose clocks
    differ): no step waits for an answer to itself or to a later step, and the replay ends."""
    plan_ = plan_of(next(p for p in CAPTURES if p.stem == "kafka-python"))
    late = plan_.steps[-1]
    late.exchange.response_time_ns = plan_.steps[0].exchange.request_time_ns - 1
    plan_ = Plan.of(step.exchange for step in plan_.steps)
    assert plan_.steps[-1].rank == 0 and all(s.after == 0 for s in plan_.steps)
    assert compare_with_capture(plan_, replay_offline(plan_, OtherBroker(plan_))).ok


def test_the_shift_comes_from_the_log_end():
    """The earliest offset pairs with its counterpart only; the log's end (latest, a produce) sets the shift."""
    from types import SimpleNamespace

    from kafkaproto.messages import ListOffsetsRequest, ListOffsetsResponse
    from kafkaproto.replay.rewrite import Values

    def asked(timestamp):
        return ListOffsetsRequest(topics=[ListOffsetsRequest.ListOffsetsTopic(name="t", partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=timestamp)])])

    def answered(offset):
        return ListOffsetsResponse(topics=[ListOffsetsResponse.ListOffsetsTopicResponse(name="t", partitions=[
            ListOffsetsResponse.ListOffsetsPartitionResponse(partition_index=0, error_code=0, offset=offset)])])

    def step(timestamp, captured):
        return SimpleNamespace(exchange=SimpleNamespace(api_key=ApiKey.LIST_OFFSETS, api_version=7),
                               request=asked(timestamp), answer=answered(captured))

    values = Values(plan_of(CAPTURES[0]))
    values.learn(step(-2, 0), answered(0))
    assert values.shifts == {} and values.offsets == {("t", 0): {0: 0}}
    values.learn(step(-1, 20), answered(25))
    assert values.shifts == {("t", 0): (20, 5)}
    where = fields.Where(topic="t", partition=0)
    assert [values._offset(where, v, True) for v in (0, 20, 21)] == [0, 25, 26]


# ---- the command line: what it cannot do, and what it shows ------------------------------------------------------

def kafkaproto_replay(*args, cwd, timeout=120):
    """The console command, run outside the checkout so the installed package answers."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "kafkaproto", "replay", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout)


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


KAFKA_PYTHON = next(p for p in CAPTURES if p.stem == "kafka-python")


@pytest.mark.parametrize("content", [b"", b"this is a text file, not a capture\n"], ids=["empty", "text"])
def test_a_file_that_is_not_a_capture_is_not_replayed(tmp_path, content):
    path = tmp_path / "notes.pcap"
    path.write_bytes(content)
    run = kafkaproto_replay(path, "--bootstrap-server", f"127.0.0.1:{free_port()}", cwd=tmp_path)
    assert run.returncode == 2 and run.stdout == "", run.stdout
    assert run.stderr == f"kafkaproto: error: {path}: not a pcap or pcapng file (it starts with " \
                         f"{content[:4].hex() or 'nothing'}{' and has only 0 bytes' if not content else ''})\n"


def test_a_broker_that_cannot_be_reached_is_said_to_be_so(tmp_path):
    """Nothing listens at the address: exit status 2 and the address named, not a divergence per request."""
    port = free_port()
    for extra in ((), ("--no-setup",), ("--format", "jsonl")):
        run = kafkaproto_replay(KAFKA_PYTHON, "--bootstrap-server", f"127.0.0.1:{port}", "--speed", "max", *extra,
                                cwd=tmp_path)
        assert (run.returncode, run.stdout) == (2, ""), (extra, run.stdout)
        assert run.stderr == f"kafkaproto: error: cannot reach the broker at 127.0.0.1:{port}: Connection refused\n"
    from kafkaproto.broker import Broker

    with Broker() as up:  # the one that is there is not the one named
        run = kafkaproto_replay(KAFKA_PYTHON, "--bootstrap-server", up.bootstrap_servers, "--against",
                                f"127.0.0.1:{port}", cwd=tmp_path)
    assert run.returncode == 2 and f"cannot reach the broker at 127.0.0.1:{port}" in run.stderr


def test_a_broker_that_does_not_answer_in_time(monkeypatch):
    import asyncio

    from kafkaproto.replay import Unreachable, network, replay

    async def never(*args, **kwargs):
        await asyncio.sleep(3600)

    monkeypatch.setattr(network.asyncio, "open_connection", never)
    with pytest.raises(Unreachable, match=r"cannot reach the broker at kafka:9092: no connection within 0\.05 s"):
        asyncio.run(network.check_reachable("kafka:9092", timeout=0.05))
    monkeypatch.setattr(network, "_CONNECT_TIMEOUT", 0.05)
    with pytest.raises(Unreachable):  # nothing is replayed
        asyncio.run(replay(plan_of(KAFKA_PYTHON), "kafka:9092", check=True))


@pytest.mark.parametrize("ports", ["abc", "0", "70000", "9092,,9093"])
def test_ports_must_be_port_numbers(tmp_path, ports):
    run = kafkaproto_replay(KAFKA_PYTHON, "--bootstrap-server", "127.0.0.1:9", "--ports", ports, cwd=tmp_path)
    bad = next(p for p in ports.split(",") if not (p.isdigit() and 1 <= int(p) <= 65535))
    assert run.returncode == 2 and f"--ports: {bad!r} is not a port number (1-65535)" in run.stderr
    assert "Traceback" not in run.stderr and "invalid literal" not in run.stderr


def test_long_values_are_shown_where_they_differ():
    """Two records fields of 5 KiB that differ at byte 4088: each side is shown around that byte, not cut to the
    same first 160 characters."""
    from kafkaproto.cli.replay import print_table
    from kafkaproto.replay import Divergence, Report

    captured = bytes(range(256)) * 20
    target = bytearray(captured)
    target[4088] = 0x2A
    plan_ = plan_of(KAFKA_PYTHON)
    report = Report(plan_, ("capture", "127.0.0.1:9092"))
    report.divergences.append(Divergence(0, 5, "Fetch", 12, 7, "response.responses[0].partitions[0].records",
                                         captured, bytes(target)))
    report.divergences.append(Divergence(0, 6, "Metadata", 12, 8, "response.cluster_id", "one", "two"))
    out = io.StringIO()
    print_table(report, "x.pcap", None, out)
    lines = out.getvalue().splitlines()
    records = next(line for line in lines if line.endswith(("…", "'")) and "records" in line)
    left, right = records.split(": ", 1)[1].split(" | ")
    assert left != right and len(left) <= 160 and len(right) <= 160
    for side, byte in ((left, captured[4088]), (right, 0x2A)):
        assert side.startswith("[from byte 4072 of 5120, first difference at 4088] …b'")
        assert repr(bytes([byte]))[2:-1] in side and side.endswith("…")
    assert "response.cluster_id: 'one' | 'two'" in out.getvalue()  # short values are shown whole


def test_shown_values_of_other_kinds():
    from kafkaproto.cli.replay import shown_pair

    assert shown_pair(1, 2) == ("1", "2")
    left, right = shown_pair(["x" * 300, 1], ["x" * 300, 2])
    assert left.startswith("[from character 289 of 307, first difference at 305] …") and left.endswith("1]")
    assert right.endswith("2]")
    short, long_ = shown_pair(b"ab", b"ab" + b"c" * 400)  # one begins the other: shown from where it ends
    assert short == "b'ab'" and long_.startswith("[from byte 0 of 402, first difference at 2] b'abccc")


class _Stepping:
    """A Replayer's progress counters, as the progress line reads them."""

    def __init__(self, sent, answers, over, setting_up=False):
        self.requests_sent, self.answers, self.steps_over, self.setting_up = sent, answers, over, setting_up


def test_the_progress_line():
    from kafkaproto.cli.replay import Progress

    into_file = io.StringIO()
    progress = Progress(into_file, 38, terminal=False)
    assert progress.interval == 10.0
    progress.replayers.append(("127.0.0.1:9092", _Stepping(0, 0, 0, setting_up=True)))
    progress.show(now=progress.started + 3)
    progress.replayers[0] = ("127.0.0.1:9092", _Stepping(12, 10, 14))
    progress.show(now=progress.started + 75)
    assert into_file.getvalue() == ("replay: creating the capture's topics, 0:03 elapsed\n"
                                    "replay: 12 requests sent and 10 answered, 14 of 38 done, 1:15 elapsed\n")
    terminal = io.StringIO()
    progress = Progress(terminal, 38, terminal=True)
    assert progress.interval == 1.0
    progress.replayers += [("b:9092", _Stepping(30, 29, 37)), ("a:9092", _Stepping(31, 31, 38))]  # --against
    progress.show(now=progress.started)
    progress.done(finished=False)
    assert terminal.getvalue() == ("\rreplay: a:9092 31 requests sent and 31 answered, 38 of 38 done; b:9092 30 "
                                   "requests sent and 29 answered, 37 of 38 done, 0:00 elapsed\n")
    quiet = io.StringIO()
    Progress(quiet, 38, terminal=True).done(finished=False)  # failed before showing anything: nothing to end
    assert quiet.getvalue() == ""


def test_the_command_line_shows_progress_on_standard_error(tmp_path):
    """--progress without a terminal: lines on standard error, standard output the report alone; without it
    (standard error not a terminal) no progress at all."""
    from kafkaproto.broker import Broker

    runs = []
    for extra in (["--progress"], []):  # a broker each: a second replay would meet the first one's group
        with Broker({"group.initial.rebalance.delay.ms": "0"}) as broker:
            runs.append(kafkaproto_replay(KAFKA_PYTHON, "--bootstrap-server", broker.bootstrap_servers, "--speed",
                                          "max", *extra, cwd=tmp_path))
    shown, plain = runs
    assert shown.returncode == 0, shown.stdout + shown.stderr
    steps = len(plan_of(KAFKA_PYTHON).steps)
    last = shown.stderr.splitlines()[-1]
    assert last.startswith("replay: ") and f"{steps} of {steps} done" in last and "elapsed" in last
    assert "\r" not in shown.stderr and "\x1b" not in shown.stderr
    assert "replay:" not in shown.stdout and shown.stdout.endswith("no divergence\n")
    assert plain.returncode == 0 and plain.stderr == "" and plain.stdout.endswith("no divergence\n")
