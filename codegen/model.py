"""Spec dicts -> a validated model of messages, structs and fields.

Every rule failure raises SpecError naming the file, the field path and the rule.
The model is what the templates render; nothing downstream re-checks the specs.
"""

import base64
import binascii
import hashlib
import json
import keyword
import re
from pathlib import Path

from .errors import SpecError, raise_all
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
SPEC_TYPES = {"request", "response", "header", "metadata", "data", "coordinator-key", "coordinator-value"}
# Spec types numbered by their apiKey, unique within the type: an API's request and response, a KRaft metadata
# record's type, and a group coordinator record's type (its key and value share the number).
KEYED_TYPES = ("request", "response", "metadata", "coordinator-key", "coordinator-value")

# Kafka's entity types, and the type a field of each must have (None: any).
ENTITY_TYPES = {"unknown": None, "transactionalId": "string", "producerId": "int64", "groupId": "string",
                "topicName": "string", "brokerId": "int32"}
SPEC_KEYS = {
    "apiKey", "type", "name", "validVersions", "flexibleVersions", "fields", "commonStructs",
    "listeners", "latestVersionUnstable", "deprecatedVersions", "unstableVersions",
    "removedVersions", "about", "headerVersions",
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
        self.errors = []

    def fail(self, where, rule):
        """Stop building the field (or spec) at hand: it breaks a rule."""
        raise SpecError(self.file, where, rule)

    def note(self, where, rule):
        """Record a broken rule and go on, so that one run reports every error."""
        self.errors.append(SpecError(self.file, where, rule))

    def versions(self, raw, where, key):
        try:
            return Versions.parse(raw)
        except ValueError as e:
            self.fail(where, f"{key}: {e}")

    def build(self):
        try:
            spec = self._build()
        except SpecError as e:
            self.errors.append(e)
        if self.errors:
            raise_all(self.errors)
        return spec

    def _build(self):
        d = self.data
        name = d.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Z][A-Za-z0-9]*", name):
            self.fail("name", f"spec name must be a CamelCase identifier, got {name!r}")
        if name in RESERVED_SPEC_NAMES:
            self.fail("name", f"spec name {name!r} is reserved by the generated code")
        self.name = name
        for key in d:
            if key not in SPEC_KEYS:
                self.note(name, f"unknown key {key!r}")
        stype = d.get("type")
        if stype not in SPEC_TYPES:
            self.fail(f"{name}.type", f"type must be one of {sorted(SPEC_TYPES)}, got {stype!r}")
        api_key = d.get("apiKey")
        if stype in KEYED_TYPES:
            if not isinstance(api_key, int) or isinstance(api_key, bool) or not 0 <= api_key <= 0x7FFF:
                self.fail(f"{name}.apiKey", f"a {stype} needs an integer apiKey in 0..32767, got {api_key!r}")
        if "validVersions" not in d:
            self.fail(name, "validVersions is missing")
        valid = self.versions(d["validVersions"], f"{name}.validVersions", "validVersions")
        if valid.open_ended:
            self.fail(f"{name}.validVersions", "validVersions must name its highest version")
        if "flexibleVersions" not in d and not valid.empty:
            self.note(name, "flexibleVersions is missing (none, or N+; 0+ for a new message)")
        flexible = self.versions(d.get("flexibleVersions", "none"), f"{name}.flexibleVersions", "flexibleVersions")
        if not flexible.empty and not flexible.open_ended:
            self.note(f"{name}.flexibleVersions", "flexibleVersions must be open-ended (N+) or none")
        elif not flexible.empty and not valid.empty and flexible.lo > valid.hi:
            self.note(f"{name}.flexibleVersions", f"flexibleVersions {flexible} start above validVersions {valid}")
        self.valid, self.flexible = valid, flexible
        for key in ("listeners", "latestVersionUnstable"):
            if key in d and stype != "request" and not valid.empty:
                self.note(f"{name}.{key}", f"{key} is only for requests")
        self.header_map = self.header_versions(d.get("headerVersions"), name, stype, api_key, valid)

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
                self.note(f"{name}.{key}", f"{key} {r} lies outside validVersions {valid}")

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
            root=root, structs=self.structs, header_map=self.header_map, fingerprint=spec_fingerprint(d),
        )

    def header_versions(self, raw, name, stype, api_key, valid):
        """A spec's headerVersions ({"0-1": "1", "2+": "2"}) as [(Versions, header version)], or None.

        The ranges must run from 0 without gaps to an open end; ApiVersions responses stay at header 0.
        """
        if raw is None:
            return None
        where = f"{name}.headerVersions"
        if stype not in ("request", "response"):
            self.fail(where, "headerVersions is only for requests and responses")
        if not isinstance(raw, dict) or not raw:
            self.fail(where, "headerVersions must be a non-empty object of version range -> header version")
        entries = []
        for key, value in raw.items():
            r = self.versions(key, where, "headerVersions")
            if r.empty:
                self.fail(where, f"empty version range {key!r}")
            number = _parse_int(value) if isinstance(value, str) else value if type(value) is int else None
            if number is None or number < 0:
                self.fail(where, f"header version {value!r} for {key!r} is not a non-negative integer")
            entries.append((r, number))
        entries.sort(key=lambda e: e[0].lo)
        expected = 0
        for r, _ in entries:
            if r.lo != expected:
                self.fail(where, f"ranges must run from version 0 without gaps: {r} should start at {expected}")
            if not valid.empty and r.lo > valid.hi:
                self.fail(where, f"range {r} starts above the highest valid version {valid.hi}")
            expected = r.hi + 1
        if not entries[-1][0].open_ended:
            self.fail(where, f"the last range {entries[-1][0]} must be open-ended (N+)")
        if stype == "response" and api_key == 18 and any(number for _, number in entries):
            self.fail(where, "ApiVersions responses use header version 0 at every version")
        return entries

    def struct(self, type_name, class_name, qualname, raw_fields, path, parent_versions, root=False,
               array_elem=False):
        if not isinstance(raw_fields, list):
            self.fail(path, "fields must be a list")
        fields, seen_names, seen_attrs, seen_tags = [], {}, {}, {}
        st = Struct(type_name, class_name, qualname, fields, path)
        for i, raw in enumerate(raw_fields):
            named = isinstance(raw, dict) and isinstance(raw.get("name"), str)
            try:
                f = self.field(raw, f"{path}.{raw['name']}" if named else f"{path}[{i}]",
                               parent_versions, root, array_elem)
            except SpecError as e:
                self.errors.append(e)
                continue
            if f.name in seen_names:
                self.note(f.path, "field name used twice in one struct")
            elif f.attr in seen_attrs:
                self.note(f.path, f"field name maps to attribute {f.attr!r}, as {seen_attrs[f.attr]} does")
            if f.tag is not None:
                if f.tag in seen_tags:
                    self.note(f.path, f"tag {f.tag} is already used by {seen_tags[f.tag]} in this struct")
                seen_tags[f.tag] = f.name
            seen_names[f.name] = seen_attrs[f.attr] = f.name
            fields.append(f)
        missing = [t for t in range(len(seen_tags)) if t not in seen_tags]
        if missing:
            self.note(path, f"tags must run from 0 without gaps (as they cost bytes on the wire): tag {missing[0]} "
                            f"is unused but {max(seen_tags)} is")
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
            if container or elem not in ("string", "bytes", "records"):
                self.fail(path, f"flexibleVersions on type {ftype}: only string and bytes fields may override it")
            if not own_flex.empty and not parent_versions.empty and own_flex.lo > parent_versions.hi:
                self.fail(path, f"flexibleVersions {own_flex} start above the versions {parent_versions} it is in")

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

        if tag is not None:
            declared_nullable = self.versions(raw.get("nullableVersions", "none"), path, "nullableVersions")
            declared_tagged = self.versions(raw["taggedVersions"], path, "taggedVersions")
            both = declared_nullable.intersect(declared_tagged)
            if not both.empty and both != declared_tagged:
                self.fail(path, f"nullableVersions {declared_nullable} cover only part of taggedVersions "
                                f"{declared_tagged}: a tagged field is nullable in all its tagged versions or none")

        map_key = raw.get("mapKey", False)
        if map_key not in (True, False):
            self.fail(path, f"mapKey must be true or false, got {map_key!r}")
        if map_key and not array_elem:
            self.fail(path, "mapKey outside an array of structs")
        if map_key and tag is not None:
            self.fail(path, "a tagged field cannot be a mapKey")

        entity = raw.get("entityType")
        if entity is not None:
            if entity not in ENTITY_TYPES:
                self.fail(path, f"unknown entityType {entity!r}; one of {', '.join(ENTITY_TYPES)}")
            base = ENTITY_TYPES[entity]
            if base is not None and (elem != base or struct is not None):
                self.fail(path, f"entityType {entity} needs type {base} (or an array of it), not {ftype}")
        zero_copy = raw.get("zeroCopy", False)
        if zero_copy not in (True, False):
            self.fail(path, f"zeroCopy must be true or false, got {zero_copy!r}")
        if zero_copy and (container or elem != "bytes"):
            self.fail(path, f"zeroCopy is only for bytes fields, not {ftype}")
        ignorable = raw.get("ignorable", False)
        if ignorable not in (True, False):
            self.fail(path, f"ignorable must be true or false, got {ignorable!r}")

        f = Field(
            name=name, attr=attr, path=path, type=ftype, container=container, elem=elem, struct=struct,
            versions=versions.intersect(Versions(0, MAX_VERSION)), present=present, nullable=nullable,
            flexible_override=own_flex, tag=tag, tagged=tagged, map_key=map_key, ignorable=ignorable,
            entity_type=entity, zero_copy=zero_copy,
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
            try:  # Kafka's form: 16 bytes in URL-safe base64
                value = base64.urlsafe_b64decode(d + "=" * (-len(d) % 4)) if isinstance(d, str) else None
            except (ValueError, binascii.Error):
                value = None
            if value is None or len(value) != 16:
                self.fail(where, f"default {d!r} is not a uuid in URL-safe base64")
            return value
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


def spec_fingerprint(data):
    """A short hash of what a spec says, prose left out: extensions record the one of each spec they amend."""
    text = json.dumps(_fingerprint(data), separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def build_spec(file, data):
    return _SpecBuilder(file, data).build()


def load_model(directories):
    """Load and validate every spec below the directories; return specs sorted by name.

    Every broken rule of every file is reported: one SpecError, or SpecErrors listing them all.
    """
    specs, keys, errors, refused = {}, {}, [], set()
    for path in spec_files(directories):
        data = None
        try:
            data = load_spec(path)
            spec = build_spec(path, data)
        except SpecError as e:
            errors.extend(getattr(e, "errors", [e]))
            refused.update(refused_names(path, data))
            continue
        if spec.name in specs:
            errors.append(SpecError(path, spec.name, f"spec name already defined in {specs[spec.name].file}"))
            continue
        if spec.api_key is not None and spec.type in KEYED_TYPES:
            k = (spec.api_key, spec.type)
            if k in keys:
                errors.append(SpecError(path, f"{spec.name}.apiKey",
                                        f"apiKey {spec.api_key} with type {spec.type} is already used by "
                                        f"{keys[k].name} ({keys[k].file})"))
                continue
            keys[k] = spec
        specs[spec.name] = spec
    errors.extend(_check_pairs(specs, refused))
    if errors:
        raise_all(errors)
    return [specs[n] for n in sorted(specs)]


def refused_names(path, data):
    """What a spec that was refused stands for, so that its partner is not also reported as lacking it: its name
    (the file's, when the JSON did not read) and its (apiKey, type)."""
    name = data.get("name") if isinstance(data, dict) else None
    names = {name if isinstance(name, str) else Path(path).stem}
    if isinstance(data, dict) and isinstance(data.get("apiKey"), int) and isinstance(data.get("type"), str):
        names.add((data["apiKey"], data["type"]))
    return names


def partner_name(name):
    """FooRequest's partner is FooResponse, and FooResponse's FooRequest."""
    for mine, other in (("Request", "Response"), ("Response", "Request")):
        if name.endswith(mine):
            return name[:-len(mine)] + other
    return None


def _check_pairs(specs, refused=()):
    """A request and its response share an api key and versions. A message whose partner was refused is not
    reported again: the partner's own errors say what is wrong."""
    by_key, errors = {}, []
    for s in specs.values():
        if s.is_message:
            by_key.setdefault(s.api_key, {})[s.type] = s
    for key, pair in by_key.items():
        if len(pair) == 1:
            (s,) = pair.values()
            other = "response" if s.type == "request" else "request"
            if (key, other) in refused or partner_name(s.name) in refused:
                continue
            errors.append(SpecError(s.file, s.name, f"apiKey {key} has a {s.type} but no {other}"))
            continue
        req, resp = pair["request"], pair["response"]
        if req.valid != resp.valid:
            errors.append(SpecError(resp.file, f"{resp.name}.validVersions",
                                    f"validVersions {resp.valid} differ from {req.name}'s {req.valid}"))
    return errors


def default_schema_dirs():
    """kafkaproto's own specs: schemas/ of a source tree, or the copy installed with the generator."""
    here = Path(__file__).resolve().parent
    root = here / "schemas" if (here / "schemas").is_dir() else here.parent / "schemas"
    return [root / "message", root / "metadata", root / "coordinator"]
