"""KIP-848 consumer groups: the broker assigns the partitions, each member moves toward its target by heartbeats.

The rules are Apache Kafka 4.3's group coordinator's:
- A group has an epoch, bumped whenever what its members subscribe to
  changes (a member joins, leaves or changes its subscription, or a
  subscribed topic is created, deleted or grows). The target assignment is
  recomputed by the group's assignor (``uniform`` unless the members ask for
  ``range``) at the first heartbeat after the epoch moved, at most once per
  group.consumer.assignment.interval.ms.
- Each member reconciles toward its target: partitions it must give up are
  taken away first (the member keeps its epoch until it stops reporting them
  as owned); partitions still owned by another member are given only once
  released; then the member reaches the target's epoch.
- Members are fenced (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) when their
  epoch is not the one the coordinator knows, when their session expires,
  or when they do not give up partitions within their rebalance timeout.
- Static members (an instance id) may leave for a while (epoch -2) and come
  back under a new member id, keeping their partitions.
- Regular expressions are resolved by the broker, against every topic name,
  after the heartbeat that brought them (as Kafka does in the background),
  and again when topics come or go (at most every 10 s).

What a group keeps (its epochs, members, targets and assignments) is written
to the offsets log whenever it changes and loaded at start-up (stored.py), so
members carry on across a restart at their epochs.

The group and its members are in consumer_group.py, a member's steps toward
its target in reconcile.py, classic members and moving between the protocols
in migration.py; this module holds the coordinator's heartbeat, regex, assignment
and offset-commit rules.
"""

import hashlib
import json

import re2

from .... import errors
from ....uuid import Uuid
from .assignors import ASSIGNORS, AssignorError, MemberSpec
from .consumer_group import (UNREVOKED_PARTITIONS, ConsumerMember, GroupError, partition_sets,
                             preferred_assignor)
from .migration import ClassicMembers
from .reconcile import owned_within, reconcile

LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2
REGEX_REFRESH_FLOOR_MS = 10_000

# --- what a request may ask ---------------------------------------------------------------------------------------

# Kafka reads topic regexes with RE2J; RE2 is the same syntax, and its matching time is linear in the topic
# name whatever the pattern, so a client's regex cannot stall the broker.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


def compile_regex(pattern):
    """A topic regex, or INVALID_REGULAR_EXPRESSION as Kafka words it (lookaround, back-references and the like
    are not RE2 syntax)."""
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as e:
        reason = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise GroupError(errors.INVALID_REGULAR_EXPRESSION,
                         f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {reason}.") from None


def _blank(value):
    return value is not None and not value.strip()


def validate_heartbeat(request, version, assignors):
    """Kafka's checks of a ConsumerGroupHeartbeat before the group is looked at (INVALID_REQUEST and
    UNSUPPORTED_ASSIGNOR, with Kafka's messages)."""
    epoch = request.member_epoch
    if (version >= 1 or epoch > 0 or epoch == LEAVE_EPOCH) and _blank(request.member_id or " "):
        raise GroupError(errors.INVALID_REQUEST, "MemberId can't be empty.")
    if _blank(request.group_id or " "):
        raise GroupError(errors.INVALID_REQUEST, "GroupId can't be empty.")
    if _blank(request.instance_id):
        raise GroupError(errors.INVALID_REQUEST, "InstanceId can't be empty.")
    if _blank(request.rack_id):
        raise GroupError(errors.INVALID_REQUEST, "RackId can't be empty.")
    regex = request.subscribed_topic_regex if version >= 1 else None
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise GroupError(errors.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            raise GroupError(errors.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and regex is None:
            raise GroupError(errors.INVALID_REQUEST,
                             "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif epoch == STATIC_LEAVE_EPOCH:
        if request.instance_id is None:
            raise GroupError(errors.INVALID_REQUEST, "InstanceId can't be null.")
    elif epoch < STATIC_LEAVE_EPOCH:
        raise GroupError(errors.INVALID_REQUEST, "MemberEpoch is invalid.")
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise GroupError(errors.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {request.server_assignor} is not supported. "
                                                      f"Supported assignors: {', '.join(assignors)}.")


# Kafka bounds a member's subscription only through the log its coordinator writes: the member's subscribed topic
# names and regex go in one record (ConsumerGroupMemberMetadata) of a batch to __consumer_offsets, which must fit
# in that topic's max.message.bytes (the broker's message.max.bytes). When it does not, the write fails, nothing
# changes, and the heartbeat is answered UNKNOWN_SERVER_ERROR without a message (GroupCoordinatorService's
# answer to MESSAGE_TOO_LARGE and RECORD_LIST_TOO_LARGE). The size is estimated here as Kafka encodes that record
# (compact strings with varint lengths), with a batch's header and a record's framing.
BATCH_AND_RECORD_OVERHEAD = 61 + 21
GENERATED_MEMBER_ID_LENGTH = 22  # a v0 heartbeat's member id is made by the coordinator: a Uuid's base64


def _varint_size(n):
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size


def _compact_string_size(text):
    n = 0 if text is None else len(text.encode())
    return n + _varint_size(n + 1)


def subscription_record_size(request, version, client_id, client_host):
    """The bytes of the batch Kafka would write for this heartbeat's member subscription (key and value of its
    ConsumerGroupMemberMetadata record, and the batch's overhead)."""
    regex = request.subscribed_topic_regex if version >= 1 else None
    names = request.subscribed_topic_names or ()
    member_id = request.member_id or "x" * GENERATED_MEMBER_ID_LENGTH
    key = 2 + _compact_string_size(request.group_id) + _compact_string_size(member_id) + 1
    value = (2 + sum(_compact_string_size(text) for text in (request.instance_id, request.rack_id, client_id,
                                                               client_host, regex, request.server_assignor))
             + _varint_size(len(names) + 1) + sum(_compact_string_size(name) for name in names) + 4 + 1 + 1)
    return BATCH_AND_RECORD_OVERHEAD + key + value


# --- the coordinator ----------------------------------------------------------------------------------------------

class Heartbeat:
    """What a ConsumerGroupHeartbeat is answered with (the assignment only when the member must be told it)."""

    __slots__ = ("member_id", "member_epoch", "interval_ms", "assignment")

    def __init__(self, member_id, member_epoch, interval_ms, assignment=None):
        self.member_id = member_id
        self.member_epoch = member_epoch
        self.interval_ms = interval_ms
        self.assignment = assignment  # {topic id: sorted partitions} or None


class ConsumerCoordinator(ClassicMembers):
    """Consumer groups over a broker's state (its groups, topics and settings); no I/O. Times are milliseconds of
    one monotonic clock, given by the caller."""

    def __init__(self, groups, cluster, config):
        self.groups = groups  # the group coordinator's table, only read here: it alone stores groups
        self.cluster = cluster
        self.config = config

    @property
    def assignors(self):
        return [a.strip() for a in self.config["group.consumer.assignors"].split(",") if a.strip()]

    def group(self, group_id):
        """The consumer group, or GroupError as Kafka words it."""
        group = self.groups.get(group_id)
        if group is None:
            raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        if group.kind != "consumer":
            raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        return group

    # topics -------------------------------------------------------------------------------------------------------

    def _topic_ids(self, names):
        ids = set()
        for name in names:
            topic = self.cluster.topics.get(name)
            if topic is not None:
                ids.add(topic.topic_id)
        return frozenset(ids)

    def _partitions_of(self, topic_id):
        topic = self.cluster.by_id.get(topic_id)
        return None if topic is None else len(topic.partitions)

    def _metadata_hash(self, group, members):
        """The hash of the subscribed topics' metadata, computed again only when a subscription, a regex's
        resolution or the cluster's metadata changed: another member's heartbeat costs nothing however many
        topics a member subscribes to (the memo's key holds each member's subscription by reference, so
        comparing it compares them by identity)."""
        metadata = getattr(self.cluster, "metadata", None)
        key = None
        if metadata is not None:
            key = (metadata.log_end_offset, tuple((m.subscribed_names, m.regex) for m in members),
                   tuple(group.regexes.items()))
            memo = getattr(group, "hash_memo", None)
            if memo is not None and memo[0] == key:
                return memo[1]
        value = self._compute_metadata_hash(group, members)
        if key is not None:
            group.hash_memo = (key, value)
        return value

    def _compute_metadata_hash(self, group, members):
        names = set()
        for member in members:
            names |= group.topics_of(member)
        described = []
        for name in sorted(names):
            topic = self.cluster.topics.get(name)
            if topic is not None:
                described.append((name, str(topic.topic_id), len(topic.partitions)))
        if not described:
            return 0
        # The same in every process (Python's hash() of strings is not), since the hash is kept across restarts:
        # a group loaded again must not see its topics as changed.
        digest = hashlib.blake2b(json.dumps(described).encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big", signed=True)

    # heartbeats ---------------------------------------------------------------------------------------------------

    def heartbeat(self, request, version, client_id, client_host, now, join):
        """A ConsumerGroupHeartbeat: a Heartbeat, or GroupError. join(group id, create, now) is the group
        coordinator's: it finds the group to join, or makes one (create: the member joins with epoch 0),
        converting a classic group when it may."""
        validate_heartbeat(request, version, self.assignors)
        if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self.leave(request, now)
        if request.subscribed_topic_names is not None or (version >= 1 and request.subscribed_topic_regex):
            if subscription_record_size(request, version, client_id, client_host) > \
                    self.config["message.max.bytes"]:
                raise GroupError(errors.UNKNOWN_SERVER_ERROR)  # nothing is changed, as Kafka's failed write
        group = join(request.group_id, request.member_epoch == 0, now)
        limit = self.config["group.consumer.max.size"]
        if len(group.members) >= limit and (not request.member_id or request.member_id not in group.members):
            raise GroupError(errors.GROUP_MAX_SIZE_REACHED,
                             f"The consumer group has reached its maximum capacity of {limit} members.")
        member_id = request.member_id or str(Uuid.random())  # v0: the coordinator names the member
        owned = request.topic_partitions
        if request.instance_id is None:
            member = self._dynamic_member(group, member_id, request.member_epoch, owned)
        else:
            member = self._static_member(group, member_id, request.instance_id, request.member_epoch, owned)

        updated = member.copy()
        if request.instance_id is not None:
            updated.instance_id = request.instance_id
        if request.rack_id is not None:
            updated.rack_id = request.rack_id
        if request.rebalance_timeout_ms != -1:
            updated.rebalance_timeout_ms = request.rebalance_timeout_ms
        if request.server_assignor is not None:
            updated.assignor = request.server_assignor
        if request.subscribed_topic_names is not None:
            names = tuple(dict.fromkeys(request.subscribed_topic_names))  # a set, as asked
            if names != member.subscribed_names:  # the same ones keep their tuple (see _metadata_hash)
                updated.subscribed_names = names
        regex = request.subscribed_topic_regex if version >= 1 else None
        if regex is not None:
            updated.regex = regex
        updated.client_id = client_id
        updated.client_host = client_host
        updated.classic = None

        names_changed = set(updated.subscribed_names) != set(member.subscribed_names)
        regex_changed, regex_resolved, to_resolve = self._regex_update(group, member, updated, now)
        others = [m for m in group.members.values() if m.member_id != member.member_id]
        metadata_hash = self._metadata_hash(group, others + [updated])
        if names_changed or regex_resolved or metadata_hash != group.metadata_hash:
            group.group_epoch += 1
            group.metadata_hash = metadata_hash

        previous = member
        if (group.assignment_epoch < group.group_epoch
                and self._may_assign(group, now)):
            self._assign(group, {**group.members, updated.member_id: updated}, now)
        target = group.target.get(updated.member_id, {})
        subscription_changed = names_changed or regex_changed
        if subscription_changed or not updated.reconciled_to(group.assignment_epoch):
            updated = self._reconcile(group, updated, group.assignment_epoch, target, subscription_changed, owned)
        group.put(updated)
        if previous.regex and previous.regex != updated.regex and not group.regex_members(previous.regex):
            group.regexes.pop(previous.regex, None)  # no member uses it any more: its resolution goes too
            group.regex_resolved.pop(previous.regex, None)
        self._arm_timers(group, previous, updated, now)
        for pattern in to_resolve:
            self._resolve(group, pattern, now)

        full = (request.rebalance_timeout_ms != -1 and owned is not None
                and (request.subscribed_topic_names is not None or regex is not None))
        send = (request.member_epoch == 0 or full
                or partition_sets(updated.assigned) != partition_sets(previous.assigned))
        return Heartbeat(updated.member_id, updated.member_epoch,
                         self.cluster.group_setting(group.group_id, "consumer.heartbeat.interval.ms"),
                         {t: sorted(p) for t, p in updated.assigned.items()} if send else None)

    @staticmethod
    def _check_epoch(member, epoch, owned):
        if epoch == 0:
            return
        if epoch > member.member_epoch:
            raise GroupError(errors.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch "
                             f"({epoch}) than the one known by the group coordinator ({member.member_epoch}). The "
                             "member must abandon all its partitions and rejoin.")
        if epoch < member.member_epoch and (epoch != member.previous_epoch or not owned_within(owned, member)):
            # One epoch back is tolerated: the response that moved the member on may have been lost.
            raise GroupError(errors.FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member epoch "
                             f"({epoch}) than the one known by the group coordinator ({member.member_epoch}). The "
                             "member must abandon all its partitions and rejoin.")

    def _dynamic_member(self, group, member_id, epoch, owned):
        member = group.members.get(member_id)
        if member is None:
            if epoch != 0:
                raise GroupError(errors.UNKNOWN_MEMBER_ID,
                                 f"Member {member_id} is not a member of group {group.group_id}.")
            return ConsumerMember(member_id)
        if not member.uses_classic_protocol:
            self._check_epoch(member, epoch, owned)
        return member

    def _static_member(self, group, member_id, instance_id, epoch, owned):
        existing_id = group.static.get(instance_id)
        existing = group.members.get(existing_id) if existing_id is not None else None
        if epoch == 0:
            if existing is None:
                member = group.members.get(member_id) or ConsumerMember(member_id)
                return member
            if not existing.uses_classic_protocol and existing.member_epoch != STATIC_LEAVE_EPOCH:
                raise GroupError(errors.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                 f"{instance_id} cannot join the group because the instance id is owned by "
                                 f"{existing.member_id} member.")
            # The instance comes back under a new id: it takes over its partitions and its target.
            member = existing.copy()
            member.member_id = member_id
            member.member_epoch = member.previous_epoch = 0
            member.classic = None
            target = group.target.get(existing.member_id)
            group.drop(existing.member_id)
            if target is not None:
                group.target[member_id] = target
            group.put(member)
            return member
        if existing is None:
            raise GroupError(errors.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise GroupError(errors.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                             f"was fenced by member {existing.member_id}.")
        if not existing.uses_classic_protocol:
            self._check_epoch(existing, epoch, owned)
        return existing

    # regular expressions ------------------------------------------------------------------------------------------

    def _regex_update(self, group, member, updated, now):
        """(changed, resolved already, regexes to resolve after this heartbeat)."""
        to_resolve = []
        changed = resolved = False
        if member.regex != updated.regex:
            changed = True
            if updated.regex:
                if updated.regex in group.regexes:
                    resolved = True
                elif group.regex_members(updated.regex) == 0:
                    compile_regex(updated.regex)
                    to_resolve.append(updated.regex)
            elif member.regex:
                resolved = True  # leaving a regex for names bumps the epoch at once
        if any(m.regex for m in group.members.values()) and not to_resolve:
            names = frozenset(self.cluster.topics)
            floor = group.regex_refreshed_ms is None or now >= group.regex_refreshed_ms + REGEX_REFRESH_FLOOR_MS
            stale = (names != group.regex_topics_seen or group.regex_refreshed_ms is None
                     or now > group.regex_refreshed_ms + self.config["group.consumer.regex.refresh.interval.ms"])
            if floor and stale:
                to_resolve = [r for r in group.regexes if group.regex_members(r)]
        return changed, resolved, to_resolve

    def _resolve(self, group, pattern, now):
        """What Kafka does in the background after the heartbeat: match a regex against every topic name."""
        compiled = compile_regex(pattern)
        names = frozenset(self.cluster.topics)
        topics = frozenset(n for n in names if compiled.fullmatch(n))
        before = group.regexes.get(pattern)
        group.regexes[pattern] = topics
        metadata = getattr(self.cluster, "metadata", None)
        group.regex_resolved[pattern] = (metadata.log_end_offset - 1 if metadata is not None else -1, now)
        group.regex_refreshed_ms = now
        group.regex_topics_seen = names
        metadata_hash = self._metadata_hash(group, group.members.values())
        if (before is None and topics) or (before is not None and before != topics) or \
                metadata_hash != group.metadata_hash:
            group.group_epoch += 1
            group.metadata_hash = metadata_hash

    # assignment ---------------------------------------------------------------------------------------------------

    def _may_assign(self, group, now):
        interval = self.cluster.group_setting(group.group_id, "consumer.assignment.interval.ms")
        return group.assignment_time_ms == 0 or interval == 0 or now >= group.assignment_time_ms + interval

    def _assign(self, group, members, now):
        specs = {member_id: MemberSpec(m.instance_id, self._topic_ids(group.topics_of(m)),
                                       group.target.get(member_id, {}))
                 for member_id, m in members.items()}
        name = preferred_assignor(members.values(), self.assignors[0])
        try:
            target = ASSIGNORS[name](specs, self._partitions_of)
        except AssignorError as e:
            raise GroupError(errors.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment for epoch "
                             f"{group.group_epoch}: {e}") from None
        group.target = {member_id: target.get(member_id, {}) for member_id in members}
        group.assignment_epoch = group.group_epoch
        group.assignment_time_ms = now

    def _reconcile(self, group, member, target_epoch, target, subscription_changed, owned):
        return reconcile(group, member, target_epoch, target, self._topic_ids(group.topics_of(member)),
                         subscription_changed, owned)

    def _arm_timers(self, group, previous, member, now):
        member.session_deadline = now + self.cluster.group_setting(group.group_id, "consumer.session.timeout.ms")
        if member.state == UNREVOKED_PARTITIONS:
            if previous.state != UNREVOKED_PARTITIONS or member.revocation_deadline is None or \
                    partition_sets(previous.pending) != partition_sets(member.pending):
                member.revocation_deadline = now + max(member.rebalance_timeout_ms, 0)
                member.revocation_epoch = member.member_epoch
        else:
            member.revocation_deadline = member.revocation_epoch = None

    # leaving ------------------------------------------------------------------------------------------------------

    def leave(self, request, now):
        group = self.group(request.group_id)
        interval = 0
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise GroupError(errors.UNKNOWN_MEMBER_ID,
                                 f"Member {request.member_id} is not a member of group {group.group_id}.")
            self.fence(group, [member.member_id], now)
            return Heartbeat(request.member_id, request.member_epoch, interval)
        member_id = group.static.get(request.instance_id)
        if member_id is None:
            raise GroupError(errors.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
        if member_id != request.member_id:
            raise GroupError(errors.FENCED_INSTANCE_ID, f"Static member {request.member_id} with instance id "
                             f"{request.instance_id} was fenced by member {member_id}.")
        if request.member_epoch == STATIC_LEAVE_EPOCH:
            member = group.members[member_id].copy()
            member.member_epoch = STATIC_LEAVE_EPOCH  # away for now: its partitions wait for it
            member.pending = {}
            member.revocation_deadline = member.revocation_epoch = None
            group.put(member)
            return Heartbeat(member_id, STATIC_LEAVE_EPOCH, interval)
        self.fence(group, [member_id], now)
        return Heartbeat(request.member_id, request.member_epoch, interval)

    def fence(self, group, member_ids, now):
        """Members leave or are dropped: the group's epoch moves on, so the others get new targets. When only
        members of the classic protocol are left, the group becomes a classic group again (if the policy lets)."""
        left = [m for m in group.members.values() if m.member_id not in member_ids]
        if left and all(m.uses_classic_protocol for m in left) and self._may("downgrade") and \
                len(left) <= self.config["group.max.size"]:
            for member_id in member_ids:
                group.drop(member_id)
            group.replaced_by = self._downgrade(group, now)  # the group coordinator puts it in its place
            return
        for member_id in member_ids:
            group.drop(member_id)
        for pattern in [r for r in group.regexes if not group.regex_members(r)]:
            del group.regexes[pattern]
            group.regex_resolved.pop(pattern, None)
        group.metadata_hash = self._metadata_hash(group, group.members.values())
        group.group_epoch += 1  # the assignment catches up at the next heartbeat (an empty group keeps its old one)

    def expire(self, group, now):
        """Fence the group's members whose session ended or who kept partitions past their rebalance timeout;
        True when any was."""
        late = [m.member_id for m in group.members.values() if any(deadline <= now for deadline in m.deadlines())]
        if late:
            self.fence(group, late, now)
        return bool(late)

    # offsets ------------------------------------------------------------------------------------------------------

    def check_commit(self, group, member_id, epoch, version, partitions, transactional=False):
        """Kafka 4.3's checks of an offset commit to a consumer group (KIP-1251: an older epoch may commit the
        partitions it was given by then); partitions: [(topic name, topic id, partition)]. Raises GroupError."""
        if epoch < 0 and not group.members:
            return
        if transactional and epoch == -1 and not member_id:
            return
        member = group.members.get(member_id)
        if member is None:
            raise GroupError(errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                       f"{group.group_id}.")
        classic = member.uses_classic_protocol
        stale = errors.ILLEGAL_GENERATION if classic or transactional else errors.STALE_MEMBER_EPOCH
        if not classic and not transactional and version < 9:
            raise GroupError(errors.UNSUPPORTED_VERSION, "OffsetCommit version 9 or above must be used by members "
                                                         "using the consumer group protocol")
        if epoch == member.member_epoch:
            return
        what = "generation id" if classic else "member epoch"
        if epoch > member.member_epoch:
            raise GroupError(errors.ILLEGAL_GENERATION if classic else stale,
                             f"Received {what} {epoch} is newer than current member epoch {member.member_epoch}.")
        for name, topic_id, p in partitions:
            given = member.assigned.get(topic_id, {}).get(p, member.pending.get(topic_id, {}).get(p))
            if given is None:
                raise GroupError(stale, f"Partition {name}-{p} is not assigned or pending revocation for member.")
            if epoch < given:
                raise GroupError(stale, f"Received {what} {epoch} is older than assignment epoch {given} for "
                                        f"partition {name}-{p}.")

    def commit_error(self, group, request, version, transactional=False):
        """The error of an OffsetCommit or TxnOffsetCommit request to a consumer group, for all its partitions."""
        partitions = []
        for item in request.topics:
            by_id = getattr(item, "topic_id", None)
            topic = self.cluster.by_id.get(by_id) if by_id is not None and by_id.int else \
                self.cluster.topics.get(item.name)
            for p in item.partitions:
                partitions.append((topic.name if topic else item.name, topic.topic_id if topic else by_id,
                                   p.partition_index))
        try:
            self.check_commit(group, request.member_id, request.generation_id_or_member_epoch, version, partitions,
                              transactional)
        except GroupError as e:
            return e.error
        return errors.NONE

    def check_fetch(self, group, member_id, epoch):
        """OffsetFetch v9+ from a member: it must be known and at its current epoch exactly."""
        if member_id is None and epoch < 0:
            return
        member = group.members.get(member_id)
        if member is None:
            raise GroupError(errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                       f"{group.group_id}.")
        if epoch != member.member_epoch:
            error = errors.ILLEGAL_GENERATION if member.uses_classic_protocol else errors.STALE_MEMBER_EPOCH
            raise GroupError(error, f"The received member epoch {epoch} does not match the expected member epoch "
                                    f"{member.member_epoch}.")
