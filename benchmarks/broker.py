#!/usr/bin/env python
"""Broker benchmark: Apache Kafka's own perf tools against Apache Kafka 4.3.1 and against kafkaproto's broker.

    python benchmarks/broker.py [--quick] [--repeats N] [--clients N] [--load-client franz-go|perf] [--loop-ab]
                                [--only TEXT ...] [--json PATH]
    python benchmarks/broker.py --json benchmarks/broker-results.json          # the recorded run

Both brokers run on this machine in the same run with the same settings (one node, 127.0.0.1, a fresh data
directory, group.initial.rebalance.delay.ms=0, log.segment.delete.delay.ms=0, everything else at its default);
kafkaproto's broker runs as ``python -m kafkaproto.broker`` (with uvloop when it is installed). Kafka runs with
-Xmx512m, as the tests' fixture starts it.

For every case (1 and 6 partitions x 100 B and 1 KiB records x acks=1 and acks=all x no compression and lz4),
on a fresh topic per broker and run (3,000,000 records of 100 B or 600,000 of 1 KiB, about 300 or 600 MB, so
that even the consumer's part lasts seconds):
  produce   ``org.apache.kafka.tools.ProducerPerformance --num-records N --record-size S --throughput -1``
            with acks and compression.type set; records/s, MB/s, average and p99 latency as it prints them
  consume   ``org.apache.kafka.tools.ConsumerPerformance --num-records N`` from the start of that topic, in a
            fresh group; MB/s and records/s over the fetch time (fetch.MB.sec, fetch.nMsg.sec)
  ceiling   the same ProducerPerformance against benchmarks/produce_sink.py, kafkaproto's broker with its
            segment writes skipped: the most that producer manages on this machine whatever the broker. Where
            both brokers come near it, the case measures the client, and their ratio is parity plus noise.
Within a case the brokers and the sink take turns going first (Kafka in the first repeat, kafkaproto in the
second, the sink in the third, ...), so all see the same machine. After each run its topic is deleted, its
files at once (log.segment.delete.delay.ms=0 on both brokers), so that no run meets the page cache's writeback
of an earlier run's gigabytes.
Before the first case each broker is warmed up, unmeasured (300,000 records of 100 B to 6 partitions and back,
uncompressed and with lz4): a JVM compiles its hot code as it runs, and a cold Kafka would lose the first cases.
Broker memory: the peak resident set (VmHWM) of each broker process at the end, and RSS sampled during
each case. Startup: from spawning the broker process to its first answer to ApiVersions.

Then the case of many partitions and connections (``--only 1000p`` runs it alone): 50 topics of 20 partitions
(1,000 partitions), 50 ProducerPerformance processes at once, one per topic (each --num-records 20,000 of 100 B,
acks=1, no compression: 50 producer connections), then 50 ConsumerPerformance processes at once, each reading its
topic whole in a group of its own (50 consumer connections). Throughput is the sum of the processes' rates;
latency is the median and the largest of their p99s; the broker's peak RSS and open descriptors are sampled
throughout. The tools' JVMs run small (-Xmx128m, serial GC, C1 only) so that 50 of them fit this machine; both
brokers meet the same clients.

Loaded cases: each 6-partition case again with --clients (default 2) producer processes at once, writing five
times the case's records between them, then as many consumer processes at once, each reading the whole topic;
throughput is the sum. One ProducerPerformance leaves both brokers waiting on it (it reaches the producer
ceiling against either), so only a load the broker cannot keep up with shows which broker is the limit. The
load comes from a client on franz-go (benchmarks/go, built with ``go build`` on first use; needs go): its
producer batches a partition's waiting records into one request, and its consumer fetches every partition as a
follower does and counts the records in the batch headers without decoding them. Each takes a fraction of a
JVM's CPU, so two of them at once leave the broker, not themselves, as the limit on this 2-core machine.
Four of the perf tools' JVMs beside a broker took the cores the brokers needed, and the loaded cases then
measured that contention (--load-client perf runs them so again). Latency is franz-go's: from handing a record
to the client to its acknowledgement; the largest p99 of the producers.

CPU per GB: for every case, each broker's CPU seconds (user and system, from /proc) while producing and while
consuming, per GB of record payload written or read (records x record size, times the consumers): the headroom
a case bound by its client does not show in throughput.

Event loop: kafkaproto's broker serves on asyncio's loop. --loop-ab runs a second kafkaproto broker on uvloop's
(pip install '.[uvloop]') beside it, every case on both in the same sitting, and prints uvloop's throughput and
broker CPU over asyncio's.

Targets (each case judged where the broker, not its client, is the limit): in the loaded cases, produce and
consume above Kafka's by more than the spread of the repeats' own ratios; in the single-client cases, at least
97 % of the producer ceiling; broker CPU per GB at most half of Kafka's in every case; the 1,000-partition case
at or above Kafka's; p99 produce latency at or below Kafka's, average acks=all latency within 1.2x of Kafka's,
memory under half of Kafka's. Medians of --repeats runs per case; ratios are kafkaproto / Kafka within the same
run.
"""

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

import kafka_jvm  # noqa: E402  (the tests' adapters for Apache Kafka's jars)

from kafkaproto import decode_response, encode_request  # noqa: E402
from kafkaproto.messages import (ApiVersionsRequest, CreateTopicsRequest, DeleteTopicsRequest,  # noqa: E402
                                 RequestHeader)

LOAD_SOURCE = HERE / "go"  # the franz-go load client of the loaded cases
LOADED_SCALE = 5  # franz-go's loaded cases move five times a case's records: at its pace one case's is a second

KAFKA_VERSION = "4.3.1"
PRODUCE_LINE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                          r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th")


def api_versions_answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            header = RequestHeader(request_api_key=18, request_api_version=0, correlation_id=1, client_id="bench")
            sock.sendall(encode_request(header, ApiVersionsRequest(), 0))
            size = int.from_bytes(kafka_jvm._recv_exact(sock, 4), "big")
            return decode_response(kafka_jvm._recv_exact(sock, size), 18, 0).body.error_code == 0
    except OSError:
        return False


class Broker:
    """One broker process: spawned, timed until it answers, sampled for memory, stopped."""

    def __init__(self, name, cmd, port, log_path, env=None):
        self.name, self.port = name, port
        self.log = open(log_path, "wb")
        start = time.monotonic()
        # Run from its own folder: from a source checkout, ``python -m`` would import kafkaproto's sources.
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=log_path.parent)
        while not api_versions_answers(port):
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {self.proc.returncode}; see {log_path}")
            if time.monotonic() - start > 120:
                raise RuntimeError(f"{name} did not answer within 120 s")
            time.sleep(0.01)
        self.startup_s = time.monotonic() - start

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.port}"

    def cpu_s(self):
        """CPU seconds the broker process has used (user and system), from /proc."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rpartition(")")[2].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            return 0.0

    def memory_kb(self, field="VmRSS"):
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    def create_topic(self, name, partitions):
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as sock:
            body = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
                name=name, num_partitions=partitions, replication_factor=1)], timeout_ms=30000)
            sock.sendall(encode_request(RequestHeader(request_api_key=19, request_api_version=7, correlation_id=1,
                                                      client_id="bench"), body, 7))
            size = int.from_bytes(kafka_jvm._recv_exact(sock, 4), "big")
            error = decode_response(kafka_jvm._recv_exact(sock, size), 19, 7).body.topics[0].error_code
            if error:
                raise RuntimeError(f"{self.name}: CreateTopics {name} failed with error {error}")

    def delete_topics(self, names):
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as sock:
            body = DeleteTopicsRequest(topic_names=names, timeout_ms=60000)
            sock.sendall(encode_request(RequestHeader(request_api_key=20, request_api_version=5, correlation_id=1,
                                                      client_id="bench"), body, 5))
            size = int.from_bytes(kafka_jvm._recv_exact(sock, 4), "big")
            errors = {r.error_code for r in decode_response(kafka_jvm._recv_exact(sock, size), 20, 5).body.responses}
            if errors != {0}:
                raise RuntimeError(f"{self.name}: DeleteTopics failed with errors {errors}")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def start_kafka(work):
    port, controller = kafka_jvm.free_port(), kafka_jvm.free_port()
    props = work / "server.properties"
    # A deleted topic's files go at once instead of a minute later (the default); kafkaproto's too.
    props.write_text(kafka_jvm.SERVER_PROPERTIES.format(port=port, controller_port=controller, log_dir=work / "data")
                     + "log.segment.delete.delay.ms=0\n")
    cp = kafka_jvm.classpath(KAFKA_VERSION)
    java = shutil.which("java")
    cluster_id = "bench-" + uuid.uuid4().hex[:16]
    subprocess.run([java, "-cp", cp, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(props)],
                   check=True, capture_output=True)
    return Broker(f"Apache Kafka {KAFKA_VERSION}", [java, "-Xmx512m", "-cp", cp, "kafka.Kafka", str(props)], port,
                  work / "kafka.log")


def start_kafkaproto(work, loop="asyncio"):
    port = kafka_jvm.free_port()
    cmd = [sys.executable, "-m", "kafkaproto.broker", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
           "--override", f"kafkaproto.event.loop={loop}",
           "--override", f"log.dirs={work / 'kafkaproto-data'}", "--override", "group.initial.rebalance.delay.ms=0",
           "--override", "auto.create.topics.enable=false", "--override", "log.segment.delete.delay.ms=0"]
    impl = subprocess.run([sys.executable, "-c", "import kafkaproto._impl as i; print(i.IMPL)"], cwd=work,
                          capture_output=True, text=True, check=True).stdout.strip()
    if impl != "compiled":
        raise SystemExit(f"the installed kafkaproto runs its {impl} codecs; install it compiled (pip install .)")
    return Broker(f"kafkaproto ({loop} event loop)" if loop != "asyncio" else "kafkaproto", cmd, port,
                  work / "kafkaproto.log")


def start_sink(work):
    """produce_sink.py: the producer's ceiling on this machine (a broker that stores nothing)."""
    port = kafka_jvm.free_port()
    cmd = [sys.executable, str(HERE / "produce_sink.py"), "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
           "--override", f"log.dirs={work / 'sink-data'}", "--override", "auto.create.topics.enable=false",
           "--override", "log.segment.delete.delay.ms=0"]
    return Broker("produce sink", cmd, port, work / "sink.log")


def sample_rss(broker, stop, peaks):
    while not stop.is_set():
        peaks.append(broker.memory_kb())
        stop.wait(0.2)


def descriptors(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


MANY_TOPICS, MANY_PARTITIONS, MANY_RECORDS, MANY_SIZE = 50, 20, 20_000, 100
SMALL_JVM = ["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]


def many(cp, broker, quick):
    """The 1,000-partition case against one broker: 50 producers at once, then 50 consumers at once."""
    import threading
    records = MANY_RECORDS // (5 if quick else 1)
    prefix = f"many-{uuid.uuid4().hex[:6]}"
    topics = [f"{prefix}-{i:02d}" for i in range(MANY_TOPICS)]
    for topic in topics:
        broker.create_topic(topic, MANY_PARTITIONS)
    stop, rss, fds = threading.Event(), [], []

    def sample():
        while not stop.is_set():
            rss.append(broker.memory_kb())
            fds.append(descriptors(broker.proc.pid))
            stop.wait(0.2)

    sampler = threading.Thread(target=sample)
    sampler.start()
    cpu = [broker.cpu_s()]
    try:
        producers = [subprocess.Popen(
            ["java", *SMALL_JVM, "-cp", cp, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
             "--num-records", str(records), "--record-size", str(MANY_SIZE), "--throughput", "-1",
             "--producer-props", f"bootstrap.servers={broker.bootstrap}", "acks=1"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for topic in topics]
        produced = []
        for topic, proc in zip(topics, producers):
            out = proc.communicate(timeout=1800)[0]
            found = [m for m in map(PRODUCE_LINE.search, out.splitlines()) if m]
            if proc.returncode != 0 or not found or int(found[-1].group(1)) != records:
                raise RuntimeError(f"ProducerPerformance ({topic}) against {broker.name} failed:\n{out[-2000:]}")
            produced.append(found[-1])
        cpu.append(broker.cpu_s())
        consumers = [subprocess.Popen(
            ["java", *SMALL_JVM, "-cp", cp, "org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server",
             broker.bootstrap, "--topic", topic, "--num-records", str(records), "--timeout", "120000",
             "--group", f"bench-{uuid.uuid4().hex}"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for topic in topics]
        consumed = []
        for topic, proc in zip(topics, consumers):
            out = proc.communicate(timeout=1800)[0]
            rows = [line for line in out.splitlines() if re.match(r"\d{4}-\d\d-\d\d ", line)]
            fields = [f.strip() for f in rows[-1].split(",")] if rows else []
            if proc.returncode != 0 or not fields or int(fields[4]) < records:
                raise RuntimeError(f"ConsumerPerformance ({topic}) against {broker.name} failed:\n{out[-2000:]}")
            consumed.append(fields)
        cpu.append(broker.cpu_s())
    finally:
        stop.set()
        sampler.join()
    broker.delete_topics(topics)  # so that each repeat meets 1,000 partitions, not the ones before it too
    p99s = [float(m.group(8)) for m in produced]
    return {"produce": {"mb_s": sum(float(m.group(3)) for m in produced),
                        "records_s": sum(float(m.group(2)) for m in produced),
                        "avg_ms": statistics.median(float(m.group(4)) for m in produced),
                        "p99_ms": statistics.median(p99s), "p99_max_ms": max(p99s), "rss_kb": max(rss, default=0),
                        "fds": max(fds, default=0), "broker_cpu_s": cpu[1] - cpu[0],
                        "bytes": records * MANY_SIZE * MANY_TOPICS},
            "consume": {"mb_s": sum(float(f[8]) for f in consumed), "records_s": sum(float(f[9]) for f in consumed),
                        "rss_kb": max(rss, default=0), "fds": max(fds, default=0), "broker_cpu_s": cpu[2] - cpu[1],
                        "bytes": records * MANY_SIZE * MANY_TOPICS}}


def run_tools(commands, broker):
    """Run perf tools at once against broker: their outputs, the broker's peak RSS and the CPU seconds it used
    meanwhile."""
    import threading
    stop, samples = threading.Event(), []
    sampler = threading.Thread(target=sample_rss, args=(broker, stop, samples))
    sampler.start()
    cpu = broker.cpu_s()
    try:
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for cmd in commands]
        outs = [(proc, *proc.communicate(timeout=1800)) for proc in procs]
    finally:
        stop.set()
        sampler.join()
    return outs, max(samples, default=0), broker.cpu_s() - cpu


def produce(cp, broker, topic, n, size, acks, compression, clients=1):
    """clients ProducerPerformance processes at once, writing n records between them to topic: their summed
    throughput, their mean average latency and their largest p99."""
    each = n // clients
    cmd = ["java", "-cp", cp, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records",
           str(each), "--record-size", str(size), "--throughput", "-1", "--producer-props",
           f"bootstrap.servers={broker.bootstrap}", f"acks={acks}", f"compression.type={compression}"]
    outs, rss, cpu = run_tools([cmd] * clients, broker)
    lines = []
    for proc, stdout, stderr in outs:
        found = [m for m in map(PRODUCE_LINE.search, stdout.splitlines()) if m]
        if proc.returncode != 0 or not found or int(found[-1].group(1)) != each:
            raise RuntimeError(f"ProducerPerformance against {broker.name} failed:\n{stdout[-2000:]}{stderr[-2000:]}")
        lines.append(found[-1])
    return {"records_s": sum(float(m.group(2)) for m in lines), "mb_s": sum(float(m.group(3)) for m in lines),
            "avg_ms": statistics.mean(float(m.group(4)) for m in lines),
            "p99_ms": max(float(m.group(8)) for m in lines), "rss_kb": rss, "broker_cpu_s": cpu,
            "bytes": each * clients * size}


def consume(cp, broker, topic, n, size, clients=1):
    """clients ConsumerPerformance processes at once, each reading the whole topic (n records) in a group of its
    own: their summed throughput."""
    commands = [["java", "-cp", cp, "org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server",
                 broker.bootstrap, "--topic", topic, "--num-records", str(n), "--timeout", "60000", "--group",
                 f"bench-{uuid.uuid4().hex}"] for _ in range(clients)]
    outs, rss, cpu = run_tools(commands, broker)
    rows = []
    for proc, stdout, stderr in outs:
        found = [line for line in stdout.splitlines() if re.match(r"\d{4}-\d\d-\d\d ", line)]
        if proc.returncode != 0 or not found:
            raise RuntimeError(f"ConsumerPerformance against {broker.name} failed:\n{stdout[-2000:]}{stderr[-2000:]}")
        fields = [f.strip() for f in found[-1].split(",")]
        if int(fields[4]) < n:
            raise RuntimeError(f"ConsumerPerformance read {fields[4]} of {n} records from {broker.name}")
        rows.append(fields)
    return {"mb_s": sum(float(f[8]) for f in rows), "records_s": sum(float(f[9]) for f in rows), "rss_kb": rss,
            "broker_cpu_s": cpu, "bytes": n * size * clients}


def build_load_client(work):
    """benchmarks/go built into work: the path of the franz-go load client."""
    if shutil.which("go") is None:
        raise SystemExit("the loaded cases' franz-go client needs go (https://go.dev/dl/), or --load-client perf")
    target = work / "load"
    subprocess.run(["go", "build", "-o", str(target), "."], cwd=LOAD_SOURCE, check=True,
                   env={**os.environ, "GOFLAGS": "-mod=readonly"})
    return target


def produce_load(tool, broker, topic, n, size, acks, compression, clients):
    """clients franz-go producers at once, writing n records between them: as produce measures."""
    each = n // clients
    cmd = [str(tool), "produce", "-brokers", broker.bootstrap, "-topic", topic, "-records", str(each), "-size",
           str(size), "-acks", acks, "-compression", compression]
    outs, rss, cpu = run_tools([cmd] * clients, broker)
    rows = [_load_result(proc, stdout, stderr, broker, each) for proc, stdout, stderr in outs]
    return {"records_s": sum(r["records"] / r["seconds"] for r in rows), "mb_s": sum(r["mb_s"] for r in rows),
            "avg_ms": statistics.mean(r["avg_ms"] for r in rows), "p99_ms": max(r["p99_ms"] for r in rows),
            "rss_kb": rss, "broker_cpu_s": cpu, "bytes": each * clients * size}


def consume_load(tool, broker, topic, n, size, clients):
    """clients franz-go consumers at once, each reading the whole topic (n records): their summed throughput."""
    cmd = [str(tool), "consume", "-brokers", broker.bootstrap, "-topic", topic, "-records", str(n), "-size", str(size)]
    outs, rss, cpu = run_tools([cmd] * clients, broker)
    rows = [_load_result(proc, stdout, stderr, broker, n) for proc, stdout, stderr in outs]
    return {"mb_s": sum(r["mb_s"] for r in rows), "records_s": sum(r["records"] / r["seconds"] for r in rows),
            "rss_kb": rss, "broker_cpu_s": cpu, "bytes": n * size * clients}


def _load_result(proc, stdout, stderr, broker, records):
    try:
        row = json.loads(stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        row = None
    if proc.returncode != 0 or row is None or row["records"] < records:
        raise RuntimeError(f"the franz-go load client against {broker.name} failed:\n{stdout[-2000:]}{stderr[-2000:]}")
    return row


def cases(quick, clients, load_client="franz-go"):
    scale = 5 if quick else 1
    more = LOADED_SCALE if load_client == "franz-go" else 1
    for partitions, loads in ((1, (1,)), (6, (1, clients))):
        for load in loads:
            for size, n in ((100, 3_000_000), (1024, 600_000)):
                for acks in ("1", "all"):
                    for compression in ("none", "lz4"):
                        yield {"partitions": partitions, "size": size,
                               "records": n // scale * (more if load > 1 else 1), "acks": acks,
                               "compression": compression, "clients": load,
                               **({"load_client": load_client} if load > 1 else {})}
    yield {"many": True, "partitions": MANY_TOPICS * MANY_PARTITIONS, "size": MANY_SIZE,
           "records": MANY_TOPICS * MANY_RECORDS // scale, "acks": "1", "compression": "none"}


def margin(row, part):
    """How far a case's ratio is above 1 beyond the spread of its repeats' own ratios."""
    ratios = row.get("run_ratios", {}).get(part, [])
    return row[f"{part}_ratio"] - 1 - (max(ratios) - min(ratios) if len(ratios) > 1 else 0)


def cpu_ratio(row, part):
    """kafkaproto's broker CPU seconds per GB over Kafka's, or None when the run did not measure them."""
    ours, kafka = row["kafkaproto"][part], row["kafka"][part]
    if "cpu_s_per_gb" not in ours or not kafka.get("cpu_s_per_gb"):
        return None
    return ours["cpu_s_per_gb"] / kafka["cpu_s_per_gb"]


def targets(results):
    """{target: (met, what the run shows)}: each case judged where the broker, not its client, is the limit."""
    cases = results["cases"]
    out = {}

    def worst(values, what):
        values = list(values)
        if values:
            value, case = min(values, key=lambda v: v[0])
            out[what[0]] = (what[1](value), f"{what[2](value)}, {label(case)}")

    loaded = [r for r in cases if r.get("clients", 1) > 1]
    for part in ("produce", "consume"):
        worst(((margin(r, part), r) for r in loaded),
              (f"loaded cases: {part} above Kafka's by more than the run's spread", lambda v: v > 0,
               lambda v: f"smallest margin {v:+.2f}"))
    worst(((r["kafkaproto"]["produce"]["mb_s"] / r["producer_ceiling_mb_s"], r) for r in cases
           if r.get("producer_ceiling_mb_s")),
          ("single-client cases: at least 97 % of the producer ceiling", lambda v: v >= 0.97,
           lambda v: f"lowest {v:.0%}"))
    worst(((-cpu_ratio(r, part), r) for r in cases for part in ("produce", "consume")
           if cpu_ratio(r, part) is not None),
          ("broker CPU per GB at most half of Kafka's in every case", lambda v: -v <= 0.5,
           lambda v: f"highest {-v:.2f}x"))
    for part in ("produce", "consume"):
        worst(((r[f"{part}_ratio"], r) for r in cases if r.get("many")),
              (f"1,000 partitions: {part} at or above Kafka's", lambda v: v >= 1, lambda v: f"{v:.2f}x"))
    worst(((r["kafka"]["produce"]["p99_ms"] / max(r["kafkaproto"]["produce"]["p99_ms"], 1e-9), r) for r in cases),
          ("p99 produce latency at or below Kafka's in every case", lambda v: v >= 1,
           lambda v: f"Kafka's p99 / ours lowest {v:.2f}"))
    worst(((r["kafka"]["produce"]["avg_ms"] / max(r["kafkaproto"]["produce"]["avg_ms"], 1e-9), r) for r in cases
           if r["acks"] == "all"),
          ("average acks=all latency within 1.2x Kafka's", lambda v: 1 / v <= 1.2,
           lambda v: f"ours / Kafka's at most {1 / v:.2f}x"))
    peak = results["peak_rss_mb"]
    out["memory under half of Kafka's"] = (peak["kafkaproto"] < peak["kafka"] / 2,
                                           f"{peak['kafkaproto']:.0f} MB against {peak['kafka']:.0f} MB")
    return out


def label(case):
    if case.get("many"):
        return (f"{MANY_TOPICS * MANY_PARTITIONS}p {case['size']}B acks={case['acks']} {case['compression']}, "
                f"{MANY_TOPICS}+{MANY_TOPICS} connections")
    loaded = case.get("clients", 1)
    tool = " franz-go" if case.get("load_client", "perf") == "franz-go" else ""
    return f"{case['partitions']}p {case['size']}B acks={case['acks']} {case['compression']}" + (
        f", {loaded}+{loaded}{tool} clients" if loaded > 1 else "")


def spread(row, part):
    """ ", runs 0.93-1.12" : the lowest and highest of a case's per-repeat ratios, when it had several."""
    ratios = row.get("run_ratios", {}).get(part, [])
    return f", runs {min(ratios):.2f}-{max(ratios):.2f}" if len(ratios) > 1 else ""


def cpu(side):
    """The broker's CPU seconds per GB produced and consumed, when the run measured them (else its CPU seconds)."""
    if "cpu_s_per_gb" in side["produce"]:
        return f"{side['produce']['cpu_s_per_gb']:.1f}, {side['consume']['cpu_s_per_gb']:.1f}"
    if "broker_cpu_s" not in side["produce"]:
        return "–"
    return f"{side['produce']['broker_cpu_s'] + side['consume']['broker_cpu_s']:.1f} s"


def ceiling(row):
    """ ", producer ceiling 59.6 MB/s" : what the same producer managed against the sink, when it ran."""
    value = row.get("producer_ceiling_mb_s")
    return f", producer ceiling {value:.1f} MB/s" if value else ""


def each_run(row):
    ratios = row.get("run_ratios")
    if not ratios:
        return "–"
    return " / ".join(", ".join(f"{x:.2f}" for x in ratios[part]) for part in ("produce", "consume"))


def markdown(results):
    """The BENCHMARKS.md table of a run's results."""
    lines = ["| case | produce MB/s K / k | producer ceiling MB/s | produce records/s K / k | ratio | "
             "avg / p99 latency ms K | avg / p99 latency ms k | consume MB/s K / k | consume records/s K / k | "
             "ratio | RSS MB K / k | broker CPU s per GB produced, consumed K / k | "
             "produce / consume ratio of each run |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results["cases"]:
        k, o = r["kafka"], r["kafkaproto"]
        sink = f"{r['producer_ceiling_mb_s']:.1f}" if r.get("producer_ceiling_mb_s") else "–"
        lines.append(
            f"| {label(r)} | {k['produce']['mb_s']:.1f} / {o['produce']['mb_s']:.1f} | {sink} | "
            f"{k['produce']['records_s']:,.0f} / {o['produce']['records_s']:,.0f} | {r['produce_ratio']:.2f}× | "
            f"{k['produce']['avg_ms']:.0f} / {k['produce']['p99_ms']:.0f} | "
            f"{o['produce']['avg_ms']:.0f} / {o['produce']['p99_ms']:.0f} | "
            f"{k['consume']['mb_s']:.1f} / {o['consume']['mb_s']:.1f} | "
            f"{k['consume']['records_s']:,.0f} / {o['consume']['records_s']:,.0f} | {r['consume_ratio']:.2f}× | "
            f"{max(k['produce']['rss_kb'], k['consume']['rss_kb']) / 1024:.0f} / "
            f"{max(o['produce']['rss_kb'], o['consume']['rss_kb']) / 1024:.0f} | {cpu(k)} / {cpu(o)} | "
            f"{each_run(r)} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fifth of the records per case")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--only", action="append", metavar="TEXT",
                        help="run only the cases whose label holds TEXT (\"6p 1024B\", \"lz4\"; repeatable: any)")
    parser.add_argument("--clients", type=int, default=2, help="producers and consumers at once in the loaded "
                        "6-partition cases (default 2)")
    parser.add_argument("--load-client", choices=("franz-go", "perf"), default="franz-go",
                        help="the clients of the loaded cases: franz-go (benchmarks/go, the default) or Kafka's perf "
                        "tools")
    parser.add_argument("--loop-ab", action="store_true", help="A/B of the broker's event loop in one sitting: "
                        "kafkaproto on uvloop (pip install '.[uvloop]') and a second one on asyncio's, each case "
                        "run on both")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--markdown", metavar="JSON", help="print the table of a saved run, and run nothing")
    args = parser.parse_args()
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text())))
        return
    cp = kafka_jvm.classpath(KAFKA_VERSION)  # the tests' jars: clients, broker and tools
    work = Path(tempfile.mkdtemp(prefix="kafkaproto-broker-bench-"))
    (work / "kafka").mkdir()
    (work / "ours").mkdir()
    (work / "sink").mkdir()
    (work / "uvloop").mkdir()
    # Ours first: a JVM keeps both cores busy for seconds after it first answers, which would time it, not us.
    ours = start_kafkaproto(work / "ours")
    sink = on_uvloop = None
    try:
        if args.loop_ab:
            on_uvloop = start_kafkaproto(work / "uvloop", "uvloop")
        sink = start_sink(work / "sink")
        kafka = start_kafka(work / "kafka")
    except BaseException:
        for broker in (ours, on_uvloop, sink):
            if broker is not None:
                broker.stop()
        raise
    results = {"startup_s": {"kafka": kafka.startup_s, "kafkaproto": ours.startup_s}, "cases": [],
               "load_client": args.load_client}
    load_tool = None
    print(f"startup to first answer: Apache Kafka {kafka.startup_s:.2f} s, kafkaproto {ours.startup_s:.2f} s")
    try:
        for broker in (kafka, ours, sink) + ((on_uvloop,) if on_uvloop else ()):
            for compression in ("none", "lz4"):
                topic = f"warm-up-{uuid.uuid4().hex[:10]}"
                broker.create_topic(topic, 6)
                produce(cp, broker, topic, 300_000, 100, "all", compression)
                if broker is not sink:
                    consume(cp, broker, topic, 300_000, 100)
                broker.delete_topics([topic])
        for case in cases(args.quick, args.clients, args.load_client):
            if args.only and not any(text in label(case) for text in args.only):
                continue
            runs = {"kafka": [], "kafkaproto": [], "sink": [], "uvloop": []}
            for repeat in range(args.repeats):
                # Which broker goes first turns over, so that none always meets the disk or the CPU as another
                # one left it. The sink takes part in the cases of one producer.
                order = [("kafka", kafka), ("kafkaproto", ours)] + ([] if case.get("many") or case["clients"] > 1
                                                                    else [("sink", sink)])
                order += [("uvloop", on_uvloop)] if on_uvloop else []
                shift = repeat % len(order)
                for key, broker in order[shift:] + order[:shift]:
                    if case.get("many"):
                        runs[key].append(many(cp, broker, args.quick))
                        continue
                    topic = f"bench-{uuid.uuid4().hex[:10]}"
                    broker.create_topic(topic, case["partitions"])
                    clients = case.get("clients", 1)
                    if clients > 1 and args.load_client == "franz-go":
                        load_tool = load_tool or build_load_client(work)
                        p = produce_load(load_tool, broker, topic, case["records"], case["size"], case["acks"],
                                         case["compression"], clients)
                        c = consume_load(load_tool, broker, topic, p["bytes"] // case["size"], case["size"], clients)
                    else:
                        p = produce(cp, broker, topic, case["records"], case["size"], case["acks"],
                                    case["compression"], clients)
                        c = consume(cp, broker, topic, p["bytes"] // case["size"], case["size"],
                                    clients) if broker is not sink else None
                    broker.delete_topics([topic])
                    runs[key].append({"produce": p, "consume": c})
            row = {**case, "load_average": os.getloadavg()}  # the 1, 5 and 15 minute averages as the case ends
            for key in ("kafka", "kafkaproto"):
                values = runs[key]
                row[key] = {part: {metric: statistics.median(v[part][metric] for v in values)
                                   for metric in values[0][part]} for part in ("produce", "consume")}
            if runs["uvloop"]:  # kafkaproto on uvloop over kafkaproto on asyncio's loop, repeat by repeat
                row["uvloop_gain"] = {part: statistics.median(u[part]["mb_s"] / a[part]["mb_s"] for u, a in zip(
                    runs["uvloop"], runs["kafkaproto"])) for part in ("produce", "consume")}
                row["uvloop_cpu"] = {part: statistics.median(
                    u[part]["broker_cpu_s"] / max(a[part]["broker_cpu_s"], 1e-9) for u, a in zip(
                        runs["uvloop"], runs["kafkaproto"])) for part in ("produce", "consume")}
            if runs["sink"]:
                row["producer_ceiling_mb_s"] = statistics.median(v["produce"]["mb_s"] for v in runs["sink"])
            for key in ("kafka", "kafkaproto"):  # CPU seconds per GB moved: the headroom a client-bound case hides
                for side in row[key].values():
                    if side.get("bytes"):
                        side["cpu_s_per_gb"] = side["broker_cpu_s"] / (side["bytes"] / 1e9)
            row["produce_ratio"] = row["kafkaproto"]["produce"]["mb_s"] / row["kafka"]["produce"]["mb_s"]
            row["consume_ratio"] = row["kafkaproto"]["consume"]["mb_s"] / row["kafka"]["consume"]["mb_s"]
            # Each repeat's own ratio (the two brokers' runs next to each other), to show the spread.
            row["run_ratios"] = {part: [o[part]["mb_s"] / k[part]["mb_s"] for k, o in zip(runs["kafka"],
                                                                                       runs["kafkaproto"])]
                                 for part in ("produce", "consume")}
            results["cases"].append(row)
            k, o = row["kafka"], row["kafkaproto"]
            if case.get("many"):
                print(f"{label(case)}: p99 largest {k['produce']['p99_max_ms']:.0f} vs "
                      f"{o['produce']['p99_max_ms']:.0f} ms, descriptors {k['produce']['fds']} vs "
                      f"{o['produce']['fds']}")
            print(f"{label(case):<28} produce {k['produce']['mb_s']:7.1f} vs {o['produce']['mb_s']:7.1f} MB/s "
                  f"({row['produce_ratio']:.2f}x{spread(row, 'produce')}; p99 {k['produce']['p99_ms']:.0f} vs "
                  f"{o['produce']['p99_ms']:.0f} ms)  consume {k['consume']['mb_s']:7.1f} vs "
                  f"{o['consume']['mb_s']:7.1f} MB/s ({row['consume_ratio']:.2f}x{spread(row, 'consume')})  "
                  f"broker CPU s/GB {cpu(k)} vs {cpu(o)} ({cpu_ratio(row, 'produce'):.2f}x, "
                  f"{cpu_ratio(row, 'consume'):.2f}x)  rss {k['produce']['rss_kb'] / 1024:.0f} vs "
                  f"{o['produce']['rss_kb'] / 1024:.0f} MB{ceiling(row)}", flush=True)
            if "uvloop_gain" in row:
                gain, cpu_used = row["uvloop_gain"], row["uvloop_cpu"]
                print(f"{'':<28} uvloop / asyncio: produce {gain['produce']:.2f}x, consume {gain['consume']:.2f}x; "
                      f"broker CPU {cpu_used['produce']:.2f}x, {cpu_used['consume']:.2f}x", flush=True)
        results["peak_rss_mb"] = {"kafka": kafka.memory_kb("VmHWM") / 1024,
                                  "kafkaproto": ours.memory_kb("VmHWM") / 1024}
    finally:
        kafka.stop()
        ours.stop()
        sink.stop()
        if on_uvloop is not None:
            on_uvloop.stop()
    results["targets"] = targets(results)
    print(f"peak RSS: Apache Kafka {results['peak_rss_mb']['kafka']:.0f} MB, kafkaproto "
          f"{results['peak_rss_mb']['kafkaproto']:.0f} MB")
    for name, (ok, detail) in results["targets"].items():
        print(f"target {name}: {'PASS' if ok else 'FAIL'} ({detail})")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
