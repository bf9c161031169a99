"""Committed offsets, whatever kind of group commits them, and the groups' own records (stored.py): Kafka's
``__consumer_offsets`` records in their own log, replayed at start-up.

Each group's records go to the partition of ``__consumer_offsets`` Kafka's hashing picks for its id
(coordinator_logs.py), one log each.

An offset is Kafka's OffsetCommit record: the key (record type 1) names the group, topic and partition, the value
(version 4, as Kafka 4.3 writes it) holds the offset, its leader epoch, metadata, commit time and, for an
OffsetCommit (not a transaction's), the topic's id; a tombstone removes it. Records of the layout an
earlier version of this broker wrote (JSON, legacy.py) are read too, and written again in Kafka's at start-up
(``rewrite_legacy``), so that what Kafka's tools read of the log is whole.
"""

import logging
import os
import time

from ....coordinator_records import (OffsetCommitKey, OffsetCommitValue, UnknownRecordType, decode_key, decode_value,
                                     encode_key, encode_value)
from ....exceptions import DecodeError
from ....records import RecordBatchBuilder, iter_batches
from ....uuid import Uuid
from ..coordinator_logs import OFFSETS_TOPIC, CoordinatorLogs
from ..log import parse_batches
from . import legacy
from .stored import OFFSET_RECORDS, record_key, split_key, tombstones

log = logging.getLogger("kafkaproto.broker")
OFFSETS_DIR = "__consumer_offsets-0"  # the one partition of a single broker's (offsets.topic.num.partitions)


class OffsetStore:
    """group id -> {(topic, partition): (offset, leader epoch, metadata, commit time ms)}, and group id ->
    {(record type, sub): value} of the groups' records, kept in log_dir."""

    def __init__(self, log_dir, files=None, partitions=1):
        self.by_group = {}
        self.group_records = {}  # group id -> {(record type, member id or pattern or None): value} (stored.py)
        self.legacy_offsets = set()  # (group, topic, partition) of offsets last written in that layout
        # called with (partition index, the batches each write appended to that partition of the internal topic)
        self.on_append = None
        self.logs = CoordinatorLogs(log_dir, OFFSETS_TOPIC, partitions, files)
        self.directory = os.path.join(log_dir, OFFSETS_TOPIC + "-*")  # how messages name the logs
        for partition_log in self.logs:
            for segment in partition_log.segments:
                for batch in iter_batches(segment.read(0, segment.size)):
                    if batch.is_control:
                        continue
                    for record in batch:
                        self._replay(record, partition_log.directory)

    def _replay(self, record, directory):
        try:
            if record.key is None:
                raise ValueError("the record has no key")
            if legacy.is_json(record.key):
                self._replay_legacy(*legacy.read_record(record.key, record.value))
                return
            key, record_type = decode_key(record.key)
            if record_type in OFFSET_RECORDS:
                self._set_offset((key.group, key.topic, key.partition), _offset(record.value, record_type))
                return
            group_id, sub = split_key(key, record_type)
            self._set_group_record(group_id, sub, None if record.value is None else bytes(record.value))
        except UnknownRecordType as e:
            # As Kafka's loader: a kind a newer version writes (or one retired) is skipped.
            log.warning("%s: the record at offset %d is of group coordinator record type %d, which this broker "
                        "does not know; skipped", directory, record.offset, e.record_type)
        except (DecodeError, TypeError, ValueError, KeyError) as e:  # not a coordinator's (an older one let clients)
            log.error("%s: the record at offset %d is not a group coordinator record (%s); skipped",
                      directory, record.offset, e)

    def _replay_legacy(self, kind, *rest):
        if kind == "offset":
            key, value = rest
            self._set_offset(key, value)
            self.legacy_offsets.add(key)
            return
        group_id, sub, value = rest
        self._set_group_record(group_id, sub, value)

    def _set_offset(self, key, value):
        group_id, topic, partition = key
        self.legacy_offsets.discard(key)
        if value is None:
            offsets = self.by_group.get(group_id, {})
            offsets.pop((topic, partition), None)
            if not offsets:
                self.by_group.pop(group_id, None)
        else:
            self.by_group.setdefault(group_id, {})[(topic, partition)] = value

    def _set_group_record(self, group_id, sub, value):
        records = self.group_records.setdefault(group_id, {})
        if isinstance(records.get(sub), dict):
            # An earlier version's record written again: it moves to where its new record stands, as members are
            # listed in the order their records come.
            del records[sub]
        if value is None:
            records.pop(sub, None)
        else:
            records[sub] = value
        if not records:
            del self.group_records[group_id]

    def _append(self, records):
        """Append records [(group id, encoded key, encoded value or None)]: one batch in each partition they go to,
        in their order."""
        by_partition = {}
        for group_id, key, value in records:
            by_partition.setdefault(self.logs.index_of(group_id), []).append((key, value))
        now = int(time.time() * 1000)
        for index, pairs in by_partition.items():
            builder = RecordBatchBuilder(base_sequence=0)  # as Kafka's coordinator builds its batches
            for key, value in pairs:
                builder.append(key, value, timestamp=now)
            data = builder.build()
            batches = parse_batches(data)
            self.logs.logs[index].append(data, batches)
            if self.on_append is not None:
                self.on_append(index, batches)

    def _write_offsets(self, entries, topic_ids=None):
        """Offsets [((group, topic, partition), value or None)]: appended, then applied."""
        topic_ids = topic_ids or {}
        self._append([(key[0], _offset_key(key),
                       None if value is None else _offset_value(value, topic_ids.get(key[1])))
                      for key, value in entries])
        for key, value in entries:
            self._set_offset(key, value)

    def commit(self, group_id, offsets, topic_ids=None):
        """offsets: [((topic, partition), (offset, leader epoch, metadata, commit time ms))]; topic_ids: {topic:
        its id}, which the records keep as Kafka's do (an OffsetCommit's, not a transaction's)."""
        self._write_offsets([((group_id, topic, partition), (offset, epoch, metadata if metadata is not None else "",
                                                            commit_ms))
                             for (topic, partition), (offset, epoch, metadata, commit_ms) in offsets], topic_ids)

    def committed(self, group_id):
        return self.by_group.get(group_id, {})

    def expire(self, now_ms, retention_ms, keep):
        """Drop offsets older than retention_ms (Kafka's offsets.retention.minutes, KIP-211) of the groups for
        which keep(group id) is false; the number dropped."""
        gone = [((group_id, t, p), None) for group_id, offsets in self.by_group.items() if not keep(group_id)
                for (t, p), value in offsets.items() if value[3] < now_ms - retention_ms]
        self._write_offsets(gone)
        return len(gone)

    def drop(self, keys):
        """Tombstones for the offsets of these (group id, topic, partition), in one batch."""
        self._write_offsets([(key, None) for key in keys])

    def forget_topic(self, topic):
        self._write_offsets([((group_id, t, p), None) for group_id, offsets in self.by_group.items()
                             for (t, p) in list(offsets) if t == topic])

    def write_group_records(self, group_id, entries):
        """Append a group's records [((record type, sub), encoded value or None)] (stored.changes) in one batch,
        and apply them."""
        self._append([(group_id, _group_key(group_id, key), value) for key, value in entries])
        for key, value in entries:
            self._set_group_record(group_id, key, value)

    def delete_group(self, group_id):
        """Tombstones for the group's offsets and its records, in one batch."""
        offsets = [(group_id, t, p) for (t, p) in list(self.by_group.get(group_id, {}))]
        records = tombstones(self.group_records.get(group_id, {}))
        self._append([(group_id, _offset_key(key), None) for key in offsets]
                     + [(group_id, _group_key(group_id, key), None) for key in records])
        for key in offsets:
            self._set_offset(key, None)
        for key in records:
            self._set_group_record(group_id, key, None)

    def legacy_groups(self):
        """The ids of the groups some of whose records are in an earlier version's layout (legacy.py)."""
        return [group_id for group_id, records in self.group_records.items()
                if any(isinstance(value, dict) for value in records.values())]

    def rewrite_legacy(self):
        """Write again in Kafka's layout the offsets whose last record is an earlier version's (JSON), in one
        batch; the number written. The groups' records are written again by the coordinator (which knows them as
        groups): see legacy_groups()."""
        entries = [(key, self.by_group[key[0]][key[1:]]) for key in sorted(self.legacy_offsets)]
        self._write_offsets(entries)
        return len(entries)

    def close(self):
        self.logs.close()


def _offset(value, record_type):
    """(offset, leader epoch, metadata, commit time ms) of an offset record's value, or None for a tombstone."""
    if value is None:
        return None
    committed, _ = decode_value(value, record_type)
    epoch = getattr(committed, "leader_epoch", -1)
    return committed.offset, epoch, committed.metadata, committed.commit_timestamp


def _offset_key(key):
    group_id, topic, partition = key
    return encode_key(OffsetCommitKey(group=group_id, topic=topic, partition=partition))


def _offset_value(value, topic_id=None):
    offset, epoch, metadata, commit_ms = value
    return encode_value(OffsetCommitValue(offset=offset, leader_epoch=epoch, metadata=metadata or "",
                                          commit_timestamp=commit_ms, topic_id=topic_id or Uuid.ZERO))


def _group_key(group_id, key):
    record_type, sub = key
    return encode_key(record_key(group_id, record_type, sub))
