"""Apache Kafka's own jars, as test oracles.

The pinned versions are resolved from Maven Central with ``tests/kafka/pom.xml``
into ``$KAFKAPROTO_KAFKA_CACHE`` (default ``~/.cache/kafkaproto/kafka``), one
folder per version, and ``tests/kafka/Oracle.java`` is compiled against them
with javac. Without java, javac, mvn or a reachable Maven Central, the tests
that need them skip and say which is missing; with ``KAFKAPROTO_REQUIRE_KAFKA=1``
(set by ``.ci/run``) they fail instead, so CI cannot pass without the oracle.
"""

import base64
import hashlib
import json
import os
import select
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from filelock import FileLock

from kafkaproto.uuid import Uuid

# 3.9.2 is the last release with the protocol versions 4.0 removed; 4.3.1 is the 4.x release the broker's
# API table follows.
KAFKA_VERSIONS = ("3.9.2", "4.3.1")
# Every message and record is also checked against the codecs of these releases' jars (Oracle.java): the brokers'
# releases and the newest one.
ORACLE_VERSIONS = (*KAFKA_VERSIONS, "4.4.0")

HERE = Path(__file__).parent / "kafka"
CACHE = Path(os.environ.get("KAFKAPROTO_KAFKA_CACHE") or Path.home() / ".cache" / "kafkaproto" / "kafka")
REQUIRED = os.environ.get("KAFKAPROTO_REQUIRE_KAFKA") == "1"
ANSWER_TIMEOUT = 120  # seconds; the first answer includes JVM start-up and class loading


class KafkaUnavailable(Exception):
    """java, javac, mvn or the jars cannot be had here."""


def unavailable(reason):
    """Skip, or fail where the environment promises Kafka (CI)."""
    if REQUIRED:
        pytest.fail(f"Kafka oracle required (KAFKAPROTO_REQUIRE_KAFKA=1) but unavailable: {reason}")
    pytest.skip(reason)


def program(version, name):
    """The classpath that runs tests/kafka/<name>.java against Kafka version's jars (compiled once); the test skips,
    or fails where Kafka is promised, when it cannot be had."""
    try:
        return classpath(version, compiled(version, name))
    except KafkaUnavailable as e:
        unavailable(str(e))


def _tool(name):
    path = shutil.which(name)
    if path is None:
        raise KafkaUnavailable(f"{name} is not installed (needed to run Apache Kafka's jars)")
    return path


def cache_lock(name):
    """A lock on one entry of the cache, which parallel test workers (pytest -n) share."""
    CACHE.mkdir(parents=True, exist_ok=True)
    return FileLock(str(CACHE / f"{name}.lock"))


def kafka_lib(version):
    """The folder holding Kafka ``version``'s jars (clients, broker, tools) and their dependencies, resolved once
    per version of tests/kafka/pom.xml."""
    lib = CACHE / version / "lib"
    if _resolved(lib):
        return lib
    with cache_lock("maven"):  # one mvn at a time: parallel ones would share ~/.m2 unsafely
        return _resolve(version, lib)


def _pom_digest():
    return hashlib.sha256((HERE / "pom.xml").read_bytes()).hexdigest()[:16]


def _resolved(lib):
    try:
        return (lib / ".resolved").read_text().split()[-1] == _pom_digest()
    except (OSError, IndexError):
        return False


def _resolve(version, lib):
    if _resolved(lib):  # another worker did it while this one waited
        return lib
    _tool("java")  # mvn needs it, and without it its own error does not say so
    mvn = _tool("mvn")
    partial = CACHE / version / "lib.partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        proc = subprocess.run(
            [mvn, "-B", "-q", "-f", str(HERE / "pom.xml"), f"-Dkafka.version={version}",
             "dependency:copy-dependencies", f"-DoutputDirectory={partial}"],
            capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        raise KafkaUnavailable(f"mvn did not resolve Kafka {version} from Maven Central within 900 s") from None
    if proc.returncode != 0:
        errors = [line for line in (proc.stdout + proc.stderr).splitlines() if "ERROR" in line]
        raise KafkaUnavailable(f"mvn could not resolve Kafka {version} from Maven Central: "
                               + (errors[0] if errors else f"exit {proc.returncode}"))
    (partial / ".resolved").write_text(f"{version} {_pom_digest()}")
    shutil.rmtree(lib, ignore_errors=True)
    partial.rename(lib)
    return lib


def classpath(version, *extra):
    return os.pathsep.join([*map(str, extra), str(kafka_lib(version) / "*")])


def compiled(version, program="Oracle"):
    """tests/kafka/<program>.java compiled against ``version``'s jars; recompiled whenever the source changes."""
    source = HERE / f"{program}.java"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    classes = CACHE / version / f"{program.lower()}-{digest}"
    if (classes / f"{program}.class").exists():
        return classes
    failed = _COMPILE_FAILURES.get(classes)
    if failed is not None:  # once per process: every test asking again would run javac again
        raise AssertionError(failed)
    with cache_lock(f"{version}-{program}"):
        try:
            return _compile(version, program, source, classes)
        except AssertionError as e:
            _COMPILE_FAILURES[classes] = str(e)
            raise


_COMPILE_FAILURES = {}  # classes folder -> javac's complaint


def _compile(version, program, source, classes):
    if (classes / f"{program}.class").exists():
        return classes
    javac = _tool("javac")
    tmp = classes.with_name(classes.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    proc = subprocess.run([javac, "-nowarn", "-d", str(tmp), "-cp", classpath(version), str(source)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        # The jars are there and javac ran: a compile error is a real failure, not a skip.
        raise AssertionError(f"javac failed on {program}.java against Kafka {version}:\n{proc.stderr}")
    tmp.rename(classes)
    return classes


# (message, version) pairs checked against each jar by test_kafka_messages; reported at the end.
GOLDEN = {version: set() for version in ORACLE_VERSIONS}
# Pairs a jar marks unstable: {(message, version): None if Kafka agreed, else how it differed}.
GOLDEN_UNSTABLE = {version: {} for version in ORACLE_VERSIONS}


class Oracle:
    """A running Oracle.java: ``ask`` sends one request and returns its answer."""

    def __init__(self, version):
        self.version = version
        self._defined = {}
        java = _tool("java")
        classes = compiled(version)
        self._log = CACHE / version / f"oracle-{os.getpid()}.log"  # the JVM's stderr, shown if it dies
        with open(self._log, "wb") as log:
            self._proc = subprocess.Popen(
                [java, "-Xss8m", "-cp", classpath(version, classes), "Oracle"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)

    @property
    def alive(self):
        return self._proc.poll() is None

    def ask(self, request):
        self.send(request)
        return self.receive(request)

    def send(self, request):
        try:
            self._proc.stdin.write(json.dumps(request).encode() + b"\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise AssertionError(self._died()) from None

    def receive(self, request):
        """The answer to the request sent last. Any failure here leaves the oracle closed, so that
        no later request can be paired with this one's late answer."""
        ready, _, _ = select.select([self._proc.stdout], [], [], ANSWER_TIMEOUT)
        if not ready:
            self.close()
            raise AssertionError(f"Kafka {self.version} oracle gave no answer in {ANSWER_TIMEOUT} s to {request['op']}")
        line = self._proc.stdout.readline()
        if not line:
            self.close()
            raise AssertionError(self._died())
        return json.loads(line)

    def _died(self):
        tail = self._log.read_text(errors="replace")[-2000:] if self._log.exists() else ""
        return f"Kafka {self.version} oracle is not running (exit {self._proc.poll()}); its stderr ends:\n{tail}"

    def versions(self, message):
        """(range of versions, the newest one if this release marks it unstable, else None) of ``message``;
        (range(0), None) when the jar does not have it."""
        if message not in self._defined:
            answer = self.ask({"op": "versions", "message": message})
            if answer.get("missing"):
                self._defined[message] = range(0), None
            else:
                self._defined[message] = (range(answer["lowest"], answer["highest"] + 1),
                                          answer["highest"] if answer.get("latestUnstable") else None)
        return self._defined[message]

    def defines(self, message, version):
        """Whether this jar has ``message`` (a spec name) at ``version`` as a finished (stable) version."""
        versions, unstable = self.versions(message)
        return version in versions and version != unstable

    def close(self):
        if self._proc.poll() is None:
            self._proc.stdin.close()  # the end of its input ends the loop
            _wait_or_kill(self._proc, 10)


def ask_all(oracles, requests):
    """One request to each oracle, sent before any answer is read so they work in parallel.
    Every answer is read (or its oracle closed) before a failure is raised."""
    for oracle, request in zip(oracles, requests):
        oracle.send(request)
    answers, failure = [], None
    for oracle, request in zip(oracles, requests):
        try:
            answers.append(oracle.receive(request))
        except AssertionError as exc:
            failure = failure or exc
    if failure:
        raise failure
    return answers


def b64(data):
    return None if data is None else base64.b64encode(bytes(data)).decode()


def unb64(text):
    return base64.b64decode(text)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller_port}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs={log_dir}
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
auto.create.topics.enable=false
"""
# Group settings the test Kafka runs with (tests/test_broker_differential.py gives this broker the same): no
# initial rebalance delay, session timeouts from 1 s (timeouts are tested in seconds), at most 3 members.
GROUP_SETTINGS = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000",
                  "group.max.size": "3"}
SERVER_PROPERTIES += "".join(f"{k}={v}\n" for k, v in GROUP_SETTINGS.items())
# Authorization as the tests compare it: ACLs enforced by Kafka's StandardAuthorizer; clients on the PLAINTEXT
# listener are User:ANONYMOUS, a super user (every other test goes on as without an authorizer); the SASL/PLAIN
# listener's users (ACL_USERS) are held to the ACLs a test makes.
ACL_USERS = {"alice": "alice-secret", "bob": "bob-secret"}
AUTHORIZER_SETTINGS = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{user}="{password}"' for user, password in ACL_USERS.items()) + ";",
}
# The tests' Kafka (KafkaBroker): the benchmark's (SERVER_PROPERTIES), with the SASL listener and the authorizer.
TEST_SERVER_PROPERTIES = SERVER_PROPERTIES.replace(
    "listeners=PLAINTEXT://127.0.0.1:{port},",
    "listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port},").replace(
    "advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n",
    "advertised.listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}\n").replace(
    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,",
    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,") + "".join(
    f"{k}={v}\n" for k, v in AUTHORIZER_SETTINGS.items())
# This broker set up as the test Kafka is: its group settings, no topic made by a Metadata request, and the
# same authorizer and listeners (the PLAINTEXT one first: Broker.port is its port).
LIKE_KAFKA = {**GROUP_SETTINGS, "auto.create.topics.enable": "false", **AUTHORIZER_SETTINGS,
              "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
              "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"}


class KafkaBroker:
    """A single-node KRaft broker of a pinned version on 127.0.0.1, in a fresh folder.

    Formatted with Kafka's StorageTool, started as ``kafka.Kafka``, ready once it answers
    ApiVersions; ``stop`` shuts it down (SIGTERM, then SIGKILL after 30 s).
    """

    START_TIMEOUT = 120

    def __init__(self, version, workdir):
        self.version = version
        self.workdir = Path(workdir)
        self.port = free_port()
        self.controller_port = free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        self.sasl_port = free_port()
        while self.sasl_port in (self.port, self.controller_port):
            self.sasl_port = free_port()
        java = _tool("java")
        cp = classpath(version)
        props = self.workdir / "server.properties"
        props.write_text(TEST_SERVER_PROPERTIES.format(port=self.port, controller_port=self.controller_port,
                                                  sasl_port=self.sasl_port, log_dir=self.workdir / "data"))
        cluster_id = str(Uuid.random())  # Kafka's own form: an ID starting with '-' reads as an option
        fmt = subprocess.run([java, "-cp", cp, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(props)],
                             capture_output=True, text=True, timeout=120)
        if fmt.returncode != 0:
            raise AssertionError(f"Kafka {version} StorageTool format failed:\n{fmt.stdout}\n{fmt.stderr}")
        self.log = self.workdir / "broker.log"
        with open(self.log, "wb") as log:
            self._proc = subprocess.Popen([java, "-Xmx512m", "-cp", cp, "kafka.Kafka", str(props)],
                                          stdout=log, stderr=subprocess.STDOUT)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self):
        from kafkaproto import decode_response, encode_request
        from kafkaproto.messages import ApiVersionsRequest, RequestHeader

        deadline = time.monotonic() + self.START_TIMEOUT
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise AssertionError(f"Kafka {self.version} broker exited with {self._proc.returncode}; "
                                     f"log tail:\n{self.log.read_text()[-3000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
                    header = RequestHeader(request_api_key=18, request_api_version=0, correlation_id=0,
                                           client_id="kafkaproto-tests")
                    sock.sendall(encode_request(header, ApiVersionsRequest(), 0))
                    size = int.from_bytes(_recv_exact(sock, 4), "big")
                    if decode_response(_recv_exact(sock, size), 18, 0).body.error_code == 0:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"Kafka {self.version} broker did not answer within {self.START_TIMEOUT} s")

    def stop(self):
        if self._proc.poll() is None:
            self._proc.terminate()  # a controlled shutdown
            _wait_or_kill(self._proc, 30)


def _wait_or_kill(proc, timeout):
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)
