#!/usr/bin/env python
"""Record captures of real clients moving many records through Kafka 4.3.1, for benchmarks/capture.py.

    python benchmarks/record_traffic.py [NAME ...] [--force]      # as root (tcpdump), java, node and npm

Each recording starts a fresh single-node Kafka 4.3.1 broker (tests/kafka_jvm.py, from the jars cached in
~/.cache/kafkaproto/kafka/4.3.1/lib), captures its client port on the loopback interface with tcpdump, has one
client produce records into a new topic and read them all back, then stops both:

  java-perf  Kafka's own perf tools from the same jars (ProducerPerformance, then ConsumerPerformance): the Java
             client at Kafka 4's versions (Produce v13, Fetch v18), lz4 batches.
  kafkajs    kafkajs 2.2.4 (tests/kafka/package.json) on Node.js: Produce v7 and Fetch v11, versions tshark 4.0
             dissects down to each record; no compression.
  librdkafka confluent-kafka 2.16.1 (the test extra), librdkafka's own batching (many partitions' batches in one
             Produce, lz4), the versions librdkafka picks.

Records are random upper-case letters, as ProducerPerformance makes them. A capture lands in .bench/ as
traffic-NAME-KEY.pcap beside a .json that describes it, KEY being a hash of what was asked for (client,
counts, sizes, partitions, compression, this script's RECORDER): asking again for the same thing reuses the
file. tcpdump's kernel drops fail the recording, as does a client that does not read back every record.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".bench"
TESTS = REPO / "tests"
JS_CLIENTS = TESTS / "kafka"

RECORDER = 1  # bump when how a capture is recorded changes: cached ones are then recorded again
KAFKA = "4.3.1"

TRAFFIC = {
    "java-perf": {"client": f"Kafka {KAFKA} ProducerPerformance and ConsumerPerformance", "records": 200_000,
                  "record_size": 100, "partitions": 4, "compression": "lz4"},
    "kafkajs": {"client": "kafkajs 2.2.4", "records": 200_000, "record_size": 100, "partitions": 4,
                "compression": "none", "per_send": 1000},
    "librdkafka": {"client": "confluent-kafka 2.16.1 (librdkafka)", "records": 200_000, "record_size": 100,
                   "partitions": 4, "compression": "lz4"},
}

# Produces spec.records values of spec.recordSize random letters in sends of spec.perSend, acks=all, then a
# consumer in a new group reads them all from the beginning; prints {"produced": N, "consumed": M}.
KAFKAJS_PROGRAM = r"""
'use strict'
const { Kafka, logLevel } = require('kafkajs')
const [bootstrap, topic, specJson] = process.argv.slice(1)
const spec = JSON.parse(specJson)

function letters (n) {
  const b = Buffer.allocUnsafe(n)
  for (let i = 0; i < n; i++) b[i] = 65 + Math.floor(Math.random() * 26)
  return b
}

async function main () {
  const kafka = new Kafka({ clientId: 'kafkajs-bench', brokers: [bootstrap], logLevel: logLevel.WARN })
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ waitForLeaders: true,
    topics: [{ topic, numPartitions: spec.partitions, replicationFactor: 1 }] })
  await admin.disconnect()

  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  let produced = 0
  while (produced < spec.records) {
    const n = Math.min(spec.perSend, spec.records - produced)
    const messages = []
    for (let i = 0; i < n; i++) messages.push({ value: letters(spec.recordSize) })
    await producer.send({ topic, acks: -1, messages })
    produced += n
  }
  await producer.disconnect()

  const consumer = kafka.consumer({ groupId: `${topic}-group` })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  let consumed = 0
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed ${consumed} of ${produced} records`)), 120000)
    consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        consumed += batch.messages.length
        if (consumed >= produced) { clearTimeout(timer); resolve() }
      }
    })
  })
  await consumer.disconnect()
  process.stdout.write(JSON.stringify({ produced, consumed }) + '\n')
}

main().catch(e => { console.error(e); process.exit(1) })
"""


def shown(path):
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def description(name):
    """What a capture is asked to be: its cache key is this one's hash."""
    return {"name": name, "recorder": RECORDER, "kafka": KAFKA, **TRAFFIC[name]}


def key_of(desc):
    return hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:12]


def paths(name):
    stem = f"traffic-{name}-{key_of(description(name))}"
    return CACHE / f"{stem}.pcap", CACHE / f"{stem}.json"


def cached(name):
    """(pcap, its description) when the capture asked for is in .bench/ and whole, else None."""
    pcap, meta_path = paths(name)
    if not (pcap.exists() and meta_path.exists()):
        return None
    meta = json.loads(meta_path.read_text())
    if meta.get("description") != description(name) or pcap.stat().st_size != meta.get("bytes"):
        return None
    return pcap, meta


def ensure(name, force=False):
    """The capture NAME, recorded first unless it is cached."""
    found = None if force else cached(name)
    return found or record(name)


def kafka_jvm():
    """tests/kafka_jvm.py: how the tests run Kafka's jars (at the end of the path: its folder's modules shadow none)."""
    if str(TESTS) not in sys.path:
        sys.path.append(str(TESTS))
    import kafka_jvm

    return kafka_jvm


def record_captures():
    """tests/kafka/record_captures.py: how the project records its captures (tcpdump on the loopback interface)."""
    kafka_jvm()
    if str(JS_CLIENTS) not in sys.path:
        sys.path.append(str(JS_CLIENTS))
    import record_captures

    return record_captures


def java_perf(bootstrap, spec, workdir):
    classpath = kafka_jvm().classpath

    java = shutil.which("java") or sys.exit("java is not installed")
    cp = classpath(KAFKA)
    topic = "perf"

    def tool(*args, timeout=600):
        run = subprocess.run([java, "-Xmx1g", "-cp", cp, *args], capture_output=True, text=True, timeout=timeout,
                             cwd=workdir)
        if run.returncode != 0:
            sys.exit(f"{args[0]} failed ({run.returncode}):\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}")
        return run.stdout

    tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap, "--create", "--topic", topic,
         "--partitions", str(spec["partitions"]), "--replication-factor", "1")
    produced = tool("org.apache.kafka.tools.ProducerPerformance", "--bootstrap-server", bootstrap, "--topic", topic,
                    "--num-records", str(spec["records"]), "--record-size", str(spec["record_size"]),
                    "--throughput", "-1", "--command-property", f"compression.type={spec['compression']}")
    consumed = tool("org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", bootstrap, "--topic", topic,
                    "--num-records", str(spec["records"]), "--timeout", "60000")
    # ConsumerPerformance prints a CSV header and one row: start, end, MB, MB/s, records, records/s, ...
    header, row = [line.split(", ") for line in consumed.strip().splitlines()[-2:]]
    counts = dict(zip(header, row))
    return {"produced": int(produced.strip().splitlines()[-1].split()[0]),
            "consumed": int(counts["data.consumed.in.nMsg"]), "producer_says": produced.strip().splitlines()[-1]}


def kafkajs(bootstrap, spec, workdir):
    node = shutil.which("node") or sys.exit("node is not installed")
    if not (JS_CLIENTS / "node_modules" / "kafkajs").is_dir():
        npm = shutil.which("npm") or sys.exit("npm is not installed")
        run = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=JS_CLIENTS, capture_output=True, text=True,
                             timeout=600)
        if run.returncode != 0:
            sys.exit(f"npm ci in {JS_CLIENTS} failed:\n{run.stderr}")
    js_spec = {"records": spec["records"], "recordSize": spec["record_size"], "partitions": spec["partitions"],
               "perSend": spec["per_send"]}
    run = subprocess.run([node, "-e", KAFKAJS_PROGRAM, bootstrap, "bench", json.dumps(js_spec)], capture_output=True,
                         text=True, timeout=600, cwd=workdir, env=dict(os.environ,
                                                                      NODE_PATH=str(JS_CLIENTS / "node_modules")))
    if run.returncode != 0:
        sys.exit(f"kafkajs failed ({run.returncode}):\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def librdkafka(bootstrap, spec, workdir):
    """confluent-kafka in a child process (librdkafka's threads stay out of this one): creates the topic,
    produces, then reads every record back in a new group."""
    run = subprocess.run([sys.executable, "-c", LIBRDKAFKA_PROGRAM, bootstrap, json.dumps(spec)], capture_output=True,
                         text=True, timeout=600, cwd=workdir)
    if run.returncode != 0:
        sys.exit(f"confluent-kafka failed ({run.returncode}):\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


LIBRDKAFKA_PROGRAM = r"""
import json, random, string, sys
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, spec = sys.argv[1], json.loads(sys.argv[2])
topic = "bench"
admin = AdminClient({"bootstrap.servers": bootstrap})
for future in admin.create_topics([NewTopic(topic, spec["partitions"], 1)]).values():
    future.result(30)
rng = random.Random(1)
values = [''.join(rng.choices(string.ascii_uppercase, k=spec["record_size"])).encode() for _ in range(1000)]
producer = Producer({"bootstrap.servers": bootstrap, "compression.codec": spec["compression"], "acks": "all"})
for i in range(spec["records"]):
    while True:
        try:
            producer.produce(topic, values[i % 1000])
            break
        except BufferError:
            producer.poll(0.05)
    producer.poll(0)
left = producer.flush(60)
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False})
consumer.subscribe([topic])
consumed, empty = 0, 0
while consumed < spec["records"] and empty < 30:
    batch = consumer.consume(10000, 1.0)
    empty = 0 if batch else empty + 1
    consumed += sum(1 for m in batch if m.error() is None)
consumer.close()
print(json.dumps({"produced": spec["records"] - left, "consumed": consumed}))
"""


CLIENTS = {"java-perf": java_perf, "kafkajs": kafkajs, "librdkafka": librdkafka}


def record(name):
    from kafkaproto.capture import pcap as pcap_reader

    KafkaBroker = kafka_jvm().KafkaBroker

    recording = record_captures().recording
    desc = description(name)
    out, meta_path = paths(name)
    CACHE.mkdir(exist_ok=True)
    partial = out.with_suffix(".partial")
    print(f"recording {shown(out)}: {desc['client']}, {desc['records']:,} records of "
          f"{desc['record_size']} B ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kafka-", dir=CACHE) as tmp:
        broker = KafkaBroker(KAFKA, tmp)
        try:
            # A 128 MiB kernel buffer: loopback delivers faster than tcpdump writes when the clients are busy.
            with recording(broker.port, partial, "-B", "131072") as dump:
                client = CLIENTS[name](f"127.0.0.1:{broker.port}", desc, tmp)
            said = dump.said
        finally:
            broker.stop()
    dropped = [line for line in said.splitlines() if "dropped by kernel" in line]
    if not dropped or int(dropped[0].split()[0]) != 0:
        partial.unlink(missing_ok=True)
        sys.exit(f"tcpdump lost packets recording {name}: {said.strip()}")
    if client["produced"] != desc["records"] or client["consumed"] < desc["records"]:
        partial.unlink(missing_ok=True)
        sys.exit(f"{name}: produced {client['produced']:,} and consumed {client['consumed']:,} records, "
                 f"{desc['records']:,} asked for")
    packets = sum(1 for _ in pcap_reader.read_packets(str(partial)))
    meta = {"description": desc, "key": key_of(desc), "bytes": partial.stat().st_size, "packets": packets,
            "broker_port": broker.port, "client": client, "recorded_s": round(time.perf_counter() - started, 1),
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    partial.replace(out)
    meta_path.write_text(json.dumps(meta, indent=2))
    print(f"  {shown(out)}: {meta['bytes'] / 1e6:.1f} MB, {packets:,} packets, broker port "
          f"{broker.port}, {meta['recorded_s']:.0f} s", file=sys.stderr, flush=True)
    return out, meta


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", default=list(TRAFFIC), help=f"captures to record (default: all of "
                                                                    f"{', '.join(TRAFFIC)})")
    ap.add_argument("--force", action="store_true", help="record again even when a cached capture matches")
    args = ap.parse_args(argv)
    for name in args.names:
        if name not in TRAFFIC:
            ap.error(f"no capture named {name!r} (there are {', '.join(TRAFFIC)})")
        path, meta = ensure(name, args.force)
        print(f"{path}: {meta['bytes']:,} bytes, {meta['packets']:,} packets, broker port {meta['broker_port']}")


if __name__ == "__main__":
    main()
