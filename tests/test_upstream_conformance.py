"""schemas/ against Apache Kafka's upstream specs, version by version.

For each version v of each spec, the *authoritative* upstream set is the
newest set whose validVersions contains v.  Our merged schema must give the
same "wire projection" at v as that set.  This check is written separately
from tools/import_upstream.py on purpose, so a bug in the merge is not
repeated here.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ROOT.parent / "shared" / "kafka-protocol"
SCHEMAS = ROOT / "schemas"
SUBDIRS = ("message", "metadata")

# Key 74 was renamed upstream; only the newest name exists in schemas/.
SPEC_RENAMES = {
    "ListClientMetricsResourcesRequest": "ListConfigResourcesRequest",
    "ListClientMetricsResourcesResponse": "ListConfigResourcesResponse",
}
# Fields renamed upstream with no wire change: (spec, old name) -> new name.
# inventory.md lists the first two; the key 74 rename also renamed its response
# fields (v0 is in both sets).  Names may differ only as listed here, and
# projections are lists, so renamed fields are still compared by position.
FIELD_RENAMES = {
    ("TxnOffsetCommitRequest", "GenerationId"): "GenerationIdOrMemberEpoch",
    ("VoteRequest", "CandidateEpoch"): "ReplicaEpoch",
    ("VoteRequest", "CandidateId"): "ReplicaId",
    ("VoteRequest", "CandidateDirectoryId"): "ReplicaDirectoryId",
    ("ListConfigResourcesResponse", "ClientMetricsResources"): "ConfigResources",
    ("ListConfigResourcesResponse", "Name"): "ResourceName",
}
# Versions whose wire schema really changed between sets (inventory.md):
# ReadShareGroupStateSummaryResponse v0 gained LeaderEpoch; trunk is authoritative.
CHANGED_VERSIONS = {("ReadShareGroupStateSummaryResponse", 0)}
# Field properties that do not change the bytes of a version carrying the
# field.  The schema format holds one value per field, so schemas/ keeps the
# newest upstream value, also for versions owned by an older set.
ANNOTATIONS = ("mapKey", "entityType", "ignorable")


def parse_range(text):
    """Version range -> (lo, hi); hi is None when open-ended; None for "none"."""
    text = str(text).strip()
    if text == "none":
        return None
    if text.endswith("+"):
        return int(text[:-1]), None
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


def in_range(text, v):
    r = parse_range(text) if text is not None else None
    return r is not None and r[0] <= v and (r[1] is None or v <= r[1])


def versions_of(text):
    r = parse_range(text) if text is not None else None
    if r is None:
        return set()
    assert r[1] is not None, f"open-ended validVersions {text!r}"
    return set(range(r[0], r[1] + 1))


def set_order(path):
    # Numbered releases by number, "trunk" (or any unnumbered set) last.
    nums = tuple(int(n) for n in re.findall(r"\d+", path.name))
    return (not nums, nums, path.name)


def discover_sets():
    if not UPSTREAM.is_dir():
        return []
    found = [p for p in UPSTREAM.iterdir() if any((p / s).is_dir() for s in SUBDIRS)]
    return sorted(found, key=set_order)


SETS = discover_sets()
if not SETS:
    pytest.skip(f"upstream specs not found at {UPSTREAM}", allow_module_level=True)

from kafkaproto_codegen.loader import load_spec  # noqa: E402  (used only to strip // comments)


def load_upstream():
    """{canonical spec name: {set index: (subdir, spec)}}."""
    specs = {}
    for i, root in enumerate(SETS):
        for sub in SUBDIRS:
            for path in sorted((root / sub).glob("*.json")):
                spec = load_spec(path)
                name = SPEC_RENAMES.get(spec["name"], spec["name"])
                specs.setdefault(name, {})[i] = (sub, spec)
    return specs


def load_ours():
    ours = {}
    for sub in SUBDIRS:
        for path in sorted((SCHEMAS / sub).glob("*.json")):
            ours[path.stem] = (sub, json.loads(path.read_text(encoding="utf-8")), path)
    return ours


UP = load_upstream()
OURS = load_ours()


def owners(name):
    """{version: index of the newest set that has it}."""
    out = {}
    for i, (_, spec) in sorted(UP[name].items()):
        for v in versions_of(spec.get("validVersions")):
            out[v] = i
    return out


OWNERS = {name: owners(name) for name in UP}


def norm_default(value):
    """Defaults compare by meaning: "0x10" == 16, "true" == True, "-1" == -1."""
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    s = value.strip()
    if s.lower() in ("true", "false"):
        return s.lower() == "true"
    if re.fullmatch(r"-?0[0-7]+", s):
        return int(s, 8)
    try:
        return int(s, 0)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        return s


def find_field(spec, path):
    """The field at a path of (canonical) names, or None; commonStructs resolved."""
    common = {c["name"]: c for c in spec.get("commonStructs", [])}
    fields = spec.get("fields", [])
    f = None
    for step in path:
        f = next((x for x in fields if canonical(spec["name"], x["name"]) == step), None)
        if f is None:
            return None
        fields = f.get("fields") or common.get(f["type"].removeprefix("[]"), {}).get("fields", [])
    return f


def canonical(spec_name, field_name):
    return FIELD_RENAMES.get((SPEC_RENAMES.get(spec_name, spec_name), field_name), field_name)


def project(spec, v, upstream=False, annotate=None, wire_only=False):
    """What spec means on the wire at version v (plus annotations unless wire_only).

    upstream: apply FIELD_RENAMES (never to our schema, so a stale name there fails).
    annotate(path) may return a field definition to take the annotations from.
    """
    common = {c["name"]: c for c in spec.get("commonStructs", [])}
    sname = spec["name"]

    def fields_at(fields, parent):
        out = []
        for f in fields:
            if not in_range(f["versions"], v):
                continue
            name = canonical(sname, f["name"]) if upstream else f["name"]
            path = parent + (name,)
            t = f["type"]
            elem = t.removeprefix("[]")
            children = f.get("fields")
            if children is None and elem in common:
                children = common[elem]["fields"]
            flex = f.get("flexibleVersions")
            entry = {
                "name": name,
                "type": "struct" if (wire_only and children is not None) else elem,
                "array": t.startswith("[]"),
                "nullable": in_range(f.get("nullableVersions"), v),
                # Some older specs write tags as strings ("0").
                "tag": (int(f["tag"]) if "tag" in f and in_range(f.get("taggedVersions"), v)
                        else None),
                "flexible": None if flex is None else in_range(flex, v),
                "default": norm_default(f.get("default")),
            }
            if not wire_only:
                src = (annotate(path) if annotate else None) or f
                entry.update((k, src.get(k)) for k in ANNOTATIONS)
                # An absent flag means false.
                entry["mapKey"] = bool(entry["mapKey"])
                entry["ignorable"] = bool(entry["ignorable"])
            entry["fields"] = None if children is None else fields_at(children, path)
            out.append(entry)
        return out

    return {"flexible": in_range(spec.get("flexibleVersions"), v),
            "fields": fields_at(spec.get("fields", []), ())}


def newest_definition(name):
    """Look a field path up in the newest set that has it."""
    specs = [spec for _, (_, spec) in sorted(UP[name].items(), reverse=True)]

    def lookup(path):
        for spec in specs:
            f = find_field(spec, path)
            if f is not None:
                return f
        return None

    return lookup


CASES = sorted((name, v) for name in UP for v in OWNERS[name])
# Versions also present in an older, non-authoritative set: upstream says
# these did not change on the wire (inventory.md), apart from CHANGED_VERSIONS.
SHARED = sorted((name, v, i) for name in UP for i, (_, spec) in UP[name].items()
                for v in versions_of(spec.get("validVersions")) if OWNERS[name][v] != i)


def case_id(case):
    return f"{case[0]}-v{case[1]}" + (f"-{SETS[case[2]].name}" if len(case) > 2 else "")


def test_spec_names_and_keys():
    assert set(OURS) == set(UP)
    for name, (sub, ours, path) in OURS.items():
        newest_sub, newest = UP[name][max(UP[name])]
        assert ours["name"] == name == path.stem
        assert sub == newest_sub
        assert ours["type"] == newest["type"]
        assert ours.get("apiKey") == newest.get("apiKey"), name
    keys = {(s["type"], s["apiKey"]) for _, s, _ in OURS.values() if "apiKey" in s}
    assert len(keys) == sum("apiKey" in s for _, s, _ in OURS.values()), "duplicate api key"


def test_valid_versions_are_the_union():
    for name in UP:
        ours = OURS[name][1]
        assert versions_of(ours["validVersions"]) == set(OWNERS[name]), name


def test_unstable_and_removed_versions():
    for name, by_set in UP.items():
        ours = OURS[name][1]
        newest = max(by_set)
        # latestVersionUnstable marks a set's top version; it counts only
        # where that set is authoritative.
        unstable = set()
        for i, (_, spec) in by_set.items():
            valid = versions_of(spec.get("validVersions"))
            if spec.get("latestVersionUnstable") and valid and OWNERS[name][max(valid)] == i:
                unstable.add(max(valid))
        removed = set(OWNERS[name]) - versions_of(by_set[newest][1].get("validVersions"))
        assert versions_of(ours.get("unstableVersions")) == unstable, name
        assert versions_of(ours.get("removedVersions")) == removed, name
        assert "latestVersionUnstable" not in ours
    # Spot checks against inventory.md.
    get = lambda n, k: OURS[n][1].get(k)  # noqa: E731
    assert get("ProduceRequest", "removedVersions") == "0-2"
    assert get("LeaderAndIsrRequest", "removedVersions") == "0-7"
    assert get("MetadataRequest", "removedVersions") is None
    assert 6 in versions_of(get("InitProducerIdRequest", "unstableVersions"))
    assert 0 in versions_of(get("ShareFetchRequest", "unstableVersions"))


def test_no_upstream_prose():
    def walk(node):
        if isinstance(node, dict):
            assert "about" not in node
            for x in node.values():
                walk(x)
        elif isinstance(node, list):
            for x in node:
                walk(x)

    for _, spec, path in OURS.values():
        assert "//" not in path.read_text(encoding="utf-8"), path
        walk(spec)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_wire_projection(case):
    name, v = case
    owner = OWNERS[name][v]
    upstream = UP[name][owner][1]
    annotate = newest_definition(name) if owner != max(UP[name]) else None
    assert project(OURS[name][1], v) == project(upstream, v, upstream=True, annotate=annotate)


@pytest.mark.parametrize("case", SHARED, ids=case_id)
def test_older_copies_agree_on_the_wire(case):
    name, v, i = case
    ours = project(OURS[name][1], v, wire_only=True)
    older = project(UP[name][i][1], v, upstream=True, wire_only=True)
    if (name, v) in CHANGED_VERSIONS:
        assert ours != older
    else:
        assert ours == older


def test_totals():
    kinds = {name: UP[name][max(UP[name])][1]["type"] for name in UP}
    requests = sum(kinds[n] == "request" for n, _ in CASES)
    messages = sum(kinds[n] in ("request", "response") for n, _ in CASES)
    # The 3.9.2 + trunk union per inventory.md.
    assert (requests, messages) == (368, 736)
