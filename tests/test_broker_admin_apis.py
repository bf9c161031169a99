"""The admin APIs a client uses besides producing and consuming (DeleteRecords, ...), without sockets: the
requests go through the codecs to the handlers and back, on a BrokerState over real files. What Kafka answers to
the same requests is compared in test_broker_differential.py."""

import os

import pytest

from kafkaproto import errors
from kafkaproto.messages import DeleteRecordsRequest, ListOffsetsRequest, OffsetCommitRequest, OffsetDeleteRequest

from test_broker_consumer_groups import Member
from test_broker_handlers import batch, call, create, fetch, make_state, produce

pytestmark = pytest.mark.above_the_codecs


def delete_records(state, offsets, topic="t", version=2):
    """{partition: (low watermark, error code)} for DeleteRecords of {partition: offset}."""
    asked = [DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=o) for p, o in offsets.items()]
    body = DeleteRecordsRequest(timeout_ms=1000, topics=[
        DeleteRecordsRequest.DeleteRecordsTopic(name=topic, partitions=asked)])
    answer = call(state, body, version).topics[0]
    assert answer.name == topic
    return {p.partition_index: (p.low_watermark, p.error_code) for p in answer.partitions}


def earliest(state, topic="t", partition=0):
    body = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
        ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=-2)])])
    return call(state, body, 7).topics[0].partitions[0].offset


def fetched(state, offset):
    return fetch(state, offset=offset).responses[0].partitions[0]


def test_delete_records_moves_the_log_start_for_good(tmp_path):
    state = make_state(tmp_path)
    create(state, "t", partitions=2)
    plog = state.cluster.topics["t"].partitions[0].log
    for values in ([b"a", b"b"], [b"c", b"d"], [b"e"]):
        assert produce(state, batch(*values)).error_code == 0
        plog.roll()
    assert [s.base_offset for s in plog.segments] == [0, 2, 4, 5]
    assert delete_records(state, {0: 3, 1: -1}) == {0: (3, 0), 1: (0, 0)}
    # The first segment is wholly below the start, and gone; the second holds offset 3 and stays.
    assert [s.base_offset for s in plog.segments] == [2, 4, 5]
    assert not os.path.exists(os.path.join(plog.directory, "00000000000000000000.log"))
    assert earliest(state) == 3
    assert fetched(state, 1).error_code == errors.OFFSET_OUT_OF_RANGE.code
    assert fetched(state, 3).error_code == 0 and fetched(state, 3).log_start_offset == 3
    assert produce(state, batch(b"f")).log_start_offset == 3
    # An offset below the start leaves it; -1 is the high watermark; past it is out of range.
    assert delete_records(state, {0: 1}) == {0: (3, 0)}
    assert delete_records(state, {0: 7}) == {0: (-1, errors.OFFSET_OUT_OF_RANGE.code)}
    assert delete_records(state, {0: -2}) == {0: (-1, errors.OFFSET_OUT_OF_RANGE.code)}
    assert delete_records(state, {0: -1}) == {0: (6, 0)}
    state.close()
    state = make_state(tmp_path)
    try:
        assert earliest(state) == 6 and earliest(state, partition=1) == 0
        assert produce(state, batch(b"g")).base_offset == 6
    finally:
        state.close()


def test_delete_records_refusals(tmp_path):
    state = make_state(tmp_path)
    try:
        create(state, "t")
        create(state, "c", **{"cleanup.policy": "compact"})
        create(state, "cd", **{"cleanup.policy": "compact,delete"})
        for topic in ("c", "cd"):
            assert produce(state, batch(b"a"), topic=topic).error_code == 0
        assert delete_records(state, {0: 1}, topic="c") == {0: (-1, errors.POLICY_VIOLATION.code)}
        assert delete_records(state, {0: 1}, topic="cd") == {0: (1, 0)}
        assert delete_records(state, {0: 0, 3: 0}) == {0: (0, 0), 3: (-1, errors.UNKNOWN_TOPIC_OR_PARTITION.code)}
        assert delete_records(state, {0: 0}, topic="nope") == {0: (-1, errors.UNKNOWN_TOPIC_OR_PARTITION.code)}
    finally:
        state.close()


def offset_delete(state, group, asked):
    """(error code, {(topic, partition): error code}) of OffsetDelete for {topic: [partitions]}."""
    body = OffsetDeleteRequest(group_id=group, topics=[OffsetDeleteRequest.OffsetDeleteRequestTopic(
        name=name, partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=p) for p in parts])
        for name, parts in asked.items()])
    answer = call(state, body, 0)
    return answer.error_code, {(t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions}


def test_offset_delete_keeps_what_a_kip848_member_subscribes_to(tmp_path):
    """OffsetDelete in a KIP-848 group (the differential test covers classic groups): a topic a member subscribes
    to keeps its offsets; another topic's go; the group may have members."""
    state = make_state(tmp_path, **{"group.consumer.assignment.interval.ms": "0"})
    try:
        for name in ("t", "u"):
            create(state, name)
        member = Member(state, "m-1", topics=("t",))
        assert member.beat().error_code == 0
        commit = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=member.epoch, member_id="m-1",
                                     topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=name, partitions=[
                                         OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0,
                                                                                          committed_offset=1)])
                                         for name in ("t", "u")])
        assert all(p.error_code == 0 for t in call(state, commit, 9).topics for p in t.partitions)
        assert offset_delete(state, "g", {"t": [0], "u": [0]}) == (0, {
            ("t", 0): errors.GROUP_SUBSCRIBED_TO_TOPIC.code, ("u", 0): 0})
        assert set(state.groups.committed("g")) == {("t", 0)}
        assert offset_delete(state, "nope", {"t": [0]}) == (errors.GROUP_ID_NOT_FOUND.code, {})
    finally:
        state.close()


def finalized(state):
    from kafkaproto.messages import ApiVersionsRequest
    response = call(state, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4)
    return ({f.name: f.max_version_level for f in response.finalized_features},
            {k.api_key for k in response.api_keys})


def test_update_features_finalizes_levels_for_good(tmp_path):
    """kafka-features downgrade: transaction.version 1, group.version 0 and share.version 0 (which take
    ConsumerGroupHeartbeat and ConsumerGroupDescribe, and the share group APIs, out of ApiVersions, as Kafka does),
    kept over a restart, and back up again."""
    from kafkaproto.messages import ApiKey, UpdateFeaturesRequest
    Key = UpdateFeaturesRequest.FeatureUpdateKey
    state = make_state(tmp_path)
    levels, apis = finalized(state)
    assert levels == {"group.version": 1, "share.version": 1, "streams.version": 1, "transaction.version": 2}
    assert {ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.SHARE_FETCH} <= apis
    down = UpdateFeaturesRequest(timeout_ms=1000, feature_updates=[
        Key(feature="transaction.version", max_version_level=1, upgrade_type=2),
        Key(feature="group.version", max_version_level=0, upgrade_type=2),
        Key(feature="share.version", max_version_level=0, upgrade_type=2),
        Key(feature="streams.version", max_version_level=0, upgrade_type=2)])
    assert call(state, down, 1).error_code == 0
    state.close()
    state = make_state(tmp_path)
    levels, apis = finalized(state)
    assert levels == {"transaction.version": 1}
    assert not {ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_FETCH,
                ApiKey.STREAMS_GROUP_HEARTBEAT} & apis
    up = UpdateFeaturesRequest(timeout_ms=1000, feature_updates=[
        Key(feature="group.version", max_version_level=1, upgrade_type=1)])
    assert call(state, up, 2).error_code == 0 and finalized(state)[0]["group.version"] == 1
    state.close()


def test_quotas_throttle_producers_and_consumers_and_are_kept(tmp_path):
    """A client id's produce and fetch quotas: within them no throttle; the request that takes the client over
    is answered with a throttle time (a fetch with no data, as Kafka's); the quotas survive a restart and,
    removed, throttle no more. The rate is Kafka's: bytes over at least ten one-second windows."""
    from kafkaproto.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest, ProduceRequest
    from kafkaproto.broker.dispatch import Context, dispatch
    from kafkaproto import decode_request, encode_request
    from kafkaproto.messages import RequestHeader
    state = make_state(tmp_path)
    create(state, "t")
    Entity, Op = AlterClientQuotasRequest.EntityData, AlterClientQuotasRequest.OpData

    def quotas(remove=False):
        return AlterClientQuotasRequest(entries=[AlterClientQuotasRequest.EntryData(
            entity=[Entity(entity_type="client-id", entity_name="slow")],
            ops=[Op(key="producer_byte_rate", value=10_000, remove=remove),
                 Op(key="consumer_byte_rate", value=10_000, remove=remove)])])
    assert call(state, quotas(), 1).entries[0].error_code == 0

    def as_slow(body, version):
        header = RequestHeader(request_api_key=body.api_key, request_api_version=version, correlation_id=1,
                               client_id="slow")
        request = decode_request(encode_request(header, body, version)[4:])
        ctx = Context(state, request.header, final=True)
        response = dispatch(ctx, request.body)
        return type(response).decode(response.encode(version), version), ctx.throttle_ms

    def produced(size):
        body = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch(bytes(size)))])])
        return as_slow(body, 9)

    response, muted = produced(60_000)  # 6 kB/s over ten seconds: within
    assert response.throttle_time_ms == 0 == muted
    response, muted = produced(60_000)  # 12 kB/s: over by a fifth, a fifth of the window to wait
    assert 1500 <= response.throttle_time_ms <= 2500 and muted == response.throttle_time_ms
    from kafkaproto.messages import FetchRequest
    fetch_body = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                              session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic="t", partitions=[
                                  FetchRequest.FetchPartition(partition=0, fetch_offset=0,
                                                              partition_max_bytes=1 << 20)])])
    answer, muted = as_slow(fetch_body, 12)  # 120 kB read: over, so no data, and the wait
    assert answer.throttle_time_ms > 0 and answer.responses == [] and muted == answer.throttle_time_ms
    state.close()
    state = make_state(tmp_path)
    described = call(state, DescribeClientQuotasRequest(components=[], strict=False), 1).entries
    assert {v.key: v.value for v in described[0].values} == {"producer_byte_rate": 10_000,
                                                             "consumer_byte_rate": 10_000}
    assert call(state, quotas(remove=True), 1).entries[0].error_code == 0
    assert produced(500_000)[0].throttle_time_ms == 0
    assert not call(state, DescribeClientQuotasRequest(components=[], strict=False), 1).entries
    state.close()
