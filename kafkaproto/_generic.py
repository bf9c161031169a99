"""Methods every generated class shares, driven by its ``_fields`` table.

Both implementations (compiled and pure Python) use these, so construction,
equality, dict conversion and encode-error diagnosis behave the same in both.
None of this is on the encode/decode hot path.
"""

import operator
from typing import NamedTuple

from .exceptions import DecodeError, EncodeError, EncodeTypeError, UnsupportedVersionError
from .uuid import Uuid

class FieldInfo(NamedTuple):
    """One field of a generated class (its ``_fields`` table has one per field, in wire order)."""

    attr: str  # the Python attribute
    name: str  # the spec's name
    kind: str  # int8 ... uuid, string, bytes, records, or struct
    array: bool
    struct: object  # the class of a struct field (or of an array's items), else None
    versions: range  # the versions that carry it
    nullable_versions: range
    tag: object  # its tag when it is a tagged field in some version, else None
    tagged_versions: range
    flexible_versions: range  # the versions that write it in compact form
    ignorable: bool  # a version without it may drop a non-default value
    default: object  # its value when absent; LIST and STRUCT stand for a fresh [] or struct
    entity: object = None  # what the value names, as the spec's entityType says: "topicName", "brokerId", ...


class SpecInfo(NamedTuple):
    """One spec of a generated package: what it is and at which versions."""

    name: str
    kind: str  # request, response, header, metadata or data
    api_key: object  # an int for requests, responses and metadata records
    valid_versions: range
    flexible_versions: range
    unstable_versions: range  # upstream marks them unstable; brokers do not advertise them
    removed_versions: range  # gone from current Apache Kafka, kept to read old traffic
    deprecated_versions: range
    listeners: tuple
    module: str  # the generated module that holds the classes
    header_versions: tuple  # requests and responses: the header version at each valid version
    fallback_version: object  # a response a broker may write at this version instead of the one asked


# The longest compact array, bytes or string: Kafka reads its length plus one as an int32.
MAX_LENGTH = 0x7FFFFFFE


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


LIST = _Marker("LIST")  # the default of an array field: a fresh empty list
STRUCT = _Marker("STRUCT")  # the default of a struct field: a fresh struct of defaults
UNSET = _Marker("UNSET")  # an argument not given to a generated __init__

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def is_default(f, value):
    d = f.default
    if d is LIST:
        return value is not None and len(value) == 0 if isinstance(value, (list, tuple)) else False
    if d is STRUCT:
        return is_default_struct(value, f.struct)
    if d is None:
        return value is None
    return value is not None and value == d


def is_default_struct(value, cls):
    return type(value) is cls and all(is_default(g, getattr(value, g.attr)) for g in cls._fields) \
        and not value.unknown_tagged_fields


def field_values(obj):
    out = {f.attr: getattr(obj, f.attr) for f in type(obj)._fields}
    if obj.unknown_tagged_fields:
        out["unknown_tagged_fields"] = obj.unknown_tagged_fields
    return out


def rebuild(cls, values):
    values = dict(values)
    for f in cls._fields:  # memoryviews do not pickle; records travel as bytes
        v = values.get(f.attr)
        if isinstance(v, memoryview):
            values[f.attr] = bytes(v)
    return cls(**values)


def equal(a, b):
    if type(a) is not type(b):
        if getattr(type(b), "_qualname", None) != type(a)._qualname:
            return NotImplemented
        return _equal_amended(a, b)
    for f in type(a)._fields:
        if getattr(a, f.attr) != getattr(b, f.attr):
            return False
    return (a.unknown_tagged_fields or None) == (b.unknown_tagged_fields or None)


def _equal_amended(a, b):
    """Two classes of one struct (an extension's amended class and kafkaproto's): equal when the fields both
    have are equal and those only one has are at their defaults."""
    theirs = {f.attr: f for f in type(b)._fields}
    for f in type(a)._fields:
        value = getattr(a, f.attr)
        if f.attr in theirs:
            if value != getattr(b, f.attr):
                return False
        elif not is_default(f, value):
            return False
    mine = {f.attr for f in type(a)._fields}
    for attr, f in theirs.items():
        if attr not in mine and not is_default(f, getattr(b, attr)):
            return False
    return (a.unknown_tagged_fields or None) == (b.unknown_tagged_fields or None)


def _short(value):
    if isinstance(value, memoryview):
        return f"<{value.nbytes} bytes>"
    return repr(value)


def represent(obj):
    parts = [f"{f.attr}={_short(getattr(obj, f.attr))}" for f in type(obj)._fields]
    if obj.unknown_tagged_fields:
        parts.append(f"unknown_tagged_fields={obj.unknown_tagged_fields!r}")
    return f"{type(obj)._qualname}({', '.join(parts)})"


def _plain(f, value):
    if value is None:
        return None
    if f.struct is not None:
        if f.array and isinstance(value, (list, tuple)):
            return [to_dict(x) if x is not None else None for x in value]
        return to_dict(value) if not f.array else value
    if f.array:
        return list(value) if isinstance(value, (list, tuple)) else value
    if isinstance(value, memoryview):
        return value.tobytes()
    return value


def to_dict(obj):
    out = {f.attr: _plain(f, getattr(obj, f.attr)) for f in type(obj)._fields}
    if obj.unknown_tagged_fields:
        out["unknown_tagged_fields"] = dict(obj.unknown_tagged_fields)
    return out


def from_dict(cls, d, path=None):
    path = path or cls._qualname
    if isinstance(d, cls):
        return d
    if not isinstance(d, dict):
        raise EncodeTypeError(f"{path}: expected a dict for {cls._qualname}, got {type(d).__name__}")
    values = {}
    by_attr = {f.attr: f for f in cls._fields}
    for key, value in d.items():
        if key == "unknown_tagged_fields":
            values[key] = dict(value) if value else None
            continue
        f = by_attr.get(key)
        if f is None:
            raise EncodeTypeError(f"{path}: {cls._qualname} has no field {key!r}")
        if f.struct is not None and value is not None:
            if f.array:
                if not isinstance(value, (list, tuple)):
                    raise EncodeTypeError(f"{path}.{key}: expected a list, got {type(value).__name__}")
                value = [from_dict(f.struct, x, f"{path}.{key}[{i}]") if x is not None else None
                         for i, x in enumerate(value)]
            else:
                value = from_dict(f.struct, value, f"{path}.{key}")
        elif f.kind == "uuid" and isinstance(value, str):
            value = Uuid.from_string(value) if not f.array else value
        elif f.kind == "uuid" and f.array and isinstance(value, (list, tuple)):
            value = [Uuid.from_string(x) if isinstance(x, str) else x for x in value]
        values[key] = value
    return cls(**values)


def merge_tags(known, unknown, tags, version):
    """Known (tag, bytes) pairs plus the unknown ones kept from decoding, in tag order.

    ``tags`` holds the struct's (tag, first, last version) rows: an unknown tag must
    not be one of them at this version, fit a uint31, and carry bytes.
    """
    items = list(known) if known else []
    if unknown:
        if type(unknown) is not dict:
            raise TypeError("unknown_tagged_fields must be a dict of tag -> bytes")
        for tag, data in unknown.items():
            if type(tag) is not int or not 0 <= tag <= 0x7FFFFFFF:
                raise ValueError(f"unknown tag {tag!r} is not a uint31")
            for known_tag, lo, hi in tags:
                if tag == known_tag and lo <= version <= hi:
                    raise ValueError(f"tag {tag} is a known field at this version")
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise TypeError(f"tagged field {tag} must be bytes, not {type(data).__name__}")
            items.append((tag, bytes(data)))
        items.sort(key=lambda item: item[0])
    return items


_SIZE_PREFIX_HINT = ("the bytes start with their own size (4 bytes that count the rest): pass a frame without its "
                     "size prefix, as split_frames and FrameBuffer hand frames out")


def note_size_prefix(error, frame):
    """Name the likely cause of a decoding error when the frame still starts with its int32 size prefix."""
    view = memoryview(frame)
    if len(view) < 8 or int.from_bytes(view[:4], "big") != len(view) - 4:
        return
    if isinstance(error, DecodeError):
        error.reason = f"{error.reason}; {_SIZE_PREFIX_HINT}"
    else:
        error.args = (f"{error.args[0] if error.args else error}; {_SIZE_PREFIX_HINT}",) + error.args[1:]


def bad_version(cls, version):
    vv = cls.valid_versions
    supported = f"{vv.start}-{vv.stop - 1}" if len(vv) else "none"
    raise UnsupportedVersionError(f"{cls._qualname} has no version {version!r} (supported: {supported})")


# ---- encode diagnosis -------------------------------------------------------
# The encoders fail fast with a bare exception; encode() then calls diagnose()
# to find the first bad field and say where it is.


def diagnose_encode(obj, version, error):
    """Called when an encoder failed: raise the precise error, or the original one."""
    diagnose(obj, version, type(obj)._qualname)
    raise error


def diagnose(obj, version, path):
    """Raise the precise error for the first field of obj that cannot be written."""
    cls = type(obj)
    for f in cls._fields:
        value = getattr(obj, f.attr)
        here = f"{path}.{f.attr}"
        present = version in f.versions
        if not present:
            if not f.ignorable and not is_default(f, value):
                raise UnsupportedVersionError(
                    f"{here}: field {f.name} has a non-default value {_short(value)} "
                    f"but version {version} of {cls._qualname.split('.')[0]} does not have it")
            continue
        nullable = version in f.nullable_versions
        flexible = version in f.flexible_versions
        _check_value(f, value, version, here, nullable, flexible)
    tags = obj.unknown_tagged_fields
    if tags and version not in cls.flexible_versions:
        raise UnsupportedVersionError(
            f"{path}.unknown_tagged_fields: version {version} is not flexible and cannot carry tagged fields")
    if tags:
        if type(tags) is not dict:
            raise EncodeTypeError(f"{path}.unknown_tagged_fields: expected a dict of tag -> bytes")
        known = {f.tag for f in cls._fields if version in f.tagged_versions}
        for tag, data in tags.items():
            if type(tag) is not int or not 0 <= tag <= 0x7FFFFFFF:
                raise EncodeError(f"{path}.unknown_tagged_fields: tag {tag!r} is not a uint31")
            if tag in known:
                raise EncodeError(f"{path}.unknown_tagged_fields: tag {tag} is a known field at this version")
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise EncodeTypeError(f"{path}.unknown_tagged_fields[{tag}]: expected bytes, "
                                      f"got {type(data).__name__}")


def _check_value(f, value, version, here, nullable, flexible):
    if value is None:
        if not nullable:
            raise EncodeTypeError(f"{here}: field {f.name} is not nullable in version {version}, got None")
        return
    if f.array:
        if type(value) is not list and type(value) is not tuple:
            raise EncodeTypeError(f"{here}: expected a list, got {type(value).__name__}")
        limit = MAX_LENGTH if flexible else 0x7FFFFFFF
        if len(value) > limit:
            raise EncodeError(f"{here}: array of {len(value)} items is longer than {limit}")
        for i, item in enumerate(value):
            _check_item(f, item, version, f"{here}[{i}]", flexible)
        return
    _check_item(f, value, version, here, flexible)


def _check_item(f, value, version, here, flexible):
    kind = f.kind
    if f.struct is not None:
        if type(value) is not f.struct:
            raise EncodeTypeError(f"{here}: expected {f.struct._qualname}, got {type(value).__name__}")
        diagnose(value, version, here)
        return
    if kind in INT_RANGES:
        try:
            value = operator.index(value)
        except TypeError:
            raise EncodeTypeError(f"{here}: expected an integer ({kind}), got {type(value).__name__}") from None
        lo, hi = INT_RANGES[kind]
        if not lo <= value <= hi:
            raise EncodeError(f"{here}: {value} is out of range for {kind} [{lo}, {hi}]")
    elif kind == "bool":
        if type(value) is not bool:
            raise EncodeTypeError(f"{here}: expected a bool, got {type(value).__name__}")
    elif kind == "float64":
        if not isinstance(value, (int, float)):
            raise EncodeTypeError(f"{here}: expected a float, got {type(value).__name__}")
        try:
            float(value)
        except OverflowError:
            raise EncodeError(f"{here}: {value} does not fit a float64") from None
    elif kind == "string":
        if type(value) is not str:
            raise EncodeTypeError(f"{here}: expected a str, got {type(value).__name__}")
        try:
            n = len(value.encode("utf-8"))
        except UnicodeEncodeError as e:
            raise EncodeError(f"{here}: string cannot be encoded as UTF-8: {e.reason}") from None
        limit = MAX_LENGTH if flexible else 0x7FFF
        if n > limit:
            raise EncodeError(f"{here}: string of {n} UTF-8 bytes is longer than {limit}")
    elif kind in ("bytes", "records"):
        try:
            n = memoryview(value).nbytes
        except TypeError:
            raise EncodeTypeError(f"{here}: expected bytes, got {type(value).__name__}") from None
        if isinstance(value, str):
            raise EncodeTypeError(f"{here}: expected bytes, got str")
        limit = MAX_LENGTH if flexible else 0x7FFFFFFF
        if n > limit:
            raise EncodeError(f"{here}: {n} bytes is longer than {limit}")
    elif kind == "uuid":
        if type(value) is not Uuid:
            raise EncodeTypeError(f"{here}: expected a Uuid, got {type(value).__name__}")
