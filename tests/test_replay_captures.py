"""The real captures (tests/data/captures/: Java, librdkafka, kafka-python, aiokafka, kafkajs, franz-go and Sarama
clients, each recorded against Apache Kafka by tests/kafka/record_captures.py) replayed with kafkaproto.replay:

- against the Kafka version that recorded each, at the capture's pace: no answer may diverge (the replay and its
  rules are right about Kafka itself);
- against this project's broker, as fast as the captured order allows: no answer may diverge either, beyond the
  documented rules (a divergence found here is a broker defect to fix);
- with the command line, against two brokers at once, and where answers do diverge (exit status 1, JSON lines).
"""

import asyncio
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kafka_jvm
from kafkaproto.broker import Broker
from kafkaproto.capture import read_capture
from kafkaproto.replay import Plan, compare_targets, compare_with_capture, replay, replay_both
from recording_proxy import RecordingProxy
from test_broker_security import SASL_OVERRIDES, certificates, kafka_python_round_trip  # noqa: F401 - a fixture

pytestmark = pytest.mark.above_the_codecs  # the same code over either codec implementation (conftest.py)

CAPTURES = {p.stem: p for p in sorted((Path(__file__).parent / "data" / "captures").glob("*.pcap"))}
RECORDED_ON = {name: "3.9.2" if name == "java-3.9.2" else "4.3.1" for name in CAPTURES}
# Where this broker (Kafka 4.3's behaviour) must differ from a capture of Kafka 3.9.2: 3.9 finalizes no
# transaction.version, so its clients' transactions ran under version 1 (they still replay the same).
FROM_3_9 = {"response.finalized features.transaction.version"}


@pytest.fixture
def our_broker():
    """A fresh broker per capture, with the group settings of the Kafka that recorded them."""
    with Broker({**kafka_jvm.GROUP_SETTINGS, "auto.create.topics.enable": "false"}) as broker:
        yield broker


def described(report):
    return "\n".join(f"connection {d.connection}, request {d.step} ({d.api} v{d.version}) {d.path}: "
                     f"{d.left!r} | {d.right!r}" for d in report.divergences[:20])


def check(report, name):
    """No divergence; every answer the capture holds was compared or is excused by name."""
    assert report.ok, f"{name}:\n{described(report)}"
    assert sum(report.compared.values()) >= 25
    assert set(report.uncompared) <= {"the captured broker was not ready"}, report.uncompared
    assert not report.shifts and not report.notes, (report.shifts, report.notes)


@pytest.mark.parametrize("name", CAPTURES)
def test_replayed_against_this_broker(name, our_broker):
    plan = Plan.of(read_capture(CAPTURES[name]))
    target = asyncio.run(replay(plan, our_broker.bootstrap_servers, speed=None))
    report = compare_with_capture(plan, target)
    if RECORDED_ON[name] == "3.9.2":
        assert {d.path for d in report.divergences} == FROM_3_9, described(report)
        report.divergences = []
    check(report, name)


@pytest.mark.xdist_group("kafka-broker")  # with the differential tests, which use the same two brokers
@pytest.mark.parametrize("name", CAPTURES)
def test_replayed_against_the_kafka_that_recorded_it(kafka_brokers, name, our_broker):
    """At the capture's pace, against a Kafka broker that serves other tests too (its other topics and groups are
    left out of the comparison, by rule other-topics), and against this broker at the same time: both agree with
    the capture, and with each other."""
    kafka_broker = kafka_brokers(RECORDED_ON[name])
    plan = Plan.of(read_capture(CAPTURES[name]))
    kafka, ours = asyncio.run(replay_both(plan, f"127.0.0.1:{kafka_broker.port}", our_broker.bootstrap_servers))
    check(compare_with_capture(plan, kafka), f"{name} against Kafka {kafka_broker.version}")
    between = compare_targets(plan, kafka, ours, ("kafka", "kafkaproto"))
    if RECORDED_ON[name] == "3.9.2":
        between.divergences = [d for d in between.divergences if d.path not in FROM_3_9]
    assert between.ok, described(between)


def kafkaproto(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "kafkaproto", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_the_command_line_against_two_brokers(tmp_path):
    """kafkaproto replay --against: the same capture against two brokers, compared with each other."""
    with Broker({**kafka_jvm.GROUP_SETTINGS}) as first, Broker({**kafka_jvm.GROUP_SETTINGS}) as second:
        run = kafkaproto("replay", CAPTURES["librdkafka"], "--bootstrap-server", first.bootstrap_servers,
                         "--against", second.bootstrap_servers, "--speed", "max", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "no divergence" in run.stdout and "JoinGroup" in run.stdout


def test_the_command_line_reports_divergences(tmp_path, our_broker):
    """A capture of Kafka 3.9.2 against this broker: its ApiVersions answers differ (transaction.version), one
    JSON line per divergence, a summary last, exit status 1."""
    run = kafkaproto("replay", CAPTURES["java-3.9.2"], "--bootstrap-server", our_broker.bootstrap_servers,
                     "--speed", "max", "--format", "jsonl", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    divergences = [line for line in lines if line["type"] == "divergence"]
    assert divergences and {d["path"] for d in divergences} == FROM_3_9
    assert {(d["api"], d["left"], d["right"]) for d in divergences} == {("ApiVersions", 0, 2)}
    assert [line["reason"] for line in lines if line["type"] == "not replayable"] == [
        "a broker verifying a transaction with its coordinator (AddPartitionsToTxn v4+): the target does its own",
        "the cluster's own traffic (WRITE_TXN_MARKERS): the target sends its own"]
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["divergences"] == len(divergences) > 0
    assert summary["uncompared"] == {"the captured broker was not ready": 9}


def test_the_command_line_says_what_it_cannot_do(tmp_path):
    missing = kafkaproto("replay", tmp_path / "nope.pcap", "--bootstrap-server", "127.0.0.1:9", cwd=tmp_path)
    assert missing.returncode == 2 and "nope.pcap" in missing.stderr and "Traceback" not in missing.stderr
    bad = kafkaproto("replay", CAPTURES["kafkajs"], "--bootstrap-server", "nowhere", cwd=tmp_path)
    assert bad.returncode == 2 and "host:port" in bad.stderr
    speed = kafkaproto("replay", CAPTURES["kafkajs"], "--bootstrap-server", "127.0.0.1:9", "--speed", "0",
                       cwd=tmp_path)
    assert speed.returncode == 2 and "--speed" in speed.stderr


def test_a_broker_that_is_not_there(tmp_path):
    """Nothing listens: the replay could not run (exit status 2), and says which address it could not reach."""
    port = kafka_jvm.free_port()
    run = kafkaproto("replay", CAPTURES["kafka-python"], "--bootstrap-server", f"127.0.0.1:{port}",
                     "--speed", "max", "--no-setup", cwd=tmp_path)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith(f"kafkaproto: error: cannot reach the broker at 127.0.0.1:{port}"), run.stderr


def test_topics_the_capture_does_not_create_are_made_first(our_broker, tmp_path):
    """A capture that starts after its topic was made (the Java one without its CreateTopics and DeleteTopics):
    the topic is created first, with the partitions the capture shows, and the session replays as it was; without
    setting up, the target lacks the topic and the answers say so."""
    exchanges = [ex for ex in read_capture(CAPTURES["java-4.3.1"]) if ex.api_name not in ("CreateTopics",
                                                                                           "DeleteTopics")]
    plan = Plan.of(exchanges)
    assert {name: (t.partitions, t.replication_factor) for name, t in plan.topics.items()} == {"java-topic": (2, 1)}
    report = compare_with_capture(plan, asyncio.run(replay(plan, our_broker.bootstrap_servers, speed=None)))
    assert report.ok, described(report)
    assert report.notes == ["target: created java-topic before the replay"]
    with Broker({**kafka_jvm.GROUP_SETTINGS, "auto.create.topics.enable": "false"}) as empty:
        bare = compare_with_capture(plan, asyncio.run(replay(plan, empty.bootstrap_servers, speed=None,
                                                                 setup=False)))
    assert not bare.ok and any("error_code" in d.path for d in bare.divergences)


# ---- sessions recorded here, through a proxy (tests/recording_proxy.py) ------------------------------------------

def record_session(overrides, client):
    """A pcap of client(bootstrap) against a fresh broker with overrides, recorded through a proxy the broker
    advertises; (the pcap bytes, the port of the listener the client used)."""
    protocol, port = overrides["listeners"].split(":")[0], kafka_jvm.free_port()
    with RecordingProxy() as proxy:
        proxy.upstream = ("127.0.0.1", port)
        with Broker({**kafka_jvm.GROUP_SETTINGS, **overrides, "listeners": f"{protocol}://127.0.0.1:{port}",
                     "advertised.listeners": f"{protocol}://127.0.0.1:{proxy.port}"}):
            client(f"127.0.0.1:{proxy.port}")
            time.sleep(0.5)  # the last answers through the proxy
        return proxy.pcap(), port


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_a_sasl_session(mechanism):
    """SASL/PLAIN through SaslAuthenticate replays with the captured credentials; SCRAM cannot (its proof answers
    the captured broker's nonce), and the plan says so."""
    security = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism, "sasl_plain_username": "bob",
                "sasl_plain_password": "b0b"}
    data, port = record_session(SASL_OVERRIDES, lambda bootstrap: kafka_python_round_trip(bootstrap, **security))
    plan = Plan.of(read_capture(io.BytesIO(data), ports=[port]))
    if mechanism != "PLAIN":
        assert plan.not_replayable and all("SCRAM" in reason and "nonce" in reason
                                           for _, _, reason in plan.not_replayable)
        return
    assert not plan.not_replayable and any(s.exchange.api_name == "SaslAuthenticate" for s in plan.steps)
    with Broker({**kafka_jvm.GROUP_SETTINGS, **SASL_OVERRIDES}) as target:
        report = compare_with_capture(plan, asyncio.run(replay(plan, target.bootstrap_servers, speed=None)))
    assert report.ok, described(report)
    assert report.compared["SaslAuthenticate"] >= 2 and report.compared["Fetch"] >= 1


def test_replaying_to_a_tls_listener(certificates, tmp_path):  # noqa: F811 - the imported fixture
    """A plaintext capture replayed to a broker's TLS listener (--tls-ca): the same answers."""
    overrides = {"listeners": "SSL://127.0.0.1:0", "listener.security.protocol.map": "SSL:SSL",
                 "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certificates / "keystore.pem"),
                 "auto.create.topics.enable": "false", **kafka_jvm.GROUP_SETTINGS}
    with Broker(overrides) as target:
        run = kafkaproto("replay", CAPTURES["kafka-python"], "--bootstrap-server", target.bootstrap_servers,
                         "--tls-ca", certificates / "ca.pem", "--speed", "max", cwd=tmp_path)
        assert run.returncode == 0, run.stdout + run.stderr
        plain = kafkaproto("replay", CAPTURES["kafka-python"], "--bootstrap-server", target.bootstrap_servers,
                           "--speed", "max", "--answer-timeout", "2", cwd=tmp_path)
    assert plain.returncode == 1  # without --tls the listener reads the requests as a TLS handshake that fails
