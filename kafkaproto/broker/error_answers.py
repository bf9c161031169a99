"""Answers made from a request's own shape, without its handler: an error for the whole request (its top-level
error code, or every error code of an answer), and an error for some of the partitions it names, the rest served
as usual (split, then add_partition_errors). Faults (faults.py) and the cluster's routing (routing.py) answer
with them.

Each set field is one the answer has at its version (a field the version lacks cannot be written).
"""

import copy

from .. import fields


def top_level_error(response_class, version, code):
    """A response with only its top-level error code set, where it has one at version; else None."""
    for f in response_class._fields:
        if f.attr == "error_code" and version in f.versions:
            return response_class(error_code=code)
    return None


def set_errors(answer, code, version):
    """The answer with each of its error codes that version has set to code (changed in place)."""
    for f in answer._fields:
        if version not in f.versions:
            continue
        if f.struct is not None:
            value = getattr(answer, f.attr)
            for item in (value or ()) if f.array else (value,):
                if item is not None:
                    set_errors(item, code, version)
        elif fields.role_of(f, type(answer)) == fields.ERROR_CODE:
            setattr(answer, f.attr, code)
    return answer


# ---- the partitions a request names ---------------------------------------------------------------------------

def _shape(cls):
    """(topics attr, topic struct, name attr, id attr, partitions attr, partition struct, index attr) of a request
    or response that lists partitions under topics, or None."""
    for attr, role, array, struct in fields.roles(cls):
        if role != fields.STRUCT or not array:
            continue
        name = topic_id = None
        for a, r, _, _ in fields.roles(struct):
            if r == fields.TOPIC_NAME:
                name = a
            elif r == fields.TOPIC_ID:
                topic_id = a
        if name is None and topic_id is None:
            continue
        for a, r, arr, s in fields.roles(struct):
            if r == fields.STRUCT and arr:
                index = next((pa for pa, pr, parr, _ in fields.roles(s) if pr == fields.PARTITION and not parr),
                             None)
                if index is not None:
                    return attr, struct, name, topic_id, a, s, index
    return None


def _named(topic, name_attr, id_attr):
    """(name, id) a request's or answer's topic entry gives, None for what it leaves out ("", the zero id)."""
    name = (getattr(topic, name_attr) if name_attr else None) or None
    topic_id = getattr(topic, id_attr) if id_attr else None
    return name, topic_id if topic_id is not None and topic_id.int else None


def split(body, taken_out, state):
    """(the request without the partitions taken_out(topic name, topic id, index) holds for, [(topic name or None,
    topic id or None, [indexes])] of those, as the request names them), or None when it names none of them.
    taken_out is told both: a topic named by id has its name looked up, and one named by name its id."""
    shape = _shape(type(body))
    if shape is None:
        return None
    topics_attr, _, name_attr, id_attr, parts_attr, _, index_attr = shape
    kept_topics, faulted = [], []
    for topic in getattr(body, topics_attr) or ():
        asked_name, asked_id = _named(topic, name_attr, id_attr)
        name, topic_id = asked_name, asked_id
        if name is None and topic_id is not None:
            found = state.cluster.by_id.get(topic_id)
            name = found.name if found is not None else None
        if topic_id is None and name is not None:
            found = state.cluster.topics.get(name)
            topic_id = found.topic_id if found is not None else None
        kept, taken = [], []
        for partition in getattr(topic, parts_attr) or ():
            index = getattr(partition, index_attr)
            (taken if taken_out(name, topic_id, index) else kept).append(partition)
        if taken:
            faulted.append((asked_name, asked_id, [getattr(p, index_attr) for p in taken]))
            if kept:
                topic = copy.copy(topic)
                setattr(topic, parts_attr, kept)
                kept_topics.append(topic)
        else:
            kept_topics.append(topic)
    if not faulted:
        return None
    body = copy.copy(body)
    setattr(body, topics_attr, kept_topics)
    return body, faulted


_UNKNOWN = ("leader_epoch", "timestamp", "log_append_time_ms")  # -1 in Kafka's error answers, as offsets are


def add_partition_errors(answer, taken, error_of, version):
    """The answer with an entry for each partition taken out of its request (split): error_of(topic name, topic id,
    index) gives its (error code, (leader id, leader epoch) or None), the leader told where the answer has a place
    for it (KIP-951's current_leader)."""
    shape = _shape(type(answer))
    if shape is None:
        return answer
    topics_attr, topic_class, name_attr, id_attr, parts_attr, part_class, index_attr = shape
    topics = list(getattr(answer, topics_attr) or ())
    for name, topic_id, indexes in taken:
        entry = next((t for t in topics if _named(t, name_attr, id_attr) == (name, topic_id)), None)
        if entry is None:
            entry = topic_class()
            if name_attr and name is not None:
                setattr(entry, name_attr, name)
            if id_attr and topic_id is not None:
                setattr(entry, id_attr, topic_id)
            setattr(entry, parts_attr, [])
            topics.append(entry)
        partitions = list(getattr(entry, parts_attr) or ())
        for index in indexes:
            code, leader = error_of(name, topic_id, index)
            partitions.append(_errored(part_class, index_attr, index, code, leader, version))
        setattr(entry, parts_attr, partitions)
    answer = copy.copy(answer)
    setattr(answer, topics_attr, topics)
    return answer


def _errored(part_class, index_attr, index, code, leader, version):
    partition = part_class()
    setattr(partition, index_attr, index)
    for f in part_class._fields:
        if version not in f.versions:
            continue
        role = fields.role_of(f, part_class)
        if role == fields.ERROR_CODE or (role == fields.OFFSET and not f.array) or f.attr in _UNKNOWN:
            setattr(partition, f.attr, code if role == fields.ERROR_CODE else -1)
        elif f.attr == "current_leader" and leader is not None:
            partition.current_leader = f.struct(leader_id=leader[0], leader_epoch=leader[1])
        elif f.kind in ("records", "bytes") and version not in f.nullable_versions and \
                getattr(partition, f.attr) is None:
            setattr(partition, f.attr, b"")  # no data, where the version cannot say null (ShareFetch v1+)
    return partition
