"""Share groups (KIP-932): members that the broker gives partitions to share, as Kafka 4.3's group coordinator
runs them (GroupMetadataManager's share-group paths, ShareGroupAssignmentBuilder, SimpleAssignor).

A member names itself (a UUID the client makes) and heartbeats with its epoch: 0 to join, -1 to leave. There is no
revocation: a member at an older epoch takes the target assignment at once. Records, not partitions, are what
members must not share, so a partition may be given to several members (state/shares.py hands out its records).

Epochs, as Kafka 4.3 numbers them: a new group is at epoch 1 with an empty assignment at epoch 1. A change of the
members, of what they subscribe to, of the subscribed topics' partitions, or a partition becoming ready to share
bumps the group epoch; the next heartbeat computes a new target assignment at that epoch, but at most once every
``share.assignment.interval.ms`` (KIP-1263's batching). A partition is given out only once its share state is
initialized: the heartbeat that first subscribes to a topic initializes its partitions after it is answered, so
the member is given them at a later heartbeat, as from Kafka, whose initialization is a request to the share
coordinator.

A member's session ends ``share.session.timeout.ms`` after its last heartbeat; then it is removed as if it had
left. What it held is released by its share session, not here (state/shares.py).

    Empty --(a member joins)--> Stable --(the last member leaves or times out)--> Empty
"""

from fractions import Fraction
from math import ceil

from .... import errors
from .assignors import java_order, string_hash
from .consumer_group import GroupError

EMPTY, STABLE = "Empty", "Stable"
LEAVE_EPOCH = -1


class ShareMember:
    __slots__ = ("member_id", "rack_id", "client_id", "client_host", "subscribed", "member_epoch",
                 "previous_epoch", "assigned", "session_deadline")

    def __init__(self, member_id):
        self.member_id = member_id
        self.rack_id = None
        self.client_id = ""
        self.client_host = ""
        self.subscribed = ()  # topic names, distinct, in the order first asked for
        self.member_epoch = 0
        self.previous_epoch = -1
        self.assigned = {}  # topic id -> set of partitions
        self.session_deadline = 0


class ShareGroup:
    kind = "share"
    protocol_type = "share"
    pending_join = frozenset()

    def __init__(self, group_id):
        self.group_id = group_id
        self.group_epoch = 1
        self.assignment_epoch = 1
        self.assignment_time_ms = None  # when the target was last computed (None: compute at once)
        self.members = {}  # member id -> ShareMember, in order of joining
        self.target = {}  # member id -> {topic id: set of partitions}
        self.initialized = {}  # topic id -> set of partitions whose share state is initialized
        self.topic_names = {}  # topic id -> name, for the initialized topics
        self.metadata = ()  # what the subscribed topics looked like at the last epoch: ((name, id, partitions))

    @property
    def state(self):
        return STABLE if self.members else EMPTY

    def next_deadline(self):
        return min((m.session_deadline for m in self.members.values()), default=None)

    def deletable(self):
        return errors.NONE if not self.members else errors.NON_EMPTY_GROUP

    def topics_of(self, member):
        return frozenset(member.subscribed)

    def subscribed_names(self):
        names = {}
        for member in self.members.values():
            names.update(dict.fromkeys(member.subscribed))
        return list(names)


class Beat:
    """A heartbeat's answer: the member's id and epoch, the interval, and its partitions when it must be told
    ({topic id: sorted partitions}), else None."""

    def __init__(self, member_id, member_epoch, interval_ms, assignment):
        self.member_id, self.member_epoch, self.interval_ms, self.assignment = (member_id, member_epoch,
                                                                                interval_ms, assignment)


def _invalid(message):
    return GroupError(errors.INVALID_REQUEST, message)


class ShareRules:
    """The share-group paths of the group coordinator: heartbeats, leaving, sessions ending, describing."""

    def __init__(self, groups, cluster, config, initialize):
        self.groups = groups  # the coordinator's GroupTable
        self.cluster = cluster
        self.config = config
        self.initialize = initialize  # initialize(group, {topic id: partitions}): their share state made

    def setting(self, group_id, name):
        return self.cluster.group_setting(group_id, name)

    def group(self, group_id, create=False):
        group = self.groups.get(group_id)
        if group is None:
            if not create:
                raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
            group = self.groups[group_id] = ShareGroup(group_id)
        elif group.kind != "share":
            raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        return group

    # ---- heartbeats ------------------------------------------------------------------------------------------

    def heartbeat(self, request, client_id, client_host, now):
        """A ShareGroupHeartbeat: a Beat, or GroupError with Kafka's words."""
        epoch = request.member_epoch
        if request.member_id == "":
            raise _invalid("MemberId can't be empty.")
        if request.group_id == "":
            raise _invalid("GroupId can't be empty.")
        if request.rack_id == "":
            raise _invalid("RackId can't be empty.")
        if epoch == 0 and not request.subscribed_topic_names:
            raise _invalid("SubscribedTopicNames must be set in first request.")
        if epoch < LEAVE_EPOCH:
            raise _invalid("MemberEpoch is invalid.")
        if epoch == LEAVE_EPOCH:
            return self.leave(request.group_id, request.member_id)
        group = self.group(request.group_id, create=epoch == 0)
        member = group.members.get(request.member_id)
        if member is None:
            limit = self.config["group.share.max.size"]
            if epoch != 0:
                raise GroupError(errors.UNKNOWN_MEMBER_ID,
                                 f"Member {request.member_id} is not a member of group {group.group_id}.")
            if len(group.members) >= limit:
                raise GroupError(errors.GROUP_MAX_SIZE_REACHED,
                                 f"The share group has reached its maximum capacity of {limit} members.")
            member = ShareMember(request.member_id)
        elif epoch > member.member_epoch:
            raise GroupError(errors.FENCED_MEMBER_EPOCH, f"The share group member has a greater member epoch "
                             f"({epoch}) than the one known by the group coordinator ({member.member_epoch}). "
                             "The member must abandon all its partitions and rejoin.")
        elif 0 < epoch < member.member_epoch and epoch != member.previous_epoch:
            raise GroupError(errors.FENCED_MEMBER_EPOCH, f"The share group member has a smaller member epoch "
                             f"({epoch}) than the one known by the group coordinator ({member.member_epoch}), and it "
                             f"does not match the previous member epoch ({member.previous_epoch}). The member must "
                             "abandon all its partitions and rejoin.")
        if request.rack_id is not None:
            member.rack_id = request.rack_id
        member.client_id, member.client_host = client_id, client_host
        subscription_changed = False
        if request.subscribed_topic_names is not None:
            names = tuple(dict.fromkeys(request.subscribed_topic_names))
            subscription_changed = set(names) != set(member.subscribed)
            member.subscribed = names
        joined = member.member_id not in group.members
        group.members[member.member_id] = member
        metadata = self._metadata(group)
        if joined or subscription_changed or metadata != group.metadata or (
                group.group_epoch == group.assignment_epoch and self._initialized_pending(group)):
            group.group_epoch += 1
            group.metadata = metadata
        interval = self.setting(group.group_id, "share.assignment.interval.ms")
        if group.group_epoch > group.assignment_epoch and (group.assignment_time_ms is None
                                                           or now - group.assignment_time_ms >= interval):
            group.target = self._assign(group)
            group.assignment_epoch = group.group_epoch
            group.assignment_time_ms = now
        before = member.assigned
        if member.member_epoch != group.assignment_epoch:
            member.previous_epoch, member.member_epoch = member.member_epoch, group.assignment_epoch
        member.assigned = self._held(group, member)
        member.session_deadline = now + self.setting(group.group_id, "share.session.timeout.ms")
        tell = epoch == 0 or request.subscribed_topic_names is not None or member.assigned != before
        self._initialize_subscribed(group)
        return Beat(member.member_id, member.member_epoch,
                    self.setting(group.group_id, "share.heartbeat.interval.ms"),
                    {t: sorted(p) for t, p in member.assigned.items()} if tell else None)

    def leave(self, group_id, member_id):
        group = self.group(group_id)
        if member_id not in group.members:
            raise GroupError(errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        self._remove(group, member_id)
        return Beat(member_id, LEAVE_EPOCH, 0, None)

    def _remove(self, group, member_id):
        del group.members[member_id]
        group.target.pop(member_id, None)
        group.group_epoch += 1
        group.metadata = self._metadata(group)

    def expire(self, group, now):
        """Remove the members whose session is over; True when any was."""
        gone = [m for m, member in group.members.items() if member.session_deadline <= now]
        for member_id in gone:
            self._remove(group, member_id)
        return bool(gone)

    # ---- topics and partitions --------------------------------------------------------------------------------

    def _metadata(self, group):
        """The subscribed topics as they are: ((name, topic id, partitions)), in name order."""
        out = []
        for name in sorted(group.subscribed_names()):
            topic = self.cluster.topics.get(name)
            if topic is not None:
                out.append((name, topic.topic_id, len(topic.partitions)))
        return tuple(out)

    def _initialized_pending(self, group):
        """Whether some subscribed topic has initialized partitions the target does not know of (or the other
        way round): a new target is due."""
        targeted = {}
        for parts in group.target.values():
            for topic_id, ps in parts.items():
                targeted.setdefault(topic_id, set()).update(ps)
        for _, topic_id, _ in group.metadata:
            if group.initialized.get(topic_id, set()) != targeted.get(topic_id, set()):
                return True
        return False

    def _initialize_subscribed(self, group):
        """Initialize the share state of the subscribed topics' partitions that have none yet (after the answer,
        as Kafka's coordinator asks the share coordinator once the heartbeat is written)."""
        wanted = {}
        for name, topic_id, count in self._metadata(group):
            missing = set(range(count)) - group.initialized.get(topic_id, set())
            if missing:
                wanted[topic_id] = missing
                group.topic_names[topic_id] = name
        if wanted:
            self.initialize(group, wanted)
            for topic_id, parts in wanted.items():
                group.initialized.setdefault(topic_id, set()).update(parts)

    def _held(self, group, member):
        """The member's target, narrowed to the topics it subscribes to that exist."""
        names = set(member.subscribed)
        ids = {self.cluster.topics[n].topic_id for n in names if n in self.cluster.topics}
        return {t: set(p) for t, p in group.target.get(member.member_id, {}).items() if t in ids and p}

    def forget_topic(self, group, topic_id):
        group.initialized.pop(topic_id, None)
        group.topic_names.pop(topic_id, None)

    # ---- the simple assignor -----------------------------------------------------------------------------------

    def _assign(self, group):
        """Kafka's SimpleAssignor over the initialized partitions: each member's share of the partitions it
        subscribes to, partitions shared by several members when there are more members than partitions, and
        what a member held kept where it can be. All members subscribing to the same topics share one pool of
        partitions; otherwise each topic is shared among its subscribers."""
        by_name = {name: topic_id for name, topic_id, _ in group.metadata}
        subscriptions = {m: {by_name[n] for n in member.subscribed if n in by_name}
                         for m, member in group.members.items()}
        members = java_order(group.members, string_hash)
        ready = {t: sorted(group.initialized.get(t, ())) for t in by_name.values()}
        target = {m: {} for m in members}
        if len({frozenset(s) for s in subscriptions.values()}) <= 1:
            pools = [(members, [(t, p) for t in sorted(ready, key=str) if t in subscriptions[members[0]]
                                for p in ready[t]])] if members else []
        else:
            pools = [([m for m in members if t in subscriptions[m]], [(t, p) for p in ready[t]])
                     for t in sorted(ready, key=str)]
        for pool_members, partitions in pools:
            for member_id, held in _share_out(pool_members, partitions, group.target).items():
                for topic_id, p in held:
                    target[member_id].setdefault(topic_id, set()).add(p)
        return target


def _share_out(members, partitions, previous):
    """{member: [(topic id, partition)]}: each partition to ceil(members / partitions) members, each member
    Kafka's desired count of them, those a member held first."""
    if not members or not partitions:
        return {}
    sharing = ceil(len(members) / len(partitions))
    x = Fraction(sharing * len(partitions), len(members))
    quota = {m: ceil(x * (i + 1)) - ceil(x * i) for i, m in enumerate(members)}
    holders = {tp: 0 for tp in partitions}
    out = {m: [] for m in members}
    order = {tp: i for i, tp in enumerate(partitions)}
    for m in members:  # keep what each held; an overfilled member gives up its first partitions, as in Kafka
        held = sorted((tp for topic_id, parts in previous.get(m, {}).items() for tp in
                       ((topic_id, p) for p in parts) if tp in holders), key=order.get)
        for tp in held[max(len(held) - quota[m], 0):]:
            if holders[tp] < sharing:
                out[m].append(tp)
                holders[tp] += 1
    hungry = [m for m in members if len(out[m]) < quota[m]]
    turn = 0
    for tp in partitions:
        tries = 0
        while holders[tp] < sharing and hungry and tries < len(hungry):
            m = hungry[turn % len(hungry)]
            if tp not in out[m]:
                out[m].append(tp)
                holders[tp] += 1
                if len(out[m]) >= quota[m]:
                    hungry.remove(m)
                    continue
                turn += 1
                tries = 0
            else:
                turn += 1
                tries += 1
    return out
