"""The control channel (kafkaproto/broker/control_channel.py): a test in any language moves leaders and
coordinators, stops and starts brokers and installs faults over TCP, one JSON object a line; `kafkaproto cluster`
sends the same from a shell, and a subprocess Broker's methods go through it."""

import json
import socket
import subprocess
import sys
import uuid

import pytest

from kafkaproto import errors
from kafkaproto.broker import Broker
from kafkaproto.broker.control_channel import MAX_LINE, ChannelClient, Refused
from kafkaproto.messages import CreateTopicsRequest, MetadataRequest, ProduceRequest
from test_broker_handlers import batch
from test_kafka_broker import RawClient

pytestmark = pytest.mark.above_the_codecs


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with Broker({"log.dirs": str(tmp_path_factory.mktemp("channel")), "kafkaproto.control.channel": "127.0.0.1:0",
                 "default.replication.factor": "3"}, nodes=3) as running:
        yield running


@pytest.fixture
def channel(cluster):
    client = ChannelClient(cluster.control_address)
    yield client
    try:
        client.ask("clear-faults")
        for node in (1, 2, 3):
            if not next(n for n in client.ask("nodes")["nodes"] if n["id"] == node)["running"]:
                client.ask("start-node", node=node)
    finally:
        client.close()


def topic_of(cluster, partitions=1):
    name = f"chan-{uuid.uuid4().hex[:8]}"
    client = RawClient(cluster.port)
    try:
        answer = client.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=3)], timeout_ms=5000), 7).body
        assert answer.topics[0].error_code == 0, answer
        return name, answer.topics[0].topic_id
    finally:
        client.close()


def produce(port, topic, partition=0):
    """The error code and base offset of one record produced at the broker on port."""
    client = RawClient(port)
    try:
        body = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
            name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=batch(b"v"))])])
        answer = client.call(body, 9).body.responses[0].partition_responses[0]
        return answer.error_code, answer.base_offset
    finally:
        client.close()


def test_it_lists_the_brokers(cluster, channel):
    nodes = channel.ask("nodes")["nodes"]
    assert [(n["id"], n["port"], n["running"]) for n in nodes] == [
        (node, port, True) for node, (_, port) in sorted(cluster.nodes.items())]


def test_a_leader_moved_over_the_channel_fences_the_old_one(cluster, channel):
    topic, topic_id = topic_of(cluster)
    before = channel.ask("leader", topic=topic, partition=0)
    assert before["replicas"] == before["isr"] and len(before["replicas"]) == 3
    target = before["leader"] % 3 + 1
    after = channel.ask("move-leader", topic_id=str(topic_id), partition=0, node=target)
    assert (after["leader"], after["leader_epoch"]) == (target, before["leader_epoch"] + 1)
    assert cluster.leader(topic, 0) == (target, after["leader_epoch"])  # what Python sees too
    assert produce(cluster.nodes[before["leader"]][1], topic)[0] == errors.NOT_LEADER_OR_FOLLOWER.code
    assert produce(cluster.nodes[target][1], topic) == (0, 0)


def test_coordinators_move(cluster, channel):
    for kind, key, other in (("group", "g", "h"), ("transaction", "t", "u")):
        current = channel.ask("coordinator", kind=kind, key=key)["node"]
        before = channel.ask("coordinator", kind=kind, key=other)["node"]
        assert channel.ask("move-coordinator", kind=kind, key=key, node=current % 3 + 1) == {"node": current % 3 + 1}
        assert cluster.coordinator(kind, key) == current % 3 + 1
        assert cluster.coordinator(kind, other) == before, "a key in another partition stays where it was"
    with pytest.raises(Refused, match=r"^__consumer_offsets has 50 partitions, each coordinating its own keys: name "
                                      r"the key \(a group id\)$"):
        channel.ask("coordinator", kind="group")
    with pytest.raises(Refused, match="is not a share partition's key"):
        channel.ask("coordinator", kind="share", key="no-colons")


def test_a_stopped_broker_closes_and_comes_back(cluster, channel):
    topic, _ = topic_of(cluster)
    leader = channel.ask("leader", topic=topic, partition=0)["leader"]
    nodes = channel.ask("stop-node", node=leader)["nodes"]
    assert [n["running"] for n in nodes if n["id"] == leader] == [False]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", cluster.nodes[leader][1]), timeout=5)
    moved = channel.ask("leader", topic=topic, partition=0)
    assert moved["leader"] != leader and leader not in moved["isr"]
    with pytest.raises(Refused, match=f"broker {leader} is not running"):
        channel.ask("stop-node", node=leader)
    channel.ask("start-node", node=leader)
    assert leader in channel.ask("leader", topic=topic, partition=0)["isr"]
    client = RawClient(cluster.nodes[leader][1])
    try:
        assert len(client.call(MetadataRequest(topics=[]), 12).body.brokers) == 3
    finally:
        client.close()


def test_a_fault_answers_its_budget_and_is_gone(cluster, channel):
    topic, _ = topic_of(cluster, partitions=2)
    leader = channel.ask("leader", topic=topic, partition=1)["leader"]
    port = cluster.nodes[leader][1]
    fault = channel.ask("add-fault", error="NOT_ENOUGH_REPLICAS", api_keys=["Produce"], topic=topic, partition=1,
                        budget=2)
    assert (fault["error"], fault["api_keys"], fault["fired"]) == ("NOT_ENOUGH_REPLICAS", [0], 0)
    assert [f["id"] for f in channel.ask("faults")["faults"]] == [fault["id"]]
    assert produce(cluster.nodes[channel.ask("leader", topic=topic, partition=0)["leader"]][1], topic) == (0, 0)
    assert produce(port, topic, 1) == (errors.NOT_ENOUGH_REPLICAS.code, -1)
    assert channel.ask("fault", id=fault["id"])["fired"] == 1
    assert produce(port, topic, 1) == (errors.NOT_ENOUGH_REPLICAS.code, -1)
    assert channel.ask("faults")["faults"] == []  # its budget spent
    assert produce(port, topic, 1) == (0, 0)
    lasting = channel.ask("add-fault", error=errors.KAFKA_STORAGE_ERROR.code, node=leader, topic=topic)
    assert produce(port, topic, 1)[0] == errors.KAFKA_STORAGE_ERROR.code
    assert channel.ask("remove-fault", id=lasting["id"])["fired"] == 1
    assert produce(port, topic, 1) == (0, 1)


def test_what_it_refuses_is_named_and_the_line_after_is_answered(cluster, channel):
    topic, _ = topic_of(cluster)
    refused = [
        ({"op": "leader", "topic": "nowhere", "partition": 0}, "no topic 'nowhere'"),
        ({"op": "leader", "topic": topic, "partition": 4}, f"no partition 4 of topic '{topic}' (it has 1)"),
        ({"op": "leader", "topic": topic, "partition": "0"}, "'partition' must be an integer, not \"0\""),
        ({"op": "leader", "partition": 0}, "leader needs one of 'topic' and 'topic_id'"),
        ({"op": "leader", "topic_id": "nope", "partition": 0}, "'topic_id' 'nope' is not a topic id"),
        ({"op": "move-leader", "topic": topic, "partition": 0, "node": 7},
         "broker 7 is not one of the cluster's [1, 2, 3]"),
        ({"op": "move-coordinator", "kind": "consumer", "node": 1},
         "no coordinator 'consumer' (one of group, transaction, share)"),
        ({"op": "add-fault", "error": "NO_SUCH_THING"}, "no Kafka error code is named 'NO_SUCH_THING'"),
        ({"op": "add-fault", "error": 9999}, "no Kafka error code 9999"),
        ({"op": "add-fault", "error": 6, "api_keys": ["Produce", "Nope"]}, "'api_keys': no Kafka API 'Nope'"),
        ({"op": "add-fault", "error": 6, "budget": 0}, "'budget' must be at least 1, not 0"),
        ({"op": "add-fault", "error": 6, "partitoin": 0}, "add-fault takes no 'partitoin'"),
        ({"op": "remove-fault", "id": 12345}, "no fault 12345 was installed"),
        ({"op": "explode"}, "no op \"explode\""),
    ]
    for request, reason in refused:
        with pytest.raises(Refused) as found:
            channel.ask(**request)
        assert str(found.value).startswith(reason), (request, str(found.value))
    assert channel.ask("nodes")["nodes"]  # still answering
    assert channel.ask("faults") == {"faults": []}  # nothing refused was installed


def raw_lines(cluster, data):
    with socket.create_connection(cluster.control_address.rsplit(":", 1), timeout=10) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return [json.loads(line) for line in received.splitlines()]


def test_hostile_lines(cluster):
    answers = raw_lines(cluster, b"not json\n[1, 2]\n\xff\xfe\n" + b"[" * 50000 + b"\n\n" +
                        b'{"op": "nodes"}')  # the last line without its newline is answered too
    expected = ["the line is not JSON: Expecting value at character 0", "the line must be a JSON object",
                "the line is not UTF-8 (byte 0)", "the line's JSON is nested too deeply", None]
    assert [a.get("error") for a in answers] == [e if e is None or "object" not in e else e + " with an 'op'"
                                                 for e in expected]
    assert answers[-1]["ok"] is True
    # past the longest line: said, and the connection closed, without reading the rest into memory
    answers = raw_lines(cluster, b"x" * (MAX_LINE + 10) + b'\n{"op": "nodes"}\n')
    assert answers == [{"ok": False, "error": f"a line is longer than {MAX_LINE} bytes"}]


def test_the_command_line(cluster, channel):
    topic, _ = topic_of(cluster)

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "kafkaproto", "cluster", "--channel", cluster.control_address,
                               *args], capture_output=True, text=True, timeout=60)
    leader = json.loads(cli("leader", topic, "0").stdout)["leader"]
    moved = cli("move-leader", topic, "0", str(leader % 3 + 1))
    assert moved.returncode == 0 and json.loads(moved.stdout)["leader"] == leader % 3 + 1
    added = cli("add-fault", "NOT_LEADER_OR_FOLLOWER", "--api-key", "Produce", "--api-key", "1", "--topic", topic,
                "--budget", "3")
    assert added.returncode == 0 and json.loads(added.stdout)["api_keys"] == [0, 1]
    assert [f["budget"] for f in json.loads(cli("faults").stdout)["faults"]] == [3]
    refused = cli("stop-node", "9")
    assert refused.returncode == 1 and "broker 9 is not one of the cluster's" in refused.stderr
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        unreachable = subprocess.run([sys.executable, "-m", "kafkaproto", "cluster", "--channel",
                                      f"127.0.0.1:{free.getsockname()[1]}", "nodes"], capture_output=True,
                                     text=True, timeout=60)
    assert unreachable.returncode == 2 and "cannot reach the control channel" in unreachable.stderr


def test_a_subprocess_cluster_is_moved_through_its_channel(tmp_path):
    with Broker({"log.dirs": str(tmp_path)}, subprocess=True, nodes=2) as running:
        assert running.control_address is not None
        client = RawClient(running.port)
        try:
            client.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
                name="sub", num_partitions=1, replication_factor=2)], timeout_ms=5000), 7)
        finally:
            client.close()
        leader, epoch = running.leader("sub", 0)
        running.move_leader("sub", 0, 3 - leader)
        assert running.leader("sub", 0) == (3 - leader, epoch + 1)
        running.stop_node(2)
        assert running.leader("sub", 0)[0] == 1


def test_an_address_in_use_stops_the_broker_with_its_reason(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        broker = Broker({"log.dirs": str(tmp_path), "kafkaproto.control.channel": f"127.0.0.1:{port}"})
        with pytest.raises(RuntimeError, match=f"cannot listen on 127.0.0.1:{port}: address already in use"):
            broker.start()
        broker.cleanup()
