"""Client quotas against Apache Kafka 4.3.1 (the harness is tests/test_broker_differential.py's): quotas set,
described and removed, and each enforced as Kafka enforces it: byte rates, controller mutations, request time and
new connections."""

import socket
import time
import uuid

import pytest
from test_kafka_broker import RawClient

from kafkaproto import encode_request, errors
from kafkaproto.compare import differences
from kafkaproto.messages import (AlterClientQuotasRequest, ApiKey, ApiVersionsRequest, CreatePartitionsRequest,
                                 CreateTopicsRequest, DeleteTopicsRequest, DescribeClientQuotasRequest,
                                 IncrementalAlterConfigsRequest, RequestHeader)

from test_broker_differential import (batch, both, broker_like_kafka, described, produce, serving,  # noqa: F401
                                      side_name, sides)

# Under pytest -n these tests share the differential tests' worker and brokers.
pytestmark = [pytest.mark.xdist_group("kafka-broker"), pytest.mark.above_the_codecs]


def test_client_quotas(sides):  # noqa: F811 - the imported fixture
    """AlterClientQuotas refused as Kafka refuses it (validated only), then quotas set for this test's own user
    and client ids, described through every kind of filter, and removed."""
    run = uuid.uuid4().hex[:6]
    user, client = f"quota-user-{run}", f"quota-client-{run}"
    Entity, Op = AlterClientQuotasRequest.EntityData, AlterClientQuotasRequest.OpData

    def entry(entity, *ops):
        return AlterClientQuotasRequest.EntryData(entity=[Entity(entity_type=t, entity_name=n) for t, n in entity],
                                                  ops=[Op(key=k, value=v, remove=r) for k, v, r in ops])
    produce_rate = ("producer_byte_rate", 1000.0, False)
    refused = [entry([("ip", "127.0.0.1"), ("user", user)], produce_rate), entry([("group", "g")], produce_rate),
               entry([("user", user + "-1")], ("foo", 1.0, False)),
               entry([("user", user + "-2")], ("producer_byte_rate", -5, False)),
               entry([("user", user + "-3")], ("producer_byte_rate", 0.5, False)), entry([], produce_rate),
               entry([("ip", "not-an-ip")], ("connection_creation_rate", 5.0, False)),
               entry([("user", user + "-4")], produce_rate, produce_rate),
               entry([("user", user + "-5")], ("connection_creation_rate", 5.0, False)),
               entry([("ip", "127.0.0.1")], produce_rate), entry([("user", "")], produce_rate),
               entry([("user", user + "-6")], produce_rate), entry([("user", user + "-6")], produce_rate)]
    taken = [entry([("user", user)], produce_rate), entry([("user", user), ("client-id", client)],
                                                           ("consumer_byte_rate", 2000.0, False)),
             entry([("user", None), ("client-id", client)], ("request_percentage", 150.0, False)),
             entry([("ip", "127.0.0.7")], ("connection_creation_rate", 5.0, False))]
    for version in (0, 1):
        # Kafka answers each entity once, in the order of its hash maps: compared as sets
        answers = []
        for side in sides:
            _, plain = side.call(AlterClientQuotasRequest(entries=refused + taken, validate_only=True), version)
            answers.append(sorted(({**e, "entity": sorted(e["entity"], key=str)} for e in plain["entries"]),
                                  key=str))
        found = differences(*answers)
        assert not found, f"AlterClientQuotas v{version}, validated only:\n" + described(found)
        assert len(answers[0]) == len(refused) + len(taken) - 1
    for side in sides:
        assert side.call(AlterClientQuotasRequest(entries=taken[:3]), 1)[0].entries[0].error_code == 0
    Component = DescribeClientQuotasRequest.ComponentData

    def quotas(what, components, strict=False, settled=None):
        """Of the entities, this test's own (the Kafka broker serves other tests too)."""
        answers = []
        for side in sides:
            response, plain = side.call(DescribeClientQuotasRequest(components=components, strict=strict), 1,
                                        settled=settled)
            if plain["entries"] is not None:
                plain["entries"] = sorted(
                    ({"entity": sorted(e["entity"], key=str), "values": sorted(e["values"], key=str)}
                     for e in plain["entries"] if run in str(e["entity"])), key=str)
            answers.append(plain)
        found = differences(*answers)
        assert not found, f"DescribeClientQuotas, {what}:\n" + described(found)
        return answers[0]

    # Kafka's controller takes the quotas; its broker learns them a moment later
    assert len(quotas("everything", [], settled=lambda r: sum(run in str(e.entity) for e in r.entries) == 3)[
        "entries"]) == 3
    quotas("a user exactly", [Component(entity_type="user", match_type=0, match=user)])
    quotas("a user exactly, strict", [Component(entity_type="user", match_type=0, match=user)], strict=True)
    quotas("the default user", [Component(entity_type="user", match_type=1, match=None)])
    quotas("any named client id", [Component(entity_type="client-id", match_type=2, match=None)])
    quotas("a user and a client id", [Component(entity_type="user", match_type=2, match=None),
                                         Component(entity_type="client-id", match_type=0, match=client)], strict=True)
    for components in ([Component(entity_type="user", match_type=0, match=None)],
                       [Component(entity_type="user", match_type=3, match=None)],
                       [Component(entity_type="user", match_type=2, match=None)] * 2,
                       [Component(entity_type="ip", match_type=2, match=None),
                        Component(entity_type="user", match_type=2, match=None)],
                       [Component(entity_type="group", match_type=2, match=None)],
                       [Component(entity_type="user", match_type=1, match="x")]):
        quotas(f"refused: {components}", components)
    removed = [entry(e.entity and [(x.entity_type, x.entity_name) for x in e.entity],
                     *[(op.key, 0.0, True) for op in e.ops]) for e in taken[:3]]
    for side in sides:
        assert {e.error_code for e in side.call(AlterClientQuotasRequest(entries=removed), 1)[0].entries} == {0}
    assert not quotas("after the removal", [], settled=lambda r: not any(run in str(e.entity) for e in r.entries))[
        "entries"]


def test_a_producer_over_its_quota_is_throttled(sides):  # noqa: F811 - the imported fixture
    """A client id held to 100 kB/s: the produce that takes it over is answered with a throttle time, and the
    connection muted as long, by both."""
    client = f"quota-producer-{uuid.uuid4().hex[:6]}"
    Entity, Op = AlterClientQuotasRequest.EntityData, AlterClientQuotasRequest.OpData
    quota = AlterClientQuotasRequest.EntryData(entity=[Entity(entity_type="client-id", entity_name=client)],
                                               ops=[Op(key="producer_byte_rate", value=100_000.0, remove=False)])
    both(sides, AlterClientQuotasRequest(entries=[quota]), 1, "AlterClientQuotas")
    topic = f"diff-quota-{uuid.uuid4().hex[:8]}"
    both(sides, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1)], timeout_ms=10000), 7, "CreateTopics")
    time.sleep(1)  # Kafka's brokers learn the quota from the metadata log a moment after its controller
    data = batch(*[bytes(400_000)])
    throttled = []
    try:
        for side in sides:
            connection = RawClient(side.port, client_id=client)
            times = [connection.call(produce(topic, 0, data), 9).body.throttle_time_ms for _ in range(3)]
            throttled.append([ms > 0 for ms in times])
            # the connection is muted meanwhile: the next answer comes no sooner
            began = time.monotonic()
            connection.call(ApiVersionsRequest(), 3)
            assert time.monotonic() - began >= times[-1] / 1000 * 0.9, (side_name(side, sides), times)
            connection.close()
    finally:
        quota.ops[0].remove = True
        both(sides, AlterClientQuotasRequest(entries=[quota]), 1, "AlterClientQuotas, removed")
    assert throttled[0] == throttled[1] == [False, False, True], throttled


def _quota_entry(kind, name, key, value, remove=False):
    Entity, Op = AlterClientQuotasRequest.EntityData, AlterClientQuotasRequest.OpData
    return AlterClientQuotasRequest.EntryData(entity=[Entity(entity_type=kind, entity_name=name)],
                                              ops=[Op(key=key, value=value, remove=remove)])


def _set_quotas(sides, entries, remove=False):  # noqa: F811 - both brokers
    """Set (or remove) the quotas on both; each entity must be taken (Kafka answers them in hash order)."""
    for entry in entries:
        entry.ops[0].remove = remove
    for side in sides:
        answered = side.call(AlterClientQuotasRequest(entries=entries), 1)[0].entries
        assert [e.error_code for e in answered] == [0] * len(entries), (side_name(side, sides), answered)


def test_controller_mutation_rate(sides):  # noqa: F811 - the imported fixture
    """KIP-599's controller_mutation_rate, 1 partition a second (a bucket of 11), a client id of its own per step,
    so that each starts full: CreateTopics, CreatePartitions and DeleteTopics refuse the topics past an empty
    bucket at their strict versions (THROTTLING_QUOTA_EXCEEDED, no message) and take them all at the older ones;
    the same topics either way, and each answer over the quota carries a wait. Which topics Kafka's DeleteTopics
    refuses follows the hash order of random topic IDs, so only how many is compared there."""
    if sides[0].version.startswith("3."):
        pytest.skip("quota enforcement is compared with Kafka 4.3")
    run = uuid.uuid4().hex[:6]
    steps = ("create", "create-old", "grow", "grow-old", "delete", "delete-old")
    clients = {step: f"quota-mutations-{step}-{run}" for step in steps}
    quotas = [_quota_entry("client-id", client, "controller_mutation_rate", 1.0) for client in clients.values()]
    _set_quotas(sides, quotas)
    time.sleep(1)  # Kafka's controller learns the quotas from the metadata log a moment after answering
    made = [f"diff-mut-{run}-{i}" for i in range(4)] + [f"diff-mut-old-{run}-{i}" for i in range(4)]

    def step(step_name, body, version):
        """body sent by the step's client on a new connection (one muted by a throttle is left behind) to both;
        the answers must agree, the topics taken in the order of their names (Kafka answers CreatePartitions in
        its hash order); (each side's response)."""
        answers = []
        for side in sides:
            connection = RawClient(side.port, client_id=clients[step_name])
            try:
                response, plain = side.call(body, version, client=connection)
            finally:
                connection.close()
            for key in ("topics", "results"):
                if plain.get(key):
                    plain[key] = sorted(plain[key], key=lambda item: item["name"])
            answers.append((response, plain))
        found = differences(answers[0][1], answers[1][1])
        assert not found, f"{step_name} v{version}: this broker differs from Apache Kafka:\n" + described(found)
        return [response for response, _ in answers]

    def refused(response):
        items = getattr(response, "topics", None) or getattr(response, "results", None) or response.responses
        out = []
        for item in items:
            if item.error_code == errors.THROTTLING_QUOTA_EXCEEDED.code:
                assert item.error_message is None, item
                out.append(item.name)
        return sorted(out)

    def topic(name, partitions, replication_factor=1):
        return CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions,
                                                  replication_factor=replication_factor)

    try:
        # 11 tokens: 5 and 5 and 4 are taken (the last from 1 left, down to -3), then the bucket is empty; a topic
        # that fails its own checks is not counted.
        answers = step("create", CreateTopicsRequest(timeout_ms=10000, topics=[
            topic(made[0], 5), topic(made[1], 5), topic(made[2], 4), topic(made[3], 1),
            topic(f"diff-mut-{run}-bad", 1, replication_factor=0)]), 7)
        assert [refused(r) for r in answers] == [[made[3]]] * 2
        assert all(r.throttle_time_ms > 0 for r in answers), [r.throttle_time_ms for r in answers]
        answers = step("create-old", CreateTopicsRequest(timeout_ms=10000, topics=[
            topic(made[4], 5), topic(made[5], 5), topic(made[6], 4), topic(made[7], 1)]), 5)
        assert [refused(r) for r in answers] == [[]] * 2
        assert all(r.throttle_time_ms > 0 for r in answers), [r.throttle_time_ms for r in answers]
        for side in sides:
            serving(side, [(made[i], n) for i, n in ((0, 5), (1, 5), (2, 4), (4, 5), (5, 5))])

        # To 11 partitions each (6, 6 and 7 more), taken in the order of a Java HashSet of the names: the third
        # finds the bucket empty.
        def grow(*names):
            return CreatePartitionsRequest(timeout_ms=10000, validate_only=False, topics=[
                CreatePartitionsRequest.CreatePartitionsTopic(name=name, count=11, assignments=None)
                for name in names])
        grown = step("grow", grow(*made[:3]), 3)
        assert len(refused(grown[0])) == 1 and refused(grown[0]) == refused(grown[1])
        assert all(r.throttle_time_ms > 0 for r in grown), [r.throttle_time_ms for r in grown]
        answers = step("grow-old", grow(made[4], made[5]), 2)
        assert [refused(r) for r in answers] == [[]] * 2
        assert all(r.throttle_time_ms > 0 for r in answers), [r.throttle_time_ms for r in answers]

        # Four topics of 11 partitions: two are deleted (11 to 0, then to -11), the other two refused.
        eleven = sorted(set(made[:3]) - set(refused(grown[0]))) + [made[4], made[5]]
        answers = []
        for side in sides:
            connection = RawClient(side.port, client_id=clients["delete"])
            try:
                answers.append(connection.call(DeleteTopicsRequest(topic_names=eleven, timeout_ms=10000), 5).body)
            finally:
                connection.close()
        assert [len(refused(r)) for r in answers] == [2, 2], answers
        assert all(r.throttle_time_ms > 0 for r in answers), [r.throttle_time_ms for r in answers]
        left = [sorted(refused(r)) + sorted(set(made) - set(eleven) - {made[3]}) for r in answers]
        for side, names in zip(sides, left):
            connection = RawClient(side.port, client_id=clients["delete-old"])
            try:
                response = connection.call(DeleteTopicsRequest(topic_names=names, timeout_ms=10000), 4).body
            finally:
                connection.close()
            assert [t.error_code for t in response.responses] == [0] * len(names), response
            assert response.throttle_time_ms > 0, response
    finally:
        _set_quotas(sides, quotas, remove=True)


def test_request_percentage_holds_a_busy_client(sides):  # noqa: F811 - the imported fixture
    """A client id held to a hundred-thousandth of a percent of a request handler's time (request_percentage),
    asking ApiVersions (which Kafka counts too) as fast as it is answered: both brokers answer its first request
    with a wait of at most a second (the quota window; the request took far more than the share) and read nothing
    more from the connection meanwhile, so the client gets about one answer a second."""
    if sides[0].version.startswith("3."):
        pytest.skip("quota enforcement is compared with Kafka 4.3")
    client = f"quota-busy-{uuid.uuid4().hex[:6]}"
    quota = [_quota_entry("client-id", client, "request_percentage", 0.00001)]
    _set_quotas(sides, quota)
    time.sleep(1)  # Kafka's brokers learn the quota from the metadata log a moment after its controller
    try:
        for side in sides:
            connection = RawClient(side.port, client_id=client)
            try:
                waits, gaps = [], []
                for _ in range(2):
                    began = time.monotonic()
                    waits.append(connection.call(ApiVersionsRequest(), 3).body.throttle_time_ms)
                    gaps.append(time.monotonic() - began)
            finally:
                connection.close()
            where = (side_name(side, sides), waits, gaps)
            assert all(0 < ms <= 1000 for ms in waits), where
            # each throttled answer mutes the connection for its wait before the next request is read
            for wait, gap in zip(waits, gaps[1:]):
                assert gap >= wait / 1000 * 0.9, where
    finally:
        _set_quotas(sides, quota, remove=True)


def test_connection_creation_rate(sides):  # noqa: F811 - the imported fixture
    """KIP-612's connection_creation_rate, one connection a second from 127.0.0.1: ten connections are served
    (the rate is measured over ten seconds at least), the eleventh is accepted but never read, and closed within
    a second (a reset, as its request is left unread), by both."""
    if sides[0].version.startswith("3."):
        pytest.skip("quota enforcement is compared with Kafka 4.3")
    quota = [_quota_entry("ip", "127.0.0.1", "connection_creation_rate", 1.0)]
    _set_quotas(sides, quota)
    time.sleep(1)  # Kafka's brokers learn the quota from the metadata log a moment after its controller
    header = RequestHeader(request_api_key=ApiKey.API_VERSIONS, request_api_version=0, correlation_id=1,
                           client_id="quota-connections")
    try:
        outcomes = []
        for side in sides:
            seen = []
            for _ in range(11):
                began = time.monotonic()
                with socket.create_connection(("127.0.0.1", side.port), timeout=5) as sock:
                    sock.sendall(encode_request(header, ApiVersionsRequest(), 0))
                    try:
                        seen.append("served" if sock.recv(4) else "closed")
                    except ConnectionResetError:
                        seen.append("closed")
                    if seen[-1] == "closed":
                        assert 0.5 <= time.monotonic() - began <= 2.5, (side_name(side, sides), seen)
            outcomes.append(seen)
    finally:
        _set_quotas(sides, quota, remove=True)
        # Kafka drops the quota a moment after answering: the next test's connections must not be held
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.create_connection(("127.0.0.1", sides[0].port), timeout=5) as sock:
                sock.sendall(encode_request(header, ApiVersionsRequest(), 0))
                try:
                    if sock.recv(4):
                        break
                except ConnectionResetError:
                    pass
    assert outcomes[0] == outcomes[1] == ["served"] * 10 + ["closed"], outcomes


def test_max_connection_creation_rate(sides):  # noqa: F811 - the imported fixture
    """max.connection.creation.rate=1, set for the cluster with IncrementalAlterConfigs: new connections to the
    PLAINTEXT listener are soon made to wait, each about a second, and then served (Kafka's acceptor waits; it
    counts every connection the listener took in the last eleven seconds, so which one first waits depends on the
    tests before). Set back, connections are served at once again."""
    if sides[0].version.startswith("3."):
        pytest.skip("quota enforcement is compared with Kafka 4.3")
    Resource = IncrementalAlterConfigsRequest.AlterConfigsResource
    Config = IncrementalAlterConfigsRequest.AlterableConfig
    header = RequestHeader(request_api_key=ApiKey.API_VERSIONS, request_api_version=0, correlation_id=1,
                           client_id="quota-connection-rate")

    def setting(value):
        body = IncrementalAlterConfigsRequest(validate_only=False, resources=[Resource(
            resource_type=4, resource_name="", configs=[Config(
                name="max.connection.creation.rate", config_operation=1 if value is None else 0, value=value)])])
        for side in sides:
            assert side.call(body, 1)[0].responses[0].error_code == 0, side_name(side, sides)

    def served_after(side):
        """Seconds until a new connection's ApiVersions is answered."""
        began = time.monotonic()
        with socket.create_connection(("127.0.0.1", side.port), timeout=5) as sock:
            sock.sendall(encode_request(header, ApiVersionsRequest(), 0))
            assert sock.recv(4), side_name(side, sides)  # answered, not closed
        return time.monotonic() - began

    setting("1")
    try:
        for side in sides:
            # Kafka applies the setting a moment after answering; the connections meanwhile count all the same
            waits = []
            while len(waits) < 60 and (not waits or waits[-1] < 0.5):
                waits.append(served_after(side))
            assert 0.5 <= waits[-1] <= 2.5, (side_name(side, sides), waits)
    finally:
        setting(None)
    for side in sides:
        deadline = time.monotonic() + 10
        while served_after(side) > 0.3:
            assert time.monotonic() < deadline, side_name(side, sides)
