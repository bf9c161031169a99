"""Committed offsets, whatever kind of group commits them: records in their own log, replayed at start-up."""

import json
import logging
import os
import time

from ....records import RecordBatchBuilder, iter_batches
from ..log import PartitionLog, parse_batches
from .stored import json_key, split_key

log = logging.getLogger("kafkaproto.broker")
OFFSETS_DIR = "__consumer_offsets-0"


class OffsetStore:
    """group id -> {(topic, partition): (offset, leader epoch, metadata, commit time ms)}, kept in log_dir."""

    def __init__(self, log_dir, files=None):
        self.by_group = {}
        self.group_records = {}  # group id -> {(kind, member id or regex): value}: group metadata (stored.py)
        # Recovered at every start (a torn last batch is cut off), whatever the metadata log's clean-stop marker
        # says: this log is small beside the partitions, and read whole here anyway.
        self.log = PartitionLog(os.path.join(log_dir, OFFSETS_DIR), files=files, recover=True)
        for segment in self.log.segments:
            for batch in iter_batches(segment.read(0, segment.size)):
                for record in batch:
                    try:
                        key = json.loads(record.key)
                        value = None if record.value is None else json.loads(record.value)
                        self._apply(key, value)
                    except (TypeError, ValueError, KeyError) as e:  # not this broker's (an older one let clients)
                        log.error("%s: the record at offset %d is not a committed offset (%s); skipped",
                                  self.log.directory, record.offset, e)

    def _apply(self, key, value):
        if isinstance(key, dict):  # a group's metadata record (stored.py); an offset's key is a list
            group_id, record = split_key(key)
            records = self.group_records.setdefault(group_id, {})
            if value is None:
                records.pop(record, None)
            else:
                records[record] = value
            if not records:
                del self.group_records[group_id]
            return
        group_id, topic, partition = key
        if value is None:
            offsets = self.by_group.get(group_id, {})
            offsets.pop((topic, partition), None)
            if not offsets:
                self.by_group.pop(group_id, None)
        else:
            self.by_group.setdefault(group_id, {})[(topic, partition)] = tuple(value)

    def _write(self, entries):
        """Append offset records [((group, topic, partition), value or None)] and apply them."""
        if not entries:
            return
        builder = RecordBatchBuilder()
        now = int(time.time() * 1000)
        for key, value in entries:
            builder.append(json.dumps(key).encode(), None if value is None else json.dumps(value).encode(),
                           timestamp=now)
        data = builder.build()
        self.log.append(data, parse_batches(data))
        for key, value in entries:
            self._apply(key, value)

    def commit(self, group_id, offsets):
        """offsets: [((topic, partition), (offset, leader epoch, metadata, commit time ms))]."""
        self._write([((group_id, topic, partition), list(value)) for (topic, partition), value in offsets])

    def committed(self, group_id):
        return self.by_group.get(group_id, {})

    def expire(self, now_ms, retention_ms, keep):
        """Drop offsets older than retention_ms (Kafka's offsets.retention.minutes, KIP-211) of the groups for
        which keep(group id) is false; the number dropped."""
        gone = [((group_id, t, p), None) for group_id, offsets in self.by_group.items() if not keep(group_id)
                for (t, p), value in offsets.items() if value[3] < now_ms - retention_ms]
        self._write(gone)
        return len(gone)

    def drop(self, keys):
        """Tombstones for the offsets of these (group id, topic, partition), in one batch."""
        self._write([(key, None) for key in keys])

    def forget_topic(self, topic):
        self._write([((group_id, t, p), None) for group_id, offsets in self.by_group.items()
                     for (t, p) in list(offsets) if t == topic])

    def write_group_records(self, entries):
        """Append group metadata records [(key, value or None)], in stored.py's layout, and apply them."""
        self._write(entries)

    def delete_group(self, group_id):
        """Tombstones for the group's offsets and its metadata records, in one batch."""
        self._write([((group_id, t, p), None) for (t, p) in list(self.by_group.get(group_id, {}))]
                    + [(json_key(group_id, record), None) for record in self.group_records.get(group_id, {})])

    def close(self):
        self.log.close()
