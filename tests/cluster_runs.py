"""What the tests of real clients on a cluster of three brokers share (test_broker_cluster_clients.py for Java and
aiokafka, test_broker_cluster_go.py for franz-go and Sarama): the cluster, raw requests to whichever broker runs,
the nodes requests came to, and a client program driven through gates line by line."""

import queue
import subprocess
import threading
import uuid

import pytest

from kafkaproto import records
from kafkaproto.broker import Broker
from kafkaproto.messages import CreateTopicsRequest, FetchRequest, FindCoordinatorRequest, MetadataRequest
from test_kafka_broker import RawClient


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    with Broker({"log.dirs": str(tmp_path_factory.mktemp("cluster-runs")), "default.replication.factor": "3",
                 "min.insync.replicas": "2"}, nodes=3) as running:
        yield running


@pytest.fixture
def cluster(three):
    """The module's cluster for one test: its faults and controls removed, its stopped brokers started, after it."""
    yield three
    three.clear_faults()
    running = {b.node_id for b in ask_any(three, MetadataRequest(topics=[]), 12).brokers}
    for node in sorted(set(three.nodes) - running):
        three.start_node(node)


def ask_any(broker, body, version):
    """The answer of the first broker of the cluster that is running."""
    for node in sorted(broker.nodes):
        try:
            client = RawClient(broker.nodes[node][1])
        except OSError:  # stopped
            continue
        try:
            return client.call(body, version).body
        finally:
            client.close()
    raise AssertionError("no broker of the cluster is running")


def create_topic(broker, prefix):
    """A new topic of one partition, replicated on all three brokers: (name, topic id)."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    made = ask_any(broker, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=1, replication_factor=3)], timeout_ms=5000), 7).topics[0]
    assert made.error_code == 0, made
    return name, made.topic_id


def leader_client(broker, topic):
    leader, _ = broker.leader(topic)
    return RawClient(broker.nodes[leader][1])


def log_of(broker, topic):
    """[(offset, value)] of every record of the topic's partition, read from its leader."""
    client = leader_client(broker, topic)
    found, offset = [], 0
    try:
        while True:
            body = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                                topics=[FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
                                    partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])])
            partition = client.call(body, 12).body.responses[0].partitions[0]
            assert partition.error_code == 0, partition
            if offset >= partition.high_watermark:
                return found
            fetched = records.read_records(partition.records or b"")
            assert fetched, f"nothing fetched at {offset}, below the high watermark {partition.high_watermark}"
            found += [(record.offset, record.value.decode()) for record in fetched]
            offset = fetched[-1].offset + 1
    finally:
        client.close()


def nodes_asked(broker, api_key, wanted):
    """The nodes that the requests of api_key for which wanted(body) holds came to, in order, as a control that
    only watches sees them (on the broker's event loop: appending is all it does)."""
    asked = []

    def watch(request):
        if wanted(request.body):
            asked.append(request.node_id)
    broker.control(watch, api_keys=[api_key])
    return asked


def produces_to(topic, topic_id):
    return lambda body: any(t.name == topic or t.topic_id == topic_id for t in body.topic_data)


def coordinator_of(broker, group):
    """The broker coordinating group, as FindCoordinator tells a client."""
    found = ask_any(broker, FindCoordinatorRequest(key=group), 3)
    assert found.error_code == 0, found
    return found.node_id


def other_node(node):
    return node % 3 + 1


class Program:
    """A client program driven through gates: its stdout read line by line as it comes, a word on its stdin
    opening its next gate."""

    def __init__(self, args, log, line_timeout=90):
        self.log = log
        self.line_timeout = line_timeout  # seconds for its next line (the first includes a JVM's start)
        self._log_file = open(log, "w")
        self.process = subprocess.Popen([str(a) for a in args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self._log_file, text=True)
        self._lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def stderr(self):
        self._log_file.flush()
        return self.log.read_text(errors="replace")[-3000:]

    def next_line(self):
        try:
            line = self._lines.get(timeout=self.line_timeout)
        except queue.Empty:
            raise AssertionError(f"no line from the program in {self.line_timeout} s; its stderr ends:\n"
                                 f"{self.stderr()}") from None
        if line is None:
            raise AssertionError(f"the program ended (exit {self.process.wait()}) before its result; its stderr "
                                 f"ends:\n{self.stderr()}")
        return line

    def go(self):
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._log_file.close()
