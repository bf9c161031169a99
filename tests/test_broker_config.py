"""The broker's settings as a new user meets them: every value checked at start as Kafka checks it, each wrong
one named with its key and where it came from, a port that cannot be listened on said plainly, and Apache Kafka
4.3.1's own KafkaConfig and LogConfig as the oracle of what is refused."""

import asyncio
import hashlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import kafka_jvm
from kafkaproto import errors, records
from kafkaproto.broker import Broker, BrokerConfig, ConfigError
from kafkaproto.broker.config import AUTHORIZER_SETTINGS, DIFFERENCES, SETTINGS
from kafkaproto.broker.settings import INTEGER_BOUNDS
from kafkaproto.broker.topic_configs import TOPIC_CONFIGS, topic_config_error
from kafkaproto.broker.embedded import serve
from kafkaproto.broker.server import ListenError
from kafkaproto.messages import (CreateTopicsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest,
                                 ProduceRequest)
from test_kafka_broker import RawClient

pytestmark = pytest.mark.above_the_codecs

KAFKA = kafka_jvm.KAFKA_VERSIONS[-1]


def problems(values, **kwargs):
    """The lines a configuration is refused with ([] if it is taken)."""
    try:
        BrokerConfig(values, **kwargs)
    except ConfigError as e:
        return [str(p) for p in e.problems]
    return []


def broker_command(*args, cwd, timeout=30):
    """The kafkaproto console command, run as a user runs it (outside the checkout)."""
    command = [str(Path(sys.executable).parent / "kafkaproto"), "broker", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=timeout)


# ---- ports ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("port", [65536, 99999, 100000000, -1])
def test_a_port_out_of_range_is_refused(port):
    assert problems({"listeners": f"PLAINTEXT://127.0.0.1:{port}"}, origins={"listeners": "--override"}) == [
        f"--override listeners=PLAINTEXT://127.0.0.1:{port}: port {port} is out of range (0-65535; 0 takes any "
        "free port)"]


@pytest.mark.parametrize("listeners", ["PLAINTEXT://127.0.0.1:0", "PLAINTEXT://127.0.0.1:65535",
                                       "PLAINTEXT://:9092", "PLAINTEXT://[::1]:9092,SSL://0.0.0.0:9093"])
def test_ports_in_range_are_taken(listeners):
    assert problems({"listeners": listeners}) == []


def test_port_0_takes_a_free_port():
    with Broker() as broker:  # listeners=PLAINTEXT://127.0.0.1:0
        assert 0 < broker.port <= 65535
        with socket.create_connection((broker.host, broker.port), timeout=10):
            pass


def test_the_command_line_refuses_an_impossible_port_before_it_starts(tmp_path):
    done = broker_command("--override", "listeners=PLAINTEXT://127.0.0.1:99999", "--override",
                          f"log.dirs={tmp_path / 'data'}", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == ("kafkaproto broker: --override listeners=PLAINTEXT://127.0.0.1:99999: port 99999 is out "
                           "of range (0-65535; 0 takes any free port)\n")
    assert not (tmp_path / "data").exists()  # refused before anything was made


def test_a_port_in_use_is_said_plainly_with_nothing_about_stopping_before_it(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = broker_command("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override",
                              f"log.dirs={tmp_path / 'data'}", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[-1].startswith(f"kafkaproto broker: cannot listen on 127.0.0.1:{port}: address already in use")
    assert not any("started" in line or "stopped" in line for line in lines), done.stderr


def test_serve_raises_a_port_in_use_without_saying_it_started_or_stopped(tmp_path, caplog):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = BrokerConfig({"listeners": f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:0",
                               "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL",
                               "log.dirs": str(tmp_path)})
        with caplog.at_level(logging.INFO, logger="kafkaproto.broker"), pytest.raises(ListenError) as raised:
            asyncio.run(serve(config))
    assert str(raised.value).startswith(f"cannot listen on 127.0.0.1:{port}: address already in use")
    assert not [r for r in caplog.records if "started" in r.getMessage() or "stopped" in r.getMessage()]
    # Nothing was left open: the same directory serves at once.
    with Broker({"listeners": "PLAINTEXT://127.0.0.1:0"}, log_dir=tmp_path):
        pass


# ---- where a wrong value came from ---------------------------------------------------------------------------

def test_an_override_is_named_as_an_override(tmp_path):
    done = broker_command("--override", "num.partitions=abc", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, "kafkaproto broker: --override num.partitions=abc: not an integer\n")


def test_a_file_setting_is_named_by_its_file_and_line(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("# the broker\nnode.id=1\n\nnum.partitions=abc\n")
    with pytest.raises(ConfigError) as raised:
        BrokerConfig.load(path)
    assert str(raised.value) == f"{path}, line 4: num.partitions=abc: not an integer"
    done = broker_command("server.properties", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2, "kafkaproto broker: server.properties, line 4: num.partitions=abc: not an integer\n")


def test_an_override_over_a_file_is_named_as_the_override(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("num.partitions=3\n")
    with pytest.raises(ConfigError, match=r"^--override num.partitions=0: must be at least 1$"):
        BrokerConfig.load(path, {"num.partitions": "0"})


def test_every_wrong_setting_is_reported_at_once(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("log.segment.bytes=10\nauto.create.topics.enable=yes\nnum.partitions 2\n"
                    "compression.type: gzip\n")
    with pytest.raises(ConfigError) as raised:
        BrokerConfig.load(path, {"message.max.bytes": "-1", "listeners": "PLAINTEXT://127.0.0.1:70000"})
    assert str(raised.value).splitlines() == [
        "5 settings are wrong:",
        f"  {path}, line 1: log.segment.bytes=10: must be at least 1048576",
        f"  {path}, line 2: auto.create.topics.enable=yes: not true or false",
        f"  {path}, line 4: compression.type=gzip: only compression.type=producer is implemented here (the broker "
        "does not recompress)",
        "  --override message.max.bytes=-1: must be at least 0",
        "  --override listeners=PLAINTEXT://127.0.0.1:70000: port 70000 is out of range (0-65535; 0 takes any free "
        "port)"]
    assert [p.kafka for p in raised.value.problems] == [True, True, False, True, False]


def test_lines_that_are_not_settings_are_all_named(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("num.partitions=2\njust-a-word\n=3\n")
    with pytest.raises(ConfigError) as raised:
        BrokerConfig.load(path)
    assert str(raised.value).splitlines()[1:] == [f"  {path}, line 2: 'just-a-word' is not key=value",
                                                  f"  {path}, line 3: '=3' is not key=value"]


def test_the_python_api_names_its_own_source():
    with pytest.raises(ConfigError, match=r"^Broker\(\): num.partitions=x: not an integer$"):
        Broker({"num.partitions": "x"}).start()


def test_a_misspelt_key_is_logged_with_the_key_it_was_probably_meant_to_be(caplog):
    with caplog.at_level(logging.INFO, logger="kafkaproto.broker"):
        BrokerConfig({"num.partition": "3", "num.network.threads": "3"})
    (record,) = [r for r in caplog.records if "not used" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == ("configuration: not used by this broker: num.network.threads, num.partition (did "
                                   "you mean num.partitions?)")


def test_a_rule_between_settings_names_both_and_their_sources():
    origins = {"group.consumer.min.session.timeout.ms": "server.properties, line 7"}
    assert problems({"group.consumer.min.session.timeout.ms": "50000"}, origins=origins) == [
        "server.properties, line 7: group.consumer.min.session.timeout.ms=50000: must be at most "
        "group.consumer.session.timeout.ms=45000 (the default)"]
    assert problems({"group.consumer.heartbeat.interval.ms": "50000", "group.consumer.max.heartbeat.interval.ms":
                     "60000"}, origins={"group.consumer.heartbeat.interval.ms": "--override"}) == [
        "--override group.consumer.heartbeat.interval.ms=50000: must be less than group.consumer.session.timeout.ms"
        "=45000 (the default)"]


# ---- types, ranges and allowed values ------------------------------------------------------------------------

@pytest.mark.parametrize("key, value, why", [
    ("num.partitions", "0", "must be at least 1"),
    ("num.partitions", "1.5", "not an integer"),
    ("num.partitions", "", "empty, where an integer is needed"),
    ("num.partitions", "3_000", "not an integer"),
    ("num.partitions", "2147483648", "out of range for an int (-2147483648 to 2147483647)"),
    ("log.retention.bytes", "9223372036854775808", "out of range for a long"),
    ("log.segment.bytes", "1048575", "must be at least 1048576"),
    ("log.segment.bytes", "14", "must be at least 1048576"),
    ("message.max.bytes", "-1", "must be at least 0"),
    ("socket.request.max.bytes", "0", "must be at least 1"),
    ("node.id", "-1", "must be at least 0"),
    ("auto.create.topics.enable", "1", "not true or false"),
    ("compression.type", "brotli", "not one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
    ("compression.type", "zstd", "only compression.type=producer is implemented here"),
    ("log.cleanup.policy", "delete,archive", "'archive' is not one of: compact, delete"),
    ("log.cleanup.policy", "delete,", "has an empty item"),
    ("log.message.timestamp.type", "createtime", "not one of: CreateTime, LogAppendTime"),
    ("log.message.timestamp.type", "LogAppendTime", "only CreateTime timestamps are implemented here"),
    ("group.consumer.migration.policy", "sideways", "not one of: disabled, downgrade, upgrade, bidirectional"),
    ("group.consumer.assignors", "", "empty; at least one value is needed"),
    ("group.consumer.assignors", "sticky", "this broker's assignors are uniform and range"),
    ("group.consumer.regex.refresh.interval.ms", "9999", "must be at least 10000"),
    ("ssl.client.auth", "REQUIRED", "not one of: required, requested, none"),
    ("ssl.keystore.type", "JKS", "only PEM keystores are read here"),
    ("sasl.enabled.mechanisms", "PLAIN,GSSAPI", "the SASL mechanisms implemented here are PLAIN, SCRAM-SHA-256"),
    ("kafkaproto.open.segment.files.max", "0", "must be at least 1 or -1"),
    ("delete.topic.partition.check.interval.ms", "0", "must be at least 1"),
    ("log.retention.ms", "0", "the retention time must be unlimited (negative) or at least 1 ms"),
    ("log.roll.ms", "0", "must be at least 1"),
    ("log.dirs", "", "empty; at least one value is needed"),
    ("listeners", "127.0.0.1:9092", "'127.0.0.1:9092' is not NAME://host:port"),
    ("listeners", "PLAINTEXT://127.0.0.1", "'PLAINTEXT://127.0.0.1' has no port"),
    ("listeners", "PLAINTEXT://127.0.0.1:x", "the port 'x' is not a number"),
    ("listeners", "PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093", "listener name PLAINTEXT is used twice"),
    ("listeners", "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9092", "port 9092 is used twice"),
    ("listeners", "INTERNAL://127.0.0.1:9092", "listener INTERNAL has no security protocol"),
    ("listener.security.protocol.map", "PLAINTEXT", "'PLAINTEXT' is not LISTENER_NAME:SECURITY_PROTOCOL"),
    ("listener.security.protocol.map", "PLAINTEXT:TLS", "'TLS' is not a security protocol"),
    ("advertised.listeners", "SSL://example.com:9093", "names listener SSL, which listeners does not have"),
    ("connections.max.idle.ms", "100", "must be more than connection.failed.authentication.delay.ms=100 (the "
                                       "default)"),
    ("max.connections.per.ip", "0", "may be 0 only when max.connections.per.ip.overrides lets some addresses in"),
    ("queued.max.requests", "0", "must be at least 1"),
    ("max.connections.per.ip.overrides", "127.0.0.1", "'127.0.0.1' is not host:count"),
    ("max.connections.per.ip.overrides", "127.0.0.1:many", "the count 'many' of '127.0.0.1' is not a number"),
    ("listener.name.ssl.ssl.client.auth", "sometimes", "not one of: required, requested, none"),
])
def test_a_wrong_value_is_refused_with_why(key, value, why):
    (line,) = problems({key: value}, origins={key: "--override"})
    assert line.startswith(f"--override {key}={value if value.strip() == value and value else repr(value)}: ")
    assert why in line


@pytest.mark.parametrize("key, value, parsed", [
    ("num.partitions", " +3 ", 3),
    ("auto.create.topics.enable", "FALSE", False),
    ("group.consumer.migration.policy", "UPGRADE", "UPGRADE"),  # Kafka compares it ignoring case
    ("log.cleanup.policy", "compact, delete", "compact, delete"),
    ("log.cleanup.policy", "", ""),  # no policy: kept forever
    ("log.segment.bytes", "1048576", 1048576),
    ("message.max.bytes", "0", 0),
    ("log.retention.ms", "-5", -5),  # any negative: unlimited
    ("log.retention.ms", "9223372036854775807", 2**63 - 1),
    ("kafkaproto.open.segment.files.max", "-1", -1),
    ("socket.send.buffer.bytes", "-1", -1),
    ("sasl.enabled.mechanisms", "plain,scram-sha-512", "plain,scram-sha-512"),
])
def test_a_right_value_is_taken_as_kafka_reads_it(key, value, parsed):
    assert BrokerConfig({key: value})[key] == parsed


def test_every_setting_has_a_type_and_a_default_within_its_own_rules():
    assert BrokerConfig({}).values  # the defaults pass every check
    for key, setting in SETTINGS.items():
        assert setting.type in ("short", "int", "long", "double", "boolean", "string", "list", "class", "password")
        if setting.default is not None:
            setting.validate(setting.default)
            if setting.type in INTEGER_BOUNDS:
                low, high = INTEGER_BOUNDS[setting.type]
                assert low <= setting.default <= high, key


@pytest.mark.parametrize("name, value, why", [
    ("segment.bytes", "1048575", "segment.bytes=1048575: must be at least 1048576"),
    ("segment.bytes", "1", "segment.bytes=1: must be at least 1048576"),
    ("internal.segment.bytes", "abc", "internal.segment.bytes=abc: not an integer"),
    ("internal.segment.bytes", "2147483648", "out of range for an int"),
    ("retention.ms", "-2", "retention.ms=-2: must be at least -1"),
    ("max.message.bytes", "x", "max.message.bytes=x: not an integer"),
    ("compression.type", "GZIP", "compression.type=GZIP: not one of"),
    ("message.timestamp.type", "LogAppendTime", "only CreateTime timestamps are implemented here"),
    ("cleanup.policy", "compact,delete,", "has an empty item"),
    ("min.insync.replicas", "0", "min.insync.replicas=0: must be at least 1"),
])
def test_topic_configs_are_checked_as_kafka_checks_them(name, value, why):
    assert why in topic_config_error(name, value)
    assert topic_config_error(name, None) is None  # back to the default


@pytest.mark.parametrize("value", ["-5", "0", "1", "200", " 200 ", "+7", "2147483647"])
def test_internal_segment_bytes_takes_any_int_as_kafka_does(value):
    assert topic_config_error("internal.segment.bytes", value) is None


# ---- the command line starts and stops as the README says -----------------------------------------------------

def test_the_command_lines_the_readme_shows_start_and_stop_cleanly(tmp_path):
    (tmp_path / "server.properties").write_text("listeners=PLAINTEXT://127.0.0.1:0\n")
    runs = [["broker", "--override", "listeners=PLAINTEXT://127.0.0.1:0"],
            ["broker", "server.properties", "--override", "num.partitions=3"],
            ["-m", "kafkaproto.broker", "--override", "listeners=PLAINTEXT://127.0.0.1:0"]]
    for number, args in enumerate(runs):
        data = tmp_path / f"data-{number}"
        # -P: the checkout is not put first on sys.path, so the installed, compiled package runs.
        command = ([sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []), *args] if args[0] == "-m"
                   else [str(Path(sys.executable).parent / "kafkaproto"), *args])
        process = subprocess.Popen([*command, "--override", f"log.dirs={data}"], cwd=tmp_path,
                                   stderr=subprocess.PIPE, text=True)
        try:
            deadline, said = time.monotonic() + 30, []
            while time.monotonic() < deadline:
                line = process.stderr.readline()
                said.append(line)
                if "started on" in line or not line:
                    break
            assert "started on 127.0.0.1:" in said[-1], "".join(said)
            process.send_signal(signal.SIGINT)
            assert process.wait(30) == 0
            assert "kafkaproto broker stopped" in process.stderr.read()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


# ---- Apache Kafka as the oracle -------------------------------------------------------------------------------

PROBE = r"""
import java.io.*;
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.server.config.AbstractKafkaConfig;
import org.apache.kafka.storage.internals.log.LogConfig;
import kafka.server.KafkaConfig;

// Asks Kafka's own classes about settings, a line at a time (tab-separated):
//   broker-type KEY             -> TYPE, or "missing"
//   topic-type KEY              -> TYPE, or "missing"
//   broker KEY VALUE [KEY VALUE]...  -> "ok", or "refused" and Kafka's message: a KafkaConfig made of a broker's
//                                   base settings and these
//   topic KEY VALUE             -> likewise, by LogConfig.validate
public class ConfigProbe {
  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
    for (String line; (line = in.readLine()) != null; ) {
      String[] p = line.split("\t", -1);
      if (p[0].endsWith("-type")) {
        Map<String, ConfigDef.ConfigKey> keys = p[0].equals("broker-type")
            ? AbstractKafkaConfig.CONFIG_DEF.configKeys() : LogConfig.configKeys();
        ConfigDef.ConfigKey key = keys.get(p[1]);
        out.println(key == null ? "missing" : key.type.toString());
        continue;
      }
      Properties props = new Properties();
      if (p[0].equals("broker")) {
        props.put("process.roles", "broker");
        props.put("node.id", "1");
        props.put("controller.quorum.voters", "3000@127.0.0.1:9093");
        props.put("controller.listener.names", "CONTROLLER");
        props.put("listeners", "PLAINTEXT://127.0.0.1:9092");
        props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT");
        props.put("log.dirs", "kafka-probe-data");
      }
      for (int i = 1; i + 1 < p.length; i += 2) props.put(p[i], p[i + 1]);
      try {
        if (p[0].equals("broker")) {
          KafkaConfig.fromProps(props, false);
        } else {
          Map<String, String> map = new HashMap<>();
          for (String name : props.stringPropertyNames()) map.put(name, props.getProperty(name));
          LogConfig.validate(map);
        }
        out.println("ok");
      } catch (Throwable e) {
        out.println("refused\t" + String.valueOf(e.getMessage()).replace('\n', ' ').replace('\t', ' '));
      }
    }
  }
}
"""


@pytest.fixture(scope="module")
def kafka_probe():
    """ConfigProbe (above) compiled against Kafka's jars and running; ask(line) -> its answer."""
    try:
        lib = kafka_jvm.classpath(KAFKA)
        java, javac = kafka_jvm._tool("java"), kafka_jvm._tool("javac")
    except kafka_jvm.KafkaUnavailable as e:
        kafka_jvm.unavailable(str(e))
    classes = kafka_jvm.CACHE / KAFKA / f"configprobe-{hashlib.sha256(PROBE.encode()).hexdigest()[:16]}"
    with kafka_jvm.cache_lock(f"{KAFKA}-configprobe"):
        if not (classes / "ConfigProbe.class").exists():
            source = classes.with_name(classes.name + ".src") / "ConfigProbe.java"
            source.parent.mkdir(parents=True, exist_ok=True)
            source.write_text(PROBE)
            partial = classes.with_name(classes.name + ".partial")
            done = subprocess.run([javac, "-nowarn", "-d", str(partial), "-cp", lib, str(source)],
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr
            partial.rename(classes)
    process = subprocess.Popen([java, "-cp", os.pathsep.join([str(classes), lib]), "ConfigProbe"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               cwd=kafka_jvm.CACHE)

    def ask(*fields):
        process.stdin.write("\t".join(fields) + "\n")
        process.stdin.flush()
        answer = process.stdout.readline()
        assert answer, "the Kafka config probe stopped"
        return answer.rstrip("\n")

    yield ask
    process.stdin.close()
    process.wait(30)


def candidates(setting):
    """Values worth asking both about: malformed ones, each bound and its neighbours, the allowed values and
    near misses of them."""
    values = {"", "abc", "1.5", "-1", "0", "1", "true", "TRUE", "yes", " 7 "}
    if setting.type in INTEGER_BOUNDS:
        low, high = INTEGER_BOUNDS[setting.type]
        values |= {str(low - 1), str(low), str(high), str(high + 1), "+3", "2147483648", "-2147483649"}
        for bound in (setting.at_least, setting.at_most, setting.default):
            if isinstance(bound, int) and not isinstance(bound, bool):
                values |= {str(bound - 1), str(bound), str(bound + 1)}
    for allowed in (setting.one_of or ()) + (setting.implemented or ()):
        values |= {allowed, allowed.upper(), allowed.lower(), allowed + ",", f"{allowed},{allowed}", " " + allowed}
    if setting.type == "list":
        values |= {",", "a,,b", "delete,compact"}
    return sorted(values)


# Keys whose values are only meaningful with other keys Kafka's base settings fix (the listeners and the
# controller quorum): test_listeners_agree_with_kafka asks about them case by case.
CONTEXTUAL = {"listeners", "advertised.listeners", "listener.security.protocol.map", "node.id", "log.dirs",
              "log.dir"}


def test_every_key_has_kafkas_type(kafka_probe):
    for key, setting in SETTINGS.items():
        kind = kafka_probe("broker-type", key)
        assert kind in ("missing", setting.type.upper()), f"{key}: Kafka's type is {kind}, ours {setting.type}"
    for name, setting in TOPIC_CONFIGS.items():
        assert kafka_probe("topic-type", name) == setting.type.upper(), name
    ours = [k for k in SETTINGS if kafka_probe("broker-type", k) == "missing"]
    assert all(k.startswith(("kafkaproto.", "delete.topic.partition.")) or k in AUTHORIZER_SETTINGS for k in ours), ours


def differences(kafka_probe, kind, keys, ours):
    """([(key, value, Kafka's answer, ours)] where the two disagree beyond what this broker says it does, the keys
    of DIFFERENCES whose difference showed)."""
    found, lenient = [], set()
    for key, setting in keys.items():
        if kind == "broker" and (key in CONTEXTUAL or kafka_probe("broker-type", key) == "missing"):
            continue
        for value in candidates(setting):
            kafka = kafka_probe(kind, key, value)
            refused = ours(key, value)
            if kafka.startswith("refused") and refused is None:
                if key in DIFFERENCES:
                    lenient.add(key)
                else:
                    found.append((key, value, kafka, "taken"))
            if kafka == "ok" and refused is not None and refused.kafka:
                found.append((key, value, kafka, str(refused)))
    return found, lenient


def test_what_kafka_refuses_in_a_broker_configuration_is_refused(kafka_probe):
    """For each setting Kafka also has, each candidate value: one Kafka refuses is refused here too (except where
    DIFFERENCES says why not), and one Kafka takes is taken, or refused only as not implemented here."""

    def ours(key, value):
        try:
            BrokerConfig({key: value})
        except ConfigError as e:
            return e.problems[0]
        return None

    assert differences(kafka_probe, "broker", SETTINGS, ours) == ([], set())


def test_what_kafka_refuses_in_a_topic_config_is_refused(kafka_probe):
    from kafkaproto.broker.settings import Invalid

    def ours(name, value):
        try:
            TOPIC_CONFIGS[name].parse(value)
        except Invalid as e:
            return e
        return None

    assert differences(kafka_probe, "topic", TOPIC_CONFIGS, ours) == ([], set())


def test_rules_between_settings_agree_with_kafka(kafka_probe):
    cases = [
        {"group.consumer.session.timeout.ms": "44999"},
        {"group.consumer.session.timeout.ms": "60001"},
        {"group.consumer.min.session.timeout.ms": "50000"},
        {"group.consumer.max.session.timeout.ms": "44999"},
        {"group.consumer.heartbeat.interval.ms": "15001"},
        {"group.consumer.heartbeat.interval.ms": "4999"},
        {"group.consumer.min.heartbeat.interval.ms": "6000"},
        {"group.consumer.max.heartbeat.interval.ms": "4000"},
        {"group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "3000",
         "group.consumer.heartbeat.interval.ms": "5000"},
        {"group.consumer.assignment.interval.ms": "15001"},
        {"group.consumer.min.assignment.interval.ms": "2000"},
        {"log.retention.ms": "0"}, {"log.retention.minutes": "0"}, {"log.retention.hours": "0"},
        {"log.retention.ms": "5", "log.retention.minutes": "0"}, {"log.retention.hours": "-3"},
        {"log.roll.ms": "0"}, {"log.roll.ms": "-1"},
        {"connections.max.idle.ms": "100"}, {"connections.max.idle.ms": "101"},
        {"connections.max.idle.ms": "50", "connection.failed.authentication.delay.ms": "10"},
        {"connection.failed.authentication.delay.ms": "600000"}, {"max.connections.per.ip": "0"},
        {"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:2"},
        {"max.connections.per.ip.overrides": "127.0.0.1"}, {"max.connections.per.ip.overrides": "127.0.0.1:many"},
        {"max.connections.per.ip.overrides": "localhost:5,[::1]:3"}, {"max.connections.per.ip.overrides": "::1:3"},
        {"group.min.session.timeout.ms": "20000", "group.max.session.timeout.ms": "10000"},
    ]
    for case in cases:
        kafka = kafka_probe("broker", *[field for pair in case.items() for field in pair])
        refused = problems(case)
        assert kafka.startswith("refused") == bool(refused), (case, kafka, refused)


@pytest.mark.parametrize("key, value", [
    ("listeners", "PLAINTEXT://127.0.0.1:99999"),  # Kafka takes it, and fails when it binds
    ("listeners", "PLAINTEXT://127.0.0.1:-1"),
    ("listeners", "PLAINTEXT://127.0.0.1:0"),
    ("listeners", "PLAINTEXT://:9092"),
    ("listeners", "PLAINTEXT://[::1]:9092"),
    ("listeners", "PLAINTEXT://127.0.0.1"),
    ("listeners", "PLAINTEXT://127.0.0.1:x"),
    ("listeners", "PLAINTEXT:/127.0.0.1:9092"),
    ("listeners", ""),
    ("listeners", "PLAINTEXT://127.0.0.1:9092,"),
    ("listeners", "PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093"),
    ("listeners", "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9092"),
    ("listeners", "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.2:9092"),
    ("listeners", "PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092"),
    ("listeners", "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093"),
    ("advertised.listeners", ""),
    ("advertised.listeners", "PLAINTEXT://example.com:9092"),
    ("advertised.listeners", "SSL://example.com:9093"),
    # (Kafka's base settings have a controller listener, which needs a protocol too.)
    ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT"),
    ("listener.security.protocol.map", "PLAINTEXT:SASL_SSL,CONTROLLER:PLAINTEXT"),
    ("listener.security.protocol.map", "PLAINTEXT:TLS,CONTROLLER:PLAINTEXT"),
    ("listener.security.protocol.map", "PLAINTEXT,CONTROLLER:PLAINTEXT"),
    ("node.id", "-1"),
    ("node.id", "abc"),
    ("node.id", "0"),
    ("log.dirs", ""),
    ("log.dirs", "/tmp/a,/tmp/b"),
    ("log.dir", ""),
])
def test_listeners_and_directories_agree_with_kafka(kafka_probe, key, value):
    """Refused by Kafka, refused here; taken by Kafka, taken here or refused as what this broker does not do (a port
    out of range, which Kafka only finds out binding)."""
    kafka = kafka_probe("broker", key, value)
    try:
        BrokerConfig({key: value})
        refused = None
    except ConfigError as e:
        (refused,) = e.problems
    if kafka.startswith("refused"):
        assert refused is not None, kafka
    else:
        assert refused is None or not refused.kafka, (kafka, str(refused))


# ---- segment sizes: at least 1 MiB, as in Kafka 4, and internal.segment.bytes for smaller ones -----------------

def test_a_log_segment_bytes_under_1_mib_stops_the_broker_at_start(tmp_path):
    done = broker_command("--override", "log.segment.bytes=1048575", "--override", f"log.dirs={tmp_path / 'data'}",
                          cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2, "kafkaproto broker: --override log.segment.bytes=1048575: must be at least 1048576\n")
    assert not (tmp_path / "data").exists()
    with pytest.raises(ConfigError, match=r"^Broker\(\): log.segment.bytes=1048575: must be at least 1048576$"):
        Broker({"log.segment.bytes": "1048575"}).start()
    with Broker({"log.segment.bytes": "1048576"}) as broker:
        assert broker.port


SEGMENT_KEYS = ("segment.bytes", "internal.segment.bytes")
CT, IAC, DC = CreateTopicsRequest, IncrementalAlterConfigsRequest, DescribeConfigsRequest
# Kafka's answers while a topic just made (or a config just changed) reaches its broker.
NOT_YET = {errors.UNKNOWN_TOPIC_OR_PARTITION.code, errors.NOT_LEADER_OR_FOLLOWER.code,
           errors.LEADER_NOT_AVAILABLE.code}


class Wire:
    """CreateTopics, IncrementalAlterConfigs, DescribeConfigs and Produce to one broker (this one or Kafka, whose
    partition directories are under data_dir), answered as plain values the two are compared by."""

    def __init__(self, port, data_dir):
        self.client = RawClient(port)
        self.data_dir = Path(data_dir)

    def create(self, name, validate_only=False, **configs):
        """(error code, {segment config: (value, source)} as the answer lists them)."""
        body = CT(topics=[CT.CreatableTopic(name=name, num_partitions=1, replication_factor=1, configs=[
            CT.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])], timeout_ms=10000,
            validate_only=validate_only)
        topic = self.client.call(body, 7).body.topics[0]
        return topic.error_code, {c.name: (c.value, c.config_source) for c in topic.configs if c.name in SEGMENT_KEYS}

    def alter(self, name, key, value):
        """The error code of setting key on topic name (value None: deleting it)."""
        body = IAC(resources=[IAC.AlterConfigsResource(resource_type=2, resource_name=name, configs=[
            IAC.AlterableConfig(name=key, config_operation=0 if value is not None else 1, value=value)])],
            validate_only=False)
        return self.client.call(body, 1).body.responses[0].error_code

    def describe(self, name, keys=None, until=lambda found: True):
        """(error code, {segment config: (value, source, type, synonyms)}), asked again until until(found) holds or
        10 s have gone (a change reaches Kafka's broker a moment after the controller took it). Synonyms are shown
        for internal.segment.bytes only: this broker names the default of segment.bytes by the topic key."""
        deadline = time.monotonic() + 10
        while True:
            body = DC(resources=[DC.DescribeConfigsResource(resource_type=2, resource_name=name,
                                                            configuration_keys=keys)],
                      include_synonyms=True, include_documentation=False)
            result = self.client.call(body, 4).body.results[0]
            found = result.error_code, {
                c.name: (c.value, c.config_source, c.config_type,
                         [(y.name, y.value, y.source) for y in c.synonyms] if c.name.startswith("internal") else None)
                for c in result.configs if c.name in SEGMENT_KEYS}
            if until(found) or time.monotonic() > deadline:
                return found

    def produce(self, name, count):
        """Produce count batches of one 100-byte record each; the number of segment files the partition then has."""
        for i in range(count):
            builder = records.RecordBatchBuilder()
            builder.append(b"k", b"x" * 100, timestamp=1_700_000_000_000 + i)
            body = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
                ProduceRequest.TopicProduceData(name=name, partition_data=[
                    ProduceRequest.PartitionProduceData(index=0, records=builder.build())])])
            deadline = time.monotonic() + 30
            while True:
                error = self.client.call(body, 9).body.responses[0].partition_responses[0].error_code
                if error not in NOT_YET or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert error == 0, (name, i, error)
        return len(list((self.data_dir / f"{name}-0").glob("*.log")))

    def close(self):
        self.client.close()


def segment_answers(wire):
    """What a broker answers about segment sizes, as the tests below expect it (Kafka 4.3.1 answered the same)."""
    run = uuid.uuid4().hex[:8]  # Kafka's broker lives for the whole test run: names of this run's own
    small = {}
    for value in ("1", "14", "1048575"):
        small[value] = (wire.create(f"small-{value}-{run}", validate_only=True, **{"segment.bytes": value}),
                        wire.create(f"small-{value}-{run}", **{"segment.bytes": value}),
                        wire.describe(f"small-{value}-{run}")[0])
    plain = f"plain-{run}"
    created = wire.create(plain)
    alters = {value: wire.alter(plain, "segment.bytes", value) for value in ("1", "14", "1048575", "1048576")}
    return small, created, alters, wire.describe(plain, until=lambda found: "1048576" in str(found))


EXPECTED_SEGMENT_ANSWERS = (
    {value: ((errors.INVALID_CONFIG.code, {}), (errors.INVALID_CONFIG.code, {}),
             errors.UNKNOWN_TOPIC_OR_PARTITION.code) for value in ("1", "14", "1048575")},
    (0, {"segment.bytes": ("1073741824", 5)}),
    {"1": errors.INVALID_CONFIG.code, "14": errors.INVALID_CONFIG.code, "1048575": errors.INVALID_CONFIG.code,
     "1048576": 0},
    (0, {"segment.bytes": ("1048576", 1, 3, None)}),
)


def internal_segment_answers(wire):
    """What a broker answers about internal.segment.bytes, and how its segments roll."""
    run = uuid.uuid4().hex[:8]
    tiny, both, plain = f"tiny-{run}", f"both-{run}", f"plain-{run}"
    checked = {value: wire.create(f"check-{run}", validate_only=True, **{"internal.segment.bytes": value})[0]
               for value in ("-5", "0", " 200 ", "abc", "", "2147483648")}
    made = [wire.create(tiny, **{"internal.segment.bytes": "200"}),
            wire.create(both, **{"internal.segment.bytes": "400", "segment.bytes": "1048576"}),
            wire.create(plain)]
    described = [wire.describe(tiny), wire.describe(both), wire.describe(plain),
                 wire.describe(plain, keys=["internal.segment.bytes"])]
    # A 100-byte record's batch is 169 bytes: alone in each 200-byte segment, two to each 400-byte one.
    segments = [wire.produce(tiny, 4), wire.produce(both, 4)]
    altered = [wire.alter(plain, "internal.segment.bytes", "250"),
               wire.describe(plain, until=lambda found: "internal.segment.bytes" in found[1]),
               wire.alter(plain, "internal.segment.bytes", "abc"),
               wire.alter(plain, "internal.segment.bytes", None),
               wire.describe(plain, until=lambda found: "internal.segment.bytes" not in found[1])]
    return checked, made, described, segments, altered


DEFAULT_SEGMENT = ("1073741824", 5, 3, None)
EXPECTED_INTERNAL_ANSWERS = (
    {"-5": 0, "0": 0, " 200 ": 0, "abc": errors.INVALID_CONFIG.code, "": errors.INVALID_CONFIG.code,
     "2147483648": errors.INVALID_CONFIG.code},
    [(0, {"internal.segment.bytes": ("200", 1), "segment.bytes": ("1073741824", 5)}),
     (0, {"internal.segment.bytes": ("400", 1), "segment.bytes": ("1048576", 1)}),
     (0, {"segment.bytes": ("1073741824", 5)})],
    [(0, {"internal.segment.bytes": ("200", 1, 3, [("internal.segment.bytes", "200", 1)]),
          "segment.bytes": DEFAULT_SEGMENT}),
     (0, {"internal.segment.bytes": ("400", 1, 3, [("internal.segment.bytes", "400", 1)]),
          "segment.bytes": ("1048576", 1, 3, None)}),
     (0, {"segment.bytes": DEFAULT_SEGMENT}),
     (0, {})],  # asked for by name where it is not set: not listed
    [4, 2],
    [0, (0, {"internal.segment.bytes": ("250", 1, 3, [("internal.segment.bytes", "250", 1)]),
             "segment.bytes": DEFAULT_SEGMENT}),
     errors.INVALID_CONFIG.code, 0, (0, {"segment.bytes": DEFAULT_SEGMENT})],
)


def test_segment_bytes_under_1_mib_is_refused_by_create_topics_and_incremental_alter_configs(tmp_path):
    with Broker(log_dir=tmp_path) as broker:
        wire = Wire(broker.port, tmp_path)
        try:
            assert segment_answers(wire) == EXPECTED_SEGMENT_ANSWERS
        finally:
            wire.close()


def test_internal_segment_bytes_is_taken_listed_and_rolls_segments(tmp_path):
    with Broker(log_dir=tmp_path) as broker:
        wire = Wire(broker.port, tmp_path)
        try:
            assert internal_segment_answers(wire) == EXPECTED_INTERNAL_ANSWERS
            # A topic's change reaches its open logs: 250-byte segments, then the 1 GiB default again.
            assert wire.create("later")[0] == 0 and wire.produce("later", 1) == 1
            assert wire.alter("later", "internal.segment.bytes", "250") == 0
            assert wire.produce("later", 3) == 4
            assert wire.alter("later", "internal.segment.bytes", None) == 0
            assert wire.produce("later", 3) == 4  # 1 GiB again: all three join the last segment
        finally:
            wire.close()


@pytest.mark.xdist_group("kafka-broker")  # with the other tests of the live Kafka, which then starts once
def test_kafka_answers_the_same_about_segment_sizes(kafka_brokers):
    kafka = kafka_brokers(KAFKA)
    wire = Wire(kafka.port, kafka.workdir / "data")
    try:
        assert segment_answers(wire) == EXPECTED_SEGMENT_ANSWERS
        assert internal_segment_answers(wire) == EXPECTED_INTERNAL_ANSWERS
    finally:
        wire.close()


# ---- the event loop -------------------------------------------------------------------------------------------

def test_the_event_loop_is_chosen_by_a_setting(tmp_path):
    from kafkaproto.broker.embedded import _event_loop_policy
    assert _event_loop_policy("asyncio") is None  # asyncio's own, whatever is installed
    done = broker_command("--override", "kafkaproto.event.loop=gevent", cwd=tmp_path)
    assert done.returncode == 2 and "kafkaproto.event.loop=gevent" in done.stderr and "uvloop" in done.stderr
    try:
        import uvloop  # noqa: F401
    except ImportError:
        done = broker_command("--override", "kafkaproto.event.loop=uvloop", "--override",
                              f"log.dirs={tmp_path / 'data'}", cwd=tmp_path)
        assert (done.returncode, done.stderr.splitlines()[-1]) == (
            2, "kafkaproto broker: kafkaproto.event.loop=uvloop: uvloop is not installed (pip install "
               "'kafkaproto[uvloop]')")
    else:
        assert type(_event_loop_policy("uvloop")).__module__.startswith("uvloop")


def test_the_broker_command_keeps_freed_memory(tmp_path, monkeypatch):
    # A producer's request of large batches is received into a buffer of its own, freed once appended: the broker
    # asks the allocator to keep such blocks (kafkaproto.allocator), before it serves.
    from kafkaproto.broker import embedded

    asked = []
    monkeypatch.setattr(embedded, "keep_freed_memory", lambda: asked.append("kept"))
    monkeypatch.setattr(embedded.asyncio, "run", lambda serving: (asked.append("served"), serving.close()))
    parser = embedded.argparse.ArgumentParser()
    embedded.add_arguments(parser)
    assert embedded.run(parser.parse_args(["--override", f"log.dirs={tmp_path / 'data'}"])) == 0
    assert asked == ["kept", "served"]
