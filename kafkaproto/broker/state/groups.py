"""Classic consumer groups: membership, rebalances, and committed offsets that survive a restart.

A rebalance works as Kafka's classic protocol does. A member joining (or
leaving, or timing out, or a static member coming back under a new member id)
moves the group to PreparingRebalance; the JoinGroup requests of the members
wait until every known member has joined again, or the rebalance timeout has
passed (members that did not rejoin are dropped); then a new generation
starts, the first member to have joined leads, and every JoinGroup is
answered. The leader's SyncGroup brings the assignments; the other members'
SyncGroups wait for it. A new, empty group waits
group.initial.rebalance.delay.ms for more members before its first generation.

Committed offsets are records in their own log, replayed at start-up.
"""

import json
import os
import time
import uuid

from ... import errors
from ...records import RecordBatchBuilder, iter_batches
from .log import PartitionLog, parse_batches

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"
OFFSETS_DIR = "__consumer_offsets-0"


class Member:
    __slots__ = ("member_id", "instance_id", "client_id", "client_host", "session_timeout_ms", "rebalance_timeout_ms",
                 "protocol_type", "protocols", "assignment", "joined", "last_seen", "join_order")

    def __init__(self, member_id, instance_id, client_id, client_host):
        self.member_id = member_id
        self.instance_id = instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.session_timeout_ms = 10000
        self.rebalance_timeout_ms = 60000
        self.protocol_type = ""
        self.protocols = []  # [(name, metadata)] in the member's order of preference
        self.assignment = b""
        self.joined = False  # has sent JoinGroup in the rebalance under way
        self.last_seen = 0.0
        self.join_order = 0


class Group:
    def __init__(self, group_id):
        self.group_id = group_id
        self.state = EMPTY
        self.generation = 0
        self.protocol_type = None
        self.protocol_name = None
        self.leader = None
        self.members = {}  # member id -> Member
        self.static = {}  # group instance id -> member id
        self.rebalance_deadline = None  # monotonic seconds
        self.initial_delay_until = None
        self.assigned = False  # the leader's SyncGroup for this generation has arrived
        self.joins = 0
        self.pending_ids = set()  # member ids handed out with MEMBER_ID_REQUIRED, not joined yet

    def member(self, member_id, instance_id=None):
        """(Member or None, error) for a request naming a member."""
        if instance_id is not None:
            known = self.static.get(instance_id)
            if known is not None and known != member_id:
                return None, errors.FENCED_INSTANCE_ID
        member = self.members.get(member_id)
        return member, (errors.NONE if member is not None else errors.UNKNOWN_MEMBER_ID)

    def prepare_rebalance(self, now, initial_delay_ms=0):
        if self.state == PREPARING:
            return
        self.state = PREPARING
        self.assigned = False
        timeout = max((m.rebalance_timeout_ms for m in self.members.values()), default=0)
        self.rebalance_deadline = now + timeout / 1000
        self.initial_delay_until = now + initial_delay_ms / 1000 if self.generation == 0 and initial_delay_ms else None
        for member in self.members.values():
            member.joined = False

    def try_complete_join(self, now):
        """Start the next generation when every member has joined (or time is up); True when it did."""
        if self.state != PREPARING:
            return False
        if self.initial_delay_until is not None and now < self.initial_delay_until:
            return False
        waiting = [m for m in self.members.values() if not m.joined]
        if waiting and now < self.rebalance_deadline:
            return False
        for member in waiting:
            self.remove(member.member_id)
        if not self.members:
            self.state = EMPTY
            self.generation += 1
            self.leader = self.protocol_name = None
            return True
        self.generation += 1
        self.protocol_name = self._choose_protocol()
        joined = sorted(self.members.values(), key=lambda m: m.join_order)
        if self.leader not in self.members:
            self.leader = joined[0].member_id
        self.state = COMPLETING
        for member in self.members.values():
            member.assignment = b""
            member.last_seen = now
        return True

    def _choose_protocol(self):
        """The protocol every member supports that the most members rank first (Kafka's vote)."""
        common = None
        for member in self.members.values():
            names = {name for name, _ in member.protocols}
            common = names if common is None else common & names
        votes = {}
        for member in self.members.values():
            for name, _ in member.protocols:
                if name in common:
                    votes[name] = votes.get(name, 0) + 1
                    break
        return max(sorted(votes), key=lambda name: votes[name]) if votes else None

    def supports(self, protocol_type, protocols):
        if not self.members:
            return True
        if protocol_type != self.protocol_type:
            return False
        names = {name for name, _ in protocols}
        return all(names & {n for n, _ in m.protocols} for m in self.members.values())

    def remove(self, member_id):
        member = self.members.pop(member_id, None)
        if member is not None and member.instance_id is not None and self.static.get(member.instance_id) == member_id:
            del self.static[member.instance_id]
        if self.leader == member_id:
            self.leader = None
        return member

    def metadata_of(self, member):
        return next((meta for name, meta in member.protocols if name == self.protocol_name), b"")


class Groups:
    """Every group this broker coordinates, and their committed offsets (kept in log_dir)."""

    def __init__(self, config, log_dir, files=None):
        self.config = config
        self.groups = {}
        self.offsets = {}  # group id -> {(topic, partition): (offset, leader epoch, metadata, commit time ms)}
        self.log = PartitionLog(os.path.join(log_dir, OFFSETS_DIR), files=files)
        for segment in self.log.segments:
            for batch in iter_batches(segment.read(0, segment.size)):
                for record in batch:
                    self._apply(json.loads(record.key), None if record.value is None else json.loads(record.value))

    def _apply(self, key, value):
        group_id, topic, partition = key
        if value is None:
            self.offsets.get(group_id, {}).pop((topic, partition), None)
        else:
            self.offsets.setdefault(group_id, {})[(topic, partition)] = tuple(value)

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

    def group(self, group_id, create=False):
        group = self.groups.get(group_id)
        if group is None and create:
            group = self.groups[group_id] = Group(group_id)
        return group

    def new_member_id(self, client_id):
        return f"{client_id}-{uuid.uuid4()}"

    def commit(self, group_id, offsets):
        """offsets: [((topic, partition), (offset, leader epoch, metadata, commit time ms))]."""
        self._write([((group_id, topic, partition), list(value)) for (topic, partition), value in offsets])

    def committed(self, group_id):
        return self.offsets.get(group_id, {})

    def expire_offsets(self, now_ms, retention_ms):
        """Drop the committed offsets of groups without members that are older than retention_ms (Kafka's
        offsets.retention.minutes, KIP-211); the number dropped."""
        gone = []
        for group_id, offsets in self.offsets.items():
            group = self.groups.get(group_id)
            if group is not None and group.members:
                continue
            gone += [((group_id, t, p), None) for (t, p), value in offsets.items() if value[3] < now_ms - retention_ms]
        self._write(gone)
        return len(gone)

    def forget_topic(self, topic):
        """Drop the offsets of a deleted topic, so a topic re-created under its name starts clean."""
        self._write([((group_id, t, p), None) for group_id, offsets in self.offsets.items()
                     for (t, p) in list(offsets) if t == topic])

    def delete(self, group_id):
        self._write([((group_id, t, p), None) for (t, p) in list(self.offsets.get(group_id, {}))])
        self.offsets.pop(group_id, None)
        self.groups.pop(group_id, None)

    def expire(self, now):
        """Drop members whose session timed out; True when anything changed."""
        changed = False
        for group in self.groups.values():
            for member in list(group.members.values()):
                if group.state == PREPARING and member.joined:
                    continue  # a member waiting in JoinGroup is alive
                if now - member.last_seen > member.session_timeout_ms / 1000:
                    self.leave(group, member.member_id, now)
                    changed = True
            if group.state == PREPARING and group.try_complete_join(now):
                changed = True
        return changed

    @staticmethod
    def leave(group, member_id, now):
        """A member leaves (or is dropped): the rest rebalance; a group left empty starts a new generation."""
        group.remove(member_id)
        if group.members:
            group.prepare_rebalance(now)
        else:
            group.state = EMPTY
            group.generation += 1
            group.leader = group.protocol_name = None

    def close(self):
        self.log.close()
