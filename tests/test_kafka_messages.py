"""Golden vectors from Kafka's own codec: every (message, version) the pinned jars define.

Messages are every request and response, the headers, the KRaft metadata records, and the group, transaction and
share coordinators' records (the keys and values of __consumer_offsets, __transaction_state and __share_group_state;
checked against the Kafka releases whose records kafkaproto follows, ``COORDINATOR_RELEASES``: the records changed
in ways older jars read otherwise).

For each pair, hypothesis builds messages; each goes to Kafka (tests/kafka/Oracle.java)
both as JSON, which Kafka reads with the message's JsonConverter and writes with its
generated class (``*Data``, or the metadata record's own), and as kafkaproto's bytes,
which Kafka reads and writes back. Kafka's bytes must read back in kafkaproto to the same
message and equal kafkaproto's bytes; Kafka must read kafkaproto's bytes to the same
message and write them back unchanged. Versions a release marks unstable are checked too,
but only reported: kafkaproto follows the version as it was finished. The end of the run
lists, per jar, how many pairs were checked and which kafkaproto defines that the jar does
not (``pytest_terminal_summary`` in conftest.py).

Kafka's JSON names a field by its spec name with a lower-case first letter; bytes are
base64, uuids their base64 string form, floats may be the strings "Infinity". Kafka's JSON
never carries a records field's content (it writes an empty placeholder), so those are
compared through the bytes Kafka writes back, which carry them.
"""

import base64
import functools
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from impls import added_by_extensions
from kafka_jvm import GOLDEN, GOLDEN_UNSTABLE, ask_all, b64, unb64
from kafkaproto import Uuid, compiled, coordinator_records, metadata
from kafkaproto.messages import RequestHeader, ResponseHeader, apis, load_implementation
from strategies import message

# The compiled pass checks 40 messages per pair (795 pairs, each against every pinned Kafka); the pure-Python
# pass, whose codecs are tested byte-identical to the compiled ones elsewhere, checks fewer to keep CI short. A
# longer run outside CI sets its own count: KAFKAPROTO_GOLDEN_EXAMPLES=1000 pytest tests/test_kafka_messages.py
EXAMPLES = int(os.environ.get("KAFKAPROTO_GOLDEN_EXAMPLES")
               or (15 if os.environ.get("KAFKAPROTO_PURE") == "1" else 40))


COORDINATOR_CLASSES = [getattr(coordinator_records, n) for n in coordinator_records.__all__
                       if n.endswith(("Key", "Value"))]
# The releases whose group coordinator records kafkaproto's follow (3.9 lacks fields 4.3 added, 4.4 may add more).
COORDINATOR_RELEASES = ("4.3.1",)


def _pairs():
    pairs = [(RequestHeader, v) for v in range(3)] + [(ResponseHeader, v) for v in range(2)]
    pairs += [(cls, v) for cls in (getattr(metadata, n) for n in dir(metadata) if n.endswith("Record"))
              for v in cls.valid_versions]
    pairs += [(cls, v) for cls in COORDINATOR_CLASSES for v in cls.valid_versions]
    # kafkaproto's own classes: Kafka knows neither what extensions add nor what they amend.
    own = load_implementation("compiled" if compiled() else "python")
    for info in apis():
        if info.request.__name__ not in added_by_extensions():
            pairs += [(own[f"{info.name}{side}"], v) for side in ("Request", "Response") for v in info.valid_versions]
    return pairs


PAIRS = _pairs()


# Fields upstream renamed after a pinned release (the wire did not change): kafkaproto's
# name -> that release's JSON name, per (message, field).
RENAMED = {
    "3.9.2": {("TxnOffsetCommitRequest", "GenerationIdOrMemberEpoch"): "generationId",
              ("VoteRequest", "ReplicaEpoch"): "candidateEpoch",
              ("VoteRequest", "ReplicaId"): "candidateId",
              ("VoteRequest", "ReplicaDirectoryId"): "candidateDirectoryId"},
    "4.3.1": {("TxnOffsetCommitRequest", "GenerationIdOrMemberEpoch"): "generationId",
              ("StreamsGroupHeartbeatResponse", "AcceptableRecoveryLagLegacy"): "acceptableRecoveryLag"},
    "4.4.0": {},
}


def json_name(names, message, f):
    return names.get((message, f.name)) or _lower_first(f.name)


@functools.lru_cache(maxsize=None)
def _lower_first(name):
    return name[:1].lower() + name[1:]


def to_java(msg, version, names, message, records=True):
    """msg as Kafka's JSON; records=False writes records as Kafka's converter does (empty)."""
    node = {}
    for f in type(msg)._fields:
        if version in f.versions:
            value = getattr(msg, f.attr)
            if value is not None and f.array:
                value = [_item_to_java(f, x, version, names, message, records) for x in value]
            elif value is not None:
                value = _item_to_java(f, value, version, names, message, records)
            node[json_name(names, message, f)] = value
    return node


def _item_to_java(f, x, version, names, message, records):
    if f.struct is not None:
        return to_java(x, version, names, message, records)
    if f.kind == "records" and not records:
        return ""
    if f.kind in ("bytes", "records"):
        return b64(x)
    if f.kind == "uuid":
        return str(x)
    return x


def from_java(cls, node, version, names, message):
    values = {}
    for f in cls._fields:
        key = json_name(names, message, f)
        if version in f.versions and key in node:
            value = node[key]
            if value is not None and f.array:
                value = [_item_from_java(f, x, version, names, message) for x in value]
            elif value is not None:
                value = _item_from_java(f, value, version, names, message)
            values[f.attr] = value
    return cls(**values)


def _item_from_java(f, x, version, names, message):
    if f.struct is not None:
        return from_java(f.struct, x, version, names, message)
    if f.kind in ("bytes", "records"):
        return base64.b64decode(x)
    if f.kind == "uuid":
        return Uuid.from_string(x)
    if f.kind == "float64":
        return float(x)
    return x


def disagreement(answer, cls, name, version, msg, ours, names):
    """Why Kafka's answer disagrees with kafkaproto, or None."""
    if "error" in answer:
        return f"Kafka failed: {answer['error']}"
    if "encodeError" in answer:
        return f"Kafka could not write it: {answer['encodeError']}"
    theirs = unb64(answer["encoded"])
    try:
        if cls.decode(theirs, version) != msg:
            return "kafkaproto reads Kafka's bytes as a different message"
    except Exception as exc:  # a disagreement to report, whatever kafkaproto raised
        return f"kafkaproto cannot read Kafka's bytes: {exc!r}"
    if theirs != ours:
        at = next((i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b), min(len(theirs), len(ours)))
        return (f"Kafka's bytes differ from byte {at}: Kafka {theirs[at:at + 16].hex()}..., "
                f"kafkaproto {ours[at:at + 16].hex()}... ({len(theirs)} and {len(ours)} bytes)")
    if "decodeError" in answer:
        return f"Kafka could not read kafkaproto's bytes: {answer['decodeError']}"
    if "unread" in answer:
        return f"Kafka left {answer['unread']} of kafkaproto's bytes unread"
    if unb64(answer["reencoded"]) != ours:
        return "Kafka wrote kafkaproto's message back differently"
    expected = from_java(cls, to_java(msg, version, names, name, records=False), version, names, name)
    if from_java(cls, answer["decoded"], version, names, name) != expected:
        return "Kafka read kafkaproto's bytes differently"
    return None


@pytest.mark.parametrize("cls,version", PAIRS, ids=[f"{c.__name__}-v{v}" for c, v in PAIRS])
@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_kafka_codec_agrees(kafka_oracles, cls, version, data):
    name = cls.__name__
    oracles = [o for o in kafka_oracles if version in o.versions(name)[0]]
    if cls in COORDINATOR_CLASSES:
        oracles = [o for o in oracles if o.version in COORDINATOR_RELEASES]
    if not oracles:
        pytest.skip(f"{name} v{version} is in no pinned Kafka release")
    # Arrays of up to two items: every array, struct and tag path is still exercised, for
    # half the generation time of three.
    msg = data.draw(message(cls, version, breadth=2), label="message")
    if cls is coordinator_records.TransactionLogValue:
        msg.pending_offsets = []  # this broker's own tagged field, which Kafka does not know (nor write)
    ours = msg.encode(version)
    requests = [{"op": "check", "message": name, "version": version, "bytes": b64(ours),
                 "json": to_java(msg, version, RENAMED[o.version], name)} for o in oracles]
    for oracle, answer in zip(oracles, ask_all(oracles, requests)):
        problem = disagreement(answer, cls, name, version, msg, ours, RENAMED[oracle.version])
        if not oracle.defines(name, version):
            # The release marks this version unstable: it may have changed on the wire before it
            # was finished, and kafkaproto follows the finished version. Report, do not fail.
            GOLDEN_UNSTABLE[oracle.version].setdefault((name, version), problem)
            if problem and not GOLDEN_UNSTABLE[oracle.version][(name, version)]:
                GOLDEN_UNSTABLE[oracle.version][(name, version)] = problem
            continue
        assert problem is None, f"Kafka {oracle.version}, {name} v{version}: {problem}"
        GOLDEN[oracle.version].add((name, version))
