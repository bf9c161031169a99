"""Kafka connections without I/O: bytes in, requests and responses out, for either end or a tap.

    client = ClientConnection()
    sock.sendall(client.send_request(header, body))
    for event in client.receive_data(sock.recv(65536)):
        event.body, event.request                    # ResponseReceived, paired with its request

    server = ServerConnection()
    for event in server.receive_data(chunk):         # RequestReceived
        reply = server.send_response(event, body)    # framed at the request's version and header

    tap = Observer()                                 # both directions of a captured connection
    tap.client_data(chunk); tap.server_data(chunk)

Each keeps the state one connection needs: frames split by their size prefix;
responses paired with their requests by correlation id (a Produce with acks=0
gets none); an ApiVersions response read at version 0 when the broker lacked
the version asked; and the raw SASL tokens that follow a version-0
SaslHandshake, until the mechanism's exchange is over.

ClientConnection and ServerConnection raise ProtocolError on what the peer got
wrong; its ``close`` and ``error_code`` say what a broker should do about it.
Observer never raises on traffic: what it cannot read becomes an Undecodable event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Union, overload

from . import errors
from ._generated import ApiKey
from ._impl import COMPILED
from .exceptions import KafkaProtoError, UnsupportedVersionError
from .messages import RequestHeader, ResponseHeader
from .protocol import (DEFAULT_MAX_FRAME, FrameBuffer, FrameError, encode_request, encode_response,
                       encode_response_parts)
from .protocol import decode_request, decode_response
from .registry import api

if COMPILED:
    from ._core import Reader
else:
    from ._pycore import Reader

if TYPE_CHECKING:
    from .protocol import Buffer, FileRegion, Message

    # What receive_data, client_data and server_data give, one event per frame.
    Event = Union["RequestReceived", "ResponseReceived", "SaslBytes", "Undecodable"]

# Round trips of raw tokens after a version-0 SaslHandshake, by mechanism; others
# (GSSAPI) run until the client sends a Kafka request again.
SASL_ROUNDS = {"PLAIN": 1, "SCRAM-SHA-256": 2, "SCRAM-SHA-512": 2, "OAUTHBEARER": 1}


class ProtocolError(KafkaProtoError):
    """The peer sent something this end cannot accept.

    ``close`` is True when the connection cannot go on (Kafka's broker closes it on
    a request it cannot parse); ``error_code`` is the Kafka error to answer with when
    it can (None otherwise); ``correlation_id`` the request's, when it was readable.
    """

    def __init__(self, reason: str, *, close: bool = True, error_code: int | None = None,
                 correlation_id: int | None = None, header: RequestHeader | None = None) -> None:
        super().__init__(reason)
        self.close = close
        self.error_code = error_code
        self.correlation_id = correlation_id
        self.header = header  # a request to answer anyway (ApiVersions at a version this end lacks)


class RequestReceived:
    """A request: its header and body, the version it was read at, its frame size, and whether an answer is due."""

    __slots__ = ("header", "body", "version", "size", "expects_response")

    header: RequestHeader
    body: Any  # the request class of the API the header names
    version: int
    size: int
    expects_response: bool

    def __init__(self, header: RequestHeader, body: Any, size: int, expects_response: bool) -> None:
        self.header = header
        self.body = body
        self.version = header.request_api_version
        self.size = size
        self.expects_response = expects_response

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id

    def __repr__(self) -> str:
        return (f"RequestReceived({type(self.body).__name__} v{self.version}, "
                f"correlation_id={self.header.correlation_id}, size={self.size})")


class ResponseReceived:
    """A response: its header and body, the version it was read at, the request it answers, its frame size."""

    __slots__ = ("header", "body", "version", "request", "size")

    header: ResponseHeader
    body: Any  # the response class of the API asked
    version: int
    request: RequestHeader
    size: int

    def __init__(self, header: ResponseHeader, body: Any, version: int, request: RequestHeader, size: int) -> None:
        self.header = header
        self.body = body
        self.version = version
        self.request = request  # the RequestHeader of the request it answers
        self.size = size

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id

    def __repr__(self) -> str:
        return (f"ResponseReceived({type(self.body).__name__} v{self.version}, "
                f"correlation_id={self.header.correlation_id}, size={self.size})")


class SaslBytes:
    """A raw SASL token, framed by its size alone (after a version-0 SaslHandshake)."""

    __slots__ = ("data", "from_client")

    data: bytes | bytearray
    from_client: bool

    def __init__(self, data: bytes | bytearray, from_client: bool) -> None:
        self.data = data
        self.from_client = from_client

    def __repr__(self) -> str:
        return f"SaslBytes({len(self.data)} bytes from the {'client' if self.from_client else 'server'})"


class Undecodable:
    """A frame an Observer could not read: which way it went, its bytes and the error."""

    __slots__ = ("from_client", "frame", "error")

    from_client: bool
    frame: bytes | bytearray
    error: Exception

    def __init__(self, from_client: bool, frame: bytes | bytearray, error: Exception) -> None:
        self.from_client = from_client
        self.frame = frame
        self.error = error

    def __repr__(self) -> str:
        return f"Undecodable({'request' if self.from_client else 'response'}, {self.error})"


def expects_response(header: RequestHeader, body: Any) -> bool:
    """False for a Produce with acks=0, the one request a broker does not answer."""
    return not (header.request_api_key == ApiKey.PRODUCE and getattr(body, "acks", None) == 0)


class Pairing:
    """Which response answers which request, and when the bytes are raw SASL tokens instead: the rules both ends
    of a connection and every tap share, a capture's included.

    ``pending`` maps a correlation id to whatever its end keeps of the request (a RequestHeader here; a capture
    keeps times and packet numbers too), in the order the requests were sent, which is the order a broker answers.
    """

    __slots__ = ("pending", "mechanism", "raw_rounds")

    def __init__(self) -> None:
        self.pending: dict[int, Any] = {}
        self.mechanism = None  # of a version-0 SaslHandshake waiting for its response
        self.raw_rounds = 0  # raw SASL round trips left; -1: until the client speaks Kafka again

    @property
    def raw(self) -> bool:
        return self.raw_rounds != 0

    def raw_request(self, frame: Buffer) -> bool:
        """True when a frame from the client is a raw SASL token; a frame that reads as a request ends an
        open-ended exchange (GSSAPI)."""
        if self.raw_rounds > 0 or (self.raw_rounds < 0 and not reads_as_request(frame)):
            return True
        self.raw_rounds = 0
        return False

    def raw_response(self) -> bool:
        """True when the broker's next frame is a raw SASL token; it completes one round trip."""
        if not self.raw_rounds:
            return False
        if self.raw_rounds > 0:
            self.raw_rounds -= 1
        return True

    def asked(self, header: RequestHeader, body: Any, kept: Any) -> bool:
        """Note a request (body None when it was not read) and keep ``kept`` for its response; False when no
        response will come (a Produce with acks=0), and then nothing is kept."""
        if header.request_api_key == ApiKey.SASL_HANDSHAKE and header.request_api_version == 0 and body is not None:
            self.mechanism = body.mechanism
        if body is not None and not expects_response(header, body):
            return False
        pending = self.pending
        pending.pop(header.correlation_id, None)  # a reused id goes to the back of the line
        pending[header.correlation_id] = kept
        return True

    def answered(self, request: RequestHeader, body: Any) -> None:
        """Note the response read for a request: a successful version-0 SaslHandshake turns the bytes raw."""
        if request.request_api_key == ApiKey.SASL_HANDSHAKE and request.request_api_version == 0 and self.mechanism:
            if body.error_code == 0:
                self.raw_rounds = SASL_ROUNDS.get(self.mechanism.upper(), -1)
            self.mechanism = None


class _End:
    """What every end has: each direction's frames, the pairing, and reading frames into events."""

    allow_trailing = False  # whether bytes after a request's body are ignored (as Kafka's broker does)

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self._from_client = FrameBuffer(max_frame)
        self._from_server = FrameBuffer(max_frame)
        self._pairing = Pairing()

    @property
    def pending(self) -> dict[int, RequestHeader]:
        """{correlation id: RequestHeader} of requests still waiting for a response."""
        return dict(self._pairing.pending)

    @property
    def raw(self) -> bool:
        """True while raw SASL tokens are exchanged (send them with send_raw)."""
        return self._pairing.raw

    def _requests(self, frames, refuse):
        """Events for frames a client sent; refuse(frame, error) raises, or returns the event to report."""
        pairing = self._pairing
        events = []
        for frame in frames:
            if pairing.raw_request(frame):
                events.append(SaslBytes(frame, True))
                continue
            try:
                request = decode_request(frame, self.allow_trailing)
            except KafkaProtoError as e:
                events.append(refuse(frame, e))
                continue
            header, body = request.header, request.body
            if header.correlation_id in pairing.pending:
                events.append(refuse(frame, ProtocolError(f"correlation id {header.correlation_id} is already "
                                                          "pending", correlation_id=header.correlation_id)))
                continue
            answered = pairing.asked(header, body, header)
            events.append(RequestReceived(header, body, len(frame), answered))
        return events

    def _responses(self, frames, refuse):
        """Events for frames the broker sent; refuse as for _requests."""
        pairing = self._pairing
        events = []
        for frame in frames:
            if pairing.raw_response():
                events.append(SaslBytes(frame, False))
                continue
            try:
                request, response = self._read_response(frame)
            except KafkaProtoError as e:
                events.append(refuse(frame, e))
                continue
            events.append(ResponseReceived(response.header, response.body, response.version, request, len(frame)))
        return events

    def _read_response(self, frame):
        """(header of the request it answers, Response); raises KafkaProtoError."""
        if len(frame) < 4:
            raise FrameError(f"a response frame of {len(frame)} bytes has no correlation id")
        correlation_id = int.from_bytes(frame[:4], "big", signed=True)
        pending = self._pairing.pending
        request = pending.get(correlation_id)
        if request is None:
            raise ProtocolError(f"response with correlation id {correlation_id}, which no pending request has",
                                correlation_id=correlation_id)
        # Left pending when it does not read: the caller may still want to know what was asked.
        response = decode_response(frame, request.request_api_key, request.request_api_version)
        del pending[correlation_id]
        self._pairing.answered(request, response.body)
        return request, response

    def _raw_frame(self, token):
        if not self._pairing.raw:
            raise ProtocolError("raw SASL tokens follow only a successful version-0 SaslHandshake", close=False)
        return len(token).to_bytes(4, "big") + bytes(token)


class ClientConnection(_End):
    """The client's end: frames requests, and pairs the responses that come back with them."""

    def send_request(self, header: RequestHeader, body: Message) -> bytes:
        """The frame to write for a request (at header.request_api_version); it is pending from now on."""
        if self._pairing.raw:
            raise ProtocolError("the connection is exchanging raw SASL tokens; use send_raw", close=False)
        if header.correlation_id in self._pairing.pending:
            raise ProtocolError(f"correlation id {header.correlation_id} is already pending", close=False)
        frame = encode_request(header, body, header.request_api_version)
        self._pairing.asked(header, body, header)
        return frame

    def send_raw(self, token: Buffer) -> bytes:
        """A raw SASL token, framed by its size."""
        return self._raw_frame(token)

    def receive_data(self, data: Buffer) -> list[ResponseReceived | SaslBytes]:
        """The events in bytes read from the broker: ResponseReceived, or SaslBytes in raw mode."""
        return self._responses(_frames(self._from_server, data), _unreadable_response)


class ServerConnection(_End):
    """The broker's end: reads requests, and frames each response at its request's version and header.

    Like Kafka's broker, it ignores bytes after a request's body (librdkafka sends
    three after some Metadata v13 requests).
    """

    allow_trailing = True

    def receive_data(self, data: Buffer) -> list[RequestReceived | SaslBytes]:
        """The events in bytes read from a client: RequestReceived, or SaslBytes in raw mode.

        A request that cannot be read raises ProtocolError: its ``error_code`` is
        UNSUPPORTED_VERSION for an ApiVersions request at a version this end lacks
        (answer error.header at version 0); anything else closes the connection, as Kafka does.
        """
        return self._requests(_frames(self._from_client, data), self._refuse)

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Where the client's next bytes go, for a reader that receives in place (asyncio.BufferedProtocol);
        then call buffer_updated. See FrameBuffer.get_buffer. Raises ProtocolError after a bad size prefix."""
        try:
            return self._from_client.get_buffer(sizehint)
        except FrameError as e:
            raise ProtocolError(str(e)) from e

    def buffer_updated(self, nbytes: int) -> list[bytes | bytearray]:
        """The frames completed by nbytes received into get_buffer's view; read each with receive_frame.
        A size prefix that cannot be right raises ProtocolError once the frames before it are out."""
        return _frames(self._from_client, nbytes, True)

    @property
    def frame_error(self) -> ProtocolError | None:
        """The bad size prefix that came after the frames buffer_updated last returned (the stream ends there),
        or None. A reader that stops reading once it has frames checks it, rather than waiting for more bytes."""
        error = self._from_client.error
        return None if error is None else ProtocolError(str(error))

    def receive_frame(self, frame: Buffer) -> RequestReceived | SaslBytes:
        """The event in one frame from buffer_updated, raising as receive_data does."""
        return self._requests((frame,), self._refuse)[0]

    def _refuse(self, frame, error):
        if isinstance(error, ProtocolError):
            raise error
        header = _api_versions_header(frame) if isinstance(error, UnsupportedVersionError) else None
        if header is not None:
            # Kafka answers it at version 0, with UNSUPPORTED_VERSION and the versions it has.
            self._pairing.pending[header.correlation_id] = header
            raise ProtocolError(f"ApiVersions v{header.request_api_version} is not supported here; answer with "
                                "send_response(error.header, body, version=0)", close=False,
                                error_code=errors.UNSUPPORTED_VERSION.code, correlation_id=header.correlation_id,
                                header=header) from error
        correlation_id = int.from_bytes(frame[4:8], "big", signed=True) if len(frame) >= 8 else None
        raise ProtocolError(f"unreadable request: {error}", correlation_id=correlation_id) from error

    @overload
    def send_response(self, request: RequestReceived | RequestHeader, body: Message, version: int | None = None,
                      parts: Literal[False] = False) -> bytes: ...

    @overload
    def send_response(self, request: RequestReceived | RequestHeader, body: Message, version: int | None = None,
                      *, parts: Literal[True]) -> list[bytes | FileRegion]: ...

    @overload
    def send_response(self, request: RequestReceived | RequestHeader, body: Message, version: int | None,
                      parts: Literal[True]) -> list[bytes | FileRegion]: ...

    def send_response(self, request: RequestReceived | RequestHeader, body: Message, version: int | None = None,
                      parts: bool = False) -> bytes | list[bytes | FileRegion]:
        """The frame answering a request (a RequestReceived or its RequestHeader), at its version unless
        version is given (ApiVersions refusing a version answers at 0). With parts, the frame as
        encode_response_parts gives it: bytes, and the body's FileRegions left in their files."""
        header = getattr(request, "header", request)
        if header.correlation_id not in self._pairing.pending:
            raise ProtocolError(f"no pending request has correlation id {header.correlation_id}", close=False)
        info = api(header.request_api_key)
        if type(body) is not info.response and type(body) not in info.response_classes:
            raise TypeError(f"{type(body).__name__} does not answer {api(header.request_api_key).name}")
        version = header.request_api_version if version is None else version
        frame = (encode_response_parts if parts else encode_response)(
            ResponseHeader(correlation_id=header.correlation_id), body, version)
        del self._pairing.pending[header.correlation_id]
        self._pairing.answered(header, body)
        return frame

    def send_raw(self, token: Buffer) -> bytes:
        """A raw SASL token for the client, framed by its size."""
        frame = self._raw_frame(token)
        self._pairing.raw_response()
        return frame


class Observer(_End):
    """A passive tap on one connection: feed each direction's bytes as they were seen.

    Every event a ClientConnection or ServerConnection would give comes out here too;
    frames that cannot be read come out as Undecodable, and the tap goes on.
    """

    def client_data(self, data: Buffer) -> list[Event]:
        """Events in bytes the client sent: RequestReceived, SaslBytes or Undecodable."""
        frames, error = _feed(self._from_client, data)
        events = self._requests(frames, lambda frame, e: Undecodable(True, frame, e))
        return events + [Undecodable(True, b"", error)] if error else events

    def server_data(self, data: Buffer) -> list[Event]:
        """Events in bytes the broker sent: ResponseReceived, SaslBytes or Undecodable."""
        frames, error = _feed(self._from_server, data)
        events = self._responses(frames, lambda frame, e: Undecodable(False, frame, e))
        return events + [Undecodable(False, b"", error)] if error else events


def _frames(buffer, data, received=False):
    try:
        return buffer.buffer_updated(data) if received else buffer.feed(data)
    except FrameError as e:
        raise ProtocolError(str(e)) from e


def _unreadable_response(frame, error):
    if isinstance(error, ProtocolError):
        raise error
    raise ProtocolError(f"unreadable response: {error}") from error


def _feed(buffer, data):
    try:
        return buffer.feed(data), None
    except FrameError as e:
        return [], e


def reads_as_request(frame: Buffer) -> bool:
    """Whether a frame reads as a whole request of an API and version this build knows."""
    try:
        decode_request(frame)
    except KafkaProtoError:
        return False
    return True


def _api_versions_header(frame):
    """The header of an ApiVersions request at a version this end lacks, read as Kafka reads it: with the
    header version of the newest known version above them, and of the oldest below (a negative version);
    None for anything else."""
    if len(frame) < 4 or int.from_bytes(frame[:2], "big", signed=True) != ApiKey.API_VERSIONS:
        return None
    info = api(ApiKey.API_VERSIONS)
    below = int.from_bytes(frame[2:4], "big", signed=True) < info.valid_versions.start
    try:
        return RequestHeader.read_from(Reader(frame), info.request_header_versions[0 if below else -1])
    except KafkaProtoError:
        return None
