"""Record the packet captures in tests/data/captures/ from real Kafka clients and brokers.

    apt-get install tcpdump                      # capturing needs root (or CAP_NET_RAW)
    pip install '.[test,captures]'               # kafka-python, aiokafka and confluent-kafka
    python tests/kafka/record_captures.py        # java, mvn and Maven Central as for the tests;
                                                 # node and npm for kafkajs (tests/kafka/package.json),
                                 # go for franz-go and Sarama (tests/go)

Each capture starts a fresh single-node broker (tests/kafka_jvm.py), records its port on
the loopback interface with tcpdump while one client library does its work, then stops
both. tests/data/captures/README.md describes what each file holds.
"""

import argparse
import asyncio
import contextlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))

import go_programs  # noqa: E402
from kafka_jvm import KafkaBroker, classpath, compiled  # noqa: E402

OUT = HERE.parent / "data" / "captures"


def java_clients(version, bootstrap):
    java = shutil.which("java") or sys.exit("java is not installed")
    cp = classpath(version, compiled(version, "Clients"))
    for mode in ("admin", "produce", "txn", "consume", "delete"):
        run = subprocess.run([java, "-cp", cp, "Clients", bootstrap, mode, "java-topic"], capture_output=True,
                             text=True, timeout=120)
        if run.returncode != 0:
            sys.exit(f"Java clients ({mode}) failed:\n{run.stderr}")


def kafka_python(bootstrap):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kafka-python-admin")
    admin.create_topics([NewTopic("kp-topic", num_partitions=1, replication_factor=1)])
    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="kafka-python-producer",
                             compression_type="gzip", acks="all", linger_ms=5)
    for i in range(20):
        producer.send("kp-topic", key=b"k%d" % i, value=b"value %d from kafka-python" % i,
                      headers=[("trace", b"t%d" % i)])
    producer.flush()
    producer.close()
    consumer = KafkaConsumer("kp-topic", bootstrap_servers=bootstrap, client_id="kafka-python-consumer",
                             group_id="kp-group", auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=10000)
    seen = 0
    for _ in consumer:
        seen += 1
        if seen == 20:
            break
    consumer.commit()
    consumer.close()
    admin.delete_topics(["kp-topic"])
    admin.close()
    if seen != 20:
        raise RuntimeError(f"kafka-python consumed {seen} of 20 records")


def confluent(bootstrap):
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "librdkafka-admin"})
    for future in admin.create_topics([NewTopic("rd-topic", num_partitions=1, replication_factor=1)]).values():
        future.result()
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "librdkafka-producer",
                         "compression.type": "zstd", "linger.ms": 5})
    for i in range(20):
        producer.produce("rd-topic", key=b"k%d" % i, value=b"value %d from librdkafka" % i,
                         headers=[("trace", b"t%d" % i)])
    producer.flush(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "client.id": "librdkafka-consumer", "group.id": "rd-group",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["rd-topic"])
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 20 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    for future in admin.delete_topics(["rd-topic"]).values():
        future.result()
    if seen != 20:
        raise RuntimeError(f"librdkafka consumed {seen} of 20 records")


def aiokafka(bootstrap):
    asyncio.run(_aiokafka(bootstrap))


async def _aiokafka(bootstrap):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="aiokafka-admin")
    await admin.start()
    try:
        await admin.create_topics([NewTopic("aio-topic", num_partitions=1, replication_factor=1)])
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="aiokafka-producer",
                                    compression_type="snappy", acks="all", linger_ms=5)
        await producer.start()
        try:
            sent = [await producer.send("aio-topic", key=b"k%d" % i, value=b"value %d from aiokafka" % i,
                                        headers=[("trace", b"t%d" % i)]) for i in range(20)]
            await asyncio.gather(*sent)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer("aio-topic", bootstrap_servers=bootstrap, client_id="aiokafka-consumer",
                                    group_id="aio-group", auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        seen = 0
        try:
            deadline = time.monotonic() + 30
            while seen < 20 and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                seen += sum(len(batch) for batch in batches.values())
            await consumer.commit()
        finally:
            await consumer.stop()
        await admin.delete_topics(["aio-topic"])
    finally:
        await admin.close()
    if seen != 20:
        raise RuntimeError(f"aiokafka consumed {seen} of 20 records")


def install_kafkajs():
    """kafkajs into tests/kafka/node_modules, once; before the recording, so npm's time is not in it."""
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        sys.exit("node and npm are needed for the kafkajs capture")
    if (HERE / "node_modules" / "kafkajs").is_dir():
        return
    # npm ci installs exactly what package-lock.json pins.
    install = [npm, "ci" if (HERE / "package-lock.json").exists() else "install", "--no-audit", "--no-fund"]
    run = subprocess.run(install, cwd=HERE, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        sys.exit(f"npm {install[1]} in {HERE} failed:\n{run.stderr}")


def kafkajs(bootstrap):
    run = subprocess.run([shutil.which("node"), str(HERE / "kafkajs_client.js"), bootstrap, "js-topic", "js-group"],
                         capture_output=True, text=True, timeout=180)
    if run.returncode != 0:
        sys.exit(f"kafkajs client failed:\n{run.stderr}")


# What each Go program does for its capture: its scenarios in tests/go (see the programs' docs).
GO_SCENARIOS = {"franz": ["session"], "sarama": ["session"]}


def go_client(program, bootstrap):
    folder = go_programs.built()
    for scenario in GO_SCENARIOS[program]:
        run = subprocess.run([str(folder / program), bootstrap, scenario, f"{program}-topic"],
                             capture_output=True, text=True, timeout=150)
        if run.returncode != 0:
            sys.exit(f"{program} {scenario} failed:\n{run.stderr[-3000:]}")


CAPTURES = {
    "java-3.9.2": ("3.9.2", lambda bootstrap: java_clients("3.9.2", bootstrap)),
    "java-4.3.1": ("4.3.1", lambda bootstrap: java_clients("4.3.1", bootstrap)),
    "kafka-python": ("4.3.1", kafka_python),
    "librdkafka": ("4.3.1", confluent),
    "aiokafka": ("4.3.1", aiokafka),
    "kafkajs": ("4.3.1", kafkajs),
    "franz-go": ("4.3.1", lambda bootstrap: go_client("franz", bootstrap)),
    "sarama": ("4.3.1", lambda bootstrap: go_client("sarama", bootstrap)),
}
# What a capture needs installed before its broker and tcpdump start.
PREPARE = {"kafkajs": install_kafkajs, "franz-go": go_programs.built, "sarama": go_programs.built}


@contextlib.contextmanager
def recording(port, path, *options):
    """tcpdump writing the loopback traffic of port to path while the block runs (options: more of tcpdump's, such
    as a kernel buffer); the process, stopped after a second more, its closing words (the packets it counted and
    dropped) in its ``said``. Exits when tcpdump cannot capture."""
    tcpdump = shutil.which("tcpdump") or sys.exit("tcpdump is not installed (apt-get install tcpdump)")
    dump = subprocess.Popen([tcpdump, "-i", "lo", "-s", "0", *options, "-U", "-w", str(path), f"tcp port {port}"],
                            stderr=subprocess.PIPE, text=True)
    try:
        first = dump.stderr.readline()
        if "listening on" not in first:  # e.g. no permission to capture
            sys.exit(f"tcpdump did not start capturing: {first.strip()} {dump.stderr.read().strip()}")
        yield dump
        time.sleep(1)
    finally:
        dump.send_signal(signal.SIGINT)
        try:
            dump.said = dump.communicate(timeout=60)[1]
        except subprocess.TimeoutExpired:
            dump.kill()
            dump.said = ""


def record(name, out):
    version, work = CAPTURES[name]
    if name in PREPARE:
        PREPARE[name]()
    pcap = out / f"{name}.pcap"
    partial = pcap.with_suffix(".partial")
    with tempfile.TemporaryDirectory() as tmp:
        broker = KafkaBroker(version, tmp)
        try:
            with recording(broker.port, partial):
                work(f"127.0.0.1:{broker.port}")
        finally:
            broker.stop()
    partial.replace(pcap)  # only a finished capture replaces the old one
    print(f"{pcap}: {pcap.stat().st_size} bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", default=list(CAPTURES), help=f"captures to record (default: all of "
                                                                    f"{', '.join(CAPTURES)})")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.names:
        record(name, args.out)


if __name__ == "__main__":
    main()
