"""Streams groups (KIP-1071) through a real Kafka Streams 4.3.1 application (tests/kafka/StreamsApp.java, a word
count: a repartition topic and a state store with its changelog) with ``group.protocol=streams``: two instances,
the first stopped while the second runs, records produced before and after. The same run against Apache Kafka
4.3.1 and this broker must count every word the same, and right.
"""

import subprocess
import time
import uuid
from collections import Counter

import pytest

import kafka_jvm
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafkaproto.broker import Broker

pytestmark = [pytest.mark.xdist_group("kafka-broker"), pytest.mark.above_the_codecs]

VERSION = "4.3.1"
LINES = ["the quick brown fox", "jumps over the lazy dog", "the dog sleeps", "a fox runs"]


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


def instance(classpath, bootstrap, application, topics, run_ms, state_dir):
    return subprocess.Popen(["java", f"-Dstreams.state.dir={state_dir}", "-cp", classpath, "StreamsApp", bootstrap,
                             application, *topics, str(run_ms)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def wait_running(process, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.strip() == "RUNNING":
            return
        if not line and process.poll() is not None:
            break
    raise AssertionError(f"the streams instance did not run: {process.stderr.read()[-3000:]}")


def finished(process):
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0 and "STOPPED NOT_RUNNING" in out, err[-3000:]


def word_counts(bootstrap, classpath, tmp_path):
    """Run the application as the module docstring says against the broker at bootstrap; each word's last count."""
    run = uuid.uuid4().hex[:8]
    application, source, sink = f"wc-{run}", f"wc-in-{run}", f"wc-out-{run}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(source, 2, 1), NewTopic(sink, 1, 1)])
    admin.close()
    produce(bootstrap, source, LINES * 5)
    first = instance(classpath, bootstrap, application, (source, sink), 10000, tmp_path / f"{run}-a")
    wait_running(first)
    second = instance(classpath, bootstrap, application, (source, sink), 25000, tmp_path / f"{run}-b")
    wait_running(second)
    finished(first)  # stopped while the second goes on: its tasks move over
    produce(bootstrap, source, LINES * 3)
    finished(second)
    consumer = KafkaConsumer(sink, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=5000)
    last = {}
    for message in consumer:
        word, count = message.value.decode().split()
        last[word] = max(last.get(word, 0), int(count))
    consumer.close()
    return last


def test_a_word_count_with_two_instances_counts_as_on_kafka(streams_app, kafka_broker, tmp_path):
    if kafka_broker.version != VERSION:
        pytest.skip(f"run against Kafka {VERSION}")
    expected = Counter(word for line in LINES * 8 for word in line.split())
    on_kafka = word_counts(f"127.0.0.1:{kafka_broker.port}", streams_app, tmp_path)
    with Broker(kafka_jvm.LIKE_KAFKA) as ours:
        here = word_counts(ours.bootstrap_servers, streams_app, tmp_path)
    assert on_kafka == dict(expected), "Kafka counts every word"
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
