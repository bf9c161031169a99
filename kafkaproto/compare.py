"""Comparing two answers to the same request (from two brokers, or from a broker and a capture), under named rules
for what may legitimately differ between them.

    labels = Labels(), Labels()                       # one per side: ids are compared by who is who
    a = normalise(response_a.to_dict(), labels[0])
    b = normalise(response_b.to_dict(), labels[1])
    for path, left, right in differences(a, b):
        print(path, left, right)

The rules (``RULES`` names them):
- ``identifiers``: what each broker makes up (cluster, node and controller ids, hosts and ports, topic IDs,
  producer ids, member ids, fetch session ids) becomes "<field>#n", n in order of first appearance on that side,
  so which ids are equal to which is still compared;
- ``free-text``: throttle times, error messages, config documentation and authorized-operation bit sets are
  dropped, and of the configs a DescribeConfigs or CreateTopics answer lists, only those set on the resource
  itself are compared (by name): each broker lists its own files' values and defaults besides;
- ``hash-order``: partitions are listed by index, group members by id, topics by ID, then by name (brokers
  list them in the order of their hash maps and sets, and each side's ids differ);
- ``batches``: record batches are compared as decoded fields, not bytes, and the timestamps of control batches
  (the time each broker wrote the marker) are dropped;
- ``loading``: an answer saying a coordinator or a partition leader is not ready yet (``is_loading``) is one to ask
  again, not to compare.

Nothing here does I/O.
"""

from . import errors, records
from .uuid import Uuid

RULES = ("identifiers", "free-text", "hash-order", "batches", "loading")

LOADING = frozenset({errors.COORDINATOR_LOAD_IN_PROGRESS.code, errors.COORDINATOR_NOT_AVAILABLE.code,
                     errors.NOT_COORDINATOR.code, errors.CONCURRENT_TRANSACTIONS.code,
                     errors.NOT_LEADER_OR_FOLLOWER.code, errors.LEADER_NOT_AVAILABLE.code})
LABELLED = frozenset({"session_id", "cluster_id", "node_id", "controller_id", "leader_id", "broker_id", "host",
                      "port", "topic_id", "producer_id", "member_id", "leader", "replica_nodes", "isr_nodes"})
DROPPED = frozenset({"throttle_time_ms", "error_message", "topic_authorized_operations",
                     "cluster_authorized_operations", "authorized_operations", "documentation"})
# Config sources (DescribeConfigs, CreateTopics) of values set on the resource itself, rather than a deployment's
# files, cluster-wide settings or defaults: the topic's (1), the broker's own set at run time (2), a group's (8).
SET_ON_THE_RESOURCE = frozenset({1, 2, 8})


def is_loading(value):
    """Whether a normalised answer holds an error that says the broker is not ready yet (rule ``loading``)."""
    if isinstance(value, dict):
        return any(v in LOADING for k, v in value.items() if k.endswith("error_code")) or any(
            is_loading(v) for v in value.values())
    return isinstance(value, list) and any(is_loading(v) for v in value)


class Labels:
    """One side's identifiers: each distinct one becomes "<field>#n"; empty ones (None, "", -1, the zero UUID)
    stay as they are. A group member's ids share one numbering whatever field names them."""

    def __init__(self):
        self.seen = {}

    def __call__(self, field, value):
        if isinstance(value, list):
            return [self(field, v) for v in value]
        if value is None or value == "" or value == -1 or value == Uuid.ZERO:
            return value
        key = self.key(field, value)
        if key not in self.seen:
            self.seen[key] = f"{key[0]}#{sum(1 for k in self.seen if k[0] == key[0]) + 1}"
        return self.seen[key]

    @staticmethod
    def key(field, value):
        return field if field not in ("leader", "member_id") else "member", value

    def name(self, field, value, label):
        """Label value so from now on (a group member's id by the member's name in a script, say)."""
        self.seen.setdefault(self.key(field, value), label)


def batches(data, labels):
    """Record batches as the fields that must agree (rule ``batches``)."""
    out = []
    for batch in records.iter_batches(data or b""):
        row = {"base_offset": batch.base_offset, "last_offset_delta": batch.last_offset_delta,
               "attributes": batch.attributes, "leader_epoch": batch.partition_leader_epoch,
               "producer_id": labels("producer_id", batch.producer_id), "producer_epoch": batch.producer_epoch,
               "base_sequence": batch.base_sequence, "count": batch.record_count,
               "records": [(r.offset, r.key, r.value, r.headers) for r in batch]}
        if not batch.is_control:
            row["timestamps"] = (batch.base_timestamp, batch.max_timestamp)
        out.append(row)
    return out


def normalise(value, labels, field=None):
    """A message's ``to_dict()`` with the rules applied, one side's labels giving its identifiers."""
    if isinstance(value, dict):
        return {k: (labels(k, v) if k in LABELLED else configs(v, labels) if k == "configs" else
                    normalise(v, labels, k))
                for k, v in value.items() if k not in DROPPED}
    if isinstance(value, list):
        items = [normalise(v, labels, field) for v in value]
        if items and all(isinstance(v, dict) and "partition_index" in v for v in items):
            items.sort(key=lambda v: v["partition_index"])
        elif items and all(isinstance(v, dict) and "index" in v and "error_code" in v for v in items):
            items.sort(key=lambda v: v["index"])  # Produce's partitions
        if items and all(isinstance(v, dict) and "member_id" in v for v in items):
            items.sort(key=lambda v: str(v["member_id"]))
        elif items and all(isinstance(v, dict) and "topic_id" in v and "partitions" in v for v in items):
            items.sort(key=lambda v: (str(v["topic_id"]), str(v.get("name"))))
        return items
    if field == "records" and value is not None:
        return batches(value, labels)
    return value


def configs(value, labels):
    """A list of configs as the rule ``free-text`` compares it: those set on the resource itself, by name (each
    broker lists its own files' values and defaults besides); None where configs carry no source (before
    DescribeConfigs v1, CreateTopics v5), which says nothing comparable."""
    if not isinstance(value, list) or not all(isinstance(c, dict) and "config_source" in c for c in value):
        return None if isinstance(value, list) else value
    kept = [normalise(c, labels) for c in value if c["config_source"] in SET_ON_THE_RESOURCE]
    return sorted(kept, key=lambda c: c.get("name") or "")


def differences(left, right, path="response", allowed=None):
    """[(path, left value, right value)] wherever two normalised answers differ; allowed(path, left, right) may
    excuse a difference."""
    if isinstance(left, dict) and isinstance(right, dict):
        return [d for key in sorted(set(left) | set(right), key=str)
                for d in differences(left.get(key), right.get(key), f"{path}.{key}", allowed)]
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        return [d for i, (a, b) in enumerate(zip(left, right))
                for d in differences(a, b, f"{path}[{i}]", allowed)]
    if left == right or allowed is not None and allowed(path, left, right):
        return []
    return [(path, left, right)]


__all__ = ["DROPPED", "LABELLED", "LOADING", "Labels", "RULES", "SET_ON_THE_RESOURCE", "batches", "configs",
           "differences", "is_loading", "normalise"]
