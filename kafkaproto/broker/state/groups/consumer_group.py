"""A KIP-848 consumer group and its members, as the coordinator keeps them (stored.py writes and loads them).

A group's state follows from its epochs: Empty with no members, Assigning while its group epoch is ahead of
its assignment epoch (the target is computed at the next heartbeat), Reconciling while a member has not
reached the target yet, else Stable. A member's own state is reconcile.py's.
"""

from .... import errors
from .assignors import java_order, string_hash

EMPTY, ASSIGNING, RECONCILING, STABLE = "Empty", "Assigning", "Reconciling", "Stable"
# A member's state on its way to its target (Kafka's MemberState): reconcile.py moves it.
MEMBER_STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS = "stable", "unrevoked", "unreleased"


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

    def deadlines(self):
        """When it is fenced: at the end of its session, and at the end of its rebalance timeout while it still
        holds the partitions it was told to revoke at that epoch."""
        yield self.session_deadline
        if self.revocation_deadline is not None and self.member_epoch == self.revocation_epoch:
            yield self.revocation_deadline

    @property
    def uses_classic_protocol(self):
        return self.classic is not None


def partition_sets(assignment):
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
        # regex -> (the metadata log offset it was last resolved at, when on the coordinator's clock; None once
        # loaded again): what its record says of the resolution
        self.regex_resolved = {}
        self.regex_refreshed_ms = None
        self.regex_topics_seen = None  # the topic names the last resolution saw
        self.hash_memo = None  # (what the metadata hash was computed from, the hash): see _metadata_hash
        # The classic group that takes this one's place when only classic members are left (migration.py); the
        # group coordinator stores it.
        self.replaced_by = None

    pending_join = frozenset()  # what the coordinator asks of every kind of group (a classic group's may not be)

    def next_deadline(self):
        """When the next member is due to be fenced (ConsumerCoordinator.expire), or None."""
        return min((deadline for m in self.members.values() for deadline in m.deadlines()), default=None)

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


def preferred_assignor(members, default):
    """The assignor most members name, else the default; a tie goes to the name first in Java's hash order of
    the names, as Kafka's count map gives it."""
    counts = {}
    for member in members:
        if member.assignor is not None:
            counts[member.assignor] = counts.get(member.assignor, 0) + 1
    return max(java_order(counts, string_hash), key=counts.get) if counts else default
