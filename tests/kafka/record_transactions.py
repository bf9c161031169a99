"""Record tests/data/transactions/: a capture of transactions committed and aborted, and what Kafka's Java consumer
delivered from them, read_committed and read_uncommitted.

    apt-get install tcpdump                      # capturing needs root (or CAP_NET_RAW)
    pip install '.[test,captures]'               # confluent-kafka, for the transactional producer
    python tests/kafka/record_transactions.py    # java and Kafka's jars as for the tests (tests/kafka_jvm.py)

A fresh single-node broker (Apache Kafka 4.3.1) on the loopback interface; tcpdump records its client port while
a transactional producer (librdkafka) writes topic ``tx`` (one partition): transactions committed and aborted in
turn, a record from a producer outside any transaction, and a last committed transaction. Then Kafka's console
consumer (``org.apache.kafka.tools.consumer.ConsoleConsumer``) reads the topic from the beginning twice, once per
isolation level, each with a client id naming it; what each printed goes to ``delivered.json``, the oracle
tests/test_capture_rows.py compares the capture's record rows with.
"""

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from kafka_jvm import KafkaBroker, classpath  # noqa: E402
from record_captures import recording  # noqa: E402

OUT = HERE.parent / "data" / "transactions"
VERSION = "4.3.1"
TOPIC = "tx"
# (value prefix, committed, records): values are numbered in the order they are sent.
PLAN = [("c", True, 2), ("a", False, 3), ("c", True, 1), ("a", False, 2), ("c", True, 2)]
LEVELS = ("read_committed", "read_uncommitted")


def produce(bootstrap):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)]).values():
        future.result()
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "recorded-tx", "linger.ms": 0,
                         "client.id": "transactional-producer"})
    producer.init_transactions()
    number = 0
    for prefix, commit, count in PLAN:
        producer.begin_transaction()
        for _ in range(count):
            producer.produce(TOPIC, value=f"{prefix}{number}".encode())
            number += 1
            producer.flush()
        if commit:
            producer.commit_transaction()
        else:
            producer.abort_transaction()
    plain = Producer({"bootstrap.servers": bootstrap, "client.id": "plain-producer"})
    plain.produce(TOPIC, value=b"p-plain")
    plain.flush()
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"c-last")
    producer.flush()
    producer.commit_transaction()


def consume(bootstrap, level):
    java = shutil.which("java") or sys.exit("java is not installed")
    run = subprocess.run([java, "-cp", classpath(VERSION), "org.apache.kafka.tools.consumer.ConsoleConsumer",
                          "--bootstrap-server", bootstrap, "--topic", TOPIC, "--from-beginning",
                          "--isolation-level", level, "--timeout-ms", "8000", "--group", f"group-{level}",
                          "--command-property", f"client.id=java-{level}"],
                         capture_output=True, text=True, timeout=180)
    if run.returncode != 0:
        sys.exit(f"the console consumer ({level}) failed:\n{run.stderr}")
    return run.stdout.splitlines()


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    partial = OUT / "transactions.partial"
    delivered = {}
    with tempfile.TemporaryDirectory() as tmp:
        broker = KafkaBroker(VERSION, tmp)
        bootstrap = f"127.0.0.1:{broker.port}"
        try:
            with recording(broker.port, partial):
                produce(bootstrap)
                for level in LEVELS:
                    delivered[level] = consume(bootstrap, level)
        finally:
            broker.stop()
    partial.replace(OUT / "transactions.pcap")
    (OUT / "delivered.json").write_text(json.dumps(delivered, indent=2) + "\n")
    print(json.dumps(delivered))


if __name__ == "__main__":
    main()
