"""The broker with two Go clients, franz-go (kgo and kadm) and IBM's Sarama.

tests/go holds a Go module (go.mod and go.sum pin the clients) with one program per client; each run does one
scenario against the broker and prints what it saw as one JSON line, which the tests here check. The programs are
built once per change of their sources into ``~/.cache/kafkaproto/go`` (``KAFKAPROTO_GO_CACHE`` moves it), by the
first worker that needs them (tests/go_programs.py). Without ``go`` the tests skip and say so; with
``KAFKAPROTO_REQUIRE_KAFKA=1`` (CI) they fail instead.

The expectations are Apache Kafka's behaviour: ``KAFKAPROTO_GO_CLIENTS_ON_KAFKA=1`` runs every test against a
Kafka 4.3.1 broker as well, to check the scenarios themselves.
"""

import json
import os
import subprocess
import uuid

import pytest

import go_programs
import kafka_jvm

# The broker is the same code over either codec implementation (conftest.py: the pure-Python pass). Under pytest
# -n these tests share one worker: the first build of the programs (a minute or more of compiling on a cold Go
# cache) then holds up that worker alone, and a Kafka broker for KAFKAPROTO_GO_CLIENTS_ON_KAFKA starts once.
pytestmark = [pytest.mark.above_the_codecs, pytest.mark.xdist_group("go-clients")]

ON_KAFKA = os.environ.get("KAFKAPROTO_GO_CLIENTS_ON_KAFKA") == "1"
KAFKA_CHECK_VERSION = "4.3.1"  # the first pinned release that serves KIP-848 groups by default


@pytest.fixture(scope="session")
def go_clients():
    """The folder holding the built ``franz`` and ``sarama`` programs."""
    return go_programs.needed(go_programs.built)


@pytest.fixture(scope="module")
def kafka_check(tmp_path_factory):
    try:
        broker = kafka_jvm.KafkaBroker(KAFKA_CHECK_VERSION, tmp_path_factory.mktemp("kafka-go-clients"))
    except kafka_jvm.KafkaUnavailable as exc:
        kafka_jvm.unavailable(str(exc))
    yield f"127.0.0.1:{broker.port}"
    broker.stop()


BROKERS = ["kafkaproto", *([f"kafka-{KAFKA_CHECK_VERSION}"] if ON_KAFKA else [])]


@pytest.fixture(params=BROKERS)
def bootstrap(request):
    if request.param == "kafkaproto":
        return request.getfixturevalue("kafkaproto_broker").bootstrap_servers
    return request.getfixturevalue("kafka_check")


def run(go_clients, client, bootstrap, scenario, mode=None):
    """One scenario of one client program; its JSON result."""
    command = [str(go_clients / client), bootstrap, scenario, f"go-{scenario}-{uuid.uuid4().hex[:8]}",
               *([mode] if mode else [])]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=150)
    assert proc.returncode == 0, f"{client} {scenario} {mode or ''} failed (exit {proc.returncode}):\n" \
                                 f"{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.splitlines()[-1])


# ---- franz-go ------------------------------------------------------------------------------------------------

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}  # a batch's attributes, bits 0-2


@pytest.mark.parametrize("codec", CODECS)
def test_franz_go_idempotent_produce(go_clients, bootstrap, codec):
    """300 records, record i to partition i % 3, in three idempotent rounds of ProduceSync: each lands at the next
    offset of its partition and reads back intact, in a batch of the codec asked for, under the producer ID that
    InitProducerId gave."""
    result = run(go_clients, "franz", bootstrap, "produce", codec)
    produced = sorted(result["produced"], key=lambda r: r[2])
    producer_ids = {pid for *_, pid in produced}
    assert len(producer_ids) == 1 and min(producer_ids) >= 0, f"not one idempotent producer: {producer_ids}"
    assert [r[:3] for r in produced] == [[i % 3, i // 3, i] for i in range(300)]
    consumed = sorted(result["consumed"])
    assert [r[:3] for r in consumed] == [[i % 3, i // 3, i] for i in sorted(range(300), key=lambda i: (i % 3, i))]
    assert {r[3] for r in consumed} == {CODECS[codec]}, "batches read back are not in the codec produced"
    assert {(r[4], r[5] >= 0) for r in consumed} == {(producer_ids.pop(), True)}
    assert all(r[6] for r in consumed), "a key or header did not read back as produced"


def check_group(result, protocol):
    """What a group of two must show whatever the client or protocol: see Group in tests/go/internal/scenario."""
    a, b = result["a"], result["b"]
    everything = [0, 1, 2, 3]
    assignments = result["assignments"]
    assert assignments["alone"] == {"a": everything}
    joined = assignments["joined"]
    assert len(joined["a"]) == len(joined["b"]) == 2 and sorted(joined["a"] + joined["b"]) == everything, joined
    assert assignments["left"] == {"a": everything}

    def records(entries):
        pairs = [tuple(map(int, e.split(":"))) for e in entries]
        assert len(pairs) == len(set(pairs)), f"read more than once: {sorted(pairs)}"
        return set(pairs)

    # Every record read once: no commit lost, not even one made while the group rebalanced.
    assert records(a["read"]["one"]) == {(p, o) for p in everything for o in range(10)}
    assert set(b["read"]) == {"flow"}, "B read what A had committed before it joined"
    flowed = records(result["flowed"])
    from_a, from_b = records(a["read"]["flow"]), records(b["read"]["flow"])
    assert not from_a & from_b, f"read by both A and B: {sorted(from_a & from_b)}"
    assert from_a | from_b == flowed, f"never read: {sorted(flowed - from_a - from_b)}"
    assert from_b and {p for p, _ in from_b} <= set(joined["b"]), "B read beyond its partitions"

    # Read back through the broker: every record of every partition committed.
    ends = {str(p): 10 + sum(1 for q, _ in flowed if q == p) for p in everything}
    assert result["committed"] == result["ends"] == ends
    described = result["described"]
    assert described.get("state") == "Stable" and described.get("members") == [everything], described
    assert described["protocol"] == protocol
    after = result["described_after_leaving"]
    assert after["state"] == "Empty" and not after["members"], after


GROUP_PROTOCOLS = {"eager": "range", "cooperative-sticky": "cooperative-sticky", "kip848": "uniform",
                   "cooperative-sticky-regex": "cooperative-sticky", "kip848-regex": "uniform"}
JOIN_GROUP, CONSUMER_GROUP_HEARTBEAT = "11", "68"


@pytest.mark.parametrize("mode", GROUP_PROTOCOLS)
def test_franz_go_consumer_group(go_clients, bootstrap, mode):
    """Two franz-go members: A joins alone and reads; then, with records flowing all along, B joins, they share
    the 4 partitions, B leaves and A reads alone again. Each commits synchronously after every poll, with
    rebalances held back between a poll and its commit (BlockRebalanceOnPoll), so no record may be read twice.
    Eager (range), cooperative-sticky (rebalancing in two rounds, A keeping what it can), and KIP-848 (the broker
    assigns, through ConsumerGroupHeartbeat); -regex subscribes by a regular expression (resolved by the broker
    with KIP-848)."""
    result = run(go_clients, "franz", bootstrap, "group", mode)
    for member in ("a", "b"):
        keys = result[member]["api_keys"]
        if mode.startswith("kip848"):
            assert CONSUMER_GROUP_HEARTBEAT in keys and JOIN_GROUP not in keys, (
                f"{member} did not use the KIP-848 protocol (franz-go falls back to the classic one when the "
                f"broker does not serve ConsumerGroupHeartbeat v1+): requests sent by API key {keys}")
        else:
            assert JOIN_GROUP in keys and CONSUMER_GROUP_HEARTBEAT not in keys, keys
        failed = result[member]["commit_errors"] or []
        assert not failed, f"{len(failed)} of {member}'s commits failed, the first with {failed[0]}"
    check_group(result, GROUP_PROTOCOLS[mode])
    if not mode.startswith("kip848"):
        assert result["described"]["protocol_type"] == "consumer"


def test_franz_go_transaction_read_committed(go_clients, bootstrap):
    """On 2 partitions: 10 records committed, 5 aborted, then 4 left open while a read_committed consumer reads
    (it stops at the open transaction: the last stable offset holds there), then committed (the same consumer goes
    on to read them). A read_uncommitted consumer reads all 19, the aborted ones too."""
    result = run(go_clients, "franz", bootstrap, "txn")
    committed, aborted, still_open = ([f"{prefix}-{i}" for i in range(n)]
                                      for prefix, n in (("committed", 10), ("aborted", 5), ("open", 4)))
    assert result["read_committed_before_commit"] == committed
    assert result["read_committed_after_commit"] == still_open
    assert result["read_uncommitted"] == sorted(committed + aborted + still_open)
    # Record i of each transaction went to partition i % 2; each ended transaction left one marker per partition.
    def count(n, p):
        return len(range(p, n, 2))

    stable = {str(p): count(10, p) + 1 + count(5, p) + 1 for p in (0, 1)}
    end = {str(p): stable[str(p)] + count(4, p) for p in (0, 1)}
    assert result["stable_while_open"] == stable and result["end_while_open"] == end
    after = {p: offset + 1 for p, offset in end.items()}
    assert result["stable_after"] == result["end_after"] == after


def test_franz_go_admin(go_clients, bootstrap):
    """kadm: two topics in one CreateTopics (one with configs), the same name again, a validate-only creation;
    metadata, configs, CreatePartitions and DeleteTopics, and deleting a deleted topic."""
    result = run(go_clients, "franz", bootstrap, "admin")
    assert len(result["created"]) == 2
    for created in result["created"].values():
        assert created == {"error": "", "partitions": 3, "has_id": True}
    assert result["created_again"] == "TOPIC_ALREADY_EXISTS"
    assert result["validated"] == {"error": "", "partitions": 2}
    listed = result["listed"]
    validated = next(name for name in listed if name.endswith("-validated"))
    assert listed.pop(validated)["error"] == "UNKNOWN_TOPIC_OR_PARTITION", "a validate-only topic was made"
    for topic in listed.values():
        assert topic["error"] == "" and topic["partitions"] == 3 and topic["id_matches"]
        assert len(topic["leaders"]) == 3 and len(set(topic["leaders"])) == 1 and topic["leaders"][0] >= 0
    source = "DYNAMIC_TOPIC_CONFIG"
    assert result["configs"] == {"cleanup.policy": {"value": "compact", "source": source},
                                 "retention.ms": {"value": "3600000", "source": source}}
    assert result["grown"] == ""
    assert set(result["deleted"]) == set(result["created"]) and set(result["deleted"].values()) == {""}
    assert result["deleted_again"] == "UNKNOWN_TOPIC_OR_PARTITION"


# ---- Sarama --------------------------------------------------------------------------------------------------

def test_sarama_idempotent_produce(go_clients, bootstrap):
    """An idempotent SyncProducer (acks=all, one request in flight, snappy): 300 records to 3 partitions in three
    rounds, each at the next offset of its partition; read back intact by partition consumers."""
    result = run(go_clients, "sarama", bootstrap, "produce")
    assert sorted(result["produced"], key=lambda r: r[2]) == [[i % 3, i // 3, i] for i in range(300)]
    assert sorted(result["consumed"]) == [[i % 3, i // 3, i, 1] for i in sorted(range(300), key=lambda i: (i % 3, i))]


def test_sarama_consumer_group(go_clients, bootstrap):
    """Two Sarama members (range, eager) through the same steps as franz-go's: A alone, then records flowing while
    B joins, shares and leaves; each record marked and committed as it is processed."""
    result = run(go_clients, "sarama", bootstrap, "group")
    for member in ("a", "b"):
        failed = result[member]["errors"] or []
        assert not failed, f"{member} met {len(failed)} errors (failed commits among them), the first: {failed[0]}"
    check_group(result, "range")
    assert result["described"]["protocol_type"] == "consumer"


def test_sarama_admin(go_clients, bootstrap):
    """ClusterAdmin: create with configs, again (TOPIC_ALREADY_EXISTS, 36), validate-only; the cluster, topics and
    configs described; grown to 5 partitions; deleted, and deleted again (UNKNOWN_TOPIC_OR_PARTITION, 3)."""
    result = run(go_clients, "sarama", bootstrap, "admin")
    assert result["created_again"] == 36 and result["validated"] == 0 and not result["validated_listed"]
    assert result["brokers"] == [bootstrap] and result["controller"] >= 0
    described = result["described"]
    validated = next(name for name in described if name.endswith("-validated"))
    assert described.pop(validated)["error"] == 3
    [topic] = described.values()
    assert topic["error"] == 0 and topic["partitions"] == 3 and topic["leaders"] == [result["controller"]] * 3
    assert result["configs"] == {"cleanup.policy": {"value": "compact", "source": "Topic"},
                                 "retention.ms": {"value": "3600000", "source": "Topic"}}
    assert result["deleted_again"] == 3
