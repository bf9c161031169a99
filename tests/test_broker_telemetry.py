"""Client metrics (KIP-714) in the broker, without Kafka beside it: client-metrics subscriptions (ConfigResource
type 16) checked, described, listed and kept across a restart; GetTelemetrySubscriptions and PushTelemetry
through their handlers, every refusal; the metrics pushed, kept only where kafkaproto.client.telemetry.enable
says so and within bounds; the match patterns' Java syntax against java.util.regex itself; and Kafka's Java
producer pushing its metrics to this broker. tests/test_broker_differential_telemetry.py compares the same
requests' answers with Kafka 4.3.1's."""

import subprocess
import uuid

import kafka_jvm
import pytest
from test_broker_handlers import make_state

from kafkaproto import decode_request, encode_request, errors, records
from kafkaproto.broker import Broker
from kafkaproto.broker.dispatch import Context, advertised, dispatch, handler_for, load_handlers
from kafkaproto.broker.java_regex import JavaRegexError, compile_java
from kafkaproto.broker.state import telemetry as telemetry_state
from kafkaproto.messages import (ApiKey, DescribeConfigsRequest, GetTelemetrySubscriptionsRequest,
                                 IncrementalAlterConfigsRequest, ListConfigResourcesRequest, PushTelemetryRequest,
                                 RequestHeader)
from kafkaproto.uuid import Uuid

pytestmark = pytest.mark.above_the_codecs

load_handlers()
CLIENT_METRICS = 16
SET, DELETE = 0, 1


class Connection:
    """What a handler reads of a client's connection (security.Session): who, from where, which software."""

    def __init__(self, port=40000, software=("kafkaproto-tests", "1.0")):
        self.principal = "User:ANONYMOUS"
        self.peer = f"127.0.0.1:{port}"
        self.client_software = software


VERSIONS = {ApiKey.DESCRIBE_CONFIGS: 4, ApiKey.INCREMENTAL_ALTER_CONFIGS: 1, ApiKey.LIST_CONFIG_RESOURCES: 1,
            ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: 0, ApiKey.PUSH_TELEMETRY: 0}


def call(state, body, version=None, client_id="telemetry-tests", connection=None):
    """The response a client would read (through the codecs), from a connection (None: one not known)."""
    version = VERSIONS[body.api_key] if version is None else version
    header = RequestHeader(request_api_key=body.api_key, request_api_version=version, correlation_id=3,
                           client_id=client_id)
    request = decode_request(encode_request(header, body, version)[4:])
    ctx = Context(state, request.header, session=connection, client_host="/127.0.0.1" if connection else "")
    response = dispatch(ctx, request.body)
    return type(response).decode(response.encode(version), version)


def alter(state, name, configs, operation=SET, validate_only=False):
    """(error code, message) of setting (or deleting) a subscription's configs."""
    body = IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[
        IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=CLIENT_METRICS, resource_name=name, configs=[
            IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=operation, value=v)
            for k, v in configs.items()])])
    answer = call(state, body).responses[0]
    return answer.error_code, answer.error_message


def described(state, name):
    body = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=CLIENT_METRICS, resource_name=name, configuration_keys=None)], include_synonyms=True)
    result = call(state, body).results[0]
    return result.error_code, {c.name: (c.value, c.config_source, c.config_type) for c in result.configs}


def listed(state, version=1):
    types = [CLIENT_METRICS] if version else []
    return [r.resource_name for r in call(state, ListConfigResourcesRequest(resource_types=types),
                                          version).config_resources]


def get(state, instance=Uuid.ZERO, **where):
    return call(state, GetTelemetrySubscriptionsRequest(client_instance_id=instance), **where)


def push(state, instance, subscription, metrics=b"", compression=0, terminating=False, **where):
    body = PushTelemetryRequest(client_instance_id=instance, subscription_id=subscription, terminating=terminating,
                                compression_type=compression, metrics=metrics)
    return call(state, body, **where).error_code


def test_subscriptions_checked_described_listed_and_kept(tmp_path):
    state = make_state(tmp_path)
    assert alter(state, "s", {"metrics": "org.apache.kafka.producer., b ,b", "interval.ms": " 1000 ",
                              "match": "client_id=app-.*"}) == (0, None)
    assert described(state, "s") == (0, {"interval.ms": ("1000", 7, 3), "match": ("client_id=app-.*", 7, 7),
                                         "metrics": ("org.apache.kafka.producer.,b", 7, 7)})
    assert described(state, "never-set") == (0, {"interval.ms": ("300000", 5, 3), "match": ("", 5, 7),
                                                 "metrics": ("", 5, 7)})
    assert described(state, "")[0] == errors.INVALID_REQUEST.code
    refused = {
        "interval.ms=99": ({"interval.ms": "99"}, errors.INVALID_REQUEST,
                           "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
        "interval.ms=abc": ({"interval.ms": "abc"}, errors.INVALID_CONFIG,
                            "Invalid value abc for configuration interval.ms: Not a number of type INT"),
        "an unknown key": ({"bogus": "1"}, errors.INVALID_REQUEST, "Unknown client metrics configuration: bogus"),
        "a bad pattern": ({"match": "client_id=["}, errors.INVALID_CONFIG,
                          "Illegal client matching pattern: client_id=["),
        "an unknown selector": ({"match": "host=x"}, errors.INVALID_CONFIG, "Illegal client matching pattern: host=x"),
        "two '='": ({"match": "client_id=a=b"}, errors.INVALID_CONFIG,
                    "Illegal client matching pattern: client_id=a=b"),
        "an empty item": ({"metrics": "a,,b"}, errors.INVALID_CONFIG,
                          "Configuration 'metrics' values must not be empty."),
    }
    for what, (configs, error, message) in refused.items():
        assert alter(state, "s", configs) == (error.code, message), what
    assert alter(state, "", {"metrics": "x"}) == (errors.INVALID_REQUEST.code, "Subscription name can't be empty")
    assert alter(state, "s", {"metrics": None}) == (errors.INVALID_REQUEST.code,
                                                    "Null value not supported for : metrics")
    assert alter(state, "s", {"metrics": "x"}, operation=2) == (
        errors.INVALID_CONFIG.code, "Can't APPEND to key metrics because its type is not LIST.")
    assert alter(state, "v", {"metrics": "x"}, validate_only=True) == (0, None)
    assert alter(state, "t", {"metrics": "*"}) == (0, None)
    assert listed(state) == listed(state, version=0) == ["s", "t"]
    state.close()

    state = make_state(tmp_path)  # kept in the metadata log
    assert listed(state) == ["s", "t"]
    assert described(state, "s")[1]["interval.ms"] == ("1000", 7, 3)
    assert alter(state, "s", {"metrics": None, "interval.ms": None, "match": None}, operation=DELETE) == (0, None)
    assert listed(state) == ["t"] and described(state, "s")[1]["metrics"] == ("", 5, 7)
    state.close()
    state = make_state(tmp_path)
    assert listed(state) == ["t"]
    state.close()


def test_telemetry_is_served_and_listed_only_when_enabled(tmp_path):
    """Kafka answers both requests, and lists them in ApiVersions only with a telemetry receiver configured."""
    for enabled in (False, True):
        state = make_state(tmp_path / str(enabled), **{"kafkaproto.client.telemetry.enable": str(enabled).lower()})
        keys = {key for key, _, _ in advertised(state)}
        assert {ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY} <= keys if enabled else not keys & {
            ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY}
        assert handler_for(state, ApiKey.PUSH_TELEMETRY, 0) is not None
        assert get(state).error_code == 0
        state.close()


def test_subscriptions_matched_and_their_union_given(tmp_path):
    state = make_state(tmp_path)
    assert alter(state, "a", {"metrics": "m.a,m.b", "interval.ms": "60000", "match": "client_id=app-1"})[0] == 0
    assert alter(state, "b", {"metrics": "m.b,m.c", "interval.ms": "40000",
                              "match": "client_software_name=kafkaproto-.*,client_source_port=4\\d+"})[0] == 0
    assert alter(state, "c", {"metrics": "m.z", "interval.ms": "100", "match": "client_id=app-2"})[0] == 0
    here = Connection()
    one = get(state, client_id="app-1", connection=here)
    assert one.error_code == 0 and sorted(one.requested_metrics) == ["m.a", "m.b", "m.c"]
    assert one.push_interval_ms == 40000 and one.accepted_compression_types == [4, 3, 1, 2]
    assert one.telemetry_max_bytes == 1048576 and one.delta_temporality
    elsewhere = get(state, client_id="app-1", connection=Connection(port=5000))  # port no longer matches b
    assert sorted(elsewhere.requested_metrics) == ["m.a", "m.b"] and elsewhere.push_interval_ms == 60000
    nobody = get(state, client_id="other")  # no connection: no software name or port known
    assert nobody.requested_metrics == [] and nobody.push_interval_ms == 300000
    # the instance's own id may be matched; "*" wins over every other metric
    mine = Uuid.random()
    assert alter(state, "d", {"metrics": "*", "match": f"client_instance_id={mine}"})[0] == 0
    first = get(state, mine, client_id="app-1", connection=here)
    assert first.requested_metrics == ["*"] and first.client_instance_id == mine
    # asked again within its interval: refused; after its subscriptions changed: told the new one at once
    again = get(state, mine, client_id="app-1", connection=here)
    assert again.error_code == errors.THROTTLING_QUOTA_EXCEEDED.code and again.client_instance_id == Uuid.ZERO
    assert alter(state, "d", {"metrics": "m.d"})[0] == 0
    changed = get(state, mine, client_id="app-1", connection=here)
    assert changed.error_code == 0 and "m.d" in changed.requested_metrics
    assert changed.subscription_id != first.subscription_id
    state.close()


def test_push_refusals_in_kafkas_order(tmp_path):
    state = make_state(tmp_path, **{"telemetry.max.bytes": "1000"})
    assert alter(state, "all", {"metrics": "*", "interval.ms": "60000"})[0] == 0

    def fresh():
        answer = get(state, Uuid.random())
        assert answer.error_code == 0
        return answer.client_instance_id, answer.subscription_id

    assert push(state, Uuid.ZERO, 0) == errors.INVALID_REQUEST.code
    assert push(state, Uuid.ONE, 0) == errors.INVALID_REQUEST.code
    instance, subscription = fresh()
    assert push(state, instance, subscription, b"x") == 0  # right after asking
    assert push(state, instance, subscription, b"x") == errors.THROTTLING_QUOTA_EXCEEDED.code
    assert push(state, instance, subscription + 1, b"x", terminating=True) == errors.UNKNOWN_SUBSCRIPTION_ID.code
    assert push(state, instance, subscription, terminating=True) == errors.INVALID_REQUEST.code  # after terminating
    instance, subscription = fresh()
    assert push(state, instance, subscription, b"x", compression=9) == errors.UNSUPPORTED_COMPRESSION_TYPE.code
    assert get(state, instance).error_code == 0  # allowed at once, to learn what it may use
    instance, subscription = fresh()
    assert push(state, instance, subscription, b"x" * 1001) == errors.TELEMETRY_TOO_LARGE.code
    instance, subscription = fresh()
    assert push(state, instance, subscription, b"\x28\xb5\x2f\xfd rubbish", compression=4) == \
        errors.INVALID_RECORD.code
    instance, subscription = fresh()
    big = records.compress("zstd", b"a" * 1001)
    assert len(big) < 1000 and push(state, instance, subscription, big, compression=4) == errors.INVALID_RECORD.code
    unknown = Uuid.random()  # never asked: its subscription id cannot be known
    assert push(state, unknown, 0, b"x") == errors.UNKNOWN_SUBSCRIPTION_ID.code
    assert get(state, unknown).error_code == 0  # told at once after that refusal
    assert state.telemetry.pushed() == []  # kafkaproto.client.telemetry.enable is off: nothing kept
    state.close()


def test_pushed_metrics_kept_decompressed_and_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(telemetry_state, "PUSHES_KEPT", 3)
    monkeypatch.setattr(telemetry_state, "CLIENTS_KEPT", 2)
    state = make_state(tmp_path, **{"kafkaproto.client.telemetry.enable": "true"})
    assert alter(state, "all", {"metrics": "*", "interval.ms": "100"})[0] == 0
    instances = []
    for client in range(3):
        answer = get(state, client_id=f"c{client}")
        instances.append((answer.client_instance_id, answer.subscription_id))
    for n, codec in enumerate((0, 1, 2, 3, 4)):
        instance, subscription = instances[0]
        state.telemetry.instances[instance].last_push_ms = 0  # as if an interval had passed
        payload = f"metrics {n}".encode()
        data = payload if codec == 0 else records.compress(codec, payload)
        assert push(state, instance, subscription, data, compression=codec, client_id="c0") == 0
    kept = state.telemetry.pushed(instances[0][0])
    assert [p.data for p in kept] == [b"metrics 2", b"metrics 3", b"metrics 4"]  # the last three, decompressed
    assert [p.compression_type for p in kept] == [2, 3, 4] and {p.client_id for p in kept} == {"c0"}
    for instance, subscription in instances[1:]:
        assert push(state, instance, subscription, b"late") == 0
    assert state.telemetry.pushed(instances[0][0]) == []  # the client that pushed least recently went
    assert [p.data for p in state.telemetry.pushed()] == [b"late", b"late"]
    state.close()


def test_instances_go_with_their_connection_and_in_time(tmp_path):
    state = make_state(tmp_path)
    here = Connection()
    answer = get(state, connection=here)
    instance = answer.client_instance_id
    assert instance in state.telemetry.instances
    state.connection_closed(here)
    assert instance not in state.telemetry.instances
    get(state, instance)
    assert state.telemetry.expire(state.now_ms() + telemetry_state.EXPIRY_MS - 1000) == 0
    assert state.telemetry.expire(state.now_ms() + 3 * 300000 + 1000) == 1  # three intervals of five minutes
    assert not state.telemetry.instances
    state.close()


# Patterns and inputs for java.util.regex and java_regex.py side by side: what Java refuses (and why), and what
# the patterns it takes match.
REGEX_PATTERNS = [
    "producer-.*", "producer-\\d+", "(?i)ABC", "a(?i)bc", "(a(?i)b)c", "abc|def", "[a-c]+", "[^a-c]+", "\\w+",
    "\\s*x", "\\QA.B\\E", "(?<n>ab)\\k<n>", "(a)\\1", "[a-z&&[^x]]+", "[a[0-9]]+", "\\p{L}+", "\\p{Lu}\\p{Ll}*",
    "\\p{Alpha}+", "[\\w-]+", "x{2,3}", "{1}a", "^*a", "[\\d-z]+", "3\\.7\\..*", "\\x41", "\\u00e9", "a\\z",
    "[^\\d]", "\\p{IsAlphabetic}+", "\\p{javaLowerCase}+", "a{", "{", "a{,2}", "x{a}", "(?P<n>a)", "(?#c)",
    "a**", "a{2}*", "\\E", "[b-a]", "[a-", "[]", "\\x4", "\\0", "\\c", "(?z)a", "(?<1a>x)", "(?<a>x)(?<a>y)",
    "\\k<zz>", "a)b", "((a)", "\\p{Nope}", "x{2147483648}", "[", "client_id=", "(?x)a b # c", "(?x)[a b]+",
    "(?x: a b )c d", "(?i)\\Qab\\E|x",
]
REGEX_INPUTS = ["producer-1", "producer-", "abc", "ABC", "aBC", "Ab", "def", "abab", "xyz", "xx", "A.B", "AxB",
                "Émile", "a-b", "a", "3.7.0", "é", "1a", "", "aa", "b1", "ab", "abc d", "a b"]


def test_match_patterns_read_as_java_reads_them():
    try:
        classes = kafka_jvm.compiled("4.3.1", "JavaRegex")
        java = kafka_jvm._tool("java")
    except kafka_jvm.KafkaUnavailable as e:
        kafka_jvm.unavailable(str(e))
    lines = [f"{p}\t{i}" for p in REGEX_PATTERNS for i in REGEX_INPUTS]
    run = subprocess.run([java, "-cp", str(classes), "JavaRegex"], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, timeout=120, encoding="utf-8")
    assert run.returncode == 0, run.stderr
    found = []
    for line, java_says in zip(lines, run.stdout.splitlines(), strict=True):
        pattern, text = line.split("\t", 1)
        try:
            ours = str(bool(compile_java(pattern).fullmatch(text))).lower()
        except JavaRegexError as e:
            ours = f"ERR\t{e}"
        if ours != java_says:
            found.append(f"{pattern!r} on {text!r}: Java {java_says!r}, here {ours!r}")
    assert not found, "\n".join(found)
    assert sum(line.startswith("ERR") for line in run.stdout.splitlines()) >= 20 * len(REGEX_INPUTS)


def protobuf_fields(data):
    """(field number, value) of a protobuf message's fields: bytes for length-delimited ones, else ints."""
    pos = 0

    def varint():
        nonlocal pos
        shift = value = 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while pos < len(data):
        key = varint()
        number, kind = key >> 3, key & 7
        if kind == 0:
            yield number, varint()
        elif kind == 2:
            size = varint()
            yield number, data[pos:pos + size]
            pos += size
        elif kind in (1, 5):
            size = 8 if kind == 1 else 4
            yield number, int.from_bytes(data[pos:pos + size], "little")
            pos += size
        else:
            raise ValueError(f"wire type {kind} at {pos}")


def otlp_metrics(data):
    """(resource attributes {key: text}, metric names) of an OpenTelemetry MetricsData message."""
    attributes, names = {}, []
    for number, resource_metrics in protobuf_fields(data):
        assert number == 1  # MetricsData.resource_metrics
        for part, value in protobuf_fields(resource_metrics):
            if part == 1:  # ResourceMetrics.resource
                for kv_number, kv in protobuf_fields(value):
                    if kv_number == 1:  # Resource.attributes
                        fields = dict(protobuf_fields(kv))
                        text = dict(protobuf_fields(fields.get(2, b""))).get(1, b"")
                        attributes[fields[1].decode()] = text.decode() if isinstance(text, bytes) else text
            elif part == 2:  # ResourceMetrics.scope_metrics
                names += [dict(protobuf_fields(metric))[1].decode()
                          for scope_part, metric in protobuf_fields(value) if scope_part == 2]
    return attributes, names


def test_a_java_producer_pushes_its_metrics(tmp_path):
    """Kafka 4.3.1's producer, with its default enable.metrics.push, against this broker listing the telemetry
    APIs: a subscription that matches it by client id and software makes it push the producer metrics asked for,
    at the interval asked; they arrive here, and decode."""
    try:
        classpath = kafka_jvm.classpath("4.3.1", kafka_jvm.compiled("4.3.1", "Clients"))
        java = kafka_jvm._tool("java")
    except kafka_jvm.KafkaUnavailable as e:
        kafka_jvm.unavailable(str(e))
    topic = f"telemetry-{uuid.uuid4().hex[:8]}"
    with Broker({"kafkaproto.client.telemetry.enable": "true"}) as broker:
        from test_kafka_broker import RawClient
        client = RawClient(broker.port)
        body = IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=CLIENT_METRICS, resource_name="java-producer", configs=[
                IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=SET, value=v) for k, v in {
                    "metrics": "org.apache.kafka.producer.", "interval.ms": "200",
                    "match": "client_id=java-produce,client_software_name=apache-kafka-java,"
                             "client_software_version=4\\.3\\..*"}.items()])])
        assert client.call(body, 1).body.responses[0].error_code == 0
        client.close()
        for mode in ("admin", "produce"):
            run = subprocess.run([java, "-Dproduce.stay.ms=1500", "-cp", classpath, "Clients",
                                  broker.bootstrap_servers, mode, topic], capture_output=True, text=True, timeout=120)
            assert run.returncode == 0, run.stderr[-3000:]
        pushed = broker.pushed_telemetry()
    assert broker.pushed_telemetry() == pushed  # still there once the broker stopped
    assert pushed, "the producer pushed no metrics"
    assert {p.client_id for p in pushed} == {"java-produce"} and {p.content_type for p in pushed} == {"OTLP"}
    assert len(pushed) >= 2  # at its interval, over the 1.5 s it stays open
    names = set()
    for p in pushed:
        attributes, found = otlp_metrics(p.data)
        names.update(found)
    assert names and all(name.startswith("org.apache.kafka.producer.") for name in names), sorted(names)
    assert any("record.send" in name for name in names), sorted(names)
