"""The server-side assignors of KIP-848 consumer groups: ``uniform`` (the default) and ``range``.

Both take the members' subscriptions (topic ids) and their current target
assignments and return the next target: {member id: {topic id: set of partitions}}.

``uniform`` spreads partitions evenly and keeps each member's partitions
where it can. Where several answers are equally good, Kafka's choice follows
the iteration order of Java hash maps (member ids, topic ids); ``JavaOrder``
reproduces that order, so that this broker hands out the same partitions as
Kafka for the same group. ``range`` gives each member contiguous ranges of
every topic it subscribes to, members ordered by instance id, then member id;
it is not sticky.
"""

from typing import NamedTuple

from ..java_hashes import string_hash, uuid_hash


class MemberSpec(NamedTuple):
    instance_id: object  # str or None
    topics: frozenset  # subscribed topic ids (only topics that exist)
    current: dict  # {topic id: set of partitions}: the member's current target


class AssignorError(Exception):
    pass


# --- Java's hash iteration order -------------------------------------------------------------------------------

def _capacity(count, copied):
    """The table size of a java.util.HashMap holding count keys: inserted one by one, or copied from a collection
    (new HashSet<>(c) sizes the table for c up front)."""
    if copied:
        need = max(int(count / 0.75) + 1, 16)
        capacity = 1
        while capacity < need:
            capacity <<= 1
        return capacity
    capacity = 16
    while count > capacity * 0.75:
        capacity <<= 1
    return capacity


def java_order(keys, hash_of, copied=False):
    """keys in the order a java.util.HashMap/HashSet holding them iterates (bucket, then insertion order)."""
    keys = list(keys)
    mask = _capacity(len(keys), copied) - 1

    def bucket(item):
        h = hash_of(item[1]) & 0xFFFFFFFF
        return ((h ^ (h >> 16)) & mask, item[0])

    return [key for _, key in sorted(enumerate(keys), key=bucket)]


def topic_order(topic_ids, copied=False):
    return java_order(topic_ids, uuid_hash, copied)


# --- uniform ------------------------------------------------------------------------------------------------------

def uniform(members, partitions_of):
    """members: {member id: MemberSpec} in the group's order; partitions_of(topic id) -> count or None."""
    if not members:
        return {}
    member_ids = java_order(members, string_hash)
    first = members[member_ids[0]].topics
    if all(spec.topics == first for spec in members.values()):
        return _uniform_homogeneous(members, member_ids, first, partitions_of)
    return _uniform_heterogeneous(members, member_ids, partitions_of)


def _count(topic_id, partitions_of):
    count = partitions_of(topic_id)
    if count is None:
        raise AssignorError(f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata.")
    return count


def _uniform_homogeneous(members, member_ids, topics, partitions_of):
    if not topics:
        return {m: {} for m in member_ids}
    taken = {(t, p) for spec in members.values() for t, parts in spec.current.items() for p in parts}
    unassigned, total = [], 0
    for topic_id in topic_order(topics, copied=True):
        count = _count(topic_id, partitions_of)
        unassigned += [(topic_id, p) for p in range(count) if (topic_id, p) not in taken]
        total += count
    quota_min, extra = divmod(total, len(member_ids))
    target, unfilled = {}, []
    for member_id in member_ids:
        quota = quota_min + (1 if extra > 0 else 0)
        extra -= 1 if extra > 0 else 0
        kept = {}
        current = members[member_id].current
        for topic_id in topic_order(current):
            if topic_id not in topics:
                continue
            parts = sorted(current[topic_id])
            keep = parts[:max(quota, 0)]
            unassigned += [(topic_id, p) for p in parts[len(keep):]]
            quota -= len(keep)
            if keep:
                kept[topic_id] = set(keep)
        if quota > 0:
            unfilled.append((member_id, quota))
        target[member_id] = kept
    at = 0
    for member_id, quota in unfilled:
        for topic_id, p in unassigned[at:at + quota]:
            target[member_id].setdefault(topic_id, set()).add(p)
        at += quota
    if at < len(unassigned):
        raise AssignorError("Partitions were left unassigned")
    return target


def _uniform_heterogeneous(members, member_ids, partitions_of):
    index = {m: i for i, m in enumerate(member_ids)}
    subscribers, counts = {}, {}
    for member_id in member_ids:
        for topic_id in topic_order(members[member_id].topics, copied=True):
            counts[topic_id] = _count(topic_id, partitions_of)
            subscribers.setdefault(topic_id, []).append(index[member_id])
    size = [0] * len(member_ids)
    owners = {t: [-1] * n for t, n in counts.items()}
    target = [dict() for _ in member_ids]
    for member_id in member_ids:  # keep what each member has of the topics it still subscribes to
        i = index[member_id]
        for topic_id, parts in members[member_id].current.items():
            if topic_id in counts:
                target[i][topic_id] = set(parts)
                size[i] += len(parts)
                for p in parts:
                    if p < counts[topic_id]:
                        owners[topic_id][p] = i

    def assign(topic_id, p, i):
        old = owners[topic_id][p]
        if old != -1:
            target[old][topic_id].discard(p)
            size[old] -= 1
        target[i].setdefault(topic_id, set()).add(p)
        owners[topic_id][p] = i
        size[i] += 1

    def topic_key(topic_id):
        return (-(counts[topic_id] / len(subscribers[topic_id])), len(subscribers[topic_id]),
                _uuid_compare_key(topic_id))

    for topic_id in sorted((t for t in counts if -1 in owners[t]), key=topic_key):
        balancer = _Balancer(size)
        balancer.initialize(subscribers[topic_id])
        for p in range(counts[topic_id]):
            if owners[topic_id][p] == -1:
                assign(topic_id, p, balancer.next_least_loaded())
    balanced = sorted((t for t in counts if len(subscribers[t]) >= 2), key=topic_key)
    last_moved = None
    for _ in range(16 if balanced else 0):  # rounds over the topics, until one full round moves nothing
        for topic_id in balanced:
            if _balance_topic(topic_id, counts[topic_id], subscribers[topic_id], owners, size, assign):
                last_moved = topic_id
            elif topic_id == last_moved:
                break
        else:
            continue
        break
    return {member_id: {t: parts for t, parts in target[index[member_id]].items() if parts}
            for member_id in member_ids}


def _uuid_compare_key(uuid):
    """Kafka's Uuid.compareTo: the most significant long, then the least, both signed."""
    return (uuid.most_significant_bits, uuid.least_significant_bits)


class _Balancer:
    """Kafka's MemberAssignmentBalancer: the least and most loaded of a topic's subscribers, by level."""

    def __init__(self, size):
        self.size = size

    def initialize(self, members):
        self.sorted = sorted(members, key=lambda i: (self.size[i], i))
        n = len(self.sorted)
        self.least_end, self.least_count, self.next_least = 0, self.size[self.sorted[0]] - 1, 0
        self.most_start = self.most_end = n
        self.most_count, self.next_most = self.size[self.sorted[-1]] + 1, n - 1
        return self.size[self.sorted[-1]] - self.size[self.sorted[0]]

    def next_least_loaded(self):
        if self.next_least >= self.least_end:
            self.least_count += 1
            while self.least_end < len(self.sorted) and self.size[self.sorted[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        member = self.sorted[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self):
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = self.size[self.sorted[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and self.size[self.sorted[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = self.sorted[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self):
        a, b = self.next_most + 1, self.most_end - 1
        self.sorted[a], self.sorted[b] = self.sorted[b], self.sorted[a]
        self.most_end -= 1

    def is_balanced(self):
        return self.most_count - self.least_count <= 1


def _balance_topic(topic_id, count, subscribers, owners, size, assign):
    balancer = _Balancer(size)
    if balancer.initialize(subscribers) <= 1:
        return 0
    parts = sorted(range(count), key=lambda p: (owners[topic_id][p], p))
    start, end = {}, {}
    for at, p in enumerate(parts):
        owner = owners[topic_id][p]
        start.setdefault(owner, at)
        end[owner] = at + 1
    moved = 0
    while not balancer.is_balanced():
        while True:
            member = balancer.next_most_loaded()
            if member == -1:
                return moved
            if member not in end or end[member] - start[member] <= 0:
                balancer.exclude_most_loaded()
                continue
            break
        end[member] -= 1
        p = parts[end[member]]
        least = balancer.next_least_loaded()
        if balancer.is_balanced():
            break
        assign(topic_id, p, least)
        moved += 1
    return moved


# --- range --------------------------------------------------------------------------------------------------------

def range_assignor(members, partitions_of):
    """Contiguous ranges of each topic, to its subscribers ordered by instance id, then member id."""
    static = sorted((m for m, s in members.items() if s.instance_id is not None),
                    key=lambda m: _java_string_key(members[m].instance_id))
    dynamic = sorted((m for m, s in members.items() if s.instance_id is None), key=_java_string_key)
    order = static + dynamic
    subscribers = {}
    for member_id in order:
        for topic_id in members[member_id].topics:
            if partitions_of(topic_id) is None:
                raise AssignorError("Member is subscribed to a non-existent topic")
            subscribers[topic_id] = subscribers.get(topic_id, 0) + 1
    state = {t: [divmod(partitions_of(t), n), 0] for t, n in subscribers.items()}  # ((quota, extra), next start)
    target = {m: {} for m in order}
    for member_id in order:
        for topic_id in members[member_id].topics:
            (quota, extra), start = state[topic_id]
            if extra > 0:
                quota += 1
                state[topic_id][0] = (state[topic_id][0][0], extra - 1)
            stop = min(start + quota, partitions_of(topic_id))
            state[topic_id][1] = stop
            if start < stop:
                target[member_id][topic_id] = set(range(start, stop))
    return target


def _java_string_key(text):
    """String.compareTo orders by UTF-16 code units."""
    return text.encode("utf-16-be")


ASSIGNORS = {"uniform": uniform, "range": range_assignor}
