"""Log compaction (cleanup.policy=compact): keep only the latest record of each key.

Closed segments are rewritten in place of themselves; the active segment is
never touched, as in Kafka. A record survives when it is the newest one of
its key anywhere in the log; a tombstone (null value) survives until
delete.retention.ms after its batch's timestamp, so consumers can see the
deletion. Offsets never change: a compacted log has gaps. Batches that belong
to transactions, and control batches, are kept as they are (the aborted and
committed ranges stay readable); records without a key cannot be compacted and
are refused when produced to a compacted topic.
"""

from ...records import RecordBatchBuilder, iter_batches


def records_of(segment, batch):
    for read in iter_batches(segment.read(batch.position, batch.size)):
        return read, list(read)
    return None, []


def latest_offsets(log):
    """{key: offset of its newest record} over the whole log."""
    latest = {}
    for segment in log.segments:
        for batch in segment.batches():
            if batch.is_control:
                continue
            _, records = records_of(segment, batch)
            for record in records:
                if record.key is not None:
                    latest[bytes(record.key)] = record.offset
    return latest


def _rebuild(read, kept):
    builder = RecordBatchBuilder(compression=read.compression, producer_id=read.producer_id,
                                 producer_epoch=read.producer_epoch, base_sequence=read.base_sequence,
                                 base_offset=read.base_offset, partition_leader_epoch=read.partition_leader_epoch)
    for record in kept:
        builder.append(record.key, record.value, headers=record.headers, timestamp=record.timestamp,
                       offset=record.offset)
    return builder.build()


def compact(log, now_ms, delete_retention_ms):
    """Compact a partition log's closed segments; the number of records removed."""
    if len(log.segments) < 2:
        return 0
    latest = latest_offsets(log)
    removed = 0
    for segment in list(log.segments[:-1]):
        parts = []
        changed = False
        for batch in segment.batches():
            raw = segment.read(batch.position, batch.size)
            if batch.is_control or batch.is_transactional:
                parts.append(raw)
                continue
            read, records = records_of(segment, batch)
            expired = batch.max_timestamp < now_ms - delete_retention_ms
            kept = [r for r in records if r.key is not None and latest.get(bytes(r.key)) == r.offset
                    and not (r.value is None and expired)]
            if len(kept) == len(records):
                parts.append(raw)
                continue
            changed = True
            removed += len(records) - len(kept)
            if kept:
                parts.append(_rebuild(read, kept))
        if changed:
            log.replace_segment(segment, b"".join(parts))
    return removed
