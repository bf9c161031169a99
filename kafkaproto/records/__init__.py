"""Kafka record data: record batches (magic 2) and legacy message sets (magic 0 and 1).

Produce requests and fetch responses carry records as opaque bytes (their
``records`` fields). This module reads and writes them:

    from kafkaproto import records
    for batch in records.iter_batches(partition.records):   # lazy, zero-copy
        batch.base_offset, batch.compression, batch.producer_id  # header only
        for record in batch:                                     # decoded now
            record.offset, record.timestamp, record.key, record.value, record.headers

    data = records.RecordBatchBuilder(compression="zstd")
    data.append(b"key", b"value", headers=[("trace", b"1")], timestamp=1700000000000)
    data.build()

    records.to_arrow(partition.records)  # a pyarrow.Table, one row per record
"""

from ..exceptions import RecordsError
from .._impl import COMPILED as _COMPILED
from ._common import (
    DEFAULT_MAX_DECOMPRESSED,
    Compression,
    ControlMarker,
    ControlType,
    TimestampType,
    arrow_schema,
    read_committed,
    record_sequence,
)
from ._legacy import LegacyBatch
from . import _compression

if _COMPILED:
    from ._crecords import Record, RecordBatch, RecordBatchBuilder, iter_batches, produced_batches, to_arrow
else:
    from ._pyrecords import Record, RecordBatch, RecordBatchBuilder, iter_batches, produced_batches, to_arrow


def read_records(data, **options):
    """Every record of every batch in data, as one list (options as for iter_batches)."""
    out = []
    for batch in iter_batches(data, **options):
        out.extend(batch.records())
    return out


def compress(compression, data, level=None):
    """data compressed as Kafka's Java client compresses a batch's records (compression: a Compression, its code
    or its name), for payloads Kafka compresses the same way (a client's pushed metrics, KIP-714)."""
    return bytes(_compression.compress(Compression.of(compression), data, level))


def decompress(compression, data, max_bytes=DEFAULT_MAX_DECOMPRESSED):
    """What compress made, back; raises RecordsError (kind "compression": unknown codec or corrupt data,
    "too_large": more than max_bytes once decompressed, which is checked before it is allocated)."""
    try:
        codec = Compression.of(compression)
    except ValueError as e:
        raise RecordsError(str(e), 0, kind="compression") from None
    if codec == Compression.NONE:
        if len(data) > max_bytes:
            raise RecordsError(f"{len(data)} bytes, over the {max_bytes}-byte cap", 0, kind="too_large")
        return bytes(data)
    try:
        return bytes(_compression.decompress(codec, data, max_bytes))
    except _compression.CapError as e:
        raise RecordsError(str(e), 0, kind="too_large") from None
    except _compression.CodecError as e:
        raise RecordsError(str(e), 0, kind="compression") from None


__all__ = [
    "DEFAULT_MAX_DECOMPRESSED", "Compression", "ControlMarker", "ControlType", "LegacyBatch", "Record", "RecordBatch",
    "RecordBatchBuilder", "RecordsError", "TimestampType", "arrow_schema", "compress", "decompress", "iter_batches",
    "produced_batches", "read_committed", "read_records", "record_sequence", "to_arrow",
]
