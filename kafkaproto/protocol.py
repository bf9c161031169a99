"""Requests and responses on the wire: headers, size-prefixed frames, no I/O.

A frame on a Kafka connection is an int32 size followed by that many bytes: a
request or response header, then the body. ``encode_request`` returns a whole
frame, size included, ready to send; ``decode_request`` and ``decode_response``
take a frame's payload (without the size), as ``FrameBuffer`` hands them out.
"""

from __future__ import annotations

from struct import Struct as _S
from typing import TYPE_CHECKING, Any, ClassVar, Iterator, NamedTuple, Protocol, Union

from .exceptions import DecodeError, KafkaProtoError, UnsupportedVersionError
from ._generic import bad_version as _bad_version, note_size_prefix
from . import _impl, registry
from ._pycore import FileRegion as FileRegion  # a value encoders leave in its file
from .registry import api

registry.load()  # the compiled frame functions read their table from it

if TYPE_CHECKING:
    from ._generated.messages import RequestHeader, ResponseHeader

    # What the frame functions read: bytes, or any buffer of bytes (a bytearray, a memoryview slice).
    Buffer = Union[bytes, bytearray, memoryview]

    # _pycore's Request and Response (which the compiled codecs return too), as type checkers see them.
    class Request:
        """A decoded request: ``header`` and ``body`` (``header, body = request`` unpacks it)."""

        header: RequestHeader
        body: Any  # the request class of the API the header names

        def __init__(self, header: RequestHeader, body: Any) -> None: ...
        def __iter__(self) -> Iterator[Any]: ...
        def __len__(self) -> int: ...
        def __getitem__(self, i: int) -> Any: ...

    class Response:
        """A decoded response: ``header``, ``body`` and the ``version`` the body was read at
        (``header, body = response`` unpacks the first two)."""

        header: ResponseHeader
        body: Any  # the response class of the API asked
        version: int

        def __init__(self, header: ResponseHeader, body: Any, version: int) -> None: ...
        def __iter__(self) -> Iterator[Any]: ...
        def __len__(self) -> int: ...
        def __getitem__(self, i: int) -> Any: ...
else:
    from ._pycore import Request, Response

_HEAD = _S(">hh")
_SIZE = _S(">i")
DEFAULT_MAX_FRAME = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default


def request_header_version(api_key: int, api_version: int) -> int:
    return api(api_key).request_header_version(api_version)


def response_header_version(api_key: int, api_version: int) -> int:
    return api(api_key).response_header_version(api_version)


class Message(Protocol):
    """What the frame functions take as a body: an instance of any request or response class."""

    api_key: ClassVar[int]

    def encode(self, version: int) -> bytes: ...


class EncodeRequest(Protocol):
    def __call__(self, header: RequestHeader, body: Message, version: int) -> bytes:
        """One size-prefixed request frame: the header at the version the API needs, then body.

        The header's request_api_key and request_api_version must name body's API and version.
        """


class EncodeResponse(Protocol):
    def __call__(self, header: ResponseHeader, body: Message, version: int) -> bytes:
        """One size-prefixed response frame for a response body at the given version."""


class EncodeResponseParts(Protocol):
    def __call__(self, header: ResponseHeader, body: Message, version: int) -> list[bytes | FileRegion]:
        """encode_response's frame as a list of bytes and, left in their files, the FileRegions among the
        body's values (for a writer that sends them with sendfile); joined, the parts are the frame."""


class DecodeRequest(Protocol):
    def __call__(self, frame: Buffer, allow_trailing: bool = False) -> Request:
        """A request frame's payload -> Request(header, body); the API is read from the header.

        Bytes after the body are an error unless allow_trailing (Kafka's broker ignores
        them, and librdkafka sends some after certain Metadata requests)."""


class DecodeResponse(Protocol):
    def __call__(self, frame: Buffer, api_key: int, api_version: int) -> Response:
        """A response frame's payload -> Response(header, body, version).

        A response with a fallback version (ApiVersions: a broker that lacks the version
        asked answers at 0) that does not read at api_version is read at the fallback, as
        Kafka's clients do.
        """


class Frames(NamedTuple):
    """The frame functions of one implementation."""
    encode_request: EncodeRequest
    encode_response: EncodeResponse
    decode_request: DecodeRequest
    decode_response: DecodeResponse
    encode_response_parts: EncodeResponseParts


def _python_frames(impl: str) -> Frames:
    """The pure-Python frame functions over one implementation's classes: those of the registry as it is
    when they run, for the implementation in use; the ones registered now, for the other."""
    from ._pycore import Reader, Writer

    live = impl == _impl.IMPL
    classes = registry.classes(impl)
    request_header, response_header = classes["RequestHeader"], classes["ResponseHeader"]

    def class_of(info, side):
        if live:
            return info.request if side == "request" else info.response
        return classes[f"{info.name}{side.title()}"]

    def api_of(body, side):
        info = None
        try:
            info = api(body.api_key)
        except (AttributeError, KeyError, TypeError):
            pass
        if info is None:
            raise TypeError(f"{type(body).__name__} is not a {side}")
        accepted = (info.request_classes if side == "request" else info.response_classes) if live else ()
        if type(body) is not class_of(info, side) and type(body) not in accepted:
            raise TypeError(f"{type(body).__name__} is not a {side}")
        return info

    def frame(header, header_version, body, version, parts=False):
        w = Writer()
        w.raw(b"\0\0\0\0")  # the size, patched in at the end
        header.write_to(w, header_version)
        body.write_to(w, version)
        w.patch_int32(0, len(w) - 4)
        return w.finish_parts() if parts else w.finish()

    def encode_request(header, body, version):
        """One size-prefixed request frame: the header at the version the API needs, then body.

        The header's request_api_key and request_api_version must name body's API and version.
        """
        info = api_of(body, "request")
        if type(header) is not request_header:
            raise TypeError(f"expected a RequestHeader, got {type(header).__name__}")
        if version not in info.valid_versions:
            _bad_version(type(body), version)
        if header.request_api_key != body.api_key or header.request_api_version != version:
            raise ValueError(
                f"header names API {header.request_api_key} v{header.request_api_version} "
                f"but the body is {info.name} v{version}")
        return frame(header, info.request_header_version(version), body, version)

    def response_frame(header, body, version, parts):
        info = api_of(body, "response")
        if type(header) is not response_header:
            raise TypeError(f"expected a ResponseHeader, got {type(header).__name__}")
        if version not in info.valid_versions:
            _bad_version(type(body), version)
        return frame(header, info.response_header_version(version), body, version, parts)

    def encode_response(header, body, version):
        """One size-prefixed response frame for a response body at the given version."""
        return response_frame(header, body, version, False)

    def encode_response_parts(header, body, version):
        """encode_response's frame as a list of bytes and, left in their files, the FileRegions among the
        body's values (for a writer that sends them with sendfile); joined, the parts are the frame."""
        return response_frame(header, body, version, True)

    def decode_request(frame, allow_trailing=False):
        """A request frame's payload -> Request(header, body); the API is read from the header.

        Bytes after the body are an error unless allow_trailing (Kafka's broker ignores
        them, and librdkafka sends some after certain Metadata requests)."""
        if len(memoryview(frame)) < 4:
            raise DecodeError("a request needs at least 4 bytes for its api key and version", 0)
        try:
            api_key, version = _HEAD.unpack_from(frame, 0)
            try:
                info = api(api_key)
            except KeyError:
                raise DecodeError(f"unknown api key {api_key}", 0) from None
            cls = class_of(info, "request")
            if version not in info.valid_versions:
                _bad_version(cls, version)
            r = Reader(frame)
            header = request_header.read_from(r, info.request_header_version(version))
            body = cls.read_from(r, version)
            if not allow_trailing:
                _check_end(r, cls, version)
        except (DecodeError, UnsupportedVersionError) as e:
            note_size_prefix(e, frame)
            raise
        return Request(header, body)

    def decode_response(frame, api_key, api_version):
        """A response frame's payload -> Response(header, body, version).

        A response with a fallback version (ApiVersions: a broker that lacks the version
        asked answers at 0) that does not read at api_version is read at the fallback, as
        Kafka's clients do.
        """
        info = api(api_key)
        cls = class_of(info, "response")
        try:
            r = Reader(frame)
            header = response_header.read_from(r, info.response_header_version(api_version))
            start = r.pos
            fallback = info.fallback_version
            if fallback is not None and api_version != fallback:
                first = None
                if api_version in info.valid_versions:
                    try:
                        body = cls.read_from(r, api_version)
                        _check_end(r, cls, api_version)
                        return Response(header, body, api_version)
                    except DecodeError as e:
                        first = e
                r.pos = start
                try:
                    body = cls.read_from(r, fallback)
                    _check_end(r, cls, fallback)
                except DecodeError:
                    if first is None:
                        raise
                    raise first from None  # the version asked is the likelier truth; its error says more
                return Response(header, body, fallback)
            if api_version not in info.valid_versions:
                _bad_version(cls, api_version)
            body = cls.read_from(r, api_version)
            _check_end(r, cls, api_version)
            return Response(header, body, api_version)
        except (DecodeError, UnsupportedVersionError) as e:
            note_size_prefix(e, frame)
            raise

    return Frames(encode_request, encode_response, decode_request, decode_response, encode_response_parts)


def frame_functions(impl: str | None = None) -> Frames:
    """Frames of one implementation ("compiled" or "python"); by default the one in use."""
    impl = impl or _impl.IMPL
    if impl == "python":
        return _python_frames("python")
    from ._core import decode_request, decode_response, encode_request, encode_response, encode_response_parts
    if not _impl.COMPILED:  # the registry keeps the compiled table only when it is the one in use
        registry.install_compiled(registry.classes("compiled"))
    return Frames(encode_request, encode_response, decode_request, decode_response, encode_response_parts)


# The implementation in use (see frame_functions); each is typed, and documented, by its Protocol above.
encode_request: EncodeRequest
encode_response: EncodeResponse
decode_request: DecodeRequest
decode_response: DecodeResponse
encode_response_parts: EncodeResponseParts
encode_request, encode_response, decode_request, decode_response, encode_response_parts = frame_functions()


def _check_end(r: Any, cls: Any, version: int) -> None:
    if r.remaining:
        raise DecodeError(f"{r.remaining} bytes left over after the message", r.position,
                          message=f"{cls._qualname} v{version}")


def read_request_header(frame: Buffer) -> RequestHeader:
    """The RequestHeader at the start of a request frame's payload; the body is not read.

    For an API key or version the registry lacks, the fields that every header
    version from 1 on starts with (api key, version, correlation id, client id) are
    read, so that traffic newer than kafkaproto still shows who asked what. Raises
    DecodeError when even those are not there.
    """
    size = len(frame) if type(frame) is bytes else len(memoryview(frame))
    if size < 8:
        raise DecodeError("a request header needs at least 8 bytes", size)
    api_key, version = _HEAD.unpack_from(frame, 0)
    try:
        header_version = api(api_key).request_header_version(version)
    except (KeyError, UnsupportedVersionError):
        header_version = 1
    return registry.message_class("RequestHeader").read_from(_reader()(frame), header_version)


def _reader() -> Any:
    """The Reader class of the implementation in use (imported on first use: _core needs the registry built)."""
    global _reader_class
    if _reader_class is None:
        if _impl.COMPILED:
            from ._core import Reader
        else:
            from ._pycore import Reader
        _reader_class = Reader
    return _reader_class


_reader_class: Any = None


class FrameError(KafkaProtoError, ValueError):
    """A size prefix that cannot be right: negative or over the frame limit."""


class FrameBuffer:
    """Splits a byte stream into frames. Feed it what arrives; take whole frames out.

        buf = FrameBuffer()
        for payload in buf.feed(chunk):
            request = decode_request(payload)

    A size prefix that cannot be right raises FrameError; frames that were complete
    before it are handed out first, and the error comes with the next call.

    ``get_buffer`` and ``buffer_updated`` are the other way in, made for
    ``asyncio.BufferedProtocol``: the bytes are received straight into the buffer,
    and a large frame straight into its own bytearray, which is handed out as it is.
    Every frame comes out as a bytearray of its own, so that its records can be
    patched in place (a broker gives them their offsets there, with no copy). Use
    one way or the other on a stream.
    """

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buf = bytearray()
        self._consumed = 0  # stream offset of _buf[0], for error messages
        self._error: FrameError | None = None
        # get_buffer's state: small frames pass through a fixed scratch buffer, which is never resized (the
        # transport may still hold a view of it); a frame of LARGE_FRAME bytes or more gets a bytearray of
        # its own, grown as its bytes arrive: at first twice what arrived of it (GROW_STEP at least), then
        # doubled each time it is full, so it never holds more than twice what arrived (and a size prefix alone
        # allocates GROW_STEP at most). A request that came half in one read is then whole in the next.
        self._scratch: bytearray | None = None
        self._start = self._end = 0  # the unread bytes in _scratch
        self._large: bytearray | None = None  # the large frame being received
        self._large_size = self._large_filled = 0

    def feed(self, data: Buffer) -> list[bytes]:
        """Add bytes; return the list of frame payloads now complete (as bytes)."""
        if self._error is not None:
            raise self._error
        self._buf += data
        frames: list[bytes] = []
        buf = self._buf
        pos = 0
        while len(buf) - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 0 or size > self.max_frame:
                self._error = FrameError(f"frame size {size} at stream offset {self._consumed + pos} "
                                         f"is outside 0..{self.max_frame}")
                break
            if len(buf) - pos - 4 < size:
                break
            frames.append(bytes(buf[pos + 4:pos + 4 + size]))
            pos += 4 + size
        if pos:
            del buf[:pos]
            self._consumed += pos
        if self._error is not None and not frames:
            raise self._error
        return frames

    SCRATCH_SIZE = 1 << 17
    LARGE_FRAME = 1 << 15
    GROW_STEP = 1 << 16

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """A writable memoryview where the next bytes of the stream go; then call buffer_updated."""
        if self._error is not None:
            raise self._error
        large = self._large
        if large is not None:
            if self._large_filled == len(large):
                # Doubled (the realloc moves or, for large blocks, remaps what arrived: about one more copy of
                # the frame in all, at worst). Resized only here, where no view of it is held any more.
                large.extend(bytes(min(len(large), self._large_size - len(large))))
            return memoryview(large)[self._large_filled:]
        if self._scratch is None:
            self._scratch = bytearray(self.SCRATCH_SIZE)
        elif len(self._scratch) - self._end < self.LARGE_FRAME and self._start:
            # Only the start of a frame smaller than LARGE_FRAME is ever left here: moving it frees most room.
            held = self._end - self._start
            self._scratch[:held] = self._scratch[self._start:self._end]
            self._start, self._end = 0, held
        return memoryview(self._scratch)[self._end:]

    def buffer_updated(self, nbytes: int) -> list[bytearray]:
        """Note nbytes written at the start of get_buffer's view; return the frames now complete, each a
        bytearray of its own (one of LARGE_FRAME bytes or more the one it was received into, unless one read
        held it whole)."""
        frames: list[bytearray] = []
        if self._large is not None:
            self._large_filled += nbytes
            if self._large_filled == self._large_size:
                frames.append(self._large)
                self._consumed += 4 + self._large_size
                self._large = None
            return frames
        self._end += nbytes
        buf, pos, end = self._scratch, self._start, self._end
        view = memoryview(buf)
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 0 or size > self.max_frame:
                self._error = FrameError(f"frame size {size} at stream offset {self._consumed} "
                                         f"is outside 0..{self.max_frame}")
                break
            if end - pos - 4 >= size:
                frame = view[pos + 4:pos + 4 + size]
                frames.append(bytearray(frame))
                pos += 4 + size
                self._consumed += 4 + size
                continue
            if size >= self.LARGE_FRAME:
                held = end - pos - 4
                self._large = large = bytearray(min(size, max(2 * held, self.GROW_STEP)))
                large[:held] = view[pos + 4:end]
                self._large_size, self._large_filled = size, held
                pos = end
            break
        if pos == end:
            pos = end = 0
        self._start, self._end = pos, end
        if self._error is not None and not frames:
            raise self._error
        return frames

    @property
    def error(self) -> FrameError | None:
        """The bad size prefix found after the frames last handed out, which the next call raises."""
        return self._error

    @property
    def pending(self) -> int:
        """Bytes held that do not yet make a whole frame."""
        if self._large is not None:
            return 4 + self._large_filled
        return len(self._buf) + self._end - self._start


def split_frames(data: Buffer, max_frame: int = DEFAULT_MAX_FRAME) -> list[bytes]:
    """Every frame payload in a complete byte string; trailing partial data is an error."""
    buf = FrameBuffer(max_frame)
    frames = buf.feed(data)
    if buf.error is not None:
        raise buf.error
    if buf.pending:
        raise FrameError(f"{buf.pending} bytes at the end do not make a whole frame")
    return frames
