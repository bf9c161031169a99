#!/usr/bin/env python3
"""Merge Apache Kafka's upstream message specs into kafkaproto's ``schemas/``.

    python tools/import_upstream.py OLDER_SET ... NEWER_SET --out schemas

Each SET is a directory with ``message/`` and ``metadata/`` sub-directories
holding upstream spec files.  Later sets win.  For every version v in the
union of all sets, the merged spec is wire-identical to the *authoritative*
set for v: the newest set whose validVersions contains v.

Only facts are carried over (names, types, versions, tags, defaults, ...);
upstream ``about`` text and comments are dropped.

At the end it prints the totals and checks them: request and response
versions must match per API key, and for set combinations listed in
KNOWN_TOTALS (or with --expect-requests/--expect-messages) the sums too.
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codegen.errors import SpecError  # noqa: E402
from codegen.loader import load_spec  # noqa: E402
from codegen.versions import Versions  # noqa: E402

SUBDIRS = ("message", "metadata")
TOP_KEYS = ("apiKey", "type", "listeners", "name", "validVersions", "flexibleVersions",
            "deprecatedVersions", "unstableVersions", "removedVersions", "fields", "commonStructs")
FIELD_KEYS = ("name", "type", "versions", "nullableVersions", "flexibleVersions", "tag",
              "taggedVersions", "mapKey", "ignorable", "default", "entityType", "zeroCopy",
              "fields")
# Version-range properties of a field, merged per version; the default applies when absent.
RANGE_KEYS = {"versions": None, "nullableVersions": "none", "flexibleVersions": "none",
              "taggedVersions": "none"}
# Everything else that matters is copied from the newest set that has the field.
PLAIN_KEYS = ("type", "tag", "mapKey", "ignorable", "default", "entityType", "zeroCopy")
WIRE_KEYS = ("type", "tag", "default")
# (request versions, request+response versions) of the union, per inventory.md,
# keyed by the set directory names.
KNOWN_TOTALS = {("3.9.2", "trunk"): (368, 736)}


class MergeError(Exception):
    pass


def vset(text, within=None):
    """The versions of a range string, optionally only those in the set ``within``."""
    r = Versions.parse(text)
    if within is not None:
        return {v for v in within if v in r}
    return set() if r.empty else set(range(r.lo, r.hi + 1))


def is_open(text):
    return Versions.parse(text).open_ended


def canon(text):
    return str(Versions.parse(text))


def range_text(versions, open_end, top, where):
    """Write a version set as one range string; fail if it has holes.

    ``open_end``: the newest definition is "N+"; we keep "+" only if the
    merged set still reaches ``top`` (the highest version of the spec),
    otherwise a field dropped by a newer set would reappear.
    """
    if not versions:
        return "none"
    lo, hi = min(versions), max(versions)
    if len(versions) != hi - lo + 1:
        raise MergeError(f"{where}: versions {sorted(versions)} are not contiguous")
    if open_end and hi == top:
        return f"{lo}+"
    return str(lo) if lo == hi else f"{lo}-{hi}"


class Merger:
    """Merges one spec (one API key and type, or one header) across sets."""

    def __init__(self, specs, labels, report):
        # specs: list of (set index, spec dict), oldest first; labels name the sets.
        self.specs = specs
        self.labels = labels
        self.report = report
        self.name = specs[-1][1]["name"]
        valid = {i: vset(s["validVersions"]) for i, s in specs}
        self.union = set().union(*valid.values())
        # Authoritative set per version, then the versions each set owns.
        owner = {v: max(i for i in valid if v in valid[i]) for v in self.union}
        self.owned = {i: {v for v, o in owner.items() if o == i} for i, _ in specs}
        self.valid = valid
        self.top = max(self.union)

    # -- version-range properties ------------------------------------------

    def merge_range(self, defs, key, where):
        """Union over sets of (that set's range ∩ versions it owns)."""
        default = RANGE_KEYS.get(key, None)
        got = set()
        for i, d in defs:
            text = d.get(key, default)
            if text is not None:
                got |= vset(text, self.owned[i])
        newest = defs[-1][1].get(key, default)
        return range_text(got, newest is not None and is_open(newest), self.top, f"{where}: {key}")

    # -- field lists -----------------------------------------------------------

    def merge_list(self, lists, where):
        """Merge field (or commonStruct) lists given as [(set index, list)], oldest first."""
        lists = [(i, list(fs)) for i, fs in lists if fs is not None]
        if not lists:
            return []
        lists = self.apply_renames(lists, where)
        order = self.merge_order(lists, where)
        out = []
        for name in order:
            defs = [(i, f) for i, fs in lists for f in fs if f["name"] == name]
            merged = self.merge_field(defs, f"{where}.{name}")
            if merged is not None:
                out.append(merged)
        return out

    def apply_renames(self, lists, where):
        """Detect renamed fields: an older-only field in the same slot as a newer-only one.

        Same slot means: right after the same (already matched) predecessor,
        same type, same version range.  The older definition takes the newer name.
        """
        result = [lists[-1]]
        for i, fs in reversed(lists[:-1]):
            newer = result[0][1]
            newer_names = [f["name"] for f in newer]
            mine = {f["name"] for f in fs}
            renamed = []
            prev = -1  # index in `newer` of the last matched field
            for f in fs:
                if f["name"] in newer_names:
                    prev = newer_names.index(f["name"])
                    renamed.append(f)
                    continue
                cand = newer[prev + 1] if prev + 1 < len(newer) else None
                if (cand is not None and cand["name"] not in mine
                        and cand.get("type") == f.get("type")
                        and canon(cand.get("versions", "0+")) == canon(f.get("versions", "0+"))):
                    self.report.append(f"renamed field {where}.{f['name']} -> {cand['name']}"
                                       f" (in {self.labels[i]}: same slot, type and versions)")
                    f = dict(f, name=cand["name"])
                    prev += 1
                renamed.append(f)
            result.insert(0, (i, renamed))
        return result

    def merge_order(self, lists, where):
        """One order containing every set's order; fail if two sets disagree."""
        order = [f["name"] for f in lists[-1][1]]
        for _, fs in reversed(lists[:-1]):
            pos = -1
            for f in fs:
                if f["name"] in order:
                    pos = order.index(f["name"])
                else:
                    pos += 1
                    order.insert(pos, f["name"])
        for i, fs in lists:
            idx = [order.index(f["name"]) for f in fs]
            if idx != sorted(idx):
                raise MergeError(f"{where}: {self.labels[i]} orders fields differently: "
                                 f"{[f['name'] for f in fs]} vs merged {order}")
        return order

    def merge_field(self, defs, where):
        newest = defs[-1][1]
        out = {"name": newest["name"]}
        for key in FIELD_KEYS[1:]:
            if key in RANGE_KEYS:
                if not any(key in d for _, d in defs):
                    continue
                text = self.merge_range(defs, key, where)
                # "none" means the same as absent, except for a field-level
                # flexibleVersions override, where absent means "inherit".
                if text == "none" and key in ("nullableVersions", "taggedVersions"):
                    continue
                out[key] = text
            elif key in PLAIN_KEYS:
                if key in newest:
                    out[key] = newest[key]
            elif key == "fields":
                if any("fields" in d for _, d in defs):
                    out["fields"] = self.merge_list([(i, d.get("fields")) for i, d in defs], where)
        if out.get("versions") == "none":
            self.report.append(f"dropped {where}: only in sets that are authoritative for"
                               " no version that has it")
            return None
        if "tag" in out and "taggedVersions" not in out:
            raise MergeError(f"{where}: tagged field lost its taggedVersions")
        self.check_plain(defs, out, where)
        return out

    def check_plain(self, defs, out, where):
        """Properties copied from the newest set, checked where an older set is authoritative.

        A wire property (type, tag, default) that differs there cannot be
        merged: fail.  Annotations (mapKey, ignorable, entityType, zeroCopy) do
        not change the bytes of a version that has the field; the newest value
        wins and the difference is reported.
        """
        for i, d in defs[:-1]:
            if not vset(d.get("versions", "0+"), self.owned[i]):
                continue
            for key in PLAIN_KEYS:
                if d.get(key) == out.get(key):
                    continue
                if key == "tag" and key in d and key in out and int(d[key]) == int(out[key]):
                    continue  # some sets write the tag as a string
                msg = (f"{where}: {key} is {d.get(key)!r} in {self.labels[i]},"
                       f" {out.get(key)!r} in the newest set")
                if key in WIRE_KEYS:
                    raise MergeError(msg)
                self.report.append(f"annotation differs (newest kept) {msg}")

    # -- whole spec ------------------------------------------------------------

    def merge(self):
        specs = self.specs
        newest_i, newest = specs[-1]
        out = {}
        if "apiKey" in newest:
            out["apiKey"] = newest["apiKey"]
        out["type"] = newest["type"]
        # Listeners: from the newest set where the API still has versions.
        for i, s in reversed(specs):
            if self.valid[i] and "listeners" in s:
                out["listeners"] = s["listeners"]
                break
        out["name"] = self.name
        out["validVersions"] = range_text(self.union, False, self.top,
                                          f"{self.name}: validVersions")
        out["flexibleVersions"] = self.merge_range(
            [(i, s) for i, s in specs if "flexibleVersions" in s] or [(newest_i, {})],
            "flexibleVersions", self.name)
        for _, s in reversed(specs):
            if "deprecatedVersions" in s:
                out["deprecatedVersions"] = canon(s["deprecatedVersions"])
                break
        # latestVersionUnstable marks the set's top version; the owner of v decides.
        unstable = {max(self.valid[i]) for i, s in specs
                    if s.get("latestVersionUnstable") and self.valid[i]
                    and max(self.valid[i]) in self.owned[i]}
        if unstable:
            out["unstableVersions"] = range_text(unstable, False, self.top,
                                                 f"{self.name}: unstable")
        removed = self.union - self.valid[newest_i]
        if removed:
            out["removedVersions"] = range_text(removed, False, self.top, f"{self.name}: removed")
        out["fields"] = self.merge_list([(i, s.get("fields")) for i, s in specs], self.name)
        if any("commonStructs" in s for _, s in specs):
            out["commonStructs"] = self.merge_list(
                [(i, s.get("commonStructs")) for i, s in specs], f"{self.name}.commonStructs")
        assert list(out) == [k for k in TOP_KEYS if k in out]
        return out


def spec_key(sub, spec):
    """Specs are matched across sets by API key and type, so renamed APIs merge."""
    if "apiKey" in spec:
        return (sub, spec["type"], spec["apiKey"])
    return (sub, spec["type"], spec["name"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sets", nargs="+", type=Path, help="upstream spec sets, oldest first")
    ap.add_argument("--out", type=Path, required=True, help="output directory (schemas)")
    ap.add_argument("--expect-requests", type=int, help="fail unless this many request versions")
    ap.add_argument("--expect-messages", type=int,
                    help="fail unless this many request+response versions")
    args = ap.parse_args(argv)
    known = KNOWN_TOTALS.get(tuple(p.resolve().name for p in args.sets), (None, None))
    expect_req = args.expect_requests if args.expect_requests is not None else known[0]
    expect_msg = args.expect_messages if args.expect_messages is not None else known[1]

    labels = [str(root) for root in args.sets]
    grouped = {}
    for i, root in enumerate(args.sets):
        for sub in SUBDIRS:
            d = root / sub
            if not d.is_dir():
                raise SystemExit(f"error: {d} is not a directory")
            for path in sorted(d.glob("*.json")):
                try:
                    spec = load_spec(path)
                except SpecError as e:
                    raise SystemExit(f"error: {e}") from None
                grouped.setdefault(spec_key(sub, spec), []).append((i, spec))

    report = []
    written = {sub: set() for sub in SUBDIRS}
    totals = {}
    per_api = {}
    try:
        for key in sorted(grouped, key=str):
            sub, kind, _ = key
            specs = grouped[key]
            names = list(dict.fromkeys(s["name"] for _, s in specs))
            if len(names) > 1:
                report.append(f"renamed spec {' -> '.join(names)} (matched by apiKey)")
            if not any(vset(s["validVersions"]) for _, s in specs):
                report.append(f"skipped {names[-1]}: no valid versions in any set")
                continue
            merged = Merger(specs, labels, report).merge()
            path = args.out / sub / f"{merged['name']}.json"
            if path.name in written[sub]:
                raise MergeError(f"{path}: two specs have the same name")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
            written[sub].add(path.name)
            n = len(vset(merged["validVersions"]))
            totals[kind] = totals.get(kind, 0) + n
            if kind in ("request", "response"):
                per_api.setdefault(merged["apiKey"], {})[kind] = n
    except MergeError as e:
        raise SystemExit(f"error: {e}") from None

    # Remove files from earlier runs that this run did not produce.
    for sub in SUBDIRS:
        for stale in sorted((args.out / sub).glob("*.json")):
            if stale.name not in written[sub]:
                stale.unlink()
                report.append(f"deleted stale {stale}")

    for line in report:
        print(line)
    for sub in SUBDIRS:
        print(f"{sub}: {len(written[sub])} files")
    req, resp = totals.get("request", 0), totals.get("response", 0)
    print(f"versions: {req} request, {resp} response, {req + resp} request+response, "
          f"{totals.get('header', 0)} header, {totals.get('metadata', 0)} metadata record")
    problems = [f"api {k}: request and response versions differ"
                for k, v in sorted(per_api.items()) if v.get("request") != v.get("response")]
    if expect_req is not None and req != expect_req:
        problems.append(f"expected {expect_req} request versions, got {req}")
    if expect_msg is not None and req + resp != expect_msg:
        problems.append(f"expected {expect_msg} request+response versions, got {req + resp}")
    if problems:
        raise SystemExit("error: " + "; ".join(problems))
    if expect_req is not None or expect_msg is not None:
        print("totals match the expected numbers")


if __name__ == "__main__":
    main()
