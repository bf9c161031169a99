# What editors and type checkers see of kafkaproto.capture.
import os
from collections import Counter
from typing import IO, Any, Iterable, Iterator

from .exchanges import CAPTURE_ERROR as CAPTURE_ERROR
from .exchanges import DECODE_ERROR as DECODE_ERROR
from .exchanges import GAP as GAP
from .exchanges import OK as OK
from .exchanges import STATUSES as STATUSES
from .exchanges import UNMATCHED_REQUEST as UNMATCHED_REQUEST
from .exchanges import UNMATCHED_RESPONSE as UNMATCHED_RESPONSE
from .exchanges import UNSUPPORTED as UNSUPPORTED
from .exchanges import Exchange as Exchange
from .exchanges import Exchanges as Exchanges
from .exchanges import records_fields as records_fields
from .exchanges import walk as walk
from .names import NAMING as NAMING
from .names import TopicNames as TopicNames
from .names import held as held
from .pcap import CaptureFormatError as CaptureFormatError

# A capture: a path, or a binary file object (gzip-compressed or not).
_Source = str | bytes | os.PathLike[str] | os.PathLike[bytes] | IO[bytes]

class CaptureStats:
    """What reading a capture saw: counts, and the file's own damage if any."""

    packets: int
    bytes: int
    tcp_segments: int
    connections: int
    exchanges: int
    gap_bytes: int
    skipped: Counter[str]
    error: str | None
    def __init__(self) -> None: ...
    def to_dict(self) -> dict[str, Any]: ...

class CaptureReader:
    """The exchanges of one capture file, read as it is iterated. See read_capture."""

    source: _Source
    packets: Iterable[Any] | None
    name: str | None
    ports: Iterable[int] | None
    partition: tuple[int, int] | None
    decode: bool | Iterable[int]
    names: TopicNames | None
    limits: dict[str, int]
    stats: CaptureStats
    exchanges: Exchanges | None
    def __init__(self, source: _Source, *, ports: Iterable[int] | None = None, name: str | None = None,
                 partition: tuple[int, int] | None = None, decode: bool | Iterable[int] = True,
                 names: TopicNames | None = None, packets: Iterable[Any] | None = None, **limits: int) -> None: ...
    def __iter__(self) -> Iterator[Exchange]: ...

def read_capture(source: _Source, *, ports: Iterable[int] | None = None, name: str | None = None,
                 partition: tuple[int, int] | None = None, decode: bool | Iterable[int] = True,
                 names: TopicNames | None = None, **limits: int) -> CaptureReader:
    """The exchanges in a pcap or pcapng file (a path or a binary file object; gzip is recognised).

    A path is checked here: one that cannot be opened raises OSError, and a file that is not a capture raises
    CaptureFormatError. ports: the brokers' ports; partition=(i, n): only the connections that hash to i of n;
    decode=False reads request headers only (a set of API keys: those APIs' bodies only); names: a
    names.TopicNames that learns topic id/name pairs and names topics by them; limits: max_frame, idle_ns,
    max_connections, max_pending (see exchanges.Exchanges).
    """

def keep_freed_memory() -> bool: ...
def follow(path: str, *, ports: Iterable[int] | None = None, names: TopicNames | None = None,
           idle: float | None = None, poll: float | None = None, **limits: int) -> CaptureReader:
    """The exchanges of a capture still being written: a growing file, or a folder a capture tool rotates files
    into, read as one stream. idle: stop once nothing new has come for this many seconds (None: go on until
    interrupted). ``reader.packets`` is the Follower: its ``files`` and ``notes``, and ``stop()``."""

def records(exchanges: Iterable[Exchange], *, validate: bool = True) -> Iterator[dict[str, Any]]:
    """One dict per record in the exchanges' Produce requests and Fetch (and ShareFetch) responses: where the
    record travelled (connection, api, time, topic, topic id, partition) and what it is (offset, timestamp, key,
    value, headers and its batch's producer fields), whether its transaction was ``aborted`` (True, False, or
    None when the message does not tell: see capture.transactions); ``error`` says why when records do not read."""

__all__ = [
    "CAPTURE_ERROR", "DECODE_ERROR", "GAP", "OK", "STATUSES", "UNMATCHED_REQUEST", "UNMATCHED_RESPONSE",
    "UNSUPPORTED", "CaptureFormatError", "CaptureReader", "CaptureStats", "Exchange", "TopicNames", "follow", "held",
    "keep_freed_memory", "read_capture", "records", "records_fields", "walk",
]
