"""Kafka's own command-line tools (kafka-tools, the newest pinned version) against Apache Kafka and against this
broker: the same commands, and what they print compared once what each broker makes up (topic IDs, where it keeps
its files, its file system's sizes) is put in words both share. A tool that works against Kafka and fails here,
or prints otherwise, fails its test."""

import json
import re
import select
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from kafkaproto import errors, records
from kafkaproto.broker import Broker
from kafkaproto.broker.config import OWN_SETTINGS
from kafkaproto.messages import (AddPartitionsToTxnRequest, FindCoordinatorRequest, InitProducerIdRequest,
                                 OffsetCommitRequest, ProduceRequest)

import kafka_jvm
from test_broker_differential_configs import GIVEN_DIFFERENTLY, ON_PURPOSE
from test_kafka_broker import RawClient

# Under pytest -n these tests share the worker that runs the Kafka brokers (test_broker_differential.py).
pytestmark = [pytest.mark.xdist_group("kafka-broker"), pytest.mark.above_the_codecs]

VERSION = kafka_jvm.KAFKA_VERSIONS[-1]
TOOLS = {
    "topics": "org.apache.kafka.tools.TopicCommand",
    "delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "transactions": "org.apache.kafka.tools.TransactionsCommand",
    "configs": "kafka.admin.ConfigCommand",
    "acls": "org.apache.kafka.tools.AclCommand",
    "features": "org.apache.kafka.tools.FeatureCommand",
    "metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
}
TOPIC_ID = re.compile(r"\b[A-Za-z0-9_-]{22}\b")
# What a broker answers about a topic it is still setting up: asked again.
NOT_YET = {errors.UNKNOWN_TOPIC_OR_PARTITION.code, errors.LEADER_NOT_AVAILABLE.code,
           errors.NOT_LEADER_OR_FOLLOWER.code}


class Ports(tuple):
    """(Kafka's port, this broker's port), with where each keeps its data (``log_dirs``) and the JVM that runs the
    tools against each (``tools``), in the same order."""


class Tools:
    """A JVM that runs Kafka's tools one command after another (tests/kafka/Tools.java): what a command prints and
    the code it exits with are those of a JVM of its own, less the start of one."""

    TIMEOUT = 180  # seconds for a command

    def __init__(self, log):
        self.log = log  # the JVM's own standard error, shown if it fails
        self.process = None

    def send(self, main, *args):
        """Start main(args) (a class with a main) once the commands before it are done; receive() its answer."""
        if self.process is None or self.process.poll() is not None:
            java = shutil.which("java") or kafka_jvm.unavailable("java is not installed")
            with open(self.log, "ab") as log:
                self.process = subprocess.Popen(
                    [java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", kafka_jvm.program(VERSION, "Tools"),
                     "Tools"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
        self.process.stdin.write(json.dumps({"main": main, "args": list(args)}).encode() + b"\n")
        self.process.stdin.flush()

    def receive(self, what):
        """(exit code, standard output, standard error) of the command sent last, or an AssertionError saying what
        did not answer (the JVM is then stopped: its late answer cannot be taken for the next command's)."""
        ready, _, _ = select.select([self.process.stdout], [], [], self.TIMEOUT)
        line = self.process.stdout.readline() if ready else b""
        if not line:
            self.close()
            tail = self.log.read_text(errors="replace")[-3000:]
            raise AssertionError(f"{what}: no answer in {self.TIMEOUT} s (exit {self.process.poll()}); the tools' "
                                 f"JVM's standard error ends:\n{tail}")
        answer = json.loads(line)
        return answer["code"], answer["out"], answer["err"]

    def close(self):
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()  # the end of its commands ends it
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="module")
def brokers(kafka_brokers, tmp_path_factory):
    """(Kafka's port, this broker's port): this broker with the test Kafka's settings (kafka_jvm.LIKE_KAFKA)."""
    kafka = kafka_brokers(VERSION)
    logs = tmp_path_factory.mktemp("tools")
    with Broker(kafka_jvm.LIKE_KAFKA) as ours:
        ports = Ports((kafka.port, ours.port))
        ports.log_dirs = (Path(kafka.workdir) / "data", Path(ours.log_dir))
        ports.tools = (Tools(logs / "kafka.log"), Tools(logs / "ours.log"))
        try:
            yield ports
        finally:
            for tools in ports.tools:
                tools.close()


def on_both(brokers, main, args_of, code=0):
    """Kafka's main class run against both brokers at once, with args_of(port): what each printed on standard
    output (Kafka's, this broker's); each must exit with code."""
    what = [f"{main.rpartition('.')[2]} {' '.join(args_of(port))}" for port in brokers]
    for tools, port in zip(brokers.tools, brokers):
        tools.send(main, *args_of(port))
    answers, failure = [], None
    for tools, command in zip(brokers.tools, what):  # every answer read before a failure is raised
        try:
            answers.append(tools.receive(command))
        except AssertionError as e:
            failure = failure or e
    if failure:
        raise failure
    for command, (exit_code, out, err) in zip(what, answers):
        assert exit_code == code, f"{command} exited {exit_code}:\n{out}\n{err}"
    return [out for _, out, _ in answers]


def both(brokers, name, *args, normalise=lambda text: text, code=0, settle=False):
    """Run a tool against both brokers and assert they print the same (after normalise) and exit with code; what
    they printed. settle: a command that only reads, run again while the two differ (for 30 s at most), where it
    follows a change that Kafka's broker takes from its controller a moment after the tool that made it is done."""
    deadline = time.monotonic() + 30
    while True:
        kafka, ours = (normalise(out) for out in on_both(
            brokers, TOOLS[name], lambda port: ["--bootstrap-server", f"127.0.0.1:{port}", *args], code=code))
        if kafka == ours or not settle or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert kafka == ours, f"kafka-{name} {' '.join(args)}:\n--- Kafka\n{kafka}\n--- this broker\n{ours}"
    return ours


def produce(port, topic, partition, *values, producer=None):
    """Produce values; producer: (transactional id, producer id, epoch) of an open transaction to write in."""
    transactional_id, producer_id, epoch = producer or (None, -1, -1)
    builder = records.RecordBatchBuilder(producer_id=producer_id, producer_epoch=epoch,
                                        base_sequence=0 if producer else -1, transactional=bool(producer))
    for value in values:
        builder.append(b"k", value, timestamp=1_700_000_000_000)
    client = RawClient(port)
    try:
        body = ProduceRequest(transactional_id=transactional_id, acks=-1, timeout_ms=5000, topic_data=[
            ProduceRequest.TopicProduceData(
            name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition,
                                                                            records=builder.build())])])
        # A topic a tool has just made may not have its leader known to the broker yet (Kafka's takes a moment).
        answer = asked(client, body, 9, lambda r: r.responses[0].partition_responses[0].error_code not in NOT_YET,
                       f"Produce to {topic}-{partition}").responses[0].partition_responses[0]
        assert answer.error_code == 0, answer
    finally:
        client.close()


def commit(port, group, topic, offsets):
    """Commit {partition: offset} for a group with no members (as a standalone consumer does)."""
    client = RawClient(port)
    try:
        body = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=o)
                for p, o in offsets.items()])])
        for _ in range(100):  # Kafka's group coordinator may still be loading
            client.call(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4)
            answer = client.call(body, 8).body
            codes = {p.error_code for t in answer.topics for p in t.partitions}
            if codes == {0}:
                return
            time.sleep(0.2)
        raise AssertionError(f"OffsetCommit of {group}: {answer}")
    finally:
        client.close()


def log_dirs_json(text):
    """LogDirsCommand's JSON with each broker's own directory and file system sizes left out."""
    line = next(line for line in text.splitlines() if line.startswith("{"))
    found = json.loads(line)
    for broker in found["brokers"]:
        broker["broker"] = "broker"
        for log_dir in broker["logDirs"]:
            log_dir["logDir"] = "<dir>"
            for key in ("totalBytes", "usableBytes"):
                log_dir.pop(key, None)
            log_dir["partitions"].sort(key=lambda p: p["partition"])
    return found


def test_admin_tools_against_kafka_and_this_broker(brokers, tmp_path):
    topic = f"tools-{uuid.uuid4().hex[:8]}"
    both(brokers, "topics", "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    # Not yet compared: the configs TopicCommand lists (Kafka 4.x keeps min.insync.replicas as a cluster-wide dynamic
    # config once eligible leader replicas are on, and lists it; this broker does not keep it so yet).
    both(brokers, "topics", "--describe", "--topic", topic, settle=True,
         normalise=lambda text: re.sub(r"Configs: [^\t\n]*", "Configs: ...", TOPIC_ID.sub("<id>", text)))
    for port in brokers:
        produce(port, topic, 0, b"a", b"b", b"c")
        produce(port, topic, 1, b"d")
    # kafka-delete-records, then the offsets each partition now starts at
    plan = tmp_path / "delete.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "offset": 2},
                                                              {"topic": topic, "partition": 1, "offset": -1}]}))
    both(brokers, "delete-records", "--offset-json-file", str(plan),
         normalise=lambda text: "\n".join(sorted(text.splitlines())))
    assert both(brokers, "get-offsets", "--topic", topic, "--time", "-2").split() == [f"{topic}:0:2", f"{topic}:1:1"]
    both(brokers, "log-dirs", "--describe", "--topic-list", topic, normalise=log_dirs_json, settle=True)
    both(brokers, "leader-election", "--election-type", "preferred", "--topic", topic, "--partition", "0")
    # kafka-consumer-groups: one partition's offsets deleted, then the group described
    group = f"tools-group-{uuid.uuid4().hex[:8]}"
    for port in brokers:
        commit(port, group, topic, {0: 3, 1: 1})

    def table(text):
        return "\n".join(sorted(" ".join(line.split()) for line in text.splitlines() if line.strip()))

    deleted = both(brokers, "consumer-groups", "--delete-offsets", "--group", group, "--topic", f"{topic}:0",
                   normalise=table)
    assert f"{topic} 0 Successful" in deleted
    after = both(brokers, "consumer-groups", "--describe", "--group", group, normalise=table)
    assert f"{group} {topic} 1 1 1 0" in after and f"{topic} 0 " not in after


def open_transaction(port, transactional_id, topic):
    """Begin a transaction that writes one record to partition 0 and is left open (as a producer that died would
    leave it); (producer id, epoch)."""
    client = RawClient(port)
    try:
        for _ in range(100):  # Kafka's transaction coordinator may still be loading
            found = client.call(FindCoordinatorRequest(key_type=1, coordinator_keys=[transactional_id]), 4).body
            init = client.call(InitProducerIdRequest(transactional_id=transactional_id,
                                                     transaction_timeout_ms=600_000), 4).body
            if found.coordinators[0].error_code == 0 and init.error_code == 0:
                break
            time.sleep(0.2)
        producer = (init.producer_id, init.producer_epoch)
        added = client.call(AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=transactional_id, v3_and_below_producer_id=producer[0],
            v3_and_below_producer_epoch=producer[1], v3_and_below_topics=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[0])]), 3).body
        assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0, added
    finally:
        client.close()
    produce(port, topic, 0, b"open", producer=(transactional_id, *producer))
    return producer


def test_transactions_tool(brokers):
    """kafka-transactions on a transaction left open: list, describe, describe-producers, find-hanging, abort."""
    topic = f"tools-txn-{uuid.uuid4().hex[:8]}"
    transactional_id = f"tools-txn-{uuid.uuid4().hex[:8]}"
    both(brokers, "topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")
    for port in brokers:
        open_transaction(port, transactional_id, topic)

    made_up = {"ProducerId": "<producer>", "CurrentTransactionStartTimeMs": "<time>",
               "TransactionDurationMs": "<duration>", "LastTimestamp": "<time>"}

    def ours_only(text, every_row=False):
        """The header and this test's rows (the Kafka broker serves other tests too), with the columns each broker
        makes up (producer ids, times) put in words."""
        header, *rows = [line.split() for line in text.splitlines() if line.strip()]
        kept = [row for row in rows if every_row or any(transactional_id in cell or topic in cell for cell in row)]
        return "\n".join(" ".join(made_up.get(name, cell) for name, cell in zip(header, row))
                         for row in [header, *kept])

    listed = both(brokers, "transactions", "list", normalise=ours_only)
    assert f"{transactional_id} " in listed and " Ongoing" in listed
    described = both(brokers, "transactions", "describe", "--transactional-id", transactional_id,
                     normalise=ours_only)
    assert f"{topic}-0" in described
    both(brokers, "transactions", "describe-producers", "--topic", topic, "--partition", "0",
         normalise=lambda text: ours_only(text, every_row=True))
    # younger than the tool's 15 minutes: not hanging yet, but every step of the search is asked of the broker
    hanging = both(brokers, "transactions", "find-hanging", "--topic", topic)
    assert hanging.startswith("Topic\tPartition") and topic not in hanging, hanging
    both(brokers, "transactions", "abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
    after = both(brokers, "transactions", "describe-producers", "--topic", topic, "--partition", "0",
                 normalise=lambda text: ours_only(text, every_row=True))
    assert after.split()[-1] == "None", after  # no transaction open on the partition any more


def test_configs_tool(brokers):
    """kafka-configs on a topic and on the broker: added, described with their synonyms, deleted."""
    topic = f"tools-cfg-{uuid.uuid4().hex[:8]}"
    both(brokers, "topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")
    on_topic = ("--entity-type", "topics", "--entity-name", topic)
    both(brokers, "configs", "--alter", *on_topic, "--add-config",
         "retention.ms=100000,cleanup.policy=[compact,delete]")
    # min.insync.replicas aside: Kafka 4 sets it cluster-wide once eligible leader replicas are on (KIP-966)
    both(brokers, "configs", "--describe", "--all", *on_topic, settle=True,
         normalise=lambda text: re.sub(r"\n *min\.insync\.replicas=.*", "", text))
    both(brokers, "configs", "--alter", *on_topic, "--delete-config", "retention.ms")
    on_broker = ("--entity-type", "brokers", "--entity-name", "1")
    try:
        both(brokers, "configs", "--alter", *on_broker, "--add-config", "log.cleaner.backoff.ms=20000")
        assert "log.cleaner.backoff.ms=20000" in both(brokers, "configs", "--describe", *on_broker, settle=True)
        both(brokers, "configs", "--alter", "--entity-type", "brokers", "--entity-default", "--add-config",
             "num.io.threads=4")
        # every key, as test_broker_differential_configs.py compares them, but those the brokers are given
        # differently or where this broker differs on purpose
        skipped = GIVEN_DIFFERENTLY | set(ON_PURPOSE) | {"log.cleaner.backoff.ms"}
        every = both(brokers, "configs", "--describe", "--all", *on_broker, settle=True,
                     normalise=lambda text: "\n".join(
                         line for line in text.splitlines() if line.strip().partition("=")[0] not in skipped
                         and line.strip().partition("=")[0] not in OWN_SETTINGS))
        assert "num.io.threads=4 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:num.io.threads=4" in every
        assert len(every.splitlines()) > 300
    finally:
        both(brokers, "configs", "--alter", *on_broker, "--delete-config", "log.cleaner.backoff.ms")
        both(brokers, "configs", "--alter", "--entity-type", "brokers", "--entity-default", "--delete-config",
             "num.io.threads")


def test_acls_tool(brokers):
    """kafka-acls: ACLs added for a producer and a consumer, listed by resource and by match, removed."""
    run = uuid.uuid4().hex[:8]
    topic, group = f"tools-acl-{run}", f"tools-acl-group-{run}"

    def lines(text):  # the tool lists a resource's ACLs in its authorizer's order
        return "\n".join(sorted(line.strip() for line in text.splitlines() if line.strip()))

    both(brokers, "acls", "--add", "--allow-principal", "User:alice", "--producer", "--topic", topic,
         normalise=lines)
    both(brokers, "acls", "--add", "--allow-principal", "User:bob", "--consumer", "--topic", topic, "--group", group,
         normalise=lines)
    both(brokers, "acls", "--add", "--deny-principal", "User:mallory", "--operation", "All", "--topic", "tools-acl-",
         "--resource-pattern-type", "prefixed", normalise=lines)
    listed = both(brokers, "acls", "--list", "--topic", topic, normalise=lines, settle=True)
    assert "principal=User:alice" in listed and "operation=WRITE" in listed
    both(brokers, "acls", "--list", "--topic", topic, "--resource-pattern-type", "match", normalise=lines,
         settle=True)
    both(brokers, "acls", "--remove", "--force", "--topic", topic, normalise=lines)
    both(brokers, "acls", "--remove", "--force", "--group", group, normalise=lines)
    both(brokers, "acls", "--remove", "--force", "--topic", "tools-acl-", "--resource-pattern-type", "prefixed",
         normalise=lines)


def test_features_and_metadata_quorum_tools(brokers):
    """kafka-features describe and a dry-run downgrade, kafka-metadata-quorum describe. Compared: the features
    this broker implements (Kafka has more: metadata.version, kraft.version and those of the protocols not
    served yet), and the quorum with what each broker makes up (ids, offsets, addresses, times) put in words."""
    def ours(text):
        kept = [line for line in text.splitlines() if "group.version" in line or "transaction.version" in line]
        return "\n".join(re.sub(r"\s+Epoch: \d+", "", line) for line in kept)

    described = both(brokers, "features", "describe", normalise=ours)
    assert "FinalizedVersionLevel: 2" in described
    both(brokers, "features", "downgrade", "--feature", "transaction.version=1", "--dry-run")
    refused = both(brokers, "features", "upgrade", "--feature", "group.version=9", "--dry-run", code=1)
    assert "only supports versions 0-1" in refused

    def quorum(text):
        text = re.sub(r"(ClusterId|HighWatermark|LeaderEpoch):\s+\S+", r"\1: <made up>", text)
        text = re.sub(r'"directoryId": "[^"]*"', '"directoryId": "<id>"', text)
        return re.sub(r'"endpoints": \[[^\]]*\]', '"endpoints": [<the controller>]', text)

    status = both(brokers, "metadata-quorum", "describe", "--status", normalise=quorum)
    assert "LeaderId:" in status


def test_configs_tool_for_client_quotas(brokers):
    """kafka-configs on users and client ids: quotas added, described, deleted."""
    user, client = f"tools-quota-{uuid.uuid4().hex[:8]}", f"tools-client-{uuid.uuid4().hex[:8]}"
    on_user = ("--entity-type", "users", "--entity-name", user)
    on_both = (*on_user, "--entity-type", "clients", "--entity-name", client)
    both(brokers, "configs", "--alter", *on_user, "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048")
    both(brokers, "configs", "--alter", *on_both, "--add-config", "request_percentage=50")
    shown = both(brokers, "configs", "--describe", *on_user, settle=True)
    assert "producer_byte_rate=1024.0" in shown
    both(brokers, "configs", "--describe", *on_both, settle=True)
    both(brokers, "configs", "--alter", *on_user, "--delete-config", "producer_byte_rate,consumer_byte_rate")
    both(brokers, "configs", "--alter", *on_both, "--delete-config", "request_percentage")


def test_share_groups_tool(brokers):
    """kafka-share-groups on a share group without members: its config set with kafka-configs, its offsets reset,
    listed, described (offsets, state, members), its offsets deleted and the group deleted."""
    topic = f"tools-share-{uuid.uuid4().hex[:8]}"
    group = f"tools-share-{uuid.uuid4().hex[:8]}"
    both(brokers, "topics", "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    for port in brokers:
        produce(port, topic, 0, b"a", b"b", b"c")
    on_group = ("--entity-type", "groups", "--entity-name", group)
    both(brokers, "configs", "--alter", *on_group, "--add-config", "share.auto.offset.reset=earliest")
    assert "share.auto.offset.reset=earliest" in both(brokers, "configs", "--describe", *on_group, settle=True)
    both(brokers, "share-groups", "--reset-offsets", "--group", group, "--topic", topic, "--to-latest", "--execute")
    listed = both(brokers, "share-groups", "--list", normalise=lambda text: "\n".join(
        line for line in text.splitlines() if group in line))  # Kafka's lists other tests' groups too
    assert listed == group
    described = both(brokers, "share-groups", "--describe", "--group", group)
    assert topic in described
    port = re.compile(r"127\.0\.0\.1:\d+")  # the coordinator's address
    both(brokers, "share-groups", "--describe", "--group", group, "--state",
         normalise=lambda text: port.sub("<coordinator>", text))
    both(brokers, "share-groups", "--describe", "--group", group, "--members")
    both(brokers, "share-groups", "--delete-offsets", "--group", group, "--topic", topic)
    both(brokers, "share-groups", "--delete", "--group", group)
    gone = both(brokers, "share-groups", "--describe", "--group", group)  # the tool says so, and exits 0
    assert "GroupIdNotFoundException" in gone, gone
    kafka, ours = share_state_records(brokers, group)
    assert kafka == ours, "ShareGroupStateMessageFormatter:\n--- Kafka\n" + "\n".join(kafka) + \
        "\n--- this broker\n" + "\n".join(ours)
    assert len(ours) >= 2, ours


def share_state_records(brokers, group):
    """kafka-console-consumer on __share_group_state (every partition, from the start) with Kafka's
    ShareGroupStateMessageFormatter, on both brokers at once: for each, the records of group's share partitions, in
    order of partition and offset within each, with what each broker makes up (topic ids, times) put in words."""
    texts = on_both(brokers, "org.apache.kafka.tools.consumer.ConsoleConsumer", lambda port: [
        "--bootstrap-server", f"127.0.0.1:{port}", "--topic", "__share_group_state", "--from-beginning",
        "--timeout-ms", "6000", "--formatter",
        "org.apache.kafka.tools.consumer.group.share.ShareGroupStateMessageFormatter"])
    return [share_group_records(text, group) for text in texts]


def share_group_records(text, group):
    found = {}
    for record in formatted(text):
        key = record["key"].get("data", {})
        if key.get("groupId") != group:
            continue
        key["topicId"] = "<topic>"
        for name in ("createTimestamp", "writeTimestamp"):
            if (record["value"] or {}).get("data", {}).get(name, -1) != -1:
                record["value"]["data"][name] = "<time>"
        found.setdefault(key["partition"], []).append(json.dumps(record, sort_keys=True))
    return [line for partition in sorted(found) for line in found[partition]]


def test_streams_groups_tool(brokers):
    """kafka-streams-groups on a streams group with one member and its tasks: listed, described (state, members,
    offsets), then, once the member has left, deleted."""
    from kafkaproto.messages import StreamsGroupHeartbeatRequest as H
    from test_kafka_broker import RawClient
    run = uuid.uuid4().hex[:8]
    topic, group, member = f"tools-streams-{run}", f"tools-streams-app-{run}", "tools-member-" + run
    both(brokers, "topics", "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    topology = H.Topology(epoch=0, subtopologies=[H.Subtopology(subtopology_id="0", source_topics=[topic])])
    clients = [RawClient(port) for port in brokers]

    def beat(epochs, **fields):
        """A heartbeat to each broker at once, at the member's epoch there."""
        answers = [c.call(H(group_id=group, member_id=member, member_epoch=epoch, endpoint_information_epoch=0,
                            **fields), 0).body for c, epoch in zip(clients, epochs)]
        assert [a.error_code for a in answers] == [0, 0], answers
        return answers

    # Joined on each broker once its coordinator of the group is ready (on a Kafka that has no __consumer_offsets
    # yet, FindCoordinator makes it; the partition then loads); then the heartbeats go to both at once.
    for client in clients:
        asked(client, FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4,
              lambda r: r.coordinators[0].error_code == 0, "FindCoordinator")
    joined = [asked(client, H(group_id=group, member_id=member, member_epoch=0, endpoint_information_epoch=0,
                              rebalance_timeout_ms=30000, topology=topology, process_id="process-1",
                              active_tasks=[], standby_tasks=[], warmup_tasks=[]), 0,
                    lambda r: r.error_code not in (errors.NOT_COORDINATOR.code,
                                                   errors.COORDINATOR_LOAD_IN_PROGRESS.code,
                                                   errors.COORDINATOR_NOT_AVAILABLE.code), "StreamsGroupHeartbeat")
              for client in clients]
    assert [a.error_code for a in joined] == [0, 0], joined
    time.sleep(3.2)  # the initial rebalance delay
    given = beat([a.member_epoch for a in joined], active_tasks=[], standby_tasks=[], warmup_tasks=[])
    owned = [H.TaskIds(subtopology_id="0", partitions=[0, 1])]
    assert all([(t.subtopology_id, t.partitions) for t in a.active_tasks] == [("0", [0, 1])] for a in given)
    beat([a.member_epoch for a in given], active_tasks=owned, standby_tasks=[], warmup_tasks=[])
    listed = both(brokers, "streams-groups", "--list", normalise=lambda text: "\n".join(
        line for line in text.splitlines() if group in line))
    assert listed == group
    port = re.compile(r"127\.0\.0\.1:\d+")  # the coordinator's address
    for view in ("--state", "--members", "--offsets"):
        both(brokers, "streams-groups", "--describe", "--group", group, view,
             normalise=lambda text: port.sub("<coordinator>", text))
    beat([-1, -1])
    for client in clients:
        client.close()
    both(brokers, "streams-groups", "--delete", "--group", group)


def test_client_metrics_tool(brokers):
    """kafka-client-metrics: a subscription made, listed, described, refused a wrong interval, deleted; the list
    no longer has it. Its match patterns name no client there is: the Kafka broker serves other tests."""
    name = f"tools-cm-{uuid.uuid4().hex[:8]}"

    def ours(text):  # Kafka's lists the other tests' subscriptions too, if any are left
        return "\n".join(line for line in text.splitlines() if line.startswith("tools-cm-"))

    try:
        both(brokers, "client-metrics", "--alter", "--name", name, "--metrics",
             "org.apache.kafka.producer.,org.apache.kafka.consumer.", "--interval", "1000", "--match",
             "client_id=tools-nobody-.*,client_software_name=apache-kafka-java")
        assert both(brokers, "client-metrics", "--list", normalise=ours, settle=True) == name
        described = both(brokers, "client-metrics", "--describe", "--name", name, settle=True)
        assert "interval.ms=1000" in described and "client_id=tools-nobody-.*" in described, described
        refused = both(brokers, "client-metrics", "--alter", "--name", name, "--interval", "5", code=1)
        assert "interval must be between 100 and 3600000" in refused
    finally:
        both(brokers, "client-metrics", "--delete", "--name", name)
    assert both(brokers, "client-metrics", "--list", normalise=ours, settle=True) == ""


# ---- __consumer_offsets: Kafka's internal topic, as Kafka's own tools read it -----------------------------------

def java_tool(main_class, *args):
    """What a Kafka tool run by its class prints on standard output (it must exit 0)."""
    java = shutil.which("java") or kafka_jvm.unavailable("java is not installed")
    proc = subprocess.run([java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", kafka_jvm.classpath(VERSION),
                           main_class, *args], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, f"{main_class} {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc.stdout


def asked(client, body, version, settled, what):
    """The answer to body once settled(answer) holds (Kafka's coordinator may still be loading)."""
    for _ in range(150):
        answer = client.call(body, version).body
        if settled(answer):
            return answer
        time.sleep(0.2)
    raise AssertionError(f"{what}: {answer}")


def group_lives(port, topic, classic, modern):
    """A classic group's member joins, syncs, commits and leaves; a KIP-848 group's member joins, commits and
    leaves: what each coordinator writes to __consumer_offsets on the way. Whether the KIP-848 member was given
    the topic's partitions (Kafka's group coordinator may learn of a new topic after its broker's Metadata does)."""
    from kafkaproto.broker.state.groups.embedded import write_assignment
    from kafkaproto.messages import (ConsumerGroupHeartbeatRequest, CreateTopicsRequest, JoinGroupRequest,
                                     LeaveGroupRequest, MetadataRequest, SyncGroupRequest)
    from test_broker_consumer_groups import subscription

    client = RawClient(port)
    try:
        client.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=topic, num_partitions=2, replication_factor=1)], timeout_ms=10000), 7)
        # Kafka's broker learns of the topic from its controller a moment later: a KIP-848 member that joins
        # before would be given no partitions.
        asked(client, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), 12,
              lambda r: r.topics[0].error_code == 0 and all(p.leader_id >= 0 for p in r.topics[0].partitions),
              f"Metadata of {topic}")
        for group in (classic, modern):
            asked(client, FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4,
                  lambda r: r.coordinators[0].error_code == 0, "FindCoordinator")

        def join(member_id):
            return JoinGroupRequest(group_id=classic, session_timeout_ms=600000, rebalance_timeout_ms=30000,
                                    member_id=member_id, protocol_type="consumer",
                                    protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                                        name="range", metadata=subscription(topic))])
        joined = asked(client, join(""), 5, lambda r: r.error_code == errors.MEMBER_ID_REQUIRED.code, "JoinGroup")
        joined = client.call(join(joined.member_id), 5).body
        assert joined.error_code == 0, joined
        synced = client.call(SyncGroupRequest(group_id=classic, generation_id=joined.generation_id,
                                              member_id=joined.member_id, assignments=[
                                                  SyncGroupRequest.SyncGroupRequestAssignment(
                                                      member_id=joined.member_id,
                                                      assignment=write_assignment(0, {topic: [0, 1]}))]), 3).body
        assert synced.error_code == 0, synced
        committed = client.call(OffsetCommitRequest(
            group_id=classic, generation_id_or_member_epoch=joined.generation_id, member_id=joined.member_id,
            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=p + 5,
                                                                 committed_metadata="m" if p else None)
                for p in (0, 1)])]), 8).body
        assert {p.error_code for t in committed.topics for p in t.partitions} == {0}, committed
        left = client.call(LeaveGroupRequest(group_id=classic, members=[
            LeaveGroupRequest.MemberIdentity(member_id=joined.member_id)]), 3).body
        assert left.error_code == 0, left

        HB = ConsumerGroupHeartbeatRequest
        beat = asked(client, HB(group_id=modern, member_id=str(uuid.uuid4()), member_epoch=0,
                                rebalance_timeout_ms=30000, subscribed_topic_names=[topic], topic_partitions=[]), 0,
                     lambda r: r.error_code == 0 and r.assignment is not None, "ConsumerGroupHeartbeat")
        owned = [HB.TopicPartitions(topic_id=t.topic_id, partitions=t.partitions)
                 for t in beat.assignment.topic_partitions]
        again = client.call(HB(group_id=modern, member_id=beat.member_id, member_epoch=beat.member_epoch,
                               topic_partitions=owned), 0).body
        assert again.error_code == 0, again
        committed = client.call(OffsetCommitRequest(
            group_id=modern, generation_id_or_member_epoch=again.member_epoch, member_id=beat.member_id,
            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=p + 7)
                for p in (0, 1)])]), 9).body
        assert {p.error_code for t in committed.topics for p in t.partitions} == {0}, committed
        gone = client.call(HB(group_id=modern, member_id=beat.member_id, member_epoch=-1), 0).body
        assert gone.error_code == 0, gone
        return bool(beat.assignment.topic_partitions)
    finally:
        client.close()


def coordinator_record(key, value):
    """A record as a formatter or dump-log prints it (key and value as JSON), with what each broker makes up
    (member ids, times, topic ids, metadata hashes) put in words, as one comparable line."""
    def plain(node, name=None):
        if isinstance(node, dict):
            return {k: plain(v, k) for k, v in node.items()}
        if isinstance(node, list):
            return [plain(v) for v in node]
        if node is None:
            return None
        if name in ("memberId", "leader"):
            return "<member>"
        if name == "topicId":
            return "<topic id>"
        if name is not None and name.endswith("Timestamp"):
            return "<time>"
        if name == "metadataHash" and node not in (0, "0"):
            return "<hash>"
        return node
    return json.dumps({"key": plain(key), "value": plain(value)}, sort_keys=True)


def group_of(key):
    data = key.get("data", {})
    return data.get("group", data.get("groupId"))


def formatted(text):
    """The JSON objects Kafka's coordinator-record formatters print, one after another."""
    at, decoder = 0, json.JSONDecoder()
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return
        record, at = decoder.raw_decode(text, at)
        yield record


def console_records(port, formatter, groups):
    """kafka-console-consumer on __consumer_offsets (every partition, from the start) with one of Kafka's
    formatters: the records of groups it prints, as coordinator_record lines, sorted."""
    text = java_tool("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", f"127.0.0.1:{port}",
                     "--topic", "__consumer_offsets", "--from-beginning", "--timeout-ms", "6000",
                     "--formatter", f"org.apache.kafka.tools.consumer.{formatter}")
    found = []
    for record in formatted(text):
        if group_of(record["key"]) in groups:
            found.append(coordinator_record(record["key"], record["value"]))
    return sorted(found)


def dumped_records(files, groups):
    """kafka-dump-log --offsets-decoder over segment files: the records of groups, as coordinator_record lines,
    sorted (a tombstone's value is null)."""
    text = java_tool("org.apache.kafka.tools.DumpLogSegments", "--offsets-decoder", "--files",
                     ",".join(str(f) for f in files))
    found = []
    for line in text.splitlines():
        match = re.search(r" key: (.*) payload: ?(.*)$", line)
        if not line.startswith("| offset:") or " endTxnMarker: " in line:
            continue  # a transaction's marker (another test's TxnOffsetCommit on a partition these groups share)
        assert match, f"kafka-dump-log printed a record it did not decode: {line}"
        key = json.loads(match.group(1))
        payload = match.group(2)
        value = json.loads(payload) if payload.startswith("{") else None
        if group_of(key) in groups:
            found.append(coordinator_record(key, value))
    return sorted(found)


def test_kafkas_tools_read_consumer_offsets_as_kafkas(brokers):
    """The same group lives on both brokers (a classic group and a KIP-848 group join, commit and leave), then
    Kafka's tools read __consumer_offsets: kafka-console-consumer with OffsetsMessageFormatter and
    GroupMetadataMessageFormatter over every partition of the topic, and kafka-dump-log --offsets-decoder over
    the segment files (Kafka's partitions of these groups, this broker's one log). They must print the same
    records once ids, times, the metadata hash and the partitions are put aside."""
    from concurrent.futures import ThreadPoolExecutor

    from kafkaproto.broker.state.groups.assignors import string_hash

    for _ in range(3):  # new names, when Kafka's coordinator had not yet heard of the new topic
        run = uuid.uuid4().hex[:8]
        topic, groups = f"tools-co-{run}", (f"tools-co-classic-{run}", f"tools-co-kip848-{run}")
        if all([group_lives(port, topic, *groups) for port in brokers]):
            break
    else:
        pytest.fail("Kafka's group coordinator gave a KIP-848 member no partitions of a topic three times")

    def partition(group):  # Kafka's: Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions
        h = string_hash(group)
        return (0 if h == -2**31 else abs(h)) % 50
    kafka_dir, our_dir = brokers.log_dirs
    kafka_partitions = sorted({partition(g) for g in groups})  # both groups may hash to one partition
    segments = ([f for p in kafka_partitions for f in sorted((kafka_dir / f"__consumer_offsets-{p}").glob("*.log"))],
                sorted((our_dir / "__consumer_offsets-0").glob("*.log")))
    formatters = ("OffsetsMessageFormatter", "GroupMetadataMessageFormatter")
    with ThreadPoolExecutor(4) as pool:
        runs = {(f, i): pool.submit(console_records, port, f, groups) for f in formatters
                for i, port in enumerate(brokers)}
        dumped = list(pool.map(lambda files: dumped_records(files, groups), segments))
    printed = {f: [runs[(f, i)].result() for i in range(2)] for f in formatters}
    for formatter, (kafka, ours) in printed.items():
        assert kafka == ours, f"{formatter}:\n--- Kafka\n" + "\n".join(kafka) + "\n--- this broker\n" + "\n".join(ours)
    assert len(printed["OffsetsMessageFormatter"][1]) == 4 and len(printed["GroupMetadataMessageFormatter"][1]) == 3
    kafka, ours = dumped
    assert kafka == ours, "kafka-dump-log --offsets-decoder:\n--- Kafka\n" + "\n".join(kafka) + \
        "\n--- this broker\n" + "\n".join(ours)
    kinds = {json.loads(line)["key"]["type"] for line in ours}
    assert kinds >= {"1", "2", "3", "5", "6", "7", "8"}, kinds


def transaction_records(port, transactional_id):
    """kafka-console-consumer on __transaction_state (every partition, from the start) with Kafka's
    TransactionLogMessageFormatter: the records of transactional_id, in order, with what each broker makes up
    (producer ids, times) put in words."""
    text = java_tool("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", f"127.0.0.1:{port}",
                     "--topic", "__transaction_state", "--from-beginning", "--timeout-ms", "6000",
                     "--formatter", "org.apache.kafka.tools.consumer.TransactionLogMessageFormatter")

    def plain(node, name=None):
        if isinstance(node, dict):
            return {k: plain(v, k) for k, v in node.items()}
        if isinstance(node, list):
            return [plain(v) for v in node]
        if name == "producerId":
            return "<producer>"
        if name in ("transactionLastUpdateTimestampMs", "transactionStartTimestampMs") and node != -1:
            return "<time>"
        return node
    found = []
    for record in formatted(text):
        if record["key"].get("data", {}).get("transactionalId") == transactional_id:
            data = (record["value"] or {}).get("data", {})
            for name in ("previousProducerId", "nextProducerId"):  # which producer id it is, not its number
                if data.get(name, -1) not in (-1, data["producerId"]):
                    data[name] = "<another producer>"
                elif name in data and data[name] != -1:
                    data[name] = "<the producer>"
            found.append(json.dumps({"key": plain(record["key"]), "value": plain(record["value"])},
                                    sort_keys=True))
    return found


def test_kafkas_tools_read_transaction_state_as_kafkas(brokers):
    """Kafka's producer runs one transaction on each broker (kafka-producer-perf-test with a transactional id),
    then kafka-console-consumer reads __transaction_state with Kafka's TransactionLogMessageFormatter: the same
    records, once producer ids and times are put aside (Kafka spreads transactional ids over 50 partitions, this
    broker keeps them in one)."""
    run = uuid.uuid4().hex[:8]
    topic, transactional_id = f"tools-ts-{run}", f"tools-ts-{run}"
    both(brokers, "topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")
    for port in brokers:
        java_tool("org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", "3",
                  "--record-size", "10", "--throughput", "-1", "--transactional-id", transactional_id,
                  "--transaction-duration-ms", "600000", "--bootstrap-server", f"127.0.0.1:{port}")
    kafka, ours = (transaction_records(port, transactional_id) for port in brokers)
    assert kafka == ours, "TransactionLogMessageFormatter:\n--- Kafka\n" + "\n".join(kafka) + \
        "\n--- this broker\n" + "\n".join(ours)
    states = [json.loads(line)["value"]["data"]["transactionStatus"] for line in ours]
    assert states[0] == 0 and states[-2:] == [2, 4], states  # Empty, ..., PrepareCommit, CompleteCommit
