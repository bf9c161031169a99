"""What a group keeps across a restart: its metadata, as records in the offsets log beside its committed offsets,
and the groups rebuilt from those records at start-up.

Kafka's group coordinator keeps the same things in ``__consumer_offsets``, one record kind each, and loads them
again when it starts, so that members whose clients go on heartbeating carry on without a rebalance. The kinds:

- ``GroupMetadata`` (a classic group): protocol type, generation, protocol, leader, and each member with its id,
  static instance id, client id and host, session and rebalance timeouts, protocols and assignment. As in Kafka it
  is written when a generation becomes stable (the leader's SyncGroup), when a static member takes its old self's
  place in a stable group, and when the group empties; a crash during a rebalance brings back the last stable
  generation, whose members then join again as they would have.
- ``ConsumerGroupMetadata`` (a KIP-848 group): the group epoch and the hash of its subscribed topics' metadata
  (and the order of its members).
- ``ConsumerGroupMemberMetadata``, per member: instance and rack ids, client id and host, subscribed names and
  regular expression, server assignor, rebalance timeout, and for a member of the classic protocol its session
  timeout, protocols and subscription version.
- ``ConsumerGroupTargetAssignmentMetadata``: the assignment epoch; ``ConsumerGroupTargetAssignmentMember``, per
  member: its target partitions.
- ``ConsumerGroupCurrentMemberAssignment``, per member: member and previous epochs, reconciliation state, the
  partitions it holds (each with the epoch it was given at) and those it must give up.
- ``ConsumerGroupRegularExpression``, per regular expression: the topics it resolved to.
- ``ShareGroupMetadata`` (a share group, KIP-932): the group and assignment epochs, the subscribed topics' shape
  and the order of its members; ``ShareGroupMemberMetadata``, per member: rack, client id and host, subscribed
  names, epochs, its target and the partitions it holds; ``ShareGroupStatePartitionMetadata``: the partitions
  whose share state is initialized (the state itself is state/shares.py's).
- ``StreamsGroupMetadata`` (a streams group, KIP-1071): its epochs, the topology it runs and the order of its
  members; ``StreamsGroupMemberMetadata``, per member: its metadata, epochs, state, tasks (held and being given
  up) and target tasks. What the topology needs of the cluster is worked out again at the next heartbeat.

Keys and values are JSON, as the offsets' are: a key is an object ``{"record": kind, "group": id}`` (with
``"member"`` or ``"regex"`` for the per-member and per-expression kinds), so it never reads as an offset's key (a
list); a value holds the record's fields, and a null value (a tombstone) removes the record. A group's records are
compared with what is stored and only the difference is written, in one batch: a heartbeat that changes nothing
writes nothing, so the log grows with membership changes, not with time. A group deleted or forgotten leaves
tombstones for every record it had.

At start-up every member's session (and a KIP-848 member's revocation deadline) starts afresh, as Kafka
reschedules loaded members; what waits on a request (a parked JoinGroup, say) is not kept.
"""

import base64

from ....uuid import Uuid
from .classic import ClassicGroup, KeptGeneration, KeptMember
from .consumer_group import UNREVOKED_PARTITIONS, ConsumerGroup, ConsumerMember
from .share import ShareGroup, ShareMember
from .streams import ROLES, StreamsGroup, StreamsMember

CLASSIC = "GroupMetadata"
GROUP_EPOCH = "ConsumerGroupMetadata"
MEMBER = "ConsumerGroupMemberMetadata"
TARGET_EPOCH = "ConsumerGroupTargetAssignmentMetadata"
TARGET = "ConsumerGroupTargetAssignmentMember"
CURRENT = "ConsumerGroupCurrentMemberAssignment"
REGEX = "ConsumerGroupRegularExpression"
SHARE_GROUP = "ShareGroupMetadata"
SHARE_MEMBER = "ShareGroupMemberMetadata"
SHARE_PARTITIONS = "ShareGroupStatePartitionMetadata"
STREAMS_GROUP = "StreamsGroupMetadata"
STREAMS_MEMBER = "StreamsGroupMemberMetadata"
_BY_MEMBER = (MEMBER, TARGET, CURRENT, SHARE_MEMBER, STREAMS_MEMBER)


# ---- keys -----------------------------------------------------------------------------------------------------

def json_key(group_id, key):
    """The log's key of one of a group's records; key is (kind, member id or regex or None)."""
    kind, sub = key
    out = {"record": kind, "group": group_id}
    if kind in _BY_MEMBER:
        out["member"] = sub
    elif kind == REGEX:
        out["regex"] = sub
    return out


def split_key(value):
    """(group id, (kind, member id or regex or None)) of a key read from the log; ValueError if it is not one."""
    try:
        return value["group"], (value["record"], value.get("member", value.get("regex")))
    except (KeyError, TypeError):
        raise ValueError(f"not a group metadata key: {value!r}") from None


# ---- what a group keeps -----------------------------------------------------------------------------------------

def _b64(data):
    return base64.b64encode(bytes(data)).decode("ascii")


def _bytes(text):
    return base64.b64decode(text)


def _protocols(protocols):
    return [[name, _b64(metadata)] for name, metadata in protocols]


def _classic_value(kept):
    return {"protocol_type": kept.protocol_type, "generation": kept.generation, "protocol": kept.protocol_name,
            "leader": kept.leader, "members": [
                {"member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
                 "client_host": m.client_host, "session_timeout_ms": m.session_timeout_ms,
                 "rebalance_timeout_ms": m.rebalance_timeout_ms, "protocol_type": m.protocol_type,
                 "protocols": _protocols(m.protocols), "assignment": _b64(m.assignment)}
                for m in kept.members]}


# Topics (and a member's partitions) stay in the order the broker holds them: where Kafka iterates a Java HashMap,
# that order decides ties (assignors.java_order), so the group loaded again must hold them in the same order.

def _partitions(by_topic):
    """{topic id: set of partitions} as [[topic id, [partitions]]]."""
    return [[str(t), sorted(parts)] for t, parts in by_topic.items()]


def _epochs(by_topic):
    """{topic id: {partition: epoch}} as [[topic id, [[partition, epoch]]]]."""
    return [[str(t), [[p, e] for p, e in parts.items()]] for t, parts in by_topic.items()]


def _consumer_records(group):
    # The members' order is kept too (Kafka's records have no such field): where a Java HashMap's order would
    # leave a tie to insertion order, this broker breaks it by the order members joined in.
    records = {(GROUP_EPOCH, None): {"epoch": group.group_epoch, "metadata_hash": group.metadata_hash,
                                     "member_order": list(group.members)}}
    for regex, topics in group.regexes.items():
        records[(REGEX, regex)] = {"topics": sorted(topics)}
    for member in group.members.values():
        classic = None
        if member.classic is not None:
            session_ms, protocols, version = member.classic
            classic = {"session_timeout_ms": session_ms, "supported_protocols": _protocols(protocols),
                       "subscription_version": version}
        records[(MEMBER, member.member_id)] = {
            "instance_id": member.instance_id, "rack_id": member.rack_id, "client_id": member.client_id,
            "client_host": member.client_host, "subscribed_topic_names": list(member.subscribed_names),
            "subscribed_topic_regex": member.regex, "server_assignor": member.assignor,
            "rebalance_timeout_ms": member.rebalance_timeout_ms, "classic_member_metadata": classic}
    records[(TARGET_EPOCH, None)] = {"assignment_epoch": group.assignment_epoch}
    for member_id, target in group.target.items():
        records[(TARGET, member_id)] = {"topic_partitions": _partitions(target)}
    for member in group.members.values():
        records[(CURRENT, member.member_id)] = {
            "member_epoch": member.member_epoch, "previous_member_epoch": member.previous_epoch,
            "state": member.state, "assigned_partitions": _epochs(member.assigned),
            "partitions_pending_revocation": _epochs(member.pending)}
    return records


def _share_records(group):
    records = {(SHARE_GROUP, None): {
        "epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
        "metadata": [[name, str(topic_id), count] for name, topic_id, count in group.metadata],
        "member_order": list(group.members)}}
    for member in group.members.values():
        records[(SHARE_MEMBER, member.member_id)] = {
            "rack_id": member.rack_id, "client_id": member.client_id, "client_host": member.client_host,
            "subscribed_topic_names": list(member.subscribed), "member_epoch": member.member_epoch,
            "previous_member_epoch": member.previous_epoch, "assigned_partitions": _partitions(member.assigned),
            "target": _partitions(group.target.get(member.member_id, {}))}
    if group.initialized:
        records[(SHARE_PARTITIONS, None)] = {"initialized_topics": [
            [str(t), group.topic_names.get(t, ""), sorted(parts)] for t, parts in group.initialized.items()]}
    return records


def _tasks(tasks):
    return {role: [[s, sorted(ps)] for s, ps in sorted(tasks[role].items())] for role in ROLES}


def _task_sets(value):
    return {role: {s: set(ps) for s, ps in value[role]} for role in ROLES}


def _streams_records(group):
    records = {(STREAMS_GROUP, None): {
        "epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch, "topology": group.topology,
        "validated_topology_epoch": group.validated_epoch, "assignment_configs": group.assignment_configs,
        "topics": [list(t) for t in group.shape or ()], "member_order": list(group.members)}}
    for m in group.members.values():
        records[(STREAMS_MEMBER, m.member_id)] = {
            "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
            "topology_epoch": m.topology_epoch, "process_id": m.process_id,
            "user_endpoint": list(m.user_endpoint) if m.user_endpoint else None, "client_tags": m.client_tags,
            "member_epoch": m.member_epoch, "previous_member_epoch": m.previous_epoch, "state": m.state,
            "assigned": _tasks(m.assigned), "pending": _tasks(m.pending),
            "target": _tasks(group.target.get(m.member_id, {r: {} for r in ROLES}))}
    return records


def records_of(group):
    """{(kind, member id or regex or None): value}: what the group keeps now (nothing for None, a group gone)."""
    if group is None:
        return {}
    if group.kind == "consumer":
        return _consumer_records(group)
    if group.kind == "share":
        return _share_records(group)
    if group.kind == "streams":
        return _streams_records(group)
    return {} if group.kept is None else {(CLASSIC, None): _classic_value(group.kept)}


def changes(group_id, stored, group):
    """The records to write so that the log holds what group keeps, given what it holds (stored): [(log key,
    value or None for a tombstone)], empty when nothing changed."""
    now = records_of(group)
    out = [(json_key(group_id, key), None) for key in stored if key not in now]
    out += [(json_key(group_id, key), value) for key, value in now.items() if stored.get(key) != value]
    return out


# ---- groups again, from their records ---------------------------------------------------------------------------

def load(group_id, records, config, now):
    """The group the records describe, or None; now: when its members' sessions start (the coordinator's clock)."""
    if (GROUP_EPOCH, None) in records:
        return _load_consumer(group_id, records, config, now)
    if (SHARE_GROUP, None) in records:
        return _load_share(group_id, records, config, now)
    if (STREAMS_GROUP, None) in records:
        return _load_streams(group_id, records, config, now)
    value = records.get((CLASSIC, None))
    if value is None:
        return None
    kept = KeptGeneration(value["generation"], value["protocol_type"], value["protocol"], value["leader"], tuple(
        KeptMember(m["member_id"], m["instance_id"], m["client_id"], m["client_host"], m["session_timeout_ms"],
                   m["rebalance_timeout_ms"], m["protocol_type"],
                   tuple((name, _bytes(data)) for name, data in m["protocols"]), _bytes(m["assignment"]))
        for m in value["members"]))
    return ClassicGroup.loaded(group_id, config, kept, now)


def _topic_sets(items):
    return {Uuid.from_string(t): set(parts) for t, parts in items}


def _topic_epochs(items):
    return {Uuid.from_string(t): {p: e for p, e in parts} for t, parts in items}


def _load_consumer(group_id, records, config, now_ms):
    group = ConsumerGroup(group_id)
    meta = records[(GROUP_EPOCH, None)]
    group.group_epoch, group.metadata_hash = meta["epoch"], meta["metadata_hash"]
    group.assignment_epoch = records.get((TARGET_EPOCH, None), {}).get("assignment_epoch", group.assignment_epoch)
    group.assignment_time_ms = 0  # the next assignment may be made at once, as in a new coordinator
    for (kind, sub), value in records.items():
        if kind == REGEX:
            group.regexes[sub] = frozenset(value["topics"])  # resolved again at the next heartbeat that asks
        elif kind == TARGET:
            group.target[sub] = _topic_sets(value["topic_partitions"])
    order = {member_id: i for i, member_id in enumerate(meta.get("member_order", ()))}
    listed = [(member_id, value) for (kind, member_id), value in records.items() if kind == MEMBER]
    for member_id, value in sorted(listed, key=lambda item: order.get(item[0], len(order))):
        member = ConsumerMember(member_id)
        member.instance_id, member.rack_id = value["instance_id"], value["rack_id"]
        member.client_id, member.client_host = value["client_id"], value["client_host"]
        member.subscribed_names = tuple(value["subscribed_topic_names"])
        member.regex, member.assignor = value["subscribed_topic_regex"], value["server_assignor"]
        member.rebalance_timeout_ms = value["rebalance_timeout_ms"]
        classic = value["classic_member_metadata"]
        if classic is not None:
            member.classic = (classic["session_timeout_ms"],
                              [(name, _bytes(data)) for name, data in classic["supported_protocols"]],
                              classic["subscription_version"])
        current = records.get((CURRENT, member_id))
        if current is not None:
            member.member_epoch, member.previous_epoch = current["member_epoch"], current["previous_member_epoch"]
            member.state = current["state"]
            member.assigned = _topic_epochs(current["assigned_partitions"])
            member.pending = _topic_epochs(current["partitions_pending_revocation"])
        session_ms = member.classic[0] if member.classic is not None else config["group.consumer.session.timeout.ms"]
        member.session_deadline = now_ms + session_ms
        if member.state == UNREVOKED_PARTITIONS:
            member.revocation_deadline = now_ms + max(member.rebalance_timeout_ms, 0)
            member.revocation_epoch = member.member_epoch
        group.put(member)
    return group


def _load_share(group_id, records, config, now_ms):
    group = ShareGroup(group_id)
    meta = records[(SHARE_GROUP, None)]
    group.group_epoch, group.assignment_epoch = meta["epoch"], meta["assignment_epoch"]
    group.metadata = tuple((name, Uuid.from_string(t), count) for name, t, count in meta["metadata"])
    for t, name, parts in records.get((SHARE_PARTITIONS, None), {}).get("initialized_topics", ()):
        group.initialized[Uuid.from_string(t)] = set(parts)
        group.topic_names[Uuid.from_string(t)] = name
    order = {member_id: i for i, member_id in enumerate(meta.get("member_order", ()))}
    listed = [(member_id, value) for (kind, member_id), value in records.items() if kind == SHARE_MEMBER]
    for member_id, value in sorted(listed, key=lambda item: order.get(item[0], len(order))):
        member = ShareMember(member_id)
        member.rack_id, member.client_id, member.client_host = value["rack_id"], value["client_id"], \
            value["client_host"]
        member.subscribed = tuple(value["subscribed_topic_names"])
        member.member_epoch, member.previous_epoch = value["member_epoch"], value["previous_member_epoch"]
        member.assigned = _topic_sets(value["assigned_partitions"])
        group.target[member_id] = _topic_sets(value["target"])
        member.session_deadline = now_ms + config["group.share.session.timeout.ms"]
        group.members[member_id] = member
    return group


def _load_streams(group_id, records, config, now_ms):
    group = StreamsGroup(group_id)
    meta = records[(STREAMS_GROUP, None)]
    group.group_epoch, group.assignment_epoch = meta["epoch"], meta["assignment_epoch"]
    group.topology, group.validated_epoch = meta["topology"], meta["validated_topology_epoch"]
    group.assignment_configs = meta["assignment_configs"]
    group.shape = tuple(tuple(t) for t in meta["topics"])
    order = {member_id: i for i, member_id in enumerate(meta.get("member_order", ()))}
    listed = [(member_id, value) for (kind, member_id), value in records.items() if kind == STREAMS_MEMBER]
    for member_id, value in sorted(listed, key=lambda item: order.get(item[0], len(order))):
        m = StreamsMember(member_id)
        m.instance_id, m.rack_id, m.client_id, m.client_host = (value["instance_id"], value["rack_id"],
                                                                value["client_id"], value["client_host"])
        m.rebalance_timeout_ms, m.topology_epoch, m.process_id = (value["rebalance_timeout_ms"],
                                                                  value["topology_epoch"], value["process_id"])
        m.user_endpoint = tuple(value["user_endpoint"]) if value["user_endpoint"] else None
        m.client_tags = dict(value["client_tags"])
        m.member_epoch, m.previous_epoch, m.state = (value["member_epoch"], value["previous_member_epoch"],
                                                     value["state"])
        m.assigned, m.pending = _task_sets(value["assigned"]), _task_sets(value["pending"])
        group.target[member_id] = _task_sets(value["target"])
        m.session_deadline = now_ms + config["group.streams.session.timeout.ms"]
        if m.state == 2:  # still giving up tasks: its rebalance timeout starts again
            m.revocation_deadline = now_ms + max(m.rebalance_timeout_ms, 0)
        group.members[member_id] = m
    return group
