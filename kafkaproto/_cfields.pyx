# cython: language_level=3, boundscheck=False, wraparound=False
# The twins of fields.python_walk and fields.python_unnamed_in: they run on every captured exchange, and read the
# plans fields.py makes once per message class.

from .fields import _id_plan, _id_plans, _plan, _plans
from .uuid import Uuid

cdef object _ZERO = Uuid.ZERO


# ---- what a message names -----------------------------------------------------------------------------------

def walk(obj, topics, errors, topic=None, records=None, topic_id=None):
    """fields.python_walk, compiled: the same results in the same order."""
    _walk(obj, topics, errors, topic, records, topic_id)


cdef int _walk(obj, topics, errors, topic, records, topic_id) except -1:
    cdef tuple plan = _plans.get(type(obj))
    if plan is None:
        plan = _plan(type(obj))
    names, ids, partition, error, record_attrs, structs = plan[0], plan[1], plan[2], plan[3], plan[4], plan[5]
    for attr, is_array in names:
        value = getattr(obj, attr)
        if is_array:
            if value:
                for name in value:
                    topics[name] = None
        elif value:
            topics[value] = None
            topic = value
    for attr in ids:
        value = getattr(obj, attr)
        if value is not None and value != _ZERO:
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
        if is_array:
            for item in value:
                _walk(item, topics, errors, topic, records, topic_id)
        else:
            _walk(value, topics, errors, topic, records, topic_id)
    return 0


# ---- whether a message names a topic id not known ------------------------------------------------------------


def unnamed_in(obj, dict known):
    """fields.python_unnamed_in, compiled."""
    return _unnamed(obj, known)


cdef bint _unnamed(obj, dict known) except -1:
    cdef list plan = _id_plans.get(type(obj))
    if plan is None:
        plan = _id_plan(type(obj))
    for attr, array, is_id in plan:
        value = getattr(obj, attr)
        if value is None:
            continue
        if is_id:
            if value not in known and value != _ZERO:
                return True
        elif array:
            for item in value:
                if item is not None and _unnamed(item, known):
                    return True
        elif _unnamed(value, known):
            return True
    return False
