"""What the fields of a message mean, and walking messages by that meaning.

Kafka names a field of one meaning the same way in every message: a topic's name has the entity type
``topicName``, a partition is ``PartitionIndex`` (or ``Partition``, ``PartitionId``, ``Index``), a producer id has
the entity type ``producerId``, and so on. ``roles(cls)`` works out once per message class which fields mean what;
everything that reads messages by meaning starts there:

- ``walk`` collects what a message names: topics (by name or id), partitions' error codes, and records fields with
  the topic and partition they belong to (capture's tables, errors and records);
- ``unnamed_in`` and ``topic_pairs``: topic ids with no name yet, and the (id, name) pairs answers carry (capture's
  topic naming);
- ``visit`` and ``edit`` read or change every field of given roles, each knowing the topic, partition and group it
  belongs to (replay's rewriting).

``walk`` and ``unnamed_in`` run on every captured exchange, so they have a compiled twin (``_cfields``), chosen
once; ``python_walk`` and ``python_unnamed_in`` are the pure ones.
"""

import copy

from ._impl import COMPILED
from .uuid import Uuid

TOPIC_NAME, TOPIC_NAMES, TOPIC_ID, PARTITION = "topic name", "topic names", "topic id", "partition"
ERROR_CODE, RECORDS, OFFSET = "error code", "records", "offset"
PRODUCER_ID, PRODUCER_EPOCH = "producer id", "producer epoch"
MEMBER, GENERATION, GROUP, SESSION, NODE = "member id", "generation", "group id", "fetch session", "node id"
STRUCT = "struct"

_OFFSETS = frozenset({"FetchOffset", "CommittedOffset", "BaseOffset", "HighWatermark", "LastStableOffset",
                      "LogStartOffset", "EndOffset", "FirstOffset", "LowWatermark", "Offset", "StartOffset",
                      "CurrentTxnStartOffset"})
_PARTITIONS = frozenset({"PartitionIndex", "Partition", "PartitionId", "Index"})  # Index: Produce, FetchSnapshot
_GENERATIONS = frozenset({"GenerationId", "GenerationIdOrMemberEpoch", "MemberEpoch"})
_MEMBERS = frozenset({"MemberId", "Leader"})
# The roles that say where the other fields of a struct belong.
_CONTEXT = {TOPIC_NAME: "topic", TOPIC_ID: "topic_id", PARTITION: "partition", GROUP: "group"}


def role_of(f, cls):
    """The role of field f of message class cls (a spec field as the generated classes describe it), or None."""
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
    if f.entity == "topicName":
        return TOPIC_NAMES if f.array else TOPIC_NAME
    if name in _PARTITIONS and kind == "int32" and not f.array:
        return PARTITION
    if name == "ErrorCode" and kind == "int16" and not f.array:
        return ERROR_CODE
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


_roles = {}


def roles(cls):
    """[(attr, role, is array, struct class or None)] of the fields of cls that have a role, the context roles
    (topic, partition, group) first so that the others know where they are; structs are listed whatever they
    hold."""
    found = _roles.get(cls)
    if found is None:
        found = _roles[cls] = [(f.attr, role, f.array, f.struct) for f in cls._fields
                               if (role := role_of(f, cls)) is not None]
        found.sort(key=lambda entry: entry[1] not in _CONTEXT or entry[2])
    return found


def _in_order(cls):
    """roles(cls) in the order of the fields (the order walks report things in)."""
    return [(f.attr, role, f.array, f.struct) for f in cls._fields if (role := role_of(f, cls)) is not None]


# ---- what a message names: topics, partitions' error codes, records -------------------------------------------

_plans = {}


def _plan(cls, seen=()):
    """(topic name fields [(attr, is array)], topic id fields, the partition field, the error code field, records
    fields, struct fields worth walking [(attr, is array)], useful) of a class, for walk. A struct is worth walking
    when it names a topic, holds records or a partition's error, itself or deeper (ApiVersions' list of APIs is
    not)."""
    plan = _plans.get(cls)
    if plan is None:
        names, ids, structs, records = [], [], [], []
        partition = error = None
        for attr, role, array, struct in _in_order(cls):
            if role in (TOPIC_NAME, TOPIC_NAMES):
                names.append((attr, array))
            elif role == TOPIC_ID:
                ids.append(attr)
            elif role == PARTITION and partition is None:
                partition = attr
            elif role == ERROR_CODE:
                error = attr
            elif role == RECORDS:
                records.append(attr)
            elif role == STRUCT and struct not in seen and struct is not cls and _plan(struct, (*seen, cls))[6]:
                structs.append((attr, array))
        useful = bool(names or ids or records or structs or (partition is not None and error is not None))
        plan = (names, ids, partition, error, records, structs, useful)
        if not seen:  # a plan made inside a cycle may have left out the way back: only the outermost is kept
            _plans[cls] = plan
    return plan


def python_walk(obj, topics, errors, topic=None, records=None, topic_id=None):
    """Collect from a message: topics ({name or Uuid: None}, ordered), (topic, partition, code) for nonzero
    partition error codes, and (topic name, topic id, partition, records) for records fields."""
    names, ids, partition, error, record_attrs, structs, _ = _plans.get(type(obj)) or _plan(type(obj))
    for attr, is_array in names:
        value = getattr(obj, attr)
        if is_array:
            for name in value or ():
                topics[name] = None
        elif value:
            topics[value] = None
            topic = value
    for attr in ids:
        value = getattr(obj, attr)
        if value is not None and value != Uuid.ZERO:
            topics[value] = None
            topic_id = value
    if partition is not None and error is not None:
        code = getattr(obj, error)
        if code:
            errors.append((topic if topic is not None else topic_id, getattr(obj, partition), code))
    if records is not None:
        for attr in record_attrs:
            data = getattr(obj, attr)
            if data is not None and len(data):
                records.append((topic, topic_id, None if partition is None else getattr(obj, partition), data))
    for attr, is_array in structs:
        value = getattr(obj, attr)
        if value is None:
            continue
        for item in (value if is_array else (value,)):
            python_walk(item, topics, errors, topic, records, topic_id)


_record_holders = {}


def holds_records(cls, seen=None):
    """Whether a message class has a records field at any depth (cached: most have none), so that callers
    skip looking for records in the rest."""
    holds = _record_holders.get(cls)
    if holds is None:
        seen = seen or set()
        seen.add(cls)
        holds = any(role == RECORDS or (role == STRUCT and struct not in seen and holds_records(struct, seen))
                    for _, role, _, struct in roles(cls))
        _record_holders[cls] = holds
    return holds


# ---- topic ids and names --------------------------------------------------------------------------------------

_id_plans = {}


def _id_plan(cls):
    """[(attr, is array, is a topic id)] of the fields leading to topic ids in a class; empty when none does."""
    _id_plans[cls] = []  # for now: a struct that contains itself stops here
    plan = []
    for attr, role, array, struct in _in_order(cls):
        if role == TOPIC_ID:
            plan.append((attr, False, True))
        elif role == STRUCT and (_id_plans.get(struct) if struct in _id_plans else _id_plan(struct)):
            plan.append((attr, array, False))
    _id_plans[cls] = plan
    return plan


def python_unnamed_in(obj, known):
    """Whether obj names a topic id not in known (a {topic id: name} dict)."""
    plan = _id_plans.get(type(obj))
    if plan is None:
        plan = _id_plan(type(obj))
    for attr, array, is_id in plan:
        value = getattr(obj, attr)
        if value is None:
            continue
        if is_id:
            if value not in known and value != Uuid.ZERO:
                return True
        elif array:
            for item in value:
                if item is not None and python_unnamed_in(item, known):
                    return True
        elif python_unnamed_in(value, known):
            return True
    return False


_pair_plans = {}


def _pair_plan(cls):
    """(the name field beside a topic id, that topic id field, the struct fields worth walking) of a class."""
    _pair_plans[cls] = (None, None, [])  # for now: a struct that contains itself stops here
    name_attr = id_attr = None
    structs = []
    for attr, role, array, struct in _in_order(cls):
        if role == TOPIC_NAME:
            name_attr = name_attr or attr
        elif role == TOPIC_ID:
            id_attr = attr
        elif role == STRUCT:
            inner = _pair_plans.get(struct) or _pair_plan(struct)
            if inner[0] is not None or inner[2]:
                structs.append((attr, array))
    plan = _pair_plans[cls] = (name_attr if id_attr else None, id_attr, structs)
    return plan


def topic_pairs(obj, add):
    """Call add(topic id, name) for each struct of obj that carries a topic's name beside its id."""
    name_attr, id_attr, structs = _pair_plans.get(type(obj)) or _pair_plan(type(obj))
    if name_attr is not None:
        add(getattr(obj, id_attr), getattr(obj, name_attr))
    for attr, array in structs:
        value = getattr(obj, attr)
        if value is not None:
            for item in (value if array else (value,)):
                if item is not None:
                    topic_pairs(item, add)


# ---- every field of some roles, where it is -------------------------------------------------------------------

class Where:
    """Where a field sits: its topic (name, or topic id), partition and group, as the enclosing structs say."""

    __slots__ = ("topic", "topic_id", "partition", "group")

    def __init__(self, topic=None, topic_id=None, partition=None, group=None):
        self.topic, self.topic_id, self.partition, self.group = topic, topic_id, partition, group

    def inside(self, obj):
        """This place, narrowed by the context fields of obj (roles() lists them first)."""
        where = self
        for attr, role, array, _ in roles(type(obj)):
            if role not in _CONTEXT or array:
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
    for attr, role, array, _ in roles(type(obj)):
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
    for attr, role, array, _ in roles(type(obj)):
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
    for attr, found, _, _ in roles(type(obj)):
        if found == role:
            return getattr(obj, attr)
    return None


def node_id(node):
    """The id of a broker as an answer lists it (Metadata and FindCoordinator say node_id, DescribeCluster
    broker_id)."""
    found = getattr(node, "node_id", None)
    return node.broker_id if found is None else found


walk, unnamed_in = python_walk, python_unnamed_in
if COMPILED:  # the same walks, compiled (they read the plans above)
    from ._cfields import unnamed_in, walk  # noqa: E402, F401, F811
