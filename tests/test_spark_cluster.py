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
                    "SPARK_IDENT_STRING": f"kafkaproto-{self.port}", "SPARK_HOME": str(spark_home())}
        self.workers = workers
        self.daemon("start", "org.apache.spark.deploy.master.Master", 1, "--host", "127.0.0.1", "--port",
                    str(self.port), "--webui-port", str(self.ui))
        for i in range(1, workers + 1):
            self.daemon("start", "org.apache.spark.deploy.worker.Worker", i, "--host", "127.0.0.1", "--cores", "1",
                        "--memory", "1g", "--webui-port", str(kafka_jvm.free_port()), "--work-dir",
                        str(folder / f"work{i}"), self.url)
        self.wait_for_workers()

    @property
    def url(self):
        return f"spark://127.0.0.1:{self.port}"

    def daemon(self, action, cls, instance, *args):
        run = subprocess.run([str(spark_home() / "sbin" / "spark-daemon.sh"), action, cls, str(instance), *args],
                             env=self.env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, f"spark-daemon.sh {action} {cls}: {run.stdout}{run.stderr}"

    def wait_for_workers(self, timeout=90):
        deadline = time.monotonic() + timeout
        alive = 0
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json", timeout=5) as answer:
                    state = json.load(answer)
                alive = sum(1 for w in state.get("workers", ()) if w.get("state") == "ALIVE")
                if alive == self.workers:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        logs = "\n".join(p.read_text()[-1500:] for p in (self.folder / "logs").glob("*.out"))
        raise AssertionError(f"{alive} of {self.workers} workers alive after {timeout} s:\n{logs}")

    def stop(self):
        for i in range(1, self.workers + 1):
            self.daemon("stop", "org.apache.spark.deploy.worker.Worker", i)
        self.daemon("stop", "org.apache.spark.deploy.master.Master", 1)


def shipped_kafkaproto(folder, wheel):
    """What the README tells users to ship: kafkaproto and what it needs, installed into a folder, as a tar.gz.
    From the wheel the packaging tests build (the same source tree), so the codecs are compiled once a run."""
    target = folder / "kafkaproto-lib"
    run = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target), str(wheel)],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    archive = folder / "kafkaproto-lib.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(target, arcname=".")
    return archive


def test_a_job_on_a_standalone_cluster_equals_a_local_session(spark, tmp_path, tmp_path_factory):  # noqa: F811
    sys.path.insert(0, str(JOB.parent))
    import capture_job  # tests/spark/capture_job.py, the job itself

    paths = [str(CAPTURES[i]) for i in range(3)] + [str(p) for p in CAPTURES if p.stem == "java-4.3.1"]
    pytest.importorskip("build")
    (wheel,) = built_dist(tmp_path_factory).glob("*.whl")
    archive = shipped_kafkaproto(tmp_path, wheel)
    cluster = Cluster(tmp_path)
    try:
        out = tmp_path / "cluster.json"
        submit = subprocess.run(
            [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.url,
             "--archives", f"{archive}#kafkaproto-lib", "--conf", "spark.executorEnv.PYTHONPATH=kafkaproto-lib",
             "--conf", "spark.executor.memory=768m", "--conf", "spark.sql.session.timeZone=UTC",
             str(JOB), str(out), *paths],
            env={**os.environ, "PYSPARK_PYTHON": sys.executable}, capture_output=True, text=True, timeout=600)
        assert submit.returncode == 0, submit.stderr[-4000:]
        found = json.loads(out.read_text())
    finally:
        cluster.stop()
    local = capture_job.counts(spark, paths)
    assert found["exchanges"] == local["exchanges"] and found["records"] == local["records"]
    assert len(found["exchanges"]) > 20 and any(topic == "java-topic" for _, topic, _, _ in found["records"])
    # Both workers' executors ran tasks, each with the kafkaproto shipped in the archive.
    assert len(found["kafkaproto"]) == 2 and all("/kafkaproto-lib/kafkaproto/" in p for p in found["kafkaproto"])
