"""Group coordinator records (the keys and values of Kafka's ``__consumer_offsets`` log).

    from kafkaproto.coordinator_records import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value
    key = encode_key(OffsetCommitKey(group="g", topic="orders", partition=0))
    value = encode_value(OffsetCommitValue(offset=42, leader_epoch=-1, metadata="", commit_timestamp=0))
    record, record_type = decode_key(key)
    committed, version = decode_value(value, record_type)

A key is its record type (int16, the spec's apiKey) then the key struct at version 0; a value is its version
(int16) then the value struct at that version; a null value (a tombstone) removes what its key names. Before
Kafka numbered record types the int16 was the key's version, with the same meaning for 0 to 2: an offset commit
(0 and 1) or a classic group's metadata (2).
"""

import struct
import sys

from . import registry
from .exceptions import DecodeError
from .registry import coordinator_class

__all__ = ["UnknownRecordType", "decode_key", "decode_value", "encode_key", "encode_value", "key_class",
           "value_class"]
# Every key and value class is an attribute here, and stays the registry's.
registry.publish(sys.modules[__name__], ("coordinator-key", "coordinator-value"))

_INT16 = struct.Struct(">h")


class UnknownRecordType(DecodeError):
    """A key of a record type no spec describes (one a newer Kafka writes, or bytes that are not a record's):
    Kafka's coordinator skips such records as it loads."""

    def __init__(self, record_type):
        super().__init__(f"unknown group coordinator record type {record_type}", 0)
        self.record_type = record_type


def key_class(record_type):
    """The key class of a record type; KeyError if there is none."""
    return coordinator_class("coordinator-key", record_type)


def value_class(record_type):
    """The value class of a record type; KeyError if there is none."""
    return coordinator_class("coordinator-value", record_type)


def encode_key(key):
    """A record's key as the log stores it."""
    return _INT16.pack(key.api_key) + key.encode(0)


def encode_value(value, version=None):
    """A record's value as the log stores it, at its newest version by default."""
    if version is None:
        version = type(value).valid_versions.stop - 1
    return _INT16.pack(version) + value.encode(version)


def decode_key(data):
    """(key, record type) of a record's key; UnknownRecordType for a type no spec describes, DecodeError for bytes
    that do not read."""
    view = memoryview(data)
    if len(view) < 2:
        raise DecodeError(f"a group coordinator record key needs 2 bytes for its type, got {len(view)}", 0)
    record_type = _INT16.unpack_from(view)[0]
    try:
        cls = key_class(record_type)
    except KeyError:
        raise UnknownRecordType(record_type) from None
    return cls.decode(view[2:], 0), record_type


def decode_value(data, record_type):
    """(value, version) of a record's value of that record type; DecodeError for bytes that do not read (an unknown
    version among them)."""
    view = memoryview(data)
    if len(view) < 2:
        raise DecodeError(f"a group coordinator record value needs 2 bytes for its version, got {len(view)}", 0)
    version = _INT16.unpack_from(view)[0]
    try:
        cls = value_class(record_type)
    except KeyError:
        raise UnknownRecordType(record_type) from None
    if version not in cls.valid_versions:
        raise DecodeError(f"{cls.__name__} has no version {version}", 0)
    return cls.decode(view[2:], version), version
