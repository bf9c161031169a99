"""A broker's configs, against Apache Kafka 4.3.1 (the harness is tests/test_broker_differential.py's): every key
DescribeConfigs lists for a broker, with its value, source, type, sensitivity, read-only flag and synonyms; the
keys Kafka changes while running, changed for one broker and for every broker, kept and described as Kafka does;
and the listeners and per-address connection limits changed while running, taken or refused as Kafka takes them,
a listener opened and closed on both brokers (test_broker_live_listeners.py tests the rest on this broker alone).
"""

import time

import pytest

from kafkaproto.broker import Broker
from kafkaproto.broker.config import OWN_SETTINGS
from kafkaproto.messages import ApiVersionsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest

import kafka_jvm
from test_broker_bounds import closed_by_broker
from test_broker_differential import Side, broker_like_kafka, node_id, sides  # noqa: F401 - fixtures
from test_kafka_broker import RawClient

pytestmark = [pytest.mark.xdist_group("kafka-broker"), pytest.mark.above_the_codecs]

BROKER = 4
# Where the test's two brokers are given different settings (Kafka runs in KRaft mode with a controller listener
# and its internal topics' replication set to 1; this broker needs none of that), their values and sources differ.
GIVEN_DIFFERENTLY = {key for key in kafka_jvm.TEST_SERVER_PROPERTIES.split("\n") for key in [key.partition("=")[0]]
                     if key and kafka_jvm.LIKE_KAFKA.get(key) is None} | {
    "listeners", "listener.security.protocol.map", "log.dirs", "broker.id", "min.insync.replicas"}
# min.insync.replicas: Kafka 4 sets it cluster-wide itself once eligible leader replicas are on (KIP-966).

# Where this broker differs from Kafka on purpose: {key: (the fields that differ, why)}.
ON_PURPOSE = {
    "log.dir": ({"value", "synonyms"}, "its data directory defaults to ./kafkaproto-data"),
    "socket.send.buffer.bytes": ({"value", "synonyms"}, "left to the system (-1), which sends large fetches faster"),
    "ssl.keystore.type": ({"value", "synonyms"}, "PEM is the only key store it reads"),
    "ssl.truststore.type": ({"value", "synonyms"}, "PEM is the only trust store it reads"),
    "sasl.enabled.mechanisms": ({"synonyms"}, "its default is the mechanisms it has, not GSSAPI"),
    "offsets.topic.num.partitions": ({"value", "synonyms"}, "__consumer_offsets is one log here: one partition"),
    "transaction.state.log.num.partitions": ({"value", "synonyms"},
                                             "__transaction_state is one log here: one partition"),
    "share.coordinator.state.topic.num.partitions": ({"value", "synonyms"},
                                                     "__share_group_state is one log here: one partition"),
}


def describe(side, name, keys=None, version=4):
    body = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=BROKER, resource_name=name, configuration_keys=keys)], include_synonyms=True)
    result = side.client.call(body, version).body.results[0]
    assert result.error_code == 0, (name, result.error_code, result.error_message)
    return {c.name: {k: v for k, v in c.to_dict().items() if k != "documentation"} for c in result.configs}


def alter(side, name, key, value, operation=0):
    body = IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=BROKER, resource_name=name, configs=[IncrementalAlterConfigsRequest.AlterableConfig(
            name=key, config_operation=operation, value=value)])])
    return side.client.call(body, 1).body.responses[0].error_code


@pytest.fixture
def four(sides, kafka_broker):  # noqa: F811 - the imported fixture
    if kafka_broker.version.startswith("3."):
        pytest.skip("the broker describes Kafka 4.3.1's broker configs")
    return sides


def test_every_broker_config_described(four):
    """Every key of Kafka's list is in this broker's, and agrees field by field (value, source, type, read-only,
    sensitive, synonyms) but where the test gives the brokers different settings or this broker differs on purpose
    (ON_PURPOSE, each with its reason)."""
    kafka, ours = (describe(side, node_id(side)) for side in four)
    assert len(kafka) >= 340
    assert set(ours) - set(kafka) == set(OWN_SETTINGS), "this broker lists keys Kafka does not, or misses some"
    wrong = []
    for name in sorted(set(kafka) - GIVEN_DIFFERENTLY):
        allowed = ON_PURPOSE.get(name, (set(), ""))[0]
        for field in kafka[name]:
            if field not in allowed and kafka[name][field] != ours[name][field]:
                wrong.append(f"{name}.{field}: Kafka {kafka[name][field]!r}, this broker {ours[name][field]!r}")
    assert not wrong, "\n".join(wrong)
    stale = [name for name, (fields, _) in ON_PURPOSE.items()
             if all(kafka[name][f] == ours[name][f] for f in fields)]
    assert not stale, f"no longer differ, so no longer need excusing: {stale}"


def test_broker_configs_changed_while_running(four):
    """Keys Kafka changes live, set for one broker and for every broker ("") and a key neither knows, are taken,
    kept and described alike (by source, with synonyms); keys Kafka reads only at start, per-broker keys set for
    every broker, and values out of range are refused alike."""
    changes = [("", "num.io.threads", "4"), (None, "num.io.threads", "6"), (None, "no.such.key", "1"),
               ("", "log.retention.bytes", "1000"), (None, "sasl.kerberos.service.name", "kafka"),
               (None, "log.cleaner.backoff.ms", "20000")]
    refused = [("", "ssl.client.auth", "required"), (None, "num.partitions", "2"), (None, "num.io.threads", "0"),
               (None, "log.cleaner.min.cleanable.ratio", "2"), (None, "ssl.client.auth", "bogus"),
               ("", "log.retention.hours", "5"), (None, "log.retention.bytes", "x")]
    nodes = [node_id(side) for side in four]
    keys = sorted({key for _, key, _ in changes})
    try:
        for name, key, value in changes + refused:
            codes = [alter(side, node if name is None else name, key, value) for side, node in zip(four, nodes)]
            assert codes[0] == codes[1], f"{key}={value} for {name!r}: Kafka {codes[0]}, this broker {codes[1]}"
            assert codes[0] == (0 if (name, key, value) in changes else 42)
        deadline = time.monotonic() + 30
        while True:  # Kafka's broker takes its controller's changes a moment later
            found = [(describe(side, ""), describe(side, node, keys)) for side, node in zip(four, nodes)]
            found[0][0].pop("min.insync.replicas", None)  # set by Kafka itself (KIP-966)
            if found[0] == found[1] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        for which, kafka, ours in (("every broker's", found[0][0], found[1][0]),
                                   ("this broker's", found[0][1], found[1][1])):
            assert kafka == ours, f"{which} configs differ:\nKafka {kafka}\nthis broker {ours}"
        assert found[1][1]["num.io.threads"]["synonyms"] == [
            {"name": "num.io.threads", "value": value, "source": source}
            for value, source in (("6", 2), ("4", 3), ("8", 5))]  # this broker's, every broker's, the default
    finally:
        for name, key, _ in changes:
            for side, node in zip(four, nodes):
                alter(side, node if name is None else name, key, None, operation=1)


def test_listeners_and_overrides_changed_while_running(four):
    """max.connections.per.ip.overrides, the listeners and their protocol map, changed while running on Kafka and
    on this broker (one of its own, set up as the test Kafka is, advertised.listeners included): the same changes
    taken and refused alike (a host count that is not a number, a listener's key store without its prefix,
    advertised.listeners, a listener's own key for every broker, a listener without a protocol, removing an
    advertised listener, changing a listener's protocol), described alike afterwards; the listener added serves
    on both, and once removed, its connection is closed and new ones refused on both."""
    kafka = four[0]
    extra = [kafka_jvm.free_port() for _ in four]
    like_kafka = {**kafka_jvm.LIKE_KAFKA, "advertised.listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"}
    with Broker(like_kafka) as broker:
        ours = Side(broker.port)
        sides = (kafka, ours)
        nodes = [node_id(side) for side in sides]
        base = [f"PLAINTEXT://127.0.0.1:{kafka.port},SASL_PLAINTEXT://127.0.0.1:{kafka.sasl_port},"
                f"CONTROLLER://127.0.0.1:{kafka_broker_controller_port(kafka)}",
                "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"]
        protocols = ["PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
                     "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"]

        def each(name, configs, expected):
            """configs(i) for side i (Kafka 0, this broker 1), altered on both: the same error code, expected."""
            codes = [alter_all(side, node if name is None else name, configs(i))
                     for i, (side, node) in enumerate(zip(sides, nodes))]
            assert codes[0] == codes[1] == expected, f"{configs(1)} for {name!r}: Kafka {codes[0]}, this broker " \
                                                      f"{codes[1]} (expected {expected})"

        def with_extra(i, protocol="PLAINTEXT"):
            return {"listeners": f"{base[i]},EXTRA://127.0.0.1:{extra[i]}",
                    "listener.security.protocol.map": f"{protocols[i]},EXTRA:{protocol}"}

        try:
            # (Kafka checks the value in effect: one for every broker that is not a number would pass while this
            # broker has a value of its own, so the wrong values go first)
            each("", lambda i: {"max.connections.per.ip.overrides": "127.0.0.1:many"}, 42)
            each(None, lambda i: {"max.connections.per.ip.overrides": "127.0.0.1:1,localhost"}, 42)
            each("", lambda i: {"max.connections.per.ip.overrides": "127.0.0.1:50"}, 0)
            each(None, lambda i: {"max.connections.per.ip.overrides": "127.0.0.1:60,localhost:70"}, 0)
            each(None, lambda i: {"ssl.keystore.location": "/nowhere/keystore.pem"}, 42)
            each(None, lambda i: {"advertised.listeners": "PLAINTEXT://127.0.0.1:1"}, 42)  # read-only in Kafka 4
            each("", lambda i: {"listener.name.extra.ssl.client.auth": "required"}, 42)
            each(None, lambda i: {"listener.name.extra.ssl.client.auth": "sometimes"}, 42)
            each(None, lambda i: {"listeners": with_extra(i)["listeners"]}, 42)  # EXTRA has no protocol
            each(None, with_extra, 0)
            for port in extra:
                assert eventually_true(lambda port=port: serves(port), 30), f"nothing serves on {port}"
            listening = [RawClient(port) for port in extra]
            each(None, lambda i: {"listeners": f"{base[i].split(',', 1)[1]},EXTRA://127.0.0.1:{extra[i]}"}, 42)
            each(None, lambda i: with_extra(i, "SSL"), 42)
            keys = ["listeners", "listener.security.protocol.map", "max.connections.per.ip.overrides"]
            found = [(describe(side, "", keys), describe(side, node, keys)) for side, node in zip(sides, nodes)]
            for side_found in found:
                for key in ("listeners", "listener.security.protocol.map"):  # each broker's own addresses
                    entry = side_found[1][key]
                    entry["value"] = None
                    entry["synonyms"] = [s["source"] for s in entry["synonyms"]]
            assert found[0] == found[1], f"described differently:\nKafka {found[0]}\nthis broker {found[1]}"
            assert found[1][1]["listeners"]["synonyms"] == [2, 4, 5]
            each(None, lambda i: {"listeners": None}, 0)
            for client in listening:
                assert closed_by_broker([client.sock], 30) == {client.sock}
            for port in extra:
                assert eventually_true(lambda port=port: refused(port), 30), f"{port} still accepts"
        finally:
            overrides = "max.connections.per.ip.overrides"
            for side, node in zip(sides, nodes):
                for name, key in ((node, "listeners"), (node, "listener.security.protocol.map"), (node, overrides),
                                  ("", overrides)):
                    # Kafka takes a change of its controller a moment later: the map goes once the listener has
                    eventually_true(lambda side=side, name=name, key=key: alter_all(side, name, {key: None}) == 0, 30)
            ours.client.close()


def kafka_broker_controller_port(side):
    """The test Kafka's controller listener's port, from its configs (its listeners must keep it)."""
    listeners = describe(side, node_id(side), ["listeners"])["listeners"]["value"]
    return next(item.rpartition(":")[2] for item in listeners.split(",") if item.startswith("CONTROLLER://"))


def alter_all(side, name, configs):
    """The error code of altering broker name's configs {key: value, or None to delete} in one request."""
    body = IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=BROKER, resource_name=name, configs=[IncrementalAlterConfigsRequest.AlterableConfig(
            name=key, config_operation=0 if value is not None else 1, value=value)
            for key, value in configs.items()])])
    return side.client.call(body, 1).body.responses[0].error_code


def serves(port):
    try:
        client = RawClient(port)
    except OSError:
        return False
    try:
        return client.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3
                           ).body.error_code == 0
    except OSError:
        return False
    finally:
        client.close()


def refused(port):
    try:
        RawClient(port).close()
    except ConnectionRefusedError:
        return True
    return False


def eventually_true(check, timeout):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True
