"""One direction of a connection cut into Kafka frames, across the holes a capture leaves.

A ``Framer`` takes a stream's bytes and holes (from tcp.Direction) and gives frames, with the damage a hole did
to them, and the points where the stream lost its footing and found it again at a plausible frame start. What a
plausible start is differs by direction: ``request_framer`` looks for request headers of APIs and versions that
exist, ``response_framer`` for the correlation ids of requests still waiting. ``foreign`` tells from a stream's
first bytes that it is not Kafka at all (TLS, or another protocol). Nothing here does I/O.
"""

import re
import struct

from ..exceptions import DecodeError, KafkaProtoError
from ..connection import reads_as_request
from ..protocol import decode_response, read_request_header
from ..registry import api

_INT32 = struct.Struct(">i")
_REQUEST_START = struct.Struct(">ihhih")  # size, api key, version, correlation id, client id length
# A lost stream holds at most this much while candidate frame starts wait for the rest of their frame.
_SCAN_LIMIT = 1 << 20
# Bytes a frame start needs before it can be judged: a request's size, api key, version, correlation id and
# client id length.
_HEAD_BYTES = 14
# A request frame starts with a size from 8 to under 128 MiB, then an api key and a version under 256.
_REQUEST_CANDIDATE = re.compile(
    rb"(?=(?:[\x01-\x07]...|\x00[\x01-\xff]..|\x00\x00[\x01-\xff].|\x00\x00\x00[\x08-\xff])\x00.\x00)", re.S)
NOT_SEEN = object()  # a connection's client id before its first request header


class Framer:
    """Cuts one direction's stream, given as bytes and holes, into Kafka frames.

    feed() and hole() return events: ("frame", payload, size, missing, offset) for a
    frame (missing: how many of its bytes the capture never had, 0 when it is whole;
    payload then holds what came before the first hole, the bytes after it being
    dropped), and ("resync", lost_at, found_at, reason, holes) when the stream found
    its footing again after losing it at lost_at (found_at None: it never did);
    holes counts the bytes in between that the capture never had.

    Footing is found again at a plausible frame start (``starts(buf, i)`` yields
    (position, size) candidates from i on) whose whole frame reads (``reads(payload)``).
    A candidate whose frame has not fully arrived waits for it, as long as what is
    held stays under _SCAN_LIMIT; past that the earliest is taken on trust. A frame
    that cannot arrive whole, because a hole cuts it, is taken when it starts one
    of the pieces fed since the last hole and its start reads (``heads(prefix)``):
    a capture with a small snap length keeps only the first bytes of each packet,
    and a sender starts a frame on a new packet whenever nothing else waits to go.
    """

    __slots__ = ("buf", "need", "size", "damaged", "missing", "synced", "offset", "frame_offset", "starts", "reads",
                 "heads", "max_frame", "lost_at", "lost_reason", "lost_holes", "scan_from", "waiting", "skipped",
                 "pieces", "joined")

    def __init__(self, starts, reads, heads, max_frame, synced=True):
        self.buf = bytearray()
        self.need = -1  # payload bytes still owed to the current frame; -1 while reading a size prefix
        self.size = 0
        self.damaged = False  # a hole cut the current frame
        self.missing = 0  # bytes of the current frame that fell in holes
        self.synced = synced
        self.offset = 0  # stream offset of the first byte of the data being fed
        self.frame_offset = 0
        self.starts = starts
        self.reads = reads
        self.heads = heads
        self.max_frame = max_frame
        self.lost_at = None if synced else 0
        self.lost_reason = None if synced else "the capture starts after the connection did"
        self.lost_holes = 0  # while lost: bytes since lost_at that fell in holes
        self.scan_from = 0  # while lost: where in buf the search for candidates goes on
        self.waiting = []  # while lost: (position in buf, size) of candidates whose frame is still arriving
        self.skipped = 0  # bytes passed over while lost
        self.pieces = []  # while lost: where in buf the pieces fed since the last hole began (packets' first bytes)
        self.joined = not synced  # the capture joined the stream after its start: its first frames went unseen

    def start(self):
        """The stream starts here, at a frame boundary (its SYN was seen)."""
        if not self.offset and not self.buf:
            self.synced = True
            self.joined = False
            self.lost_at = self.lost_reason = None

    def feed(self, data):
        events = []
        while data is not None:
            data = self._feed(data, events)
        return events

    def _feed(self, data, events):
        """Consume data; return bytes to feed again (after finding a frame start), or None."""
        pos, n = 0, len(data)
        while pos < n:
            if not self.synced:
                return self._scan(data, pos, events)
            need = self.need
            if need < 0:
                buf = self.buf
                if not buf and n - pos >= 4:
                    self.frame_offset = self.offset + pos
                    size = _INT32.unpack_from(data, pos)[0]
                    pos += 4
                else:
                    if not buf:
                        self.frame_offset = self.offset + pos
                    take = min(4 - len(buf), n - pos)
                    buf += data[pos:pos + take]
                    pos += take
                    if len(buf) < 4:
                        break
                    size = _INT32.unpack_from(buf, 0)[0]
                    buf.clear()
                if size < 0 or size > self.max_frame:
                    self._lose(self.frame_offset, f"a frame size of {size} (outside 0..{self.max_frame})")
                    continue
                self.size = self.need = size
                if not size:
                    events.append(("frame", b"", 0, 0, self.frame_offset))
                    self.need = -1
                continue
            if not self.buf and not self.damaged and n - pos >= need:
                events.append(("frame", data[pos:pos + need], need, 0, self.frame_offset))
                pos += need
                self.need = -1
                continue
            take = min(need, n - pos)
            if not self.damaged:
                self.buf += data[pos:pos + take]
            pos += take
            self.need = need - take
            if not self.need:
                self._emit(events)
        self.offset += n
        return None

    def _emit(self, events):
        events.append(("frame", bytes(self.buf), self.size, self.missing, self.frame_offset))
        self.buf = bytearray()
        self.need = -1
        self.damaged = False
        self.missing = 0

    def hole(self, count):
        events = []
        if count <= 0:
            return events
        if not self.synced:
            rest = self._cut_frame(events)
            if rest is not None:
                events += self.feed(rest)
        start = self.offset
        self.offset += count
        if not self.synced:
            self.lost_holes += count
            self.buf.clear()  # bytes on either side of a hole do not belong together
            self.scan_from = 0
            self.waiting = []
            self.pieces = []
        elif self.need < 0:
            self._lose(start, "bytes missing from the capture where a frame should start")
            self.lost_holes = count
        elif count < self.need:
            self.damaged = True
            self.missing += count
            self.need -= count
        else:
            after = count - self.need
            self.damaged = True
            self.missing += self.need
            self._emit(events)
            if after:
                self._lose(start + count - after, "bytes missing from the capture across a frame boundary")
                self.lost_holes = after
        return events

    def _cut_frame(self, events):
        """While lost, just before a hole: the bytes from a frame start that opens a piece, whose frame runs
        into the hole and whose start reads; None when there is none."""
        buf = self.buf
        for piece in self.pieces:
            if len(buf) - piece < 8:
                break
            at, size = next(iter(self.starts(bytes(buf[piece:piece + 64]), 0)), (None, 0))  # a start at 0 only
            if at == 0 and 4 + size > len(buf) - piece and self.heads(bytes(buf[piece + 4:])):
                self._found(self.offset - len(buf) + piece, events)
                rest = bytes(buf[piece:])
                buf.clear()
                return rest
        return None

    def _found(self, at, events):
        """Footing found again at stream offset at."""
        self.synced = True
        if at > self.lost_at:
            self.skipped += at - self.lost_at
            events.append(("resync", self.lost_at, at, self.lost_reason, self.lost_holes))
        self.lost_at = self.lost_reason = None
        self.lost_holes = 0
        self.scan_from = 0
        self.waiting = []
        self.offset = at

    def end(self):
        """Events for what is left when the stream ends: a frame cut short, or footing never found again."""
        events = []
        if self.synced and self.need > 0:  # the rest of the frame never came
            self.damaged = True
            self.missing += self.need
            self._emit(events)
        elif self.synced and self.buf:
            self.synced = False
            self.lost_at, self.lost_reason = self.frame_offset, "the stream ends inside a size prefix"
        if not self.synced and self.offset > self.lost_at:
            self.skipped += self.offset - self.lost_at
            events.append(("resync", self.lost_at, None, self.lost_reason, self.lost_holes))
        return events

    def _lose(self, at, reason):
        self.synced = False
        self.lost_at, self.lost_reason = at, reason
        self.lost_holes = 0
        self.buf.clear()
        self.need = -1
        self.damaged = False
        self.missing = 0
        self.scan_from = 0
        self.waiting = []
        self.pieces = []

    def _scan(self, data, pos, events):
        """Look for a frame start in what has arrived; return the bytes from there on, or None to wait."""
        buf = self.buf
        base = self.offset + pos - len(buf)  # stream offset of buf[0]
        if pos == 0 and len(self.pieces) < 64:
            self.pieces.append(len(buf))
        buf += data[pos:]
        self.offset += len(data)
        reads = self.reads
        found = None
        still = []
        for at, size in self.waiting:  # candidates from earlier chunks, first
            end = at + 4 + size
            if end > len(buf):
                still.append((at, size))
            elif reads(buf[at + 4:end]):
                found = at
                break
        if found is None:
            for at, size in self.starts(buf, self.scan_from):
                end = at + 4 + size
                if end > len(buf):
                    if len(still) < 64:
                        still.append((at, size))
                elif reads(buf[at + 4:end]):
                    found = at
                    break
            else:
                self.scan_from = max(self.scan_from, len(buf) - _HEAD_BYTES + 1)
        if found is None and still and len(buf) - still[0][0] > _SCAN_LIMIT:
            found = still[0][0]  # too long to wait for: take it on trust
        if found is None:
            keep = min([self.scan_from] + [at for at, _ in still])
            if keep > 0:
                del buf[:keep]
                self.pieces = [at - keep for at in self.pieces if at >= keep]
                self.scan_from -= keep
                still = [(at - keep, size) for at, size in still]
            self.waiting = still
            return None
        self._found(base + found, events)
        rest = bytes(buf[found:])
        buf.clear()
        return rest


def syn_at(stream, framer, seq):
    """A stream's SYN: it starts at seq + 1, at a frame boundary."""
    if stream.next_seq is None:
        stream.syn(seq & 0xFFFFFFFF)
        framer.start()


def feed_pieces(framer, pieces):
    """Feed stream pieces to a framer; True if any event came out."""
    events = False
    for piece in pieces:
        events = bool(framer.hole(piece) if type(piece) is int else framer.feed(piece)) or events
    return events


def client_hello(data):
    """True when data starts with a TLS handshake record carrying a ClientHello."""
    return len(data) >= 6 and data[0] == 22 and data[1] == 3 and data[5] == 1


def foreign(first, from_client, max_frame, from_syn):
    """Why a stream whose first bytes are these is not Kafka, or None when it may be. Only a stream seen from its
    SYN starts at a frame; one the capture joined late is judged only by whether it looks like TLS records."""
    if tls_record(first):
        return "TLS: the connection is encrypted"
    if len(first) < 8 or not from_syn:
        return None
    size, key, version = struct.unpack_from(">ihh", first)
    if not 4 <= size <= max_frame or (from_client and not ((0 <= key < 1024 or _known(key)) and 0 <= version < 1024)):
        text = bytes(first[:16]).decode("ascii", "replace")
        return f"not Kafka: the {'client' if from_client else 'broker'} starts with {text!r}"
    return None


def _known(key):
    """An api key the registry knows: an extension's may lie above those Kafka hands out."""
    try:
        api(key)
    except KeyError:
        return False
    return True


def tls_record(data):
    """True when data starts like a TLS record (handshake, alert, change cipher spec or application data):
    as a Kafka size prefix it would be over 300 MB, so it cannot be one."""
    return len(data) >= 3 and 20 <= data[0] <= 23 and data[1] == 3 and data[2] <= 4


def request_framer(conn, apis, max_frame, synced):
    """A Framer of a connection's requests: its frame starts are plausible request headers."""

    def starts(buf, i):
        last = len(buf) - _HEAD_BYTES
        for match in _REQUEST_CANDIDATE.finditer(buf, i):
            at = match.start()
            if at > last:
                break
            if _plausible_request(buf, at, apis, max_frame):
                yield at, _INT32.unpack_from(buf, at)[0]

    def heads(start):
        """A request cut short is trusted when its header reads and names the client id this connection's
        requests have had (a client keeps one client.id)."""
        header = header_or_none(start)
        return header is not None and conn.client_id is not NOT_SEEN and header.client_id == conn.client_id

    return Framer(starts, reads_as_request, heads, max_frame, synced)


def response_framer(pending, apis, max_frame, synced):
    """A Framer of a connection's responses: its frame starts carry the correlation id of a request in
    ``pending`` (correlation id -> what is kept of the request, with its ``header``)."""

    def starts(buf, i):
        """Sizes followed by the correlation id of a pending request, nearest first."""
        found = []
        for correlation_id in pending:
            needle = _INT32.pack(correlation_id)
            at = buf.find(needle, i + 4)
            while at >= 0 and len(found) < 1024:
                size = _INT32.unpack_from(buf, at - 4)[0]
                if 4 <= size <= max_frame:
                    found.append((at - 4, size))
                at = buf.find(needle, at + 1)
        return sorted(found)

    def reads(payload):
        req = pending.get(_INT32.unpack_from(payload, 0)[0])
        header = req.header if req is not None else None
        if header is None or header.request_api_key not in apis:
            return req is not None
        try:
            decode_response(payload, header.request_api_key, header.request_api_version)
        except KafkaProtoError:
            return False
        return True

    def heads(start):
        """A response cut short is trusted when its correlation id is pending and what the capture holds of it
        can be the start of that request's response: it reads up to where its bytes run out. One that reads
        whole (the frame claims more) or breaks before then is a coincidence in other bytes."""
        req = pending.get(_INT32.unpack_from(start, 0)[0]) if len(start) >= 4 else None
        header = req.header if req is not None else None
        if header is None or header.request_api_key not in apis:
            return req is not None
        try:
            decode_response(start, header.request_api_key, header.request_api_version)
        except DecodeError as e:
            return e.truncated
        except KafkaProtoError:
            return False
        return False

    return Framer(starts, reads, heads, max_frame, synced)


def _plausible_request(buf, at, table, max_frame):
    """A size that fits, an API and version that exist, a client id length that fits the frame."""
    size, key, version, _, client_id_length = _REQUEST_START.unpack_from(buf, at)
    if size < 8 or size > max_frame:
        return False
    info = table.get(key)
    if info is None or version not in info.valid_versions:
        return False
    return info.request_header_version(version) == 0 or -1 <= client_id_length <= size - 10


def header_or_none(payload):
    try:
        return read_request_header(payload)
    except KafkaProtoError:
        return None
