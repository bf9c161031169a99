"""Kafka conversations with a known truth, cut into TCP segments and damaged on purpose, for the capture tests.

``conversation(rng)`` makes connections that each carry a few request/response
exchanges (ApiVersions, Metadata, Produce with acks=1 and acks=0, Fetch with
records, some of them large), pipelined, and returns the truth: what each
exchange is. ``segments(...)`` turns it into the TCP segments a tap would see,
in causal order, with the damage asked for: reordering, duplicates, overlapping
retransmissions, losses, snap-length cuts, a capture that starts late, sequence
numbers about to wrap, tiny and jumbo segments. Each segment records which
stream bytes it carried, so the tests know exactly which frames the capture held.
"""

from dataclasses import dataclass, field

from kafkaproto import encode_request, encode_response, records
from kafkaproto.capture import link
from kafkaproto.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchRequest,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
    RequestHeader,
    ResponseHeader,
)
from kafkaproto.uuid import Uuid


@dataclass
class Truth:
    connection: int
    correlation_id: int
    header: object
    request: object
    response: object  # None for a Produce with acks=0
    request_span: tuple = None  # (start, end) of the request frame in the client's stream
    response_span: tuple = None  # (start, end) of the response frame in the broker's stream


@dataclass
class Conn:
    index: int
    client: tuple  # (address bytes, port)
    broker: tuple
    exchanges: list = field(default_factory=list)


def _records(rng, count, big):
    builder = records.RecordBatchBuilder(compression=rng.choice(["none", "gzip", "zstd"]))
    for i in range(count):
        size = rng.randint(20_000, 90_000) if big and i == 0 else rng.randint(0, 40)
        builder.append(b"k%d" % i, rng.randbytes(size), headers=[("h", b"v")], timestamp=1_700_000_000_000 + i)
    return builder.build()


def _exchange(rng, kind, topic, topic_id):
    """(api version, request, response) of one kind."""
    if kind == "api_versions":
        return 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"), ApiVersionsResponse(
            api_keys=[ApiVersionsResponse.ApiVersion(api_key=k, min_version=0, max_version=9) for k in range(5)])
    if kind == "metadata":
        return 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), MetadataResponse(
            topics=[MetadataResponse.MetadataResponseTopic(
                name=topic, topic_id=topic_id, error_code=rng.choice([0, 0, 3]),
                partitions=[MetadataResponse.MetadataResponsePartition(partition_index=p, leader_id=1)
                            for p in range(3)])])
    if kind in ("produce", "produce_acks0"):
        request = ProduceRequest(acks=0 if kind == "produce_acks0" else -1, timeout_ms=1000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[ProduceRequest.PartitionProduceData(
                index=1, records=_records(rng, rng.randint(1, 5), rng.random() < 0.2))])])
        response = None if kind == "produce_acks0" else ProduceResponse(responses=[
            ProduceResponse.TopicProduceResponse(name=topic, partition_responses=[
                ProduceResponse.PartitionProduceResponse(index=1, error_code=rng.choice([0, 0, 6]))])])
        return 9, request, response
    request = FetchRequest(max_wait_ms=500, topics=[FetchRequest.FetchTopic(
        topic=topic, partitions=[FetchRequest.FetchPartition(partition=2, fetch_offset=0)])])
    response = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic=topic, partitions=[
        FetchResponse.PartitionData(partition_index=2, high_watermark=5,
                                    records=_records(rng, rng.randint(1, 5), rng.random() < 0.2))])])
    return 12, request, response


def conversation(rng, connections=3, exchanges=(2, 6), ipv6=False):
    """Connections with their exchanges; each exchange a Truth (spans filled in by segments())."""
    kinds = ["api_versions", "metadata", "produce", "produce_acks0", "fetch"]
    out = []
    for c in range(connections):
        if ipv6:
            client, broker = (bytes(15) + bytes([c + 2]), 40000 + c), (bytes(15) + b"\x01", 9092)
        else:
            client, broker = (bytes([10, 0, 0, c + 2]), 40000 + c), (bytes([10, 0, 0, 1]), 9092)
        conn = Conn(c, client, broker)
        for i in range(rng.randint(*exchanges)):
            kind = "api_versions" if i == 0 else rng.choice(kinds)
            topic = f"topic-{rng.randint(0, 3)}"
            version, request, response = _exchange(rng, kind, topic, Uuid.random())
            header = RequestHeader(request_api_key=request.api_key, request_api_version=version,
                                   correlation_id=i * 7 + c, client_id=f"client-{c}")
            conn.exchanges.append(Truth(c, header.correlation_id, header, request, response))
        out.append(conn)
    return out


@dataclass
class Damage:
    reorder: float = 0.0  # chance to swap a segment with the next one of the same flight
    duplicate: float = 0.0  # chance to send a segment again later
    overlap: float = 0.0  # chance to retransmit a segment merged with its neighbour
    loss: float = 0.0  # chance to lose a segment for good
    snaplen: int = 0  # cut every packet's payload to this many bytes (0: never)
    late_start: bool = False  # the capture begins after the SYN, somewhere in each connection
    wrap: bool = False  # initial sequence numbers just below 2**32
    tiny: bool = False  # segments of 1 to 20 bytes
    jumbo: bool = False  # segments of up to 64 KiB


@dataclass
class Sent:
    """One captured segment, with the stream bytes it covered."""
    segment: object
    from_client: bool
    connection: int
    span: tuple  # (start, end) in its stream, counting from 0 after the SYN
    captured: int  # bytes of the payload the capture kept
    isns: tuple = (0, 0)  # the connection's initial sequence numbers, client's and broker's


def _cut(rng, data, damage):
    """Split one flight's bytes into segment sizes."""
    sizes = []
    left = len(data)
    while left:
        if damage.tiny:
            n = rng.randint(1, 20)
        elif damage.jumbo:
            n = rng.randint(1000, 65535)
        else:
            n = rng.choice([rng.randint(1, 100), 1448, 1448, rng.randint(100, 3000)])
        n = min(n, left)
        sizes.append(n)
        left -= n
    return sizes


def _flights(rng, conn):
    """The connection's bytes as flights, (from_client, data), pipelining up to three requests; fills in the
    truths' spans."""
    flights = []
    queue = list(conn.exchanges)
    offsets = {True: 0, False: 0}
    while queue:
        batch = queue[:rng.randint(1, 3)]
        queue = queue[len(batch):]
        data = b""
        for t in batch:
            frame = encode_request(t.header, t.request, t.header.request_api_version)
            t.request_span = (offsets[True] + len(data), offsets[True] + len(data) + len(frame))
            data += frame
        flights.append((True, data))
        offsets[True] += len(data)
        data = b""
        for t in batch:
            if t.response is None:
                continue
            frame = encode_response(ResponseHeader(correlation_id=t.correlation_id), t.response,
                                    t.header.request_api_version)
            t.response_span = (offsets[False] + len(data), offsets[False] + len(data) + len(frame))
            data += frame
        if data:
            flights.append((False, data))
            offsets[False] += len(data)
    return flights


class _Packets:
    """One connection's packets in causal order, each acknowledging all the other side has sent so far."""

    def __init__(self, conn, isn_c, isn_b):
        self.conn, self.isns = conn, (isn_c, isn_b)
        self.pos = {True: 0, False: 0}

    def segment(self, from_client, rel_seq, payload, flags):
        conn = self.conn
        src, dst = (conn.client, conn.broker) if from_client else (conn.broker, conn.client)
        seq = (self.isns[0] if from_client else self.isns[1]) + 1 + rel_seq
        ack = 0 if flags == link.SYN else (self.isns[1] if from_client else self.isns[0]) + 1 + \
            self.pos[not from_client]
        return link.Segment(src[0], src[1], dst[0], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, flags, payload, 0)

    def sent(self, from_client, rel_seq, payload, flags):
        span = (rel_seq, rel_seq + len(payload))
        return Sent(self.segment(from_client, rel_seq, payload, flags), from_client, self.conn.index, span,
                    len(payload), self.isns)


def _connection_packets(rng, conn, flights, damage):
    isn_c = (2**32 - rng.randint(1, 5000)) if damage.wrap else rng.randrange(2**32)
    isn_b = (2**32 - rng.randint(1, 5000)) if damage.wrap else rng.randrange(2**32)
    p = _Packets(conn, isn_c, isn_b)
    packets = [p.sent(True, -1, b"", link.SYN), p.sent(False, -1, b"", link.SYN | link.ACK)]
    for from_client, data in flights:
        flight = []
        at = 0
        for n in _cut(rng, data, damage):
            flight.append(p.sent(from_client, p.pos[from_client] + at, data[at:at + n], link.ACK | link.PSH))
            at += n
        for i in range(len(flight) - 1):
            if rng.random() < damage.reorder:
                flight[i], flight[i + 1] = flight[i + 1], flight[i]
        extra = []
        for i, sent in enumerate(flight):
            if rng.random() < damage.duplicate:
                extra.append((rng.randint(i, len(flight)), sent))
            if rng.random() < damage.overlap and i + 1 < len(flight):
                first, second = sorted((sent, flight[i + 1]), key=lambda s: s.span)
                if first.span[1] == second.span[0]:
                    merged = p.sent(from_client, first.span[0], first.segment.payload + second.segment.payload,
                                    link.ACK)
                    extra.append((rng.randint(i, len(flight)), merged))
        for where, sent in sorted(extra, key=lambda e: -e[0]):
            flight.insert(where, sent)
        packets += flight
        p.pos[from_client] += len(data)
    packets.append(p.sent(True, p.pos[True], b"", link.FIN | link.ACK))
    packets.append(p.sent(False, p.pos[False], b"", link.FIN | link.ACK))
    if damage.late_start:
        packets = packets[rng.randint(1, max(1, len(packets) // 2)):]
    return packets


def segments(rng, conns, damage=None):
    """The segments a tap sees, interleaving connections, with the damage applied (spans of the truths filled
    in)."""
    damage = damage or Damage()
    plans = [(conn, _flights(rng, conn)) for conn in conns]
    per_conn = [_connection_packets(rng, conn, flights, damage) for conn, flights in plans]

    out = []
    while any(per_conn):
        conn_packets = rng.choice([p for p in per_conn if p])
        out.append(conn_packets.pop(0))

    kept = []
    for sent in out:
        if sent.segment.payload and rng.random() < damage.loss:
            continue
        if damage.snaplen and len(sent.segment.payload) > damage.snaplen:
            s = sent.segment
            cut = s._replace(payload=s.payload[:damage.snaplen], missing=len(s.payload) - damage.snaplen)
            sent = Sent(cut, sent.from_client, sent.connection, sent.span, damage.snaplen, sent.isns)
        kept.append(sent)
    return kept


def captured_bytes(sent_list):
    """{(connection, from_client): set of stream byte positions the capture holds}, as sorted interval lists."""
    spans = {}
    # Where a stream starts for the reader: 0 once a SYN or SYN-ACK shows it; else the first of its own first
    # segment and the peer's first acknowledgement, in the order they arrived.
    first = {}
    for sent in sent_list:
        key = (sent.connection, sent.from_client)
        peer = (sent.connection, not sent.from_client)
        flags = sent.segment.flags
        if flags & link.SYN:
            first.setdefault(key, 0)
            if flags & link.ACK:
                first.setdefault(peer, 0)
        elif flags & link.ACK:
            isn = sent.isns[1] if sent.from_client else sent.isns[0]
            first.setdefault(peer, (sent.segment.ack - isn - 1) & 0xFFFFFFFF)
        if sent.captured:
            start = sent.span[0]
            first.setdefault(key, start)
            spans.setdefault(key, []).append((start, start + sent.captured))
    merged = {}
    for key, intervals in spans.items():
        intervals = sorted((max(a, first[key]), b) for a, b in intervals if b > first[key])
        out = []
        for a, b in intervals:
            if out and a <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], b))
            else:
                out.append((a, b))
        merged[key] = out
    return merged


def holds(intervals, span):
    """True when the interval list covers all of span."""
    return any(a <= span[0] and span[1] <= b for a, b in intervals)
