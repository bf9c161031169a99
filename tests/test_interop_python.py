"""Interop with independent Python codecs of the Kafka protocol: kio and kafka-python.

For every (message, version) that kafkaproto and a peer both have, random
messages (``strategies.message``) must

(a) encoded by kafkaproto (body only, no header), decode in the peer to the
    same values, and
(b) built in the peer from the same values, encode to exactly kafkaproto's
    bytes, which kafkaproto decodes back to an equal message.

For flexible versions, unknown tagged fields written by kafkaproto must be
read by the peer without disturbing the known fields: kafka-python hands them
back, and drops them when re-encoding. kio cannot read them at all (it raises;
``test_kio_rejects_unknown_tags``), so it is not tested with them.

How values are matched and converted, and what is narrowed per peer, is in
``interop_peers``. Pairs that are not tested are accounted for by
``test_coverage_report`` (printed) and ``test_exclusions_are_listed``: a pair both
sides have is either tested or in ``EXCLUDED`` with a reason.
"""

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kafkaproto
from kafkaproto import _generated
from kafkaproto.messages import api, load_implementation

from interop_peers import (
    Mismatch,
    all_peers,
    api_base,
    build_plan,
    canon,
    kind_of,
    narrow,
    peer_canon,
    strip_unknown_tags,
    to_peer,
)
from strategies import message, unknown_tags

CLASSES = load_implementation("compiled") if kafkaproto.compiled() else load_implementation("python")
PEERS = {p.name: p for p in all_peers()}

SPEC_NAMES = sorted(n for n, s in _generated.SPECS.items() if s.kind in ("request", "response", "header"))

# (peer, message, version) -> why it is not tested. Every entry must be a pair both
# sides have (test_exclusions_are_listed fails on stale entries). Nothing needs
# excluding at the moment: all disagreements found so far are handled as
# documented normalisations or narrowings in interop_peers.
EXCLUDED = {}


def kp_versions(name):
    return _generated.SPECS[name].valid_versions


def is_flexible(name, version):
    return version in _generated.SPECS[name].flexible_versions


def shared_pairs(peer):
    """(message, version) pairs both kafkaproto and the peer have."""
    out = []
    for name in SPEC_NAMES:
        theirs = set(peer.versions(name))
        out.extend((name, v) for v in kp_versions(name) if v in theirs)
    return out


def _cases(flexible_only=False):
    cases = []
    for peer in PEERS.values():
        if not peer.available:
            cases.append(pytest.param(peer.name, None, None, id=f"{peer.name}-missing",
                                      marks=pytest.mark.skip(reason=peer.missing_reason)))
            continue
        for name, v in shared_pairs(peer):
            if (peer.name, name, v) in EXCLUDED:
                continue
            if flexible_only and not (is_flexible(name, v) and peer.reads_unknown_tags):
                continue
            cases.append(pytest.param(peer.name, name, v, id=f"{peer.name}-{name}-v{v}"))
    return cases


CASES = _cases()
FLEXIBLE_CASES = _cases(flexible_only=True)


@functools.lru_cache(maxsize=None)
def plan_for(peer_name, name, version):
    peer = PEERS[peer_name]
    return build_plan(peer, CLASSES[name], peer.root(name, version), version, name)


def narrowed(peer, plan, cls, version):
    """strategies.message, mapped into what the peer can represent (see interop_peers)."""
    return message(cls, version).map(lambda m: cls.from_dict(narrow(peer, plan, m.to_dict())))


def _diff_at(a, b):
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return (f"lengths {len(a)} vs {len(b)}, first difference at byte {n}: "
            f"kafkaproto {a[n:n + 24].hex()} vs peer {b[n:n + 24].hex()}\n"
            f"kafkaproto {a.hex()}\npeer       {b.hex()}")


def _interop_test(peer_name):
    """One test function per peer (hypothesis's pytest plugin nests settings once per parameter)."""

    params = [pytest.param(*c.values[1:], id=c.id, marks=c.marks) for c in CASES if c.values[0] == peer_name]

    @pytest.mark.parametrize("name,version", params)
    @settings(max_examples=10)
    @given(data=st.data())
    def test(name, version, data):
        check_interop(peer_name, name, version, data)

    return test


def check_interop(peer_name, name, version, data):
    peer, cls = PEERS[peer_name], CLASSES[name]
    plan = plan_for(peer_name, name, version)
    msg = data.draw(narrowed(peer, plan, cls, version), label="message")
    ours = msg.encode(version)
    values = msg.to_dict()
    expected = canon(plan, values)

    # (a) kafkaproto's bytes decode in the peer to the same values.
    decoded = peer.decode(plan, ours, version)
    assert peer_canon(peer, plan, decoded) == expected, f"(a) {peer_name} decodes kafkaproto's bytes differently"

    # (b) the peer's encoding of the same values is kafkaproto's, byte for byte, and decodes back.
    built = to_peer(peer, plan, values, version)
    assert peer_canon(peer, plan, built) == expected, "the converter lost a value building the peer object"
    theirs = peer.encode(plan, built, version)
    assert theirs == ours, f"(b) {peer_name} encodes differently: {_diff_at(ours, theirs)}"
    assert cls.decode(theirs, version) == msg


test_interop_kio = _interop_test("kio")
test_interop_kafka_python = _interop_test("kafka-python")


def _inject(draw, peer, plan, d, version, inside_tagged=False):
    """Random unknown tags on the struct dict d and the structs below it."""
    if inside_tagged and not peer.unknown_tags_in_tagged_structs:
        return
    d["unknown_tagged_fields"] = draw(unknown_tags(plan.cls, version)) or None
    for fp in plan.fields:
        v = d[fp.attr]
        if fp.conv == "struct" and v is not None:
            for item in v if fp.array else [v]:
                if item is not None:
                    _inject(draw, peer, fp.child, item, version, inside_tagged or fp.tagged)


def _unknown_tags_match(peer, plan, d, obj, path):
    """kafka-python keeps unknown tags per struct: they must be kafkaproto's."""
    ours = d.get("unknown_tagged_fields") or None
    theirs = peer.unknown_tags(obj)
    assert theirs == ours, f"{path}: unknown tags {theirs!r}, kafkaproto wrote {ours!r}"
    for fp in plan.fields:
        if fp.conv != "struct" or fp.tagged or d[fp.attr] is None:
            continue  # nothing injected inside tagged structs for this peer
        pairs = zip(d[fp.attr], getattr(obj, fp.peer_name)) if fp.array else [(d[fp.attr], getattr(obj, fp.peer_name))]
        for i, (item, peer_item) in enumerate(pairs):
            if item is not None:
                _unknown_tags_match(peer, fp.child, item, peer_item, f"{path}.{fp.attr}[{i}]")


@pytest.mark.parametrize("peer_name,name,version", FLEXIBLE_CASES)
@settings(max_examples=3)
@given(data=st.data())
def test_interop_unknown_tags(peer_name, name, version, data):
    peer, cls = PEERS[peer_name], CLASSES[name]
    plan = plan_for(peer_name, name, version)
    values = data.draw(narrowed(peer, plan, cls, version), label="message").to_dict()
    _inject(data.draw, peer, plan, values, version)
    ours = cls.from_dict(values).encode(version)

    decoded = peer.decode(plan, ours, version)
    assert peer_canon(peer, plan, decoded) == canon(plan, values)
    if peer.keeps_unknown_tags:
        _unknown_tags_match(peer, plan, values, decoded, name)
    # Neither peer writes unknown tags back: its re-encoding is kafkaproto's without them.
    stripped = cls.from_dict(strip_unknown_tags(values)).encode(version)
    theirs = peer.encode(plan, decoded, version)
    assert theirs == stripped, _diff_at(stripped, theirs)


def test_kio_rejects_unknown_tags():
    """kio 0.6.5 raises on a tagged field it does not know instead of skipping it (KIP-482).

    This is why kio is left out of test_interop_unknown_tags. Should kio start
    skipping unknown tags, this fails: set KioPeer.reads_unknown_tags to True.
    """
    peer = PEERS["kio"]
    if not peer.available:
        pytest.skip(peer.missing_reason)
    cls = CLASSES["AddOffsetsToTxnRequest"]
    data = cls(transactional_id="t", producer_id=1, producer_epoch=2, group_id="g",
               unknown_tagged_fields={7: b"x"}).encode(4)
    assert data.endswith(bytes([1, 7, 1]) + b"x")  # one tagged field: tag 7, 1 byte, "x"
    plan = plan_for("kio", "AddOffsetsToTxnRequest", 4)
    with pytest.raises(KeyError, match="Unknown tagged field tag: 7"):
        peer.decode(plan, data, 4)
    assert not peer.reads_unknown_tags


# ---- coverage accounting -------------------------------------------------------

def _ranges(versions):
    out, run = [], []
    for v in sorted(versions):
        if run and v != run[-1] + 1:
            out.append(run)
            run = []
        run.append(v)
    if run:
        out.append(run)
    return ",".join(f"v{r[0]}" if len(r) == 1 else f"v{r[0]}-{r[-1]}" for r in out)


def _gap_reason(name, version, theirs):
    if not theirs:
        return None
    if version > max(theirs):
        return "newer than the peer's spec snapshot"
    if version < min(theirs):
        info = api(api_base(name)) if kind_of(name) != "header" else None
        if info is not None and version in info.removed_versions:
            return ("removed upstream (Kafka 4.0 KIP-896, early-access share-group v0) and absent "
                    "from the peer's specs; kafkaproto keeps them")
        if name == "RequestHeader" and version == 0:
            return "removed upstream (Kafka 4.0): only ControlledShutdown v0 used it"
        return "older than the peer's minimum"
    return "gap inside the peer's range"


def coverage(peer):
    """Covered pairs, lacking APIs and lacking versions (by reason) for one peer."""
    covered = [(n, v) for n, v in shared_pairs(peer) if (peer.name, n, v) not in EXCLUDED]
    lacking_apis = sorted({api_base(n) for n in SPEC_NAMES if not peer.versions(n)})
    gaps = {}
    for name in SPEC_NAMES:
        theirs = set(peer.versions(name))
        for v in kp_versions(name):
            if v not in theirs and theirs:
                gaps.setdefault(_gap_reason(name, v, theirs), {}).setdefault(name, []).append(v)
    extra = [(n, v) for n in SPEC_NAMES for v in peer.versions(n) if v not in kp_versions(n)]
    return covered, lacking_apis, gaps, extra


def test_exclusions_are_listed():
    """Every pair both sides have is tested or listed in EXCLUDED; no pair is left out silently."""
    for (peer_name, name, v), reason in EXCLUDED.items():
        assert reason, f"EXCLUDED[{peer_name}, {name}, v{v}] needs a reason"
        peer = PEERS[peer_name]
        if peer.available:
            assert (name, v) in shared_pairs(peer), f"stale exclusion: {peer_name} {name} v{v} is not a shared pair"
    tested = {(c.values[0], c.values[1], c.values[2]) for c in CASES}
    for peer in PEERS.values():
        if not peer.available:
            continue
        unlisted = []
        for name, v in shared_pairs(peer):
            key = (peer.name, name, v)
            if key in EXCLUDED:
                continue
            assert key in tested
            try:
                plan_for(peer.name, name, v)
            except Mismatch as e:  # would fail in test_interop anyway; listed here all at once
                unlisted.append(str(e))
        assert not unlisted, f"{peer.name}: structure mismatches not in EXCLUDED:\n" + "\n".join(unlisted)
        lacking = {api_base(n) for n in SPEC_NAMES if not peer.versions(n)}
        assert lacking == set(peer.lacks), (
            f"{peer.name} lacks APIs not listed with a reason: {sorted(lacking - set(peer.lacks))}; "
            f"listed but present: {sorted(set(peer.lacks) - lacking)}")
        _, _, gaps, extra = coverage(peer)
        assert not extra, f"{peer.name} has versions kafkaproto lacks: {extra}"
        assert "gap inside the peer's range" not in gaps, gaps["gap inside the peer's range"]


def test_coverage_report(capsys):
    lines = ["", "==== interop coverage: (message, version) pairs, kafkaproto vs peer ===="]
    for peer in PEERS.values():
        if not peer.available:
            lines.append(f"{peer.name}: SKIPPED, {peer.missing_reason}")
            continue
        covered, lacking_apis, gaps, extra = coverage(peer)
        flexible = sum(is_flexible(n, v) for n, v in covered)
        unknown = ("also tested with unknown tags" if peer.reads_unknown_tags else
                   "NOT tested with unknown tags: the peer raises on them, see test_kio_rejects_unknown_tags")
        lines.append(f"{peer.name}: {len(covered)} pairs covered, {len({api_base(n) for n, _ in covered})} "
                     f"APIs/headers; {flexible} flexible, {unknown}")
        below = [(n, v) for n, v in covered if peer.below_spec_min(n, v)]
        if below:
            lines.append(f"  of which {len(below)} are below the peer's own spec minimum (it relaxes every "
                         f"message's minimum to v0): " + ", ".join(
                             f"{n} {_ranges([v for m, v in below if m == n])}" for n in sorted({n for n, _ in below})))
        lines.append(f"  lacks {len(lacking_apis)} APIs:")
        lines.extend(f"    {a}: {peer.lacks.get(a, 'NOT LISTED')}" for a in lacking_apis)
        for reason, by_name in sorted(gaps.items()):
            count = sum(len(vs) for vs in by_name.values())
            lines.append(f"  lacks {count} versions, {reason}:")
            lines.append("    " + ", ".join(f"{n} {_ranges(vs)}" for n, vs in sorted(by_name.items())))
        excluded = {k: r for k, r in EXCLUDED.items() if k[0] == peer.name}
        lines.append(f"  excluded: {len(excluded)}")
        lines.extend(f"    {n} v{v}: {r}" for (_, n, v), r in excluded.items())
    with capsys.disabled():
        print("\n".join(lines))
    assert any(p.available for p in PEERS.values()) or pytest.skip("no peer installed")
