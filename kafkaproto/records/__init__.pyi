# What editors and type checkers see of kafkaproto.records: its classes come from the compiled module or its
# pure-Python twin, chosen when it is imported, and behave the same. pyarrow's types are Any here: pyarrow is
# optional, and carries no type information.
from enum import IntEnum
from typing import Any, Iterable, Iterator, NamedTuple

from ..exceptions import RecordsError as RecordsError

_Buffer = bytes | bytearray | memoryview
# A record header: a str key, and a value of bytes or None.
_Header = tuple[str, _Buffer | None]

DEFAULT_MAX_DECOMPRESSED: int

class Compression(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4
    @classmethod
    def of(cls, value: Compression | int | str) -> Compression:
        """A Compression from itself, its code or its name ("gzip")."""

class TimestampType(IntEnum):
    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

class ControlType(IntEnum):
    """The type in a control record's key (KIP-98 markers, then KRaft's own)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6

class ControlMarker(NamedTuple):
    """A control record: its type (ControlType, or the int code when unknown), the key's version and, for
    commit/abort markers, the transaction coordinator's epoch (None otherwise)."""

    type: ControlType | int
    version: int
    coordinator_epoch: int | None

class Record:
    """One record. ``offset`` and ``timestamp`` are absolute; the rest is as on the wire."""

    @property
    def offset(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> tuple[tuple[str, bytes | None], ...]: ...
    @property
    def attributes(self) -> int: ...
    @property
    def timestamp_delta(self) -> int: ...
    @property
    def offset_delta(self) -> int: ...
    @property
    def size(self) -> int: ...
    def __init__(self, offset: int, timestamp: int, key: bytes | None, value: bytes | None,
                 headers: Iterable[tuple[str, bytes | None]] = (), attributes: int = 0, timestamp_delta: int = 0,
                 offset_delta: int = 0, size: int = -1) -> None: ...
    def __eq__(self, other: object, /) -> bool: ...
    __hash__: None  # type: ignore[assignment]

class RecordBatch:
    """One magic-2 record batch over a zero-copy view; its records are decoded on demand."""

    @property
    def position(self) -> int: ...
    @property
    def base_offset(self) -> int: ...
    @property
    def batch_length(self) -> int: ...
    @property
    def partition_leader_epoch(self) -> int: ...
    @property
    def magic(self) -> int: ...
    @property
    def crc(self) -> int: ...
    @property
    def attributes(self) -> int: ...
    @property
    def last_offset_delta(self) -> int: ...
    @property
    def base_timestamp(self) -> int: ...
    @property
    def max_timestamp(self) -> int: ...
    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def base_sequence(self) -> int: ...
    @property
    def record_count(self) -> int: ...
    @property
    def raw(self) -> memoryview:
        """The batch's bytes (a memoryview of the input)."""
    @property
    def compression(self) -> Compression | int:
        """The codec: a Compression, or the int code of one kafkaproto does not know."""
    @property
    def timestamp_type(self) -> TimestampType: ...
    @property
    def is_transactional(self) -> bool: ...
    @property
    def is_control(self) -> bool: ...
    @property
    def has_delete_horizon(self) -> bool: ...
    @property
    def delete_horizon_ms(self) -> int | None: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def next_offset(self) -> int: ...
    @property
    def control_marker(self) -> ControlMarker | None:
        """For a control batch, its first record as a ControlMarker; None otherwise."""
    def __init__(self, raw: _Buffer, position: int, max_decompressed: int) -> None: ...
    def crc_ok(self) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Record]:
        """The records one at a time: a huge batch costs one record object at a time."""
    def records(self) -> list[Record]:
        """The batch's records, decoded (and decompressed) now."""

class LegacyBatch:
    """One top-level message of a legacy (magic 0 or 1) message set."""

    position: int
    offset: int
    size: int
    crc: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    partition_leader_epoch: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_transactional: bool
    is_control: bool
    has_delete_horizon: bool
    delete_horizon_ms: int | None
    control_marker: ControlMarker | None
    @property
    def raw(self) -> memoryview: ...
    @property
    def batch_length(self) -> int: ...
    @property
    def compression(self) -> int: ...
    @property
    def timestamp_type(self) -> TimestampType: ...
    @property
    def max_timestamp(self) -> int: ...
    @property
    def base_timestamp(self) -> int: ...
    @property
    def base_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def next_offset(self) -> int: ...
    @property
    def record_count(self) -> int: ...
    def __init__(self, buf: memoryview, pos: int, end: int, record_cls: type[Record], validate: bool,
                 max_decompressed: int) -> None: ...
    def crc_ok(self) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Record]: ...
    def records(self) -> list[Record]: ...

class RecordBatchBuilder:
    """Builds one record batch (magic 2) or legacy message set (magic 0/1), as the Java client writes it."""

    magic: int
    compression: Compression
    compression_level: int | None
    transactional: bool
    control: bool
    timestamp_type: TimestampType
    log_append_time: int | None
    delete_horizon_ms: int | None
    attributes: int
    base_offset: int
    partition_leader_epoch: int
    base_sequence: int
    producer_id: int
    producer_epoch: int
    def __init__(self, *, magic: int = 2, compression: Compression | int | str = ...,
                 compression_level: int | None = None, base_offset: int = 0, partition_leader_epoch: int = -1,
                 producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                 transactional: bool = False, control: bool = False, timestamp_type: TimestampType | int = ...,
                 log_append_time: int | None = None, delete_horizon_ms: int | None = None) -> None: ...
    def append(self, key: _Buffer | None, value: _Buffer | None, *, headers: Iterable[_Header] = (),
               timestamp: int | None = None, offset: int | None = None) -> int:
        """Add a record; returns its offset. timestamp defaults to now (ms), offset to the next one."""
    def append_end_txn_marker(self, commit: bool, coordinator_epoch: int = 0, timestamp: int | None = None) -> int:
        """Add a commit or abort control record (the builder must be transactional and control)."""
    def __len__(self) -> int: ...
    def build(self) -> bytes:
        """The batch's bytes; b"" when no record was appended (Java's empty records)."""

def iter_batches(data: _Buffer, *, validate: bool = True, max_decompressed: int = ...,
                 allow_partial: bool = False) -> Iterator[RecordBatch | LegacyBatch]:
    """The batches in data, read lazily: each header now, its records when asked for.

    validate checks each batch's CRC as it is reached. allow_partial ends the
    iteration quietly at a truncated last batch, as consumers do with fetch
    responses; otherwise that raises RecordsError.
    """

def read_records(data: _Buffer, *, validate: bool = True, max_decompressed: int = ...,
                 allow_partial: bool = False) -> list[Record]:
    """Every record of every batch in data, as one list (options as for iter_batches)."""

def produced_batches(data: _Buffer, max_batch_bytes: int | None = None, max_decompressed: int = ..., *,
                     client: bool = False, single: bool = False, allow_partial: bool = False,
                     require_keys: bool = False, now_ms: int | None = None, timestamp_before_ms: int | None = None,
                     timestamp_after_ms: int | None = None) -> list[tuple[tuple[int, ...], int]]:
    """Record data as a producer sends it, checked where it lies: [(header, position)] of its batches, each header
    as BATCH_HEADER unpacks it. RecordsError names the first fault, its byte and its kind (see the module's
    implementation for the checks, which are a broker's before it appends)."""

def to_arrow(data: _Buffer, *, validate: bool = True, max_decompressed: int = ...,
             allow_partial: bool = False) -> Any:
    """The records as a pyarrow.Table, one row per record (needs pyarrow)."""

def arrow_schema() -> Any:
    """The pyarrow schema of to_arrow's tables."""

def read_committed(
    batches: Iterable[RecordBatch | LegacyBatch], aborted_transactions: Iterable[Any] | None,
) -> Iterator[tuple[RecordBatch | LegacyBatch, str | None]]:
    """Which batches a read_committed consumer delivers, as the Java consumer decides it: (batch, skip) for every
    batch, skip None when its records are delivered, "aborted" or "control" otherwise."""

def compress(compression: Compression | int | str, data: _Buffer, level: int | None = None) -> bytes:
    """data compressed as Kafka's Java client compresses a batch's records."""

def decompress(compression: Compression | int | str, data: _Buffer, max_bytes: int = ...) -> bytes:
    """What compress made, back; RecordsError (kind "compression" or "too_large") when it cannot be."""

def record_sequence(base_sequence: int, offset_delta: int) -> int:
    """The producer sequence number of the record offset_delta past its batch's base sequence (-1 when the
    batch has none), wrapping as Java's int does."""

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED", "Compression", "ControlMarker", "ControlType", "LegacyBatch", "Record", "RecordBatch",
    "RecordBatchBuilder", "RecordsError", "TimestampType", "arrow_schema", "compress", "decompress", "iter_batches",
    "produced_batches", "read_committed", "read_records", "record_sequence", "to_arrow",
]
