"""What each field of a message means to a replay, and walking messages by that meaning.

A replay cares about few fields: the identifiers a broker makes up (producer ids and epochs, topic IDs, member ids,
generations and member epochs, fetch session ids, node ids), offsets (which move when the target's log
differs) and record batches (whose headers carry producer ids). Kafka names such fields the same way in every
message, so a field's role follows from its spec name, type and entity type; ``roles(cls)`` works it out once per
class. ``edit`` copies a message with some of those fields changed, and ``visit`` reads them, each knowing the topic,
partition and group the field belongs to.
"""

import copy

PRODUCER_ID, PRODUCER_EPOCH = "producer id", "producer epoch"
TOPIC_ID, TOPIC_NAME, PARTITION = "topic id", "topic name", "partition"
MEMBER, GENERATION, SESSION = "member id", "generation", "fetch session"
NODE = "node id"
GROUP, OFFSET, RECORDS, STRUCT = "group id", "offset", "records", "struct"

_OFFSETS = frozenset({"FetchOffset", "CommittedOffset", "BaseOffset", "HighWatermark", "LastStableOffset",
                      "LogStartOffset", "EndOffset", "FirstOffset", "LowWatermark", "Offset", "StartOffset",
                      "CurrentTxnStartOffset"})
_PARTITIONS = frozenset({"PartitionIndex", "Partition", "PartitionId", "Index"})
_GENERATIONS = frozenset({"GenerationId", "GenerationIdOrMemberEpoch", "MemberEpoch"})
_MEMBERS = frozenset({"MemberId", "Leader"})

_CONTEXT = {TOPIC_NAME: "topic", TOPIC_ID: "topic_id", PARTITION: "partition", GROUP: "group"}
_roles = {}


def _role(f, cls):
    name, kind = f.name, f.kind
    if f.struct is not None:
        return STRUCT
    if kind == "records":
        return RECORDS
    if kind == "int64" and (f.entity == "producerId" or name.endswith("ProducerId")):
        return PRODUCER_ID  # V3AndBelowProducerId, OngoingTxnProducerId, ProducerIdStart too
    if name.endswith("ProducerEpoch") and kind == "int16":
        return PRODUCER_EPOCH
    if name == "TopicId" and kind == "uuid" and not f.array:
        return TOPIC_ID
    if f.entity == "topicName" and not f.array:
        return TOPIC_NAME
    if name in _PARTITIONS and kind == "int32" and not f.array:
        return PARTITION
    if name in _MEMBERS and kind == "string" and not f.array:
        return MEMBER
    if name in _GENERATIONS and kind == "int32":
        return GENERATION
    if name == "SessionId" and kind == "int32" and cls.__name__.startswith("Fetch"):
        return SESSION
    if f.entity == "brokerId" and kind == "int32":
        return NODE
    if name == "GroupId" and kind == "string" and not f.array:
        return GROUP
    if name in _OFFSETS and kind == "int64" and not f.array and not (
            name == "HighWatermark" and cls._qualname.startswith("FetchRequest")):  # a follower's, not an offset
        return OFFSET
    return None


def roles(cls):
    """[(attr, role, is array)] of the fields of cls that matter to a replay, or hold structs that may."""
    found = _roles.get(cls)
    if found is None:
        found = _roles[cls] = []  # placed first: a struct that contains itself stops here
        found.extend((f.attr, role, f.array) for f in cls._fields if (role := _role(f, cls)) is not None)
        # Context first (topic, partition, group), so that the other fields of a struct know where they are.
        found.sort(key=lambda entry: entry[1] not in _CONTEXT)
    return found


class Where:
    """Where a field sits: its topic (name, or topic id), partition and group, as the enclosing structs say."""

    __slots__ = ("topic", "topic_id", "partition", "group")

    def __init__(self, topic=None, topic_id=None, partition=None, group=None):
        self.topic, self.topic_id, self.partition, self.group = topic, topic_id, partition, group

    def inside(self, obj):
        """This place, narrowed by the context fields of obj (roles() lists them first)."""
        where = self
        for attr, role, _ in roles(type(obj)):
            if role not in _CONTEXT:
                break
            value = getattr(obj, attr)
            if value is None:
                continue
            if where is self:
                where = Where(self.topic, self.topic_id, self.partition, self.group)
            setattr(where, _CONTEXT[role], value)
        return where


def visit(obj, see, where=None):
    """Call see(role, value, where, obj) for every field of obj (and the structs inside it) that has a role
    (structs themselves excepted)."""
    where = (where or Where()).inside(obj)
    for attr, role, array in roles(type(obj)):
        value = getattr(obj, attr)
        if value is None:
            continue
        if role == STRUCT:
            for item in (value if array else (value,)):
                if item is not None:
                    visit(item, see, where)
        else:
            see(role, value, where, obj)


def edit(obj, change, where=None):
    """obj with change(role, value, where, obj) applied to each field that has a role: a copy where anything
    changed (structs along the way copied too), obj itself otherwise. change returns the new value."""
    where = (where or Where()).inside(obj)
    out = None
    for attr, role, array in roles(type(obj)):
        value = getattr(obj, attr)
        if value is None:
            continue
        if role == STRUCT:
            if array:
                new = [edit(item, change, where) if item is not None else None for item in value]
                if all(a is b for a, b in zip(new, value)):
                    continue
            else:
                new = edit(value, change, where)
                if new is value:
                    continue
        else:
            new = change(role, value, where, obj)
            if new is value or new == value and type(new) is type(value):
                continue
        if out is None:
            out = copy.copy(obj)
        setattr(out, attr, new)
    return obj if out is None else out


def sibling(obj, role):
    """The value of obj's first field with a role (the epoch beside a producer id, say), or None."""
    for attr, found, _ in roles(type(obj)):
        if found == role:
            return getattr(obj, attr)
    return None


def node_id(node):
    """The id of a broker as an answer lists it (Metadata and FindCoordinator say node_id, DescribeCluster
    broker_id)."""
    found = getattr(node, "node_id", None)
    return node.broker_id if found is None else found
