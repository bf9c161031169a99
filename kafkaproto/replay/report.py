"""A replay's answers compared with the capture's (or two targets' with each other), field by field, under named
rules; what differs beyond them is a Divergence.

The rules of kafkaproto.compare apply (``identifiers``, ``free-text``, ``hash-order``, ``batches``, ``loading``),
with the target's identifiers labelled as the captured ones they stand for (rewrite.Values.name_labels). A replay
adds the rules a live capture needs (``REPLAY_RULES``):

- ``api-versions``: an ApiVersions answer says what a broker serves, which differs from broker to broker; it is
  compared for the APIs the capture goes on to use (does the target serve every version the capture's clients
  sent?) and for the finalized features that decide how clients use them (transaction.version where the capture
  has transactions, group.version where it has KIP-848 groups, share.version, streams.version), not for the rest
  of its table, other features (metadata.version, ...) or its feature epoch;
- ``other-topics``: a target that holds topics or groups the capture never names (a shared cluster) lists them in
  answers to "every topic" and "every group" requests; such entries are left out, and so are internal topics
  (``__consumer_offsets``), which each cluster makes when its history needs them;
- ``offsets``: where the target's log holds another history, its offsets are moved back into the capture's terms
  (rewrite.Values: the shift learned from the first answer placing each partition, and the offsets answers paired);
  shifts are reported, not counted as divergences;
- ``fetch-wait``: a Fetch answers with what the log holds when its wait ends, which depends on timing: a partition
  may hold fewer or more of the same batches on either side (one side's batches must begin the other's), with the
  high watermark, last stable offset and log start offset of that moment; an incremental fetch may leave out a
  partition on one side that has nothing new on the other, or that the other names unknown while its topic is
  being deleted (Kafka removes a deleted topic's partitions one at a time, and a fetch waiting on them answers
  with those gone so far).
"""

from collections import Counter, defaultdict
from typing import NamedTuple

from .. import compare, errors
from ..messages import ApiKey
from ..registry import api
from .session import ANSWERED, NO_ANSWER_DUE, SKIPPED

REPLAY_RULES = ("api-versions", "other-topics", "offsets", "fetch-wait")
RULES = compare.RULES + REPLAY_RULES


class Divergence(NamedTuple):
    """One difference: where (captured connection, the step's index in the plan, the request) and what (the
    field's path in the answer, the value on each side; ``left`` is the capture's, or the first target's)."""

    connection: int
    step: int
    api: str
    version: int
    correlation_id: int
    path: str
    left: object
    right: object

    def to_json(self):
        return {"connection": self.connection, "step": self.step, "api": self.api, "version": self.version,
                "correlation_id": self.correlation_id, "path": self.path, "left": _plain(self.left),
                "right": _plain(self.right)}


class Report:
    """What a replay found: ``divergences``, per API the steps compared and the steps that diverged,
    ``excused`` (rule -> how many differences a rule accounted for), ``shifts`` ((topic, partition) -> (the
    captured offset from which the shift holds, the shift)), ``not_replayable``, ``notes``."""

    def __init__(self, plan, sides):
        self.plan = plan
        self.sides = sides  # ("capture", "host:port") or two targets
        self.divergences = []
        self.compared = Counter()  # api -> answers compared
        self.diverged = Counter()  # api -> answers with at least one divergence
        self.uncompared = Counter()  # why an answer was not compared -> count
        self.excused = Counter()
        self.shifts = {}
        self.notes = []

    @property
    def not_replayable(self):
        return self.plan.not_replayable

    @property
    def ok(self):
        return not self.divergences

    def json_lines(self):
        """The report as JSON values, one per line to write: divergences, connections not replayed, and a summary."""
        for d in self.divergences:
            yield {"type": "divergence", **d.to_json()}
        for connection, client, reason in self.plan.not_replayable:
            yield {"type": "not replayable", "connection": connection,
                   "client": None if client is None else f"{client[0]}:{client[1]}", "reason": reason}
        yield {"type": "summary", "sides": list(self.sides), "steps": len(self.plan.steps),
               "compared": sum(self.compared.values()), "divergences": len(self.divergences),
               "diverged": dict(self.diverged), "per_api": dict(self.compared), "uncompared": dict(self.uncompared),
               "excused": dict(self.excused),
               "shifts": [{"topic": t, "partition": p, "from": start, "shift": delta}
                          for (t, p), (start, delta) in sorted(self.shifts.items())],
               "notes": self.notes}


def compare_with_capture(plan, replayer, target="target"):
    """Each answer of a finished Replayer against the capture's."""
    left_labels, right_labels = compare.Labels(), compare.Labels()
    replayer.values.name_labels(left_labels, right_labels)
    report = Report(plan, ("capture", target))
    _notes(report, replayer, target)
    for result in replayer.results:
        step = result.step
        why = _uncompared(step, result)
        if why:
            report.uncompared[why] += 1
            continue
        if result.status != ANSWERED:
            _diverge(report, step, "answer", "an answer", f"{result.status}: {result.error}")
            continue
        if result.version != step.exchange.api_version:
            _diverge(report, step, "version", step.exchange.api_version, result.version)
            continue
        left = _prepare(step, step.answer, plan, report)
        right = _prepare(step, replayer.values.answer(step, result.answer), plan, report)
        _compare(report, step, compare.normalise(left, left_labels), compare.normalise(right, right_labels))
    return report


def compare_targets(plan, first, second, names=("first", "second")):
    """Each answer of one finished Replayer against another's, for the same plan."""
    captured, left_labels, right_labels = compare.Labels(), compare.Labels(), compare.Labels()
    first.values.name_labels(captured, left_labels)
    second.values.name_labels(captured, right_labels)
    report = Report(plan, names)
    _notes(report, first, names[0])
    _notes(report, second, names[1])
    for a, b in zip(first.results, second.results):
        step = a.step
        why = _uncompared(step, a, against=True) or _uncompared(step, b, against=True)
        if why:
            report.uncompared[why] += 1
            continue
        if a.status != b.status or a.status != ANSWERED:
            if a.status != b.status:
                _diverge(report, step, "answer", f"{a.status}: {a.error}" if a.error else a.status,
                         f"{b.status}: {b.error}" if b.error else b.status)
            continue
        if a.version != b.version:
            _diverge(report, step, "version", a.version, b.version)
            continue
        left = _prepare(step, first.values.answer(step, a.answer), plan, report)
        right = _prepare(step, second.values.answer(step, b.answer), plan, report)
        _compare(report, step, compare.normalise(left, left_labels), compare.normalise(right, right_labels))
    return report


def _notes(report, replayer, name):
    setup = replayer.setup
    if setup is not None:
        if setup.created:
            report.notes.append(f"{name}: created {', '.join(setup.created)} before the replay")
        if setup.existing:
            report.notes.append(f"{name}: {', '.join(setup.existing)} existed already (left as they were)")
        for topic, why in sorted(setup.failed.items()):
            report.notes.append(f"{name}: could not create {topic}: {why}")
        if setup.error:
            report.notes.append(f"{name}: setting up stopped: {setup.error}")
    for place, (start, delta) in replayer.values.shifts.items():
        if delta:
            report.shifts[place] = (start, delta)
            report.excused["offsets"] += 1
    if report.plan.damage:
        report.notes.append(f"the capture file is damaged: {report.plan.damage}; what was read before is replayed")


def _uncompared(step, result, against=False):
    """Why a step's answer is not compared, or None."""
    if result.status == SKIPPED:
        return step.skip.split(" (rule")[0] if "(rule loading)" in step.skip else step.skip
    if result.status == NO_ANSWER_DUE:
        return "no answer is due (Produce with acks=0)"
    if not against and not step.compare:
        return f"the capture holds no answer ({step.exchange.status})"
    return None


def _diverge(report, step, path, left, right):
    ex = step.exchange
    report.divergences.append(Divergence(step.connection, step.index, ex.api_name, ex.api_version,
                                         ex.correlation_id, path, left, right))


def _compare(report, step, left, right):
    name = step.exchange.api_name
    report.compared[name] += 1
    excused = []

    def allowed(path, a, b):
        rule = _fetch_wait(step, path, a, b, left, right)
        if rule:
            excused.append(rule)
        return bool(rule)

    found = compare.differences(left, right, allowed=allowed)
    for path, a, b in found:
        _diverge(report, step, path, a, b)
    if found:
        report.diverged[name] += 1
    for rule in excused:
        report.excused[rule] += 1


# ---- the replay's rules, applied to an answer's plain form (to_dict) ----

def _prepare(step, answer, plan, report):
    plain = answer.to_dict()
    key = step.exchange.api_key
    if key == ApiKey.API_VERSIONS:
        report.excused["api-versions"] += 1
        return _api_versions(plain, plan)
    if key in _LISTS:
        field, name_of = _LISTS[key]
        entries = plain.get(field) or []
        kept = [e for e in entries if _named(name_of(e), e, plan, key)]
        if len(kept) != len(entries):
            report.excused["other-topics"] += len(entries) - len(kept)
            plain[field] = kept
    return plain


_LISTS = {
    ApiKey.METADATA: ("topics", lambda e: e.get("name")),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: ("topics", lambda e: e.get("name")),
    ApiKey.LIST_GROUPS: ("groups", lambda e: e.get("group_id")),
}


def _named(name, entry, plan, key):
    if entry.get("is_internal") or (name or "").startswith("__"):
        return False
    if key == ApiKey.LIST_GROUPS:
        return name in plan.named_groups
    return name is None or name in plan.named_topics


# Finalized features that change what clients send, and the APIs whose use makes them matter to a capture.
GOVERNING_FEATURES = {
    "transaction.version": {ApiKey.END_TXN, ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.TXN_OFFSET_COMMIT,
                            ApiKey.ADD_OFFSETS_TO_TXN},
    "group.version": {ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE},
    "share.version": {ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.SHARE_FETCH,
                      ApiKey.SHARE_ACKNOWLEDGE},
    "streams.version": {ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE},
}


def _api_versions(plain, plan):
    """What of an ApiVersions answer a replay compares (rule api-versions)."""
    served = {e["api_key"]: (e["min_version"], e["max_version"]) for e in plain.get("api_keys") or ()}
    uses = {}
    for key, versions in sorted(plan.versions.items()):
        low, high = served.get(key, (0, -1))
        missing = sorted(v for v in versions if not low <= v <= high)
        uses[_api_name(key)] = f"lacks v{', v'.join(map(str, missing))}" if missing else "serves what the capture uses"
    finalized = {f["name"]: f["max_version_level"] for f in plain.get("finalized_features") or ()}
    features = {name: finalized.get(name, 0) for name, apis in GOVERNING_FEATURES.items()
                if apis & set(plan.versions)}
    return {"error_code": plain.get("error_code"), "apis the capture uses": uses, "finalized features": features}


def _api_name(key):
    try:
        return api(key).name
    except KeyError:
        return str(key)


def _fetch_wait(step, path, left, right, left_answer, right_answer):
    """'fetch-wait' when a difference in a Fetch answer is one of timing (see the module's doc), else None."""
    if step.exchange.api_key != ApiKey.FETCH:
        return None
    leaf = path.rsplit(".", 1)[-1]
    if leaf in ("high_watermark", "last_stable_offset", "log_start_offset"):
        return "fetch-wait"
    if ".records" in path or ".aborted_transactions" in path:
        return "fetch-wait" if _prefix_batches(path, left_answer, right_answer) else None
    if leaf == "partitions" and isinstance(left, list) and isinstance(right, list) \
            and step.request.session_epoch > 0:
        return "fetch-wait" if _only_quiet_differ(left, right) else None
    return None


def _find(answer, path):
    """The value at a differences() path (response.a[1].b) in a normalised answer."""
    value = answer
    for part in path.replace("[", ".[").split(".")[1:]:
        if part.startswith("["):
            index = int(part[1:-1])
            if not isinstance(value, list) or index >= len(value):
                return None
            value = value[index]
        else:
            if not isinstance(value, dict):
                return None
            value = value.get(part)
    return value


def _prefix_batches(path, left_answer, right_answer):
    """Whether, in the partition a path is inside, one side's batches begin the other's."""
    partition = path[:min(at for at in (path.find(".records"), path.find(".aborted_transactions")) if at >= 0)]
    a = _find(left_answer, partition + ".records") or []
    b = _find(right_answer, partition + ".records") or []
    shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
    return longer[:len(shorter)] == shorter


def _only_quiet_differ(left, right):
    """Whether two incremental fetches' partition lists differ only by partitions one side leaves out: ones with
    nothing new, or ones whose topic is being deleted (Kafka removes a deleted topic's partitions one at a time, so
    a fetch waiting on them answers with those gone so far)."""
    def quiet(p):
        return not p.get("records") and p.get("error_code") in (0, errors.UNKNOWN_TOPIC_OR_PARTITION.code)

    by_index = defaultdict(list)
    for p in left + right:
        by_index[p.get("partition_index")].append(p)
    return all(ps[0] == ps[1] if len(ps) == 2 else quiet(ps[0]) for ps in by_index.values())


def _plain(value):
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return str(value)
