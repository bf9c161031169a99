"""A broker's configs, against Apache Kafka 4.3.1 (the harness is tests/test_broker_differential.py's): every key
DescribeConfigs lists for a broker, with its value, source, type, sensitivity, read-only flag and synonyms; and the
keys Kafka changes while running, changed for one broker and for every broker, kept and described as Kafka does.
"""

import time

import pytest

from kafkaproto.broker.config import OWN_SETTINGS
from kafkaproto.messages import DescribeConfigsRequest, IncrementalAlterConfigsRequest

import kafka_jvm
from test_broker_differential import broker_like_kafka, node_id, sides  # noqa: F401 - fixtures

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
    "ssl.keystore.type": ({"value", "synonyms", "read_only"}, "PEM is the only key store it reads"),
    "ssl.truststore.type": ({"value", "synonyms", "read_only"}, "PEM is the only trust store it reads"),
    "sasl.enabled.mechanisms": ({"synonyms", "read_only"}, "its default is the mechanisms it has, not GSSAPI"),
    "offsets.topic.num.partitions": ({"value", "synonyms"}, "__consumer_offsets is one log here: one partition"),
    "transaction.state.log.num.partitions": ({"value", "synonyms"},
                                             "__transaction_state is one log here: one partition"),
    "share.coordinator.state.topic.num.partitions": ({"value", "synonyms"},
                                                     "__share_group_state is one log here: one partition"),
    **{key: ({"read_only"}, "Kafka changes it while running; this broker reads it only at start")
       for key in ("max.connections.per.ip.overrides", "ssl.client.auth", "ssl.key.password",
                   "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.keystore.location",
                   "ssl.truststore.certificates", "ssl.truststore.location")},
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
