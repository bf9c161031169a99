"""Sarama's functional tests, run against a cluster of five brokers of ours behind toxiproxy.

Sarama (IBM/sarama, build tag ``functional``) tests itself against five Kafka brokers reached through toxiproxy on
127.0.0.1:29091-29095, which its tests use to break connections (reset peers, disable a proxy while producing);
``docker compose stop|start kafka-N`` stops and starts a broker. Here the brokers are this project's, in one
process; toxiproxy (the version tests/go/go.mod pins, built from the module proxy) forwards each of those ports to
one of them; and a ``docker`` on the tests' PATH carries ``compose stop|start kafka-N`` to the cluster's control
channel. The tests run as Sarama's CI runs them against Kafka 4.3.1: admin, producers (idempotent and
transactional), consumers, groups of every balance strategy, static membership, offsets, follower fetching.

Sarama's tests that run Kafka's console tools inside its containers (``docker compose exec``) skip themselves, as
they do against any existing cluster, and so does one it marks as failing now and then against Kafka.

About five minutes: KAFKAPROTO_HEAVY_TESTS=1. Ports 29091-29095 must be free.
"""

import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest

import go_programs
from kafka_jvm import free_port
from kafkaproto.broker import Broker

pytestmark = [pytest.mark.above_the_codecs, pytest.mark.xdist_group("go-clients"),
              pytest.mark.skipif(os.environ.get("KAFKAPROTO_HEAVY_TESTS") != "1",
                                 reason="about five minutes: KAFKAPROTO_HEAVY_TESTS=1")]

NODES = 5
PROXIED = [29090 + node for node in range(1, NODES + 1)]  # the addresses Sarama's tests dial, fixed there
SKIPPED_THEMSELVES = {"TestFuncJavaInteropCooperativeRebalance", "TestReadOnlyAndAllCommittedMessages",
                      "TestJavaProducerCompressionRoundTrip", "TestJavaConsumerCompressionRoundTrip",
                      "TestJavaMurmur2PartitionerInterop"}
# In this test the group's leader sends SyncGroup 4.5-6 s after the rebalance's JoinGroup answer: the time goes
# in Sarama before it asks for the metadata it assigns from (a capture shows every request answered within a
# millisecond, fetches after their 500 ms wait). The test's rebalance timeout is 6 s; beyond it the coordinator
# drops the leader, as Kafka's does, and the test fails. Seen in about one run in three; it is run again, up to
# twice.
LEADER_RACE = "TestFuncConsumerGroupCooperative"
# A docker for the tests: `compose stop|start kafka-N` goes to the control channel; starting a running broker or
# stopping a stopped one succeeds, as with docker compose; `compose logs` prints nothing.
DOCKER = """#!/bin/sh
if [ "$1" = compose ] && [ "$2" = logs ]; then exit 0; fi
if [ "$1" = compose ] && { [ "$2" = stop ] || [ "$2" = start ]; }; then
    node=${3#kafka-}
    out=$("%(python)s" -m kafkaproto cluster --channel %(channel)s "$2-node" "$node" 2>&1) && exit 0
    case "$out" in *"is not stopped"*|*"is not running"*) exit 0;; esac
    echo "$out" >&2
    exit 1
fi
echo "docker: only compose stop, start and logs are served here: $*" >&2
exit 1
"""


@pytest.fixture(scope="module")
def built():
    return go_programs.needed(lambda: (go_programs.sarama_functional_tests(), go_programs.toxiproxy()))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Five brokers set up as Sarama's docker-compose sets up Kafka, each advertising its proxied port."""
    base = free_port()
    while any(port in PROXIED for port in range(base, base + NODES)):
        base = free_port()
    overrides = {"listeners": f"PLAINTEXT://127.0.0.1:{base}",
                 "advertised.listeners": f"PLAINTEXT://127.0.0.1:{PROXIED[0]}",
                 "kafkaproto.control.channel": "127.0.0.1:0", "auto.create.topics.enable": "false",
                 "default.replication.factor": "2", "offsets.topic.replication.factor": "2",
                 "transaction.state.log.replication.factor": "2",
                 "log.dirs": str(tmp_path_factory.mktemp("sarama-functional"))}
    with Broker(overrides, nodes=NODES) as broker:
        yield broker, [base + i for i in range(NODES)]


@pytest.fixture(scope="module")
def toxiproxy(built, cluster, tmp_path_factory):
    """toxiproxy with the proxies Sarama's tests look for: kafkaN on 127.0.0.1:2909N, to broker N."""
    _, server = built
    _, ports = cluster
    api = free_port()
    log = open(tmp_path_factory.mktemp("toxiproxy") / "log", "w")
    process = subprocess.Popen([str(server), "-host", "127.0.0.1", "-port", str(api)], stdout=log,
                               stderr=subprocess.STDOUT)
    address = f"http://127.0.0.1:{api}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{address}/version", timeout=1).read()
            break
        except OSError:
            assert time.monotonic() < deadline and process.poll() is None, "toxiproxy did not start"
            time.sleep(0.1)
    for node, (listen, upstream) in enumerate(zip(PROXIED, ports), start=1):
        proxy = {"name": f"kafka{node}", "listen": f"127.0.0.1:{listen}", "upstream": f"127.0.0.1:{upstream}",
                 "enabled": True}
        request = urllib.request.Request(f"{address}/proxies", data=json.dumps(proxy).encode(), method="POST")
        urllib.request.urlopen(request, timeout=10).read()
    yield address
    process.terminate()
    process.wait(timeout=10)
    log.close()


def run_sarama(built, cluster, toxiproxy, bin_dir, only=None):
    (binary, package), _ = built
    broker, _ = cluster
    (bin_dir / "docker").write_text(DOCKER % {"python": sys.executable, "channel": broker.control_address})
    (bin_dir / "docker").chmod(0o755)
    environment = {**os.environ, "TOXIPROXY_ADDR": toxiproxy, "KAFKA_VERSION": "4.3.1",
                   "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    args = [str(binary), "-test.v", "-test.timeout=1200s"] + ([f"-test.run=^{only}$"] if only else [])
    run = subprocess.run(args, cwd=package, env=environment, capture_output=True, text=True, timeout=1300)
    return run.returncode, go_programs.go_test_outcomes(run.stdout), run.stdout + run.stderr


def test_saramas_functional_tests_pass(built, cluster, toxiproxy, tmp_path):
    returncode, outcomes, output = run_sarama(built, cluster, toxiproxy, tmp_path)
    failed = {name for name, outcome in outcomes.items() if outcome == "FAIL" and "/" not in name}
    for _ in range(2):
        if failed != {LEADER_RACE}:
            break
        _, again, output = run_sarama(built, cluster, toxiproxy, tmp_path, only=LEADER_RACE)
        outcomes.update(again)
        failed = {name for name, outcome in outcomes.items() if outcome == "FAIL" and "/" not in name}
    lines = [line for line in output.splitlines() if "_test.go" in line]
    assert not failed and (returncode == 0 or outcomes.get(LEADER_RACE) == "PASS"), \
        f"failed: {sorted(failed)}\n" + "\n".join(lines[-80:])
    skipped = {name for name, outcome in outcomes.items() if outcome == "SKIP"}
    assert skipped == SKIPPED_THEMSELVES, skipped
    assert sum(outcome == "PASS" for outcome in outcomes.values()) > 100
