"""kafkaproto.capture end to end: capture files in, exchanges, records and Arrow tables out.

- Real traffic (tests/data/captures/*.pcap): read_capture must find every exchange that the frame-level path
  (tests/pcap_streams.py, split_frames, decode_request/decode_response) finds, with the same bodies, no gaps and
  no errors, whether the broker's port is given or detected; and what it says about them (stats, times, topics,
  error codes, records) must fit what each client is known to have done (tests/data/captures/README.md).
- Known conversations (tests/capture_traffic.py), damaged or not, written as real files in every container and
  link layer (tests/capture_files.py): reading the file must give exactly what feeding the same segments to
  Exchanges gives, and for undamaged traffic exactly the truth.
- The writer's snap length: exchanges whose frames fit stay ok, the others are gaps with their headers read.
- records() and the Arrow tables against what kafkaproto.records reads from the same records fields.
"""

import gzip
import io
import ipaddress
import json
import random
from collections import Counter, defaultdict
from functools import partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import capture_files as cf
import kafkaproto
from capture_traffic import Damage, conversation, segments
from kafkaproto import decode_request, decode_response, encode_request, encode_response, errors, fields, split_frames
from kafkaproto.capture import GAP, OK, Exchanges, read_capture, records, tables
from kafkaproto.capture.link import (ACK, FIN, LINKTYPE_ETHERNET, LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_LINUX_SLL,
                                     LINKTYPE_LINUX_SLL2, LINKTYPE_LOOP, LINKTYPE_NULL, LINKTYPE_RAW, PSH, SYN,
                                     Segment, address_text, tcp_segment)
from kafkaproto.capture.pcap import read_packets
from kafkaproto.jsonview import to_json
from kafkaproto.messages import (ApiKey, MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse,
                                 RequestHeader, ResponseHeader)
from kafkaproto.records import RecordBatchBuilder, iter_batches
from kafkaproto.uuid import Uuid
from pcap_streams import packets, tcp_streams
from test_capture_exchanges import check
from test_captures import broker_port

CAPTURES = sorted((Path(__file__).parent / "data" / "captures").glob("*.pcap"))
T0 = 1_700_000_000_123_456_789  # every digit set, so that a lost digit of precision shows

# What each capture's client produced (tests/data/captures/README.md): its topic, how many plain records (keys
# key-N for Java, kN for the others), their codec, the topic's partitions, and the values of its transactional ones.
PRODUCED = {
    "java-3.9.2": ("java-topic", 30, "lz4", 2, [b"aborted", b"committed"]),
    "java-4.3.1": ("java-topic", 30, "lz4", 2, [b"aborted", b"committed"]),
    "kafka-python": ("kp-topic", 20, "gzip", 1, []),
    "librdkafka": ("rd-topic", 20, "zstd", 1, []),
    "aiokafka": ("aio-topic", 20, "snappy", 1, []),
    "kafkajs": ("js-topic", 20, "gzip", 1, []),
    "franz-go": ("franz-topic", 20, "lz4", 2, [b"committed: false", b"committed: true"]),
    "sarama": ("sarama-topic", 20, "zstd", 2, []),
}


# -- helpers shared with test_capture_hostile.py --------------------------------------------------------------------


class Tcp:
    """One TCP connection's segments, built by hand with right sequence and acknowledgement numbers: every
    segment acknowledges all the peer has sent so far."""

    def __init__(self, client=("10.0.0.2", 40000), broker=("10.0.0.1", 9092), isns=(1000, 900_000)):
        self.ends = {True: (ipaddress.ip_address(client[0]).packed, client[1]),
                     False: (ipaddress.ip_address(broker[0]).packed, broker[1])}
        self.isns = {True: isns[0], False: isns[1]}
        self.next = {True: isns[0] + 1, False: isns[1] + 1}

    def segment(self, from_client, seq, flags, payload=b""):
        (src, sport), (dst, dport) = self.ends[from_client], self.ends[not from_client]
        ack = self.next[not from_client] & 0xFFFFFFFF if flags & ACK else 0
        return Segment(src, sport, dst, dport, seq & 0xFFFFFFFF, ack, flags, bytes(payload), 0)

    def handshake(self):
        return [self.segment(True, self.isns[True], SYN), self.segment(False, self.isns[False], SYN | ACK),
                self.segment(True, self.next[True], ACK)]

    def send(self, from_client, data, mss=1448):
        """``data`` from one side, in segments of at most ``mss`` bytes."""
        out = []
        for at in range(0, len(data), mss):
            piece = data[at:at + mss]
            out.append(self.segment(from_client, self.next[from_client], ACK | PSH, piece))
            self.next[from_client] += len(piece)
        return out

    def close(self):
        out = []
        for side in (True, False):
            out.append(self.segment(side, self.next[side], FIN | ACK))
            self.next[side] += 1
        return out


def ip_packet(seg, payload=None):
    """The IPv4 or IPv6 packet carrying a segment (its payload, or ``payload`` instead)."""
    tcp = cf.tcp(seg.sport, seg.dport, seg.seq, seg.payload if payload is None else payload, ack=seg.ack,
                 flags=seg.flags)
    src, dst = address_text(seg.src), address_text(seg.dst)
    return cf.ipv4(src, dst, tcp) if len(seg.src) == 4 else cf.ipv6(src, dst, tcp)


def wire_frame(seg, wrap=cf.ethernet):
    """(captured frame, length on the wire) of a segment: one cut by a snap length (``missing`` bytes) is
    written whole and then cut, so that its IP length says what the wire carried."""
    frame = wrap(ip_packet(seg, seg.payload + bytes(seg.missing)))
    return frame[:len(frame) - seg.missing], len(frame)


def pcap_bytes(segs, *, step_ns=1000, wrap=cf.ethernet, **options):
    """A classic pcap of the segments, one packet each, ``step_ns`` apart from T0 (nanosecond timestamps)."""
    return cf.pcap([(T0 + i * step_ns, *wire_frame(s, wrap)) for i, s in enumerate(segs)], nanos=True, **options)


def feed(segs, times, **options):
    """What Exchanges makes of segments fed to it directly (packets numbered from 1): (exchanges, the Exchanges,
    whose ``skipped`` and ``gap_bytes`` the reader's stats must agree with)."""
    reader = Exchanges(**options)
    out = []
    for number, (seg, time_ns) in enumerate(zip(segs, times, strict=True), 1):
        out += reader.packet(seg, time_ns, number)
    return out + reader.finish(), reader


def dicts(exchanges):
    return [ex.to_dict() for ex in exchanges]


# -- the frame-level path ------------------------------------------------------------------------------------------


def frame_level(data):
    """Every exchange of a capture the simple way: each TCP direction whole (tests/pcap_streams.py), cut with
    split_frames, requests decoded and responses paired by correlation id within their connection.

    {(client address, client port, correlation id): [request frame, request, response frame, response]}
    """
    streams = tcp_streams(data)
    port = broker_port(streams)
    out = {}
    for (client, broker), to_broker in streams.items():
        if broker[1] != port:
            continue
        pending = {}
        for frame in split_frames(to_broker):
            request = decode_request(frame)
            key = (address_text(client[0]), client[1], request.header.correlation_id)
            assert key not in out, f"correlation id reused in one connection: {key}"
            out[key] = [frame, request, None, None]
            # The one request a broker does not answer: a Produce with acks=0.
            if not (request.header.request_api_key == ApiKey.PRODUCE and request.body.acks == 0):
                pending[request.header.correlation_id] = request.header
        for frame in split_frames(streams.get((broker, client), b"")):
            correlation_id = int.from_bytes(frame[:4], "big", signed=True)
            header = pending.pop(correlation_id)
            key = (address_text(client[0]), client[1], correlation_id)
            out[key][2:] = frame, decode_response(frame, header.request_api_key, header.request_api_version)
        assert not pending, f"requests with no response in {client}: {sorted(pending)}"
    return out


@pytest.fixture(scope="module", params=CAPTURES, ids=[p.stem for p in CAPTURES])
def capture(request):
    """(path, bytes, broker port, exchanges read with the port detected) of one real capture."""
    path = request.param
    data = path.read_bytes()
    return path, data, broker_port(tcp_streams(data)), list(read_capture(path))


# -- real traffic ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("given_port", [False, True], ids=["detected", "ports"])
def test_real_capture_matches_the_frame_level_path(capture, given_port):
    path, data, port, detected = capture
    found = list(read_capture(path, ports=[port])) if given_port else detected
    assert [ex for ex in found if ex.status != OK] == []
    expected = frame_level(data)
    by_key = {}
    for ex in found:
        key = (ex.client_address, ex.client_port, ex.correlation_id)
        assert key not in by_key, f"reported twice: {ex}"
        by_key[key] = ex
    assert sorted(by_key) == sorted(expected)
    for key, (request_frame, request, response_frame, response) in expected.items():
        ex = by_key[key]
        assert ex.broker_port == port
        assert ex.request_header == request.header and ex.request == request.body, key
        assert ex.api_key == request.header.request_api_key and ex.client_id == request.header.client_id
        assert ex.request_size == len(request_frame)
        if response is None:  # a Produce with acks=0 has no response and needs none to be ok
            assert ex.response is None and ex.response_size is None and ex.response_time_ns is None
            continue
        assert ex.response_header == response.header and ex.response == response.body, key
        assert ex.api_version == response.version
        assert ex.response_size == len(response_frame)


def test_real_capture_reads_the_same_with_the_port_given(capture):
    path, _, port, detected = capture
    assert dicts(read_capture(path, ports=[port])) == dicts(detected)
    # A port no connection uses: every packet that would open a connection (a SYN, or data) is skipped, and
    # says why; bare ACKs of connections never opened are let go without a count.
    reader = read_capture(path, ports=[port + 1 if port < 65535 else 1])
    assert list(reader) == []
    with open(path, "rb") as f:
        segs = [tcp_segment(p.link_type, p.data) for p in read_packets(f)]
    opening = sum(1 for seg in segs if seg.flags & SYN or seg.payload)
    assert reader.stats.skipped == Counter({"not on a broker port": opening})
    assert reader.stats.connections == 0


def test_real_capture_stats(capture):
    path, data, _, detected = capture
    reader = read_capture(path)
    assert len(list(reader)) == len(detected)
    stats = reader.stats
    records_in_file = list(packets(data))
    assert stats.packets == stats.tcp_segments == len(records_in_file)
    assert stats.bytes == sum(len(frame) for _, frame in records_in_file)
    # tcp_streams has one entry per direction that sent a SYN or data: two per connection here.
    assert stats.connections == len(tcp_streams(data)) // 2
    assert stats.exchanges == len(detected)
    assert stats.gap_bytes == 0 and stats.error is None and dict(stats.skipped) == {}
    assert stats.to_dict()["skipped"] == {}


def test_real_capture_times_and_packets(capture):
    _, _, _, detected = capture
    per_connection = defaultdict(list)
    for ex in detected:
        per_connection[ex.connection].append(ex)
        assert T0 // 2 < ex.request_time_ns < T0 * 2, ex  # a plausible time since the epoch, in nanoseconds
        if ex.response is not None:
            assert ex.latency_ns == ex.response_time_ns - ex.request_time_ns >= 0
            assert ex.response_packet > ex.request_packet
    for exchanges in per_connection.values():
        # A broker answers a connection's requests in order, so they come out in the order they were asked.
        times = [ex.request_time_ns for ex in exchanges]
        assert times == sorted(times)
        assert [ex.request_packet for ex in exchanges] == sorted(ex.request_packet for ex in exchanges)
        assert len({(ex.client_address, ex.client_port, ex.broker_address, ex.broker_port) for ex in exchanges}) == 1


def test_real_capture_topics_and_errors(capture):
    path, _, _, detected = capture
    topic = PRODUCED[path.stem][0]
    by_api = defaultdict(list)
    for ex in detected:
        by_api[ex.api_name].append(ex)
    (create,) = by_api["CreateTopics"]
    assert [t.name for t in create.request.topics] == [topic] and create.topics[0] == topic
    created = create.response.topics[0]
    assert created.error_code == 0 and create.partition_errors == []
    # Produce names its topic: by name, or (Produce v13 on) by the id the broker gave it at creation.
    topic_id = getattr(created, "topic_id", None)
    for ex in by_api["Produce"]:
        assert ex.topics in ((topic,), (topic_id,)), ex.topics
        assert ex.error_code is None  # a Produce response has no top-level error code
        assert ex.partition_errors == [], "every produce was accepted"
    assert any(topic in ex.topics for ex in by_api["Metadata"])
    # ApiVersions above the broker's versions (franz-go asks v5 first) is refused at v0, which the reader reads.
    assert all(ex.error_code == 0 or (ex.error_code == errors.UNSUPPORTED_VERSION.code and ex.api_version == 0)
               for ex in by_api["ApiVersions"])
    assert any(topic in ex.topics or topic_id in ex.topics for ex in by_api["DeleteTopics"])
    # Fetch partitions in error, computed here from the responses, as the property must report them.
    for ex in by_api["Fetch"]:
        expected = [(t.topic or t.topic_id, p.partition_index, p.error_code)
                    for t in ex.response.responses for p in t.partitions if p.error_code]
        assert ex.partition_errors == expected
    if "ConsumerGroupHeartbeat" in by_api:  # a KIP-848 group (franz-go): its member joins by heartbeat
        beats = Counter(ex.error_code for ex in by_api["ConsumerGroupHeartbeat"])
        assert "JoinGroup" not in by_api and beats[0] >= 1 and set(beats) <= {
            0, errors.NOT_COORDINATOR.code, errors.COORDINATOR_LOAD_IN_PROGRESS.code}
        return
    joins = Counter(ex.error_code for ex in by_api["JoinGroup"])
    assert joins[0] >= 1 and set(joins) <= {0, errors.MEMBER_ID_REQUIRED.code, errors.NOT_COORDINATOR.code,
                                           errors.COORDINATOR_LOAD_IN_PROGRESS.code}
    if path.stem == "aiokafka":  # the README counts the refusals while the new group coordinator started
        assert joins == {errors.NOT_COORDINATOR.code: 14, errors.COORDINATOR_LOAD_IN_PROGRESS.code: 1,
                         errors.MEMBER_ID_REQUIRED.code: 1, 0: 1}


def expected_record_rows(ex):
    """The rows records() owes for one exchange, read here with kafkaproto.records from the Produce request's
    and the Fetch response's records fields."""
    places = []
    if ex.api_key == ApiKey.PRODUCE and ex.request is not None:
        places += [("request", ex.request_time_ns, t.name, getattr(t, "topic_id", None), p.index, p.records)
                   for t in ex.request.topic_data for p in t.partition_data]
    if ex.api_key == ApiKey.FETCH and ex.response is not None:
        places += [("response", ex.response_time_ns, t.topic, getattr(t, "topic_id", None), p.partition_index,
                    p.records) for t in ex.response.responses for p in t.partitions]
    for side, time_ns, name, topic_id, partition, data in places:
        if data is None or not len(data):
            continue
        for batch in iter_batches(data, allow_partial=True):
            base_sequence = getattr(batch, "base_sequence", -1)
            for record in batch:
                delta = record.offset - batch.base_offset
                yield {"connection": ex.connection, "api_key": ex.api_key, "side": side, "time_ns": time_ns,
                       "topic": name or None, "topic_id": None if topic_id in (None, Uuid.ZERO) else topic_id,
                       "partition": partition, "offset": record.offset, "timestamp": record.timestamp,
                       "key": record.key, "value": record.value, "headers": list(record.headers),
                       "producer_id": batch.producer_id, "sequence": -1 if base_sequence < 0 else base_sequence + delta,
                       "transactional": bool(batch.is_transactional),
                       "control": bool(batch.is_control), "compression": batch.compression.name.lower(),
                       "error": None}


@pytest.mark.skipif(fields.walk is fields.python_walk, reason="the compiled walk is not in use")
def test_the_compiled_walk_finds_what_the_python_one_does(capture):
    walked = 0
    for ex in capture[3]:
        for body in (ex.request, ex.response):
            if body is not None:
                compiled, python = ({}, [], []), ({}, [], [])
                fields.walk(body, compiled[0], compiled[1], records=compiled[2])
                fields.python_walk(body, python[0], python[1], records=python[2])
                assert (list(compiled[0]), compiled[1], compiled[2]) == (list(python[0]), python[1], python[2])
                walked += bool(python[0] or python[1] or python[2])
    assert walked  # the captures name topics


def test_records_are_what_kafkaproto_records_reads(capture):
    _, _, _, detected = capture
    rows = list(records(detected))
    expected = [row for ex in detected for row in expected_record_rows(ex)]
    assert len(rows) == len(expected) > 0
    for row, want in zip(rows, expected, strict=True):
        assert {name: row[name] for name in want} == want


def test_records_are_what_the_client_produced(capture):
    path, _, _, detected = capture
    topic, count, compression, partitions, transactional = PRODUCED[path.stem]
    rows = list(records(detected))
    produced = [r for r in rows if r["side"] == "request"]
    fetched = [r for r in rows if r["side"] == "response" and not r["control"]]
    assert all(r["error"] is None for r in rows)
    assert {r["api_name"] for r in produced} == {"Produce"} and {r["api_name"] for r in fetched} == {"Fetch"}
    assert {r["compression"] for r in produced if not r["transactional"]} == {compression}
    plain = [r for r in produced if not r["transactional"]]
    assert len(plain) == count
    assert sorted(r["key"] for r in plain) == sorted((b"key-%d" if path.stem.startswith("java") else b"k%d") % i
                                                     for i in range(count))
    assert all(len(r["headers"]) == 1 and r["headers"][0][0] == "trace" for r in plain)
    # The transactional producer's two transactions, one record each; the broker's markers close them.
    assert sorted(r["value"] for r in produced if r["transactional"]) == transactional
    assert sum(1 for r in rows if r["control"]) == len(transactional)
    # Whether each was aborted: a Produce request does not tell; the read_committed consumer's Fetch answers do,
    # and its values name the outcome ("aborted" / "committed: false" went to an aborted transaction).
    assert all(r["aborted"] is (None if r["transactional"] else False) for r in produced)
    assert {r["value"]: r["aborted"] for r in fetched if r["transactional"]} == \
        {value: value in (b"aborted", b"committed: false") for value in transactional}
    assert all(r["aborted"] is False for r in fetched if not r["transactional"])
    assert sorted(r["aborted"] for r in rows if r["control"]) == \
        sorted(value in (b"aborted", b"committed: false") for value in transactional)  # ABORT and COMMIT markers
    # Produce names the topic, by name or (v13) by the ID its CreateTopics answer gave.
    (create,) = [ex for ex in detected if ex.api_name == "CreateTopics"]
    topic_id = getattr(create.response.topics[0], "topic_id", None)
    assert all(r["topic"] == topic or r["topic_id"] == topic_id for r in produced)
    # The consumer read back what was produced (as a multiset where partitions interleave).
    assert sorted((r["key"] or b"", r["value"], r["headers"]) for r in fetched) == \
        sorted((r["key"] or b"", r["value"], r["headers"]) for r in produced)
    if partitions == 1:
        assert [r["key"] for r in fetched] == [r["key"] for r in produced]


# -- Arrow tables --------------------------------------------------------------------------------------------------

# The documented columns (tables.py), as a reader of a Parquet file would rely on them.
EXCHANGE_COLUMNS = [
    ("file", "string"), ("status", "string"), ("connection", "int64"), ("joined", "bool"), ("client_address", "string"),
    ("client_port", "int32"), ("broker_address", "string"), ("broker_port", "int32"),
    ("request_time", "timestamp[ns, tz=UTC]"), ("response_time", "timestamp[ns, tz=UTC]"), ("latency_ns", "int64"),
    ("request_packet", "int64"), ("response_packet", "int64"), ("api_key", "int16"), ("api_name", "string"),
    ("api_version", "int16"), ("request_version", "int16"), ("correlation_id", "int32"), ("client_id", "string"),
    ("request_size", "int32"),
    ("response_size", "int32"), ("error_code", "int16"),
    ("partition_errors", "list<item: struct<topic: string, partition: int32, error_code: int16>>"),
    ("topics", "list<item: string>"), ("topic_ids", "list<item: string>"), ("error", "string"),
    ("error_offset", "int64"), ("request", "string"), ("response", "string"),
]
RECORD_COLUMNS = [
    ("file", "string"), ("connection", "int64"), ("api_key", "int16"), ("api_name", "string"), ("side", "string"),
    ("time", "timestamp[ns, tz=UTC]"), ("topic", "string"), ("topic_id", "string"), ("partition", "int32"),
    ("error", "string"), ("offset", "int64"), ("timestamp", "timestamp[ms]"), ("timestamp_type", "string"),
    ("key", "binary"), ("value", "binary"), ("headers", "list<item: struct<key: string not null, value: binary>"
                                                        " not null>"),
    ("partition_leader_epoch", "int32"), ("producer_id", "int64"), ("producer_epoch", "int16"),
    ("sequence", "int32"), ("transactional", "bool"), ("control", "bool"), ("compression", "string"),
    ("aborted", "bool"),
]


def schema_columns(schema):
    return [(field.name, str(field.type)) for field in schema]


def test_table_schemas_are_the_documented_ones():
    pytest.importorskip("pyarrow")
    assert schema_columns(tables.exchange_schema()) == EXCHANGE_COLUMNS
    assert schema_columns(tables.record_schema()) == RECORD_COLUMNS
    for field in list(tables.exchange_schema())[:len(EXCHANGE_COLUMNS)] + \
            list(tables.record_schema())[:len(tables.RECORD_CONTEXT)] + [tables.record_schema().field("aborted")]:
        assert field.metadata and field.metadata[b"doc"], f"{field.name} is not documented"


def as_ints(table, column):
    """A timestamp column as integers (its unit), nulls kept."""
    import pyarrow as pa
    return table.column(column).cast(pa.int64()).to_pylist()


def test_exchanges_table_holds_the_exchanges(capture):
    pa = pytest.importorskip("pyarrow")
    path, _, _, detected = capture
    table = tables.exchanges_table(detected, file=path.name)
    assert table.schema == tables.exchange_schema()
    assert table.num_rows == len(detected)
    rows = table.to_pylist()
    request_times, response_times = as_ints(table, "request_time"), as_ints(table, "response_time")
    for ex, row, request_time, response_time in zip(detected, rows, request_times, response_times, strict=True):
        assert row["file"] == path.name
        for name in ("status", "connection", "client_address", "client_port", "broker_address", "broker_port",
                     "request_packet", "response_packet", "api_key", "api_name", "api_version", "correlation_id",
                     "client_id", "request_size", "response_size", "error_code", "latency_ns", "error",
                     "error_offset"):
            assert row[name] == getattr(ex, name), name
        assert (request_time, response_time) == (ex.request_time_ns, ex.response_time_ns)
        assert row["topics"] == [t for t in ex.topics if isinstance(t, str)]
        assert row["topic_ids"] == [str(t) for t in ex.topics if isinstance(t, Uuid)]
        assert [(e["topic"], e["partition"], e["error_code"]) for e in row["partition_errors"]] == \
            [(t if isinstance(t, str) else str(t), p, c) for t, p, c in ex.partition_errors]
        assert json.loads(row["request"]) == to_json(ex.request)
        assert json.loads(row["response"]) == (None if ex.response is None else to_json(ex.response))
    # Batches of any size give the same table; without bodies, only the body columns differ.
    small = pa.Table.from_batches(list(tables.exchange_batches(detected, file=path.name, size=7)))
    assert small.equals(table)
    # Batches end once their bodies reach body_bytes: here every exchange with a body ends one.
    by_bytes = list(tables.exchange_batches(detected, file=path.name, body_bytes=1))
    assert [batch.num_rows for batch in by_bytes] == [1] * len(detected)
    assert pa.Table.from_batches(by_bytes).equals(table)
    bare = tables.exchanges_table(detected, file=path.name, bodies=False)
    assert bare.column("request").null_count == bare.num_rows
    assert bare.drop_columns(["request", "response"]).equals(table.drop_columns(["request", "response"]))


def test_records_table_holds_the_records(capture):
    pytest.importorskip("pyarrow")
    path, _, _, detected = capture
    rows = list(records(detected))
    table = tables.records_table(detected, file=path.name)
    assert table.schema == tables.record_schema()
    assert table.num_rows == len(rows)
    times, stamps = as_ints(table, "time"), as_ints(table, "timestamp")
    for row, got, time_ns, stamp in zip(rows, table.to_pylist(), times, stamps, strict=True):
        assert got["file"] == path.name and got["error"] is None
        for name in ("connection", "api_key", "api_name", "side", "topic", "partition", "offset", "key", "value",
                     "producer_id", "transactional", "control", "compression", "aborted"):
            assert got[name] == row[name], name
        assert got["topic_id"] == (None if row["topic_id"] is None else str(row["topic_id"]))
        assert (time_ns, stamp) == (row["time_ns"], row["timestamp"])
        assert [(h["key"], h["value"]) for h in got["headers"]] == row["headers"]
        assert (got["producer_epoch"], got["sequence"]) == (row["producer_epoch"], row["sequence"])


def test_real_captures_rewritten_as_pcapng_and_gzip_read_the_same(capture, tmp_path):
    """The same packets in another container (pcapng, nanosecond stamps, big-endian; then gzipped) make the
    same exchanges."""
    path, data, _, detected = capture
    with open(path, "rb") as f:
        original = list(read_packets(f))
    ng = cf.pcapng([(0, p.timestamp_ns, p.data, p.original_length) for p in original],
                   interfaces=((LINKTYPE_ETHERNET, 9),), big_endian=True)
    target = tmp_path / "rewritten.pcapng.gz"
    target.write_bytes(gzip.compress(ng))
    assert dicts(read_capture(io.BytesIO(ng))) == dicts(detected)
    assert dicts(read_capture(target)) == dicts(detected)
    assert dicts(read_capture(io.BytesIO(gzip.compress(data)))) == dicts(detected)


def without_connection_index(exchanges):
    """Exchanges as dicts without the connection index (which counts within one reader), in a stable order."""
    out = [{name: value for name, value in d.items() if name != "connection"} for d in dicts(exchanges)]
    return sorted(out, key=lambda d: (d["client_port"], d["correlation_id"], d["request_packet"]))


def test_partitions_share_the_connections_out(capture):
    """partition=(i, n) readers of one file together read every exchange once."""
    path, _, _, detected = capture
    parts = [list(read_capture(path, partition=(i, 3))) for i in range(3)]
    clients = [{(ex.client_address, ex.client_port) for ex in part} for part in parts]
    assert sum(len(c) for c in clients) == len(set().union(*clients)), "a connection went to two readers"
    assert without_connection_index([ex for part in parts for ex in part]) == without_connection_index(detected)


def test_decode_false_reads_headers_only(capture):
    path, _, _, detected = capture
    bare = list(read_capture(path, decode=False))
    assert [(ex.status, ex.correlation_id, ex.api_key, ex.request_header) for ex in bare] == \
        [(ex.status, ex.correlation_id, ex.api_key, ex.request_header) for ex in detected]
    assert all(ex.response is None for ex in bare)
    assert all(ex.request is None for ex in bare if ex.api_key not in (ApiKey.PRODUCE, ApiKey.SASL_HANDSHAKE))


def test_records_and_records_table_agree_on_sequence():
    """Each record's own producer sequence (its batch's base sequence plus its offset delta), in both: records()
    once gave every record its batch's base sequence under this name."""
    path = next(p for p in CAPTURES if p.stem == "java-3.9.2")  # an idempotent producer: sequences are set
    detected = list(read_capture(path))
    rows = list(records(detected))
    table_sequences = tables.records_table(detected).column("sequence").to_pylist()
    assert any(s > 0 for s in table_sequences)
    assert [row["sequence"] for row in rows] == table_sequences


def produce_with_a_corrupt_batch():
    """One Produce exchange, read from a file, whose partition 0 holds a batch with a bad CRC and partition 1 a
    good one."""
    builder = RecordBatchBuilder()
    builder.append(b"key", b"value", headers=[("h", b"1")])
    good = builder.build()
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF  # the last byte of the last record: the CRC no longer matches
    request = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=bytes(corrupt)),
                                  ProduceRequest.PartitionProduceData(index=1, records=good)])])
    header = RequestHeader(request_api_key=ApiKey.PRODUCE, request_api_version=9, correlation_id=1, client_id="p")
    tcp = Tcp()
    segs = tcp.handshake() + tcp.send(True, encode_request(header, request, 9))
    segs += tcp.send(False, encode_response(ResponseHeader(correlation_id=1), ProduceResponse(), 9)) + tcp.close()
    return list(read_capture(io.BytesIO(pcap_bytes(segs))))


def test_records_that_do_not_read_give_an_error_row():
    exchanges = produce_with_a_corrupt_batch()
    assert [ex.status for ex in exchanges] == [OK]  # the records field is bytes to the Produce codec
    bad, good = records(exchanges)
    assert (bad["partition"], good["partition"]) == (0, 1)
    assert "CRC" in bad["error"] and "offset" not in bad
    assert good["error"] is None and (good["key"], good["value"], good["headers"]) == (b"key", b"value", [("h", b"1")])
    pytest.importorskip("pyarrow")
    rows = tables.records_table(exchanges).to_pylist()
    assert [(r["partition"], r["error"] is None, r["offset"]) for r in rows] == [(0, False, None), (1, True, 0)]


def test_records_table_with_an_error_row_writes_to_parquet():
    """The error row's record columns are null, so the schema must allow it: Parquet once refused such a table
    ("Column 'offset' is declared non-nullable but contains nulls")."""
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    table = tables.records_table(produce_with_a_corrupt_batch())
    out = io.BytesIO()
    pq.write_table(table, out)
    back = pq.read_table(io.BytesIO(out.getvalue()))
    assert [r["error"] is None for r in back.to_pylist()] == [False, True]


# -- connections that go quiet ------------------------------------------------------------------------------------


def metadata_round(tcp, correlation_id):
    """The segments of one Metadata v12 request and its response (whose throttle time is the correlation id, so
    that a response read in the wrong place shows)."""
    header = RequestHeader(request_api_key=ApiKey.METADATA, request_api_version=12, correlation_id=correlation_id,
                           client_id="quiet")
    return (tcp.send(True, encode_request(header, MetadataRequest(topics=[]), 12)) +
            tcp.send(False, encode_response(ResponseHeader(correlation_id=correlation_id),
                                            MetadataResponse(throttle_time_ms=correlation_id), 12)))


@pytest.mark.parametrize("pause_s, options", [(700, {}), (6, {"idle_ns": 5 * 10**9})], ids=["default", "idle_ns"])
def test_a_connection_that_comes_back_after_going_idle(pause_s, options):
    """Idle longer than idle_ns, a connection is closed; when it speaks again it is read as one the capture
    joined late. The packet that wakes it must not find it half-closed (that raised KeyError once)."""
    tcp = Tcp()
    before = tcp.handshake() + metadata_round(tcp, 1)
    after = metadata_round(tcp, 2) + tcp.close()
    frames = [(T0 + i * 1000, *wire_frame(s)) for i, s in enumerate(before)]
    frames += [(T0 + pause_s * 10**9 + i * 1000, *wire_frame(s)) for i, s in enumerate(after)]
    reader = read_capture(io.BytesIO(cf.pcap(frames, nanos=True)), **options)
    out = list(reader)
    assert [(ex.status, ex.correlation_id, ex.connection) for ex in out] == [(OK, 1, 0), (OK, 2, 1)]
    assert reader.stats.connections == 2


def test_an_idle_connection_is_closed_by_another_ones_traffic():
    """Its unanswered request is reported when it is closed, not at the end of the capture."""
    a, b = Tcp(client=("10.0.0.2", 40000)), Tcp(client=("10.0.0.3", 40001))
    header = RequestHeader(request_api_key=ApiKey.METADATA, request_api_version=12, correlation_id=2, client_id="a")
    before = a.handshake() + b.handshake() + metadata_round(a, 1) + metadata_round(b, 1)
    before += a.send(True, encode_request(header, MetadataRequest(topics=[]), 12))  # never answered
    after = metadata_round(b, 2) + metadata_round(b, 3) + b.close()
    frames = [(T0 + i * 1000, *wire_frame(s)) for i, s in enumerate(before)]
    frames += [(T0 + 10 * 10**9 + i * 1000, *wire_frame(s)) for i, s in enumerate(after)]
    out = list(read_capture(io.BytesIO(cf.pcap(frames, nanos=True)), idle_ns=5 * 10**9))
    assert [(ex.status, ex.client_port, ex.correlation_id) for ex in out] == [
        (OK, 40000, 1), (OK, 40001, 1), ("unmatched request", 40000, 2), (OK, 40001, 2), (OK, 40001, 3)]


# -- known conversations, written to files ------------------------------------------------------------------------

# name: (link type, IP packet -> frame, IP versions it carries)
LINKS = {
    "ethernet": (LINKTYPE_ETHERNET, cf.ethernet, (4, 6)),
    "ethernet-vlan": (LINKTYPE_ETHERNET, partial(cf.ethernet, vlans=[(0x8100, 42)]), (4, 6)),
    "ethernet-qinq": (LINKTYPE_ETHERNET, partial(cf.ethernet, vlans=[(0x88A8, 7), (0x8100, 42)]), (4, 6)),
    "sll": (LINKTYPE_LINUX_SLL, cf.sll, (4, 6)),
    "sll2": (LINKTYPE_LINUX_SLL2, cf.sll2, (4, 6)),
    "null-little": (LINKTYPE_NULL, cf.null_loopback, (4, 6)),
    "null-big": (LINKTYPE_NULL, partial(cf.null_loopback, byteorder="big"), (4, 6)),
    "loop": (LINKTYPE_LOOP, cf.loop, (4, 6)),
    "raw": (LINKTYPE_RAW, cf.raw, (4, 6)),
    "dlt-raw-12": (12, cf.raw, (4, 6)),
    "ipv4": (LINKTYPE_IPV4, cf.raw, (4,)),
    "ipv6": (LINKTYPE_IPV6, cf.raw, (6,)),
}
TSRESOLS = (6, 9, 3, 0x80 | 20, 0x80 | 30)  # µs, ns, ms, 2^-20 s, 2^-30 s


def write_classic(sent_segments, times, link, *, big_endian, nanos):
    """A classic pcap: one link type; returns (file bytes, each packet's timestamp as a reader must see it)."""
    link_type, wrap, _ = LINKS[link]
    data = cf.pcap([(t, *wire_frame(s, wrap)) for s, t in zip(sent_segments, times, strict=True)],
                   link_type=link_type, nanos=nanos, big_endian=big_endian)
    return data, [t if nanos else t // 1000 * 1000 for t in times]


def write_pcapng(rng, sent_segments, times, sections):
    """pcapng sections, each ([(link name, tsresol, tsoffset)], big_endian), the packets split between them in
    order and spread at random over each section's interfaces."""
    cuts = sorted(rng.sample(range(1, len(sent_segments)), len(sections) - 1)) if len(sections) > 1 else []
    bounds = [0, *cuts, len(sent_segments)]
    out, read_times = [], []
    for (interfaces, big_endian), start, stop in zip(sections, bounds, bounds[1:], strict=False):
        blocks = []
        for seg, t in zip(sent_segments[start:stop], times[start:stop], strict=True):
            i = rng.randrange(len(interfaces))
            link, tsresol, tsoffset = interfaces[i]
            blocks.append((i, t, *wire_frame(seg, LINKS[link][1])))
            read_times.append(cf.timestamp_ns(cf.ticks(t, tsresol, tsoffset), tsresol, tsoffset))
        described = [(LINKS[link][0], tsresol, tsoffset) for link, tsresol, tsoffset in interfaces]
        out.append(cf.pcapng(blocks, interfaces=described, big_endian=big_endian))
    return b"".join(out), read_times


def links_for(ip_version):
    return sorted(name for name, (_, _, versions) in LINKS.items() if ip_version in versions)


@st.composite
def file_layouts(draw, ip_version):
    """How a capture is written: ("pcap", link, big_endian, nanos) or ("pcapng", sections)."""
    names = links_for(ip_version)
    if draw(st.booleans()):
        return ("pcap", draw(st.sampled_from(names)), draw(st.booleans()), draw(st.booleans()))
    interface = st.tuples(st.sampled_from(names), st.sampled_from(TSRESOLS), st.sampled_from([0, 0, 3600, -7]))
    section = st.tuples(st.lists(interface, min_size=1, max_size=3), st.booleans())
    return ("pcapng", draw(st.lists(section, min_size=1, max_size=2)))


DAMAGE = st.one_of(
    st.just(None),
    st.builds(Damage, reorder=st.sampled_from([0.0, 0.3]), duplicate=st.sampled_from([0.0, 0.2]),
              overlap=st.sampled_from([0.0, 0.2]), loss=st.sampled_from([0.0, 0.1]),
              snaplen=st.sampled_from([0, 0, 200, 1000]), late_start=st.booleans(), wrap=st.booleans(),
              tiny=st.booleans(), jumbo=st.booleans())
    # Two jumbo segments merged into one retransmission would not fit an IP packet.
    .filter(lambda d: not (d.jumbo and d.overlap)),
)
# The pure-Python codecs are several times slower; they get fewer examples (their output is tested identical to
# the compiled codecs' elsewhere).
EXAMPLES = 120 if kafkaproto.compiled() else 40
MAX_TCP_PAYLOAD = 65535 - 40 - 20  # what an IPv4 or IPv6 packet can carry after its own and TCP's header


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("captures")


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(data=st.data(), seed=st.integers(0, 2**32 - 1), ip_version=st.sampled_from([4, 6]), damage=DAMAGE,
       compress=st.booleans())
def test_a_conversation_in_any_file_reads_as_fed_directly(scratch, data, seed, ip_version, damage, compress):
    rng = random.Random(seed)
    conns = conversation(rng, connections=rng.randint(1, 3), exchanges=(1, 4), ipv6=ip_version == 6)
    sent = segments(rng, conns, damage)
    segs = [s.segment for s in sent]
    assume(all(len(s.payload) + s.missing <= MAX_TCP_PAYLOAD for s in segs))
    # Irregular spacing, so that every timestamp resolution has digits to lose.
    times = [T0 + i * 1_234_567 + rng.randrange(1000) for i in range(len(segs))]
    layout = data.draw(file_layouts(ip_version), label="layout")
    if layout[0] == "pcap":
        content, read_times = write_classic(segs, times, layout[1], big_endian=layout[2], nanos=layout[3])
    else:
        content, read_times = write_pcapng(rng, segs, times, layout[1])
    path = scratch / ("capture.gz" if compress else "capture")
    path.write_bytes(gzip.compress(content) if compress else content)

    reader = read_capture(path)
    found = list(reader)
    direct, exchanges = feed(segs, read_times)
    assert dicts(found) == dicts(direct)
    stats = reader.stats
    assert stats.packets == stats.tcp_segments == len(segs) and stats.error is None
    assert (dict(stats.skipped), stats.gap_bytes, stats.connections) == (exchanges.skipped, exchanges.gap_bytes,
                                                                         exchanges.count)
    check(conns, sent, found)  # every exchange held whole is recovered exactly; the rest say what they lost
    if damage is None:
        assert [ex.status for ex in found] == [OK] * sum(len(c.exchanges) for c in conns)
        assert reader.stats.gap_bytes == 0


def read_generally(path, **options):
    """read_capture with every packet taking the general (Python) path: the compiled loop off."""
    saved = kafkaproto.capture.reader.compiled_loop
    kafkaproto.capture.reader.compiled_loop = None
    try:
        reader = read_capture(path, **options)
        return list(reader), reader.stats
    finally:
        kafkaproto.capture.reader.compiled_loop = saved


@pytest.mark.skipif(kafkaproto.capture.reader.compiled_loop is None, reason="the compiled packet path is not in use")
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(seed=st.integers(0, 2**32 - 1), damage=DAMAGE, spacing_ns=st.sampled_from([1_234_567, 400_000_000]),
       options=st.sampled_from([{}, {"idle_ns": 10**9}, {"max_connections": 1}, {"partition": (1, 2)},
                                {"max_frame": 300}, {"decode": False}]))
def test_the_compiled_packet_path_reads_as_the_general_one(scratch, seed, damage, spacing_ns, options):
    """Plain packets (Ethernet, IPv4, a connection under way) take a compiled path; whatever the damage, the
    spacing (idle connections swept) and the options, every exchange and count is what the general path gives."""
    rng = random.Random(seed)
    conns = conversation(rng, connections=rng.randint(1, 3), exchanges=(1, 5))
    sent = segments(rng, conns, damage)
    segs = [s.segment for s in sent]
    assume(all(len(s.payload) + s.missing <= MAX_TCP_PAYLOAD for s in segs))
    times = [T0 + i * spacing_ns + rng.randrange(1000) for i in range(len(segs))]
    path = scratch / "plain.pcap"
    path.write_bytes(write_classic(segs, times, "ethernet", big_endian=False, nanos=True)[0])
    reader = read_capture(path, **options)
    found = list(reader)
    general, stats = read_generally(path, **options)
    assert dicts(found) == dicts(general)
    assert reader.stats.to_dict() == stats.to_dict()


CONTAINERS = {  # name: layout for a link, as file_layouts draws them
    "pcap-little-us": lambda link: ("pcap", link, False, False),
    "pcap-big-ns": lambda link: ("pcap", link, True, True),
    "pcapng-mixed": lambda link: ("pcapng", [([(link, 9, 0), ("ethernet-vlan", 0x80 | 20, 3600)], False),
                                             ([("sll2", 3, -7), (link, 6, 0)], True)]),
}


@pytest.mark.parametrize("container", sorted(CONTAINERS))
@pytest.mark.parametrize("link, ip_version", [(link, v) for link in sorted(LINKS) for v in LINKS[link][2]])
def test_every_link_layer_in_every_container(tmp_path, link, ip_version, container):
    """Each link layer and container at least once, whatever the examples above happened to draw: clean traffic
    reads as exactly the truth."""
    rng = random.Random(f"{link}-{ip_version}-{container}")
    conns = conversation(rng, connections=2, exchanges=(2, 4), ipv6=ip_version == 6)
    sent = segments(rng, conns)
    segs = [s.segment for s in sent]
    times = [T0 + i * 1_234_567 for i in range(len(segs))]
    layout = CONTAINERS[container](link)
    if layout[0] == "pcap":
        content, read_times = write_classic(segs, times, link, big_endian=layout[2], nanos=layout[3])
    else:
        content, read_times = write_pcapng(rng, segs, times, layout[1])
    path = tmp_path / "capture.pcap.gz"
    path.write_bytes(gzip.compress(content))
    found = list(read_capture(path))
    assert dicts(found) == dicts(feed(segs, read_times)[0])
    assert [ex.status for ex in found] == [OK] * sum(len(c.exchanges) for c in conns)
    check(conns, sent, found)
    assert sorted(ex.request_time_ns for ex in found) == sorted(
        read_times[ex.request_packet - 1] for ex in found)  # each time is its own packet's, as the file holds it


# -- the writer's snap length ----------------------------------------------------------------------------------


def frame_per_segment_traffic(rng, conns):
    """Each connection's exchanges one after the other, every frame starting a segment of its own (so a snap
    length can cut a frame's tail but never the size prefix of the next); returns (segments, truths)."""
    segs = []
    for conn in conns:
        tcp = Tcp(client=(address_text(conn.client[0]), conn.client[1]),
                  broker=(address_text(conn.broker[0]), conn.broker[1]),
                  isns=(rng.randrange(2**32), rng.randrange(2**32)))
        segs += tcp.handshake()
        for t in conn.exchanges:
            segs += tcp.send(True, encode_request(t.header, t.request, t.header.request_api_version))
            if t.response is not None:
                segs += tcp.send(False, encode_response(ResponseHeader(correlation_id=t.correlation_id), t.response,
                                                        t.header.request_api_version))
        segs += tcp.close()
    return segs


@pytest.mark.parametrize("payload_snap", [64, 200, 700])
def test_snap_length_cuts_only_the_frames_that_do_not_fit(payload_snap):
    rng = random.Random(payload_snap)
    conns = conversation(rng, connections=3, exchanges=(4, 6))
    segs = frame_per_segment_traffic(rng, conns)
    headers = 14 + 20 + 20  # Ethernet, IPv4 and TCP: the snap length leaves payload_snap bytes of payload
    content = pcap_bytes(segs, snaplen=headers + payload_snap)
    found = list(read_capture(io.BytesIO(content)))

    # The same packets, cut as the file cuts them, fed directly.
    cut = [s._replace(payload=s.payload[:payload_snap], missing=max(0, len(s.payload) - payload_snap)) for s in segs]
    assert dicts(found) == dicts(feed(cut, [T0 + i * 1000 for i in range(len(segs))])[0])

    by_key = defaultdict(list)
    for ex in found:
        by_key[(ex.client_port, ex.correlation_id)].append(ex)
    statuses = Counter()
    for conn in conns:
        for t in conn.exchanges:
            (ex,) = by_key.pop((conn.client[1], t.correlation_id))
            request_size = len(encode_request(t.header, t.request, t.header.request_api_version))
            response_size = 0 if t.response is None else len(encode_response(
                ResponseHeader(correlation_id=t.correlation_id), t.response, t.header.request_api_version))
            # Frames are at most 1448 bytes to a segment and start one: a frame is whole when it fits.
            fits = request_size <= payload_snap and response_size <= payload_snap
            statuses[ex.status] += 1
            assert ex.request_header == t.header  # read even from a cut frame: it is in the first bytes
            assert (ex.api_key, ex.api_version, ex.client_id) == (
                t.header.request_api_key, t.header.request_api_version, t.header.client_id)
            if fits:
                assert ex.status == OK and ex.request == t.request and ex.response == t.response
            else:
                assert ex.status == GAP and ex.error, ex
                assert ex.request == (t.request if request_size <= payload_snap else None)
                assert ex.response is None
    assert by_key == {}, "exchanges the traffic never had"
    assert statuses[GAP] > 0 and (payload_snap == 64 or statuses[OK] > 0)
