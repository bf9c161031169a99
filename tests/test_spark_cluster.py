"""kafkaproto on a real Spark cluster, not only a local session: a standalone master and two workers started here
with PySpark's own scripts (sbin/spark-daemon.sh), and a job submitted with spark-submit that reads captures with
the kafka-pcap data source, kafkaproto shipped to the executors as the README tells (an archive of
``pip install --target``, unpacked beside each executor). The job's answer must equal a local session's."""

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import kafka_jvm
from workers import built_dist

pytest.importorskip("pyspark")
from test_spark import CAPTURES, spark  # noqa: E402, F401 - the local session, for the same job

# One worker with the Spark session of test_spark.py; the cluster is code above the codecs (conftest.py).
pytestmark = [pytest.mark.xdist_group("spark"), pytest.mark.above_the_codecs]

ROOT = Path(__file__).resolve().parents[1]
JOB = Path(__file__).parent / "spark" / "capture_job.py"
# Every JVM here (master, workers, driver, executors) lives for a minute at most and does little: the quick compiler
# alone and one garbage-collector thread start it faster and leave the cores to the others.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def spark_home():
    import pyspark
    return Path(pyspark.__file__).parent


class Cluster:
    """A standalone master and workers on 127.0.0.1, their logs, pids and work folders under one directory."""

    def __init__(self, folder, workers=2):
        if shutil.which("java") is None:
            kafka_jvm.unavailable("java is not installed (Spark needs it)")
        self.folder = folder
        self.port, self.ui = kafka_jvm.free_port(), kafka_jvm.free_port()
        self.env = {**os.environ, "SPARK_LOG_DIR": str(folder / "logs"), "SPARK_PID_DIR": str(folder / "pids"),
                    "SPARK_IDENT_STRING": f"kafkaproto-{self.port}", "SPARK_HOME": str(spark_home()),
                    "SPARK_DAEMON_JAVA_OPTS": JVM_OPTIONS}
        self.workers = workers
        try:
            self.daemons(("org.apache.spark.deploy.master.Master", 1, "--host", "127.0.0.1", "--port",
                          str(self.port), "--webui-port", str(self.ui)))
            # The workers together, once the master answers: one that finds no master tries again only seconds
            # later.
            self.wait_for(lambda state: True, "the master")
            self.daemons(*[("org.apache.spark.deploy.worker.Worker", i, "--host", "127.0.0.1", "--cores", "1",
                            "--memory", "1g", "--webui-port", str(kafka_jvm.free_port()), "--work-dir",
                            str(folder / f"work{i}"), self.url) for i in range(1, workers + 1)])
            self.wait_for(lambda state: self.alive(state) == self.workers, f"{self.workers} workers alive")
        except BaseException:
            self.stop()
            raise

    @property
    def url(self):
        return f"spark://127.0.0.1:{self.port}"

    def daemons(self, *commands, action="start"):
        """spark-daemon.sh action for each (class, instance, *args), all at once (each start waits seconds to see
        its JVM live)."""
        runs = [subprocess.Popen([str(spark_home() / "sbin" / "spark-daemon.sh"), action, *map(str, command)],
                                 env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for command in commands]
        for command, run in zip(commands, runs):
            out, _ = run.communicate(timeout=120)
            assert run.returncode == 0, f"spark-daemon.sh {action} {command[0]}: {out}"

    @staticmethod
    def alive(state):
        return sum(1 for w in state.get("workers", ()) if w.get("state") == "ALIVE")

    def wait_for(self, ready, what, timeout=90):
        """Poll the master's state (its web UI's JSON) until ready(state)."""
        deadline = time.monotonic() + timeout
        state = {}
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json", timeout=5) as answer:
                    state = json.load(answer)
                if ready(state):
                    return
            except OSError:
                pass
            time.sleep(0.2)
        logs = "\n".join(p.read_text()[-1500:] for p in (self.folder / "logs").glob("*.out"))
        raise AssertionError(f"not {what} after {timeout} s ({self.alive(state)} of {self.workers} workers "
                             f"alive):\n{logs}")

    def stop(self):
        self.daemons(*[("org.apache.spark.deploy.worker.Worker", i) for i in range(1, self.workers + 1)],
                     action="stop")
        self.daemons(("org.apache.spark.deploy.master.Master", 1), action="stop")


def shipped_kafkaproto(folder, wheel):
    """What the README tells users to ship: kafkaproto and what it needs, installed into a folder, as a tar.gz.
    From the wheel the packaging tests build (the same source tree), so the codecs are compiled once a run."""
    target = folder / "kafkaproto-lib"
    run = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target), str(wheel)],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    archive = folder / "kafkaproto-lib.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:  # gzip's quickest: 40 MB, mostly binary
        tar.add(target, arcname=".")
    return archive


def test_a_job_on_a_standalone_cluster_equals_a_local_session(spark, tmp_path, tmp_path_factory):  # noqa: F811
    sys.path.insert(0, str(JOB.parent))
    import capture_job  # tests/spark/capture_job.py, the job itself

    paths = [str(CAPTURES[i]) for i in range(3)] + [str(p) for p in CAPTURES if p.stem == "java-4.3.1"]
    pytest.importorskip("build")
    with ThreadPoolExecutor(1) as pool:
        starting = pool.submit(Cluster, tmp_path)  # the cluster starts while kafkaproto is packed for it
        try:
            (wheel,) = built_dist(tmp_path_factory).glob("*.whl")
            archive = shipped_kafkaproto(tmp_path, wheel)
        except BaseException:
            if starting.exception() is None:
                starting.result().stop()
            raise
        cluster = starting.result()
    try:
        out, log = tmp_path / "cluster.json", tmp_path / "spark-submit.log"
        with open(log, "wb") as written:  # a file: a pipe left unread while the local job runs could fill
            submit = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.url,
                 "--archives", f"{archive}#kafkaproto-lib", "--conf", "spark.executorEnv.PYTHONPATH=kafkaproto-lib",
                 "--conf", "spark.executor.memory=768m", "--conf", "spark.sql.session.timeZone=UTC",
                 "--conf", "spark.ui.enabled=false", "--conf", f"spark.driver.extraJavaOptions={JVM_OPTIONS}",
                 "--conf", f"spark.executor.extraJavaOptions={JVM_OPTIONS}", str(JOB), str(out), *paths],
                env={**os.environ, "PYSPARK_PYTHON": sys.executable}, stdout=written, stderr=subprocess.STDOUT)
        try:
            local = capture_job.counts(spark, paths)  # the same job in the local session, meanwhile
            submit.wait(timeout=600)
        finally:
            if submit.poll() is None:
                submit.kill()
                submit.wait()
        assert submit.returncode == 0, log.read_text(errors="replace")[-4000:]
        found = json.loads(out.read_text())
    finally:
        cluster.stop()
    assert found["exchanges"] == local["exchanges"] and found["records"] == local["records"]
    assert len(found["exchanges"]) > 20 and any(topic == "java-topic" for _, topic, _, _ in found["records"])
    # Both workers' executors ran tasks, each with the kafkaproto shipped in the archive.
    assert len(found["kafkaproto"]) == 2 and all("/kafkaproto-lib/kafkaproto/" in p for p in found["kafkaproto"])
