"""What a group keeps across a restart: its metadata, as Kafka's group coordinator records in the offsets log beside
its committed offsets, and the groups rebuilt from those records at start-up.

Kafka's group coordinator keeps the same things in ``__consumer_offsets`` and loads them again when it starts, so
that members whose clients go on heartbeating carry on without a rebalance. The records are Kafka's own (the specs
in schemas/coordinator, codecs in kafkaproto.coordinator_records): a key is the record type (int16) and the key
struct, a value its version (int16) and the value struct, written at the version Kafka 4.3 writes (GroupMetadata
at 3, every other kind at 0), and a null value (a tombstone) removes what its key names. Kafka's tools read them:
``kafka-console-consumer --formatter org.apache.kafka.tools.consumer.GroupMetadataMessageFormatter`` (or
OffsetsMessageFormatter) on the topic, ``kafka-dump-log --offsets-decoder`` on the segment files. The kinds:

- ``GroupMetadata`` (2, a classic group): protocol type, generation, protocol, leader, when the group entered its
  state, and each member with its ids, client, timeouts, the metadata of the group's protocol (its subscription)
  and its assignment. As in Kafka it is written when a generation becomes stable (the leader's SyncGroup), when a
  static member takes its old self's place in a stable group, and when the group empties; a crash during a
  rebalance brings back the last stable generation, whose members then join again as they would have. A member
  loaded again knows only the group's protocol, as in Kafka, until it joins again with all of its own.
- A KIP-848 group: ``ConsumerGroupMetadata`` (3: the group epoch and the hash of its subscribed topics' metadata),
  per member ``ConsumerGroupMemberMetadata`` (5: ids, client, subscribed names and pattern, assignor, rebalance
  timeout, and for a member of the classic protocol its session timeout and protocols),
  ``ConsumerGroupTargetAssignmentMetadata`` (6: the assignment epoch and when it was computed), per member
  ``ConsumerGroupTargetAssignmentMember`` (7: its target partitions) and ``ConsumerGroupCurrentMemberAssignment``
  (8: epochs, reconciliation state, the partitions it holds with the epochs they were given at, and those it
  must give up), and per pattern ``ConsumerGroupRegularExpression`` (16: the topics it matched, the metadata log
  offset and the time it was matched at).
- A share group (KIP-932): ``ShareGroupMetadata`` (11: epoch and metadata hash), per member
  ``ShareGroupMemberMetadata`` (10), ``ShareGroupTargetAssignmentMetadata`` (12), per member
  ``ShareGroupTargetAssignmentMember`` (13) and ``ShareGroupCurrentMemberAssignment`` (14), and
  ``ShareGroupStatePartitionMetadata`` (15: the partitions whose share state is initialized; the state itself is
  state/shares.py's).
- A streams group (KIP-1071): ``StreamsGroupMetadata`` (17: epoch, metadata hash, the topology epoch last found
  ready, the configs of its last assignment), ``StreamsGroupTopology`` (23), per member
  ``StreamsGroupMemberMetadata`` (19), ``StreamsGroupTargetAssignmentMetadata`` (20), per member
  ``StreamsGroupTargetAssignmentMember`` (21) and ``StreamsGroupCurrentMemberAssignment`` (22). What the topology
  needs of the cluster is worked out again at the next heartbeat.

Where Kafka's records keep a hash of the subscribed topics' metadata, a share or streams group loaded again takes
the topics as they are when the hash still matches them, and otherwise bumps its epoch at the next heartbeat, as
a changed hash does in Kafka. The hashes are this broker's own (the same in every process), not Kafka's. A
streams member's active tasks are written without the epochs Kafka 4.3 adds to them (this broker does not track
them; Kafka reads such a record as tasks given at the member's epoch).

Members are listed again in the order their records first appear in the log, which is the order they joined in:
where Kafka iterates a Java HashMap, this broker breaks ties by that order, so a group loaded again decides as
the group before it would have. Topics and partitions are written in the order the broker holds them, for the
same reason.

A group's records are compared with what is stored and only the difference is written, in one batch: a
heartbeat that changes nothing writes nothing, so the log grows with membership changes, not with time. A group
deleted or forgotten leaves tombstones for every record it had (and, for a KIP-848 group, for the
``ConsumerGroupPartitionMetadata`` record older Kafkas kept, as Kafka 4.3 writes it). The times Kafka's records
carry (a classic group's state time, an assignment's and a pattern's) are wall-clock milliseconds taken when what
they time changed (``when``, the coordinator's).

At start-up every member's session (and a KIP-848 member's revocation deadline) starts afresh, as Kafka
reschedules loaded members; what waits on a request (a parked JoinGroup, say) is not kept. A log written by an
earlier version of this broker (JSON keys and values) is read by legacy.py.
"""

import hashlib
import json

from ....coordinator_records import (
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataValue,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataValue,
    GroupMetadataValue,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataValue,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataValue,
    StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupMemberMetadataValue,
    StreamsGroupMetadataValue,
    StreamsGroupTargetAssignmentMemberValue,
    StreamsGroupTargetAssignmentMetadataValue,
    StreamsGroupTopologyValue,
    decode_value,
    encode_value,
    key_class,
)
from .classic import ClassicGroup, KeptGeneration, KeptMember
from .consumer_group import MEMBER_STABLE, UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS, ConsumerGroup, ConsumerMember
from .embedded import MalformedProtocol, read_subscription
from .share import ShareGroup, ShareMember
from .streams import ROLES, UNREVOKED_TASKS, StreamsGroup, StreamsMember, topology_data

# Kafka's record types (CoordinatorRecordType)
OFFSET_COMMIT_LEGACY, OFFSET_COMMIT, GROUP_METADATA = 0, 1, 2
GROUP_EPOCH, PARTITION_METADATA, MEMBER, TARGET_EPOCH, TARGET, CURRENT = 3, 4, 5, 6, 7, 8
SHARE_MEMBER, SHARE_GROUP, SHARE_TARGET_EPOCH, SHARE_TARGET, SHARE_CURRENT, SHARE_PARTITIONS = 10, 11, 12, 13, 14, 15
REGEX = 16
STREAMS_GROUP, STREAMS_MEMBER, STREAMS_TARGET_EPOCH, STREAMS_TARGET, STREAMS_CURRENT, STREAMS_TOPOLOGY = \
    17, 19, 20, 21, 22, 23
OFFSET_RECORDS = (OFFSET_COMMIT_LEGACY, OFFSET_COMMIT)
BY_MEMBER = (MEMBER, TARGET, CURRENT, SHARE_MEMBER, SHARE_TARGET, SHARE_CURRENT, STREAMS_MEMBER, STREAMS_TARGET,
             STREAMS_CURRENT)
# The version of each kind's value Kafka 4.3 writes: its newest, but GroupMetadata's (3; 4 is the first flexible
# version, which Kafka reads but does not write yet).
GROUP_METADATA_VERSION = 3
# Kafka's member states (MemberState.value()): a KIP-848 or share member's, and a streams member's are streams.py's.
CONSUMER_STATES = {MEMBER_STABLE: 0, UNREVOKED_PARTITIONS: 1, UNRELEASED_PARTITIONS: 2}
CONSUMER_STATE_NAMES = {code: name for name, code in CONSUMER_STATES.items()}


# ---- keys -----------------------------------------------------------------------------------------------------

def record_key(group_id, record_type, sub):
    """The key struct of one of a group's records; sub: the member id or the pattern, for the kinds that have one."""
    cls = key_class(record_type)
    if record_type == GROUP_METADATA:
        return cls(group=group_id)
    if record_type in BY_MEMBER:
        return cls(group_id=group_id, member_id=sub)
    if record_type == REGEX:
        return cls(group_id=group_id, regular_expression=sub)
    return cls(group_id=group_id)


def split_key(key, record_type):
    """(group id, (record type, member id or pattern or None)) of a group record's key struct."""
    if record_type == GROUP_METADATA:
        return key.group, (record_type, None)
    if record_type in BY_MEMBER:
        return key.group_id, (record_type, key.member_id)
    if record_type == REGEX:
        return key.group_id, (record_type, key.regular_expression)
    return key.group_id, (record_type, None)


# ---- what a group keeps -----------------------------------------------------------------------------------------

class UnseenShape(tuple):
    """The topics' metadata of a share or streams group loaded again, when the hash its record kept no longer
    matches the topics as they are: equal to nothing (the next heartbeat sees a change and bumps the epoch, as a
    changed hash does in Kafka), and written again with the hash it was read with."""

    def __new__(cls, stored_hash):
        shape = super().__new__(cls)
        shape.stored_hash = stored_hash
        return shape

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    __hash__ = tuple.__hash__


def metadata_hash(described):
    """A hash of topics' metadata ((name, topic id, partitions)), the same in every process, 0 for none: what a
    share or streams group's record keeps of its subscribed topics (consumer.py hashes a KIP-848 group's so)."""
    if isinstance(described, UnseenShape):
        return described.stored_hash
    if not described:
        return 0
    digest = hashlib.blake2b(json.dumps([[str(x) for x in t] for t in described]).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _classic_records(group, when):
    kept = group.kept
    members = [GroupMetadataValue.MemberMetadata(
        member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id, client_host=m.client_host,
        rebalance_timeout=m.rebalance_timeout_ms, session_timeout=m.session_timeout_ms,
        subscription=next((meta for name, meta in m.protocols if name == kept.protocol_name), b""),
        assignment=bytes(m.assignment)) for m in kept.members]
    value = GroupMetadataValue(protocol_type=kept.protocol_type or "", generation=kept.generation,
                               protocol=kept.protocol_name, leader=kept.leader,
                               current_state_timestamp=when((GROUP_METADATA, None), kept), members=members)
    return {(GROUP_METADATA, None): encode_value(value, GROUP_METADATA_VERSION)}


def _topic_partitions(cls, by_topic):
    """{topic id: partitions} as a list of cls(topic_id, partitions), in the broker's order."""
    return [cls(topic_id=t, partitions=sorted(parts)) for t, parts in by_topic.items() if parts]


def _with_epochs(by_topic):
    """{topic id: {partition: epoch}} as Kafka's TopicPartitions with their assignment epochs."""
    out = []
    for topic_id, parts in by_topic.items():
        partitions = sorted(parts)
        out.append(ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions(
            topic_id=topic_id, partitions=partitions, assignment_epochs=[parts[p] for p in partitions]))
    return out


def _consumer_records(group, when):
    # In the order Kafka's heartbeat writes them: subscriptions, patterns, the epoch, the target, the members' own.
    records = {}
    for member in group.members.values():
        classic = None
        if member.classic is not None:
            session_ms, protocols, _ = member.classic
            V = ConsumerGroupMemberMetadataValue
            classic = V.ClassicMemberMetadata(session_timeout_ms=session_ms, supported_protocols=[
                V.ClassicProtocol(name=name, metadata=bytes(metadata)) for name, metadata in protocols])
        records[(MEMBER, member.member_id)] = encode_value(ConsumerGroupMemberMetadataValue(
            instance_id=member.instance_id, rack_id=member.rack_id, client_id=member.client_id,
            client_host=member.client_host, subscribed_topic_names=sorted(member.subscribed_names),
            subscribed_topic_regex=member.regex, rebalance_timeout_ms=member.rebalance_timeout_ms,
            server_assignor=member.assignor, classic_member_metadata=classic))
    for regex, topics in group.regexes.items():
        resolved = group.regex_resolved.get(regex, (-1, None))
        records[(REGEX, regex)] = encode_value(ConsumerGroupRegularExpressionValue(
            topics=sorted(topics), version=resolved[0], timestamp=when((REGEX, regex), resolved)))
    records[(GROUP_EPOCH, None)] = encode_value(ConsumerGroupMetadataValue(
        epoch=group.group_epoch, metadata_hash=group.metadata_hash))
    for member_id, target in group.target.items():
        records[(TARGET, member_id)] = encode_value(ConsumerGroupTargetAssignmentMemberValue(
            topic_partitions=_topic_partitions(ConsumerGroupTargetAssignmentMemberValue.TopicPartition, target)))
    records[(TARGET_EPOCH, None)] = encode_value(ConsumerGroupTargetAssignmentMetadataValue(
        assignment_epoch=group.assignment_epoch,
        assignment_timestamp=when((TARGET_EPOCH, None), group.assignment_time_ms)))
    for member in group.members.values():
        records[(CURRENT, member.member_id)] = encode_value(ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=member.member_epoch, previous_member_epoch=member.previous_epoch,
            state=CONSUMER_STATES[member.state], assigned_partitions=_with_epochs(member.assigned),
            partitions_pending_revocation=_with_epochs(member.pending)))
    return records


def _share_records(group, when):
    records = {(SHARE_GROUP, None): encode_value(ShareGroupMetadataValue(
        epoch=group.group_epoch, metadata_hash=metadata_hash(group.metadata)))}
    for member in group.members.values():
        records[(SHARE_MEMBER, member.member_id)] = encode_value(ShareGroupMemberMetadataValue(
            rack_id=member.rack_id, client_id=member.client_id, client_host=member.client_host,
            subscribed_topic_names=sorted(member.subscribed)))
    records[(SHARE_TARGET_EPOCH, None)] = encode_value(ShareGroupTargetAssignmentMetadataValue(
        assignment_epoch=group.assignment_epoch,
        assignment_timestamp=when((SHARE_TARGET_EPOCH, None), group.assignment_time_ms)))
    for member_id, target in group.target.items():
        records[(SHARE_TARGET, member_id)] = encode_value(ShareGroupTargetAssignmentMemberValue(
            topic_partitions=_topic_partitions(ShareGroupTargetAssignmentMemberValue.TopicPartition, target)))
    for member in group.members.values():
        records[(SHARE_CURRENT, member.member_id)] = encode_value(ShareGroupCurrentMemberAssignmentValue(
            member_epoch=member.member_epoch, previous_member_epoch=member.previous_epoch,
            state=CONSUMER_STATES[MEMBER_STABLE], assigned_partitions=_topic_partitions(
                ShareGroupCurrentMemberAssignmentValue.TopicPartitions, member.assigned)))
    if group.initialized:
        Info = ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo
        records[(SHARE_PARTITIONS, None)] = encode_value(ShareGroupStatePartitionMetadataValue(
            initializing_topics=[], deleting_topics=[], initialized_topics=[
                Info(topic_id=t, topic_name=group.topic_names.get(t, ""), partitions=sorted(parts))
                for t, parts in group.initialized.items()]))
    return records


def _task_ids(cls, tasks, **fields):
    return [cls(subtopology_id=s, partitions=sorted(ps), **fields) for s, ps in sorted(tasks.items())]


def _topology_value(topology):
    V = StreamsGroupTopologyValue

    def info(t):
        return V.TopicInfo(name=t["name"], partitions=t["partitions"], replication_factor=t["replication_factor"],
                           topic_configs=[V.TopicConfig(key=k, value=v) for k, v in t["configs"]])
    return V(epoch=topology["epoch"], subtopologies=[V.Subtopology(
        subtopology_id=s["id"], source_topics=s["source_topics"], source_topic_regex=s["source_topic_regex"],
        state_changelog_topics=[info(t) for t in s["changelog_topics"]],
        repartition_sink_topics=s["repartition_sink_topics"],
        repartition_source_topics=[info(t) for t in s["repartition_source_topics"]],
        copartition_groups=[V.CopartitionGroup(source_topics=g[0], source_topic_regex=g[1],
                                               repartition_source_topics=g[2]) for g in s["copartition_groups"]])
        for s in topology["subtopologies"]])


def _streams_records(group, when):
    configs = [StreamsGroupMetadataValue.LastAssignmentConfig(key=k, value=v)
               for k, v in (group.assignment_configs or {}).items()]
    records = {(STREAMS_GROUP, None): encode_value(StreamsGroupMetadataValue(
        epoch=group.group_epoch, metadata_hash=metadata_hash(group.shape),
        validated_topology_epoch=group.validated_epoch, last_assignment_configs=configs))}
    if group.topology is not None:
        records[(STREAMS_TOPOLOGY, None)] = encode_value(_topology_value(group.topology))
    for m in group.members.values():
        V = StreamsGroupMemberMetadataValue
        records[(STREAMS_MEMBER, m.member_id)] = encode_value(V(
            instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id, client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout_ms, topology_epoch=m.topology_epoch, process_id=m.process_id,
            user_endpoint=V.Endpoint(host=m.user_endpoint[0], port=m.user_endpoint[1]) if m.user_endpoint else None,
            client_tags=[V.KeyValue(key=k, value=v) for k, v in sorted(m.client_tags.items())]))
    records[(STREAMS_TARGET_EPOCH, None)] = encode_value(StreamsGroupTargetAssignmentMetadataValue(
        assignment_epoch=group.assignment_epoch,
        assignment_timestamp=when((STREAMS_TARGET_EPOCH, None), group.assignment_time_ms)))
    T = StreamsGroupTargetAssignmentMemberValue
    for member_id, target in group.target.items():
        records[(STREAMS_TARGET, member_id)] = encode_value(T(
            active_tasks=_task_ids(T.TaskIds, target["active"]), standby_tasks=_task_ids(T.TaskIds, target["standby"]),
            warmup_tasks=_task_ids(T.TaskIds, target["warmup"])))
    C = StreamsGroupCurrentMemberAssignmentValue
    for m in group.members.values():
        records[(STREAMS_CURRENT, m.member_id)] = encode_value(C(
            member_epoch=m.member_epoch, previous_member_epoch=m.previous_epoch, state=m.state,
            # no epochs (null, not empty): Kafka reads such active tasks as given at the member's epoch
            active_tasks=_task_ids(C.TaskIds, m.assigned["active"], assignment_epochs=None),
            standby_tasks=_task_ids(C.TaskIds, m.assigned["standby"]),
            warmup_tasks=_task_ids(C.TaskIds, m.assigned["warmup"]),
            active_tasks_pending_revocation=_task_ids(C.TaskIds, m.pending["active"], assignment_epochs=None),
            standby_tasks_pending_revocation=_task_ids(C.TaskIds, m.pending["standby"]),
            warmup_tasks_pending_revocation=_task_ids(C.TaskIds, m.pending["warmup"])))
    return records


def records_of(group, when):
    """{(record type, member id or pattern or None): encoded value}: what the group keeps now (nothing for None,
    a group gone). when(key, marker): the wall-clock time a record's timestamp holds, which stays while marker
    (what the timestamp times) stays the same."""
    if group is None:
        return {}
    if group.kind == "consumer":
        return _consumer_records(group, when)
    if group.kind == "share":
        return _share_records(group, when)
    if group.kind == "streams":
        return _streams_records(group, when)
    return {} if group.kept is None else _classic_records(group, when)


def changes(stored, group, when):
    """The records to write so that the log holds what group keeps, given what it holds (stored: {(record type,
    sub): value}, Kafka's encoded values or an earlier version's JSON): [((record type, sub), value or None for a
    tombstone)], empty when nothing changed."""
    now = records_of(group, when)
    out = [(key, None) for key in tombstones({key: value for key, value in stored.items() if key not in now})]
    out += [(key, value) for key, value in now.items() if stored.get(key) != value]
    return out


def tombstones(going):
    """The keys to tombstone when the records going ({key: value}) go: each of them, and with a KIP-848 group's
    epoch record its ConsumerGroupPartitionMetadata record, which Kafka 4.3 tombstones whether or not it was
    written."""
    keys = list(going)
    if (GROUP_EPOCH, None) in going and (PARTITION_METADATA, None) not in going:
        keys.append((PARTITION_METADATA, None))
    return keys


# ---- groups again, from their records ---------------------------------------------------------------------------

def load(group_id, records, config, now, cluster=None):
    """(the group the records {(record type, sub): encoded value} describe or None, {key: (marker, time)} of the
    times its records hold for records_of's when); now: when its members' sessions start (the coordinator's
    clock); cluster: the topics as they are, which the metadata hashes are checked against. DecodeError (or
    KeyError, ValueError) when a record does not read."""
    values = {key: decode_value(value, key[0])[0] for key, value in records.items()}
    if (GROUP_EPOCH, None) in values:
        return _load_consumer(group_id, values, config, now)
    if (SHARE_GROUP, None) in values:
        return _load_share(group_id, values, config, now, cluster)
    if (STREAMS_GROUP, None) in values:
        return _load_streams(group_id, values, config, now, cluster)
    value = values.get((GROUP_METADATA, None))
    if value is None:
        return None, {}
    kept = KeptGeneration(value.generation, value.protocol_type, value.protocol, value.leader, tuple(
        KeptMember(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.session_timeout,
                   m.rebalance_timeout, value.protocol_type,
                   ((value.protocol, bytes(m.subscription)),) if value.protocol is not None else (),
                   bytes(m.assignment))
        for m in value.members))
    group = ClassicGroup.loaded(group_id, config, kept, now)
    return group, {(GROUP_METADATA, None): (group.kept, value.current_state_timestamp)}


def _listed(values, kind):
    """[(member id, value)] of one per-member kind, in the order the records came."""
    return [(sub, value) for (k, sub), value in values.items() if k == kind]


def _topic_sets(items):
    return {t.topic_id: set(t.partitions) for t in items}


def _topic_epochs(items, default_epoch):
    out = {}
    for t in items:
        epochs = t.assignment_epochs if t.assignment_epochs is not None else [default_epoch] * len(t.partitions)
        out[t.topic_id] = dict(zip(t.partitions, epochs))
    return out


def _subscription_version(protocols):
    """The version of a classic member's subscription (the consumer protocol's), which its assignment is written
    at; 0 when it does not read."""
    try:
        return read_subscription(protocols[0][1]).version if protocols else 0
    except (MalformedProtocol, ValueError, IndexError):
        return 0


def _load_consumer(group_id, values, config, now_ms):
    group = ConsumerGroup(group_id)
    meta = values[(GROUP_EPOCH, None)]
    group.group_epoch, group.metadata_hash = meta.epoch, meta.metadata_hash
    stamps = {}
    target_meta = values.get((TARGET_EPOCH, None))
    if target_meta is not None:
        group.assignment_epoch = target_meta.assignment_epoch
    group.assignment_time_ms = 0  # the next assignment may be made at once, as in a new coordinator
    if target_meta is not None:
        stamps[(TARGET_EPOCH, None)] = (0, target_meta.assignment_timestamp)
    for (kind, sub), value in values.items():
        if kind == REGEX:
            group.regexes[sub] = frozenset(value.topics)  # resolved again at the next heartbeat that asks
            group.regex_resolved[sub] = (value.version, None)
            stamps[(REGEX, sub)] = ((value.version, None), value.timestamp)
        elif kind == TARGET:
            group.target[sub] = _topic_sets(value.topic_partitions)
    for member_id, value in _listed(values, MEMBER):
        member = ConsumerMember(member_id)
        member.instance_id, member.rack_id = value.instance_id, value.rack_id
        member.client_id, member.client_host = value.client_id, value.client_host
        member.subscribed_names = tuple(value.subscribed_topic_names)
        member.regex, member.assignor = value.subscribed_topic_regex or "", value.server_assignor
        member.rebalance_timeout_ms = value.rebalance_timeout_ms
        classic = value.classic_member_metadata
        if classic is not None:
            protocols = [(p.name, bytes(p.metadata)) for p in classic.supported_protocols]
            member.classic = (classic.session_timeout_ms, protocols, _subscription_version(protocols))
        current = values.get((CURRENT, member_id))
        if current is not None:
            member.member_epoch, member.previous_epoch = current.member_epoch, current.previous_member_epoch
            member.state = CONSUMER_STATE_NAMES.get(current.state, MEMBER_STABLE)
            member.assigned = _topic_epochs(current.assigned_partitions, current.member_epoch)
            member.pending = _topic_epochs(current.partitions_pending_revocation, current.member_epoch)
        start_deadlines(member, config, now_ms)
        group.put(member)
    return group, stamps


def _current_shape(described, stored_hash):
    """The topics' metadata as they are when their hash is the one stored, else an UnseenShape."""
    return described if metadata_hash(described) == stored_hash else UnseenShape(stored_hash)


def _load_share(group_id, values, config, now_ms, cluster):
    group = ShareGroup(group_id)
    meta = values[(SHARE_GROUP, None)]
    group.group_epoch = meta.epoch
    stamps = {}
    target_meta = values.get((SHARE_TARGET_EPOCH, None))
    if target_meta is not None:
        group.assignment_epoch = target_meta.assignment_epoch
        stamps[(SHARE_TARGET_EPOCH, None)] = (None, target_meta.assignment_timestamp)
    partitions = values.get((SHARE_PARTITIONS, None))
    for info in partitions.initialized_topics if partitions is not None else ():
        group.initialized[info.topic_id] = set(info.partitions)
        group.topic_names[info.topic_id] = info.topic_name
    for member_id, value in _listed(values, SHARE_TARGET):
        group.target[member_id] = _topic_sets(value.topic_partitions)
    for member_id, value in _listed(values, SHARE_MEMBER):
        member = ShareMember(member_id)
        member.rack_id, member.client_id, member.client_host = value.rack_id, value.client_id, value.client_host
        member.subscribed = tuple(value.subscribed_topic_names)
        current = values.get((SHARE_CURRENT, member_id))
        if current is not None:
            member.member_epoch, member.previous_epoch = current.member_epoch, current.previous_member_epoch
            member.assigned = _topic_sets(current.assigned_partitions)
        member.session_deadline = now_ms + config["group.share.session.timeout.ms"]
        group.members[member_id] = member
    described = ()
    if cluster is not None:
        names = sorted(group.subscribed_names())
        described = tuple((n, cluster.topics[n].topic_id, len(cluster.topics[n].partitions))
                          for n in names if n in cluster.topics)
    group.metadata = _current_shape(described, meta.metadata_hash)
    return group, stamps


def _load_streams(group_id, values, config, now_ms, cluster):
    group = StreamsGroup(group_id)
    meta = values[(STREAMS_GROUP, None)]
    group.group_epoch, group.validated_epoch = meta.epoch, meta.validated_topology_epoch
    group.assignment_configs = None if meta.last_assignment_configs is None else {
        c.key: c.value for c in meta.last_assignment_configs}
    stamps = {}
    target_meta = values.get((STREAMS_TARGET_EPOCH, None))
    if target_meta is not None:
        group.assignment_epoch = target_meta.assignment_epoch
        stamps[(STREAMS_TARGET_EPOCH, None)] = (None, target_meta.assignment_timestamp)
    topology = values.get((STREAMS_TOPOLOGY, None))
    group.topology = topology_data(topology) if topology is not None else None
    for member_id, value in _listed(values, STREAMS_TARGET):
        group.target[member_id] = {role: {t.subtopology_id: set(t.partitions) for t in tasks} for role, tasks in
                                   zip(ROLES, (value.active_tasks, value.standby_tasks, value.warmup_tasks))}
    for member_id, value in _listed(values, STREAMS_MEMBER):
        m = StreamsMember(member_id)
        m.instance_id, m.rack_id, m.client_id, m.client_host = (value.instance_id, value.rack_id, value.client_id,
                                                                value.client_host)
        m.rebalance_timeout_ms, m.topology_epoch, m.process_id = (value.rebalance_timeout_ms, value.topology_epoch,
                                                                  value.process_id)
        m.user_endpoint = (value.user_endpoint.host, value.user_endpoint.port) if value.user_endpoint else None
        m.client_tags = {kv.key: kv.value for kv in value.client_tags}
        current = values.get((STREAMS_CURRENT, member_id))
        if current is not None:
            m.member_epoch, m.previous_epoch, m.state = (current.member_epoch, current.previous_member_epoch,
                                                         current.state)
            m.assigned = {role: {t.subtopology_id: set(t.partitions) for t in tasks} for role, tasks in zip(
                ROLES, (current.active_tasks, current.standby_tasks, current.warmup_tasks))}
            m.pending = {role: {t.subtopology_id: set(t.partitions) for t in tasks} for role, tasks in zip(
                ROLES, (current.active_tasks_pending_revocation, current.standby_tasks_pending_revocation,
                        current.warmup_tasks_pending_revocation))}
        m.session_deadline = now_ms + config["group.streams.session.timeout.ms"]
        if m.state == UNREVOKED_TASKS:  # still giving up tasks: its rebalance timeout starts again
            m.revocation_deadline = now_ms + max(m.rebalance_timeout_ms, 0)
        group.members[member_id] = m
    group.shape = UnseenShape(meta.metadata_hash)
    if group.topology is not None and cluster is not None:
        group.shape = _current_shape(_streams_shape(group.topology, cluster), meta.metadata_hash)
    return group, stamps


def _streams_shape(topology, cluster):
    """What streams.py's _shape gives for the topology over the cluster's topics."""
    names = {t for s in topology["subtopologies"] for t in
             [*s["source_topics"], *(r["name"] for r in s["repartition_source_topics"]),
              *(c["name"] for c in s["changelog_topics"])]}
    return tuple(sorted((n, len(cluster.topics[n].partitions)) for n in names if n in cluster.topics))


def start_deadlines(member, config, now_ms):
    """A loaded KIP-848 member's session, and its revocation while it holds partitions to give up, start afresh
    at now_ms, as Kafka reschedules the members it loads."""
    session_ms = member.classic[0] if member.classic is not None else config["group.consumer.session.timeout.ms"]
    member.session_deadline = now_ms + session_ms
    if member.state == UNREVOKED_PARTITIONS:
        member.revocation_deadline = now_ms + max(member.rebalance_timeout_ms, 0)
        member.revocation_epoch = member.member_epoch
