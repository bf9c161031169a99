# What editors and type checkers see of kafkaproto.capture.exchanges (its walk and unnamed_in are compiled
# where the build has them).
from typing import Any, Iterable, Iterator

from ..protocol import DEFAULT_MAX_FRAME as DEFAULT_MAX_FRAME
from ..uuid import Uuid
from .link import Segment
from .names import TopicNames

OK: str
UNMATCHED_REQUEST: str
UNMATCHED_RESPONSE: str
GAP: str
DECODE_ERROR: str
UNSUPPORTED: str
CAPTURE_ERROR: str
STATUSES: tuple[str, ...]

class Exchange:
    """One request and its response as they crossed the wire, or what could be read of them.

    ``status`` is one of STATUSES. Times are nanoseconds since the epoch, taken from the packet that completed
    each frame; packets are numbered from 1 as Wireshark numbers them. Sizes are the frames' size prefixes.
    ``request``/``response`` are the decoded bodies (kafkaproto message objects), ``error`` says what went wrong
    and ``error_offset`` where (the byte in the frame, or in the stream for gaps). ``joined`` is True when the
    capture joined the connection after it began. ``names`` is the reader's names.TopicNames, when it keeps one:
    ``topics`` then names topic IDs too.
    """

    status: str
    connection: int | None
    joined: bool | None
    names: TopicNames | None
    client_address: str | None
    client_port: int | None
    broker_address: str | None
    broker_port: int | None
    request_time_ns: int | None
    response_time_ns: int | None
    request_packet: int | None
    response_packet: int | None
    api_key: int | None
    api_version: int | None
    correlation_id: int | None
    client_id: str | None
    request_size: int | None
    response_size: int | None
    request_header: Any  # a RequestHeader, when it was read
    request: Any  # the request's body (a kafkaproto message), when it was read
    response_header: Any  # a ResponseHeader, when it was read
    response: Any  # the response's body, when it was read
    error: str | None
    error_offset: int | None
    def __init__(self, status: str, conn: Any = None) -> None: ...
    @property
    def api_name(self) -> str | None: ...
    @property
    def latency_ns(self) -> int | None: ...
    @property
    def error_code(self) -> int | None:
        """The response's top-level error code, or None."""
    @property
    def partition_errors(self) -> list[tuple[str | Uuid | None, int, int]]:
        """(topic name or Uuid, partition, error code) for each partition the response reports an error for."""
    @property
    def topics(self) -> tuple[str | Uuid, ...]:
        """Topic names and topic ids (Uuid) the request and response name, in order of appearance; with
        ``names``, each topic id known there is followed by its name."""
    @property
    def unnamed(self) -> bool:
        """Whether it names a topic by an id its ``names`` do not know (yet)."""
    def to_dict(self) -> dict[str, Any]:
        """Plain values: the bodies as dicts (to_dict()), topic ids as Uuid."""

def walk(obj: Any, topics: dict[str | Uuid, None], errors: list[tuple[str | Uuid | None, int, int]],
         topic: str | None = None, records: list[tuple[str | None, Uuid | None, int | None, Any]] | None = None,
         topic_id: Uuid | None = None) -> None:
    """Collect from a message: topics ({name or Uuid: None}, ordered), (topic, partition, code) for nonzero
    partition error codes, and (topic name, topic id, partition, records) for records fields."""

def unnamed_in(obj: Any, known: dict[Uuid, str]) -> bool: ...
def holds_records(cls: type[Any], seen: set[type[Any]] | None = None) -> bool:
    """Whether a message class has a records field at any depth."""

def records_fields(ex: Exchange) -> Iterator[tuple[str, int | None, str | None, Uuid | None, int | None, Any]]:
    """(side, time_ns, topic name, topic id, partition, records bytes) for each records field an exchange's
    request and response carry (Produce requests, Fetch and ShareFetch responses)."""

class Exchanges:
    """Turns TCP segments into exchanges, connection by connection (see the module's doc)."""

    ports: frozenset[int] | None
    max_frame: int
    partition: tuple[int, int] | None
    idle_ns: int
    max_connections: int
    max_pending: int
    decode: bool | Iterable[int]
    connections: Any
    count: int
    skipped: dict[str, int]
    gap_bytes: int
    def __init__(self, ports: Iterable[int] | None = None, *, max_frame: int = ...,
                 partition: tuple[int, int] | None = None, idle_ns: int = ..., max_connections: int = ...,
                 max_pending: int = ...,
                 decode: bool | Iterable[int] = True) -> None: ...
    def packet(self, seg: Segment, time_ns: int, number: int) -> list[Exchange]:
        """The exchanges this TCP segment completes (link.Segment, capture time, packet number)."""
    def finish(self) -> list[Exchange]:
        """Exchanges still open when the capture ends: cut frames, requests never answered."""
