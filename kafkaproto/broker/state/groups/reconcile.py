"""How a KIP-848 member moves toward its target assignment (Kafka's CurrentAssignmentBuilder).

A member in MEMBER_STABLE whose epoch is behind the target's gets its next step: partitions it must give up
are taken away first (UNREVOKED_PARTITIONS: it keeps its epoch until it stops reporting them as owned);
partitions still owned by another member are given only once released (UNRELEASED_PARTITIONS); then it
reaches the target's epoch. A member whose subscription changed drops the partitions of topics it no longer
subscribes to at once, target or not. No I/O, no clock: the coordinator arms the timers.
"""

from typing import NamedTuple

from .consumer_group import MEMBER_STABLE, UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS, partition_sets


def reconcile(group, member, target_epoch, target, subscribed, subscription_changed, owned):
    """The member's next step toward its target (at target_epoch); subscribed: the topic ids it subscribes to,
    owned: the partitions it says it owns ([Owned], None when it did not say). The member is not changed: a
    changed copy is returned."""
    if member.state == MEMBER_STABLE:
        if member.member_epoch != target_epoch:
            return _next(group, member, target_epoch, target, subscribed, owned)
        return _drop_unsubscribed(member, subscribed, owned) if subscription_changed else member
    if member.state == UNREVOKED_PARTITIONS:
        if still_owns(owned, member.pending):
            return _drop_unsubscribed(member, subscribed, owned) if subscription_changed else member
        return _next(group, member, target_epoch, target, subscribed, owned)
    return _next(group, member, target_epoch, target, subscribed, owned)

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
    if revoke_all and still_owns(owned, revoke_all):
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
    if partition_sets(assigned) == partition_sets(member.assigned):
        return member
    member = member.copy()
    if pending and still_owns(owned, pending):
        member.state = UNREVOKED_PARTITIONS
        member.pending = pending
    member.set_epoch(member.member_epoch)
    member.assigned = assigned
    return member


class Owned(NamedTuple):
    """What a classic member says it owns, in the shape of a heartbeat's TopicPartitions."""
    topic_id: object
    partitions: list


def owned_within(owned, member):
    """Whether every partition the member says it owns is assigned to it (an unknown list is not)."""
    if owned is None:
        return False
    for item in owned:
        assigned = member.assigned.get(item.topic_id)
        if assigned is None or any(p not in assigned for p in item.partitions):
            return False
    return True


def still_owns(owned, pending):
    """Whether the member still reports owning any partition it must give up (an unknown list: assume so)."""
    if owned is None:
        return True
    return any(p in pending.get(item.topic_id, {}) for item in owned for p in item.partitions)
