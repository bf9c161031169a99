"""Wireshark's Kafka dissector (tshark) as an independent oracle, on every capture in tests/data/captures/.

- test_frames_match_tshark: the frames that tests/pcap_streams.py, split_frames and decode_request
  find in each TCP direction against tshark's PDUs: the same PDUs in the same order, with the same
  API key, version, correlation id, length and client id, and for the versions tshark decodes the
  same topic names, partitions, error codes and record counts.
- test_capture_reader_matches_tshark: kafkaproto.capture.read_capture against tshark, PDU by PDU,
  matched by packet number and direction (skips until the reader exists).

tshark here is Debian's 4.0.x, whose dissector stops at older versions (tests/tshark.py asks it
which). Where the two sides disagree for a reason that is understood, the rule below says so, with
the side that is right; every such case is counted and printed in the terminal summary.
``KAFKAPROTO_REQUIRE_TSHARK=1`` (set by .ci/run) turns the skip without tshark into a failure.
"""

import ipaddress
import json
import os
import re
import struct
from collections import Counter, defaultdict
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import pytest

import tshark
from kafkaproto import decode_request, decode_response, split_frames
from kafkaproto.messages import ApiKey, api
from kafkaproto.records import RecordBatch, iter_batches
from pcap_streams import tcp_streams
from test_captures import broker_port

CAPTURES_DIR = Path(__file__).parent / "data" / "captures"
CAPTURES = sorted(CAPTURES_DIR.glob("*.pcap"))
SPECS = Path(__file__).parent.parent / "schemas" / "message"
REQUIRED = os.environ.get("KAFKAPROTO_REQUIRE_TSHARK") == "1"

# What was compared and where the two disagreed, tallied for the summary at the end of the run (conftest.py).
COMPARED, DISAGREEMENTS = tshark.COMPARED, tshark.DISAGREEMENTS


def need_tshark():
    if tshark.tshark_path() is None:
        reason = "tshark is not installed (apt-get install tshark): it is the independent Kafka dissector compared here"
        if REQUIRED:
            pytest.fail(f"KAFKAPROTO_REQUIRE_TSHARK=1 but {reason}")
        pytest.skip(reason)


def disagree(rule, capture):
    DISAGREEMENTS[rule][capture] += 1


# --- Where tshark and kafkaproto part, and why --------------------------------------------------------------

class Misread(NamedTuple):
    """A message tshark claims to decode but reads wrongly. kafkaproto is right in each case: the frame decodes
    to its last byte, re-encodes byte for byte (tests/test_captures.py), and the other end accepted it."""

    api_key: int
    is_request: bool
    versions: range
    body_comparable: bool  # the topics, partitions, error codes and records compared here precede the misread
    why: str


TSHARK_MISREADS = (
    # Kafka's BYTES type has an int32 length; tshark 4.0 reads non-flexible bytes fields with an int16
    # length, loses its place after the first one and flags the PDU malformed.
    Misread(11, True, range(0, 6), True,
            "JoinGroup v0-5 request: tshark reads the protocol metadata bytes with an int16 length (Kafka: int32)"),
    Misread(11, False, range(0, 6), True,
            "JoinGroup v0-5 response: tshark reads the member metadata bytes with an int16 length (Kafka: int32)"),
    Misread(14, True, range(0, 4), True,
            "SyncGroup v0-3 request: tshark reads the assignment bytes with an int16 length (Kafka: int32)"),
    Misread(14, False, range(0, 4), True,
            "SyncGroup v0-3 response: tshark reads the assignment bytes with an int16 length (Kafka: int32)"),
    # DeleteTopicsResponse has ThrottleTimeMs from v1 on; tshark 4.0 skips it at v1 and reads its four
    # zero bytes as the topic array's length, so it sees no topics and stops short of the PDU's end.
    Misread(20, False, range(1, 2), False,
            "DeleteTopics v1 response: tshark skips throttle_time_ms and reads it as the topic count"),
)

# The same int16 reading of BYTES hits the key and value of every magic 0/1 message (their lengths are int32),
# so tshark 4.0 loses its place in a legacy message set after the first message (seen on hand-made Produce v2
# requests: an uncompressed set of three reads as one message, then malformed; a gzip wrapper is not opened).
RULE_LEGACY = ("legacy (magic 0/1) message set: tshark reads message keys and values with an int16 length "
               "(Kafka: int32); body not compared")
RULE_UNPAIRED = ("response tshark did not pair with its request (the request's dissection threw): "
                 "api key and version not compared; kafkaproto pairs by correlation id as the broker answers")
RULE_TOO_NEW = "version beyond tshark's dissector: header compared, body not (tshark only guesses at it)"
RULE_UNKNOWN_KEY = "API key unknown to tshark's dissector: header compared, body not"
RULE_FALLBACK = ("ApiVersions answered at v0 to a version the broker lacks (KIP-511): tshark reads the answer at the "
                 "request's version, kafkaproto at v0 as clients do; version and body not compared")


def misread(pdu):
    for entry in TSHARK_MISREADS:
        if (entry.api_key, entry.is_request) == (pdu["api_key"], pdu["is_request"]) and \
                pdu["api_version"] in entry.versions:
            return entry
    return None


# --- The facts compared, read from kafkaproto's messages -----------------------------------------------------

@lru_cache(maxsize=None)
def spec(message_name):
    """A message's JSON spec, for the entityType of its fields (which kafkaproto's classes need not carry)."""
    data = json.loads((SPECS / f"{message_name}.json").read_text())
    common = {s["name"]: s["fields"] for s in data.get("commonStructs", [])}
    return data["fields"], common


# Fields tshark labels kafka.partition_id (Produce's partition index is named "Index").
PARTITION_FIELDS = {"PartitionIndex", "Partition", "PartitionId", "PartitionIndexes"}


def body_facts(message, version):
    """{topics, partitions, error_codes, records, legacy_messages} of a decoded body, in wire order, as
    tshark lists them (topic names: fields whose spec gives entityType topicName)."""
    facts = {"topics": [], "partitions": [], "error_codes": [], "records": 0, "legacy_messages": 0}
    name = type(message).__name__
    fields, common = spec(name)
    _walk(message, version, fields, name, common, facts)
    return facts


def _walk(message, version, spec_fields, struct_name, common, facts):
    by_name = {f["name"]: f for f in spec_fields}
    for field in type(message)._fields:
        if version not in field.versions:
            continue
        if field.tag is not None and version in field.tagged_versions:
            continue  # tshark 4.0 shows tagged fields as raw tag and bytes only
        node = by_name[field.name]
        value = getattr(message, field.attr)
        items = [] if value is None and field.array else value if field.array else [value]
        if field.struct is not None:
            item_type = node["type"].removeprefix("[]")
            for item in items:
                if item is not None:
                    _walk(item, version, node.get("fields") or common[item_type], item_type, common, facts)
        elif field.kind == "records":
            for batch in iter_batches(value, allow_partial=True) if value is not None else ():
                facts["records" if isinstance(batch, RecordBatch) else "legacy_messages"] += sum(1 for _ in batch)
        elif node.get("entityType") == "topicName":
            facts["topics"].extend(items)  # a null name stays None, as tshark reports it
        elif field.kind == "int32" and (field.name in PARTITION_FIELDS
                                        or field.name == "Index" and "Partition" in struct_name):
            facts["partitions"].extend(items)
        elif field.kind == "int16" and field.name.endswith("ErrorCode"):
            facts["error_codes"].extend(items)


# --- kafkaproto's frames, independent of the capture reader --------------------------------------------------

def _endpoint(address_port):
    address, port = address_port
    return str(ipaddress.ip_address(bytes(address))), port


def kafkaproto_frames(path, port):
    """{(source endpoint, destination endpoint): [frame dict, ...]} for each TCP direction, as
    tests/pcap_streams.py, split_frames and decode_request/decode_response read them."""
    streams = tcp_streams(path.read_bytes())
    directions = {}
    for (client, broker), to_broker in streams.items():
        if broker[1] != port:
            continue
        pending, requests, responses = {}, [], []
        for frame in split_frames(to_broker):
            decoded = decode_request(frame)
            header = decoded.header
            pending[header.correlation_id] = (header.request_api_key, header.request_api_version)
            requests.append({"api_key": header.request_api_key, "api_version": header.request_api_version,
                             "correlation_id": header.correlation_id, "length": len(frame),
                             "client_id": header.client_id, "body": decoded.body})
        for frame in split_frames(streams.get((broker, client), b"")):
            correlation_id = int.from_bytes(frame[:4], "big", signed=True)
            api_key, version = pending.pop(correlation_id)
            decoded = decode_response(frame, api_key, version)
            # A broker that lacks the ApiVersions version asked answers at version 0: body_version says so.
            responses.append({"api_key": api_key, "api_version": version, "correlation_id": correlation_id,
                              "length": len(frame), "client_id": None, "body": decoded.body,
                              "body_version": decoded.version})
        directions[(_endpoint(client), _endpoint(broker))] = requests
        directions[(_endpoint(broker), _endpoint(client))] = responses
    return directions


def documented_ports():
    """{capture name: broker port} from the table in tests/data/captures/README.md."""
    rows = re.findall(r"^\|\s*`([^`]+)\.pcap`\s*\|\s*(\d+)\s*\|", (CAPTURES_DIR / "README.md").read_text(), re.M)
    return {name: int(port) for name, port in rows}


def test_readme_names_each_broker_port():
    """The port the README gives is the one every connection in the capture shares."""
    ports = documented_ports()
    assert sorted(ports) == [p.stem for p in CAPTURES], "every capture needs a row in the README's table"
    for path in CAPTURES:
        assert ports[path.stem] == broker_port(tcp_streams(path.read_bytes())), path.name


def tshark_pdus(path):
    """tshark's PDUs on the capture's broker port; checks the helper's view of each PDU against the
    dissector's own version table on the way."""
    port = documented_ports()[path.stem]
    pdus = tshark.kafka_pdus(path, [port])
    supported = tshark.dissector_versions()
    for pdu in pdus:
        assert pdu["is_request"] == (pdu["dst_port"] == port), pdu
        if pdu["api_key"] is not None:
            claims = pdu["api_version"] in supported.get(pdu["api_key"], range(0))
            assert pdu["dissected"] == claims, (pdu, "tshark's note on the PDU contradicts its version table")
    return port, pdus


def compare_pdu(pdu, frame, capture, by_correlation_id):
    """Assert that one tshark PDU says what kafkaproto's reading of the same frame says (``frame``:
    api_key, api_version, correlation_id, length, client_id, body, and body_version where the body was
    read at another version). Returns True when the bodies were compared too."""
    where = f"{capture} packet {pdu['frame_number']} ({'request' if pdu['is_request'] else 'response'})"
    assert (pdu["correlation_id"], pdu["length"]) == (frame["correlation_id"], frame["length"]), where
    COMPARED["PDUs"] += 1
    if pdu["api_key"] is None:
        # tshark pairs a response only with a request it dissected without an exception.
        request = by_correlation_id[frame["correlation_id"]]
        assert not pdu["is_request"] and request["malformed"], (where, "unpaired, yet its request dissected cleanly")
        disagree(RULE_UNPAIRED, capture)
        return False
    exchange = frame.get("exchange")  # the reader's exchange, when the frame comes from one
    if (exchange is not None and not pdu["is_request"] and pdu["api_key"] == ApiKey.API_VERSIONS
            and frame["api_version"] == 0 and pdu["api_version"] == exchange.request_header.request_api_version > 0):
        disagree(RULE_FALLBACK, capture)
        return False
    assert (pdu["api_key"], pdu["api_version"]) == (frame["api_key"], frame["api_version"]), where
    if pdu["is_request"]:
        assert pdu["client_id"] == frame["client_id"], where
    if pdu["api_key"] not in tshark.dissector_versions():
        disagree(RULE_UNKNOWN_KEY, capture)
        return False
    if not pdu["dissected"]:
        disagree(RULE_TOO_NEW, capture)
        return False
    known = misread(pdu) if pdu["malformed"] else None  # where tshark does read it right, it is compared
    if known is not None:
        disagree(known.why, capture)
        if not known.body_comparable:
            return False
    else:
        name = f"{api(pdu['api_key']).name} v{pdu['api_version']} {'request' if pdu['is_request'] else 'response'}"
        assert not pdu["malformed"], (
            f"{where}: tshark claims to decode {name} but flags it malformed ({pdu['notes']}); find which side "
            f"is wrong and, if tshark, list it in TSHARK_MISREADS")
    facts = body_facts(frame["body"], frame.get("body_version", frame["api_version"]))
    if facts["legacy_messages"]:
        disagree(RULE_LEGACY, capture)
        return False
    for key in ("topics", "partitions", "error_codes", "records", "legacy_messages"):
        assert facts[key] == pdu[key], (where, key, facts[key], pdu[key])
    COMPARED["bodies"] += 1
    COMPARED["records"] += facts["records"]
    return True


@pytest.mark.parametrize("path", CAPTURES, ids=[p.stem for p in CAPTURES])
def test_frames_match_tshark(path):
    need_tshark()
    port, pdus = tshark_pdus(path)
    ours = kafkaproto_frames(path, port)
    theirs = defaultdict(list)
    for pdu in pdus:
        theirs[((pdu["src_address"], pdu["src_port"]), (pdu["dst_address"], pdu["dst_port"]))].append(pdu)
    assert set(theirs) <= set(ours), f"tshark has PDUs on directions kafkaproto has no frames on: " \
                                     f"{sorted(set(theirs) - set(ours))}"
    bodies = 0
    for direction, frames in ours.items():
        found = theirs.get(direction, [])
        assert len(found) == len(frames), (direction, f"tshark {len(found)} PDUs, kafkaproto {len(frames)} frames")
        client, broker = direction if direction[1][1] == port else direction[::-1]
        requests = {p["correlation_id"]: p for p in theirs.get((client, broker), [])}
        for pdu, frame in zip(found, frames):
            bodies += compare_pdu(pdu, frame, path.stem, requests)
    assert sum(map(len, ours.values())) == len(pdus)
    if path.stem in ("aiokafka", "kafkajs"):
        assert bodies > 0, "these clients use versions tshark decodes: their bodies must have been compared"


# --- The capture reader against tshark ---------------------------------------------------------------------

def reader_pdus(exchanges):
    """The reader's exchanges as PDUs keyed like tshark's: (packet number, is_request, correlation id)."""
    pdus = {}
    for ex in exchanges:
        sides = []
        if ex.request_packet is not None:
            sides.append((True, ex.request_packet, ex.request_size, ex.request, ex.request_time_ns))
        if ex.response_packet is not None:
            sides.append((False, ex.response_packet, ex.response_size, ex.response, ex.response_time_ns))
        for is_request, packet, size, body, time_ns in sides:
            key = (packet, is_request, ex.correlation_id)
            assert key not in pdus, f"two exchanges claim the same PDU {key}"
            pdus[key] = {"exchange": ex, "is_request": is_request, "length": size, "body": body, "time_ns": time_ns,
                         "api_key": ex.api_key,
                         # a request at the version it was sent; its answer at the one it came at (ApiVersions
                         # refused above the broker's versions is answered at v0)
                         "api_version": ex.request_header.request_api_version if is_request and ex.request_header
                         else ex.api_version,
                         "correlation_id": ex.correlation_id, "client_id": ex.client_id if is_request else None}
    return pdus


@pytest.mark.parametrize("path", CAPTURES, ids=[p.stem for p in CAPTURES])
def test_capture_reader_matches_tshark(path):
    need_tshark()
    capture = pytest.importorskip("kafkaproto.capture")
    if not hasattr(capture, "read_capture"):
        pytest.skip("kafkaproto.capture has no read_capture yet")
    port, pdus = tshark_pdus(path)
    exchanges = list(capture.read_capture(path, ports=[port]))
    for ex in exchanges:
        # Every frame in these captures decodes (tests/test_captures.py); a request may still be in
        # flight when the recording stopped.
        assert ex.status in ("ok", "unmatched request"), (ex.status, ex.request_packet, ex.response_packet)
        assert ex.broker_port == port
        if ex.status == "ok":
            assert ex.latency_ns == ex.response_time_ns - ex.request_time_ns
    ours = reader_pdus(exchanges)
    theirs = {(p["frame_number"], p["is_request"], p["correlation_id"]): p for p in pdus}
    assert len(theirs) == len(pdus), "tshark lists one PDU twice"
    assert sorted(ours) == sorted(theirs), (f"only tshark: {sorted(set(theirs) - set(ours))[:10]}; "
                                            f"only the reader: {sorted(set(ours) - set(theirs))[:10]}")
    requests = defaultdict(dict)  # tshark's requests per connection, by correlation id
    for pdu in pdus:
        if pdu["is_request"]:
            requests[pdu["tcp_stream"]][pdu["correlation_id"]] = pdu
    for key, pdu in theirs.items():
        mine = ours[key]
        ex = mine["exchange"]
        where = f"{path.stem} packet {pdu['frame_number']}"
        # tshark numbers TCP connections from 0 in order of their first packet, as the reader does.
        assert ex.connection == pdu["tcp_stream"], where
        client = (pdu["src_address"], pdu["src_port"]) if pdu["is_request"] else (pdu["dst_address"], pdu["dst_port"])
        broker = (pdu["dst_address"], pdu["dst_port"]) if pdu["is_request"] else (pdu["src_address"], pdu["src_port"])
        assert ((ex.client_address, ex.client_port), (ex.broker_address, ex.broker_port)) == (client, broker), where
        assert mine["time_ns"] == pdu["time_ns"], where
        if not pdu["is_request"] and pdu["request_frame"] is not None:
            assert ex.request_packet == pdu["request_frame"], (where, "paired with another request than tshark's")
        compare_pdu(pdu, mine, path.stem, requests[pdu["tcp_stream"]])
        if pdu["dissected"] and not pdu["malformed"] and not pdu["is_request"]:
            check_summary_fields(ex, pdu, requests[pdu["tcp_stream"]].get(pdu["correlation_id"]), where)


def check_summary_fields(ex, response, request, where):
    """The reader's digests of a response (error_code, partition_errors, topics) against what tshark read."""
    codes = Counter(c for c in response["error_codes"] if c)
    if ex.error_code:
        assert codes[ex.error_code], (where, ex.error_code, response["error_codes"])
    for topic, partition, code in ex.partition_errors:
        assert code and codes[code], (where, code, response["error_codes"])
        assert partition in response["partitions"], (where, partition)
        if isinstance(topic, str):
            assert topic in response["topics"], (where, topic)
    # tshark reads topic names only where the message has them as fields, so its names are a subset:
    # the reader may find more (a consumer's subscription inside JoinGroup metadata, say).
    named = {t for t in response["topics"] if t is not None}
    if request is not None and request["dissected"] and not request["malformed"]:
        named |= {t for t in request["topics"] if t is not None}
    assert named <= {t for t in ex.topics if isinstance(t, str)}, (where, named, ex.topics)


# --- The helper itself, on captures made by hand -------------------------------------------------------------

def _frame(*parts):
    body = b"".join(parts)
    return len(body).to_bytes(4, "big") + body


def _string(text):
    return len(text).to_bytes(2, "big") + text.encode()


def test_tshark_helper_splits_and_joins_packets(tmp_path):
    """Two requests in one packet, one request over two packets, and two responses in one packet."""
    need_tshark()
    api_versions = [_frame(b"\x00\x12\x00\x00", cid.to_bytes(4, "big"), _string("hand")) for cid in (1, 2)]
    # Metadata v1 for topic "t1".
    metadata = _frame(b"\x00\x03\x00\x01", (3).to_bytes(4, "big"), _string("hand"), (1).to_bytes(4, "big"),
                      _string("t1"))
    responses = [_frame(cid.to_bytes(4, "big"), b"\x00\x00", (0).to_bytes(4, "big")) for cid in (1, 2)]
    pcap = tmp_path / "hand.pcap"
    pcap.write_bytes(tshark.synthetic_capture([
        (True, api_versions[0] + api_versions[1]),
        (True, metadata[:9]),
        (True, metadata[9:]),
        (False, responses[0] + responses[1]),
    ]))
    pdus = tshark.kafka_pdus(pcap, [9092])
    seen = [(p["frame_number"], p["is_request"], p["api_key"], p["api_version"], p["correlation_id"], p["length"])
            for p in pdus]
    assert seen == [(1, True, 18, 0, 1, 14), (1, True, 18, 0, 2, 14), (3, True, 3, 1, 3, 22),
                    (4, False, 18, 0, 1, 10), (4, False, 18, 0, 2, 10)]
    assert pdus[2]["topics"] == ["t1"] and pdus[2]["dissected"] and not pdus[2]["malformed"]
    assert [p["error_codes"] for p in pdus[3:]] == [[0], [0]]
    assert [p["request_frame"] for p in pdus[3:]] == [1, 1]
    assert pdus[0]["src_port"] == 40000 and pdus[0]["dst_port"] == 9092 and pdus[0]["tcp_stream"] == 0
    assert pdus[3]["time_ns"] - pdus[0]["time_ns"] == 3000  # microsecond steps in the synthetic capture


def test_dissector_versions_are_read():
    """The probe finds the dissector's table: Produce and Fetch at least, and no key it cannot know."""
    need_tshark()
    versions = tshark.dissector_versions()
    assert 0 in versions[0] and 0 in versions[1] and 0 in versions[18], versions
    assert all(isinstance(r, range) and len(r) for r in versions.values())


# --- Captures with a small snap length (tcpdump -s 200) -----------------------------------------------------------

def cut_to_snaplen(data, snaplen):
    """A classic pcap as tcpdump -s snaplen would have written the same traffic: each packet's first bytes."""
    order = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    out = bytearray(data[:24])
    struct.pack_into(order + "I", out, 16, snaplen)
    at = 24
    while at < len(data):
        seconds, fraction, captured, original = struct.unpack_from(order + "IIII", data, at)
        packet = data[at + 16:at + 16 + captured][:snaplen]
        out += struct.pack(order + "IIII", seconds, fraction, len(packet), original) + packet
        at += 16 + captured
    return bytes(out)


def snaplen_check(path, truth, ports=None):
    """The reader on a snap-length capture: what it reports is true, every request tshark finds is among its
    requests, and no response is left unexplained. ``truth``: {(client port, correlation id): api key}."""
    from kafkaproto.capture import GAP, OK, UNMATCHED_RESPONSE, read_capture

    exchanges = list(read_capture(path, ports=ports))
    ours = {}
    for ex in exchanges:
        if ex.request_header is not None:
            key = (ex.client_port, ex.correlation_id)
            assert truth.get(key) == ex.api_key, f"a request the traffic never had: {ex}"
            ours[key] = ex
        elif ex.correlation_id is not None:  # a response whose request the capture lost
            assert ex.status == GAP and "no request" in ex.error, ex
        assert ex.status != UNMATCHED_RESPONSE, ex
    port = next(iter({ex.broker_port for ex in exchanges}))
    found = {(p["src_port"], p["correlation_id"]): p["api_key"] for p in tshark.kafka_pdus(path, {port})
             if p["is_request"]}
    # Where a packet's captured bytes end mid-frame tshark reads the next packet's first bytes as a frame
    # start; those it reads out of record data are not in the traffic, and are left out.
    real = {key: api_key for key, api_key in found.items() if truth.get(key) == api_key}
    missed = sorted(set(real) - set(ours))
    assert not missed, f"requests tshark reads that the reader does not: {missed}"
    COMPARED["snap-length requests"] += len(real)
    paired = [ex for ex in ours.values() if ex.response_packet is not None]
    assert all(ex.status in (OK, GAP) for ex in paired)
    return ours


@pytest.mark.parametrize("path", CAPTURES, ids=[p.stem for p in CAPTURES])
def test_real_captures_cut_to_a_small_snap_length(path, tmp_path):
    """The clients' captures as tcpdump -s 200 would have recorded them; the whole capture says what is true."""
    need_tshark()
    from kafkaproto.capture import read_capture

    truth = {(ex.client_port, ex.correlation_id): ex.api_key for ex in read_capture(path)}
    cut = tmp_path / path.name
    cut.write_bytes(cut_to_snaplen(path.read_bytes(), 200))
    ours = snaplen_check(cut, truth)
    assert len(ours) == len(truth)  # each of these requests starts a packet: every one keeps its header


@pytest.mark.parametrize("seed", range(6))
def test_pipelined_traffic_cut_to_a_small_snap_length(seed, tmp_path):
    """Requests pipelined behind large ones start inside packets whose bytes the capture cut away: the framer loses
    its place and must find it again at the next frame that starts a packet, so that its request is paired with its
    response; a response whose request was cut away is a gap that says so."""
    need_tshark()
    import random

    from capture_traffic import Damage, conversation, segments
    from test_capture import pcap_bytes

    rng = random.Random(seed)
    conns = conversation(rng, connections=2, exchanges=(8, 12))
    sent = segments(rng, conns, Damage(snaplen=134))  # -s 200, less 66 bytes of Ethernet, IP and TCP headers
    path = tmp_path / f"synthetic-{seed}.pcap"
    path.write_bytes(pcap_bytes([s.segment for s in sent]))
    truth = {(c.client[1], t.correlation_id): t.header.request_api_key for c in conns for t in c.exchanges}
    snaplen_check(path, truth, ports=[9092])
