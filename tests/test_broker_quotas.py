"""Client quotas enforced (kafkaproto/broker/state/quotas.py): the arithmetic held to Kafka's own classes (run
from tests/kafka/QuotaMath.java), request_percentage counted around the handlers, controller_mutation_rate in
CreateTopics, CreatePartitions and DeleteTopics, connection_creation_rate by address. What Kafka 4.3.1 answers to
the same requests is compared in test_broker_differential.py."""

import random
import subprocess

import kafka_jvm
import pytest

from kafkaproto import decode_request, encode_request, errors
from kafkaproto.broker import dispatch as dispatch_module
from kafkaproto.broker.config import Listener
from kafkaproto.broker.dispatch import Context, dispatch
from kafkaproto.broker.handlers.create_topics import java_hash_set_order
from kafkaproto.broker.security import Session
from kafkaproto.broker.state.quotas import (FETCH, PRODUCE, REQUEST, MutationQuota, Quotas, Rate, TokenBucket,
                                            wait_ms)
from kafkaproto.messages import (AlterClientQuotasRequest, ApiVersionsRequest, CreatePartitionsRequest,
                                 CreateTopicsRequest, DeleteTopicsRequest, FetchRequest, ProduceRequest,
                                 RequestHeader)

from test_broker_handlers import batch, call, create, make_state

pytestmark = pytest.mark.above_the_codecs
EPOCH_MS = 1_700_000_000_000  # Kafka's clocks are wall clocks: a token bucket last filled at 0 starts full


def scripts():
    """Quota scripts, in QuotaMath.java's commands: byte rates with gaps past the samples' expiry and past twelve
    windows, a bounded request rate, connections unrecorded when over, strict and permissive buckets."""
    chance = random.Random(5)
    out = []
    for limit, most in ((10_000, -1), (0.5, 1000), (1, 1000)):
        lines = [f"rate {limit} {most}"]
        now = EPOCH_MS
        for _ in range(300):
            now += chance.choice((0, 1, 7, 250, 999, 1000, 1001, 2500, 12_000))
            amount = 1 if limit == 1 else round(chance.uniform(0, limit * 3), 3)
            lines.append(f"record {now} {amount}")
            if chance.random() < 0.1:
                lines.append(f"unrecord {now} {-amount}")
        out.append(lines)
    for kind in ("strict", "permissive"):
        lines = [f"{kind} 2.5"]
        now = EPOCH_MS
        for _ in range(200):
            now += chance.choice((0, 3, 400, 1000, 4000))
            lines.append(f"mutate {now} {chance.randint(1, 12)}")
            lines.append(f"wait {now + chance.choice((0, 10, 700))}")
        out.append(lines)
    return out


def ours(lines):
    """QuotaMath's answers, from this broker's classes."""
    answers = []
    rate = quota = most = limit = None
    for line in lines:
        word = line.split()
        if word[0] == "rate":
            rate, limit, most = Rate(), float(word[1]), int(word[2])
            answers.append("ok")
        elif word[0] in ("strict", "permissive"):
            quota = MutationQuota(TokenBucket(), float(word[1]), word[0] == "strict")
            answers.append("ok")
        elif word[0] == "record":
            rate.record(int(word[1]), float(word[2]))
            answers.append(str(wait_ms(rate, limit, int(word[1]), most if most >= 0 else None)))
        elif word[0] == "unrecord":
            rate.record(int(word[1]), float(word[2]))
            answers.append("-")
        elif word[0] == "mutate":
            answers.append("taken" if quota.record(float(word[2]), int(word[1])) else "refused")
        else:
            answers.append(str(quota.throttle_ms(int(word[1]))))
    return answers


def test_quota_arithmetic_is_kafkas():
    """The same records, the same waits and the same refusals as Kafka 4.3.1's Rate, QuotaUtils, TokenBucket and
    Strict/PermissiveControllerMutationQuota."""
    version = kafka_jvm.KAFKA_VERSIONS[-1]
    try:
        cp = kafka_jvm.classpath(version, kafka_jvm.compiled(version, "QuotaMath"))
    except kafka_jvm.KafkaUnavailable as e:
        kafka_jvm.unavailable(str(e))
    lines = [line for script in scripts() for line in script]
    run = subprocess.run(["java", "-cp", cp, "QuotaMath"],
                         input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120)
    kafka = run.stdout.split()
    assert len(kafka) == len(lines), run.stderr[-2000:]
    mine = ours(lines)
    wrong = [(line, k, o) for line, k, o in zip(lines, kafka, mine) if k != o]
    assert not wrong, wrong[:10]
    assert {"refused", "taken"} <= set(kafka) and len({a for a in kafka if a.isdigit()}) > 20  # all was tried


def test_rate_measures_over_ten_windows_at_least():
    """A first burst is a rate over ten seconds; samples begin where the traffic does and lapse eleven seconds
    after their last record."""
    rate = Rate()
    rate.record(500, 100)
    assert rate.measure(500) == (10.0, 10_000)
    rate.record(1_400, 100)  # the same sample: it began at 500
    rate.record(1_500, 100)  # a new one
    assert len(rate.samples) == 2 and rate.measure(1_500) == (30.0, 10_000)
    assert rate.measure(12_399) == (300 / 11.899, 11_899)
    assert rate.measure(12_400) == (100 / 10.9, 10_900)  # the first lapsed: it begins again, empty
    assert abs(wait_ms(rate, 5.0, 12_400) - 9_100) <= 1 and wait_ms(rate, 5.0, 12_400, most=1000) == 1000


def quota_request(entity, key, value, remove=False):
    return AlterClientQuotasRequest(entries=[AlterClientQuotasRequest.EntryData(
        entity=[AlterClientQuotasRequest.EntityData(entity_type=kind, entity_name=name) for kind, name in entity],
        ops=[AlterClientQuotasRequest.OpData(key=key, value=value, remove=remove)])])


def as_client(state, body, version, session=None, client_id="tests"):
    """(the response as the client reads it, the context's throttle): through the codecs and dispatch."""
    header = RequestHeader(request_api_key=body.api_key, request_api_version=version, correlation_id=1,
                           client_id=client_id)
    request = decode_request(encode_request(header, body, version)[4:])
    ctx = Context(state, request.header, final=True, session=session)
    response = dispatch(ctx, request.body)
    if not hasattr(response, "encode"):
        return response, ctx.throttle_ms
    return type(response).decode(response.encode(version), version), ctx.throttle_ms


@pytest.fixture
def handler_time(monkeypatch):
    """Each request's handler seems to take 0.4 ms (dispatch's clock, read at its start and at its end)."""
    ticks = iter(range(0, 10**12, 400_000))
    monkeypatch.setattr(dispatch_module, "monotonic_ns", lambda: next(ticks))


def test_request_percentage_counts_handler_time(tmp_path, handler_time):
    """request_percentage 0.01: a tenth of a percent-second over ten seconds, so two requests of 0.4 ms pass and
    the third waits (at most one window). ApiVersions counts, as in Kafka; the SASL exchange before
    authentication and a Produce with acks 0 do not. The answer carries the longest wait of the client's quotas,
    and a fetch over a quota brings no data and counts none of its bytes."""
    state = make_state(tmp_path)
    try:
        create(state, "t")
        assert call(state, quota_request([("client-id", "tests")], "request_percentage", 0.01), 1).entries[
            0].error_code == 0
        before_authentication = Session(Listener("SASL", "127.0.0.1", 0, "SASL_PLAINTEXT"), {}, ["PLAIN"])
        for _ in range(3):
            assert as_client(state, ApiVersionsRequest(), 3, session=before_authentication)[1] == 0
        acks0 = ProduceRequest(acks=0, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch(b"x"))])])
        for _ in range(3):
            assert as_client(state, acks0, 9)[1] == 0
        assert [as_client(state, ApiVersionsRequest(), 3)[0].throttle_time_ms for _ in range(3)] == [0, 0, 1000]
        response, muted = as_client(state, ApiVersionsRequest(), 3)
        assert response.throttle_time_ms == muted == 1000

        # a byte rate's longer wait wins; a fetch over request_percentage alone gets nothing
        assert call(state, quota_request([("client-id", "tests")], "producer_byte_rate", 100), 1).entries[
            0].error_code == 0
        acks1 = ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch(bytes(5000)))])])
        response, muted = as_client(state, acks1, 9)
        assert response.throttle_time_ms == muted > 1000
        assert call(state, quota_request([("client-id", "tests")], "consumer_byte_rate", 10**9), 1).entries[
            0].error_code == 0
        fetch = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                             session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic="t", partitions=[
                                 FetchRequest.FetchPartition(partition=0, fetch_offset=0,
                                                             partition_max_bytes=1 << 20)])])
        response, muted = as_client(state, fetch, 12)
        assert response.throttle_time_ms == muted == 1000 and response.responses == []
        quotas = state.cluster.quotas
        assert quotas.throttle_ms(FETCH, "ANONYMOUS", "tests", 0, state.now_ms()) == 0
        assert sum(s[2] for s in quotas._used[(FETCH, (("client-id", "tests"),))].samples) == 0  # taken back
        # without any quota nothing is measured
        for key in (REQUEST, PRODUCE, FETCH):
            call(state, quota_request([("client-id", "tests")], key, 0, remove=True), 1)
        response, muted = as_client(state, ApiVersionsRequest(), 3)
        assert response.throttle_time_ms == muted == 0
    finally:
        state.close()


def codes(response):
    items = getattr(response, "topics", None) or getattr(response, "results", None) or response.responses
    return {item.name: item.error_code for item in items}


def test_controller_mutation_rate_in_the_handlers(tmp_path):
    """controller_mutation_rate 1 (a bucket of 11 partitions) for three client ids: strict CreateTopics (v7)
    takes 5, 5 and 4 and refuses the next, with no message, not counting a topic that fails its own checks;
    validate_only counts too; permissive CreateTopics (v5) takes all; CreatePartitions goes in Java's hash order
    of the names; strict DeleteTopics refuses what the bucket no longer covers and keeps it."""
    state = make_state(tmp_path)
    state.now_ms = lambda: EPOCH_MS  # the clock stands still: no token comes back while the test runs
    throttled = errors.THROTTLING_QUOTA_EXCEEDED.code
    try:
        for client in ("strict", "old", "grow"):
            assert call(state, quota_request([("client-id", client)], "controller_mutation_rate", 1.0), 1).entries[
                0].error_code == 0

        def topics(*counts, prefix="s", validate_only=False):
            return CreateTopicsRequest(timeout_ms=1000, validate_only=validate_only, topics=[
                CreateTopicsRequest.CreatableTopic(name=f"{prefix}{i}", num_partitions=n, replication_factor=1)
                for i, n in enumerate(counts)])
        body = topics(5, 5, 4, 1)
        body.topics.insert(0, CreateTopicsRequest.CreatableTopic(name="bad", num_partitions=1, replication_factor=3))
        response, muted = as_client(state, body, 7, client_id="strict")
        assert codes(response) == {"bad": errors.INVALID_REPLICATION_FACTOR.code, "s0": 0, "s1": 0, "s2": 0,
                                   "s3": throttled}
        assert response.topics[-1].error_message is None and response.throttle_time_ms == muted == 3000
        response, muted = as_client(state, topics(5, 5, 4, 1, prefix="o"), 5, client_id="old")
        assert set(codes(response).values()) == {0} and response.throttle_time_ms == 4000
        assert as_client(state, topics(12, prefix="v", validate_only=True), 7, client_id="grow")[1] == 0
        assert codes(as_client(state, topics(1, prefix="w"), 7, client_id="grow")[0]) == {"w0": throttled}

        assert create(state, "big", partitions=11).error_code == 0  # "tests" has no quota yet
        quotas = state.cluster.quotas
        call(state, quota_request([("client-id", "grow")], "controller_mutation_rate", 0, remove=True), 1)
        call(state, quota_request([("client-id", None)], "controller_mutation_rate", 1.0), 1)  # each id its own
        names = ["s0", "s1", "s2"]
        order = java_hash_set_order(names)
        grow = CreatePartitionsRequest(timeout_ms=1000, validate_only=False, topics=[
            CreatePartitionsRequest.CreatePartitionsTopic(name=name, count=11, assignments=None) for name in names])
        response, _ = as_client(state, grow, 3, client_id="grower")
        assert codes(response) == {order[0]: 0, order[1]: 0, order[2]: throttled}
        assert [r.name for r in response.results] == names  # answered in the request's order
        assert len(state.cluster.topics[order[2]].partitions) < 11

        # three of 11 partitions: 11 to 0, 0 to -11, then none (which one is left follows the topic IDs' hashes)
        response, _ = as_client(state, DeleteTopicsRequest(topic_names=[order[0], order[1], "big"], timeout_ms=1000),
                                5, client_id="deleter")
        assert sorted(codes(response).values()) == [0, 0, throttled] and response.throttle_time_ms == 11_000
        assert {n for n, code in codes(response).items() if code} == {order[0], order[1], "big"} & set(
            state.cluster.topics)
        assert quotas.mutation_quota("ANONYMOUS", "nobody-with-a-quota", strict=True) is not None  # the default
        call(state, quota_request([("client-id", None)], "controller_mutation_rate", 0, remove=True), 1)
        assert quotas.mutation_quota("ANONYMOUS", "deleter", strict=True) is None
    finally:
        state.close()


def test_connection_creation_rate_by_address():
    """An address's own connection_creation_rate, else the default address's, each address counted on its own:
    at one a second, ten connections in the first second (the rate is over ten seconds at least), then a wait
    of at most a second; a held connection does not count; an IPv4-mapped IPv6 address is its IPv4 one, as in
    Java."""
    quotas = Quotas()
    assert quotas.connection_wait_ms("127.0.0.1", 0) == 0  # no quota at all
    quotas.apply([("ip", None)], "connection_creation_rate", 1.0, False)
    quotas.apply([("ip", "10.0.0.1")], "connection_creation_rate", 10.0, False)
    assert [quotas.connection_wait_ms("127.0.0.1", 0) for _ in range(11)] == [0] * 10 + [1000]
    assert quotas.connection_wait_ms("::ffff:127.0.0.1", 0) == 1000  # the same address
    assert quotas.connection_wait_ms("127.0.0.2", 0) == 0
    # 101 over ten seconds at ten a second: a tenth of a second; the held ones not counted, the next waits as long
    assert [quotas.connection_wait_ms("10.0.0.1", 0) for _ in range(102)] == [0] * 100 + [100, 100]
    assert quotas.connection_wait_ms("127.0.0.1", 11_000) == 0  # the first second's lapsed
    quotas.apply([("ip", None)], "connection_creation_rate", 0, True)
    assert [quotas.connection_wait_ms("127.0.0.1", 11_000) for _ in range(20)] == [0] * 20
    assert quotas.connection_wait_ms("10.0.0.1", 1_000) == 100
