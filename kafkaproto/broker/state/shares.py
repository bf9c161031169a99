"""Share partitions (KIP-932): which records of a partition a share group has handed out, to whom, how often, and
which are done; kept in the share coordinator's log (``__share_group_state-0``, in Kafka's records) and read again
at start-up.

Each (group, topic id, partition) has a start offset (records before it are done) and, from there, the records in
flight, each in one of Kafka's states:

    AVAILABLE --(a ShareFetch acquires it: delivery count + 1, locked to the member)--> ACQUIRED
    ACQUIRED --(accept)--> ACKNOWLEDGED          ACQUIRED --(reject, or a gap)--> ARCHIVED
    ACQUIRED --(release, its lock running out, its share session closing)--> AVAILABLE,
                                     or ARCHIVED once delivered group.share.delivery.count.limit times

ACKNOWLEDGED and ARCHIVED are final; the start offset moves past them as soon as they lead. A fetch acquires the
records that are available again first, then new ones from the log, whole log batches at a time (Kafka's
batch-optimized acquisition: a batch is never split, so a fetch may take more than it asked for), up to
``share.partition.max.record.locks`` in flight. A partition's start offset is fixed when it is first read, from the
group's ``share.auto.offset.reset`` (latest, earliest, or by_duration:<ISO 8601 duration>).

What is written is what Kafka's share coordinator keeps: the start offset and, for the records in flight, their
state and delivery count, as a snapshot of the whole or an update of what changed (ShareStates). An acquisition is
not written (Kafka's neither): after a restart the records that were acquired are available again, delivered as
often as before. What the share coordinator is told lags a step, as on Kafka, whose leader writes a change with
the start offset it had before the change: DescribeShareGroupOffsets and the state APIs show that start
(``shown_start``) and the records done with after it (``shown_complete``), and a restart starts from there.

Share sessions (ShareSessions) are a member's open ShareFetch/ShareAcknowledge conversation, like a fetch session:
epoch 0 opens one, each request carries the next epoch, -1 closes it. Closing it, or the connection that opened it
closing, releases what the member holds.
"""

import logging
import re
import time

from ... import errors
from ...coordinator_records import (SHARE_SNAPSHOT, SHARE_UPDATE, ShareSnapshotValue, ShareUpdateValue,
                                    decode_share_key, decode_share_value, encode_share_key, encode_share_value)
from ...exceptions import DecodeError
from ...records import RecordBatchBuilder, iter_batches
from .groups import legacy
from .coordinator_logs import SHARE_STATE_TOPIC, CoordinatorLogs, share_key
from .log import parse_batches

log = logging.getLogger("kafkaproto.broker")
STATE_DIR = "__share_group_state-0"  # the one partition of a single broker's
AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
DONE = (ACKNOWLEDGED, ARCHIVED)
UNINITIALIZED = -1
MAX_WRITTEN_SPAN = 100_000  # offsets past its start a WriteShareGroupState may speak of (in flight: 10,000 at most)
_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?")


def duration_ms(text):
    """An ISO 8601 duration of by_duration:<PnDTnHnMn.nS> in milliseconds."""
    days, hours, minutes, seconds = _DURATION.fullmatch(text).groups()
    whole, _, fraction = (seconds or "0").partition(".")
    ms = ((int(days or 0) * 24 + int(hours or 0)) * 60 + int(minutes or 0)) * 60000 + int(whole) * 1000 + \
        int((fraction + "000")[:3])
    return min(ms, 2**62)  # longer than the epoch is old: the earliest offset


class ShareError(Exception):
    def __init__(self, error, message=None):
        super().__init__(message or error.name)
        self.error = error
        self.message = message


class SharePartition:
    """The records of one partition in flight for one share group. records: offset -> [state, deliveries, owner,
    lock deadline] for every offset from start up to end (the next offset never handed out)."""

    __slots__ = ("start", "end", "records", "state_epoch", "acquired", "shown_start", "shown_complete",
                 "shown_batches", "shown_changes")

    def __init__(self, start=UNINITIALIZED, state_epoch=0):
        self.start = start
        self.end = start
        self.records = {}
        self.state_epoch = state_epoch
        self.acquired = 0  # how many records are ACQUIRED (none: no lock to look at)
        self.shown_start = start
        self.shown_complete = 0 if start != UNINITIALIZED else UNINITIALIZED
        self.shown_batches = []
        self.shown_changes = []  # the runs of records the last change wrote

    # ---- fetching ----------------------------------------------------------------------------------------

    def begin(self, plog, reset, now_ms):
        """Fix the start offset at the first read, from share.auto.offset.reset; True when it was fixed now."""
        if self.start != UNINITIALIZED:
            return False
        if reset == "earliest":
            start = plog.log_start_offset
        elif reset.startswith("by_duration:"):
            found = plog.offset_for_timestamp(now_ms - duration_ms(reset.partition(":")[2]))
            start = found[0] if found is not None else plog.log_end_offset
        else:
            start = plog.log_end_offset
        self.start = self.end = self.shown_start = start
        self.shown_complete = 0
        return True

    def follow_log_start(self, log_start):
        """Records the log no longer has are done with (DeleteRecords, retention): the start moves up to the log's,
        and those below it are forgotten, held or not (an acknowledgement of them is taken and changes nothing,
        as below any start)."""
        if self.start >= log_start:
            return False
        for offset in range(self.start, min(self.end, log_start)):
            entry = self.records.pop(offset, None)
            if entry is not None and entry[0] == ACQUIRED:
                self.acquired -= 1
        self.start = log_start
        self.end = max(self.end, log_start)
        return True

    def acquire(self, member, budget, max_in_flight, batches, now, lock_ms, limit, batch_size, upto=None):
        """Acquire for member up to budget records: those available again first (below upto, the offset the log
        has records up to), then the new ones of batches (the log's [(base offset, last offset, aborted)] from end
        on). Returns [(first, last, deliveries)]."""
        got = []  # (offset, deliveries, batch base)
        deadline = now + lock_ms
        if self.end - self.start > 0:
            for offset in sorted(o for o, e in self.records.items() if e[0] == AVAILABLE
                                 and (upto is None or o < upto)):
                if budget <= 0:
                    break
                entry = self.records[offset]
                entry[0], entry[1], entry[2], entry[3] = ACQUIRED, entry[1] + 1, member, deadline
                self.acquired += 1
                budget -= 1
                got.append((offset, entry[1], None))
        room = max_in_flight - (self.end - self.start)
        for base, last, aborted in batches:
            if budget <= 0 or room <= 0:
                break
            if last < self.end:
                continue
            first = max(base, self.end)
            # a batch of more records than the cap allows in flight is taken in part, so that what is kept per
            # record stays bounded (Kafka keeps whole batches; a batch that large needs a compression ratio of
            # hundreds within message.max.bytes)
            last = min(last, first + max_in_flight - 1)
            for offset in range(first, last + 1):
                if aborted:  # read_committed: an aborted transaction's records are never delivered
                    self.records[offset] = [ARCHIVED, 0, None, 0]
                    continue
                self.records[offset] = [ACQUIRED, 1, member, deadline]
                self.acquired += 1
                got.append((offset, 1, first))
            self.end = last + 1
            budget -= last + 1 - first
            room -= last + 1 - first
        self._advance()
        return _ranges(got, batch_size)

    # ---- acknowledging ----------------------------------------------------------------------------------------

    def acknowledge(self, member, batches, limit, renew_ms, now, renew=True):
        """Apply [(first, last, [types])] for member, all or none; raises ShareError (INVALID_REQUEST for offsets
        never handed out, INVALID_RECORD_STATE for records not held by member, or renewed where the group does not
        let them be). An offset named twice takes its last type."""
        changes = {}  # offset -> (entry, type)
        for first, last, types in batches:
            if last < self.start:
                continue  # below the start: done with already
            if last >= self.end or first > last:
                raise ShareError(errors.INVALID_REQUEST)
            for offset in range(max(first, self.start), last + 1):
                entry = self.records.get(offset)
                if entry is None or entry[0] != ACQUIRED or entry[2] != member:
                    raise ShareError(errors.INVALID_RECORD_STATE)
                kind = types[0] if len(types) == 1 else types[offset - first]
                if kind == RENEW and not renew:
                    raise ShareError(errors.INVALID_RECORD_STATE)
                changes[offset] = (entry, kind)
        for entry, kind in changes.values():
            if kind == RENEW:
                entry[3] = now + renew_ms
                continue
            self.acquired -= 1
            entry[2] = None
            if kind == ACCEPT:
                entry[0] = ACKNOWLEDGED
            elif kind == RELEASE:
                entry[0] = ARCHIVED if entry[1] >= limit else AVAILABLE
            else:  # REJECT, GAP
                entry[0] = ARCHIVED
        written = [offset for offset, (_, kind) in changes.items() if kind != RENEW]
        if written:
            self._written(written)
        self._advance()
        return written

    def release(self, member, limit, now=None):
        """Give back what member holds (all of it, or with now, only records whose lock ran out by then): AVAILABLE
        again, or ARCHIVED once delivered limit times. True when anything was given back."""
        if not self.acquired:
            return False
        released = []
        for offset, entry in self.records.items():
            if entry[0] == ACQUIRED and (member is None or entry[2] == member) and (now is None or entry[3] <= now):
                entry[0] = ARCHIVED if entry[1] >= limit else AVAILABLE
                entry[2] = None
                self.acquired -= 1
                released.append(offset)
        if released:
            self._written(released)
        self._advance()
        return bool(released)

    def _written(self, offsets):
        """A change the share coordinator is told of (these offsets changed), with the start as it was before it."""
        self.shown_start = self.start
        self.shown_complete = sum(1 for e in self.records.values() if e[0] in DONE)  # those after shown_start
        self.shown_batches = self._runs()
        self.shown_changes = self._runs(sorted(offsets))

    def _advance(self):
        records = self.records
        while self.start < self.end:
            entry = records.get(self.start)
            if entry is not None and entry[0] not in DONE:
                break
            records.pop(self.start, None)
            self.start += 1

    def merge(self, start, batches):
        """A share partition leader's write (WriteShareGroupState): a new start (-1: unchanged) and records'
        [(first, last, state, deliveries)], all applied or none: ShareError INVALID_REQUEST for a range backwards,
        a state no written record has, a start below 0, or records further than MAX_WRITTEN_SPAN past the start.
        Records the log does not have yet may be written (as Kafka's share coordinator takes them); they are
        handed out only once the log has them (acquire's upto)."""
        base = start if start != UNINITIALIZED else self.start
        if base == UNINITIALIZED:
            base = min((first for first, _, _, _ in batches), default=UNINITIALIZED)
        if base < UNINITIALIZED or (base == UNINITIALIZED and batches) or (start < UNINITIALIZED):
            raise ShareError(errors.INVALID_REQUEST)
        base = max(base, self.start)
        for first, last, state, count in batches:
            if first > last or state not in (AVAILABLE, ACKNOWLEDGED, ARCHIVED) or count < 0 or \
                    last - base >= MAX_WRITTEN_SPAN:
                raise ShareError(errors.INVALID_REQUEST)
        if self.start == UNINITIALIZED:
            self.start = self.end = base
        elif base > self.start:
            self.follow_log_start(base)
        for first, last, state, count in batches:
            for offset in range(max(first, self.start), last + 1):
                old = self.records.get(offset)
                if old is not None and old[0] == ACQUIRED:
                    self.acquired -= 1
                self.records[offset] = [state, count, None, 0]
            self.end = max(self.end, last + 1)
        for offset in range(self.start, self.end):
            self.records.setdefault(offset, [AVAILABLE, 0, None, 0])
        self._written(o for first, last, _, _ in batches for o in range(max(first, self.start), last + 1))
        self._advance()

    def next_lock(self):
        return min((e[3] for e in self.records.values() if e[0] == ACQUIRED), default=None) if self.acquired \
            else None

    # ---- what is kept -----------------------------------------------------------------------------------------

    def _runs(self, offsets=None):
        """[[first, last, state, deliveries]] of these offsets (all by default), past the start; an acquired record
        as it was before it was acquired, and an available one never delivered left out (it is as the log has it)."""
        runs = []
        for offset in sorted(self.records) if offsets is None else offsets:
            entry = self.records.get(offset)
            if entry is None:
                continue
            state, count = entry[0], entry[1]
            if state == ACQUIRED:
                state, count = AVAILABLE, count - 1
            if state == AVAILABLE and count == 0 and offsets is None:
                continue
            if runs and runs[-1][1] == offset - 1 and runs[-1][2:] == [state, count]:
                runs[-1][1] = offset
            else:
                runs.append([offset, offset, state, count])
        return runs

    def written_as_is(self):
        """What the share coordinator is shown: this partition as it is now."""
        self.shown_start = self.start
        self.shown_complete = sum(1 for e in self.records.values() if e[0] in DONE)
        self.shown_batches = self._runs()

    @classmethod
    def kept(cls, start, state_epoch, complete, batches):
        """A share partition as the share coordinator's log keeps it: a snapshot (its start offset, how many past
        it are done, and the runs of records past it whose state is written); replay() then applies each later
        update, and loaded() makes it ready."""
        partition = cls(start, state_epoch)
        partition.replay(start, complete, batches)
        return partition

    def replay(self, start, complete, batches):
        """An update from the share coordinator's log: its start (-1: unchanged), and runs replacing the state of
        their offsets; offsets below the start are done with."""
        if start != UNINITIALIZED:
            self.start = self.shown_start = start
            for offset in [o for o in self.records if o < start]:
                del self.records[offset]
        for first, last, state, count in batches:
            for offset in range(max(first, self.start), last + 1):
                self.records[offset] = [state, count, None, 0]
        if complete != UNINITIALIZED:
            self.shown_complete = complete

    def loaded(self):
        """Ready once its records are replayed: what it showed is what was last written, records handed out but
        never finished are to be sent again, and those done with at the start are passed."""
        self.shown_batches = self._runs()
        self.end = max([self.start, *(o + 1 for o in self.records)])
        for offset in range(self.start, self.end):
            self.records.setdefault(offset, [AVAILABLE, 0, None, 0])
        self._advance()
        return self


def _state_batches(value_class, runs):
    return [value_class.StateBatch(first_offset=first, last_offset=last, delivery_state=state, delivery_count=count)
            for first, last, state, count in runs]


def _ranges(got, batch_size):
    """[(first, last, deliveries)] of acquired offsets: a range runs over consecutive offsets of one delivery
    count, and a range of new records is cut where a log batch starts once it holds batch_size records."""
    out = []
    for offset, count, base in got:
        if out:
            first, last, deliveries = out[-1]
            cut = base is not None and offset == base and last + 1 - first >= batch_size > 0
            if offset == last + 1 and count == deliveries and not cut:
                out[-1] = (first, offset, count)
                continue
        out.append((offset, offset, count))
    return out


class ShareStates:
    """Every share partition of every share group, kept in the share coordinator's logs
    (log_dir/__share_group_state-N, each share partition in the one Kafka's hashing picks: coordinator_logs.py) in
    Kafka's records: a partition's first write, and every snapshot_every-th after it, is a snapshot of its whole
    state; the others are updates holding what changed. A partition deleted is a tombstone of its snapshot key."""

    def __init__(self, log_dir, files=None, snapshot_every=500, partitions=1):
        self.partitions = {}  # (group id, topic id, partition) -> SharePartition
        self.snapshot_every = snapshot_every
        self.written = 0  # records written since the log was last written afresh
        self.on_append = None  # called with (partition index, the batches of each write): the broker serves the logs
        self._kept = {}  # key -> [snapshot epoch, created ms, updates since the snapshot, last written]
        self.logs = CoordinatorLogs(log_dir, SHARE_STATE_TOPIC, partitions, files)
        in_json = set()
        segments = [(partition_log.directory, segment) for partition_log in self.logs
                    for segment in partition_log.segments]
        for directory, segment in segments:
            for batch in iter_batches(segment.read(0, segment.size)):
                for record in batch:
                    try:
                        if legacy.is_json(record.key):
                            key, value = legacy.read_share_record(record.key, record.value)
                            in_json.add(key)
                            partition = None if value is None else SharePartition.kept(
                                value["start"], value.get("state_epoch", 0), UNINITIALIZED, value["batches"])
                        else:
                            key = self._replay(record.key, record.value, batch.base_timestamp)
                            in_json.discard(key)
                            continue
                        if partition is None:
                            self.partitions.pop(key, None)
                        else:
                            self.partitions[key] = partition
                    except (DecodeError, TypeError, ValueError, KeyError) as e:
                        log.error("%s: the record at offset %d is not a share partition's state (%s); skipped",
                                  directory, record.offset, e)
        for partition in self.partitions.values():
            partition.loaded()
        for key in in_json & self.partitions.keys():  # shown as it is: what was shown before is not kept
            self.partitions[key].written_as_is()
        if in_json & self.partitions.keys():  # written again in Kafka's records, which win from here on
            self._write(sorted(in_json & self.partitions.keys(), key=str), snapshot=True)

    def _replay(self, key_data, value_data, timestamp):
        record_type, key = decode_share_key(key_data)
        if value_data is None:
            if record_type == SHARE_SNAPSHOT:
                self.partitions.pop(key, None)
                self._kept.pop(key, None)
            return key
        value, _ = decode_share_value(value_data, record_type)
        batches = [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in value.state_batches
                   if b.last_offset - max(b.first_offset, value.start_offset) < MAX_WRITTEN_SPAN]
        if len(batches) != len(value.state_batches):
            raise ValueError("a run of records reaches further than any share partition keeps in flight")
        if record_type == SHARE_SNAPSHOT:
            self.partitions[key] = SharePartition.kept(value.start_offset, value.state_epoch,
                                                       value.delivery_complete_count, batches)
            self._kept[key] = [value.snapshot_epoch, value.create_timestamp, 0, None]
        elif key in self.partitions:  # an update without a snapshot before it has nothing to change
            self.partitions[key].replay(value.start_offset, value.delivery_complete_count, batches)
            kept = self._kept.setdefault(key, [value.snapshot_epoch, timestamp, 0, None])
            kept[2] += 1
        return key

    def _write(self, keys, snapshot=False, leader_epoch=0):
        """Write what changed of these share partitions (a tombstone for one no longer here), in one batch: nothing
        for one whose shown state is as last written. Once the log holds many more records than there are
        partitions, it is written afresh with a snapshot of each, as a compacted topic would keep them."""
        if not keys:
            return
        if self.written > 4 * len(self.partitions) + 10_000:
            self._rewrite()
            return
        by_index = {}
        for key in keys:
            by_index.setdefault(self.logs.index_of(share_key(*key)), []).append(key)
        for log_index, in_partition in by_index.items():
            self._write_to(log_index, in_partition, snapshot, leader_epoch)

    def _write_to(self, log_index, keys, snapshot, leader_epoch):
        builder = RecordBatchBuilder()
        now = int(time.time() * 1000)
        for key in keys:
            group_id, topic_id, index = key
            partition = self.partitions.get(key)
            if partition is None:
                if self._kept.pop(key, None) is not None:
                    builder.append(encode_share_key(SHARE_SNAPSHOT, group_id, topic_id, index), None, timestamp=now)
                continue
            shown = (partition.state_epoch, partition.shown_start, partition.shown_complete, partition.shown_batches)
            kept = self._kept.get(key)
            if kept is not None and kept[3] == shown and not snapshot:
                continue
            if kept is None or snapshot or kept[2] + 1 >= self.snapshot_every:
                epoch, created = (0, now) if kept is None else (kept[0] + 1, kept[1])
                self._kept[key] = [epoch, created, 0, shown]
                value = ShareSnapshotValue(
                    snapshot_epoch=epoch, state_epoch=partition.state_epoch, leader_epoch=leader_epoch,
                    start_offset=partition.shown_start, delivery_complete_count=partition.shown_complete,
                    create_timestamp=created, write_timestamp=now,
                    state_batches=_state_batches(ShareSnapshotValue, partition.shown_batches))
                builder.append(encode_share_key(SHARE_SNAPSHOT, group_id, topic_id, index),
                               encode_share_value(value), timestamp=now)
            else:
                kept[2] += 1
                kept[3] = shown
                value = ShareUpdateValue(
                    snapshot_epoch=kept[0], leader_epoch=leader_epoch, start_offset=partition.shown_start,
                    delivery_complete_count=partition.shown_complete,
                    state_batches=_state_batches(ShareUpdateValue, partition.shown_changes))
                builder.append(encode_share_key(SHARE_UPDATE, group_id, topic_id, index), encode_share_value(value),
                               timestamp=now)
        if not len(builder):
            return
        self.written += len(builder)
        data = builder.build()
        batches = parse_batches(data)
        self.logs.logs[log_index].append(data, batches)
        if self.on_append is not None:
            self.on_append(log_index, batches)

    def _rewrite(self):
        """A new segment in each log holding a snapshot of each of its share partitions; the older segments go."""
        for partition_log in self.logs:
            partition_log.roll()
        self.written = 0
        keys = list(self.partitions)
        for at in range(0, len(keys), 1000):
            self._write(keys[at:at + 1000], snapshot=True)
        for partition_log in self.logs:  # a crash before this: both are read, in order
            partition_log.flush()
            partition_log.delete_segments_before(len(partition_log.segments) - 1)

    def save(self, *keys, leader_epoch=0):
        """Write what the share coordinator is shown of these partitions, where it changed."""
        self._write(list(keys), leader_epoch=leader_epoch)

    def get(self, group_id, topic_id, index):
        return self.partitions.get((group_id, topic_id, index))

    def initialize(self, group_id, partitions, state_epoch, start=UNINITIALIZED, again=False):
        """Share state for {topic id: partitions} of a group: kept as it is where there is some, unless a start is
        given (AlterShareGroupOffsets) or again (InitializeShareGroupState), which start it over."""
        made = []
        for topic_id, indexes in partitions.items():
            for index in indexes:
                key = (group_id, topic_id, index)
                if key in self.partitions and start == UNINITIALIZED and not again:
                    continue
                self.partitions[key] = SharePartition(start, state_epoch)
                made.append(key)
        self._write(made)

    def delete(self, group_id, topic_id, indexes=None):
        """Forget a group's share state of a topic (all its partitions, or those indexes)."""
        gone = [k for k in self.partitions if k[0] == group_id and k[1] == topic_id
                and (indexes is None or k[2] in indexes)]
        for key in gone:
            del self.partitions[key]
        self._write(gone)

    def delete_group(self, group_id):
        gone = [k for k in self.partitions if k[0] == group_id]
        for key in gone:
            del self.partitions[key]
        self._write(gone)

    def forget_topic(self, topic_id):
        gone = [k for k in self.partitions if k[1] == topic_id]
        for key in gone:
            del self.partitions[key]
        self._write(gone)

    def of_group(self, group_id):
        return {k: p for k, p in self.partitions.items() if k[0] == group_id}

    def release(self, group_id, member_id, keys, limit_of):
        """Give back what a member holds in these partitions [(topic id, index)]; True when anything was."""
        changed = []
        for topic_id, index in keys:
            key = (group_id, topic_id, index)
            partition = self.partitions.get(key)
            if partition is not None and partition.release(member_id, limit_of(group_id)):
                changed.append(key)
        self._write(changed)
        return bool(changed)

    def expire_locks(self, now, limit_of):
        """Release the records whose lock ran out by now; True when any did."""
        changed = []
        for key, partition in self.partitions.items():
            lock = partition.next_lock()
            if lock is not None and lock <= now and partition.release(None, limit_of(key[0]), now):
                changed.append(key)
        self._write(changed)
        return bool(changed)

    def close(self):
        self.logs.close()


class ShareSession:
    __slots__ = ("group_id", "member_id", "node", "epoch", "partitions", "connection")

    def __init__(self, group_id, member_id, connection, node):
        self.group_id = group_id
        self.member_id = member_id
        self.node = node  # the broker it is open on: each broker of a cluster has its own, as on Kafka
        self.epoch = 1  # the epoch the next request must carry
        self.partitions = {}  # (topic id, partition) -> None, in the order they came
        self.connection = connection

    def next_epoch(self):
        self.epoch = 1 if self.epoch == 2**31 - 1 else self.epoch + 1


class ShareSessions:
    """(group id, member id, broker) -> ShareSession, at most limit of them on each broker."""

    def __init__(self, limit):
        self.limit = limit
        self.sessions = {}

    def get(self, group_id, member_id, node):
        return self.sessions.get((group_id, member_id, node))

    def open(self, group_id, member_id, connection, node):
        """A new session on broker node (replacing the member's old one there, which is returned too; as on Kafka,
        what the member held in it stays held until acknowledged or its lock runs out), or ShareError
        SHARE_SESSION_LIMIT_REACHED."""
        key = (group_id, member_id, node)
        old = self.sessions.pop(key, None)
        if sum(1 for k in self.sessions if k[2] == node) >= self.limit():
            if old is not None:
                self.sessions[key] = old
            raise ShareError(errors.SHARE_SESSION_LIMIT_REACHED)
        session = self.sessions[key] = ShareSession(group_id, member_id, connection, node)
        return session, old

    def close(self, session):
        return self.sessions.pop((session.group_id, session.member_id, session.node), None)

    def of_connection(self, connection):
        return [s for s in self.sessions.values() if s.connection is connection]
