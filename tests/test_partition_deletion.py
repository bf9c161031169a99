"""Partition deletion (examples/partition-deletion) in the broker: the proposal's semantics through the codecs
and handlers, the metadata log, restarts; with the extension built by tests/extension_build.py."""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kafka_jvm
from kafkaproto import errors, registry
from kafkaproto.broker import Broker, BrokerConfig
from kafkaproto.broker.config import ConfigError
from kafkaproto.broker.state.cluster import METADATA_DIR
from kafkaproto.broker.state.log import LogError
from kafkaproto.cli.admin import Client
from kafkaproto.messages import ApiVersionsRequest, MetadataRequest, MetadataResponse
from kafkaproto.metadata import decode_record
from kafkaproto.records import iter_batches

from test_broker_handlers import batch, call, create, fetch, make_state, produce

# The broker, the command line and captures over an extension: the same code over either codec implementation
# (conftest.py: the pure-Python pass).
pytestmark = pytest.mark.above_the_codecs

DELAY_MS = 60_000


@pytest.fixture
def state(extension, tmp_path):
    state = make_state(tmp_path, **{"delete.topic.partition.enable": "true"})
    yield state
    state.close()


def delete(state, topic, partitions, delay_ms=DELAY_MS):
    request = registry.api("DeletePartitions").request
    body = request(delete_partitions_delay_ms=delay_ms,
                   topics=[request.DeletePartitionsTopic(name=topic, partitions=partitions)])
    return call(state, body, 0)


def result(response):
    (topic,) = response.responses
    return [(p.partition_index, p.status_code, errors.by_code(p.error_code).name) for p in topic.partitions]


def modes(state, topic, ask=True, version=12):
    request = registry.api("Metadata").request
    body = request(topics=[request.MetadataRequestTopic(name=topic)], include_partition_modes=ask)
    response = call(state, body, version)
    return [(p.partition_index, p.mode) for p in response.topics[0].partitions]


def metadata_records(state):
    path = os.path.join(state.config.log_dir, METADATA_DIR)
    out = []
    for name in sorted(os.listdir(path)):
        if name.endswith(".log"):
            with open(os.path.join(path, name), "rb") as f:
                for b in iter_batches(f.read()):
                    out += [decode_record(r.value)[0] for r in b]
    return out


def test_delete_the_highest_partitions_read_only_then_gone(state, tmp_path):
    create(state, "orders", partitions=4)
    assert produce(state, batch(b"kept"), topic="orders", partition=3).error_code == 0
    assert result(delete(state, "orders", [2, 3])) == [(2, 1, "NONE"), (3, 1, "NONE")]
    # ReadOnly: no more produce (the proposal's LEADER_NOT_AVAILABLE), fetch still works.
    refused = produce(state, batch(b"late"), topic="orders", partition=3)
    assert errors.by_code(refused.error_code) is errors.LEADER_NOT_AVAILABLE
    assert produce(state, batch(b"fine"), topic="orders", partition=1).error_code == 0
    read = fetch(state, topic="orders", partition=3).responses[0].partitions[0]
    assert read.error_code == 0 and [r.value for b in iter_batches(read.records) for r in b] == [b"kept"]
    assert modes(state, "orders") == [(0, 0), (1, 0), (2, 1), (3, 1)]
    # The delay passes: None, data renamed away, the count shrinks.
    assert not state.cluster.finish_partition_deletions(state.now_ms())  # not yet
    assert state.cluster.finish_partition_deletions(state.now_ms() + DELAY_MS + 1)
    assert modes(state, "orders") == [(0, 0), (1, 0)]
    assert {"orders-0", "orders-1"} <= set(os.listdir(tmp_path)) and "orders-3" not in os.listdir(tmp_path)
    assert len([d for d in os.listdir(tmp_path) if d.startswith("orders-") and d.endswith("-delete")]) == 2
    gone = fetch(state, topic="orders", partition=3).responses[0].partitions[0]
    assert errors.by_code(gone.error_code) is errors.UNKNOWN_TOPIC_OR_PARTITION
    # The metadata log holds the transitions as the extension's records.
    kinds = [(type(r).__name__, getattr(r, "mode", None)) for r in metadata_records(state)]
    assert ("DeleteTopicPartitionsRecord", None) in kinds
    assert kinds.count(("PartitionRecord", 1)) == 2 and kinds.count(("PartitionRecord", -1)) == 2
    deletion = next(r for r in metadata_records(state) if type(r).__name__ == "DeleteTopicPartitionsRecord")
    assert deletion.delete_partitions == 2
    assert deletion.delete_partitions_delay_timestamp - deletion.create_timestamp == DELAY_MS


def test_no_partitions_are_added_while_some_are_being_deleted(state):
    from kafkaproto.messages import CreatePartitionsRequest

    create(state, "t", partitions=3)
    delete(state, "t", [2])
    body = CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(name="t", count=5)],
                                   timeout_ms=1000)
    result = call(state, body, 3).results[0]
    assert errors.by_code(result.error_code) is errors.INVALID_PARTITIONS and "being deleted" in result.error_message
    assert len(state.cluster.topics["t"].partitions) == 3


def test_a_delay_of_zero_deletes_at_once(state):
    create(state, "now", partitions=3)
    assert result(delete(state, "now", [2], delay_ms=0)) == [(2, -1, "NONE")]
    assert modes(state, "now") == [(0, 0), (1, 0)]


@pytest.mark.parametrize("partitions, error", [
    ([1], "INVALID_PARTITIONS"),  # not the highest
    ([0, 1, 2, 3], "INVALID_PARTITIONS"),  # none would stay
    ([3, 3], "INVALID_REQUEST"),
    ([4], "UNKNOWN_TOPIC_OR_PARTITION"),
])
def test_requests_the_proposal_does_not_allow(state, partitions, error):
    create(state, "t4", partitions=4)
    answers = result(delete(state, "t4", partitions))
    assert {e for _, _, e in answers} == {error}
    assert modes(state, "t4") == [(i, 0) for i in range(4)]  # nothing changed


def test_more_partitions_join_those_being_deleted(state):
    create(state, "t", partitions=4)
    delete(state, "t", [3])
    assert result(delete(state, "t", [2])) == [(2, 1, "NONE")]  # with 3 already going, 2 is the highest left
    assert result(delete(state, "t", [3])) == [(3, 1, "NONE")]  # asked again: already ReadOnly
    assert modes(state, "t") == [(0, 0), (1, 0), (2, 1), (3, 1)]


def test_clients_that_do_not_ask_see_exactly_what_they_saw_before(state):
    create(state, "t", partitions=3)
    delete(state, "t", [2])
    for version in (1, 9, 12, 13):
        body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")])
        response = call(state, body, version)
        wire = response.encode(version)
        plain = MetadataResponse.decode(wire, version)  # kafkaproto's own class: no unknown tags in it
        assert all(not p.unknown_tagged_fields for t in plain.topics for p in t.partitions)
        assert [p.partition_index for p in plain.topics[0].partitions] == [0, 1, 2]
    assert modes(state, "t", ask=False) == [(0, 0), (1, 0), (2, 0)]  # mode left at its default: not written


def test_the_state_survives_a_restart(extension, tmp_path):
    config = {"delete.topic.partition.enable": "true"}
    state = make_state(tmp_path, **config)
    create(state, "t", partitions=4)
    delete(state, "t", [3])
    delete(state, "t", [2], delay_ms=10 * DELAY_MS)
    state.cluster.finish_partition_deletions(state.now_ms() + DELAY_MS + 1)  # 3 goes, 2 stays ReadOnly
    state.close()
    state = make_state(tmp_path, **config)
    try:
        assert modes(state, "t") == [(0, 0), (1, 0), (2, 1)]
        assert errors.by_code(produce(state, batch(b"x"), topic="t", partition=2).error_code) \
            is errors.LEADER_NOT_AVAILABLE
        assert state.cluster.finish_partition_deletions(state.now_ms() + 10 * DELAY_MS + 1)
        assert modes(state, "t") == [(0, 0), (1, 0)]
    finally:
        state.close()


def test_only_a_broker_that_enables_it_serves_it(extension, tmp_path):
    plain = make_state(tmp_path / "plain")
    enabled = make_state(tmp_path / "enabled", **{"delete.topic.partition.enable": "true"})
    try:
        ask = ApiVersionsRequest(client_software_name="t", client_software_version="1")
        tables = [{k.api_key for k in call(s, ask, 3).api_keys} for s in (plain, enabled)]
        assert 10000 not in tables[0] and 10000 in tables[1]
        create(plain, "t", partitions=2)
        from kafkaproto.broker.dispatch import NotHandled
        with pytest.raises(NotHandled):
            delete(plain, "t", [1])
    finally:
        plain.close()
        enabled.close()


def test_without_the_extension_the_broker_says_what_is_missing(without_extensions, tmp_path):
    with pytest.raises(ConfigError, match="needs the partition_deletion extension"):
        make_state(tmp_path, **{"delete.topic.partition.enable": "true"})
    with pytest.raises(ConfigError, match="kafkaproto.extensions: no kafkaproto extension 'nope'"):
        make_state(tmp_path, **{"kafkaproto.extensions": "nope"})


def test_the_broker_loads_the_extensions_its_configuration_names(built_example, without_extensions, monkeypatch,
                                                                  tmp_path):
    monkeypatch.syspath_prepend(str(built_example.site))
    state = make_state(tmp_path, **{"kafkaproto.extensions": "partition_deletion",
                                    "delete.topic.partition.enable": "true"})
    try:
        assert registry.extension_of("DeletePartitionsRequest") == "partition_deletion"
        create(state, "t", partitions=2)
        assert result(delete(state, "t", [1])) == [(1, 1, "NONE")]
    finally:
        state.close()


def test_a_log_written_with_the_extension_needs_it_to_start(built_example, extension, tmp_path):
    state = make_state(tmp_path, **{"delete.topic.partition.enable": "true"})
    create(state, "t", partitions=2)
    delete(state, "t", [1])
    state.close()
    registry.unregister(extension)
    try:
        with pytest.raises(LogError, match="unknown metadata record type 10000.*load that extension"):
            make_state(tmp_path)
    finally:
        registry.register(extension)
    assert BrokerConfig({"log.dirs": str(tmp_path)})  # the configuration itself was fine


def test_partitions_go_from_the_top_down(state):
    create(state, "t", partitions=4)
    delete(state, "t", [3], delay_ms=10 * DELAY_MS)
    # 2 asked for later, at once: it waits for 3, so no partition is missing in the middle.
    assert result(delete(state, "t", [2], delay_ms=0)) == [(2, 1, "NONE")]
    assert modes(state, "t") == [(0, 0), (1, 0), (2, 1), (3, 1)]
    assert state.cluster.finish_partition_deletions(state.now_ms() + 10 * DELAY_MS + 1)
    assert modes(state, "t") == [(0, 0), (1, 0)]


# ---- the whole loop ------------------------------------------------------------------------------------------

def start_tcpdump(port, out):
    """tcpdump writing the broker's traffic on the loopback to out, or (None, why) when it cannot capture here."""
    exe = shutil.which("tcpdump")
    if exe is None:
        return None, "tcpdump is not installed"
    # --immediate-mode: packets reach the file as they come, not in blocks up to a second late that a stop loses
    dump = subprocess.Popen([exe, "-i", "lo", "-s", "0", "-U", "--immediate-mode", "-w", str(out), f"tcp port {port}"],
                            stderr=subprocess.PIPE, text=True)
    first = dump.stderr.readline()
    if "listening on" not in first:  # e.g. no permission to capture
        dump.kill()
        return None, f"tcpdump cannot capture here: {first.strip()}"
    return dump, None


def stop_tcpdump(dump):
    time.sleep(0.5)  # let the last packets reach the file
    dump.send_signal(signal.SIGINT)
    try:
        dump.wait(timeout=30)
    except subprocess.TimeoutExpired:
        dump.kill()


def console(*args, cwd, env=None):
    """The kafkaproto console command as the README gives it, run outside the checkout."""
    command = [str(Path(sys.executable).parent / "kafkaproto"), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def readme_commands():
    """The shell commands of the README's partition-deletion walkthrough (continued lines joined), as argv lists."""
    from test_readme import EXTENDING, sections

    heading = "The partition-deletion example, end to end"
    found = sections()  # by "## " sections, or by "### " ones too
    walkthrough = found[heading] if heading in found else found[EXTENDING].split(f"### {heading}")[1]
    block = re.search(r"```sh\n(.*?)```", walkthrough, re.S).group(1)
    return [shlex.split(line) for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def produce_to(kafka, bootstrap, partitions, value, count):
    """count records (value % i) to each of orders' first partitions, with kafka-python."""
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for partition in range(partitions):
        for i in range(count):
            producer.send("orders", value % i, partition=partition)
    producer.flush()
    producer.close()


def test_partitions_go_at_the_delay_asked_for(built_example, tmp_path, monkeypatch):
    """The README's broker and its delete-partitions command, with their own settings and nothing else: the
    partitions are gone about --delay-ms after the command, not at the next check of a five-minute interval."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(built_example.site),
                                                                  os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("KAFKAPROTO_EXTENSIONS", raising=False)
    start, delete_command = readme_commands()[:2]
    overrides = dict(pair.split("=", 1) for pair in start[3::2])
    delay = int(delete_command[delete_command.index("--delay-ms") + 1]) / 1000
    with Broker(overrides, log_dir=tmp_path / "data", subprocess=True) as broker:
        bootstrap = broker.bootstrap_servers
        from kafkaproto.messages import CreateTopicsRequest

        with Client(bootstrap) as client:
            created = client.call(CreateTopicsRequest(timeout_ms=10000, topics=[CreateTopicsRequest.CreatableTopic(
                name="orders", num_partitions=4, replication_factor=1)]))
            assert created.topics[0].error_code == 0
        before = time.monotonic()  # the request is made after this...
        done = console(*[bootstrap if word == "127.0.0.1:9092" else word for word in delete_command[1:]],
                       cwd=tmp_path)
        answered = time.monotonic()  # ...and answered before this
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == ["orders 2: ReadOnly", "orders 3: ReadOnly"]
        counts = []
        while time.monotonic() < answered + delay + 5:  # bounded: the delay and a few seconds
            with Client(bootstrap) as client:
                count = len(client.partitions("orders"))
            counts.append((time.monotonic(), count))
            if count == 2:
                break
            time.sleep(0.1)
    seen, count = counts[-1]
    assert count == 2, f"partitions 2 and 3 were still there {seen - answered:.1f} s after the answer to a request " \
                       f"with a delay of {delay:.1f} s"
    assert seen >= before + delay, f"gone {seen - before:.1f} s after the request, before its delay of {delay:.1f} s"
    assert all(count == 4 for at, count in counts if at < before + delay)  # ReadOnly, and there, until then


def test_the_whole_loop(built_example, extension, tmp_path, monkeypatch):
    """The extension built from the specs; a broker with it; the command line deletes partitions; the metadata log,
    Metadata and a capture of the session show the new state, while Apache Kafka's Java client and kafka-python
    keep producing to and consuming the partitions that stay."""
    kafka = pytest.importorskip("kafka")
    try:
        java = kafka_jvm.classpath(kafka_jvm.KAFKA_VERSIONS[-1],
                                   kafka_jvm.compiled(kafka_jvm.KAFKA_VERSIONS[-1], "Clients"))
    except kafka_jvm.KafkaUnavailable as e:
        kafka_jvm.unavailable(str(e))
    # Where the extension is installed, for the broker and commands this test starts.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(built_example.site),
                                                                  os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("KAFKAPROTO_EXTENSIONS", raising=False)  # what the README's commands name is enough
    # The README's commands, run here against this test's broker and capture.
    start, delete_command, list_command, capture_with, capture_without = readme_commands()
    assert start[:2] == ["kafkaproto", "broker"] and start[2::2] == ["--override"] * len(start[3::2])
    overrides = dict(pair.split("=", 1) for pair in start[3::2])  # the README's settings and no others
    broker = Broker(overrides, log_dir=tmp_path / "data", subprocess=True).start()
    bootstrap = broker.bootstrap_servers

    # The README's delay is 4 s; the checks made while the partitions are ReadOnly (three commands and a read) may
    # take longer than that on a busy machine, so this run gives them longer. test_partitions_go_at_the_delay_asked_for
    # runs the README's own delay.
    delay_ms = "20000"
    delete_command[delete_command.index("--delay-ms") + 1] = delay_ms

    def readme(command):
        assert command[0] == "kafkaproto"
        return [bootstrap if word == "127.0.0.1:9092" else tmp_path / word if word == "session.pcap" else word
                for word in command[1:]]

    dump, no_capture = start_tcpdump(broker.port, tmp_path / "session.pcap")
    try:
        admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([kafka.admin.NewTopic("orders", 4, 1)])
        admin.close()
        produce_to(kafka, bootstrap, 4, b"before-%d", 10)

        done = console(*readme(delete_command), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == ["orders 2: ReadOnly", "orders 3: ReadOnly"]
        shown = console(*readme(list_command), cwd=tmp_path)
        unaware = console("admin", "partitions", "--bootstrap-server", bootstrap, "--topic", "orders", cwd=tmp_path)
        assert unaware.stdout.splitlines() == [f"orders {i}: leader 1" for i in range(4)]  # no modes without it
        assert shown.stdout.splitlines() == ["orders 0: leader 1, ReadWrite", "orders 1: leader 1, ReadWrite",
                                             "orders 2: leader 1, ReadOnly", "orders 3: leader 1, ReadOnly"]

        # ReadOnly: still readable.
        reader = kafka.KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
        reader.assign([kafka.TopicPartition("orders", 3)])
        read, deadline = [], time.monotonic() + 20
        while len(read) < 10 and time.monotonic() < deadline:
            for messages in reader.poll(timeout_ms=200).values():
                read += [m.value for m in messages]
        reader.close()
        assert read == [b"before-%d" % i for i in range(10)]

        # The Java producer writes to partitions 0 and 1 meanwhile, undisturbed.
        run = subprocess.run(["java", "-cp", java, "Clients", bootstrap, "produce", "orders"], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-3000:]

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with Client(bootstrap) as client:
                partitions = client.partitions("orders")
            if len(partitions) == 2:
                break
            time.sleep(0.2)
        assert partitions == [(0, 1, 0), (1, 1, 0)]

        produce_to(kafka, bootstrap, 2, b"after-%d", 5)
        # A kafka-python group and a Java group read everything the two partitions hold.
        group = kafka.KafkaConsumer("orders", bootstrap_servers=bootstrap, group_id="readers",
                                    auto_offset_reset="earliest")
        got, deadline = {}, time.monotonic() + 30
        while sum(map(len, got.values())) < 60 and time.monotonic() < deadline:
            for tp, messages in group.poll(timeout_ms=200).items():
                got.setdefault(tp.partition, []).extend(m.value for m in messages)
        group.close()
        assert sorted(got) == [0, 1]
        for partition in (0, 1):
            values = got[partition]
            assert values[:10] == [b"before-%d" % i for i in range(10)] and values[-5:] == [b"after-%d" % i
                                                                                            for i in range(5)]
            assert len(values) == 30  # and the Java producer's 15
        run = subprocess.run(["java", "-cp", java, "Clients", bootstrap, "member", "orders"], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-3000:]
        seen = {tuple(map(int, line.split())) for line in run.stdout.splitlines()}
        assert seen == {(p, o) for p in (0, 1) for o in range(30)}
    finally:
        if dump is not None:
            stop_tcpdump(dump)
        broker.stop()

    # The metadata log holds the new records.
    records = []
    metadata_dir = tmp_path / "data" / METADATA_DIR
    for segment in sorted(metadata_dir.glob("*.log")):
        records += [decode_record(r.value)[0] for b in iter_batches(segment.read_bytes()) for r in b]
    deletion = [r for r in records if type(r).__name__ == "DeleteTopicPartitionsRecord"]
    assert [d.delete_partitions for d in deletion] == [2]
    assert deletion[0].delete_partitions_delay_timestamp - deletion[0].create_timestamp == int(delay_ms)
    assert [(r.partition_id, r.mode) for r in records if type(r).__name__ == "PartitionRecord" and r.mode] == [
        (2, 1), (3, 1), (3, -1), (2, -1)]

    if no_capture:
        if os.environ.get("KAFKAPROTO_REQUIRE_TSHARK") == "1":
            pytest.fail(no_capture)
        pytest.skip(f"the capture part: {no_capture}")
    # With the extension, the capture shows DeletePartitions and the modes...
    rows = [json.loads(line) for line in console(*readme(capture_with), cwd=tmp_path).stdout.splitlines()]
    (deleting,) = [r for r in rows if r["api_key"] == 10000]
    assert deleting["status"] == "ok" and deleting["api_name"] == "DeletePartitions"
    assert deleting["request"]["topics"] == [{"name": "orders", "partitions": [2, 3]}]
    assert [p["status_code"] for p in deleting["response"]["responses"][0]["partitions"]] == [1, 1]
    asked = [r for r in rows if r["api_name"] == "Metadata" and r["client_id"] == "kafkaproto-admin"
             and r["request"]["include_partition_modes"]]
    assert [0, 0, 1, 1] in [[p.get("mode", 0) for p in r["response"]["topics"][0]["partitions"]] for r in asked]
    # ...and without it, the same bytes show the DeletePartitions exchange as one it cannot read, and the modes
    # as unknown tags.
    plain = [json.loads(line) for line in console(*readme(capture_without), cwd=tmp_path).stdout.splitlines()]
    (unknown,) = [r for r in plain if r["api_key"] == 10000]
    assert unknown["status"] != "ok" and unknown["request"] is None and "10000" in unknown["error"]
    asked = [r for r in plain if r["api_name"] == "Metadata" and r["client_id"] == "kafkaproto-admin"
             and r["request"].get("unknown_tagged_fields") == {"0": "AQ=="}]  # include_partition_modes=true
    assert len(asked) == len([r for r in rows if r["api_name"] == "Metadata" and r["client_id"] == "kafkaproto-admin"
                              and r["request"]["include_partition_modes"]])
    tags = [[p.get("unknown_tagged_fields") for p in r["response"]["topics"][0]["partitions"]] for r in asked]
    assert [None, None, {"0": "AQ=="}, {"0": "AQ=="}] in tags  # mode 1, byte for byte
    assert len(plain) == len(rows)
