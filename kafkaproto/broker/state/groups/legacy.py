"""The offsets log (and the share partitions' log) as versions before this one wrote them: JSON keys and values,
read so that a data directory they left loads with nothing lost. Nothing is written this way any more: at start-up
the coordinator writes what it read again as Kafka's records (stored.py, shares.py), and later records of a key
replace the JSON ones.

An offset's key was a list ``[group, topic, partition]`` and its value ``[offset, leader epoch, metadata, commit
time ms]``. A group's record had an object key ``{"record": kind, "group": id}`` (with ``"member"`` or ``"regex"``
for the per-member and per-expression kinds) and its fields as an object; the kinds carried Kafka's record names,
so each is read under the record type of that name, and the JSON records of a group are loaded together here.
"""

import base64
import json

from ....uuid import Uuid
from .classic import ClassicGroup, KeptGeneration, KeptMember
from .consumer_group import ConsumerGroup, ConsumerMember
from .share import ShareGroup, ShareMember
from .stored import start_deadlines
from .streams import ROLES, StreamsGroup, StreamsMember

# The kinds' names, and the record types of Kafka's of the same names (stored.py).
RECORD_TYPES = {"GroupMetadata": 2, "ConsumerGroupMetadata": 3, "ConsumerGroupMemberMetadata": 5,
                "ConsumerGroupTargetAssignmentMetadata": 6, "ConsumerGroupTargetAssignmentMember": 7,
                "ConsumerGroupCurrentMemberAssignment": 8, "ShareGroupMemberMetadata": 10, "ShareGroupMetadata": 11,
                "ShareGroupStatePartitionMetadata": 15, "ConsumerGroupRegularExpression": 16,
                "StreamsGroupMetadata": 17, "StreamsGroupMemberMetadata": 19}
CLASSIC, GROUP_EPOCH, MEMBER, TARGET_EPOCH, TARGET, CURRENT = 2, 3, 5, 6, 7, 8
SHARE_MEMBER, SHARE_GROUP, SHARE_PARTITIONS, REGEX, STREAMS_GROUP, STREAMS_MEMBER = 10, 11, 15, 16, 17, 19


def is_json(key):
    """Whether a record's key is in the JSON layout: Kafka's keys start with a small int16 (a 0 byte)."""
    return bool(key) and key[0] in b"[{"


def read_record(key, value):
    """("offset", (group, topic, partition), value or None) or ("group", group id, (record type, sub), value or
    None) of a JSON record; ValueError (or KeyError, TypeError) if it is not one of ours."""
    key = json.loads(bytes(key))
    value = None if value is None else json.loads(bytes(value))
    if isinstance(key, dict):
        return "group", key["group"], (RECORD_TYPES[key["record"]], key.get("member", key.get("regex"))), value
    group_id, topic, partition = key
    if value is not None:
        offset, epoch, metadata, commit_ms = value
        value = (offset, epoch, metadata if metadata is not None else "", commit_ms)
    return "offset", (group_id, topic, partition), value


def load(group_id, records, config, now):
    """The group the JSON records {(record type, sub): value} describe, or None; now: when its members' sessions
    start (the coordinator's clock)."""
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


def _bytes(text):
    return base64.b64decode(text)


def _topic_sets(items):
    return {Uuid.from_string(t): set(parts) for t, parts in items}


def _topic_epochs(items):
    return {Uuid.from_string(t): {p: e for p, e in parts} for t, parts in items}


def _task_sets(value):
    return {role: {s: set(ps) for s, ps in value[role]} for role in ROLES}


def _in_order(records, kind, order):
    order = {member_id: i for i, member_id in enumerate(order)}
    listed = [(member_id, value) for (k, member_id), value in records.items() if k == kind]
    return sorted(listed, key=lambda item: order.get(item[0], len(order)))


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
    for member_id, value in _in_order(records, MEMBER, meta.get("member_order", ())):
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
        start_deadlines(member, config, now_ms)
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
    for member_id, value in _in_order(records, SHARE_MEMBER, meta.get("member_order", ())):
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
    for member_id, value in _in_order(records, STREAMS_MEMBER, meta.get("member_order", ())):
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


def read_share_record(key, value):
    """((group, topic id, partition), state or None) of a JSON record of the share partitions' log. Its key was
    ``[group, topic id, partition]``, its value ``{"start", "state_epoch", "batches": [[first, last, state,
    deliveries]]}`` with the state as the share partition itself had it."""
    group_id, topic_id, index = json.loads(bytes(key))
    return (group_id, Uuid.from_string(topic_id), index), None if value is None else json.loads(bytes(value))
