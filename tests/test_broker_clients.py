"""The broker with real, unmodified clients: kafka-python, aiokafka and Apache Kafka's Java clients,
over real sockets; and what it does with clients that misbehave.

One broker (the ``kafkaproto_broker`` fixture the package installs for pytest)
serves the whole module; each test uses topics of its own.
"""

import asyncio
import socket
import struct
import subprocess
import threading
import time
import uuid

import pytest

from kafkaproto import decode_response, encode_request, errors, records
from kafkaproto.connection import ClientConnection
from kafkaproto.broker import Broker
from kafkaproto.messages import ApiVersionsRequest, ConsumerGroupDescribeRequest, MetadataRequest, RequestHeader

import kafka_jvm

kafka = pytest.importorskip("kafka")
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402

# The broker is the same code over either codec implementation (conftest.py: the pure-Python pass).
pytestmark = pytest.mark.above_the_codecs


def fresh(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def consume_all(bootstrap, topic, partitions, expected, timeout_ms=10000):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=timeout_ms)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    got = []
    for message in consumer:
        got.append(message)
        if len(got) >= expected:
            break
    consumer.close()
    return got


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_kafka_python_produces_and_consumes(kafkaproto_broker, acks):
    bootstrap = kafkaproto_broker.bootstrap_servers
    topic = fresh("kp")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 3, 1)])
    assert topic in admin.list_topics()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=acks, compression_type="gzip", linger_ms=5)
    futures = [producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % 3,
                             headers=[("n", str(i).encode())]) for i in range(90)]
    producer.flush()
    if acks != 0:
        offsets = sorted((f.get(10).partition, f.get(10).offset) for f in futures)
        assert offsets == sorted((p, o) for p in range(3) for o in range(30))
    producer.close()
    got = consume_all(bootstrap, topic, 3, 90)
    assert sorted(m.value for m in got) == sorted(b"v%d" % i for i in range(90))
    for message in got:
        assert message.key == b"k" + message.value[1:] and message.headers == [("n", message.value[1:])]
    by_partition = {}
    for message in got:
        by_partition.setdefault(message.partition, []).append(message.offset)
    assert all(offsets == list(range(30)) for offsets in by_partition.values())
    admin.delete_topics([topic])
    assert topic not in admin.list_topics()
    admin.close()


def test_kafka_python_idempotent_producer(kafkaproto_broker):
    bootstrap = kafkaproto_broker.bootstrap_servers
    topic = fresh("idem")
    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all")
    for i in range(50):
        producer.send(topic, value=b"%d" % i)
    producer.flush()
    producer.close()
    got = consume_all(bootstrap, topic, 1, 50)  # auto-created with num.partitions=1
    assert [m.value for m in got] == [b"%d" % i for i in range(50)]
    assert [m.offset for m in got] == list(range(50))


def test_aiokafka_transactions_and_a_group(kafkaproto_broker):
    aiokafka = pytest.importorskip("aiokafka")
    bootstrap = kafkaproto_broker.bootstrap_servers
    topic = fresh("aio-txn")

    async def run():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=fresh("aio-tid"))
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait(topic, b"committed")
            await producer.begin_transaction()
            await producer.send_and_wait(topic, b"aborted")
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send_and_wait(topic, b"after")
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=fresh("aio-group"),
                                             auto_offset_reset="earliest", isolation_level="read_committed",
                                             enable_auto_commit=False)
        await consumer.start()
        try:
            got = []
            deadline = time.monotonic() + 20
            while len(got) < 2 and time.monotonic() < deadline:
                for messages in (await consumer.getmany(timeout_ms=500)).values():
                    got += [m.value for m in messages]
            await consumer.commit()
            committed = await consumer.committed(aiokafka.TopicPartition(topic, 0))
            return got, committed
        finally:
            await consumer.stop()

    got, committed = asyncio.run(run())
    assert got == [b"committed", b"after"]
    assert committed is not None and committed >= 5  # past both markers and the aborted record


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_aiokafka_produces_and_consumes(kafkaproto_broker, acks):
    """acks=all is idempotent too; with acks=0 nothing is answered, yet every record must land in order."""
    aiokafka = pytest.importorskip("aiokafka")
    bootstrap = kafkaproto_broker.bootstrap_servers
    topic = fresh("aio")

    async def run():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, acks=acks,
                                             enable_idempotence=acks == "all", compression_type="zstd")
        await producer.start()
        try:
            for i in range(20):
                await producer.send_and_wait(topic, value=b"a%d" % i, key=b"k")
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
        await consumer.start()
        try:
            consumer.assign([aiokafka.TopicPartition(topic, 0)])
            got = []
            deadline = time.monotonic() + 10
            while len(got) < 20 and time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=500)
                for messages in batch.values():
                    got += messages
            return got
        finally:
            await consumer.stop()

    got = asyncio.run(run())
    assert [m.value for m in got] == [b"a%d" % i for i in range(20)]


@pytest.fixture(scope="module", params=kafka_jvm.KAFKA_VERSIONS, ids=lambda v: f"java-{v}")
def java_clients(request):
    try:
        classes = kafka_jvm.compiled(request.param, "Clients")
        cp = kafka_jvm.classpath(request.param, classes)
    except kafka_jvm.KafkaUnavailable as e:
        kafka_jvm.unavailable(str(e))
    return cp


def test_java_clients_whole_sequence(kafkaproto_broker, java_clients):
    """Admin create and describe (by name and ID), an idempotent lz4 producer, a transaction committed and one
    aborted, a read_committed consumer in a group that commits, and delete by topic ID."""
    bootstrap = kafkaproto_broker.bootstrap_servers
    topic = fresh("java")
    for mode in ("admin", "produce", "txn", "consume", "delete"):
        run = subprocess.run(["java", "-cp", java_clients, "Clients", bootstrap, mode, topic], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, f"Java {mode} failed:\n{run.stderr[-3000:]}"
        if mode == "txn":
            got = consume_all(bootstrap, topic, 2, 32)
            values = sorted(m.value for m in got)
            assert values == sorted([f"value-{i} from the Java producer".encode() for i in range(30)]
                                    + [b"committed", b"aborted"])  # read_uncommitted sees the aborted one
            assert all(m.headers == [("trace", b"t" + m.key[4:])] for m in got if m.key.startswith(b"key-"))
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    assert topic not in admin.list_topics()
    admin.close()


@pytest.mark.parametrize("acks", ["0", "1"])
def test_java_producer_acks_0_and_1(kafkaproto_broker, java_clients, acks, tmp_path):
    bootstrap = kafkaproto_broker.bootstrap_servers
    topic = fresh(f"java-acks{acks}")
    config = tmp_path / "client.properties"
    config.write_text(f"acks={acks}\nenable.idempotence=false\n")
    for mode in ("admin", "produce"):
        run = subprocess.run(["java", f"-Dclient.config={config}", "-cp", java_clients, "Clients", bootstrap, mode,
                              topic], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-3000:]
    got = consume_all(bootstrap, topic, 2, 30)
    assert sorted(m.value for m in got) == sorted(f"value-{i} from the Java producer".encode() for i in range(30))


def test_java_group_of_two_with_a_rebalance(kafkaproto_broker, java_clients):
    """Two Java consumers in one group, the second joining (and so rebalancing the group) while the first is
    in it: between them, committing after every poll, they read every record."""
    bootstrap = kafkaproto_broker.bootstrap_servers
    topic = fresh("java-grp")
    for mode in ("admin", "produce"):
        run = subprocess.run(["java", "-cp", java_clients, "Clients", bootstrap, mode, topic], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-3000:]
    members = []
    for _ in range(2):
        members.append(subprocess.Popen(["java", "-cp", java_clients, "Clients", bootstrap, "member", topic],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        time.sleep(1.5)
    outputs = [m.communicate(timeout=120) for m in members]
    assert all(m.returncode == 0 for m in members), [err[-2000:] for _, err in outputs]
    read = [{tuple(map(int, line.split())) for line in out.splitlines() if line.strip()} for out, _ in outputs]
    assert read[0] | read[1] == {(p, o) for p in range(2) for o in range(15)}


def java_member(java_clients, bootstrap, topic, group, config, quiet_ms):
    """A Java consumer of tests/kafka/Clients.java's member mode, running: it prints "partition offset" per record."""
    return subprocess.Popen(["java", f"-Dclient.config={config}", f"-Dmember.group={group}",
                             f"-Dmember.quiet.ms={quiet_ms}", "-cp", java_clients, "Clients", bootstrap, "member",
                             topic], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(member):
    """What a Java member read, once it has stopped: {(partition, offset)}."""
    out, err = member.communicate(timeout=120)
    assert member.returncode == 0, err[-3000:]
    return {tuple(map(int, line.split())) for line in out.splitlines() if line.strip()}


def produce_late(bootstrap, topic):
    """20 more records, 10 to each of the topic's two partitions (offsets 15-24 after the Java producer's 30)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(20):
        producer.send(topic, value=b"late-%d" % i, partition=i % 2)
    producer.flush(20)
    producer.close()


LATE = {(p, o) for p in range(2) for o in range(15, 25)}
EVERYTHING = {(p, o) for p in range(2) for o in range(25)}


def test_java_kip848_group_of_two_with_a_member_leaving(kafkaproto_broker, java_clients, tmp_path):
    """Two Java consumers with group.protocol=consumer (KIP-848, the broker assigns): the second joining takes
    partitions from the first; once the first has left, the second is given its partitions and reads what is
    produced after."""
    if "/3.9.2/" in java_clients:
        pytest.skip("the KIP-848 consumer is generally available from the 4.0 Java client")
    bootstrap = kafkaproto_broker.bootstrap_servers
    topic, group = fresh("java-848"), fresh("java-848-group")
    for mode in ("admin", "produce"):
        run = subprocess.run(["java", "-cp", java_clients, "Clients", bootstrap, mode, topic], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-3000:]
    config = tmp_path / "consumer.properties"
    config.write_text("group.protocol=consumer\n")
    first = java_member(java_clients, bootstrap, topic, group, config, 8000)
    time.sleep(1.5)
    second = java_member(java_clients, bootstrap, topic, group, config, 20000)
    # While both are in, the broker splits the two partitions between them (revoking one from the first).
    shares = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and sorted(shares) != [1, 1]:
        time.sleep(0.5)
        with raw_connection(kafkaproto_broker) as sock:
            described = ask(sock, ClientConnection(), ConsumerGroupDescribeRequest(group_ids=[group]), 1).body
        shares = [sum(len(t.partitions) for t in m.assignment.topic_partitions) for m in described.groups[0].members]
    assert sorted(shares) == [1, 1], f"the two members never shared the partitions: {shares}"
    first_read = finished(first)
    produce_late(bootstrap, topic)
    second_read = finished(second)
    assert first_read | second_read == EVERYTHING
    assert LATE <= second_read, "the member left behind got no partitions"


def test_java_group_moving_to_kip848_and_back(kafkaproto_broker, java_clients, tmp_path):
    """A classic Java consumer's group is joined by a KIP-848 one (the group becomes a consumer group, the two
    share the partitions); when the KIP-848 member leaves, the group is a classic group again and the classic
    member reads on."""
    if "/3.9.2/" in java_clients:
        pytest.skip("the KIP-848 consumer is generally available from the 4.0 Java client")
    bootstrap = kafkaproto_broker.bootstrap_servers
    topic, group = fresh("java-mig"), fresh("java-mig-group")
    for mode in ("admin", "produce"):
        run = subprocess.run(["java", "-cp", java_clients, "Clients", bootstrap, mode, topic], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-3000:]
    configs = {}
    for protocol in ("classic", "consumer"):
        configs[protocol] = tmp_path / f"{protocol}.properties"
        configs[protocol].write_text(f"group.protocol={protocol}\n")

    def member(protocol, quiet_ms):
        return java_member(java_clients, bootstrap, topic, group, configs[protocol], quiet_ms)

    def describe():
        with raw_connection(kafkaproto_broker) as sock:
            return ask(sock, ClientConnection(), ConsumerGroupDescribeRequest(group_ids=[group]), 1).body.groups[0]

    classic = member("classic", 25000)
    time.sleep(2)
    modern = member("consumer", 8000)
    seen = None
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        time.sleep(0.5)
        described = describe()
        if described.error_code == 0:
            seen = sorted((m.member_type, sum(len(t.partitions) for t in m.assignment.topic_partitions))
                          for m in described.members)
            if seen == [(0, 1), (1, 1)]:
                break
    assert seen == [(0, 1), (1, 1)], f"a classic and a KIP-848 member never shared the partitions: {seen}"
    modern_read = finished(modern)
    assert describe().error_code == errors.GROUP_ID_NOT_FOUND.code  # a classic group again
    produce_late(bootstrap, topic)
    classic_read = finished(classic)
    assert classic_read | modern_read == EVERYTHING
    assert LATE <= classic_read, "the classic member was not given both back"


def test_confluent_kafka_idempotence_transactions_and_groups(kafkaproto_broker):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic
    bootstrap = kafkaproto_broker.bootstrap_servers
    topic = fresh("rdkafka")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 2, 1)]).values():
        future.result(10)
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                         "compression.type": "snappy", "linger.ms": 5})
    reports = []
    for i in range(100):
        producer.produce(topic, value=b"r%d" % i, key=b"same", on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(20) == 0 and reports == [None] * 100
    txn = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": fresh("rd-txn")})
    txn.init_transactions(20)
    txn.begin_transaction()
    txn.produce(topic, value=b"committed", partition=0)
    txn.commit_transaction(20)
    txn.begin_transaction()
    txn.produce(topic, value=b"aborted", partition=0)
    txn.flush(20)
    txn.abort_transaction(20)
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": fresh("rd-group"),
                                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    got = []
    next_offsets = {}
    deadline = time.monotonic() + 30
    while len(got) < 101 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message.value())
            next_offsets[message.partition()] = message.offset() + 1
    consumer.commit(asynchronous=False)
    committed = consumer.committed([confluent_kafka.TopicPartition(topic, p) for p in range(2)], timeout=10)
    consumer.close()
    assert sorted(got) == sorted([b"r%d" % i for i in range(100)] + [b"committed"])
    assert {tp.partition: tp.offset for tp in committed if tp.offset >= 0} == next_offsets
    for future in admin.delete_topics([topic]).values():
        future.result(10)


@pytest.fixture(scope="module")
def kafkajs():
    """node, with kafkajs installed from tests/kafka/package-lock.json (once)."""
    import shutil
    from pathlib import Path
    here = Path(kafka_jvm.HERE)
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        kafka_jvm.unavailable("node and npm are needed for the kafkajs client")
    with kafka_jvm.cache_lock("npm"):  # parallel workers install once
        if not (here / "node_modules" / "kafkajs").is_dir():
            run = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=here, capture_output=True, text=True,
                                 timeout=300)
            if run.returncode != 0:
                kafka_jvm.unavailable(f"npm ci failed: {run.stderr[-2000:]}")
    return node, here / "kafkajs_client.js"


def test_kafkajs_admin_producer_group_consumer_and_delete(kafkaproto_broker, kafkajs):
    node, script = kafkajs
    run = subprocess.run([node, str(script), kafkaproto_broker.bootstrap_servers, fresh("js"), fresh("js-group")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]


def test_kafkajs_idempotence_transactions_and_read_committed(kafkaproto_broker, kafkajs):
    node, script = kafkajs
    run = subprocess.run([node, str(script.with_name("kafkajs_broker.js")), kafkaproto_broker.bootstrap_servers,
                          fresh("js-txn"), fresh("js-txn-group")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]


def test_kafka_python_transactions_and_read_committed(kafkaproto_broker):
    bootstrap = kafkaproto_broker.bootstrap_servers
    topic = fresh("kp-txn")
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=fresh("kp-tid"))
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(topic, b"committed")
    producer.commit_transaction()
    producer.begin_transaction()
    producer.send(topic, b"aborted")
    producer.flush()
    producer.abort_transaction()
    producer.close()
    committed = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=fresh("kp-rc"), auto_offset_reset="earliest",
                              isolation_level="read_committed", consumer_timeout_ms=3000)
    assert [m.value for m in committed] == [b"committed"]
    committed.close()
    everything = consume_all(bootstrap, topic, 1, 2)
    assert [m.value for m in everything] == [b"committed", b"aborted"]  # read_uncommitted sees both


def test_kafka_python_group_of_two_rebalances_and_commits(kafkaproto_broker):
    bootstrap = kafkaproto_broker.bootstrap_servers
    topic, group = fresh("grp"), fresh("group")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 4, 1)])
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(40):
        producer.send(topic, value=b"%d" % i, partition=i % 4)
    producer.flush()

    def member():
        return KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, heartbeat_interval_ms=200, session_timeout_ms=6000)

    first = member()
    seen = []
    deadline = time.monotonic() + 20
    while len(seen) < 20 and time.monotonic() < deadline:
        for messages in first.poll(200).values():
            seen += messages
    assert len(first.assignment()) == 4
    first.commit()
    second = member()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (second.assignment() and len(first.assignment()) == 2):
        for consumer in (first, second):
            for messages in consumer.poll(100).values():
                seen += messages
    assert len(first.assignment()) == 2 and len(second.assignment()) == 2  # the range assignor split the 4
    assert not first.assignment() & second.assignment()
    deadline = time.monotonic() + 20
    while len({(m.partition, m.offset) for m in seen}) < 40 and time.monotonic() < deadline:
        for consumer in (first, second):
            for messages in consumer.poll(100).values():
                seen += messages
    assert {(m.partition, m.offset) for m in seen} == {(p, o) for p in range(4) for o in range(10)}
    first.commit()
    second.commit()
    first.close()
    second.close()
    offsets = admin.list_group_offsets(group)[group]
    assert {tp.partition: meta.offset for tp, meta in offsets.items()} == {p: 10 for p in range(4)}
    assert {"group_id": group, "protocol_type": "consumer", "group_state": "Empty",
            "group_type": "classic"} in admin.list_groups()
    admin.close()
    producer.close()


@pytest.mark.parametrize("acks", [0, 1, -1])
def test_confluent_kafka_acks_and_a_group_of_two(kafkaproto_broker, acks):
    """librdkafka: acks 0, 1 and all; then two consumers in one group split the partitions, commit, and the
    one left takes over the other's partitions (and committed positions) when it leaves."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic
    bootstrap = kafkaproto_broker.bootstrap_servers
    topic, group = fresh("rd-grp"), fresh("rd-group")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 4, 1)]).values():
        future.result(10)
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 2})
    for i in range(40):
        producer.produce(topic, value=b"%d" % i, partition=i % 4)
    assert producer.flush(20) == 0

    def member():
        consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                             "session.timeout.ms": 6000, "heartbeat.interval.ms": 200})
        consumer.subscribe([topic])
        return consumer

    first, second = member(), member()
    seen = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (len(first.assignment()) == 2 and len(second.assignment()) == 2
                                               and len(seen) >= 20):
        for consumer in (first, second):
            message = consumer.poll(0.1)
            if message is not None and message.error() is None and message.partition() in {
                    tp.partition for tp in consumer.assignment()}:
                seen[(message.partition(), message.offset())] = message.value()
                try:
                    consumer.commit(message=message, asynchronous=False)
                except confluent_kafka.KafkaException as e:  # a rebalance under way, as with Kafka: go on
                    assert e.args[0].code() == confluent_kafka.KafkaError.REBALANCE_IN_PROGRESS, e
    assert {tp.partition for tp in first.assignment()} | {tp.partition for tp in second.assignment()} == set(
        range(4))
    second.close()  # leaves: its partitions go to the first member, from their committed offsets
    deadline = time.monotonic() + 30
    while len(seen) < 40 and time.monotonic() < deadline:
        message = first.poll(0.2)
        if message is not None and message.error() is None:
            seen[(message.partition(), message.offset())] = message.value()
    first.close()
    assert sorted(seen) == [(p, o) for p in range(4) for o in range(10)]
    assert sorted(seen.values(), key=int) == [b"%d" % i for i in range(40)]


def test_aiokafka_admin_group_of_two_and_delete(kafkaproto_broker):
    aiokafka = pytest.importorskip("aiokafka")
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic as AioNewTopic
    bootstrap = kafkaproto_broker.bootstrap_servers
    topic, group = fresh("aio-grp"), fresh("aio-group")

    async def run():
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([AioNewTopic(topic, 2, 1)])
            producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1)
            await producer.start()
            for i in range(20):
                await producer.send_and_wait(topic, b"%d" % i, partition=i % 2)
            await producer.stop()
            members = [aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                                 auto_offset_reset="earliest", enable_auto_commit=False,
                                                 heartbeat_interval_ms=200) for _ in range(2)]
            for consumer in members:
                await consumer.start()
            got = {}
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not (len(got) == 20 and all(
                    len(c.assignment()) == 1 for c in members)):
                for consumer in members:
                    for messages in (await consumer.getmany(timeout_ms=100)).values():
                        for m in messages:
                            got[(m.partition, m.offset)] = m.value
                    if consumer.assignment():
                        await consumer.commit()
            assignments = [c.assignment() for c in members]
            for consumer in members:
                await consumer.stop()
            await admin.delete_topics([topic])
            return got, assignments, await admin.list_topics()
        finally:
            await admin.close()

    got, assignments, topics = asyncio.run(run())
    assert sorted(got) == [(p, o) for p in range(2) for o in range(10)]
    assert all(len(a) == 1 for a in assignments) and assignments[0] != assignments[1]
    assert topic not in topics


def test_restart_and_continue(tmp_path):
    """Topics, records, committed offsets and producer ids are all there after a clean restart."""
    overrides = {"num.partitions": "1"}
    with Broker(overrides, log_dir=tmp_path) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True)
        for i in range(10):
            producer.send("kept", value=b"%d" % i).get(10)
        producer.close()
        consumer = KafkaConsumer("kept", bootstrap_servers=broker.bootstrap_servers, group_id="g",
                                 auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=5000)
        assert len([next(consumer) for _ in range(6)]) == 6
        consumer.commit()
        consumer.close()
    with Broker(overrides, log_dir=tmp_path) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True)
        assert producer.send("kept", value=b"10").get(10).offset == 10
        producer.close()
        consumer = KafkaConsumer("kept", bootstrap_servers=broker.bootstrap_servers, group_id="g",
                                 auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=3000)
        assert [m.value for m in consumer] == [b"6", b"7", b"8", b"9", b"10"]
        consumer.close()


def test_clients_keep_going_through_a_restart(tmp_path, java_clients, kafkajs):
    """Long-lived kafka-python and confluent-kafka producers and consumers carry on when the broker restarts
    on the same address and data; aiokafka's records from before are read after it; the Java clients' and
    kafkajs' sequences run on the restarted broker."""
    aiokafka = pytest.importorskip("aiokafka")
    confluent_kafka = pytest.importorskip("confluent_kafka")
    first = Broker({"num.partitions": "1"}, log_dir=tmp_path).start()
    overrides = {"num.partitions": "1", "listeners": f"PLAINTEXT://127.0.0.1:{first.port}"}
    bootstrap = first.bootstrap_servers
    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, retries=20,
                             retry_backoff_ms=200)
    rd_producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    consumer = KafkaConsumer("through", bootstrap_servers=bootstrap, group_id="through-group",
                             auto_offset_reset="earliest", enable_auto_commit=False)
    for i in range(5):
        producer.send("through", b"kp-%d" % i).get(10)
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 5 and time.monotonic() < deadline:
        for messages in consumer.poll(200).values():
            got += [m.value for m in messages]
    consumer.commit()

    async def aio_produce():
        aio = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
        await aio.start()
        try:
            await aio.send_and_wait("aio-through", b"before the restart")
        finally:
            await aio.stop()

    async def aio_consume():
        aio = aiokafka.AIOKafkaConsumer("aio-through", bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                        group_id="aio-through-group")
        await aio.start()
        try:
            return (await aio.getone()).value
        finally:
            await aio.stop()

    asyncio.run(aio_produce())
    first.stop()
    second = Broker(overrides, log_dir=tmp_path).start()
    try:
        for i in range(5, 10):
            producer.send("through", b"kp-%d" % i).get(30)  # the same producer, reconnected
        reports = []
        rd_producer.produce("through", b"rd-after", on_delivery=lambda err, msg: reports.append(err))
        assert rd_producer.flush(30) == 0 and reports == [None]
        deadline = time.monotonic() + 30
        while len(got) < 11 and time.monotonic() < deadline:
            for messages in consumer.poll(200).values():
                got += [m.value for m in messages]
        assert got == [b"kp-%d" % i for i in range(10)] + [b"rd-after"]  # no record twice, none lost
        assert asyncio.run(asyncio.wait_for(aio_consume(), 30)) == b"before the restart"
        topic = fresh("java-restart")
        for mode in ("admin", "produce"):
            run = subprocess.run(["java", "-cp", java_clients, "Clients", bootstrap, mode, topic],
                                 capture_output=True, text=True, timeout=120)
            assert run.returncode == 0, f"Java {mode} after a restart failed:\n{run.stderr[-3000:]}"
        node, script = kafkajs
        run = subprocess.run([node, str(script.with_name("kafkajs_broker.js")), bootstrap, fresh("js-restart"),
                              fresh("js-restart-group")], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-3000:]
    finally:
        consumer.close()
        producer.close()
        second.stop()
        first.cleanup()


def test_a_compacted_topic_through_real_clients(tmp_path):
    """A topic created compacted through the admin API keeps only each key's latest value, and consumers
    read past the gaps compaction leaves."""
    with Broker({"log.cleaner.backoff.ms": "100"}, log_dir=tmp_path) as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        admin.create_topics([NewTopic("settings", 1, 1, topic_configs={"cleanup.policy": "compact",
                                                                       "internal.segment.bytes": "2000"})])
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all")
        for round_ in range(20):
            for key in (b"colour", b"size", b"shape"):
                producer.send("settings", key=key, value=b"%s-%d" % (key, round_)).get(10)
        producer.send("settings", key=b"shape", value=None).get(10)  # a tombstone
        for _ in range(30):
            producer.send("settings", key=b"filler", value=b"x" * 100).get(10)  # rolls the segment
        producer.close()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            got = consume_all(broker.bootstrap_servers, "settings", 1, 10**6, timeout_ms=1500)
            latest = {}
            for m in got:
                latest.setdefault(m.key, []).append(m.value)
            if all(len(values) == 1 for key, values in latest.items() if key != b"filler"):
                break
            time.sleep(0.3)
        assert latest[b"colour"] == [b"colour-19"] and latest[b"size"] == [b"size-19"]
        assert latest[b"shape"] == [None]  # the tombstone stays for delete.retention.ms
        offsets = [m.offset for m in got]
        assert offsets == sorted(offsets) and offsets[-1] == 90 and len(offsets) < 91
        admin.close()


# --- clients that misbehave


def raw_connection(broker):
    return socket.create_connection((broker.host, broker.port), timeout=10)


def receive(sock, client):
    while True:
        data = sock.recv(65536)
        if not data:
            return None
        events = client.receive_data(data)
        if events:
            return events[0]


def ask(sock, client, body, version, correlation_id=1):
    header = RequestHeader(request_api_key=body.api_key, request_api_version=version, correlation_id=correlation_id,
                           client_id="tests")
    sock.sendall(client.send_request(header, body))
    return receive(sock, client)


def still_serving(broker):
    with raw_connection(broker) as sock:
        return ask(sock, ClientConnection(), MetadataRequest(topics=None), 12).body.brokers[0].node_id == 1


def closed_by_peer(sock):
    sock.settimeout(10)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


@pytest.mark.parametrize("version", [5, 99], ids=["v5-read-but-not-served", "v99-unknown"])
def test_api_versions_above_the_served_ones_is_answered_at_v0(kafkaproto_broker, version):
    """Kafka's fallback (KIP-511), whether kafkaproto reads the version (v5, franz-go's first request, is in trunk's
    spec) or not: UNSUPPORTED_VERSION and ApiVersions' own versions alone, written at v0."""
    with raw_connection(kafkaproto_broker) as sock:
        body = ApiVersionsRequest(client_software_name="franz-go", client_software_version="1.22.0")
        known = min(version, 5)
        frame = bytearray(encode_request(RequestHeader(request_api_key=18, request_api_version=known, correlation_id=9,
                                                       client_id="x"), body, known))
        struct.pack_into(">h", frame, 6, version)
        sock.sendall(frame)
        size = struct.unpack(">i", sock.recv(4))[0]
        data = b""
        while len(data) < size:
            data += sock.recv(size - len(data))
        response = decode_response(data, 18, 0)
        assert response.header.correlation_id == 9 and response.body.error_code == 35
        assert [(k.api_key, k.min_version, k.max_version) for k in response.body.api_keys] == [(18, 0, 4)]


@pytest.mark.parametrize("frame", [
    struct.pack(">i", 2**30),  # a size far over socket.request.max.bytes, refused before allocating
    struct.pack(">ihhi", 8, 999, 0, 1),  # an api key nobody knows
    struct.pack(">i", 12) + b"\x00\x03\x00\x0c" + b"\xff" * 8,  # Metadata v12 that cannot be read
], ids=["oversized", "unknown-api-key", "garbage"])
def test_a_bad_frame_closes_only_that_connection(kafkaproto_broker, frame):
    with raw_connection(kafkaproto_broker) as bystander, raw_connection(kafkaproto_broker) as sock:
        sock.sendall(frame)
        assert closed_by_peer(sock)
        assert ask(bystander, ClientConnection(), MetadataRequest(topics=None), 12).body.controller_id == 1


def test_a_thousand_idle_connections_and_stalled_ones(tmp_path):
    """1,000 idle connections (some stalled halfway through a size prefix) leave the broker serving others with
    bounded memory, and connections.max.idle.ms closes the silent ones."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    broker = Broker({"connections.max.idle.ms": "3000"}, log_dir=tmp_path, subprocess=True).start()
    sockets = []
    try:
        baseline = rss_kb(broker.process.pid)
        sockets = [raw_connection(broker) for _ in range(1000)]
        for sock in sockets[::50]:
            sock.sendall(b"\x00\x00")  # half a size prefix, then silence
        assert still_serving(broker)
        grown = rss_kb(broker.process.pid) - baseline
        assert grown < 64 * 1024, f"1,000 idle connections cost {grown} KiB"
        assert all(closed_by_peer(sock) for sock in sockets[::50])  # closed once idle for 3 s
    finally:
        for sock in sockets:
            sock.close()
        broker.stop()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def test_acknowledged_records_survive_kill_9(tmp_path):
    """A producer with acks=all is running when the broker is SIGKILLed; after a restart every acknowledged
    record is there, in order, at the offset it was acknowledged with, and a group's committed offset too."""
    topic = "durable"
    broker = Broker({"num.partitions": "1"}, log_dir=tmp_path, subprocess=True).start()
    consumer = KafkaConsumer("before", bootstrap_servers=broker.bootstrap_servers, group_id="kept-group",
                             auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=5000)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True)
    for i in range(5):
        producer.send("before", b"%d" % i).get(10)
    assert len([next(consumer) for _ in range(3)]) == 3
    consumer.commit()  # offset 3, committed before the kill
    consumer.close(autocommit=False)
    acked = []
    stop = threading.Event()

    def load():
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all", linger_ms=1,
                                 retries=0, max_block_ms=5000, request_timeout_ms=3000)
        i = 0
        try:
            while not stop.is_set():
                value = b"%08d" % i
                try:
                    metadata = producer.send(topic, value=value).get(5)
                except Exception:
                    return
                acked.append((metadata.offset, value))
                i += 1
        finally:
            producer.close(timeout=1)

    worker = threading.Thread(target=load)
    worker.start()
    deadline = time.monotonic() + 30
    while len(acked) < 300 and time.monotonic() < deadline:
        time.sleep(0.05)
    broker.kill()
    stop.set()
    worker.join(30)
    assert len(acked) >= 300
    producer.close(timeout=1)
    broker = Broker({"num.partitions": "1"}, log_dir=tmp_path, subprocess=True).start()
    try:
        got = consume_all(broker.bootstrap_servers, topic, 1, len(acked) + 1000, timeout_ms=4000)
        again = KafkaConsumer("before", bootstrap_servers=broker.bootstrap_servers, group_id="kept-group",
                              auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=5000)
        assert [m.value for m in again] == [b"3", b"4"]  # the committed offset survived
        again.close()
    finally:
        broker.stop()
    stored = {m.offset: m.value for m in got}
    assert all(stored.get(offset) == value for offset, value in acked), "an acknowledged record is missing"
    assert [m.offset for m in got] == list(range(len(got)))


def test_the_command_starts_says_where_and_stops_cleanly_on_ctrl_c(tmp_path):
    """``kafkaproto broker`` with no arguments serves 127.0.0.1:9092 from ./kafkaproto-data, logs one
    "started" line with its address, cluster id and node id, and shuts down cleanly on SIGINT."""
    import shutil
    import signal
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 9092)) == 0:
            pytest.skip("something already listens on 127.0.0.1:9092")
    import sys
    from pathlib import Path
    command = shutil.which("kafkaproto", path=str(Path(sys.executable).parent)) or shutil.which("kafkaproto")
    if command is None:
        pytest.skip("the kafkaproto command is not installed")
    proc = subprocess.Popen([command, "broker"], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        started = ""
        while "started" not in started:
            started = proc.stderr.readline()
            assert started or proc.poll() is None, "the broker exited before it started"
        assert "started on 127.0.0.1:9092 (cluster id " in started and "node id 1" in started
        assert still_serving(type("B", (), {"host": "127.0.0.1", "port": 9092})())
        proc.send_signal(signal.SIGINT)
        rest = proc.communicate(timeout=30)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "stopped" in rest and "Traceback" not in rest
    data = tmp_path / "kafkaproto-data"
    assert (data / "meta.properties").exists() and (data / ".kafka_cleanshutdown").exists()


def test_records_written_are_batches_kafka_can_read(kafkaproto_broker, tmp_path):
    """The segment files hold plain record batches with offsets filled in: kafkaproto.records reads them."""
    bootstrap = kafkaproto_broker.bootstrap_servers
    topic = fresh("files")
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(10):
        producer.send(topic, value=b"f%d" % i).get(10)
    producer.close()
    path = f"{kafkaproto_broker.log_dir}/{topic}-0/00000000000000000000.log"
    with open(path, "rb") as f:
        stored = records.read_records(f.read())
    assert [(r.offset, r.value) for r in stored] == [(i, b"f%d" % i) for i in range(10)]
