"""Streams groups (KIP-1071) through a real Kafka Streams 4.3.1 application (tests/kafka/StreamsApp.java, a word
count: a repartition topic and a state store with its changelog) with ``group.protocol=streams``: two instances,
the second given tasks while the first runs, then the first stopped while the second runs, records produced before
and after. The same run against Apache Kafka 4.3.1 and this broker must count every word the same, and right.
"""

import queue
import subprocess
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

import kafka_jvm
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafkaproto.broker import Broker
from kafkaproto.messages import IncrementalAlterConfigsRequest
from test_kafka_broker import RawClient

pytestmark = [pytest.mark.xdist_group("kafka-broker"), pytest.mark.above_the_codecs]

VERSION = "4.3.1"
LINES = ["the quick brown fox", "jumps over the lazy dog", "the dog sleeps", "a fox runs"]
EXPECTED = Counter(word for line in LINES * 8 for word in line.split())  # the two batches word_counts produces
WAIT = 120  # seconds, for anything an instance or the broker does


@pytest.fixture(scope="module")
def streams_app():
    try:
        return kafka_jvm.classpath(VERSION, kafka_jvm.compiled(VERSION, "StreamsApp"))
    except kafka_jvm.KafkaUnavailable as e:
        kafka_jvm.unavailable(str(e))


def produce(bootstrap, topic, lines):
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i, line in enumerate(lines):
        producer.send(topic, key=b"line-%d" % i, value=line.encode())
    producer.flush(30)
    producer.close()


def no_initial_delay(port, group):
    """The group's first assignment at once (streams.initial.rebalance.delay.ms, 3 s by default, set for the group
    on the broker): one instance joins at first, and nothing is gained by waiting for more."""
    A = IncrementalAlterConfigsRequest
    client = RawClient(port)
    try:
        answer = client.call(A(resources=[A.AlterConfigsResource(resource_type=32, resource_name=group, configs=[
            A.AlterableConfig(name="streams.initial.rebalance.delay.ms", config_operation=0, value="0")])]), 1).body
    finally:
        client.close()
    assert answer.responses[0].error_code == 0, answer


class Instance:
    """A running StreamsApp: what it prints, line by line as it prints it; stop() ends it with the application's
    own close."""

    def __init__(self, classpath, bootstrap, application, topics, state_dir):
        self.log = state_dir.with_suffix(".stderr")  # a file: a pipe nobody reads could fill and stall it
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", f"-Dstreams.state.dir={state_dir}", "-cp",
                 classpath, "StreamsApp", bootstrap, application, *topics],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)  # its output ended

    def expect(self, wanted, what):
        """Its lines read until one for which wanted(line) holds."""
        deadline = time.monotonic() + WAIT
        while True:
            try:
                line = self.lines.get(timeout=max(0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                raise AssertionError(f"the streams instance did not {what}: {self.stderr()}")
            if wanted(line):
                return line

    def stderr(self):
        return self.log.read_text(errors="replace")[-3000:]

    def stop(self):
        """Tell it to stop; it must close cleanly (exit 0, its last state NOT_RUNNING)."""
        try:
            self.process.stdin.write("stop\n")
            self.process.stdin.close()
        except BrokenPipeError:
            pass  # it has ended already: its exit code says how
        code = self.process.wait(timeout=WAIT)
        said = []
        while (line := self.lines.get(timeout=WAIT)) is not None:
            said.append(line)
        assert code == 0 and "STOPPED NOT_RUNNING" in said, f"exit {code}, {said}: {self.stderr()}"

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class Counts:
    """The output topic read as it fills: each word's last count."""

    def __init__(self, bootstrap, sink):
        self.partition = TopicPartition(sink, 0)
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
        self.consumer.assign([self.partition])
        self.last = {}

    def read(self, done):
        """Read until done() holds, WAIT seconds at most."""
        deadline = time.monotonic() + WAIT
        while not done() and time.monotonic() < deadline:
            for records in self.consumer.poll(timeout_ms=200).values():
                for message in records:
                    word, count = message.value.decode().split()
                    self.last[word] = max(self.last.get(word, 0), int(count))

    def read_until(self, counts):
        self.read(lambda: self.last == counts)

    def read_to_end(self):
        end = self.consumer.end_offsets([self.partition])[self.partition]
        self.read(lambda: self.consumer.position(self.partition) >= end)

    def close(self):
        self.consumer.close()


def word_counts(port, classpath, tmp_path):
    """Run the application as the module docstring says against the broker on port; each word's last count."""
    bootstrap = f"127.0.0.1:{port}"
    run = uuid.uuid4().hex[:8]
    application, source, sink = f"wc-{run}", f"wc-in-{run}", f"wc-out-{run}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(source, 2, 1), NewTopic(sink, 1, 1)])
    admin.close()
    no_initial_delay(port, application)
    produce(bootstrap, source, LINES * 5)
    counts = Counts(bootstrap, sink)
    instances = []
    try:
        first = Instance(classpath, bootstrap, application, (source, sink), tmp_path / f"{run}-a")
        instances.append(first)
        first.expect(lambda line: line == "RUNNING", "run")
        second = Instance(classpath, bootstrap, application, (source, sink), tmp_path / f"{run}-b")
        instances.append(second)
        second.expect(lambda line: line == "RUNNING", "run")
        # The second holds tasks while the first still runs; then the first stops, and its tasks move over with
        # their state.
        second.expect(lambda line: line.startswith("ACTIVE ") and line != "ACTIVE 0", "take over tasks")
        first.stop()
        produce(bootstrap, source, LINES * 3)
        # Every record counted (or, after WAIT, what was), and then the second stops.
        counts.read_until(dict(EXPECTED))
        second.stop()
        counts.read_to_end()  # and what it wrote meanwhile
        return counts.last
    finally:
        for instance in instances:
            instance.kill()
        counts.close()


def test_a_word_count_with_two_instances_counts_as_on_kafka(streams_app, kafka_brokers, tmp_path):
    kafka = kafka_brokers(VERSION)
    with Broker(kafka_jvm.LIKE_KAFKA) as ours, ThreadPoolExecutor(2) as pool:
        # The two runs at once: much of each is waiting (JVMs starting, heartbeats, tasks moving).
        runs = [pool.submit(word_counts, port, streams_app, tmp_path) for port in (kafka.port, ours.port)]
        on_kafka, here = (run.result() for run in runs)
    assert on_kafka == dict(EXPECTED), "Kafka counts every word"
    assert here == on_kafka


def test_a_streams_group_survives_a_restart(tmp_path):
    """A member at its epoch with its tasks goes on after the broker restarts: same epoch, same tasks, no
    rebalance (the topology is checked against the cluster again, and finds it as it was)."""
    from kafkaproto.messages import CreateTopicsRequest, StreamsGroupHeartbeatRequest as H
    from test_kafka_broker import RawClient
    config = {"log.dirs": str(tmp_path / "logs"), "group.streams.initial.rebalance.delay.ms": "0"}
    topology = H.Topology(epoch=0, subtopologies=[H.Subtopology(
        subtopology_id="0", source_topics=["in"], state_changelog_topics=[H.TopicInfo(name="app-store-changelog")])])

    def beat(client, epoch, **fields):
        answer = client.call(H(group_id="app", member_id="m" * 22, member_epoch=epoch, endpoint_information_epoch=0,
                               **fields), 0).body
        assert answer.error_code == 0, answer
        return answer

    with Broker(config) as running:
        client = RawClient(running.port)
        client.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="in", num_partitions=3, replication_factor=1)], timeout_ms=5000), 7)
        joined = beat(client, 0, rebalance_timeout_ms=30000, topology=topology, process_id="p", active_tasks=[],
                      standby_tasks=[], warmup_tasks=[])
        assert [s.status_code for s in joined.status] == [3]  # the changelog topic is made
        time.sleep(1.1)  # streams.assignment.interval.ms since the (empty) first assignment
        given = beat(client, joined.member_epoch, active_tasks=[], standby_tasks=[], warmup_tasks=[])
        assert [(t.subtopology_id, t.partitions) for t in given.active_tasks] == [("0", [0, 1, 2])]
        owned = [H.TaskIds(subtopology_id="0", partitions=[0, 1, 2])]
        beat(client, given.member_epoch, active_tasks=owned, standby_tasks=[], warmup_tasks=[])
        client.close()
    with Broker(config) as restarted:
        client = RawClient(restarted.port)
        again = beat(client, given.member_epoch, active_tasks=owned, standby_tasks=[], warmup_tasks=[])
        assert again.member_epoch == given.member_epoch and again.active_tasks is None and again.status == []
        client.close()


def test_a_topology_too_large_is_refused_and_a_large_group_is_assigned_at_once():
    """A heartbeat's topology may not make its checks cost without bound; a group of hundreds of members and tasks
    is assigned in one pass (no task looked at once per member)."""
    from kafkaproto import errors
    from kafkaproto.broker.state.groups.consumer_group import GroupError
    from kafkaproto.broker.state.groups.streams import (MAX_SUBTOPOLOGIES, Configured, StreamsGroup, StreamsMember,
                                                        StreamsRules)
    from kafkaproto.messages import StreamsGroupHeartbeatRequest as H
    huge = H(group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=1, active_tasks=[], standby_tasks=[],
             warmup_tasks=[], topology=H.Topology(subtopologies=[H.Subtopology(subtopology_id=str(i))
                                                                 for i in range(MAX_SUBTOPOLOGIES + 1)]))
    with pytest.raises(GroupError) as refused:
        StreamsRules.validate(huge)
    assert refused.value.error is errors.STREAMS_INVALID_TOPOLOGY

    class Cluster:
        topics = {}

        @staticmethod
        def group_setting(group_id, name):
            return 1  # streams.num.standby.replicas

    group = StreamsGroup("g")
    group.topology = {"epoch": 0, "subtopologies": [{"id": str(i), "changelog_topics": [{"name": f"c{i}"}]}
                                                    for i in range(100)]}
    group.configured = Configured({str(i): 8 for i in range(100)}, ready=True)
    for i in range(200):
        member = group.members[f"m{i}"] = StreamsMember(f"m{i}")
        member.process_id = f"p{i % 50}"
    started = time.monotonic()
    StreamsRules({}, Cluster(), {}).assign(group, 0)
    assert time.monotonic() - started < 2
    active = [sum(len(ps) for ps in t["active"].values()) for t in group.target.values()]
    assert sum(active) == 800 and max(active) == 4  # every task once, at most the quota each
    for target in group.target.values():  # a standby is never on the process of its active task
        for s, ps in target["standby"].items():
            for p in ps:
                (owner,) = [m for m, t in group.target.items() if p in t["active"].get(s, ())]
                assert group.members[owner].process_id != next(
                    group.members[m].process_id for m, t in group.target.items() if t is target)
