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

The transaction coordinator's log (``__transaction_state``) is laid out the same way with its own two specs,
TransactionLogKey and TransactionLogValue (record type 0, which in this log means a transactional id's state):

    key = encode_transaction_key("my-txn")
    transactional_id = decode_transaction_key(key)
    state, version = decode_transaction_value(encode_transaction_value(TransactionLogValue(producer_id=7)))

The share coordinator's log (``__share_group_state``) has two record types, each naming a share partition (group,
topic id, partition): a snapshot (0, ShareSnapshotKey/ShareSnapshotValue), the partition's whole state, and an update
(1, ShareUpdateKey/ShareUpdateValue), what changed since:

    key = encode_share_key(SHARE_SNAPSHOT, "g", topic_id, 0)
    record_type, (group_id, topic_id, partition) = decode_share_key(key)
    value, version = decode_share_value(encode_share_value(snapshot), record_type)
"""

import struct
import sys

from . import registry
from .exceptions import DecodeError
from .registry import coordinator_class

__all__ = ["SHARE_SNAPSHOT", "SHARE_UPDATE", "ShareSnapshotKey", "ShareSnapshotValue", "ShareUpdateKey",
           "ShareUpdateValue", "TRANSACTION_LOG_RECORD_TYPE", "TransactionLogKey", "TransactionLogValue",
           "UnknownRecordType", "decode_key", "decode_share_key", "decode_share_value", "decode_transaction_key",
           "decode_transaction_value", "decode_value", "encode_key", "encode_share_key", "encode_share_value",
           "encode_transaction_key", "encode_transaction_value", "encode_value", "key_class", "value_class"]
# Every key and value class is an attribute here, and stays the registry's.
registry.publish(sys.modules[__name__], ("coordinator-key", "coordinator-value"))

_INT16 = struct.Struct(">h")


class UnknownRecordType(DecodeError):
    """A key of a record type no spec describes (one a newer Kafka writes, or bytes that are not a record's):
    Kafka's coordinator skips such records as it loads."""

    def __init__(self, record_type, coordinator="group coordinator"):
        super().__init__(f"unknown {coordinator} record type {record_type}", 0)
        self.record_type = record_type


def _leading_int16(data, what, field):
    """(the int16 a stored key or value starts with, the bytes after it); DecodeError when there are not two."""
    view = memoryview(data)
    if len(view) < 2:
        raise DecodeError(f"{what} needs 2 bytes for its {field}, got {len(view)}", 0)
    return _INT16.unpack_from(view)[0], view[2:]


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
    record_type, view = _leading_int16(data, "a group coordinator record key", "type")
    try:
        cls = key_class(record_type)
    except KeyError:
        raise UnknownRecordType(record_type) from None
    return cls.decode(view, 0), record_type


def decode_value(data, record_type):
    """(value, version) of a record's value of that record type; DecodeError for bytes that do not read (an unknown
    version among them)."""
    version, view = _leading_int16(data, "a group coordinator record value", "version")
    try:
        cls = value_class(record_type)
    except KeyError:
        raise UnknownRecordType(record_type) from None
    if version not in cls.valid_versions:
        raise DecodeError(f"{cls.__name__} has no version {version}", 0)
    return cls.decode(view, version), version


# The transaction coordinator's log has one record type; its value's newest version is the one Kafka writes once
# transactions version 2 is finalized (version 0 before, without the tagged fields).
TRANSACTION_LOG_RECORD_TYPE = 0
TransactionLogKey = registry.message_class("TransactionLogKey")
TransactionLogValue = registry.message_class("TransactionLogValue")


def encode_transaction_key(transactional_id):
    """The key of a transactional id's record in the transaction coordinator's log."""
    return _INT16.pack(TRANSACTION_LOG_RECORD_TYPE) + TransactionLogKey(transactional_id=transactional_id).encode(0)


def encode_transaction_value(value, version=None):
    """A TransactionLogValue as the transaction coordinator's log stores it, at its newest version by default."""
    if version is None:
        version = TransactionLogValue.valid_versions.stop - 1
    return _INT16.pack(version) + value.encode(version)


def decode_transaction_key(data):
    """The transactional id of a key of the transaction coordinator's log; UnknownRecordType for another record
    type, DecodeError for bytes that do not read."""
    record_type, view = _leading_int16(data, "a transaction log record key", "type")
    if record_type != TRANSACTION_LOG_RECORD_TYPE:
        raise UnknownRecordType(record_type, "transaction coordinator")
    return TransactionLogKey.decode(view, 0).transactional_id


def decode_transaction_value(data):
    """(TransactionLogValue, version) of a value of the transaction coordinator's log; DecodeError for bytes that
    do not read (an unknown version among them)."""
    version, view = _leading_int16(data, "a transaction log record value", "version")
    if version not in TransactionLogValue.valid_versions:
        raise DecodeError(f"TransactionLogValue has no version {version}", 0)
    return TransactionLogValue.decode(view, version), version


# The share coordinator's log: a record type names the key's and the value's class; each is at version 0.
SHARE_SNAPSHOT, SHARE_UPDATE = 0, 1
ShareSnapshotKey = registry.message_class("ShareSnapshotKey")
ShareSnapshotValue = registry.message_class("ShareSnapshotValue")
ShareUpdateKey = registry.message_class("ShareUpdateKey")
ShareUpdateValue = registry.message_class("ShareUpdateValue")
_SHARE_CLASSES = {SHARE_SNAPSHOT: (ShareSnapshotKey, ShareSnapshotValue),
                  SHARE_UPDATE: (ShareUpdateKey, ShareUpdateValue)}


def encode_share_key(record_type, group_id, topic_id, partition):
    """The key of a share partition's record (SHARE_SNAPSHOT or SHARE_UPDATE) in the share coordinator's log."""
    key = _SHARE_CLASSES[record_type][0](group_id=group_id, topic_id=topic_id, partition=partition)
    return _INT16.pack(record_type) + key.encode(0)


def encode_share_value(value):
    """A ShareSnapshotValue or ShareUpdateValue as the share coordinator's log stores it (version 0)."""
    return _INT16.pack(0) + value.encode(0)


def decode_share_key(data):
    """(record type, (group id, topic id, partition)) of a key of the share coordinator's log; UnknownRecordType for
    another record type, DecodeError for bytes that do not read."""
    record_type, view = _leading_int16(data, "a share coordinator record key", "type")
    if record_type not in _SHARE_CLASSES:
        raise UnknownRecordType(record_type, "share coordinator")
    key = _SHARE_CLASSES[record_type][0].decode(view, 0)
    return record_type, (key.group_id, key.topic_id, key.partition)


def decode_share_value(data, record_type):
    """(value, version) of a value of the share coordinator's log of that record type; DecodeError for bytes that
    do not read (an unknown version among them)."""
    version, view = _leading_int16(data, "a share coordinator record value", "version")
    if record_type not in _SHARE_CLASSES:
        raise UnknownRecordType(record_type, "share coordinator")
    cls = _SHARE_CLASSES[record_type][1]
    if version not in cls.valid_versions:
        raise DecodeError(f"{cls.__name__} has no version {version}", 0)
    return cls.decode(view, version), version
