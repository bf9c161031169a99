"""kafkaproto.connection: a client and a server end driven against each other, and a tap on real captures."""

from collections import Counter
from pathlib import Path

import pytest

from kafkaproto import errors
from kafkaproto.connection import (
    ClientConnection,
    Observer,
    ProtocolError,
    RequestReceived,
    ResponseReceived,
    SaslBytes,
    ServerConnection,
    Undecodable,
)
from kafkaproto.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
    RequestHeader,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from pcap_streams import tcp_streams

CAPTURES = sorted((Path(__file__).parent / "data" / "captures").glob("*.pcap"))


def header(api_key, version, correlation_id):
    return RequestHeader(request_api_key=api_key, request_api_version=version, correlation_id=correlation_id,
                         client_id="test")


def trickle(data, size=3):
    """data in small pieces, as a socket may deliver it."""
    return [data[i:i + size] for i in range(0, len(data), size)]


def deliver(data, receive):
    events = []
    for piece in trickle(data):
        events += receive(piece)
    return events


def receive_in_place(server, data, size):
    """Frames from data received the way asyncio.BufferedProtocol receives, size bytes at most per read."""
    frames, pos = [], 0
    while pos < len(data):
        view = server.get_buffer(-1)
        n = min(len(view), size, len(data) - pos)
        view[:n] = data[pos:pos + n]
        del view
        frames += server.buffer_updated(n)
        pos += n
    return frames


def test_server_receives_in_place_and_a_large_request_stays_writable():
    client, server = ClientConnection(), ServerConnection()
    produce = ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"r" * 50_000)])])
    wire = client.send_request(header(0, 9, 1), produce)
    wire += client.send_request(header(18, 3, 2), ApiVersionsRequest(client_software_name="t",
                                                                       client_software_version="1"))
    events = [server.receive_frame(frame) for frame in receive_in_place(server, wire, 1000)]
    assert [e.header.correlation_id for e in events] == [1, 2]
    assert events[0].body == produce
    records = events[0].body.topic_data[0].partition_data[0].records
    assert not memoryview(records).readonly  # the broker gives the batches their offsets in place
    assert receive_in_place(server, b"\x00\x00\x00\x00\xff\xff\xff\xfe", 8) == [b""]
    with pytest.raises(ProtocolError, match=f"frame size -2 at stream offset {len(wire) + 4} is outside"):
        server.get_buffer(-1)


def test_requests_and_responses_pair_up_even_out_of_order():
    client, server = ClientConnection(), ServerConnection()
    wire = client.send_request(header(3, 12, 1), MetadataRequest(topics=None))
    wire += client.send_request(header(18, 3, 2), ApiVersionsRequest(client_software_name="t",
                                                                       client_software_version="1"))
    assert set(client.pending) == {1, 2}
    requests = deliver(wire, server.receive_data)
    assert [type(e) for e in requests] == [RequestReceived, RequestReceived]
    metadata, versions = requests
    assert (metadata.version, metadata.correlation_id, metadata.expects_response) == (12, 1, True)
    # The server answers the second request first.
    reply = server.send_response(versions, ApiVersionsResponse(error_code=0))
    reply += server.send_response(metadata, MetadataResponse(throttle_time_ms=7))
    assert server.pending == {}
    responses = deliver(reply, client.receive_data)
    assert [(type(e.body).__name__, e.version, e.request.correlation_id) for e in responses] == [
        ("ApiVersionsResponse", 3, 2), ("MetadataResponse", 12, 1)]
    assert responses[1].body.throttle_time_ms == 7
    assert client.pending == {}


def test_produce_with_acks_0_expects_no_response():
    client, server = ClientConnection(), ServerConnection()
    wire = client.send_request(header(0, 9, 5), ProduceRequest(acks=0, timeout_ms=100))
    wire += client.send_request(header(0, 9, 6), ProduceRequest(acks=-1, timeout_ms=100))
    assert set(client.pending) == {6}
    fire_and_forget, acked = server.receive_data(wire)
    assert not fire_and_forget.expects_response and acked.expects_response
    with pytest.raises(ProtocolError, match="no pending request has correlation id 5"):
        server.send_response(fire_and_forget, ProduceResponse())
    client.receive_data(server.send_response(acked, ProduceResponse()))
    assert client.pending == {}


def test_api_versions_beyond_the_server_is_answered_at_version_0():
    client, server = ClientConnection(), ServerConnection()
    # A newer client asks for a version this server lacks: rewrite the version in the frame.
    frame = bytearray(client.send_request(header(18, 3, 9), ApiVersionsRequest(client_software_name="t",
                                                                                client_software_version="1")))
    frame[6:8] = (99).to_bytes(2, "big")
    with pytest.raises(ProtocolError) as refused:
        server.receive_data(bytes(frame))
    e = refused.value
    assert (e.close, e.error_code, e.correlation_id) == (False, errors.UNSUPPORTED_VERSION.code, 9)
    reply = server.send_response(e.header, ApiVersionsResponse(error_code=e.error_code), version=0)
    (response,) = client.receive_data(reply)
    assert (response.version, response.body.error_code) == (0, errors.UNSUPPORTED_VERSION.code)


def test_unreadable_requests_close_the_connection():
    server = ServerConnection()
    frame = header(3, 12, 4).encode(2) + b"\x05"  # a Metadata body cut short
    with pytest.raises(ProtocolError) as refused:
        server.receive_data(len(frame).to_bytes(4, "big") + frame)
    assert refused.value.close and refused.value.correlation_id == 4
    with pytest.raises(ProtocolError, match="frame size -1"):
        ServerConnection().receive_data(b"\xff\xff\xff\xff")


def test_a_response_nobody_asked_for_is_refused():
    client = ClientConnection()
    with pytest.raises(ProtocolError, match="correlation id 77, which no pending request has"):
        client.receive_data(b"\x00\x00\x00\x08\x00\x00\x00\x4d\x00\x00\x00\x00")


@pytest.mark.parametrize("mechanism, rounds", [("PLAIN", 1), ("SCRAM-SHA-512", 2)])
def test_raw_sasl_tokens_follow_a_version_0_handshake(mechanism, rounds):
    client, server = ClientConnection(), ServerConnection()
    (handshake,) = server.receive_data(client.send_request(header(17, 0, 1),
                                                           SaslHandshakeRequest(mechanism=mechanism)))
    client.receive_data(server.send_response(handshake, SaslHandshakeResponse(mechanisms=[mechanism])))
    assert client.raw and server.raw
    for i in range(rounds):
        (token,) = server.receive_data(client.send_raw(b"client-%d" % i))
        assert isinstance(token, SaslBytes) and token.from_client and token.data == b"client-%d" % i
        (answer,) = client.receive_data(server.send_raw(b"server-%d" % i))
        assert answer.data == b"server-%d" % i and not answer.from_client
    assert not client.raw and not server.raw
    (metadata,) = server.receive_data(client.send_request(header(3, 1, 2), MetadataRequest(topics=[])))
    assert isinstance(metadata, RequestReceived)


def test_a_refused_handshake_stays_kafka():
    client, server = ClientConnection(), ServerConnection()
    (handshake,) = server.receive_data(client.send_request(header(17, 0, 1), SaslHandshakeRequest(mechanism="X")))
    client.receive_data(server.send_response(handshake, SaslHandshakeResponse(error_code=33)))
    assert not client.raw and not server.raw
    with pytest.raises(ProtocolError):
        client.send_raw(b"token")


def test_gssapi_stays_raw_until_the_client_speaks_kafka_again():
    tap = Observer()
    request = ClientConnection().send_request(header(17, 0, 1), SaslHandshakeRequest(mechanism="GSSAPI"))
    tap.client_data(request)
    server = ServerConnection()
    server.receive_data(request)
    tap.server_data(server.send_response(header(17, 0, 1), SaslHandshakeResponse()))
    tokens = b"".join(len(t).to_bytes(4, "big") + t for t in (b"\x60\x82token", b"more"))
    assert [type(e) for e in tap.client_data(tokens)] == [SaslBytes, SaslBytes]
    assert [type(e) for e in tap.server_data(b"\x00\x00\x00\x02ok")] == [SaslBytes]
    back = ClientConnection().send_request(header(3, 1, 2), MetadataRequest(topics=[]))
    assert [type(e) for e in tap.client_data(back)] == [RequestReceived]
    assert not tap.raw


def test_observer_reports_what_it_cannot_read_and_goes_on():
    tap = Observer()
    good = ClientConnection().send_request(header(3, 1, 2), MetadataRequest(topics=[]))
    bad = b"\x00\x00\x00\x04\x00\x63\x00\x00"  # api key 99
    events = tap.client_data(bad + good)
    assert [type(e) for e in events] == [Undecodable, RequestReceived]
    assert "unknown api key 99" in str(events[0].error)
    events = tap.server_data(b"\x00\x00\x00\x04\x00\x00\x00\x63")
    assert isinstance(events[0], Undecodable) and "correlation id 99" in str(events[0].error)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_observer_pairs_every_exchange_of_real_captures(path):
    streams = tcp_streams(path.read_bytes())
    (broker,) = set.intersection(*({a[1], b[1]} for a, b in streams))
    counts = Counter()
    for (src, dst), to_broker in streams.items():
        if dst[1] != broker:
            continue
        tap = Observer()
        events = deliver(to_broker, tap.client_data) if len(to_broker) < 20000 else tap.client_data(to_broker)
        events += tap.server_data(streams.get((dst, src), b""))
        for e in events:
            assert not isinstance(e, Undecodable), e
            counts[type(e).__name__] += 1
            if isinstance(e, ResponseReceived):
                assert e.request.correlation_id == e.header.correlation_id
                assert e.request.request_api_version == e.version or e.version == 0
        assert tap.pending == {}, f"unanswered: {tap.pending}"
    assert counts["RequestReceived"] >= counts["ResponseReceived"] > 10
