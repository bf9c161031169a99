"""Hypothesis strategies that build valid messages of any generated class at any version.

Driven by each class's ``_fields`` table, so they cover every spec without listing any.
"""

import functools

from hypothesis import strategies as st

from kafkaproto import Uuid
from kafkaproto._generic import INT_RANGES

_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_blob = st.binary(max_size=24)
uuids = st.binary(min_size=16, max_size=16).map(Uuid.from_bytes)


def _primitive(kind):
    if kind in INT_RANGES:
        lo, hi = INT_RANGES[kind]
        # Edges matter more than the middle: lengths, signs, varint boundaries.
        return st.one_of(st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]), st.integers(lo, hi))
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "string":
        return _text
    if kind in ("bytes", "records"):
        return _blob
    if kind == "uuid":
        return uuids
    raise AssertionError(kind)


def field_value(f, version, depth, breadth=3):
    """A strategy for a field present at version; arrays hold up to breadth items (1 when nested deep)."""
    if f.struct is not None:
        item = st.deferred(lambda: message(f.struct, version, depth + 1, breadth))
    else:
        item = _primitive(f.kind)
    value = st.lists(item, max_size=breadth if depth < 3 else 1) if f.array else item
    if version in f.nullable_versions:
        value = st.one_of(st.none(), value)
    return value


@functools.lru_cache(maxsize=None)
def message(cls, version, depth=0, breadth=3):
    """A strategy for an instance of cls that is valid at version (built once per class and version)."""
    fields = {f.attr: field_value(f, version, depth, breadth) for f in cls._fields if version in f.versions}
    return st.fixed_dictionaries(fields).map(lambda values: cls(**values))


def unknown_tags(cls, version):
    """Unknown tagged fields for an instance of cls at a flexible version (tags it does not know)."""
    known = {f.tag for f in cls._fields if f.tag is not None}
    tags = st.integers(0, 2**31 - 1).filter(lambda t: t not in known)
    return st.dictionaries(tags, st.binary(max_size=10), max_size=3)
