"""Share groups (KIP-932) through Kafka's own KafkaShareConsumer (4.3.1 and 4.4.0; tests/kafka/ShareClients.java)
and through raw requests: records shared by two consumers, rejected and released ones, a consumer killed while it
holds records, locks running out, and the share state surviving a restart.

The broker here lets heartbeats come every second and locks last two seconds (Kafka's bounds lowered through its
own min settings), so that what takes Kafka's defaults half a minute takes seconds.
"""

import subprocess
import time
import uuid

import pytest

import kafka_jvm
from kafkaproto import records
from kafkaproto.broker import Broker
from kafkaproto.messages import (CreateTopicsRequest, IncrementalAlterConfigsRequest, ProduceRequest,
                                 ShareFetchRequest, ShareGroupHeartbeatRequest)
from test_kafka_broker import RawClient

pytestmark = pytest.mark.above_the_codecs

FAST = {"group.share.min.heartbeat.interval.ms": "500", "group.share.heartbeat.interval.ms": "1000",
        "group.share.min.record.lock.duration.ms": "1000", "group.share.record.lock.duration.ms": "2000",
        "group.share.assignment.interval.ms": "0"}
JAVA_VERSIONS = ("4.3.1", "4.4.0")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with Broker({**FAST, "log.dirs": str(tmp_path_factory.mktemp("share-broker"))}) as running:
        yield running


@pytest.fixture(scope="module", params=JAVA_VERSIONS, ids=lambda v: f"java-{v}")
def share_clients(request):
    try:
        return kafka_jvm.classpath(request.param, kafka_jvm.compiled(request.param, "ShareClients"))
    except kafka_jvm.KafkaUnavailable as e:
        kafka_jvm.unavailable(str(e))


def make_topic(port, partitions, values):
    """A new topic with values produced to partition 0, one batch of ten records at a time."""
    topic = f"share-{uuid.uuid4().hex[:8]}"
    client = RawClient(port)
    made = client.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=partitions, replication_factor=1)], timeout_ms=5000), 7).body
    assert made.topics[0].error_code == 0, made
    for start in range(0, len(values), 10):
        builder = records.RecordBatchBuilder()
        for value in values[start:start + 10]:
            builder.append(None, value.encode())
        answer = client.call(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
            name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=builder.build())])]),
            9).body
        assert answer.responses[0].partition_responses[0].error_code == 0
    client.close()
    return topic, made.topics[0].topic_id


def set_group_config(port, group, **configs):
    client = RawClient(port)
    answer = client.call(IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=32, resource_name=group, configs=[IncrementalAlterConfigsRequest.AlterableConfig(
            name=name.replace("_", "."), config_operation=0, value=value) for name, value in configs.items()])]),
        1).body
    client.close()
    assert answer.responses[0].error_code == 0, answer


def consumer(classpath, port, group, topic, *properties):
    return subprocess.Popen(["java", *properties, "-cp", classpath, "ShareClients", f"127.0.0.1:{port}", "consume",
                             group, topic], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def lines(process, codes=(0,)):
    """What a consumer printed, once it stopped: [(action, offset, deliveries, value)]."""
    out, err = process.communicate(timeout=180)
    assert process.returncode in codes, err[-3000:]
    return [(action.upper(), int(offset), int(count), value) for action, _, offset, count, value in
            (line.split() for line in out.splitlines() if line.strip())]


def test_two_consumers_share_a_partition(broker, share_clients):
    """Every record accepted exactly once between two consumers of one partition; the rejected one never again;
    the released one delivered a second time."""
    values = [f"v{i}" for i in range(200)]
    topic, _ = make_topic(broker.port, 1, values)
    group = f"share-{uuid.uuid4().hex[:8]}"
    set_group_config(broker.port, group, share_auto_offset_reset="earliest")
    members = [consumer(share_clients, broker.port, group, topic, "-Dshare.quiet.ms=6000", "-Dshare.reject=v3",
                        "-Dshare.release=v5", "-Dshare.max.poll.records=10", "-Dshare.pause.ms=100")
               for _ in range(2)]
    seen = [lines(m) for m in members]
    accepted = [[value for action, _, _, value in s if action == "ACCEPT"] for s in seen]
    both = accepted[0] + accepted[1]
    assert sorted(both) == sorted(set(values) - {"v3"}), "each record but the rejected one accepted exactly once"
    assert all(accepted), f"both consumers took part: {[len(a) for a in accepted]}"
    every = seen[0] + seen[1]
    assert [(a, c) for a, _, c, v in every if v == "v3"] == [("REJECT", 1)]
    # each consumer releases v5 the first time it sees it: delivered once more after each release
    released = sorted((c, a) for a, _, c, v in every if v == "v5")
    assert released in ([(1, "RELEASE"), (2, "ACCEPT")], [(1, "RELEASE"), (2, "RELEASE"), (3, "ACCEPT")]), released


def test_a_consumer_killed_while_holding_records(broker, share_clients):
    """A consumer halted with records in hand (its connection closes, nothing acknowledged): they go to the other
    consumer at once, delivered a second time."""
    values = [f"k{i}" for i in range(40)]
    topic, _ = make_topic(broker.port, 1, values)
    group = f"share-{uuid.uuid4().hex[:8]}"
    set_group_config(broker.port, group, share_auto_offset_reset="earliest")
    crashed = consumer(share_clients, broker.port, group, topic, "-Dshare.halt.after=3")
    lines(crashed, codes=(3,))
    started = time.monotonic()
    survivor = lines(consumer(share_clients, broker.port, group, topic, "-Dshare.quiet.ms=5000"))
    assert sorted(v for a, _, _, v in survivor if a == "ACCEPT") == sorted(values)
    assert any(count == 2 for _, _, count, _ in survivor), "the crashed consumer's records came back"
    # They came back when its connection closed, not when their lock (2 s here) ran out.
    assert time.monotonic() - started < 60


def test_a_consumer_holding_records_past_its_lock(broker, share_clients):
    """A consumer that sits on its records longer than the lock (2 s here): they go to the other consumer,
    delivered a second time, and the first one's late acknowledgements change nothing."""
    values = [f"s{i}" for i in range(10)]
    topic, _ = make_topic(broker.port, 1, values)
    group = f"share-{uuid.uuid4().hex[:8]}"
    set_group_config(broker.port, group, share_auto_offset_reset="earliest")
    slow = consumer(share_clients, broker.port, group, topic, "-Dshare.stall.ms=6000", "-Dshare.quiet.ms=3000")
    time.sleep(2)
    quick = lines(consumer(share_clients, broker.port, group, topic, "-Dshare.quiet.ms=8000"))
    assert sorted(v for a, _, c, v in quick if a == "ACCEPT" and c == 2) == sorted(values)
    late = lines(slow)
    assert sorted(v for a, _, c, v in late if c == 1) == sorted(values), "the slow consumer had them first"


def share_fetch(client, group, member, topic_id, epoch, acks=(), wait=0):
    F = ShareFetchRequest
    return client.call(F(group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=wait,
                         min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100, topics=[
                             F.FetchTopic(topic_id=topic_id, partitions=[F.FetchPartition(
                                 partition_index=0, acknowledgement_batches=[
                                     F.AcknowledgementBatch(first_offset=a, last_offset=b, acknowledge_types=[t])
                                     for a, b, t in acks])])]), 1).body


def acquired(response):
    return [(a.first_offset, a.last_offset, a.delivery_count)
            for t in response.responses for p in t.partitions for a in p.acquired_records]


def test_locks_run_out_and_the_state_survives_a_restart(tmp_path):
    """Records a member holds past the lock go to the next fetch, delivered again; after a restart, accepted
    records stay done and those that were held come back, their delivery counted."""
    config = {**FAST, "log.dirs": str(tmp_path / "logs")}
    group, one, two = "locks", str(uuid.uuid4()), str(uuid.uuid4())
    with Broker(config) as running:
        topic, topic_id = make_topic(running.port, 1, [f"r{i}" for i in range(30)])
        set_group_config(running.port, group, share_auto_offset_reset="earliest")
        client = RawClient(running.port)
        joined = client.call(ShareGroupHeartbeatRequest(group_id=group, member_id=one, member_epoch=0,
                                                        subscribed_topic_names=[topic]), 1).body
        assert joined.error_code == 0
        assert acquired(share_fetch(client, group, one, topic_id, 0)) == [(0, 29, 1)]
        assert acquired(share_fetch(client, group, two, topic_id, 0)) == []  # all held by the first
        time.sleep(3.5)  # past the 2 s lock, and the broker's once-a-second housekeeping
        assert acquired(share_fetch(client, group, two, topic_id, 1)) == [(0, 29, 2)]
        answer = share_fetch(client, group, two, topic_id, 2, acks=[(0, 9, 1), (10, 19, 3)])
        assert answer.responses[0].partitions[0].acknowledge_error_code == 0
        client.close()
    with Broker(config) as restarted:
        client = RawClient(restarted.port)
        again = share_fetch(client, group, one, topic_id, 0)
        assert acquired(again) == [(20, 29, 3)], "accepted and rejected records stay done; held ones come back"
        client.close()


def test_partitions_that_do_not_exist_are_answered_once(broker):
    """A share session takes only partitions that exist: one that does not is answered with its error and left
    out, so that no client can fill a session with made-up partitions."""
    from kafkaproto import errors
    from kafkaproto.uuid import Uuid
    topic, topic_id = make_topic(broker.port, 1, ["a"])
    client = RawClient(broker.port)
    F = ShareFetchRequest
    made_up = [F.FetchTopic(topic_id=Uuid.random(), partitions=[F.FetchPartition(partition_index=0)]),
               F.FetchTopic(topic_id=topic_id, partitions=[F.FetchPartition(partition_index=7)])]

    def ask(epoch, topics, wait=5000):
        answer = client.call(F(group_id="made-up", member_id="m" * 22, share_session_epoch=epoch, max_wait_ms=wait,
                               min_bytes=1, max_bytes=1 << 20, max_records=10, batch_size=10, topics=topics), 1).body
        return {(t.topic_id, p.partition_index): p.error_code for t in answer.responses for p in t.partitions}

    started = time.monotonic()
    assert ask(0, made_up) == {(made_up[0].topic_id, 0): errors.UNKNOWN_TOPIC_ID.code,
                               (topic_id, 7): errors.UNKNOWN_TOPIC_OR_PARTITION.code}
    assert time.monotonic() - started < 4  # an error answers at once
    assert ask(1, [], wait=100) == {}  # the session kept neither
    client.close()


def test_each_broker_of_a_cluster_keeps_its_own_share_sessions(tmp_path):
    """On a cluster a member opens a share session on each broker leading one of its partitions, as Kafka's
    clients do: each broker keeps its own and fetches only what it leads. A partition whose leader moves is
    answered NOT_LEADER_OR_FOLLOWER with its new leader, and one named to a broker that does not lead it too, at
    every version (v1 and up cannot send null records)."""
    from kafkaproto import errors
    group, member = "spread", str(uuid.uuid4())
    with Broker({**FAST, "log.dirs": str(tmp_path)}, nodes=3) as cluster:
        clients = {node: RawClient(port) for node, (_, port) in cluster.nodes.items()}
        try:
            made = clients[1].call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
                name="spread", num_partitions=2, replication_factor=3)], timeout_ms=5000), 7).body.topics[0]
            assert made.error_code == 0
            topic_id = made.topic_id
            leaders = [cluster.leader("spread", i)[0] for i in (0, 1)]
            assert leaders[0] != leaders[1]
            for index, leader in enumerate(leaders):
                builder = records.RecordBatchBuilder()
                builder.append(None, f"p{index}".encode())
                answer = clients[leader].call(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
                    ProduceRequest.TopicProduceData(name="spread", partition_data=[ProduceRequest.PartitionProduceData(
                        index=index, records=builder.build())])]), 9).body
                assert answer.responses[0].partition_responses[0].error_code == 0
            set_group_config(cluster.port, group, share_auto_offset_reset="earliest")
            joined = clients[cluster.coordinator("group", group)].call(ShareGroupHeartbeatRequest(
                group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=["spread"]), 1).body
            assert joined.error_code == 0

            F = ShareFetchRequest

            def fetch(node, epoch, partitions, version=1):
                answer = clients[node].call(F(
                    group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=0, min_bytes=1,
                    max_bytes=1 << 20, max_records=100, batch_size=100, topics=[F.FetchTopic(
                        topic_id=topic_id, partitions=[F.FetchPartition(partition_index=i) for i in partitions])]
                    if partitions else []), version).body
                assert answer.error_code == 0, answer
                return {p.partition_index: (p.error_code, [(a.first_offset, a.last_offset) for a in p.acquired_records],
                                            (p.current_leader.leader_id, p.current_leader.leader_epoch))
                        for t in answer.responses for p in t.partitions}
            assert fetch(leaders[0], 0, [0]) == {0: (0, [(0, 0)], (0, 0))}
            assert fetch(leaders[1], 0, [1]) == {1: (0, [(0, 0)], (0, 0))}
            assert fetch(leaders[1], 1, []) == {}
            assert fetch(leaders[0], 1, []) == {}  # its own session, at its own epoch
            moved_to = next(n for n in (1, 2, 3) if n not in leaders)
            cluster.move_leader("spread", 0, moved_to)
            assert fetch(leaders[0], 2, []) == {0: (errors.NOT_LEADER_OR_FOLLOWER.code, [], (moved_to, 1))}
            # named to a broker that does not lead it: answered, not the connection closed
            for version in (1, 2):
                answer = fetch(leaders[0], 3 + version - 1, [1], version)
                assert answer[1][0] == errors.NOT_LEADER_OR_FOLLOWER.code
                assert answer[1][2] == (leaders[1], 0)
        finally:
            for client in clients.values():
                client.close()

