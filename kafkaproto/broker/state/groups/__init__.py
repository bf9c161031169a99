"""Every group this broker coordinates, and the offsets they commit.

``Groups.groups`` maps a group id to its group object; each has a ``kind``
("classic": the JoinGroup/SyncGroup protocol, in classic.py; "consumer":
KIP-848's, in consumer.py, with the assignors in assignors.py) and a
``state``. Committed offsets live in their own store (offsets.py), whatever
kind of group commits them, and survive a restart; as in Kafka, a group id
with offsets but no members is an Empty classic group. What a group keeps of
its membership (stored.py) goes to the same log, as Kafka's coordinator
writes it to ``__consumer_offsets``: ``save(group id)`` writes what changed
since the last write (handlers call it after a request that may change a
group; timers and expired sessions save what they changed), and start-up
loads the groups again. Time moves on through ``tick(now)``: handlers call it
before they look at a group, the server's housekeeping calls it too.

Finding a group costs one dict lookup, however many groups there are: the
groups' timers are kept in a heap of (deadline, group id), so ``tick`` and
``next_deadline`` look only at the groups whose time has come. A group is put
back in the heap after anything may have changed its timers: when it is looked
up (``group``), stored in the table, or saved.

Committed offsets expire as Kafka's do (OffsetMetadataManager and each group
kind's offset expiration condition), checked every
offsets.retention.check.interval.ms: those of an Empty classic group that had
members expire offsets.retention.minutes after it became Empty (after their
commit when that time is not known, as for a group loaded at start-up); those
of a group that never had members (a standalone committer) and of a KIP-848
group, retention after their commit; in a Stable classic group of the
consumer protocol, and in a KIP-848 group with members, only the offsets of
topics no member subscribes to expire. Then an Empty group left without
offsets is removed.
"""

import heapq
import logging
import time

from .classic import (COMPLETING, DEAD, EMPTY, PREPARING, STABLE, ClassicGroup, JoinRequest, JoinResult,
                      SyncResult, Waiter)
from .embedded import MalformedProtocol, read_subscription
from .offsets import OFFSETS_DIR, OffsetStore
from .stored import changes, load

log = logging.getLogger("kafkaproto.broker")
__all__ = ["COMPLETING", "DEAD", "EMPTY", "PREPARING", "STABLE", "ClassicGroup", "Groups", "JoinRequest",
           "JoinResult", "OFFSETS_DIR", "SyncResult", "Waiter"]


class GroupTable(dict):
    """group id -> group, shared by every coordinator; save(group id) writes what changed of a group. The ids of
    groups stored in it are noted in ``touched`` (their timers are looked at again)."""

    def __init__(self, save):
        super().__init__()
        self.save = save
        self.touched = set()

    def __setitem__(self, group_id, group):
        super().__setitem__(group_id, group)
        self.touched.add(group_id)


class Groups:
    def __init__(self, config, log_dir, files=None):
        self.config = config
        self.groups = GroupTable(self.save)
        self._timers = []  # heap of (deadline, sequence, group id); an entry not in _scheduled is stale
        self._scheduled = {}  # group id -> (deadline, sequence) of its one live entry in _timers
        self._sequence = 0
        self._empty_since = {}  # group id -> when (ms since the epoch) this process saw it become Empty
        self.offsets = OffsetStore(log_dir, files)
        now = time.monotonic()
        for group_id, records in self.offsets.group_records.items():
            try:
                group = load(group_id, records, config, now)
            except (KeyError, TypeError, ValueError) as e:  # not this broker's layout: the members join again
                log.error("%s: the metadata of group %r cannot be read (%r); its members will join again",
                          self.offsets.log.directory, group_id, e)
                continue
            if group is not None:
                self.groups[group_id] = group
        for group_id in self.offsets.by_group:
            if group_id not in self.groups:
                self.groups[group_id] = ClassicGroup(group_id, config)

    def save(self, group_id):
        """Write what changed of the group's kept state since it was last written (nothing, for a heartbeat);
        a group no longer here leaves tombstones."""
        self.groups.touched.add(group_id)
        self._note_state(group_id)
        entries = changes(group_id, self.offsets.group_records.get(group_id, {}), self.groups.get(group_id))
        if entries:
            self.offsets.write_group_records(entries)

    def group(self, group_id, create=False):
        """The group of that id (of any kind), or None; create makes an empty classic group."""
        group = self.groups.get(group_id)
        if group is None and create:
            group = self.groups[group_id] = ClassicGroup(group_id, self.config)
        elif group is not None:
            self.groups.touched.add(group_id)  # the caller may change its timers
        return group

    def replace(self, group_id):
        """An empty classic group in place of a group of another kind (an empty one converts freely)."""
        group = self.groups[group_id] = ClassicGroup(group_id, self.config)
        return group

    def tick(self, now):
        """Fire every group timer due by now (monotonic seconds); True when any did. Only the groups whose
        earliest deadline has come are looked at. A timer that fails is logged with its group, and the other
        groups' timers fire all the same."""
        self._reschedule_touched()
        fired = False
        timers = self._timers
        while timers and timers[0][0] <= now:
            deadline, sequence, group_id = heapq.heappop(timers)
            if self._scheduled.get(group_id) != (deadline, sequence):
                continue  # stale: the group was scheduled again, or is gone
            del self._scheduled[group_id]
            group = self.groups.get(group_id)
            if group is None:
                continue
            changed = False
            try:
                while group.fire_next(now):
                    changed = True
            except Exception:
                log.exception("group %r: a timer failed; the group's other timers and the other groups go on",
                              group_id)
                changed = True
            if changed:
                fired = True
                self.save(group_id)
            self._schedule(group_id, group)
        return fired

    def next_deadline(self):
        """The earliest deadline of any group's timers (monotonic seconds), or None."""
        self._reschedule_touched()
        timers = self._timers
        while timers:
            deadline, sequence, group_id = timers[0]
            if self._scheduled.get(group_id) == (deadline, sequence):
                return deadline
            heapq.heappop(timers)
        return None

    def _reschedule_touched(self):
        touched = self.groups.touched
        while touched:
            group_id = touched.pop()
            group = self.groups.get(group_id)
            if group is not None:
                self._schedule(group_id, group)

    def _schedule(self, group_id, group):
        """Put a group's earliest deadline in the heap, unless an earlier (or equal) one is there already: an
        entry that comes due before the group's real deadline finds nothing to fire and puts the real one in."""
        deadline = group.next_deadline()
        if deadline is None:
            return
        scheduled = self._scheduled.get(group_id)
        if scheduled is not None and scheduled[0] <= deadline:
            return
        self._sequence += 1
        self._scheduled[group_id] = (deadline, self._sequence)
        heapq.heappush(self._timers, (deadline, self._sequence, group_id))
        if len(self._timers) > 2 * len(self._scheduled) + 1024:  # mostly stale entries: rebuilt from the live ones
            self._timers = [(d, s, g) for g, (d, s) in self._scheduled.items()]
            heapq.heapify(self._timers)

    def _note_state(self, group_id):
        """Remember when a group became Empty (Kafka's currentStateTimestamp, for offsets' expiry)."""
        group = self.groups.get(group_id)
        if group is None or group.state != EMPTY:
            self._empty_since.pop(group_id, None)
        elif group_id not in self._empty_since:
            self._empty_since[group_id] = int(time.time() * 1000)

    def commit(self, group_id, offsets):
        """offsets: [((topic, partition), (offset, leader epoch, metadata, commit time ms))]."""
        self.group(group_id, create=True)
        self.offsets.commit(group_id, offsets)

    def committed(self, group_id):
        return self.offsets.committed(group_id)

    def expire_offsets(self, now_ms, retention_ms):
        """Drop the offsets whose retention is over (Kafka's rules: see the module's docstring), then the empty
        groups left without offsets; the number of offsets dropped."""
        gone = []
        for group_id, offsets in self.offsets.by_group.items():
            group = self.groups.get(group_id)
            rule = self._expiry(group_id, group)
            if rule is None:
                continue
            since, subscribed = rule
            for (topic, partition), value in offsets.items():
                if (subscribed is None or topic not in subscribed) and \
                        now_ms - (since if since is not None else value[3]) >= retention_ms:
                    gone.append((group_id, topic, partition))
        self.offsets.drop(gone)
        for group_id in [g for g, group in self.groups.items() if group.state == EMPTY
                         and not self.offsets.committed(g) and not self._active(g)]:
            del self.groups[group_id]
            self._empty_since.pop(group_id, None)
            self.save(group_id)
        return len(gone)

    def _expiry(self, group_id, group):
        """How a group's offsets expire: None (none do), or (the time retention counts from, None for each
        offset's commit time; the topics whose offsets stay, None for none)."""
        if group is None or group.kind != "classic":
            if group is None or not group.members:
                return None, None
            subscribed = set()
            for member in group.members.values():
                subscribed |= group.topics_of(member)
            return None, subscribed
        if group.pending_join:
            return None
        if not group.protocol_type:  # it never had members: a standalone committer
            return None, None
        if group.state == EMPTY:
            return self._empty_since.get(group_id), None
        if group.state == STABLE and group.protocol_type == "consumer":
            subscribed = set()
            try:
                for member in group.members.values():
                    subscribed.update(read_subscription(member.metadata(group.protocol_name)).topics)
            except (MalformedProtocol, ValueError, IndexError):
                return None  # Kafka too keeps all when it cannot read what the members subscribe to
            return None, subscribed
        return None

    def _active(self, group_id):
        group = self.groups.get(group_id)
        return group is not None and (group.state != EMPTY or bool(group.pending_join))

    def forget_topic(self, topic):
        """Drop the offsets of a deleted topic, so a topic re-created under its name starts clean."""
        self.offsets.forget_topic(topic)

    def delete(self, group_id):
        """Forget a group: its offsets and its metadata, tombstoned together."""
        self.groups.pop(group_id, None)
        self.offsets.delete_group(group_id)

    def close(self):
        self.offsets.close()
