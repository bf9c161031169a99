"""The group coordinator: the one owner of every group this broker coordinates, and of their committed offsets.

Handlers read a request's fields, call one method here and build the answer from what it returns. Each
method finds the group and routes by its kind, as Kafka's GroupMetadataManager does: "classic" groups (the
JoinGroup/SyncGroup protocol) follow their own rules in classic.py; "consumer" groups (KIP-848) are run by
the rules in consumer.py, which also answer the classic members such a group takes in; "share" groups (KIP-932)
by share.py's, "streams" groups (KIP-1071) by streams.py's. Groups move between the classic and consumer kinds
here: an empty group of either becomes the other when a member of the other protocol comes; an empty classic group
becomes a streams group when a streams member joins, and an empty streams group a classic one. A share group stays
one: the other protocols are refused it, as Kafka refuses them, and it is refused theirs.

Time is the broker's one clock (state/clock.py: milliseconds of the monotonic clock), passed to every method
as ``now``. Each group says when its next timer is due (``next_deadline``); those deadlines are kept in a heap
of (deadline, group id), so ``tick`` looks only at the groups whose time has come and finding a group costs
one dict lookup, however many there are. A group is put back in the heap after anything may have changed
its timers: whenever a method here has looked it up.

Committed offsets live in their own store (offsets.py), whatever kind of group commits them, and survive a
restart; as in Kafka, a group id with offsets but no members is an Empty classic group. What a group keeps
of its membership (stored.py) goes to the same log, in the records Kafka's coordinator writes to
``__consumer_offsets``: every method that may change a group writes what changed before it returns, so an
answer never tells of a change that a restart would lose; start-up loads the groups again.

Committed offsets expire as Kafka's do (OffsetMetadataManager and each group kind's offset expiration
condition), checked every offsets.retention.check.interval.ms: those of an Empty classic group that had
members expire offsets.retention.minutes after it became Empty (its record keeps that time across a restart, as
Kafka's currentStateTimestamp does; after their commit when that time is not known, as for a group an earlier
version wrote); those of a group that never had members (a standalone committer)
and of a KIP-848 group, retention after their commit; in a Stable classic group of the consumer protocol,
and in a KIP-848 group with members, only the offsets of topics no member subscribes to expire. Then an
Empty group left without offsets is removed.
"""

import heapq
import logging
import time

from .... import errors
from ..clock import clock_ms
from . import legacy
from .classic import EMPTY, STABLE, ClassicGroup, JoinResult, SyncResult
from .consumer import ConsumerCoordinator
from .consumer_group import ConsumerGroup, GroupError
from .embedded import MalformedProtocol, read_subscription
from .offsets import OffsetStore
from .share import ShareRules
from .streams import StreamsRules
from .stored import GROUP_METADATA, changes, load

log = logging.getLogger("kafkaproto.broker")


class GroupTable(dict):
    """group id -> group. The ids of groups stored in it are noted in ``touched`` (their timers are looked at
    again); save(group id) writes what changed of a group (the KIP-848 rules save the groups their timers
    change)."""

    def __init__(self, save):
        super().__init__()
        self.save = save
        self.touched = set()

    def __setitem__(self, group_id, group):
        super().__setitem__(group_id, group)
        self.touched.add(group_id)


class GroupCoordinator:
    def __init__(self, config, cluster, log_dir, files=None, now=None):
        self.config = config
        self.groups = GroupTable(self.save)
        self._timers = []  # heap of (deadline, sequence, group id); an entry not in _scheduled is stale
        self._scheduled = {}  # group id -> (deadline, sequence) of its one live entry in _timers
        self._sequence = 0
        self._empty_since = {}  # group id -> when (ms since the epoch) this process saw it become Empty
        self.consumer = ConsumerCoordinator(self.groups, cluster, config)  # the KIP-848 rules
        self.share = ShareRules(self.groups, cluster, config, self._initialize_share_state)
        self.share_states = None  # state/shares.py's ShareStates, set by the broker's state
        self.streams = StreamsRules(self.groups, cluster, config)
        # group id -> {record key: (what the record's time times, that wall-clock time)}: see stored.records_of
        self._stamps = {}
        self.offsets = OffsetStore(log_dir, files, config["offsets.topic.num.partitions"])
        now = clock_ms() if now is None else now
        legacy_groups = set(self.offsets.legacy_groups())
        rewrite = []  # the groups an earlier version wrote that loaded: written again in Kafka's records below
        for group_id, records in self.offsets.group_records.items():
            try:
                if group_id in legacy_groups:
                    group, stamps = legacy.load(group_id, {k: v for k, v in records.items() if isinstance(v, dict)},
                                                config, now), {}
                else:
                    group, stamps = load(group_id, records, config, now, cluster)
            except (KeyError, TypeError, ValueError) as e:  # not a layout this broker reads: the members join again
                log.error("%s: the metadata of group %r cannot be read (%r); its members will join again",
                          self.offsets.directory, group_id, e)
                continue
            if group is not None:
                self.groups[group_id] = group
                self._stamps[group_id] = stamps
                if group_id in legacy_groups:
                    rewrite.append(group_id)
                since = stamps.get((GROUP_METADATA, None), (None, -1))[1]
                if group.kind == "classic" and group.state == EMPTY and since >= 0:
                    self._empty_since[group_id] = since  # Kafka's currentStateTimestamp, kept in the record
        for group_id in self.offsets.by_group:
            if group_id not in self.groups:
                self.groups[group_id] = ClassicGroup(group_id, config)
        # What an earlier version wrote as JSON is written again as Kafka's records, once: Kafka's tools (and lag
        # monitors) read the log too.
        rewritten = self.offsets.rewrite_legacy()
        for group_id in rewrite:
            self.save(group_id)
        if rewritten or rewrite:
            log.info("%s: %d offsets and %d groups written in an earlier version's layout were written again as "
                     "Kafka's records", self.offsets.directory, rewritten, len(rewrite))

    # ---- finding groups ------------------------------------------------------------------------------------------

    def group(self, group_id):
        """The group of that id (of any kind), or None; its timers are looked at again afterwards."""
        group = self.groups.get(group_id)
        if group is not None:
            self.groups.touched.add(group_id)
        return group

    def listed(self):
        """[(group id, group)] of every group, in order of id."""
        return sorted(self.groups.items())

    def consumer_group(self, group_id):
        """The KIP-848 group of that id, or GroupError as Kafka words it."""
        return self.consumer.group(group_id)

    def share_group(self, group_id):
        """The share group of that id, or GroupError as Kafka words it."""
        group = self.groups.get(group_id)
        if group is None:
            raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        return self.share.group(group_id)

    def streams_group(self, group_id):
        """The streams group of that id, or GroupError as Kafka words it."""
        return self.streams.group(group_id)

    # ---- the classic protocol --------------------------------------------------------------------------------

    def join(self, now, group_id, join, waiter):
        """A JoinGroup (a classic.JoinRequest): its result goes to waiter, at once or when the rebalance
        completes. An empty id is INVALID_GROUP_ID and a session timeout outside group.min/max.session.timeout.ms
        INVALID_SESSION_TIMEOUT; a member id for a group that does not exist is UNKNOWN_MEMBER_ID. An empty
        consumer group becomes a classic one; one with members takes the classic member in (KIP-848's
        migration)."""
        if not group_id:
            return waiter.complete(JoinResult(errors.INVALID_GROUP_ID, member_id=join.member_id))
        if not self.config["group.min.session.timeout.ms"] <= join.session_timeout_ms <= \
                self.config["group.max.session.timeout.ms"]:
            return waiter.complete(JoinResult(errors.INVALID_SESSION_TIMEOUT, member_id=join.member_id))
        group = self.group(group_id)
        if group is None and join.member_id == "":
            group = self.groups[group_id] = ClassicGroup.created(group_id, self.config)
        if group is None:
            return waiter.complete(JoinResult(errors.UNKNOWN_MEMBER_ID, member_id=join.member_id))
        if group.kind == "share" or (group.kind == "streams" and group.members):
            return waiter.complete(JoinResult(errors.INCONSISTENT_GROUP_PROTOCOL, member_id=""))
        if group.kind != "classic" and not group.members:
            group = self.groups[group_id] = ClassicGroup(group_id, self.config)
        try:
            if group.kind == "consumer":
                return waiter.complete(self.consumer.classic_join(group, now, join))
            group.join(now, join, waiter)
        finally:
            self.save(group_id)

    def sync(self, now, group_id, member_id, instance_id, generation, protocol_type, protocol_name, assignments,
             waiter):
        """A SyncGroup: the member's assignment goes to waiter, a follower's once the leader's has come.
        assignments: {member id: bytes}, the leader's."""
        if not group_id:
            return waiter.complete(SyncResult(errors.INVALID_GROUP_ID))
        group = self.group(group_id)
        if group is None or group.kind in ("share", "streams"):
            return waiter.complete(SyncResult(errors.UNKNOWN_MEMBER_ID))
        try:
            if group.kind == "consumer":
                return waiter.complete(self.consumer.classic_sync(group, now, member_id, instance_id, generation,
                                                                  protocol_type, protocol_name))
            group.sync(now, member_id, instance_id, generation, protocol_type, protocol_name, assignments, waiter)
        finally:
            self.save(group_id)  # the leader's: the stable generation is written before it is answered

    def heartbeat(self, now, group_id, member_id, instance_id, generation):
        """A classic Heartbeat's error: REBALANCE_IN_PROGRESS tells the member to join again."""
        if not group_id:
            return errors.INVALID_GROUP_ID
        group = self.group(group_id)
        if group is None or group.kind in ("share", "streams"):
            return errors.UNKNOWN_MEMBER_ID
        if group.kind == "consumer":
            return self.consumer.classic_heartbeat(group, now, member_id, instance_id, generation)
        return group.heartbeat(now, member_id, instance_id, generation)

    def leave(self, now, group_id, leaving):
        """A LeaveGroup of [(member id, instance id)]: [error] in that order."""
        group = self.group(group_id)
        if group is None or group.kind in ("share", "streams"):
            return [errors.UNKNOWN_MEMBER_ID] * len(leaving)
        try:
            if group.kind == "consumer":
                return self.consumer.classic_leave(group, now, leaving)
            return group.leave(now, leaving)
        finally:
            self._put_replacement(group_id)
            self.save(group_id)

    # ---- KIP-848 ---------------------------------------------------------------------------------------------

    def consumer_heartbeat(self, now, request, version, client_id, client_host):
        """A ConsumerGroupHeartbeat: a consumer.Heartbeat, or GroupError. What it changed is written first,
        refused or not (a refused heartbeat may have moved the group on before it failed)."""
        try:
            return self.consumer.heartbeat(request, version, client_id, client_host, now,
                                           self._consumer_group_to_join)
        finally:
            self._put_replacement(request.group_id)
            self.save(request.group_id)

    def _consumer_group_to_join(self, group_id, create, now):
        """The KIP-848 group a heartbeat joins: made when create (a member at epoch 0) and none exists; a classic
        group with members converted (KIP-848's upgrade, when the policy lets); an empty classic group replaced.
        GroupError otherwise."""
        group = self.groups.get(group_id)
        if group is None:
            if not create:
                raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            group = self.groups[group_id] = ConsumerGroup(group_id)
            return group
        if group.kind == "consumer":
            return group
        if group.kind in ("share", "streams"):
            raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if group.members and create:
            group = self.groups[group_id] = self.consumer.upgrade(group, now)
            return group
        if not group.members and not group.pending_join:
            # An empty classic group converts freely. A member that names an epoch to it is not one of its
            # members: it is answered as if its session had ended.
            group = self.groups[group_id] = ConsumerGroup(group_id)
            if create:
                return group
            raise GroupError(errors.UNKNOWN_MEMBER_ID, f"Group {group_id} has no member of that id any more.")
        raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    # ---- share groups (KIP-932) -------------------------------------------------------------------------------

    def share_heartbeat(self, now, request, client_id, client_host):
        """A ShareGroupHeartbeat: a share.Beat, or GroupError. What it changed is written first."""
        try:
            return self.share.heartbeat(request, client_id, client_host, now)
        finally:
            if request.group_id:
                self.save(request.group_id)

    # ---- streams groups (KIP-1071) -----------------------------------------------------------------------------

    def streams_heartbeat(self, now, request, client_id, client_host):
        """A StreamsGroupHeartbeat: a streams.Beat, or GroupError. What it changed is written first."""
        try:
            return self.streams.heartbeat(request, client_id, client_host, now)
        finally:
            if request.group_id:
                self.save(request.group_id)

    def _initialize_share_state(self, group, partitions):
        """Share state for a group's partitions {topic id: partitions}, at the start offset its
        share.auto.offset.reset gives when first read (state/shares.py)."""
        if self.share_states is not None:
            self.share_states.initialize(group.group_id, partitions, group.group_epoch)

    def _put_replacement(self, group_id):
        """Store the classic group that takes a consumer group's place once only classic members are left in it
        (KIP-848's downgrade, decided by the consumer group's rules)."""
        group = self.groups.get(group_id)
        replacement = getattr(group, "replaced_by", None)
        if replacement is not None:
            self.groups[group_id] = replacement

    # ---- offsets -----------------------------------------------------------------------------------------------

    def commit_error(self, now, group_id, request, version, generation, member_id, instance_id,
                     transactional=False):
        """Whether the member may commit (OffsetCommit, TxnOffsetCommit v3+): an error for all the request's
        partitions, or NONE. A group that does not exist takes a commit without a generation (and is made when
        offsets are committed); one naming a generation is ILLEGAL_GENERATION (OffsetCommit from v9:
        GROUP_ID_NOT_FOUND). A KIP-848 group checks member epochs instead."""
        group = self.group(group_id)
        if group is None:
            if generation < 0:
                return errors.NONE
            return errors.GROUP_ID_NOT_FOUND if not transactional and version >= 9 else errors.ILLEGAL_GENERATION
        if group.kind == "share":
            return errors.GROUP_ID_NOT_FOUND
        if group.kind == "streams":
            return self.streams.commit_error(group, request, version, transactional)
        if group.kind == "consumer":
            return self.consumer.commit_error(group, request, version, transactional)
        return group.validate_commit(now, member_id, instance_id, generation, transactional=transactional)

    def commit(self, group_id, offsets, topic_ids=None):
        """offsets: [((topic, partition), (offset, leader epoch, metadata, commit time ms))]; topic_ids: {topic: id}
        of the topics an OffsetCommit named (the records keep them)."""
        if group_id not in self.groups:
            self.groups[group_id] = ClassicGroup(group_id, self.config)
        self.offsets.commit(group_id, offsets, topic_ids)

    def committed(self, group_id):
        return self.offsets.committed(group_id)

    def fetch_error(self, group_id, member_id, epoch):
        """OffsetFetch v9+ names the member and its epoch: in a KIP-848 group they must be current."""
        group = self.groups.get(group_id)
        if group is not None and group.kind == "share":
            return errors.GROUP_ID_NOT_FOUND
        if group is not None and group.kind == "streams":
            return self.streams.fetch_error(group, member_id, epoch)
        if group is None or group.kind != "consumer":
            return errors.NONE
        try:
            self.consumer.check_fetch(group, member_id, epoch)
        except GroupError as e:
            return e.error
        return errors.NONE

    # ---- admin -------------------------------------------------------------------------------------------------

    def delete(self, group_id):
        """DeleteGroups of one group: forgets an Empty group with its offsets and metadata, tombstoned together;
        GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP otherwise."""
        group = self.groups.get(group_id)
        if group is None:
            return errors.GROUP_ID_NOT_FOUND
        error = group.deletable()
        if error is errors.NONE:
            del self.groups[group_id]
            self._empty_since.pop(group_id, None)
            self._stamps.pop(group_id, None)
            self.offsets.delete_group(group_id)
            if group.kind == "share" and self.share_states is not None:
                self.share_states.delete_group(group_id)
        return error

    def delete_offsets(self, group_id, asked):
        """OffsetDelete of {topic: [partition]}: (the group's error, {topic: the partitions' error}). A topic a
        member subscribes to keeps its offsets (GROUP_SUBSCRIBED_TO_TOPIC); the others' offsets go, tombstoned
        together. As Kafka's groups validate it, a classic group with members may lose offsets only when it runs
        the consumer protocol (NON_EMPTY_GROUP otherwise)."""
        group = self.groups.get(group_id)
        if group is None or group.kind == "share":
            return errors.GROUP_ID_NOT_FOUND, {}
        if group.kind == "classic" and group.state != EMPTY and group.protocol_type != "consumer":
            return errors.NON_EMPTY_GROUP, {}
        subscribed = self.subscribed_topics(group) or ()
        committed = self.offsets.committed(group_id)
        answers, gone = {}, []
        for topic, partitions in asked.items():
            if topic in subscribed:
                answers[topic] = errors.GROUP_SUBSCRIBED_TO_TOPIC
                continue
            answers[topic] = errors.NONE
            gone += [(group_id, topic, p) for p in partitions if (topic, p) in committed]
        self.offsets.drop(gone)
        return errors.NONE, answers

    @staticmethod
    def subscribed_topics(group):
        """The topics a group's members subscribe to: a KIP-848 group's members' subscriptions; a classic group's
        of the consumer protocol, from its members' metadata (none when it has no protocol yet). None when a
        member's metadata does not read: Kafka then knows no subscription (nothing is subscribed, for OffsetDelete;
        every offset stays, for expiry)."""
        topics = set()
        if group.kind != "classic":
            for member in group.members.values():
                topics |= group.topics_of(member)
            return topics
        if group.protocol_type != "consumer" or not group.protocol_name:
            return topics
        try:
            for member in group.members.values():
                topics.update(read_subscription(member.metadata(group.protocol_name)).topics)
        except (MalformedProtocol, ValueError, IndexError, KeyError):
            return None
        return topics

    def forget_topic(self, topic, topic_id=None):
        """Drop the offsets of a deleted topic, so a topic re-created under its name starts clean, and what share
        groups knew of it."""
        self.offsets.forget_topic(topic)
        for group_id, group in list(self.groups.items()):
            if group.kind == "share" and topic_id in group.initialized:
                self.share.forget_topic(group, topic_id)
                self.save(group_id)

    # ---- time --------------------------------------------------------------------------------------------------

    def tick(self, now):
        """Fire every group timer due by now; True when any did. Only the groups whose earliest deadline has
        come are looked at. A timer that fails is logged with its group, and the other groups' timers fire all
        the same."""
        self._reschedule_touched()
        fired = False
        timers = self._timers
        fired_ids = []
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
                if group.kind == "consumer":
                    changed = self.consumer.expire(group, now)
                    self._put_replacement(group_id)
                elif group.kind == "share":
                    changed = self.share.expire(group, now)
                elif group.kind == "streams":
                    changed = self.streams.expire(group, now)
                else:
                    while group.fire_next(now):
                        changed = True
            except Exception:
                log.exception("group %r: a timer failed; the group's other timers and the other groups go on",
                              group_id)
                changed = True
            if changed:
                fired = True
                self.save(group_id)
            fired_ids.append(group_id)
        for group_id in fired_ids:  # after the loop: a group is fired once per tick, whatever its timers say
            group = self.groups.get(group_id)  # a consumer group may have become a classic one
            if group is not None:
                self._schedule(group_id, group)
        return fired

    def next_deadline(self):
        """The earliest deadline of any group's timers, or None."""
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

    # ---- what is written ---------------------------------------------------------------------------------------

    def save(self, group_id):
        """Write what changed of the group's kept state since it was last written (nothing, for a heartbeat);
        a group no longer here leaves tombstones."""
        self.groups.touched.add(group_id)
        self._note_state(group_id)
        group = self.groups.get(group_id)
        stamps = self._stamps.setdefault(group_id, {})
        now_ms = int(time.time() * 1000)

        def when(key, marker):
            stamp = stamps.get(key)
            if stamp is None or stamp[0] != marker:
                stamp = stamps[key] = (marker, now_ms)
            return stamp[1]

        entries = changes(self.offsets.group_records.get(group_id, {}), group, when)
        if entries:
            self.offsets.write_group_records(group_id, entries)
            stored = self.offsets.group_records.get(group_id, {})
            for key in [key for key in stamps if key not in stored]:  # a record gone (a pattern, say)
                del stamps[key]
        if group is None:
            self._stamps.pop(group_id, None)

    def _note_state(self, group_id):
        """Remember when a group became Empty (Kafka's currentStateTimestamp, for offsets' expiry)."""
        group = self.groups.get(group_id)
        if group is None or group.state != EMPTY:
            self._empty_since.pop(group_id, None)
        elif group_id not in self._empty_since:
            self._empty_since[group_id] = int(time.time() * 1000)

    def expire_offsets(self, now_ms, retention_ms):
        """Drop the offsets whose retention is over (Kafka's rules: see the module's docstring), then the empty
        groups left without offsets; the number of offsets dropped. now_ms: wall-clock milliseconds, as
        commits are timed."""
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
        for group_id in [g for g, group in self.groups.items() if group.state == EMPTY and group.kind != "share"
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
            return None, self.subscribed_topics(group)
        if group.pending_join:
            return None
        if not group.protocol_type:  # it never had members: a standalone committer
            return None, None
        if group.state == EMPTY:
            return self._empty_since.get(group_id), None
        if group.state == STABLE and group.protocol_type == "consumer":
            subscribed = self.subscribed_topics(group)
            # Kafka too keeps all when it cannot read what the members subscribe to
            return None if subscribed is None else (None, subscribed)
        return None

    def _active(self, group_id):
        group = self.groups.get(group_id)
        return group is not None and (group.state != EMPTY or bool(group.pending_join))

    def close(self):
        self.offsets.close()
