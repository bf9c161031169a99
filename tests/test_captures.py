"""Real traffic: every Kafka frame in tests/data/captures/*.pcap decodes, and re-encodes byte for byte.

The captures are of Apache Kafka's Java clients, kafka-python and librdkafka talking to real
brokers (tests/data/captures/README.md says how each was made). Each TCP direction's payload
is split into frames: client to broker are requests, broker to client are responses, matched
to their request by correlation id. Records in Produce requests and Fetch responses are read
too.
"""

from collections import Counter
from pathlib import Path

import pytest

from kafkaproto import decode_request, decode_response, encode_request, encode_response, split_frames
from kafkaproto.messages import api
from kafkaproto.records import read_records
from pcap_streams import tcp_streams

CAPTURES = sorted((Path(__file__).parent / "data" / "captures").glob("*.pcap"))


def broker_port(streams):
    """The one port every connection in the capture shares."""
    ports = None
    for (a, b) in streams:
        pair = {a[1], b[1]}
        ports = pair if ports is None else ports & pair
    assert ports and len(ports) == 1, f"cannot tell the broker's port from {sorted(streams)}"
    return ports.pop()


def records_fields(msg):
    """Every non-null records field in a decoded message, at any depth."""
    for f in type(msg)._fields:
        value = getattr(msg, f.attr)
        if value is None:
            continue
        if f.kind == "records":
            yield value
        elif f.struct is not None:
            for item in value if f.array else [value]:
                yield from records_fields(item)


def exchanges(data):
    """Decode every frame of a capture; returns (frames per message name and version, records read)."""
    streams = tcp_streams(data)
    port = broker_port(streams)
    seen, records = Counter(), 0
    for (src, dst), to_broker in streams.items():
        if dst[1] != port:
            continue
        pending = {}
        for frame in split_frames(to_broker):
            request = decode_request(frame)
            header, body = request.header, request.body
            assert encode_request(header, body, header.request_api_version)[4:] == frame, \
                f"{api(header.request_api_key).name} v{header.request_api_version} request does not re-encode"
            assert header.correlation_id not in pending, f"correlation id {header.correlation_id} reused in flight"
            pending[header.correlation_id] = (header.request_api_key, header.request_api_version)
            seen[f"{api(header.request_api_key).name}Request v{header.request_api_version}"] += 1
            for blob in records_fields(body):
                records += len(read_records(blob))
        for frame in split_frames(streams.get((dst, src), b"")):
            correlation_id = int.from_bytes(frame[:4], "big", signed=True)
            api_key, version = pending.pop(correlation_id)
            response = decode_response(frame, api_key, version)
            assert encode_response(response.header, response.body, response.version)[4:] == frame, \
                f"{api(api_key).name} v{response.version} response does not re-encode"
            seen[f"{api(api_key).name}Response v{response.version}"] += 1
            for blob in records_fields(response.body):
                records += len(read_records(blob, allow_partial=True))
    return seen, records


def test_captures_are_present():
    assert {p.stem for p in CAPTURES} >= {"java-3.9.2", "java-4.3.1", "kafka-python", "librdkafka"}
    for p in CAPTURES:
        assert p.stat().st_size < 1_000_000, f"{p.name} is over 1 MB"


@pytest.mark.parametrize("path", CAPTURES, ids=[p.stem for p in CAPTURES])
def test_every_frame_decodes(path):
    seen, records = exchanges(path.read_bytes())
    names = {name.split(" ")[0] for name in seen}
    # Each capture is a client producing and consuming in a group (classic, or KIP-848's): these must all be there,
    # and decoded.
    assert {"ApiVersionsRequest", "MetadataRequest", "ProduceRequest", "FetchRequest", "FetchResponse",
            "ProduceResponse", "FindCoordinatorRequest", "OffsetCommitRequest"} <= names, seen
    assert names & {"JoinGroupRequest", "ConsumerGroupHeartbeatRequest"}, seen
    assert records >= 40, (records, seen)
