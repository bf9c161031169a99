"""From TCP segments to Kafka exchanges: each connection's two streams cut into frames, requests paired with responses.

Nothing here reads files or sockets: ``Exchanges.packet`` takes one packet's
TCP segment with its time and number, and returns the exchanges it completed.
It keeps, per connection, the reassembled streams (``tcp.Direction``), a framer
per direction (``framing.Framer``), and the requests waiting for their response.

Captures are imperfect, and every imperfection ends up in an exchange's status
rather than in an exception: a hole inside a frame whose size is known costs only
that frame (its header is still read when it was captured); a hole across a frame
boundary, or a size that cannot be right, loses the stream's footing until a
plausible frame start turns up again (a request header whose API and version
exist, or a response whose correlation id is pending).

Requests and responses are paired by kafkaproto.connection's Pairing, the rules
both ends of a live connection follow (acks=0, the SASL switch); what a capture
adds around it is what a live connection never has: frames cut by holes, times
and packet numbers per frame, and requests whose answers were lost.
"""

import struct
from collections import OrderedDict

from ..connection import Pairing
from ..exceptions import KafkaProtoError, UnsupportedVersionError
from ..fields import holds_records, unnamed_in, walk
from ..messages import ApiKey
from ..protocol import DEFAULT_MAX_FRAME, decode_request, decode_response
from ..registry import api, apis
from ..uuid import Uuid
from . import link
from .framing import (NOT_SEEN, client_hello, feed_pieces, foreign, header_or_none, request_framer,
                      response_framer, syn_at, tls_record)
from .tcp import Direction

OK = "ok"
UNMATCHED_REQUEST = "unmatched request"
UNMATCHED_RESPONSE = "unmatched response"
GAP = "gap"
DECODE_ERROR = "decode error"
UNSUPPORTED = "unsupported"
CAPTURE_ERROR = "capture error"
STATUSES = (OK, UNMATCHED_REQUEST, UNMATCHED_RESPONSE, GAP, DECODE_ERROR, UNSUPPORTED, CAPTURE_ERROR)

_INT32 = struct.Struct(">i")
_SYN, _FIN, _RST, _ACK = link.SYN, link.FIN, link.RST, link.ACK
# How much of an undecided connection (no SYN seen, no port given) is held while looking for a request.
_UNDECIDED_LIMIT = 256 << 10


class Exchange:
    """One request and its response as they crossed the wire, or what could be read of them.

    ``status`` is one of STATUSES. Times are nanoseconds since the epoch, taken from
    the packet that completed each frame; packets are numbered from 1 as Wireshark
    numbers them. Sizes are the frames' size prefixes. ``request``/``response`` are
    the decoded bodies (kafkaproto message objects), ``error`` says what went wrong
    and ``error_offset`` where (the byte in the frame, or in the stream for gaps).
    ``joined`` is True when the capture joined the connection after it began (its
    SYN went unseen), so its first requests may be missing. ``names`` is the
    reader's names.TopicNames, when it keeps one: ``topics`` then names topic IDs too.
    """

    __slots__ = ("status", "connection", "joined", "names", "client_address", "client_port", "broker_address",
                 "broker_port", "request_time_ns", "response_time_ns", "request_packet", "response_packet",
                 "api_key", "api_version", "correlation_id", "client_id", "request_size", "response_size",
                 "request_header", "request", "response_header", "response", "error", "error_offset",
                 "_topics", "_response_parts")

    def __init__(self, status, conn=None):
        self.status = status
        self.names = None
        if conn is not None:
            self.connection = conn.index
            self.joined = conn.up_frames is not None and conn.up_frames.joined
            self.client_address, self.client_port = conn.client
            self.broker_address, self.broker_port = conn.broker
        else:
            self.connection = self.joined = self.client_address = self.client_port = None
            self.broker_address = self.broker_port = None
        self.request_time_ns = self.response_time_ns = self.request_packet = self.response_packet = None
        self.api_key = self.api_version = self.correlation_id = self.client_id = None
        self.request_size = self.response_size = None
        self.request_header = self.request = self.response_header = self.response = None
        self.error = self.error_offset = None
        self._topics = self._response_parts = None

    @property
    def api_name(self):
        try:
            return api(self.api_key).name
        except (KeyError, TypeError):
            return None

    @property
    def latency_ns(self):
        if self.request_time_ns is None or self.response_time_ns is None:
            return None
        return self.response_time_ns - self.request_time_ns

    @property
    def error_code(self):
        """The response's top-level error code, or None."""
        return getattr(self.response, "error_code", None)

    @property
    def partition_errors(self):
        """(topic name or Uuid, partition, error code) for each partition the response reports an error for."""
        return self._response_walk()[0]

    @property
    def topics(self):
        """Topic names and topic ids (Uuid) the request and response name, in order of appearance; with
        ``names``, each topic id known there is followed by its name."""
        found = self._topics
        if found is None:
            topics = {}
            for body in (self.request, self.response):
                if body is not None:
                    walk(body, topics, [])
            found = self._topics = tuple(topics)
        names = self.names
        if names is None or not any(type(t) is Uuid for t in found):
            return found
        named = {}  # looked up each time: the names may learn more meanwhile
        for topic in found:
            named[topic] = None
            if type(topic) is Uuid:
                name = names.name(topic)
                if name is not None:
                    named[name] = None
        return tuple(named)

    @property
    def unnamed(self):
        """Whether it names a topic by an id its ``names`` do not know (yet)."""
        names = self.names
        if names is None:
            return False
        request, response, known = self.request, self.response, names.known
        return (request is not None and unnamed_in(request, known)) or \
            (response is not None and unnamed_in(response, known))

    def _response_walk(self):
        """(partition errors, records fields) of the response, walked once for both: only responses carry
        error codes (no request spec has one)."""
        parts = self._response_parts
        if parts is None:
            errors, found = [], None
            body = self.response
            if body is not None:
                found = [] if holds_records(type(body)) else None
                walk(body, {}, errors, records=found)
            parts = self._response_parts = (errors, found or ())
        return parts

    def to_dict(self):
        """Plain values: the bodies as dicts (to_dict()), topic ids as Uuid."""
        out = {name: getattr(self, name) for name in _PLAIN}
        out["api_name"] = self.api_name
        out["latency_ns"] = self.latency_ns
        out["error_code"] = self.error_code
        out["topics"] = list(self.topics)
        out["partition_errors"] = [list(e) for e in self.partition_errors]
        for name in ("request_header", "request", "response_header", "response"):
            value = getattr(self, name)
            out[name] = None if value is None else value.to_dict()
        return out

    def __repr__(self):
        what = f"{self.api_name or self.api_key} v{self.api_version}" if self.api_key is not None else "-"
        return (f"Exchange({self.status}, {what}, connection={self.connection}, "
                f"correlation_id={self.correlation_id}{', error=' + repr(self.error) if self.error else ''})")


_PLAIN = ("status", "connection", "joined", "client_address", "client_port", "broker_address", "broker_port",
          "request_time_ns", "response_time_ns", "request_packet", "response_packet", "api_key", "api_version",
          "correlation_id", "client_id", "request_size", "response_size", "error", "error_offset")


def records_fields(ex):
    """(side, time_ns, topic name, topic id, partition, records bytes) for each records field an exchange's
    request and response carry (Produce requests, Fetch and ShareFetch responses). A topic named by id only has
    its name from the exchange's ``names`` where they know it."""
    known = ex.names.known if ex.names is not None else None
    body = ex.request
    if body is not None and holds_records(type(body)):
        found = []
        walk(body, {}, [], records=found)
        for topic, topic_id, partition, data in found:
            if not topic and known:
                topic = known.get(topic_id)
            yield "request", ex.request_time_ns, topic, topic_id, partition, data
    for topic, topic_id, partition, data in ex._response_walk()[1]:
        if not topic and known:
            topic = known.get(topic_id)
        yield "response", ex.response_time_ns, topic, topic_id, partition, data


# ---- one connection --------------------------------------------------------------------------------------------

class _Request:
    """What is known of a request while its response is awaited."""

    __slots__ = ("header", "body", "status", "error", "error_offset", "time_ns", "packet", "size", "number",
                 "response_holes")


class _Connection:
    __slots__ = ("index", "client", "broker", "client_key", "up", "down", "up_frames", "down_frames", "pairing",
                 "foreign", "fin", "last_ns", "undecided", "undecided_bytes",
                 "requests", "client_id", "detectors")

    def __init__(self, index):
        self.index = index
        self.client = self.broker = None  # (address text, port)
        self.client_key = None  # (address bytes, port) of the client
        self.up = self.down = None  # tcp.Direction client->broker, broker->client
        self.up_frames = self.down_frames = None
        self.pairing = Pairing()  # its pending map holds a _Request per correlation id
        self.foreign = None  # why the connection is not read as Kafka (TLS, another protocol), once known
        self.fin = 0  # directions that sent FIN
        self.last_ns = 0
        self.undecided = []  # (segment, time, packet) held until the client side is known
        self.undecided_bytes = 0
        self.requests = 0  # requests read so far: each pending one knows its place
        self.client_id = NOT_SEEN  # of the last request whose header was read (None is a client id)
        self.detectors = {}  # (address, port) -> (its stream, a framer looking for a whole request in it)


class _Other:
    """A connection another partition reads: when it was last seen, and whether it has ended."""

    __slots__ = ("last_ns", "fin", "active")

    def __init__(self, time_ns):
        self.last_ns, self.fin, self.active = time_ns, 0, False

    def goes_on(self, seg, time_ns, idle_ns):
        """False when this packet belongs to a new connection on the same ports, as Exchanges.packet judges."""
        if time_ns - self.last_ns >= idle_ns:
            return False
        if seg.flags & _SYN and not seg.flags & _ACK and (self.fin or self.active):
            return False
        self.last_ns = time_ns
        return True

    def ends(self, seg, key):
        """Take the packet in; True when the connection is over (both FINs, or a RST)."""
        if seg.payload:
            self.active = True
        if seg.flags & _FIN:
            self.fin |= 1 if (seg.src, seg.sport) == key[0] else 2
        return self.fin == 3 or bool(seg.flags & _RST)


class Exchanges:
    """Turns TCP segments into exchanges, connection by connection.

        ex = Exchanges(ports={9092})
        for packet_number, (time_ns, segment) in enumerate(segments, 1):
            for exchange in ex.packet(segment, time_ns, packet_number):
                ...
        remaining = ex.finish()

    ``ports``: the brokers' ports; connections on no such port are skipped. Without
    it, the client is the side that sent the SYN, or (for connections the capture
    joined late) the side whose bytes read as a request. ``partition=(i, n)`` keeps
    only the connections whose stable hash is i modulo n, so that n readers of one
    file share its work. ``idle_ns``: a connection quiet this long is closed (its
    pending requests reported); ``max_connections`` bounds those open at once, the
    longest quiet going first. ``decode=False`` reads headers only, no bodies;
    a set of API keys reads only those APIs' bodies.
    """

    def __init__(self, ports=None, *, max_frame=DEFAULT_MAX_FRAME, partition=None, idle_ns=600 * 10**9,
                 max_connections=100_000, max_pending=8 << 20, decode=True):
        self.ports = frozenset(ports) if ports else None
        self.max_frame = max_frame
        self.partition = partition
        self.idle_ns = idle_ns
        self.max_connections = max_connections
        self.max_pending = max_pending
        self.decode = decode
        # The APIs whose bodies are read (None: all of them); decode=False reads headers only.
        self._bodies = None if decode is True else frozenset(decode or ())
        self.connections = OrderedDict()  # (low endpoint, high endpoint) -> _Connection, least recently used first
        self.count = 0  # connections seen
        self.skipped = {}  # reason -> segments not read as Kafka
        self.gap_bytes = 0
        # Idle connections are swept at the first packet of each second of capture time: a read that begins
        # elsewhere in the same packets (a ring's file read after its lookback) sweeps at the same packets.
        self._next_sweep_ns = 0
        self._apis = {a.api_key: a for a in apis()}
        self._others = {}  # key -> _Other, for connections another partition reads

    # ---- the packet path ----

    def packet(self, seg, time_ns, number):
        """The exchanges this TCP segment completes (link.Segment, capture time, packet number)."""
        a, b = (seg.src, seg.sport), (seg.dst, seg.dport)
        key = (a, b) if a <= b else (b, a)
        conns = self.connections
        out = []
        if time_ns >= self._next_sweep_ns:
            self._sweep(time_ns, out)
        conn = conns.get(key)
        flags = seg.flags
        if conn is None and self.partition is not None:
            other = self._others.get(key)
            if other is not None:
                if other.goes_on(seg, time_ns, self.idle_ns):
                    if other.ends(seg, key):
                        del self._others[key]
                    return out
                del self._others[key]
        reused = flags & _SYN and not flags & _ACK and conn is not None and conn.up is not None and (
            conn.fin or conn.up.delivered)
        if conn is None or reused:
            if conn is not None:  # the ports were reused by a new connection
                self._close(key, out)
            elif not (flags & _SYN or seg.payload or seg.missing):
                return out  # the last ACK of a connection already closed, or a keep-alive of one never seen
            if self.ports is not None and a[1] not in self.ports and b[1] not in self.ports:
                self.skipped["not on a broker port"] = self.skipped.get("not on a broker port", 0) + 1
                return out
            index = self.count
            self.count += 1
            if self.partition is not None and _stable_hash(key) % self.partition[1] != self.partition[0]:
                # Another reader's: remembered only so that connections keep the numbers a whole read gives.
                other = self._others[key] = _Other(time_ns)
                if other.ends(seg, key):
                    del self._others[key]
                elif len(self._others) > self.max_connections:
                    del self._others[next(iter(self._others))]
                return out
            conn = conns[key] = _Connection(index)
            if len(conns) > self.max_connections:
                self._close(next(iter(conns)), out)
        else:
            conns.move_to_end(key)
        conn.last_ns = time_ns
        if conn.up is None:
            if not self._decide(conn, seg, a, b):
                self._hold(conn, key, seg, time_ns, number, out)
                return out
            held, conn.undecided = conn.undecided, []
            for old_seg, old_time, old_number in held:
                self._segment(conn, old_seg, old_time, old_number, out)
        self._segment(conn, seg, time_ns, number, out)
        if conn.fin == 3 or flags & _RST:
            self._close(key, out)
        return out

    def finish(self):
        """Exchanges still open when the capture ends: cut frames, requests never answered."""
        out = []
        for key in list(self.connections):
            self._close(key, out)
        return out

    def _decide(self, conn, seg, a, b):
        """Find which side is the client; False while it cannot be told yet."""
        client = None
        if self.ports is not None and (a[1] in self.ports) != (b[1] in self.ports):
            client = b if a[1] in self.ports else a
        elif seg.flags & _SYN:
            client = a if not seg.flags & _ACK else b
        elif seg.payload or seg.flags & (_FIN | _RST):
            if client_hello(seg.payload):
                client = a
            else:
                # The side whose bytes hold a whole request that reads is the client (a response's bytes
                # often look like a request's first few, so a plausible start alone is not enough).
                client = self._detect(conn, seg, a, b)
        if client is None:
            return False
        conn.detectors = None
        broker = b if client == a else a
        conn.client_key = client
        conn.client = (link.address_text(client[0]), client[1])
        conn.broker = (link.address_text(broker[0]), broker[1])
        conn.up = Direction(self.max_pending)
        conn.down = Direction(self.max_pending)
        # Until its SYN is seen, a stream may start inside a frame: each looks for a frame start first.
        conn.up_frames = request_framer(conn, self._apis, self.max_frame, False)
        conn.down_frames = response_framer(conn.pairing.pending, self._apis, self.max_frame, False)
        return True

    def _detect(self, conn, seg, a, b):
        """Reassemble both sides of an undecided connection, each looking for a whole request; the side
        that has one first is the client."""
        detectors = conn.detectors
        for side in (a, b):
            if side not in detectors:
                framer = request_framer(conn, self._apis, self.max_frame, False)
                detectors[side] = (Direction(self.max_pending), framer)
        # A framer that has lost its footing gives events only once it found a request that reads.
        if seg.flags & _ACK:
            stream, framer = detectors[b]
            if feed_pieces(framer, stream.acked(seg.ack)):
                return b
        stream, framer = detectors[a]
        if feed_pieces(framer, stream.segment(seg.seq, seg.payload)):
            return a
        if seg.flags & (_FIN | _RST):  # the last chance: what waits behind a hole
            for side, (stream, framer) in detectors.items():
                if feed_pieces(framer, stream.flush()):
                    return side
        return None

    def _hold(self, conn, key, seg, time_ns, number, out):
        conn.undecided.append((seg, time_ns, number))
        conn.undecided_bytes += len(seg.payload)
        if conn.undecided_bytes > _UNDECIDED_LIMIT or seg.flags & (_FIN | _RST):
            first = next((s.payload for s, _, _ in conn.undecided if s.payload), b"")
            reason = "TLS (encrypted)" if tls_record(first) else "no Kafka request found in the connection"
            self.skipped[reason] = self.skipped.get(reason, 0) + len(conn.undecided)
            del self.connections[key]

    def _segment(self, conn, seg, time_ns, number, out):
        from_client = (seg.src, seg.sport) == conn.client_key
        stream = conn.up if from_client else conn.down
        flags = seg.flags
        if flags & _SYN:
            syn_at(stream, conn.up_frames if from_client else conn.down_frames, seg.seq)
            if flags & _ACK:  # the SYN-ACK says where the client's stream starts, in case its SYN went unseen
                syn_at(conn.up if not from_client else conn.down,
                     conn.up_frames if not from_client else conn.down_frames, seg.ack - 1)
        if flags & _ACK:  # first: what the peer has received decides what the other stream gave up on
            pieces = (conn.down if from_client else conn.up).acked(seg.ack)
            if pieces:
                self._pieces(conn, not from_client, pieces, time_ns, number, out)
        if seg.payload:
            pieces = stream.segment(seg.seq, seg.payload)
            if pieces:
                self._pieces(conn, from_client, pieces, time_ns, number, out)
        if flags & _FIN:
            conn.fin |= 1 if from_client else 2
            stream.fin((seg.seq + len(seg.payload) + seg.missing) & 0xFFFFFFFF)

    def _pieces(self, conn, from_client, pieces, time_ns, number, out):
        framer = conn.up_frames if from_client else conn.down_frames
        for piece in pieces:
            if conn.foreign:
                return
            if type(piece) is int:
                self.gap_bytes += piece
                events = framer.hole(piece)
            else:
                if framer.offset == 0:
                    conn.foreign = foreign(piece, from_client, self.max_frame, framer.synced)
                    if conn.foreign:
                        ex = Exchange(UNSUPPORTED, conn)
                        ex.error = conn.foreign
                        ex.request_time_ns, ex.request_packet = time_ns, number
                        out.append(ex)
                        return
                events = framer.feed(piece)
            for event in events:
                if event[0] == "frame":
                    if from_client:
                        self._request(conn, event, time_ns, number, out)
                    else:
                        self._response(conn, event, time_ns, number, out)
                else:
                    out.append(_gap_exchange(conn, from_client, event))

    # ---- requests and responses ----

    def _request(self, conn, event, time_ns, number, out):
        _, payload, size, missing, offset = event
        pairing = conn.pairing
        if pairing.raw_rounds and pairing.raw_request(payload):
            out.append(_sasl_exchange(conn, True, size, time_ns, number))
            return
        req = _Request()
        req.time_ns, req.packet, req.size = time_ns, number, size
        req.number = conn.requests = conn.requests + 1
        req.response_holes = conn.down.gaps + conn.down_frames.skipped
        req.body = req.error = req.error_offset = None
        req.status = OK
        if missing:
            req.status = GAP
            req.error = _cut_frame_text("request", offset, size, len(payload), missing)
            req.error_offset = offset + 4 + len(payload)
            header = header_or_none(payload)
        elif self._bodies is None:
            try:
                request = decode_request(payload)
                header, req.body = request.header, request.body
            except KafkaProtoError as e:
                header = header_or_none(payload)
                unknown = header is None or isinstance(e, UnsupportedVersionError) or \
                    header.request_api_key not in self._apis
                req.status = UNSUPPORTED if unknown and header is not None else DECODE_ERROR
                req.error = f"request: {e}"
                req.error_offset = getattr(e, "offset", None)
        else:
            header = header_or_none(payload)
            if header is None:
                req.status, req.error = DECODE_ERROR, "request: the header does not read"
            elif header.request_api_key == ApiKey.PRODUCE or header.request_api_key == ApiKey.SASL_HANDSHAKE \
                    or header.request_api_key in self._bodies:
                try:  # acks=0 and the SASL switch are in the body
                    req.body = decode_request(payload).body
                except KafkaProtoError:
                    pass
        req.header = header
        if header is None:
            out.append(_request_exchange(conn, req, DECODE_ERROR if req.status == OK else req.status))
            return
        conn.client_id = header.client_id
        earlier = pairing.pending.get(header.correlation_id)
        if not pairing.asked(header, req.body, req):
            out.append(_request_exchange(conn, req, req.status))
        elif earlier is not None:
            out.append(_unanswered(conn, earlier))

    def _response(self, conn, event, time_ns, number, out):
        _, payload, size, missing, offset = event
        pairing = conn.pairing
        if pairing.raw_rounds and pairing.raw_response():
            out.append(_sasl_exchange(conn, False, size, time_ns, number))
            return
        if len(payload) < 4:
            ex = Exchange(GAP if missing else DECODE_ERROR, conn)
            ex.response_time_ns, ex.response_packet, ex.response_size = time_ns, number, size
            ex.error, ex.error_offset = f"a response frame of {size} bytes has no correlation id", offset
            out.append(ex)
            return
        correlation_id = _INT32.unpack_from(payload, 0)[0]
        req = pairing.pending.pop(correlation_id, None)
        if req is None:
            # Its request may be in bytes the capture lacks: then it is a gap, not a stray answer.
            if conn.up.gaps or conn.up_frames.skipped:
                unseen = "no request: the client's stream lost bytes before this response, its request among them"
            elif conn.up_frames.joined:
                unseen = "no request: the capture joined the client's stream after it began"
            else:
                unseen = None
            ex = Exchange(GAP if unseen else UNMATCHED_RESPONSE, conn)
            ex.correlation_id = correlation_id
            ex.response_time_ns, ex.response_packet, ex.response_size = time_ns, number, size
            cut = _cut_frame_text("response", offset, size, len(payload), missing) if missing else None
            ex.error = "; ".join(part for part in (unseen, cut) if part) or None
            ex.error_offset = offset if unseen else None
            out.append(ex)
            return
        # A broker answers a connection's requests in order: those asked before this one got no answer.
        pending = pairing.pending
        while pending:
            first = next(iter(pending))
            if pending[first].number > req.number:
                break
            out.append(_unanswered(conn, pending.pop(first)))
        ex = _request_exchange(conn, req, req.status)
        ex.response_time_ns, ex.response_packet, ex.response_size = time_ns, number, size
        header = req.header
        if missing:
            if ex.status == OK:
                ex.status = GAP
                ex.error = _cut_frame_text("response", offset, size, len(payload), missing)
                ex.error_offset = offset + 4 + len(payload)
        elif (self._bodies is None or header.request_api_key in self._bodies) and \
                header.request_api_key in self._apis and ex.status in (OK, DECODE_ERROR):
            try:
                response = decode_response(payload, header.request_api_key, header.request_api_version)
            except KafkaProtoError as e:
                if ex.status == OK:
                    ex.status = UNSUPPORTED if isinstance(e, UnsupportedVersionError) else DECODE_ERROR
                    ex.error, ex.error_offset = f"response: {e}", getattr(e, "offset", None)
            else:
                ex.response_header, ex.response = response.header, response.body
                if response.version != header.request_api_version:
                    ex.api_version = response.version  # ApiVersions answered at version 0
                pairing.answered(header, response.body)
        out.append(ex)

    # ---- connections ending ----

    def _sweep(self, time_ns, out):
        self._next_sweep_ns = (time_ns // 10**9 + 1) * 10**9
        conns = self.connections
        while conns:
            key, conn = next(iter(conns.items()))
            if time_ns - conn.last_ns < self.idle_ns:
                break
            self._close(key, out)

    def _close(self, key, out):
        conn = self.connections.pop(key)
        if conn.up is None:
            if conn.undecided:
                reason = "no Kafka request found in the connection"
                self.skipped[reason] = self.skipped.get(reason, 0) + len(conn.undecided)
            return
        for from_client, stream, framer in ((True, conn.up, conn.up_frames), (False, conn.down, conn.down_frames)):
            if conn.foreign:
                break
            pieces = stream.flush()
            if pieces:
                self._pieces(conn, from_client, pieces, conn.last_ns, None, out)
            for event in framer.end():
                if event[0] == "frame":
                    if from_client:
                        self._request(conn, event, conn.last_ns, None, out)
                    else:
                        self._response(conn, event, conn.last_ns, None, out)
                else:
                    out.append(_gap_exchange(conn, from_client, event))
        pending = conn.pairing.pending
        for req in pending.values():
            out.append(_unanswered(conn, req))
        pending.clear()
        # The request framer's search refers back to the connection: let go, so that memory comes back at once
        # rather than at the cyclic collector's next pass.
        conn.up_frames = conn.down_frames = conn.detectors = None

def _request_exchange(conn, req, status):
    ex = Exchange(status, conn)
    header = req.header
    if header is not None:
        ex.api_key, ex.api_version = header.request_api_key, header.request_api_version
        ex.correlation_id, ex.client_id = header.correlation_id, header.client_id
    ex.request_header, ex.request = header, req.body
    ex.request_time_ns, ex.request_packet, ex.request_size = req.time_ns, req.packet, req.size
    ex.error, ex.error_offset = req.error, req.error_offset
    return ex


def _unanswered(conn, req):
    """The exchange of a request whose response never came: lost with bytes the capture missed, or never sent."""
    if req.status != OK:
        return _request_exchange(conn, req, req.status)
    if conn.down.gaps + conn.down_frames.skipped > req.response_holes:
        ex = _request_exchange(conn, req, GAP)
        ex.error = "no response: the broker's stream lost or skipped bytes after this request"
        return ex
    return _request_exchange(conn, req, UNMATCHED_REQUEST)


def _cut_frame_text(what, offset, size, kept, missing):
    """What holes did to a frame: the bytes the capture never had and, when a hole came before the end, the bytes
    captured after it, unread with them (a frame is read whole or not at all)."""
    text = f"{what} frame at stream offset {offset} lost {missing} of its {size} bytes (never captured)"
    unread = size - kept
    if unread > missing:
        text += f"; the {unread} bytes from the first lost one on go unread"
    return text


def _gap_exchange(conn, from_client, event):
    _, lost_at, found_at, reason, holes = event
    ex = Exchange(GAP, conn)
    side = "client" if from_client else "broker"
    if found_at is None:
        never = f" ({holes} bytes of it never captured)" if holes else ""
        ex.error = f"{side} stream unreadable from offset {lost_at} to its end{never}: {reason}"
    else:
        never = f" ({holes} of them never captured)" if holes else ""
        ex.error = f"{side} stream: {found_at - lost_at} bytes skipped from offset {lost_at}{never}: {reason}"
    ex.error_offset = lost_at
    return ex


def _sasl_exchange(conn, from_client, size, time_ns, number):
    ex = Exchange(UNSUPPORTED, conn)
    ex.error = f"raw SASL token from the {'client' if from_client else 'broker'} (after SaslHandshake v0)"
    if from_client:
        ex.request_time_ns, ex.request_packet, ex.request_size = time_ns, number, size
    else:
        ex.response_time_ns, ex.response_packet, ex.response_size = time_ns, number, size
    return ex


def _stable_hash(key):
    """The same number for a connection in every process (Python's hash() of bytes is salted)."""
    import zlib
    (a, pa), (b, pb) = key
    return zlib.crc32(a + pa.to_bytes(2, "big") + b + pb.to_bytes(2, "big"))

