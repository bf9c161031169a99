# cython: language_level=3, boundscheck=False, wraparound=False
# The twin of jsonview.python_struct_text: a decoded message written as JSON text, from the plan jsonview makes once
# per struct class. It runs on every exchange a capture's rows carry.

from .jsonview import _ARRAY, _RECORDS, _SCALAR, _STRUCT, _STRUCTS, _b64, _item, _plan, _value, records_text

# Generated structs nest a few levels deep; one nested in itself (only a program can build that) raises
# RecursionError here, as the Python twin does, before the C stack runs out.
DEF MAX_DEPTH = 500

cdef int SCALAR = _SCALAR, STRUCT = _STRUCT, STRUCTS = _STRUCTS, RECORDS = _RECORDS, ARRAY = _ARRAY


def struct_text(msg, decode_records, text, parts):
    """jsonview.python_struct_text, compiled: the same text (appended to any list, or anything with append)."""
    if type(parts) is list:
        _text(msg, decode_records, text, parts, 0)
        return
    mine = []
    _text(msg, decode_records, text, mine, 0)
    for part in mine:
        parts.append(part)


cdef int _text(msg, bint decode_records, text, list parts, int depth) except -1:
    cdef dict plans = text.plans
    cdef tuple plan = plans.get(type(msg))
    cdef int how
    cdef Py_ssize_t i
    if depth > MAX_DEPTH:
        raise RecursionError(f"a message nested more than {MAX_DEPTH} structs deep")
    if plan is None:
        plan = plans[type(msg)] = _plan(type(msg), text)
    string = text.string
    parts.append("{")
    for attr, key, how, f in plan:
        parts.append(key)
        value = getattr(msg, attr)
        if value is None:
            parts.append("null")
        elif how == SCALAR:
            kind = type(value)
            if kind is int:
                parts.append(int.__repr__(value))
            elif kind is str:
                parts.append(string(value))
            elif kind is bool:
                parts.append("true" if value else "false")
            else:
                parts.append(text.value(_item(f, value, decode_records)))
        elif how == STRUCT:
            _text(value, decode_records, text, parts, depth + 1)
        elif how == STRUCTS:
            parts.append("[")
            i = 0
            for item in value:
                if i:
                    parts.append(",")
                i += 1
                if item is None:
                    parts.append("null")
                else:
                    _text(item, decode_records, text, parts, depth + 1)
            parts.append("]")
        elif how == RECORDS and decode_records:
            parts.append(records_text(value, text.ensure_ascii))
        elif how == ARRAY:
            parts.append(text.dumps(_value(f, value, decode_records)))
        else:  # records left as their bytes
            parts.append(text.value(_item(f, value, decode_records)))
    if msg.unknown_tagged_fields:
        parts.append(("," if plan else "") + string("unknown_tagged_fields") + ":")
        parts.append(text.dumps({str(tag): _b64(data) for tag, data in msg.unknown_tagged_fields.items()}))
    parts.append("}")
    return 0
