"""Kafka's Java clients (4.3.1) and aiokafka on a cluster of three brokers: an idempotent producer and a consumer
group carry on while the partition's leader moves, the broker leading it stops and starts again, and the group's
coordinator moves, each at a known point of the run; and faults the broker injects are met as each client's own
documentation says they are (kafkaproto/broker/faults.py).

The Java programs are tests/kafka/ClusterMoves.java and tests/kafka/ClientFaults.java; aiokafka runs in this process
on its own event loop while the brokers run on theirs, in a thread."""

import asyncio
import subprocess

import pytest

from kafkaproto import errors, records
from kafkaproto.messages import (ApiKey, FindCoordinatorRequest, ProduceRequest)
import kafka_jvm
from cluster_runs import (Program, coordinator_of, create_topic, leader_client, log_of, nodes_asked,
                          other_node, produces_to)
from cluster_runs import cluster, three  # noqa: F401 - fixtures
from test_kafka_broker import RawClient

pytestmark = pytest.mark.above_the_codecs

RECORDS = 300
WINDOW = 40  # records a client may still send or read after a gate before it waits for the test's move
PRODUCER_GATES = (60, 130, 200)  # after this many acknowledged: move the leader; stop it; start it again
CONSUMER_GATE = 100  # after this many read: move the group coordinator
LINE_TIMEOUT = 90  # seconds for a program's next line (the first includes the JVM's start on a loaded machine)


@pytest.fixture(scope="module")
def moves_program():
    return kafka_jvm.program("4.3.1", "ClusterMoves")


@pytest.fixture(scope="module")
def faults_program():
    return kafka_jvm.program("4.3.1", "ClientFaults")


def produce_raw(broker, topic, values):
    """Write values to the topic's partition through its leader."""
    builder = records.RecordBatchBuilder()
    for value in values:
        builder.append(None, value.encode())
    client = leader_client(broker, topic)
    try:
        answer = client.call(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
            name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=builder.build())])]),
            9).body.responses[0].partition_responses[0]
    finally:
        client.close()
    assert answer.error_code == 0, answer


def runs_of(nodes):
    """nodes with each run of one node written once: [1, 1, 2, 2, 1] -> [1, 2, 1]."""
    return [node for i, node in enumerate(nodes) if i == 0 or nodes[i - 1] != node]


class Moves:
    """The cluster changes made at the gates of a run, and what each left: leaders[k] led the partition after the
    k-th change of leader (leaders[0] before any)."""

    def __init__(self, broker, topic, group):
        self.broker, self.topic, self.group = broker, topic, group
        self.leaders = [broker.leader(topic)[0]]
        self.stopped = None
        self.coordinators = []  # the group coordinator before and after its move

    def after_acknowledged(self, count):
        """The producer's gates: move the leader to another broker; stop the broker leading; start it again."""
        leader, epoch = self.broker.leader(self.topic)
        if count == PRODUCER_GATES[0]:
            self.broker.move_leader(self.topic, 0, other_node(leader))
        elif count == PRODUCER_GATES[1]:
            self.broker.stop_node(leader)
            self.stopped = leader
        else:
            self.broker.start_node(self.stopped)
        now, now_epoch = self.broker.leader(self.topic)
        assert now_epoch == epoch + (count != PRODUCER_GATES[2]), "a new leader, a new epoch; a broker back, none"
        if now != self.leaders[-1]:
            self.leaders.append(now)

    def after_read(self):
        self.coordinators.append(coordinator_of(self.broker, self.group))
        self.broker.move_coordinator("group", other_node(self.coordinators[0]), self.group)
        self.coordinators.append(coordinator_of(self.broker, self.group))


def check_run(cluster, topic, moves, acknowledged, read, committed, produced_at, committed_at):
    """What a run through the moves must leave: acknowledged and read, [(offset, value)] in the order the client
    told them; committed, the group's committed offset at the end; produced_at and committed_at, the nodes its
    Produce and OffsetCommit requests came to."""
    in_order = [(i, str(i)) for i in range(RECORDS)]
    assert sorted(acknowledged) == in_order, "each record acknowledged once, at the offset of its turn"
    assert log_of(cluster, topic) == in_order, "the log holds each record once"
    assert read == in_order, "the group read each record once"
    assert committed == RECORDS
    assert len(moves.leaders) == 3 and runs_of(produced_at) == moves.leaders, "the producer followed the leader"
    assert moves.coordinators[0] != moves.coordinators[1] and runs_of(committed_at) == moves.coordinators, \
        "the consumer followed the coordinator"


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_java_clients_through_leader_and_coordinator_moves(cluster, moves_program, tmp_path, group_protocol):
    """Kafka 4.3.1's idempotent producer (acks=all) writes 300 records while the partition's leader moves to another
    broker, the broker then leading it stops, and it starts again; a consumer group (classic, or KIP-848's) then
    reads them back, committing after each record, while the group coordinator moves. Each change is made after a
    known number of records were acknowledged or read, while the client has more to go. Every acknowledged record
    is in the log once, in the order sent, and read once; the producer went to each new leader and sent again what
    the old one refused; the commits went to the new coordinator and the last one holds."""
    topic, topic_id = create_topic(cluster, "java-moves")
    group = f"{topic}-group"
    produced_at = nodes_asked(cluster, ApiKey.PRODUCE, produces_to(topic, topic_id))
    committed_at = nodes_asked(cluster, ApiKey.OFFSET_COMMIT, lambda body: body.group_id == group)
    moves = Moves(cluster, topic, group)
    program = Program(["java", "-cp", moves_program, "ClusterMoves", cluster.bootstrap_servers, topic, group,
                       str(RECORDS), str(WINDOW), ",".join(map(str, PRODUCER_GATES)), str(CONSUMER_GATE),
                       group_protocol], tmp_path / "java.log")
    acknowledged, failed, read, said = [], [], [], {}
    try:
        while (line := program.next_line()) != "done":
            kind, *words = line.split(" ", 2)
            if kind == "ack":
                acknowledged.append((int(words[1]), words[0]))
                if len(acknowledged) in PRODUCER_GATES:
                    moves.after_acknowledged(len(acknowledged))
                    program.go()
            elif kind == "fail":
                failed.append(line)
            elif kind == "read":
                read.append((int(words[0]), words[1]))
                if len(read) == CONSUMER_GATE:
                    moves.after_read()
                    program.go()
            else:
                said[kind] = int(words[0])
        assert program.process.wait(30) == 0
    finally:
        program.close()
    assert not failed
    check_run(cluster, topic, moves, acknowledged, read, said["committed"], produced_at, committed_at)
    assert said["retries"] >= 1, "the batches the old leader refused were sent again"


def test_aiokafka_through_leader_and_coordinator_moves(cluster):
    """aiokafka's idempotent producer and a consumer group through the same run as the Java clients' test, in this
    process: the test's moves run in a thread of their own while the client's event loop goes on."""
    aiokafka = pytest.importorskip("aiokafka")
    topic, topic_id = create_topic(cluster, "aio-moves")
    group = f"{topic}-group"
    produced_at = nodes_asked(cluster, ApiKey.PRODUCE, produces_to(topic, topic_id))
    committed_at = nodes_asked(cluster, ApiKey.OFFSET_COMMIT, lambda body: body.group_id == group)
    moves = Moves(cluster, topic, group)
    partition = aiokafka.TopicPartition(topic, 0)

    async def in_thread(function, *args, done=None):
        """function(*args) run in a thread of its own while the client's event loop goes on; done (a future)
        told how it ended."""
        try:
            await asyncio.to_thread(function, *args)
        except BaseException as e:
            done.set_exception(e)
            raise
        done.set_result(None)

    async def produce():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                                             enable_idempotence=True, linger_ms=5, retry_backoff_ms=50)
        await producer.start()
        acknowledged = []
        gates = {gate: asyncio.get_running_loop().create_future() for gate in PRODUCER_GATES}
        moving = []

        def delivered(value, future):
            if future.cancelled() or future.exception() is not None:
                return  # raised where the futures are awaited
            acknowledged.append((future.result().offset, value))
            if len(acknowledged) in gates:
                moving.append(asyncio.ensure_future(in_thread(moves.after_acknowledged, len(acknowledged),
                                                              done=gates[len(acknowledged)])))
        try:
            sent = []
            for i in range(RECORDS):
                if i - WINDOW in gates:
                    await asyncio.wait_for(gates[i - WINDOW], LINE_TIMEOUT)
                future = await producer.send(topic, str(i).encode(), partition=0)
                future.add_done_callback(lambda future, value=str(i): delivered(value, future))
                sent.append(future)
                await asyncio.sleep(0.002)  # a steady stream rather than one burst
            await asyncio.wait_for(asyncio.gather(*sent), LINE_TIMEOUT)
            await asyncio.gather(*moving)
        finally:
            await producer.stop()
        return acknowledged

    async def consume(expected):
        consumer = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                                             auto_offset_reset="earliest", enable_auto_commit=False,
                                             max_poll_records=25, retry_backoff_ms=50)
        await consumer.start()
        read, moved, moving = [], None, None
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while len(read) < expected:
                assert loop.time() < deadline, f"read {len(read)} of {expected} records in 60 s"
                for message in (await consumer.getmany(timeout_ms=200)).get(partition, []):
                    if len(read) == CONSUMER_GATE + WINDOW:
                        await asyncio.wait_for(moved, LINE_TIMEOUT)
                    read.append((message.offset, message.value.decode()))
                    await consumer.commit({partition: message.offset + 1})
                    if len(read) == CONSUMER_GATE:
                        moved = asyncio.get_running_loop().create_future()
                        moving = asyncio.ensure_future(in_thread(moves.after_read, done=moved))
            await moving
            return read, await consumer.committed(partition)
        finally:
            await consumer.stop()

    async def run():
        acknowledged = await produce()
        return acknowledged, *await consume(len(acknowledged))

    acknowledged, read, committed = asyncio.run(run())
    check_run(cluster, topic, moves, acknowledged, read, committed, produced_at, committed_at)


def test_a_fault_and_a_control_see_the_broker_a_request_came_to(cluster):
    """On a cluster a fault for one node answers only the requests that came to that broker, and a control is told
    which broker each request came to (the moves tests above tell where clients went by it)."""
    fault = cluster.add_fault(errors.UNKNOWN_SERVER_ERROR, api_keys=[ApiKey.FIND_COORDINATOR], node=2)
    seen = nodes_asked(cluster, ApiKey.FIND_COORDINATOR, lambda body: True)
    answers = {}
    for node, (_, port) in sorted(cluster.nodes.items()):
        client = RawClient(port)
        try:
            answers[node] = client.call(FindCoordinatorRequest(key="anyone"), 3).body.error_code
        finally:
            client.close()
    assert answers == {1: 0, 2: errors.UNKNOWN_SERVER_ERROR.code, 3: 0}
    assert seen == [1, 2, 3] and fault.fired == 1


# ---- injected faults, met as each client's documentation says ---------------------------------------------------

def run_faults(program, broker, mode, topic, *more):
    """The lines tests/kafka/ClientFaults.java printed in mode."""
    run = subprocess.run(["java", "-cp", program, "ClientFaults", broker.bootstrap_servers, mode, topic,
                          *map(str, more)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"ClientFaults {mode} failed:\n{run.stderr[-3000:]}"
    return run.stdout.splitlines()


def test_java_producer_retries_not_enough_replicas(cluster, faults_program):
    """NOT_ENOUGH_REPLICAS twice, then the record is written once. The javadoc of the producer's Callback.onCompletion
    lists NotEnoughReplicasException among the retriable exceptions, and the retries setting's documentation says
    a send failing with a transient error is sent again until delivery.timeout.ms (the idempotent producer's
    sequence numbers keep the retries from writing it twice)."""
    topic, _ = create_topic(cluster, "java-retried")
    fault = cluster.add_fault(errors.NOT_ENOUGH_REPLICAS, api_keys=[ApiKey.PRODUCE], topic=topic, budget=2)
    assert run_faults(faults_program, cluster, "send", topic) == ["acked 0"]
    assert fault.fired == 2
    assert log_of(cluster, topic) == [(0, "once")]


def test_java_producer_gets_topic_authorization_exception(cluster, faults_program):
    """TOPIC_AUTHORIZATION_FAILED is not retried: the send's future throws TopicAuthorizationException, naming the
    topic. Callback.onCompletion's javadoc lists AuthorizationException among the non-retriable exceptions ("the
    message will never be sent"), and KafkaProducer.send's says get() on the future throws what the send met."""
    topic, _ = create_topic(cluster, "java-refused")
    fault = cluster.add_fault(errors.TOPIC_AUTHORIZATION_FAILED, api_keys=[ApiKey.PRODUCE], topic=topic)
    lines = run_faults(faults_program, cluster, "send", topic)
    assert len(lines) == 1 and lines[0].startswith(
        "error org.apache.kafka.common.errors.TopicAuthorizationException ") and topic in lines[0], lines
    assert fault.fired == 1, "asked once, not retried"
    assert log_of(cluster, topic) == []


def test_java_consumer_gets_offset_out_of_range_exception(cluster, faults_program):
    """With auto.offset.reset=none, a fetch answered OFFSET_OUT_OF_RANGE makes poll() throw
    OffsetOutOfRangeException with the partition's offset: KafkaConsumer.poll's javadoc says it throws
    InvalidOffsetException (OffsetOutOfRangeException's parent) when an offset is out of range and no reset policy
    is set, and auto.offset.reset's says "none" throws to the consumer. The application then goes where it chooses
    (the start) and reads on."""
    topic, _ = create_topic(cluster, "java-out-of-range")
    produce_raw(cluster, topic, ["a", "b", "c"])
    fault = cluster.add_fault(errors.OFFSET_OUT_OF_RANGE, api_keys=[ApiKey.FETCH], topic=topic, budget=1)
    assert run_faults(faults_program, cluster, "poll", topic, 1) == [
        f"error org.apache.kafka.clients.consumer.OffsetOutOfRangeException {topic}-0=1",
        "read 0 a", "read 1 b", "read 2 c", "end"]
    assert fault.fired == 1


def test_aiokafka_producer_retries_not_leader_or_follower(cluster):
    """NOT_LEADER_OR_FOLLOWER twice, then the record is written once: aiokafka's producer guide ("Retries and
    Message acknowledgement") says it retries most errors by itself, and enable_idempotence's documentation that
    exactly one copy of each message is written. (The same guide calls NotEnoughReplicasError not retriable, while
    aiokafka 0.14 marks it retriable and retries it: a fault of that error would test the code against itself, not
    the documentation.)"""
    aiokafka = pytest.importorskip("aiokafka")
    topic, _ = create_topic(cluster, "aio-retried")
    fault = cluster.add_fault(errors.NOT_LEADER_OR_FOLLOWER, api_keys=[ApiKey.PRODUCE], topic=topic, budget=2)

    async def send():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, enable_idempotence=True,
                                             retry_backoff_ms=50)
        await producer.start()
        try:
            return await asyncio.wait_for(producer.send_and_wait(topic, b"once", partition=0), 30)
        finally:
            await producer.stop()
    assert asyncio.run(send()).offset == 0
    assert fault.fired == 2
    assert log_of(cluster, topic) == [(0, "once")]


def test_aiokafka_producer_raises_topic_authorization_failed(cluster):
    """TOPIC_AUTHORIZATION_FAILED is not retried (aiokafka.errors marks it not retriable): send_and_wait raises
    TopicAuthorizationFailedError, as the producer guide says an unrecoverable error reaches the message's
    future."""
    aiokafka = pytest.importorskip("aiokafka")
    topic, _ = create_topic(cluster, "aio-refused")
    fault = cluster.add_fault(errors.TOPIC_AUTHORIZATION_FAILED, api_keys=[ApiKey.PRODUCE], topic=topic)

    async def send():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, enable_idempotence=True,
                                             retry_backoff_ms=50)
        await producer.start()
        try:
            with pytest.raises(aiokafka.errors.TopicAuthorizationFailedError) as raised:
                await asyncio.wait_for(producer.send_and_wait(topic, b"never", partition=0), 30)
            return raised.value
        finally:
            await producer.stop()
    assert topic in str(asyncio.run(send()))
    assert fault.fired == 1, "asked once, not retried"
    assert log_of(cluster, topic) == []


def test_aiokafka_consumer_raises_offset_out_of_range(cluster):
    """With auto_offset_reset="none", a fetch answered OFFSET_OUT_OF_RANGE raises OffsetOutOfRangeError from
    getone(), naming the partition and its offset: AIOKafkaConsumer's documentation of auto_offset_reset says
    "none" raises an exception so that the application can handle it. It then seeks to the start and reads on."""
    aiokafka = pytest.importorskip("aiokafka")
    topic, _ = create_topic(cluster, "aio-out-of-range")
    produce_raw(cluster, topic, ["a", "b", "c"])
    fault = cluster.add_fault(errors.OFFSET_OUT_OF_RANGE, api_keys=[ApiKey.FETCH], topic=topic, budget=1)
    partition = aiokafka.TopicPartition(topic, 0)

    async def consume():
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="none",
                                             enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([partition])
            consumer.seek(partition, 1)
            with pytest.raises(aiokafka.errors.OffsetOutOfRangeError) as raised:
                await asyncio.wait_for(consumer.getone(), 30)
            await consumer.seek_to_beginning(partition)
            read = []
            while len(read) < 3:
                message = await asyncio.wait_for(consumer.getone(), 30)
                read.append((message.offset, message.value.decode()))
            return raised.value.args, read
        finally:
            await consumer.stop()
    raised, read = asyncio.run(consume())
    assert raised == ({partition: 1},)
    assert read == [(0, "a"), (1, "b"), (2, "c")]
    assert fault.fired == 1
