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
"""

import hashlib
import json
from typing import NamedTuple

import re2

from .... import errors
from ....uuid import Uuid
from .assignors import ASSIGNORS, AssignorError, MemberSpec, java_order, string_hash
from .classic import ClassicGroup, JoinResult, SyncResult
from .classic import Member as ClassicMember
from .embedded import MalformedProtocol, read_assignment, read_subscription, write_assignment

EMPTY, ASSIGNING, RECONCILING, STABLE = "Empty", "Assigning", "Reconciling", "Stable"
MEMBER_STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS = "stable", "unrevoked", "unreleased"
LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2
REGEX_REFRESH_FLOOR_MS = 10_000


class GroupError(Exception):
    """An error answer: the error and its message."""

    def __init__(self, error, message=None):
        super().__init__(message or error.name)
        self.error = error
        self.message = message


class ConsumerMember:
    __slots__ = ("member_id", "instance_id", "rack_id", "member_epoch", "previous_epoch", "state",
                 "rebalance_timeout_ms", "client_id", "client_host", "subscribed_names", "regex", "assignor",
                 "assigned", "pending", "classic", "session_deadline", "revocation_deadline", "revocation_epoch")

    def __init__(self, member_id):
        self.member_id = member_id
        self.instance_id = None
        self.rack_id = None
        self.member_epoch = 0
        self.previous_epoch = -1
        self.state = MEMBER_STABLE
        self.rebalance_timeout_ms = -1
        self.client_id = ""
        self.client_host = ""
        self.subscribed_names = ()  # distinct names, in the order first asked for
        self.regex = ""
        self.assignor = None
        self.assigned = {}  # {topic id: {partition: the epoch it was assigned at}}
        self.pending = {}  # partitions to give up, the same way
        # A member of the classic protocol: (session timeout ms, [(protocol name, metadata)], subscription version)
        self.classic = None
        self.session_deadline = 0.0
        self.revocation_deadline = None
        self.revocation_epoch = None

    def copy(self):
        other = ConsumerMember.__new__(ConsumerMember)
        for name in self.__slots__:
            setattr(other, name, getattr(self, name))
        other.assigned = {t: dict(p) for t, p in self.assigned.items()}
        other.pending = {t: dict(p) for t, p in self.pending.items()}
        return other

    def set_epoch(self, epoch):
        self.previous_epoch, self.member_epoch = self.member_epoch, epoch

    def reconciled_to(self, epoch):
        return self.member_epoch == epoch and self.state == MEMBER_STABLE

    @property
    def uses_classic_protocol(self):
        return self.classic is not None


def _partition_sets(assignment):
    return {t: set(parts) for t, parts in assignment.items() if parts}


class ConsumerGroup:
    kind = "consumer"
    protocol_type = "consumer"

    def __init__(self, group_id):
        self.group_id = group_id
        self.group_epoch = 1  # Kafka 4.3 starts a group at epoch 1 with an empty assignment at epoch 1
        self.assignment_epoch = 1
        self.assignment_time_ms = 0  # when the target was last computed (0: compute at once)
        self.metadata_hash = 0
        self.members = {}  # member id -> ConsumerMember, in order of joining
        self.static = {}  # instance id -> member id
        self.target = {}  # member id -> {topic id: set of partitions}
        self.owners = {}  # (topic id, partition) -> epoch of the member holding it (assigned or being revoked)
        self.regexes = {}  # regex -> frozenset of topic names it resolved to
        self.regex_refreshed_ms = None
        self.regex_topics_seen = None  # the topic names the last resolution saw
        self.hash_memo = None  # (what the metadata hash was computed from, the hash): see _metadata_hash

    # What the Groups container asks of every kind of group: this kind's timers are ConsumerCoordinator.expire's.
    pending_join = frozenset()

    def next_deadline(self):
        return None

    def fire_next(self, now):
        return False

    @property
    def state(self):
        if not self.members:
            return EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        if any(not m.reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return RECONCILING
        return STABLE

    def owner_epoch(self, topic_id, partition):
        return self.owners.get((topic_id, partition), -1)

    def put(self, member):
        """Store a member's new state, and which partitions it holds at which epoch."""
        old = self.members.get(member.member_id)
        if old is not None:
            for held in (old.assigned, old.pending):
                for topic_id, parts in held.items():
                    for p in parts:
                        self.owners.pop((topic_id, p), None)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static[member.instance_id] = member.member_id
        for held in (member.assigned, member.pending):
            for topic_id, parts in held.items():
                for p in parts:
                    self.owners[(topic_id, p)] = member.member_epoch

    def drop(self, member_id):
        member = self.members.get(member_id)
        if member is None:
            return None
        for held in (member.assigned, member.pending):
            for topic_id, parts in held.items():
                for p in parts:
                    self.owners.pop((topic_id, p), None)
        del self.members[member_id]
        self.target.pop(member_id, None)
        if member.instance_id is not None and self.static.get(member.instance_id) == member_id:
            del self.static[member.instance_id]
        return member

    def topics_of(self, member):
        """The topic names a member subscribes to: by name, and through its regex once resolved."""
        names = frozenset(member.subscribed_names)
        if member.regex:
            names |= self.regexes.get(member.regex, frozenset())
        return names

    def preferred_assignor(self, default):
        return preferred_assignor(self.members.values(), default)

    def deletable(self):
        return errors.NONE if not self.members else errors.NON_EMPTY_GROUP

    def regex_members(self, regex):
        return sum(1 for m in self.members.values() if m.regex == regex)


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


class ConsumerCoordinator:
    """Consumer groups over a broker's state (its groups, topics and settings); no I/O. Times are milliseconds of
    one monotonic clock, given by the caller."""

    def __init__(self, groups, cluster, config):
        self.groups = groups  # the broker's group id -> group dict, shared with classic groups
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

    def heartbeat(self, request, version, client_id, client_host, now):
        validate_heartbeat(request, version, self.assignors)
        if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self.leave(request, now)
        if request.subscribed_topic_names is not None or (version >= 1 and request.subscribed_topic_regex):
            if subscription_record_size(request, version, client_id, client_host) > \
                    self.config["message.max.bytes"]:
                raise GroupError(errors.UNKNOWN_SERVER_ERROR)  # nothing is changed, as Kafka's failed write
        group = self._group_to_join(request.group_id, request.member_epoch == 0, now)
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
        self._arm_timers(previous, updated, now)
        for pattern in to_resolve:
            self._resolve(group, pattern, now)

        full = (request.rebalance_timeout_ms != -1 and owned is not None
                and (request.subscribed_topic_names is not None or regex is not None))
        send = (request.member_epoch == 0 or full
                or _partition_sets(updated.assigned) != _partition_sets(previous.assigned))
        return Heartbeat(updated.member_id, updated.member_epoch, self.config["group.consumer.heartbeat.interval.ms"],
                         {t: sorted(p) for t, p in updated.assigned.items()} if send else None)

    def _group_to_join(self, group_id, create, now):
        group = self.groups.get(group_id)
        if group is None:
            if not create:
                raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            group = self.groups[group_id] = ConsumerGroup(group_id)
            return group
        if group.kind == "consumer":
            return group
        if group.kind == "classic" and group.members and create:
            group = self.groups[group_id] = self._upgrade(group, now)
            return group
        if group.kind == "classic" and not group.members and not group.pending_join:
            # An empty classic group converts freely. A member that names an epoch to it is not one of its
            # members: it is answered as if its session had ended.
            group = self.groups[group_id] = ConsumerGroup(group_id)
            if create:
                return group
            raise GroupError(errors.UNKNOWN_MEMBER_ID, f"Group {group_id} has no member of that id any more.")
        raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    @staticmethod
    def _check_epoch(member, epoch, owned):
        if epoch == 0:
            return
        if epoch > member.member_epoch:
            raise GroupError(errors.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch "
                             f"({epoch}) than the one known by the group coordinator ({member.member_epoch}). The "
                             "member must abandon all its partitions and rejoin.")
        if epoch < member.member_epoch and (epoch != member.previous_epoch or not _owned_within(owned, member)):
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
        group.regex_refreshed_ms = now
        group.regex_topics_seen = names
        metadata_hash = self._metadata_hash(group, group.members.values())
        if (before is None and topics) or (before is not None and before != topics) or \
                metadata_hash != group.metadata_hash:
            group.group_epoch += 1
            group.metadata_hash = metadata_hash

    # assignment ---------------------------------------------------------------------------------------------------

    def _may_assign(self, group, now):
        interval = self.config["group.consumer.assignment.interval.ms"]
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
        """Kafka's CurrentAssignmentBuilder: the member's next step toward its target."""
        subscribed = self._topic_ids(group.topics_of(member))
        if member.state == MEMBER_STABLE:
            if member.member_epoch != target_epoch:
                return self._next(group, member, target_epoch, target, subscribed, owned)
            return self._drop_unsubscribed(member, subscribed, owned) if subscription_changed else member
        if member.state == UNREVOKED_PARTITIONS:
            if _still_owns(owned, member.pending):
                return self._drop_unsubscribed(member, subscribed, owned) if subscription_changed else member
            return self._next(group, member, target_epoch, target, subscribed, owned)
        return self._next(group, member, target_epoch, target, subscribed, owned)

    @staticmethod
    def _next(group, member, target_epoch, target, subscribed, owned):
        keep_all, revoke_all, give_all = {}, {}, {}
        unreleased = False
        for topic_id in set(target) | set(member.assigned):
            wanted = target.get(topic_id, set()) if topic_id in subscribed else set()
            current = member.assigned.get(topic_id, {})
            keep = {p: e for p, e in current.items() if p in wanted}
            revoke = {p: e for p, e in current.items() if p not in wanted}
            give = set(wanted) - set(keep)
            pending = member.pending.get(topic_id, {})
            held = {p for p in give if group.owner_epoch(topic_id, p) != -1 and p not in pending}
            unreleased |= bool(held)
            give -= held
            if keep:
                keep_all[topic_id] = keep
            if revoke:
                revoke_all[topic_id] = revoke
            if give:
                give_all[topic_id] = give
        member = member.copy()
        if revoke_all and _still_owns(owned, revoke_all):
            member.state = UNREVOKED_PARTITIONS
            member.set_epoch(member.member_epoch)
            member.assigned, member.pending = keep_all, revoke_all
            return member
        for topic_id, parts in give_all.items():
            keep_all.setdefault(topic_id, {}).update((p, target_epoch) for p in parts)
        member.state = UNRELEASED_PARTITIONS if unreleased else MEMBER_STABLE
        member.set_epoch(target_epoch)
        member.assigned, member.pending = keep_all, {}
        return member

    @staticmethod
    def _drop_unsubscribed(member, subscribed, owned):
        """The subscription changed: partitions of topics no longer subscribed go at once, target or not."""
        if not subscribed and not member.pending:
            assigned, pending = {}, member.assigned
        else:
            assigned = {t: p for t, p in member.assigned.items() if t in subscribed}
            pending = {t: dict(p) for t, p in member.pending.items()}
            for topic_id, parts in member.assigned.items():
                if topic_id not in subscribed:
                    pending.setdefault(topic_id, {}).update(parts)
        if _partition_sets(assigned) == _partition_sets(member.assigned):
            return member
        member = member.copy()
        if pending and _still_owns(owned, pending):
            member.state = UNREVOKED_PARTITIONS
            member.pending = pending
        member.set_epoch(member.member_epoch)
        member.assigned = assigned
        return member

    def _arm_timers(self, previous, member, now):
        member.session_deadline = now + self.config["group.consumer.session.timeout.ms"]
        if member.state == UNREVOKED_PARTITIONS:
            if previous.state != UNREVOKED_PARTITIONS or member.revocation_deadline is None or \
                    _partition_sets(previous.pending) != _partition_sets(member.pending):
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
            self.groups[group.group_id] = self._downgrade(group, now)
            return
        for member_id in member_ids:
            group.drop(member_id)
        for pattern in [r for r in group.regexes if not group.regex_members(r)]:
            del group.regexes[pattern]
        group.metadata_hash = self._metadata_hash(group, group.members.values())
        group.group_epoch += 1  # the assignment catches up at the next heartbeat (an empty group keeps its old one)

    def expire(self, now):
        """Fence members whose session expired or who kept partitions past their rebalance timeout; True when
        anything changed."""
        changed = False
        for group in list(self.groups.values()):
            if group.kind != "consumer":
                continue
            late = [m.member_id for m in group.members.values() if now > m.session_deadline or (
                m.revocation_deadline is not None and now > m.revocation_deadline
                and m.member_epoch == m.revocation_epoch)]
            if late:
                self.fence(group, late, now)
                self._save(group.group_id)
                changed = True
        return changed

    def _save(self, group_id):
        """Write what changed of the group to the log (the broker's table of groups does; a plain dict, as
        tests give, keeps nothing)."""
        save = getattr(self.groups, "save", None)
        if save is not None:
            save(group_id)

    # classic members, and groups moving between the protocols -----------------------------------------------------

    def _may(self, direction):
        policy = self.config["group.consumer.migration.policy"].lower()
        return policy in ("bidirectional", direction)

    def _upgrade(self, classic, now):
        """A classic group whose members speak the consumer protocol becomes a consumer group when a KIP-848
        member joins it: its generation is the group's epoch, each member keeps what it was assigned."""
        group_id = classic.group_id

        def refuse(why):
            return GroupError(errors.GROUP_ID_NOT_FOUND,
                              f"Cannot upgrade classic group {group_id} to consumer group because {why}.")

        if not self._may("upgrade"):
            raise refuse("online upgrade is disabled")
        if classic.protocol_type != "consumer":
            raise refuse("the group does not use the consumer embedded protocol")
        if len(classic.members) > self.config["group.consumer.max.size"]:
            raise refuse("the group size exceeds the consumer group maximum size")
        group = ConsumerGroup(group_id)
        group.group_epoch = group.assignment_epoch = classic.generation  # the next assignment is made at once
        for old in classic.members.values():
            try:
                subscription = read_subscription(old.metadata(classic.protocol_name))
                assigned, user_data = read_assignment(old.assignment)
            except MalformedProtocol:
                raise refuse("the embedded consumer protocol is malformed") from None
            if user_data:
                raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer "
                                 "group because an unsupported custom assignor is in use. Please refer to the "
                                 "documentation or switch to a default assignor before re-attempting the upgrade.")
            member = ConsumerMember(old.member_id)
            member.instance_id, member.rack_id = old.instance_id, subscription.rack_id
            member.member_epoch = member.previous_epoch = classic.generation
            member.rebalance_timeout_ms = old.rebalance_timeout_ms
            member.client_id, member.client_host = old.client_id, old.client_host
            member.subscribed_names = tuple(dict.fromkeys(subscription.topics))
            member.assigned = self._by_topic_id(assigned, classic.generation)
            member.classic = (old.session_timeout_ms, list(old.protocols), subscription.version)
            member.session_deadline = now + old.session_timeout_ms
            group.put(member)
            group.target[member.member_id] = {t: set(p) for t, p in member.assigned.items()}
        group.metadata_hash = self._metadata_hash(group, group.members.values())
        classic.abandon()
        return group

    def _by_topic_id(self, by_name, epoch):
        out = {}
        for name, parts in by_name.items():
            topic = self.cluster.topics.get(name)
            if topic is not None and parts:
                out[topic.topic_id] = {p: epoch for p in parts}
        return out

    def _downgrade(self, group, now):
        """The classic group that takes over the classic-protocol members a consumer group has left."""
        members = []
        for m in group.members.values():
            session_ms, protocols, version = m.classic
            members.append(ClassicMember(m.member_id, m.instance_id, m.client_id, m.client_host, session_ms,
                                         m.rebalance_timeout_ms, "consumer", protocols,
                                         write_assignment(version, self._by_name(m.assigned))))
        return ClassicGroup.adopt(group.group_id, self.config, now / 1000, group.group_epoch, members)

    def _by_name(self, assigned):
        out = {}
        for topic_id, parts in assigned.items():
            topic = self.cluster.by_id.get(topic_id)
            if topic is not None:
                out[topic.name] = sorted(parts)
        return out

    def classic_join(self, group, now, request):
        """A JoinGroup (classic protocol) to a consumer group with members: the member takes part in KIP-848's
        assignment, and is answered at once with its epoch as the generation (it leads nothing; SyncGroup
        brings the broker's assignment)."""
        names = [name for name, _ in request.protocols]
        if request.protocol_type != "consumer" or not names or not any(
                all(n in {p for p, _ in m.classic[1]} for m in group.members.values() if m.uses_classic_protocol)
                for n in names):
            return JoinResult(errors.INCONSISTENT_GROUP_PROTOCOL, member_id=request.member_id)
        limit = self.config["group.consumer.max.size"]
        if len(group.members) >= limit and request.member_id not in group.members:
            return JoinResult(errors.GROUP_MAX_SIZE_REACHED, member_id=request.member_id)
        member_id = request.member_id or str(Uuid.random())
        if request.require_known_member_id and not request.member_id:
            return JoinResult(errors.MEMBER_ID_REQUIRED, member_id=member_id)
        if request.instance_id is not None:
            existing_id = group.static.get(request.instance_id)
            if existing_id is not None and existing_id != member_id:
                replaced = group.members[existing_id].copy()
                replaced.member_id = member_id
                target = group.target.pop(existing_id, None)
                group.drop(existing_id)
                if target is not None:
                    group.target[member_id] = target
                group.put(replaced)
        member = group.members.get(member_id)
        if member is None:
            if request.member_id and request.instance_id is None:
                return JoinResult(errors.UNKNOWN_MEMBER_ID, member_id=request.member_id)
            member = ConsumerMember(member_id)
        try:
            subscription = read_subscription(request.protocols[0][1])
        except MalformedProtocol:
            return JoinResult(errors.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
        updated = member.copy()
        updated.instance_id = request.instance_id
        if subscription.rack_id is not None:
            updated.rack_id = subscription.rack_id
        updated.rebalance_timeout_ms = request.rebalance_timeout_ms
        updated.client_id, updated.client_host = request.client_id, request.client_host
        updated.subscribed_names = tuple(dict.fromkeys(subscription.topics))
        updated.regex = ""
        updated.classic = (request.session_timeout_ms, list(request.protocols), subscription.version)
        names_changed = set(updated.subscribed_names) != set(member.subscribed_names)
        others = [m for m in group.members.values() if m.member_id != member_id]
        metadata_hash = self._metadata_hash(group, others + [updated])
        if names_changed or metadata_hash != group.metadata_hash:
            group.group_epoch += 1
            group.metadata_hash = metadata_hash
        if group.assignment_epoch < group.group_epoch and self._may_assign(group, now):
            self._assign(group, {**group.members, member_id: updated}, now)
        owned = [_Owned(self.cluster.topics[name].topic_id, parts) for name, parts in subscription.owned
                 if name in self.cluster.topics]
        updated = self._reconcile(group, updated, group.assignment_epoch, group.target.get(member_id, {}),
                                  names_changed, owned)
        updated.session_deadline = now + request.session_timeout_ms
        group.put(updated)
        return JoinResult(errors.NONE, member_id=member_id, generation=updated.member_epoch,
                          protocol_type="consumer", protocol_name=names[0], leader="")

    def _classic_member(self, group, member_id, instance_id):
        if instance_id is not None:
            known = group.static.get(instance_id)
            if known is None:
                raise GroupError(errors.UNKNOWN_MEMBER_ID)
            if known != member_id:
                raise GroupError(errors.FENCED_INSTANCE_ID)
        member = group.members.get(member_id)
        if member is None or not member.uses_classic_protocol:
            raise GroupError(errors.UNKNOWN_MEMBER_ID)
        return member

    def classic_sync(self, group, now, member_id, instance_id, generation, protocol_type, protocol_name):
        """SyncGroup from a classic member of a consumer group: the broker's assignment, in the consumer
        protocol's bytes."""
        try:
            member = self._classic_member(group, member_id, instance_id)
        except GroupError as e:
            return SyncResult(e.error)
        if generation != member.member_epoch:
            return SyncResult(errors.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != "consumer") or (
                protocol_name is not None and protocol_name not in {n for n, _ in member.classic[1]}):
            return SyncResult(errors.INCONSISTENT_GROUP_PROTOCOL)
        if group.group_epoch > member.member_epoch and member.state != UNREVOKED_PARTITIONS:
            return SyncResult(errors.REBALANCE_IN_PROGRESS)
        member.session_deadline = now + member.classic[0]
        return SyncResult(errors.NONE, protocol_type="consumer", protocol_name=protocol_name or member.classic[1][0][0],
                          assignment=write_assignment(member.classic[2], self._by_name(member.assigned)))

    def classic_heartbeat(self, group, now, member_id, instance_id, generation):
        """Heartbeat from a classic member of a consumer group: REBALANCE_IN_PROGRESS when it must join again to
        move toward its target."""
        try:
            member = self._classic_member(group, member_id, instance_id)
        except GroupError as e:
            return e.error
        if generation != member.member_epoch:
            return errors.ILLEGAL_GENERATION
        member.session_deadline = now + member.classic[0]
        target = group.target.get(member_id, {})
        released = any(group.owner_epoch(t, p) == -1 for t, parts in target.items() for p in parts
                       if p not in member.assigned.get(t, {}))
        if member.member_epoch < group.group_epoch or member.state == UNREVOKED_PARTITIONS or (
                member.state == UNRELEASED_PARTITIONS and released):
            return errors.REBALANCE_IN_PROGRESS
        return errors.NONE

    def classic_leave(self, group, now, leaving):
        """LeaveGroup to a consumer group, from classic members or an admin (by instance id): [error] in order."""
        results, gone = [], []
        for member_id, instance_id in leaving:
            if instance_id is None:
                error = errors.NONE if member_id in group.members else errors.UNKNOWN_MEMBER_ID
                found = member_id
            else:
                found = group.static.get(instance_id)
                error = errors.UNKNOWN_MEMBER_ID if found is None else (
                    errors.FENCED_INSTANCE_ID if member_id and member_id != found else errors.NONE)
            if error is errors.NONE:
                gone.append(found)
            results.append(error)
        if gone:
            self.fence(group, gone, now)
        return results

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


def preferred_assignor(members, default):
    """The assignor most members name, else the default; a tie goes to the name first in Java's hash order of
    the names, as Kafka's count map gives it."""
    counts = {}
    for member in members:
        if member.assignor is not None:
            counts[member.assignor] = counts.get(member.assignor, 0) + 1
    return max(java_order(counts, string_hash), key=counts.get) if counts else default


class _Owned(NamedTuple):
    """What a classic member says it owns, in the shape of a heartbeat's TopicPartitions."""
    topic_id: object
    partitions: list


def _owned_within(owned, member):
    """Whether every partition the member says it owns is assigned to it (an unknown list is not)."""
    if owned is None:
        return False
    for item in owned:
        assigned = member.assigned.get(item.topic_id)
        if assigned is None or any(p not in assigned for p in item.partitions):
            return False
    return True


def _still_owns(owned, pending):
    """Whether the member still reports owning any partition it must give up (an unknown list: assume so)."""
    if owned is None:
        return True
    return any(p in pending.get(item.topic_id, {}) for item in owned for p in item.partitions)
