"""Client metrics (KIP-714) against Kafka 4.3.1 (the ``sides`` fixture of test_broker_differential.py): the same
requests to both brokers, their answers compared whole, error messages included.

- Client-metrics subscriptions (ConfigResource type 16): set, replaced, deleted; described at every version;
  listed at v0 and v1; every refusal Kafka makes (the interval's bounds, a key it does not know, match patterns
  it cannot read, null values, lists appended to, keys and resources named twice), and ACLs (a user with none on
  the cluster is refused each).
- GetTelemetrySubscriptions and PushTelemetry, answered by Kafka whether or not it lists them: the subscriptions
  a client matches (by client id, software, address, port and instance id) and the union they give, the
  subscription id, each push's refusal, payloads of every compression, a changed subscription given at once.

What Kafka does a moment after it answers (its broker applying a change its controller made) is waited for: a
describe or a list is asked of Kafka again until it agrees or ten seconds pass, and GetTelemetrySubscriptions
from new client instances until Kafka's subscriptions are those this broker has. The client instance ids are
the test's own, so both brokers compute the same subscription ids. Every subscription made matches only this
test's client ids and is deleted at the end: the Kafka broker serves other tests."""

import time
import uuid

import pytest
from test_broker_differential import broker_like_kafka, described, sides, signed_in  # noqa: F401
from test_kafka_broker import RawClient

from kafkaproto import records
from kafkaproto.broker.state.telemetry import uuid_hash
from kafkaproto.compare import differences
from kafkaproto.messages import (AlterConfigsRequest, ApiVersionsRequest, DescribeConfigsRequest,
                                 GetTelemetrySubscriptionsRequest, IncrementalAlterConfigsRequest,
                                 ListConfigResourcesRequest, PushTelemetryRequest)
from kafkaproto.uuid import Uuid

pytestmark = [pytest.mark.xdist_group("kafka-broker"), pytest.mark.above_the_codecs]

CLIENT_METRICS = 16
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
KEYS = ("metrics", "interval.ms", "match")
IAC, AC = IncrementalAlterConfigsRequest, AlterConfigsRequest


def plain(value):
    """A message as compared here: to_dict without throttle times and documentation, and without the error
    message of what succeeded (Kafka leaves "" there, this broker null)."""
    if isinstance(value, dict):
        out = {k: plain(v) for k, v in value.items() if k not in ("throttle_time_ms", "documentation")}
        if out.get("error_code") == 0:
            out.pop("error_message", None)
        return out
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def asked(clients, body, version):
    return [plain(client.call(body, version).body.to_dict()) for client in clients]


def agree(clients, make, version, what, wait=False, keep=lambda answer: answer):
    """Send make (or make(), made anew for each broker and each time it is sent) to both; assert the answers,
    keep(answer), agree. wait: Kafka is asked again until it agrees, as it applies a change a moment after
    answering it."""
    ours = keep(asked(clients[1:], make() if callable(make) else make, version)[0])
    deadline = time.monotonic() + 10
    while True:
        kafka = keep(asked(clients[:1], make() if callable(make) else make, version)[0])
        if kafka == ours or not wait or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    found = differences(kafka, ours)
    assert not found, f"{what} v{version}: this broker differs from Apache Kafka:\n" + described(found)
    return ours


def alter(name, configs, operation=SET, validate_only=False):
    return IAC(validate_only=validate_only, resources=[IAC.AlterConfigsResource(
        resource_type=CLIENT_METRICS, resource_name=name, configs=[
            IAC.AlterableConfig(name=k, config_operation=operation, value=v) for k, v in configs.items()])])


def replace(name, configs):
    return AC(validate_only=False, resources=[AC.AlterConfigsResource(
        resource_type=CLIENT_METRICS, resource_name=name, configs=[
            AC.AlterableConfig(name=k, value=v) for k, v in configs.items()])])


def describe(name, keys=None, synonyms=True):
    return DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=CLIENT_METRICS, resource_name=name, configuration_keys=keys)], include_synonyms=synonyms)


def ours_only(names):
    """keep for ListConfigResources: this test's subscriptions, by name (Kafka lists them in hash order)."""
    def keep(answer):
        return {**answer, "config_resources": sorted(
            (r for r in answer["config_resources"] if r["resource_name"] in names),
            key=lambda r: r["resource_name"])}
    return keep


@pytest.fixture
def clients(sides):  # noqa: F811 - the imported fixture
    if sides[0].version.startswith("3."):
        pytest.skip("the broker follows Kafka 4.3's client metrics")
    made = [RawClient(side.port, client_id=f"telemetry-{uuid.uuid4().hex[:8]}") for side in sides]
    made[1].client_id = made[0].client_id
    yield made
    for client in made:
        client.close()


def delete_all(clients, names):
    for name in names:
        agree(clients, alter(name, dict.fromkeys(KEYS), operation=DELETE), 1, f"deleting {name}")


def test_client_metrics_subscriptions(clients):
    run = uuid.uuid4().hex[:8]
    a, b, gone = f"cm-{run}-a", f"cm-{run}-b", f"cm-{run}-gone"
    names = (a, b, gone)
    match = f"client_id=nobody-{run}"
    try:
        for version in (0, 1):
            agree(clients, alter(a, {"metrics": "org.apache.kafka.producer., x ,x", "interval.ms": " 1000 ",
                                     "match": match}), version, "IncrementalAlterConfigs of a new subscription")
        agree(clients, alter(b, {"metrics": "*", "match": f"{match}, client_software_version = 1\\.\\d+ "}), 1,
              "IncrementalAlterConfigs, blanks around a selector and its pattern")
        agree(clients, alter(gone, {"metrics": "z"}, validate_only=True), 1, "validate_only")
        for version in (1, 2, 3, 4):
            for keys, synonyms in ((None, True), (["metrics", "nope"], False), ([], True)):
                agree(clients, describe(a, keys, synonyms), version, f"DescribeConfigs {keys}", wait=True)
        agree(clients, describe(gone), 4, "DescribeConfigs of a subscription never made")
        agree(clients, describe(""), 4, "DescribeConfigs of no name")
        for version, types in ((0, []), (1, [CLIENT_METRICS]), (1, [])):
            agree(clients, ListConfigResourcesRequest(resource_types=types), version, f"ListConfigResources {types}",
                  wait=True, keep=ours_only(names))
        agree(clients, replace(a, {"metrics": "m2", "match": match}), 2, "AlterConfigs: the whole set replaced")
        agree(clients, describe(a), 4, "DescribeConfigs after AlterConfigs", wait=True)
        agree(clients, alter(a, {"interval.ms": "", "bogus": "x"}, operation=DELETE), 1,
              "IncrementalAlterConfigs deleting keys never set")
        agree(clients, alter(b, dict.fromkeys(KEYS), operation=DELETE), 1, "every key deleted")
        agree(clients, replace(gone, {}), 2, "AlterConfigs of nothing, for a subscription that is not there")
        agree(clients, ListConfigResourcesRequest(resource_types=[CLIENT_METRICS]), 1,
              "ListConfigResources: the subscription whose keys all went is gone", wait=True, keep=ours_only(names))
        agree(clients, describe(b), 4, "DescribeConfigs of it", wait=True)
    finally:
        delete_all(clients, names)


def test_client_metrics_refusals(clients):
    run = uuid.uuid4().hex[:8]
    name = f"cm-{run}-r"
    match = f"client_id=nobody-{run}"
    try:
        agree(clients, alter(name, {"metrics": "m", "match": match}), 1, "IncrementalAlterConfigs")
        refused = {
            "interval.ms below 100": {"interval.ms": "99"},
            "interval.ms above an hour": {"interval.ms": "3600001"},
            "interval.ms not a number": {"interval.ms": "1e3"},
            "interval.ms beyond an int": {"interval.ms": "2147483648"},
            "interval.ms empty": {"interval.ms": ""},
            "a key Kafka does not know": {"bogus": "1"},
            "a metric list with an empty item": {"metrics": "a,,b"},
            "a match list ending in a comma": {"match": f"{match},"},
            "a pattern Java cannot read": {"match": "client_id=["},
            "a repetition Java refuses": {"match": "client_id=a{,2}"},
            "an unknown selector": {"match": "host=x"},
            "a selector and no pattern": {"match": "client_id="},
            "a pattern with two '='": {"match": "client_id==x"},
            "no '=' at all": {"match": "client_id"},
            "null": {"metrics": None},
            "bad values in two keys": {"interval.ms": "x", "metrics": ",", "match": "y"},
        }
        for what, configs in refused.items():
            agree(clients, alter(name, configs), 1, f"IncrementalAlterConfigs, {what}")
        agree(clients, alter("", {"metrics": "m"}), 1, "IncrementalAlterConfigs of no name")
        for operation in (APPEND, SUBTRACT):
            agree(clients, alter(name, {"metrics": "n"}, operation=operation), 1, f"operation {operation}")
        agree(clients, alter(name, {"metrics": "n"}, operation=7), 1, "an operation Kafka does not know")
        agree(clients, IAC(validate_only=False, resources=[IAC.AlterConfigsResource(
            resource_type=CLIENT_METRICS, resource_name=name, configs=[
                IAC.AlterableConfig(name="metrics", config_operation=SET, value="n"),
                IAC.AlterableConfig(name="metrics", config_operation=DELETE, value=None)])]), 1, "a key twice")
        agree(clients, IAC(validate_only=False, resources=[alter(name, {"metrics": "n"}).resources[0]] * 2), 1,
              "a resource twice")
        agree(clients, replace(name, {"interval.ms": "5", "match": match}), 2, "AlterConfigs, out of range")
        agree(clients, replace(name, {"metrics": None}), 2, "AlterConfigs, null")
        agree(clients, describe(name), 4, "DescribeConfigs: nothing refused was kept", wait=True)
    finally:
        delete_all(clients, [name])


def test_client_metrics_need_the_cluster_acls(sides, clients):  # noqa: F811 - the imported fixture
    """alice (SASL) has no ACL on the cluster: altering, describing and listing client metrics are refused."""
    alice = [signed_in(side.sasl_port, "alice") for side in sides]
    try:
        name = f"cm-{uuid.uuid4().hex[:8]}-acl"
        agree(alice, alter(name, {"metrics": "m"}), 1, "IncrementalAlterConfigs as alice")
        agree(alice, replace(name, {"metrics": "m"}), 2, "AlterConfigs as alice")
        agree(alice, describe(name), 4, "DescribeConfigs as alice")
        for version in (0, 1):
            agree(alice, ListConfigResourcesRequest(resource_types=[]), version, "ListConfigResources as alice")
        agree(alice, GetTelemetrySubscriptionsRequest(client_instance_id=Uuid.random()), 0,
              "GetTelemetrySubscriptions as alice (no ACL guards it)")
    finally:
        for client in alice:
            client.close()


def subscription_part(answer):
    """A GetTelemetrySubscriptions answer with its subscription id taken back to what the subscriptions give
    (Kafka XORs it with the instance id's hash) and the instance id, which each broker made up, left out."""
    if answer["error_code"] == 0:
        answer = {**answer, "client_instance_id": "<made up>",
                  "subscription_id": answer["subscription_id"] ^ uuid_hash(answer["client_instance_id"])}
    return answer


def test_telemetry_subscriptions_and_pushes(clients):
    run = uuid.uuid4().hex[:8]
    client_id = clients[0].client_id
    names = [f"tm-{run}-{x}" for x in "abcde"]
    x_instance = Uuid.random()
    subscriptions = {
        names[0]: {"metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.", "interval.ms": "60000",
                   "match": f"client_id={client_id}"},
        names[1]: {"metrics": "a.b,c", "interval.ms": "120000",
                   "match": f"client_id={client_id},client_software_name=kafkaproto-tm,"
                            "client_software_version=1\\..*"},
        names[2]: {"metrics": "*", "interval.ms": "90000",
                   "match": f"client_id={client_id},client_instance_id={x_instance}"},
        names[3]: {"metrics": "d.e", "interval.ms": "200000",
                   "match": f"client_id=\\Q{client_id}\\E,client_source_address=127\\.0\\.0\\.1,"
                            "client_source_port=\\d+"},
        names[4]: {"metrics": "zzz", "interval.ms": "100", "match": f"client_id=nobody-{run}"},
    }

    def get(instance=None):
        return GetTelemetrySubscriptionsRequest(client_instance_id=instance or Uuid.random())

    def push(instance, subscription, data=b"", compression=0, terminating=False):
        return PushTelemetryRequest(client_instance_id=instance, subscription_id=subscription,
                                    terminating=terminating, compression_type=compression, metrics=data)

    def settled():
        """Wait until Kafka's client metrics manager has the subscriptions this broker has: new instances get
        the same answer from both."""
        agree(clients, get, 0, "GetTelemetrySubscriptions of a new instance", wait=True,
              keep=subscription_part)

    try:
        agree(clients, ApiVersionsRequest(client_software_name="kafkaproto-tm", client_software_version="1.0"), 3,
              "ApiVersions naming the software", keep=lambda answer: answer["error_code"])
        for name, configs in subscriptions.items():
            agree(clients, alter(name, configs), 1, f"IncrementalAlterConfigs {name}")
        settled()
        agree(clients, get(Uuid.ZERO), 0, "GetTelemetrySubscriptions of no instance (one is made)",
              keep=subscription_part)
        agree(clients, get(x_instance), 0, "GetTelemetrySubscriptions of the instance a subscription names")

        # one instance's life: asked too soon, pushes allowed and refused, terminating, then refused
        one = Uuid.random()
        first = agree(clients, get(one), 0, "GetTelemetrySubscriptions")
        sub = first["subscription_id"]
        agree(clients, get(one), 0, "GetTelemetrySubscriptions again, too soon")
        agree(clients, push(one, sub, b"x"), 0, "PushTelemetry right after asking")
        agree(clients, push(one, sub, b"x"), 0, "PushTelemetry again, too soon")
        agree(clients, push(one, sub + 1, b"x", terminating=True), 0, "PushTelemetry terminating, unknown id")
        agree(clients, push(one, sub, terminating=True), 0, "PushTelemetry after terminating")
        agree(clients, push(one, sub, b"x"), 0, "PushTelemetry after that")
        agree(clients, get(one), 0, "GetTelemetrySubscriptions after that")
        for reserved in (Uuid.ZERO, Uuid.ONE):
            agree(clients, push(reserved, 0, b"x"), 0, f"PushTelemetry from {reserved}")

        # each refusal on an instance of its own, and every compression
        def fresh():
            instance = Uuid.random()
            return instance, agree(clients, get(instance), 0, "GetTelemetrySubscriptions")["subscription_id"]

        never = Uuid.random()
        agree(clients, push(never, 0, b"x"), 0, "PushTelemetry from an instance that never asked")
        agree(clients, get(never), 0, "GetTelemetrySubscriptions right after an unknown subscription id")
        instance, sub = fresh()
        agree(clients, push(instance, sub, b"x", compression=9), 0, "PushTelemetry, an unknown compression")
        agree(clients, get(instance), 0, "GetTelemetrySubscriptions right after an unknown compression")
        payloads = {
            "too large": (0, b"y" * (1048576 + 1)),
            "corrupt zstd": (4, b"\x28\xb5\x2f\xfd not zstd"),
            "too large once decompressed": (4, records.compress("zstd", b"a" * 2_000_000)),
            "empty": (0, b""),
            **{f"{records.Compression(codec).name.lower()}": (codec, records.compress(codec, b"metrics") if codec else
                                                b"metrics") for codec in range(5)},
        }
        for what, (codec, data) in payloads.items():
            instance, sub = fresh()
            agree(clients, push(instance, sub, data, compression=codec), 0, f"PushTelemetry, {what}")

        # a subscription changed: an instance is told the new one at once, with a new id
        instance, sub = fresh()
        agree(clients, alter(names[0], {"interval.ms": "30000"}), 1, "IncrementalAlterConfigs, a new interval")
        agree(clients, alter(names[1], dict.fromkeys(KEYS), operation=DELETE), 1, "a subscription deleted")
        settled()
        agree(clients, get(instance), 0, "GetTelemetrySubscriptions after the subscriptions changed")
        agree(clients, push(instance, sub, b"x"), 0, "PushTelemetry with the old subscription id")
    finally:
        delete_all(clients, names)
