"""KRaft metadata records (the payloads of the __cluster_metadata log).

    from kafkaproto.metadata import TopicRecord, record_class, encode_record, decode_record
    value = encode_record(TopicRecord(name="orders", topic_id=Uuid.random()))
    record, version = decode_record(value)
"""

import sys

from . import registry
from .exceptions import DecodeError
from .registry import record_class

__all__ = ["decode_record", "encode_record", "record_class"]
# Every record class is an attribute here, and stays the registry's (an extension's amended class once imported).
registry.publish(sys.modules[__name__], ("metadata",))


# How KRaft frames a record in the value of a __cluster_metadata record: unsigned varints for the
# frame version (1), the record type and the record's version, then the record itself.
FRAME_VERSION = 1


def encode_record(record, version=None):
    """A metadata record as the value Kafka's metadata log stores (at its newest version by default)."""
    if version is None:
        version = type(record).valid_versions.stop - 1
    return _uvarint(FRAME_VERSION) + _uvarint(record.api_key) + _uvarint(version) + record.encode(version)


def decode_record(value):
    """(record, version) from a metadata log record's value; raises DecodeError naming the byte."""
    view = memoryview(value)
    frame, at = _read_uvarint(view, 0, "frame version")
    if frame != FRAME_VERSION:
        raise DecodeError(f"metadata record frame version {frame} (only {FRAME_VERSION} is known)", 0)
    record_type, at = _read_uvarint(view, at, "record type")
    version, at = _read_uvarint(view, at, "record version")
    try:
        cls = record_class(record_type)
    except KeyError:
        raise DecodeError(f"unknown metadata record type {record_type}", 1) from None
    return cls.decode(view[at:], version), version


def _uvarint(value):
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_uvarint(view, at, what):
    value = shift = 0
    start = at
    while True:
        if at >= len(view) or shift > 28:
            raise DecodeError(f"unreadable {what} varint", start)
        byte = view[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
