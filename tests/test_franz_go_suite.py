"""franz-go's own tests of its client, run against a cluster of three brokers of ours.

franz-go (package kgo) tests itself against a real Kafka: KGO_SEEDS names the brokers, and its tests create
topics with three replicas, run consumer groups of every balancer (classic and KIP-848, static members),
transactional ETL pipelines whose output must hold each record exactly once, share groups, regex
subscriptions, pausing, purging, large messages, and SASL (SCRAM-SHA-256 and unsecured OAUTHBEARER, which
must fail an expired token with SASL_AUTHENTICATION_FAILED and "invalid_token"). Those expectations are
franz-go's, written for Kafka, not ours. The binary is compiled from the module cache at the version
tests/go/go.mod pins (go_programs.franz_go_tests).

With KAFKAPROTO_HEAVY_TESTS=1 a second run goes on while things go wrong: every connection franz-go opens dies
after 0.5-1.5 s (its own KGO_TEST_CHAOS), and the cluster meanwhile stops and starts brokers and answers
retriable errors (a seeded sequence); the ETL tests must still see every record once.
"""

import os
import random
import subprocess
import threading
import time

import pytest

import go_programs
from kafkaproto import errors
from kafkaproto.broker import Broker
from kafkaproto.messages import ApiKey

pytestmark = [pytest.mark.above_the_codecs, pytest.mark.xdist_group("go-clients")]

HEAVY = os.environ.get("KAFKAPROTO_HEAVY_TESTS") == "1"
SCRAM_USER = ("kgo", "kgo-secret")
# Skipped by franz-go itself, and why: it checks that a client pinned to Kafka 0.10 is refused, which it can
# only see on a broker whose ApiVersions starts Produce above v2. Kafka 4.x still advertises v0 (for
# librdkafka's sake, while refusing it), and so does this broker, as Kafka 4.3 does.
SKIPPED_AS_ON_KAFKA = {"TestIssueProduceBrokerTooOldFailsRecords"}
# The tests that talk to the brokers at length; each must have run and passed.
AGAINST_THE_BROKER = {
    "TestGroupETL", "TestTxnEtl", "TestShareGroupETL", "TestShareGroupAckOnClose", "TestShareGroupOffsetsAdmin",
    "TestShareGroup", "Test848RegexBrokerResolves", "TestConsumeRegex", "TestConsumeRegexShareSkipsInternal",
    "TestIssue337", "TestIssue434", "TestDirectPartitionPurge", "TestAddRemovePartitions", "TestPauseIssue489",
    "TestIssue865", "TestIssueFetchLargerThanBrokerMaxReadBytes", "TestConsumeMaxDecompressBatchBytes",
    "TestClient_Produce", "TestClient_ProduceLargeMessages", "TestIssue769", "TestSCRAMAuth",
    "TestSCRAMAuthBadCredentials", "TestOAuthAuth", "TestPing",
}


@pytest.fixture(scope="module")
def franz_go_tests():
    return go_programs.needed(go_programs.franz_go_tests)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Three brokers, each with a PLAINTEXT listener (KGO_SEEDS) and a SASL one: SCRAM-SHA-256 with one user,
    and OAUTHBEARER with Kafka's unsecured tokens."""
    user, password = SCRAM_USER
    overrides = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,OAUTHBEARER",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
            f'org.apache.kafka.common.security.scram.ScramLoginModule required user_{user}="{password}";',
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
        "connection.failed.authentication.delay.ms": "0",
        "log.dirs": str(tmp_path_factory.mktemp("franz-go-suite")),
    }
    with Broker(overrides, nodes=3) as broker:
        yield broker


def run_suite(franz_go_tests, cluster, *, records, only=None, env=None, timeout=600):
    """Run franz-go's tests against the cluster: their outcomes {name: PASS|FAIL|SKIP} (subtests too) and the
    whole output."""
    sasl = f"{cluster.host}:{cluster.ports['SASL_PLAINTEXT']}"
    environment = {**os.environ, "KGO_SEEDS": cluster.bootstrap_servers, "KGO_TEST_RECORDS": str(records),
                   "KGO_TEST_SCRAM": ":".join(SCRAM_USER), "KGO_TEST_SCRAM_SEEDS": sasl,
                   "KGO_TEST_OAUTH_SEEDS": sasl, "KGO_LOG_LEVEL": "none", **(env or {})}
    binary, package = franz_go_tests
    args = [str(binary), "-test.v", f"-test.timeout={timeout}s"]
    if only:
        args.append("-test.run=^(" + "|".join(only) + ")$")
    run = subprocess.run(args, cwd=package, env=environment, capture_output=True, text=True, timeout=timeout + 60)
    return run.returncode, go_programs.go_test_outcomes(run.stdout), run.stdout + run.stderr


def failures(outcomes, output):
    failed = sorted(name for name, outcome in outcomes.items() if outcome == "FAIL")
    lines = [line for line in output.splitlines() if "_test.go" in line and "completed in" not in line]
    return f"failed: {failed}\n" + "\n".join(lines[-80:])


def test_franz_gos_own_tests_pass(franz_go_tests, cluster):
    returncode, outcomes, output = run_suite(franz_go_tests, cluster, records=10_000)
    assert returncode == 0, failures(outcomes, output)
    listed = subprocess.run([str(franz_go_tests[0]), "-test.list", "."], capture_output=True, text=True,
                            timeout=60).stdout.split()
    top = {name: outcomes.get(name) for name in listed}
    assert {name for name, outcome in top.items() if outcome == "SKIP"} == SKIPPED_AS_ON_KAFKA, top
    assert all(top[name] == "PASS" for name in AGAINST_THE_BROKER), {n: top.get(n) for n in AGAINST_THE_BROKER}
    assert {"TestGroupETL/cooperative-sticky/static", "TestGroupETL/range/848", "TestTxnEtl/sticky/848/static"} \
        <= {name for name, outcome in outcomes.items() if outcome == "PASS"}


# Errors Kafka answers when leadership or coordination moves, which a client must retry: (error, APIs).
RETRIABLE = [
    (errors.NOT_LEADER_OR_FOLLOWER, [ApiKey.PRODUCE, ApiKey.FETCH]),
    (errors.REQUEST_TIMED_OUT, [ApiKey.PRODUCE]),
    (errors.COORDINATOR_NOT_AVAILABLE, [ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.OFFSET_COMMIT,
                                   ApiKey.OFFSET_FETCH, ApiKey.CONSUMER_GROUP_HEARTBEAT]),
    (errors.NOT_COORDINATOR, [ApiKey.TXN_OFFSET_COMMIT, ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.END_TXN,
                         ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.INIT_PRODUCER_ID]),
    (errors.CONCURRENT_TRANSACTIONS, [ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.END_TXN]),
    (errors.REBALANCE_IN_PROGRESS, [ApiKey.HEARTBEAT]),
]


def upsets(cluster, stop, seed):
    """Until stop is set: every 1-3 s, stop a broker (started again at the next turn) or install a retriable
    error for 1-4 requests. No broker stops in the first 8 s, while the tests create their topics with three
    replicas (which needs three brokers running)."""
    rng = random.Random(seed)
    stopped = None
    done = []
    start = time.monotonic()
    while not stop.wait(rng.uniform(1, 3)):
        if stopped is not None:
            cluster.start_node(stopped)
            done.append(f"start {stopped}")
            stopped = None
        elif rng.random() < 0.4 and time.monotonic() - start > 8:
            stopped = rng.choice(sorted(cluster.nodes))
            cluster.stop_node(stopped)
            done.append(f"stop {stopped}")
        else:
            error, apis = rng.choice(RETRIABLE)
            chosen = rng.sample(apis, rng.randint(1, len(apis)))
            cluster.add_fault(error, api_keys=chosen, budget=rng.randint(1, 4))
            done.append(f"{error.name} on {[a.name for a in chosen]}")
    if stopped is not None:
        cluster.start_node(stopped)
    cluster.clear_faults()
    return done


@pytest.mark.skipif(not HEAVY, reason="two to three minutes of upsets: KAFKAPROTO_HEAVY_TESTS=1")
@pytest.mark.parametrize("test", ["TestGroupETL", "TestTxnEtl", "TestShareGroupETL"])
def test_franz_gos_etl_through_dying_connections_stopped_brokers_and_errors(franz_go_tests, cluster, test):
    stop = threading.Event()
    done = []
    thread = threading.Thread(target=lambda: done.extend(upsets(cluster, stop, seed=sum(map(ord, test)))))
    thread.start()
    try:
        returncode, outcomes, output = run_suite(franz_go_tests, cluster, records=100_000, only=[test],
                                                 env={"KGO_TEST_CHAOS": "1"})
    finally:
        stop.set()
        thread.join()
    assert returncode == 0 and outcomes.get(test) == "PASS", f"upsets: {done}\n" + failures(outcomes, output)
    assert any(upset.startswith("stop") for upset in done), done  # the run lasted long enough to be upset
    print(f"{test}: {len(done)} upsets: {done}")
