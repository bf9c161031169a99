"""Spec dicts -> a validated model of messages, structs and fields.

Every rule failure raises SpecError naming the file, the field path and the rule.
The model is what the templates render; nothing downstream re-checks the specs.
"""

import keyword
import re
from pathlib import Path

from .errors import SpecError
from .loader import load_spec, spec_files
from .versions import MAX_VERSION, Versions

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
PRIMITIVES = set(INT_RANGES) | {"bool", "float64", "string", "bytes", "records", "uuid"}
NULLABLE_PRIMITIVES = {"string", "bytes", "records"}
SPEC_TYPES = {"request", "response", "header", "metadata", "data"}

SPEC_KEYS = {
    "apiKey", "type", "name", "validVersions", "flexibleVersions", "fields", "commonStructs",
    "listeners", "latestVersionUnstable", "deprecatedVersions", "unstableVersions",
    "removedVersions", "about",
}
FIELD_KEYS = {
    "name", "type", "versions", "nullableVersions", "flexibleVersions", "tag", "taggedVersions",
    "mapKey", "ignorable", "default", "entityType", "zeroCopy", "about", "fields",
}
# Names the compiled modules take from the runtime core; a spec class cannot reuse them.
RESERVED_SPEC_NAMES = {"Reader", "Writer", "Struct", "PyObject", "PyTypeObject"}
# Attribute names the generated classes use themselves.
RESERVED_ATTRS = {
    "encode", "decode", "to_dict", "from_dict", "api_key", "valid_versions", "flexible_versions",
    "unknown_tagged_fields", "read_from", "write_to",
}


def snake_case(name):
    """``ThrottleTimeMs`` -> ``throttle_time_ms``; ``ISRNodes`` -> ``isr_nodes``."""
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    return s + "_" if keyword.iskeyword(s) else s


class Field:
    """One field of a struct, with everything version-dependent resolved to ranges."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    @property
    def is_array(self):
        return self.container == "array"

    def __repr__(self):
        return f"Field({self.path})"


class Struct:
    """A named group of fields: a spec's root, an inline struct or a common struct."""

    def __init__(self, name, class_name, qualname, fields, path):
        self.name = name
        self.class_name = class_name  # name in the generated module
        self.qualname = qualname  # name users see, e.g. FetchRequest.FetchTopic
        self.fields = fields
        self.path = path


class Spec:
    def __init__(self, **kw):
        self.__dict__.update(kw)

    @property
    def is_message(self):
        return self.type in ("request", "response")

    def __repr__(self):
        return f"Spec({self.name})"


class _SpecBuilder:
    """Builds one Spec from its dict; holds the per-file state rules need."""

    def __init__(self, file, data):
        self.file = file
        self.data = data
        self.structs = []  # every Struct, children before parents
        self.by_name = {}  # struct type name -> (Struct, fingerprint)
        self.common = {}  # common struct name -> raw dict

    def fail(self, where, rule):
        raise SpecError(self.file, where, rule)

    def versions(self, raw, where, key):
        try:
            return Versions.parse(raw)
        except ValueError as e:
            self.fail(where, f"{key}: {e}")

    def build(self):
        d = self.data
        name = d.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Z][A-Za-z0-9]*", name):
            self.fail("name", f"spec name must be a CamelCase identifier, got {name!r}")
        if name in RESERVED_SPEC_NAMES:
            self.fail("name", f"spec name {name!r} is reserved by the generated code")
        self.name = name
        for key in d:
            if key not in SPEC_KEYS:
                self.fail(name, f"unknown key {key!r}")
        stype = d.get("type")
        if stype not in SPEC_TYPES:
            self.fail(f"{name}.type", f"type must be one of {sorted(SPEC_TYPES)}, got {stype!r}")
        api_key = d.get("apiKey")
        if stype in ("request", "response", "metadata"):
            if not isinstance(api_key, int) or isinstance(api_key, bool) or not 0 <= api_key <= 0x7FFF:
                self.fail(f"{name}.apiKey", f"a {stype} needs an integer apiKey in 0..32767, got {api_key!r}")
        if "validVersions" not in d:
            self.fail(name, "validVersions is missing")
        valid = self.versions(d["validVersions"], f"{name}.validVersions", "validVersions")
        if valid.open_ended:
            self.fail(f"{name}.validVersions", "validVersions must name its highest version")
        flexible = self.versions(d.get("flexibleVersions", "none"), f"{name}.flexibleVersions", "flexibleVersions")
        if not flexible.empty and not flexible.open_ended:
            self.fail(f"{name}.flexibleVersions", "flexibleVersions must be open-ended (N+) or none")
        self.valid, self.flexible = valid, flexible

        unstable = self.versions(d.get("unstableVersions", "none"), f"{name}.unstableVersions", "unstableVersions")
        if d.get("latestVersionUnstable") is True and not valid.empty:
            latest = Versions(valid.hi, valid.hi)
            unstable = latest if unstable.empty else Versions(min(unstable.lo, latest.lo), valid.hi)
        removed = self.versions(d.get("removedVersions", "none"), f"{name}.removedVersions", "removedVersions")
        deprecated = self.versions(d.get("deprecatedVersions", "none"), f"{name}.deprecatedVersions",
                                   "deprecatedVersions")
        marks = (("unstableVersions", unstable), ("removedVersions", removed), ("deprecatedVersions", deprecated))
        for key, r in marks:
            if not r.issubset(valid):
                self.fail(f"{name}.{key}", f"{key} {r} lies outside validVersions {valid}")

        common = d.get("commonStructs", [])
        if not isinstance(common, list):
            self.fail(f"{name}.commonStructs", "commonStructs must be a list")
        for i, cs in enumerate(common):
            where = f"{name}.commonStructs[{i}]"
            if not isinstance(cs, dict) or not isinstance(cs.get("name"), str):
                self.fail(where, "a common struct needs a name")
            if not isinstance(cs.get("fields"), list):
                self.fail(f"{name}.commonStructs.{cs['name']}", "a common struct needs a fields list")
            if cs["name"] in self.common:
                self.fail(f"{name}.commonStructs.{cs['name']}", "common struct defined twice")
            self.common[cs["name"]] = cs

        raw_fields = d.get("fields", [] if valid.empty else None)  # a reserved key has no fields
        root = self.struct(name, name, name, raw_fields, f"{name}", valid, root=True)
        for cname, cs in self.common.items():
            if cname not in self.by_name:  # unused, still validated and generated
                st = self.struct(cname, f"{name}_{cname}", f"{name}.{cname}", cs["fields"],
                                 f"{name}.commonStructs.{cname}", valid, array_elem=True)
                self.by_name[cname] = (st, None)
        listeners = d.get("listeners", [])
        return Spec(about=self.about(d, name),
            file=self.file, name=name, type=stype, api_key=api_key, valid=valid, flexible=flexible,
            unstable=unstable, removed=removed, deprecated=deprecated, listeners=listeners,
            root=root, structs=self.structs,
        )

    def struct(self, type_name, class_name, qualname, raw_fields, path, parent_versions, root=False,
               array_elem=False):
        if not isinstance(raw_fields, list):
            self.fail(path, "fields must be a list")
        fields, seen_names, seen_attrs, seen_tags = [], {}, {}, {}
        st = Struct(type_name, class_name, qualname, fields, path)
        for i, raw in enumerate(raw_fields):
            named = isinstance(raw, dict) and "name" in raw
            f = self.field(raw, f"{path}.{raw['name']}" if named else f"{path}[{i}]",
                           parent_versions, root, array_elem)
            if f.name in seen_names:
                self.fail(f.path, "field name used twice in one struct")
            if f.attr in seen_attrs:
                self.fail(f.path, f"field name maps to attribute {f.attr!r}, as {seen_attrs[f.attr]} does")
            if f.tag is not None:
                if f.tag in seen_tags:
                    self.fail(f.path, f"tag {f.tag} is already used by {seen_tags[f.tag]} in this struct")
                seen_tags[f.tag] = f.name
            seen_names[f.name] = seen_attrs[f.attr] = f.name
            fields.append(f)
        self.structs.append(st)
        return st

    def field(self, raw, path, parent_versions, in_root, array_elem):
        if not isinstance(raw, dict):
            self.fail(path, "a field must be a JSON object")
        for key in raw:
            if key not in FIELD_KEYS:
                self.fail(path, f"unknown key {key!r}")
        name = raw.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", name):
            self.fail(path, f"field name must be an identifier, got {name!r}")
        attr = snake_case(name)
        if attr in RESERVED_ATTRS and (in_root or attr != "api_key"):  # nested classes are Structs too
            self.fail(path, f"field name {name!r} clashes with the generated attribute {attr!r}")
        if "versions" not in raw:
            self.fail(path, "versions is missing")
        versions = self.versions(raw["versions"], path, "versions")
        present = versions.intersect(parent_versions)
        # A range wholly below the valid ones is a leftover of removed versions (upstream keeps
        # those); one that reaches above them names versions that do not exist.
        if not parent_versions.empty and (
            versions.lo > parent_versions.hi or (not versions.open_ended and versions.hi > parent_versions.hi)
        ):
            self.fail(path, f"versions {versions} lie outside validVersions {parent_versions} of its parent")

        ftype = raw.get("type")
        if not isinstance(ftype, str) or not ftype:
            self.fail(path, f"type must be a string, got {ftype!r}")
        container = "array" if ftype.startswith("[]") else None
        elem = ftype[2:] if container else ftype
        struct = None
        if elem in PRIMITIVES:
            if "fields" in raw:
                self.fail(path, f"a field of type {ftype} cannot have fields")
        elif re.fullmatch(r"[A-Z][A-Za-z0-9]*", elem):
            struct = self.struct_type(elem, raw, path, present, bool(container))
        else:
            self.fail(path, f"unknown type {ftype!r}")
        if container and elem == "records":
            self.fail(path, "records cannot be an array element")

        nullable = self.versions(raw.get("nullableVersions", "none"), path, "nullableVersions")
        if not nullable.empty:
            if not container and struct is None and elem not in NULLABLE_PRIMITIVES:
                self.fail(path, f"nullableVersions set on type {ftype}, which cannot be null")
        nullable = nullable.intersect(present)

        own_flex = None
        if "flexibleVersions" in raw:
            own_flex = self.versions(raw["flexibleVersions"], path, "flexibleVersions")
            if not (container or elem in ("string", "bytes", "records")):
                self.fail(path, f"flexibleVersions on type {ftype}, which has no compact form")

        tag, tagged = None, Versions.NONE
        if "tag" in raw or "taggedVersions" in raw:
            if "tag" not in raw or "taggedVersions" not in raw:
                self.fail(path, "tag and taggedVersions go together")
            tag = raw["tag"]
            if isinstance(tag, str) and tag.strip().isdigit():
                tag = int(tag)
            if not isinstance(tag, int) or isinstance(tag, bool) or not 0 <= tag <= 0x7FFFFFFF:
                self.fail(path, f"tag must be a non-negative integer, got {raw['tag']!r}")
            tagged = self.versions(raw["taggedVersions"], path, "taggedVersions")
            if not tagged.open_ended:
                self.fail(path, f"taggedVersions {tagged} must be open-ended (N+)")
            if not tagged.issubset(self.flexible):
                self.fail(path, f"tagged field outside flexibleVersions: taggedVersions {tagged}, "
                                f"flexibleVersions {self.flexible}")
            if not tagged.issubset(versions):
                self.fail(path, f"taggedVersions {tagged} lie outside the field's versions {versions}")
            tagged = tagged.intersect(present)

        map_key = raw.get("mapKey", False)
        if map_key not in (True, False):
            self.fail(path, f"mapKey must be true or false, got {map_key!r}")
        if map_key and not array_elem:
            self.fail(path, "mapKey outside an array of structs")
        ignorable = raw.get("ignorable", False)
        if ignorable not in (True, False):
            self.fail(path, f"ignorable must be true or false, got {ignorable!r}")

        f = Field(
            name=name, attr=attr, path=path, type=ftype, container=container, elem=elem, struct=struct,
            versions=versions.intersect(Versions(0, MAX_VERSION)), present=present, nullable=nullable,
            flexible_override=own_flex, tag=tag, tagged=tagged, map_key=map_key, ignorable=ignorable,
            entity_type=raw.get("entityType"), zero_copy=bool(raw.get("zeroCopy", False)),
            about=self.about(raw, path),
        )
        f.default = self.default(raw, f)
        return f

    def about(self, raw, where):
        about = raw.get("about")
        if about is not None and not isinstance(about, str):
            self.fail(where, f"about must be a string, got {about!r}")
        return about

    def struct_type(self, elem, raw, path, present, array_elem):
        """Resolve a struct type: defined inline here, in commonStructs, or earlier in the file."""
        if elem in PRIMITIVES:
            return None
        fp = _fingerprint(raw.get("fields")) if "fields" in raw else None
        if elem in self.by_name:
            st, old_fp = self.by_name[elem]
            if fp is not None and fp != old_fp:
                self.fail(path, f"struct type {elem} defined twice differently (first at {st.path})")
            if not array_elem and any(f.map_key for f in st.fields):
                self.fail(path, f"mapKey outside an array of structs: {elem} has a mapKey field")
            return st
        if "fields" in raw:
            if elem in self.common:
                self.fail(path, f"struct type {elem} defined both inline and in commonStructs")
            qual = f"{self.name}.{elem}"
            st = self.struct(elem, f"{self.name}_{elem}", qual, raw["fields"], path, present,
                             array_elem=array_elem)
            self.by_name[elem] = (st, fp)
            return st
        if elem in self.common:
            cs = self.common[elem]
            # Common structs may be reached from several fields; validate against every version.
            st = self.struct(elem, f"{self.name}_{elem}", f"{self.name}.{elem}", cs["fields"],
                             f"{self.name}.commonStructs.{elem}", self.valid, array_elem=array_elem)
            self.by_name[elem] = (st, _fingerprint(cs["fields"]))
            return st
        self.fail(path, f"unknown type {raw['type']!r}: no struct named {elem} is defined")

    def default(self, raw, f):
        """The Python value a field takes when absent, checked against its type."""
        where = f.path
        has = "default" in raw
        d = raw.get("default")
        if f.container:
            if has and d != "null":
                self.fail(where, "an array field can only default to null")
            if has and not f.present.issubset(f.nullable):
                self.fail(where, "default null needs the field nullable in all its versions")
            return None if has else []
        if f.struct is not None:
            if has and d != "null":
                self.fail(where, "a struct field can only default to null")
            if has and not f.present.issubset(f.nullable):
                self.fail(where, "default null needs the field nullable in all its versions")
            return None if has else "struct"
        t = f.elem
        if t == "records":
            return None
        if t in ("string", "bytes"):
            if not has:
                return "" if t == "string" else b""
            if d == "null":
                if not f.present.issubset(f.nullable):
                    self.fail(where, "default null needs the field nullable in all its versions")
                return None
            if t == "bytes":
                self.fail(where, "a bytes field can only default to null")
            if not isinstance(d, str):
                self.fail(where, f"default {d!r} is not a string")
            return d
        if t == "bool":
            if not has:
                return False
            if d in (True, "true"):
                return True
            if d in (False, "false"):
                return False
            self.fail(where, f"default {d!r} is not a boolean")
        if t == "float64":
            if not has:
                return 0.0
            try:
                return float(d)
            except (TypeError, ValueError):
                self.fail(where, f"default {d!r} is not a number")
        if t == "uuid":
            if not has:
                return "zero"
            self.fail(where, "a uuid field cannot have a default")
        lo, hi = INT_RANGES[t]
        if not has:
            return 0
        value = _parse_int(d)
        if value is None:
            self.fail(where, f"default {d!r} is not an integer")
        if not lo <= value <= hi:
            self.fail(where, f"default {d!r} is out of range for {t}")
        return value


def _parse_int(d):
    if isinstance(d, bool):
        return None
    if isinstance(d, int):
        return d
    if not isinstance(d, str):
        return None
    s = d.strip()
    neg = s.startswith("-")
    body = s[1:] if neg else s
    try:
        if body.lower().startswith("0x"):
            v = int(body[2:], 16)
        elif len(body) > 1 and body.startswith("0"):
            v = int(body[1:], 8)
        else:
            v = int(body, 10)
    except ValueError:
        return None
    return -v if neg else v


def _fingerprint(raw_fields):
    """A comparable form of an inline struct definition, ignoring prose."""
    def clean(x):
        if isinstance(x, dict):
            return tuple(sorted((k, clean(v)) for k, v in x.items() if k != "about"))
        if isinstance(x, list):
            return tuple(clean(v) for v in x)
        return x
    return clean(raw_fields)


def build_spec(file, data):
    return _SpecBuilder(file, data).build()


def load_model(directories):
    """Load and validate every spec below the directories; return specs sorted by name."""
    specs, keys = {}, {}
    for path in spec_files(directories):
        spec = build_spec(path, load_spec(path))
        if spec.name in specs:
            raise SpecError(path, spec.name, f"spec name already defined in {specs[spec.name].file}")
        if spec.api_key is not None and spec.type in ("request", "response", "metadata"):
            k = (spec.api_key, spec.type)
            if k in keys:
                raise SpecError(path, f"{spec.name}.apiKey",
                                f"apiKey {spec.api_key} with type {spec.type} is already used by "
                                f"{keys[k].name} ({keys[k].file})")
            keys[k] = spec
        specs[spec.name] = spec
    _check_pairs(specs)
    return [specs[n] for n in sorted(specs)]


def _check_pairs(specs):
    """A request and its response share an api key and versions."""
    by_key = {}
    for s in specs.values():
        if s.is_message:
            by_key.setdefault(s.api_key, {})[s.type] = s
    for key, pair in by_key.items():
        if len(pair) == 1:
            (s,) = pair.values()
            other = "response" if s.type == "request" else "request"
            raise SpecError(s.file, s.name, f"apiKey {key} has a {s.type} but no {other}")
        req, resp = pair["request"], pair["response"]
        if req.valid != resp.valid:
            raise SpecError(resp.file, f"{resp.name}.validVersions",
                            f"validVersions {resp.valid} differ from {req.name}'s {req.valid}")


def default_schema_dirs():
    root = Path(__file__).resolve().parent.parent / "schemas"
    return [root / "message", root / "metadata"]
