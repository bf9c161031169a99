"""A record batch's header (magic 2) read where it lies, and the fields set after the producer wrote it.

The broker gives each batch its offsets and leader epoch (not under the CRC, so
nothing else changes); a replay gives batches the target's producer id and epoch
(under the CRC, which is computed again). Readers walking a log or a capture take
the header alone, without the records.
"""

import struct
from typing import NamedTuple

from ..exceptions import RecordsError
from ._common import (ATTRIBUTES_OFFSET, BATCH_HEADER, BATCH_HEADER_SIZE, CODEC_MASK, CRC_OFFSET, LENGTH_OFFSET,
                      LOG_OVERHEAD, MAGIC_OFFSET)
from .checksum import crc32c

HEADER_SIZE = BATCH_HEADER_SIZE  # 61
__all__ = ["ATTRIBUTES_OFFSET", "CODEC_MASK", "HEADER_SIZE", "LENGTH_OFFSET", "LOG_OVERHEAD", "MAGIC_OFFSET",
           "PRODUCER_OFFSET", "BatchHeader", "assign", "base_offset", "batch_spans", "read_header", "set_base_offset",
           "set_producer"]
PRODUCER_OFFSET = 43  # producer id (int64), then producer epoch (int16)
_LEADER_EPOCH_OFFSET = 12
_INT64, _INT32, _UINT32, _PRODUCER = struct.Struct(">q"), struct.Struct(">i"), struct.Struct(">I"), struct.Struct(">qh")


class BatchHeader(NamedTuple):
    """The 61 bytes before a batch's records, as produced_batches gives them."""
    base_offset: int
    length: int  # the bytes after the length field: a batch's size is length + 12
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int


def read_header(data, position=0):
    """The BatchHeader at position (nothing checked but that 61 bytes are there; produced_batches checks)."""
    if len(data) - position < HEADER_SIZE:
        raise RecordsError(f"a record batch header needs {HEADER_SIZE} bytes, {len(data) - position} are left",
                           position, kind="truncated")
    return BatchHeader._make(BATCH_HEADER.unpack_from(data, position))


def batch_spans(data):
    """(position, size) of each whole batch in data (of any magic: the framing is the same), from its base offset
    and length alone; stops quietly at bytes that are not a whole batch."""
    position, end = 0, len(data)
    while end - position >= LOG_OVERHEAD:
        (length,) = _INT32.unpack_from(data, position + 8)
        if length < 0 or length > end - position - LOG_OVERHEAD:
            return
        yield position, length + LOG_OVERHEAD
        position += length + LOG_OVERHEAD


def base_offset(data, position=0):
    """The base offset of the batch at position (any magic: an offset and a length begin every batch)."""
    return _INT64.unpack_from(data, position)[0]


def set_base_offset(buf, position, base_offset):
    """Give the batch at position its base offset (not under the CRC)."""
    _INT64.pack_into(buf, position, base_offset)


def assign(buf, position, base_offset, leader_epoch):
    """Give the batch at position the base offset and leader epoch a broker appends it with (neither is under the
    CRC, so nothing else changes)."""
    _INT64.pack_into(buf, position, base_offset)
    _INT32.pack_into(buf, position + _LEADER_EPOCH_OFFSET, leader_epoch)


def set_producer(buf, position, size, producer_id, producer_epoch):
    """Give the magic 2 batch of size bytes at position a producer id and epoch, and its CRC computed again."""
    _PRODUCER.pack_into(buf, position + PRODUCER_OFFSET, producer_id, producer_epoch)
    _UINT32.pack_into(buf, position + CRC_OFFSET, crc32c(memoryview(buf)[position + ATTRIBUTES_OFFSET:position + size]))
