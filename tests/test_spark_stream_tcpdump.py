"""spark.readStream.format("kafka-pcap") over a ring tcpdump rotates (-C 1 -W N) while a producer writes to a broker
of ours: Trigger.AvailableNow runs on one checkpoint, before and after tcpdump stops, give every record produced
exactly once, the last file's included; a file the ring writes over before the stream read it gives a capture error
row. tcpdump needs the right to capture: without it these skip (fail under KAFKAPROTO_REQUIRE_TSHARK=1, as CI runs)."""

import os
import pwd
import shutil
import signal
import subprocess
import time
from collections import Counter

import pytest

pytest.importorskip("pyspark")
kafka = pytest.importorskip("kafka")

from kafkaproto.broker import Broker  # noqa: E402

from test_spark import spark  # noqa: E402, F401 - the session

pytestmark = [pytest.mark.xdist_group("spark"), pytest.mark.above_the_codecs]

TOPIC = "ring-records"
VALUE_BYTES = 1000
IDLE = 2  # seconds: option idle, and how long the tests leave the capture quiet


def cannot_capture(why):
    if os.environ.get("KAFKAPROTO_REQUIRE_TSHARK") == "1":
        pytest.fail(f"KAFKAPROTO_REQUIRE_TSHARK=1 but {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def broker():
    with Broker() as running:
        admin = kafka.KafkaAdminClient(bootstrap_servers=running.bootstrap_servers)
        admin.create_topics([kafka.admin.NewTopic(TOPIC, 1, 1)])
        admin.close()
        yield running


class Tcpdump:
    """tcpdump -C 1 -W files: a ring of 1 MB files in folder, of the broker's traffic on the loopback."""

    def __init__(self, folder, port, files):
        exe = shutil.which("tcpdump")
        if exe is None:
            cannot_capture("tcpdump is not installed")
        folder.mkdir()
        self.folder = folder
        self.dropped = ""
        # As root, tcpdump gives up root for its own user before opening each new file: keep the user who can
        # write in the folder.
        user = ["-Z", pwd.getpwuid(os.geteuid()).pw_name] if os.geteuid() == 0 else []
        # Packets written as they come (--immediate-mode, -U): the files' sizes and times follow the traffic.
        # A kernel buffer of 32 MiB keeps a busy machine from dropping packets.
        self.process = subprocess.Popen([exe, "-i", "lo", "-s", "0", "--immediate-mode", "-U", "-B", "32768", "-C",
                                         "1", "-W", str(files), *user,
                                         "-w", str(folder / "cap.pcap"), f"tcp port {port}"],
                                        stderr=subprocess.PIPE, text=True)
        first = self.process.stderr.readline()
        if "listening on" not in first:  # e.g. no permission to capture
            self.process.kill()
            self.process.wait()
            cannot_capture(f"tcpdump cannot capture here: {first.strip()}")

    def files(self):
        return sorted(self.folder.iterdir(), key=lambda p: (p.stat().st_mtime_ns, p.name))

    def stop(self):
        """Stops tcpdump; what it said at the end (its counts: packets dropped by the kernel, if any)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            said = self.process.communicate(timeout=30)[1]
        except subprocess.TimeoutExpired:
            self.process.kill()
            said = self.process.communicate()[1]
        self.dropped = " ".join(line for line in said.splitlines() if "dropped" in line and not line.startswith("0 "))
        return said

    def quiet(self, seconds=IDLE + 0.5):
        """Waits until the newest file has not grown for ``seconds``."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            newest = self.files()[-1].stat().st_mtime_ns
            if time.time_ns() - newest >= seconds * 1e9:
                return
            time.sleep(0.2)
        raise AssertionError("the capture never went quiet")


def produce(broker, first, count, capture):
    """Records first .. first+count-1 (values numbered, VALUE_BYTES each), acknowledged; then waits until tcpdump
    has written their packets."""
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks=1, linger_ms=5,
                                   batch_size=64 * 1024, compression_type=None)
    futures = [producer.send(TOPIC, value(n)) for n in range(first, first + count)]
    producer.flush(60)
    assert all(f.get(30) for f in futures)
    producer.close(30)
    capture.quiet(1)
    return list(range(first, first + count))


def value(n):
    return (b"record-%08d-" % n).ljust(VALUE_BYTES, b".")


def number(data):
    return int(data[7:15])


class Stream:
    """Trigger.AvailableNow runs of one query over the ring, on one checkpoint: each run's rows, by micro-batch."""

    def __init__(self, spark, folder, checkpoint, port, idle):  # noqa: F811
        self.spark, self.folder, self.checkpoint, self.port, self.idle = spark, folder, checkpoint, port, idle
        self.batches = {}  # batch id -> rows (a micro-batch run again replaces its rows: an idempotent sink)

    def run(self):
        def save(batch, batch_id):
            self.batches[batch_id] = [r.asDict() for r in batch.select("file", "side", "topic", "value",
                                                                       "error").collect()]

        before = set(self.batches)
        query = (self.spark.readStream.format("kafka-pcap").option("level", "records")
                 .option("ports", str(self.port)).option("idle", str(self.idle)).load(str(self.folder))
                 .writeStream.foreachBatch(save).option("checkpointLocation", str(self.checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination(300)
        assert query.exception() is None
        return [row for batch_id in sorted(set(self.batches) - before) for row in self.batches[batch_id]]


def produced(rows):
    return Counter(number(r["value"]) for r in rows if r["side"] == "request" and r["topic"] == TOPIC
                   and r["value"] is not None)


def errors(rows):
    return [r for r in rows if r["error"] is not None]


def test_every_record_once_across_runs_and_the_last_file_too(spark, broker, tmp_path):  # noqa: F811
    """The first run comes while the capture is quiet, so it reads the file tcpdump is still writing as it is; the
    producer goes on in that file and the ring goes round (over files already read); tcpdump stops; the second
    run reads what that file gained, the files after it and the last one, which no newer file ever finished."""
    capture = Tcpdump(tmp_path / "ring", broker.port, 4)
    stream = Stream(spark, tmp_path / "ring", tmp_path / "checkpoint", broker.port, IDLE)
    try:
        sent = produce(broker, 0, 2500, capture)  # about 2.6 MB: cap.pcap0 and 1 full, cap.pcap2 being written
        assert [p.name for p in capture.files()] == ["cap.pcap0", "cap.pcap1", "cap.pcap2"]
        capture.quiet()
        first = stream.run()
        sent += produce(broker, 2500, 2000, capture)  # cap.pcap2 fills, cap.pcap3, cap.pcap0 again
    finally:
        capture.stop()
    files = [p.name for p in capture.files()]
    assert files == ["cap.pcap1", "cap.pcap2", "cap.pcap3", "cap.pcap0"]
    capture.quiet()
    second = stream.run()

    assert errors(first + second) == []
    got = produced(first) + produced(second)
    assert set(got.values()) == {1}  # none twice
    missing = sorted(set(sent) - set(got))
    assert not missing, f"records missing: {missing[:20]}...; tcpdump: {capture.dropped or 'no packet dropped'}"
    assert sorted(got) == sent
    last = str(tmp_path / "ring" / "cap.pcap0")
    grown = str(tmp_path / "ring" / "cap.pcap2")
    assert {r["file"] for r in first} >= {grown}  # read while tcpdump was still writing it
    assert produced(r for r in second if r["file"] == grown)  # what it gained after, read in the second run
    assert produced(r for r in second if r["file"] == last)  # the last file, after tcpdump stopped


def test_a_file_written_over_before_it_was_read_gives_an_error_row(spark, broker, tmp_path):  # noqa: F811
    """The first run reads the finished file and sees the one being written; the ring goes round twice before the
    next run, writing that one anew: the next run says so in a capture error row, and reads on."""
    capture = Tcpdump(tmp_path / "ring", broker.port, 2)
    stream = Stream(spark, tmp_path / "ring", tmp_path / "checkpoint", broker.port, 600)
    try:
        sent = produce(broker, 10_000, 1500, capture)  # cap.pcap0 full, cap.pcap1 being written
        first = stream.run()
        seen = capture.files()[-1]
        assert seen.name == "cap.pcap1" and produced(first)
        sent += produce(broker, 11_500, 2100, capture)  # cap.pcap1 fills, cap.pcap0 anew, cap.pcap1 anew
        assert [p.name for p in capture.files()] == ["cap.pcap0", "cap.pcap1"]
        second = stream.run()
    finally:
        capture.stop()
    lost = errors(second)
    assert [r["file"] for r in lost] == [str(seen)]
    assert "capture error" in lost[0]["error"] and "written anew by the ring before the stream read it" in \
        lost[0]["error"]
    assert errors(first) == []
    got = produced(first) + produced(second)
    assert set(got.values()) == {1} and set(got) < set(sent)  # none twice; what cap.pcap1 held first is gone
    assert produced(r for r in second if r["file"] == str(tmp_path / "ring" / "cap.pcap0"))  # read on
