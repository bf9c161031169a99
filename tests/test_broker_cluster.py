"""A cluster of several brokers in one process (state/replicas.py, routing.py), without sockets: where partitions
and coordinators are placed, what each broker answers for what it does not lead, and leaders that move when a
test moves them or stops a broker."""

import subprocess
import time
import uuid

import pytest

from kafkaproto import decode_request, encode_request, errors
from kafkaproto.broker import Broker
from kafkaproto.broker.config import BrokerConfig, Listener
from kafkaproto.broker.dispatch import Context, Wait, dispatch
from kafkaproto.broker.state import BrokerState
from kafkaproto.broker.state.internal_topics import serve_internal
from kafkaproto.broker.state.java_hashes import string_hash
from kafkaproto.broker.state.replicas import move_leader, start_node, stop_node
from kafkaproto.messages import (CreatePartitionsRequest, CreateTopicsRequest, DescribeClusterRequest,
                                 InitializeShareGroupStateRequest,
                                 DescribeGroupsRequest, FetchRequest, FindCoordinatorRequest, InitProducerIdRequest,
                                 JoinGroupRequest, ListGroupsRequest, ListOffsetsRequest, MetadataRequest,
                                 OffsetCommitRequest, OffsetFetchRequest, OffsetForLeaderEpochRequest, ProduceRequest,
                                 RequestHeader)
import kafka_jvm
import test_broker_go_clients as go_tests
from cluster_runs import three  # noqa: F401 - a fixture: three brokers, replicated three times
from test_broker_go_clients import go_clients  # noqa: F401 - a fixture
from test_broker_handlers import batch
from test_kafka_broker import RawClient

pytestmark = pytest.mark.above_the_codecs
NODES = (1, 2, 3)


@pytest.fixture
def cluster(tmp_path):
    state = BrokerState(BrokerConfig({"log.dirs": str(tmp_path), "kafkaproto.nodes": "3"}))
    state.advertised = [Listener("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT")]
    state.advertised_by_node = {n: [Listener("PLAINTEXT", "127.0.0.1", 9091 + n, "PLAINTEXT")] for n in (2, 3)}
    yield state
    state.close()


def call(state, body, version, node=1):
    """What broker node answers (through the codecs both ways)."""
    header = RequestHeader(request_api_key=body.api_key, request_api_version=version, correlation_id=7,
                           client_id="tests")
    request = decode_request(encode_request(header, body, version)[4:])
    response = dispatch(Context(state, request.header, final=True, node_id=node), request.body)
    if isinstance(response, Wait):
        return response
    return type(response).decode(response.encode(version), version)


def create(state, name, partitions, factor, node=1):
    answer = call(state, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=factor)], timeout_ms=1000), 7, node)
    assert answer.topics[0].error_code == 0, answer
    return state.cluster.topics[name]


def produce(state, topic, partition, node, version=11):
    body = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=batch(b"v"))])])
    return call(state, body, version, node).responses[0].partition_responses[0]


def test_metadata_lists_the_brokers_and_where_partitions_lead(cluster):
    topic = create(cluster, "spread", 3, 2)
    assert sorted(p.leader for p in topic.partitions) == [1, 2, 3]  # leaders spread over the brokers
    for p in topic.partitions:
        assert len(p.replicas) == 2 and p.isr == p.replicas and p.leader == p.replicas[0]
    for node in NODES:  # every broker tells the same
        answer = call(cluster, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="spread")]), 12,
                      node)
        assert [(b.node_id, b.port) for b in answer.brokers] == [(1, 9092), (2, 9093), (3, 9094)]
        assert answer.controller_id == 1
        assert [(p.leader_id, p.replica_nodes, p.isr_nodes) for p in answer.topics[0].partitions] == [
            (p.leader, p.replicas, p.isr) for p in topic.partitions]
    described = call(cluster, DescribeClusterRequest(), 0, 2)
    assert [b.broker_id for b in described.brokers] == [1, 2, 3]
    refused = call(cluster, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name="four", num_partitions=1, replication_factor=4)], timeout_ms=1000), 7).topics[0]
    assert refused.error_code == errors.INVALID_REPLICATION_FACTOR.code and "only 3 broker(s)" in \
        refused.error_message
    grown = call(cluster, CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
        name="spread", count=4, assignments=[CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=[3, 1])])],
        timeout_ms=1000), 3)
    assert grown.results[0].error_code == 0 and topic.partitions[3].replicas == [3, 1]


def test_only_the_leader_serves_a_partition(cluster):
    topic = create(cluster, "led", 2, 1)
    leader = topic.partitions[0].leader
    other = next(n for n in NODES if n != leader)
    refused = produce(cluster, "led", 0, other)
    assert refused.error_code == errors.NOT_LEADER_OR_FOLLOWER.code
    assert (refused.current_leader.leader_id, refused.current_leader.leader_epoch) == (leader, 0)  # KIP-951
    assert produce(cluster, "led", 0, leader).error_code == 0
    # one request, two partitions led by two brokers: the one led here is served, the other refused
    body = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name="led", partitions=[
        ListOffsetsRequest.ListOffsetsPartition(partition_index=i, timestamp=-1) for i in (0, 1)])])
    answered = {p.partition_index: (p.error_code, p.offset)
                for p in call(cluster, body, 7, leader).topics[0].partitions}
    assert answered[0] == (0, 1)
    assert answered[1] == ((0, 0) if topic.partitions[1].leader == leader
                           else (errors.NOT_LEADER_OR_FOLLOWER.code, -1))
    produce_v13 = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        topic_id=topic.topic_id, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch(b"x"))])])
    answer = call(cluster, produce_v13, 13, other)
    assert answer.responses[0].partition_responses[0].error_code == errors.NOT_LEADER_OR_FOLLOWER.code
    assert [(e.node_id, e.port) for e in answer.node_endpoints] == [(leader, 9091 + leader)]


def test_requests_naming_bare_partition_indexes_are_answered_by_the_leader(cluster):
    """DescribeProducers and WriteTxnMarkers name partitions by index only; another broker than the leader answers
    each NOT_LEADER_OR_FOLLOWER, as Kafka's replica manager does, and writes no marker."""
    from kafkaproto.messages import DescribeLogDirsRequest, DescribeProducersRequest, WriteTxnMarkersRequest
    topic = create(cluster, "bare", 2, 2)
    leader = topic.partitions[0].leader
    other = next(n for n in NODES if n != leader)
    producer = call(cluster, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4, leader)
    body = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="bare", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch(
            b"v", producer_id=producer.producer_id, epoch=producer.producer_epoch, sequence=0))])])
    assert call(cluster, body, 9, leader).responses[0].partition_responses[0].error_code == 0
    describe = DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(name="bare",
                                                                                      partition_indexes=[0])])

    def producers(node):
        found = call(cluster, describe, 0, node).topics[0].partitions[0]
        return found.error_code, [p.producer_id for p in found.active_producers]
    assert producers(leader) == (0, [producer.producer_id])
    assert producers(other) == (errors.NOT_LEADER_OR_FOLLOWER.code, [])
    marker = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=producer.producer_id, producer_epoch=producer.producer_epoch, transaction_result=False,
        coordinator_epoch=0, topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name="bare",
                                                                                   partition_indexes=[0])])])
    end = topic.partitions[0].log.log_end_offset
    assert call(cluster, marker, 1, other).markers[0].topics[0].partitions[0].error_code == \
        errors.NOT_LEADER_OR_FOLLOWER.code
    assert topic.partitions[0].log.log_end_offset == end  # nothing written
    assert call(cluster, marker, 1, leader).markers[0].topics[0].partitions[0].error_code == 0
    assert topic.partitions[0].log.log_end_offset == end + 1
    # DescribeLogDirs: each broker lists the partitions it holds a replica of
    for node in NODES:
        listed = call(cluster, DescribeLogDirsRequest(topics=None), 4, node).results[0].topics
        held = sorted(p.index for p in topic.partitions if node in p.replicas)
        assert sorted(p.partition_index for t in listed if t.name == "bare" for p in t.partitions) == held


def test_each_broker_describes_and_keeps_its_own_configs(tmp_path):
    """A broker's configs are described and altered at that broker (as Kafka's admin client sends them), another id
    refused; keys the process acts on are the first broker's or every broker's, the others kept per broker and
    across a restart."""
    from kafkaproto.messages import DescribeConfigsRequest, IncrementalAlterConfigsRequest
    config = {"log.dirs": str(tmp_path), "kafkaproto.nodes": "3"}

    def describe(state, name, node, key):
        body = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=4, resource_name=name, configuration_keys=[key])], include_synonyms=True)
        result = call(state, body, 4, node).results[0]
        return result.error_code, [(c.value, c.config_source) for c in result.configs]

    def alter(state, name, node, key, value):
        body = IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=4, resource_name=name, configs=[IncrementalAlterConfigsRequest.AlterableConfig(
                name=key, config_operation=0, value=value)])])
        result = call(state, body, 1, node).responses[0]
        return result.error_code, result.error_message

    state = BrokerState(BrokerConfig(config))
    try:
        assert describe(state, "2", 2, "num.io.threads") == (0, [("8", 5)])
        assert describe(state, "2", 1, "num.io.threads") == (errors.INVALID_REQUEST.code, [])
        assert alter(state, "2", 2, "num.io.threads", "4") == (0, None)
        assert describe(state, "2", 2, "num.io.threads") == (0, [("4", 2)])
        assert describe(state, "1", 1, "num.io.threads") == (0, [("8", 5)])
        refused = alter(state, "2", 2, "log.cleaner.backoff.ms", "100")
        assert refused[0] == errors.INVALID_REQUEST.code and "set for broker 1 or for every broker" in refused[1]
        assert alter(state, "2", 2, "num.io.threads", "0")[0] == errors.INVALID_REQUEST.code  # checked as Kafka
    finally:
        state.close()
    again = BrokerState(BrokerConfig(config))
    try:
        assert describe(again, "2", 2, "num.io.threads") == (0, [("4", 2)])
    finally:
        again.close()


def test_listing_groups_makes_no_internal_topic(cluster):
    for node in NODES:
        assert call(cluster, ListGroupsRequest(), 4, node).groups == []
    assert "__consumer_offsets" not in cluster.cluster.internal_topics


def test_a_moved_leader_fences_the_old_epoch(cluster):
    topic = create(cluster, "moved", 1, 2)
    partition = topic.partitions[0]
    old, follower = partition.replicas
    assert produce(cluster, "moved", 0, old).error_code == 0
    move_leader(cluster.cluster, partition, follower)
    assert (partition.leader, partition.leader_epoch) == (follower, 1)
    assert produce(cluster, "moved", 0, old).error_code == errors.NOT_LEADER_OR_FOLLOWER.code
    assert produce(cluster, "moved", 0, follower).error_code == 0
    # the new epoch began at the log's end: asked for epoch 0, the leader tells where it ended
    ended = call(cluster, OffsetForLeaderEpochRequest(replica_id=-1, topics=[
        OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic="moved", partitions=[
            OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0, current_leader_epoch=1,
                                                                 leader_epoch=0)])]), 4, follower)
    assert (ended.topics[0].partitions[0].error_code, ended.topics[0].partitions[0].end_offset) == (0, 1)
    # a consumer at v11+ may read from a follower in the ISR, as on Kafka; not from a broker without a replica
    third = next(n for n in NODES if n not in partition.replicas)
    fetch = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0, topics=[
        FetchRequest.FetchTopic(topic="moved", partitions=[FetchRequest.FetchPartition(
            partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
    assert call(cluster, fetch, 12, old).responses[0].partitions[0].error_code == 0
    assert call(cluster, fetch, 12, third).responses[0].partitions[0].error_code == \
        errors.NOT_LEADER_OR_FOLLOWER.code
    assert call(cluster, fetch, 10, old).responses[0].partitions[0].error_code == errors.NOT_LEADER_OR_FOLLOWER.code


def test_a_stopped_broker_hands_its_partitions_on_and_takes_them_back(cluster):
    topic = create(cluster, "failover", 3, 2)
    led = [p for p in topic.partitions if p.leader == 2]
    stop_node(cluster.cluster, 2)
    assert all(p.leader != 2 and 2 not in p.isr for p in topic.partitions)
    assert all(p.leader_epoch == 1 for p in led)
    answer = call(cluster, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="failover")]), 12)
    assert [b.node_id for b in answer.brokers] == [1, 3]
    assert {2} == {n for p in answer.topics[0].partitions for n in p.offline_replicas}
    start_node(cluster.cluster, 2)
    assert all(2 in p.isr for p in topic.partitions if 2 in p.replicas)
    assert all(p.leader != 2 for p in led), "leaders stay where they went (no preferred election)"
    # a partition whose only replica stops has no leader
    single = create(cluster, "single", 1, 1)
    stop_node(cluster.cluster, single.partitions[0].leader)
    answer = call(cluster, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="single")]), 12, 1 if
                  single.partitions[0].isr != [1] else 2)
    assert answer.topics[0].partitions[0].error_code == errors.LEADER_NOT_AVAILABLE.code


def coordinating(state, internal_topic, key):
    """The partition of an internal topic that coordinates key, by Kafka's hashing (written out here, not the
    broker's): Utils.abs(key.hashCode()) % partitions."""
    partitions = serve_internal(state.cluster, internal_topic).partitions
    h = string_hash(key)
    return partitions[(0 if h == -2**31 else abs(h)) % len(partitions)]


def test_coordinators_spread_as_kafkas_hashing_spreads_them(cluster):
    """Kafka's 50 partitions on a cluster; their leaders striped over the brokers; FindCoordinator names, for each
    of many groups and transactional ids, the leader of the partition Kafka would keep it in."""
    keys = [f"group-{i}" for i in range(200)]
    found = call(cluster, FindCoordinatorRequest(key_type=0, coordinator_keys=keys), 4, 2).coordinators
    offsets = serve_internal(cluster.cluster, "__consumer_offsets").partitions
    assert len(offsets) == 50 and [p.leader for p in offsets[:4]] == [1, 2, 3, 1]
    assert sorted(len([p for p in offsets if p.leader == n]) for n in NODES) == [16, 17, 17]
    assert [(c.key, c.node_id) for c in found] == [(k, coordinating(cluster, "__consumer_offsets", k).leader)
                                                   for k in keys]
    assert {c.node_id for c in found} == set(NODES), "groups have coordinators on every broker"
    found = call(cluster, FindCoordinatorRequest(key_type=1, coordinator_keys=keys), 4, 1).coordinators
    assert [c.node_id for c in found] == [coordinating(cluster, "__transaction_state", k).leader for k in keys]
    # Java's hash of this name is Integer.MIN_VALUE, whose Utils.abs is 0
    assert string_hash("polygenelubricants") == -2**31
    assert coordinating(cluster, "__consumer_offsets", "polygenelubricants") is offsets[0]


def test_a_broker_is_the_coordinator_of_its_keys_only(cluster):
    offsets = coordinating(cluster, "__consumer_offsets", "g")
    found = call(cluster, FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4, 3).coordinators[0]
    assert (found.error_code, found.node_id, found.port) == (0, offsets.leader, 9091 + offsets.leader)
    elsewhere = next(n for n in NODES if n != offsets.leader)
    join = JoinGroupRequest(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                            protocol_type="consumer", protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                                name="range", metadata=b"")])
    assert call(cluster, join, 6, elsewhere).error_code == errors.NOT_COORDINATOR.code
    assert call(cluster, join, 6, offsets.leader).error_code == errors.MEMBER_ID_REQUIRED.code
    commit = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=i, committed_offset=5) for i in (0, 1)])])
    refused = call(cluster, commit, 8, elsewhere).topics
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in refused] == [
        ("t", [(0, errors.NOT_COORDINATOR.code), (1, errors.NOT_COORDINATOR.code)])]
    fetched = call(cluster, OffsetFetchRequest(group_id="g", topics=None), 7, offsets.leader)
    assert fetched.topics == [], "a commit refused by another broker is not carried out"
    # a request naming groups of several coordinators: each answered by its own, in its place
    groups = ["g"] + [next(f"g{i}" for i in range(100) if coordinating(cluster, "__consumer_offsets",
                                                                        f"g{i}").leader == n) for n in NODES]
    for node in NODES:
        described = call(cluster, DescribeGroupsRequest(groups=groups), 5, node)
        here = [coordinating(cluster, "__consumer_offsets", g).leader == node for g in groups]
        assert [(g.group_id, g.error_code, g.group_state) for g in described.groups] == [
            (g, 0, "Empty" if g == "g" else "Dead") if ours else (g, errors.NOT_COORDINATOR.code, "")
            for g, ours in zip(groups, here)]
        fetched = call(cluster, OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
            group_id=g, topics=None) for g in groups]), 9, node)
        assert [(g.group_id, g.error_code) for g in fetched.groups] == [
            (g, 0 if coordinating(cluster, "__consumer_offsets", g).leader == node else errors.NOT_COORDINATOR.code)
            for g in groups]
    # the listing: each broker lists the groups it coordinates
    listed = {n: sorted(g.group_id for g in call(cluster, ListGroupsRequest(), 4, n).groups) for n in NODES}
    assert listed[offsets.leader] == ["g"] and all(not listed[n] for n in NODES if n != offsets.leader)
    move_leader(cluster.cluster, offsets, elsewhere)  # the coordinator moves
    found = call(cluster, FindCoordinatorRequest(key="g"), 3, 1)
    assert found.node_id == elsewhere
    assert call(cluster, join, 6, elsewhere).error_code == errors.MEMBER_ID_REQUIRED.code
    transactional = InitProducerIdRequest(transactional_id="t", transaction_timeout_ms=10000)
    txn_node = coordinating(cluster, "__transaction_state", "t").leader
    not_there = next(n for n in NODES if n != txn_node)
    assert call(cluster, transactional, 4, not_there).error_code == errors.NOT_COORDINATOR.code
    assert call(cluster, transactional, 4, txn_node).error_code == 0
    idempotent = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=10000)
    assert call(cluster, idempotent, 4, not_there).error_code == 0  # any broker gives an idempotent producer its id


def cluster_state(tmp_path, **settings):
    state = BrokerState(BrokerConfig({"log.dirs": str(tmp_path), "kafkaproto.nodes": "3", **settings}))
    state.advertised = [Listener("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT")]
    return state


def commit(state, group, offset):
    node = coordinating(state, "__consumer_offsets", group).leader
    body = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])])
    assert call(state, body, 8, node).topics[0].partitions[0].error_code == 0


def test_each_group_is_kept_in_its_own_partition_across_restarts(tmp_path):
    """Each group's records go to the directory of its partition; they are read back from there, and the topic
    keeps its 50 partitions whatever the setting says once it was made. A data directory made by a broker alone
    (one partition) keeps its one partition on a cluster, every group coordinated by its leader."""
    groups = [f"kept-{i}" for i in range(8)]
    cluster_state(tmp_path, **{"offsets.topic.num.partitions": "70"}).close()  # made, never served: not kept
    state = cluster_state(tmp_path)
    try:
        create(state, "t", 1, 3)
        for i, group in enumerate(groups):
            commit(state, group, 10 + i)
        where = {g: coordinating(state, "__consumer_offsets", g).index for g in groups}
    finally:
        state.close()
    assert len(set(where.values())) > 1, "the groups landed in several partitions"
    for group, index in where.items():  # the records are in that partition's log and no other
        holding = [p.name for p in sorted(tmp_path.glob("__consumer_offsets-*"))
                   if group.encode() in b"".join(f.read_bytes() for f in p.glob("*.log"))]
        assert holding == [f"__consumer_offsets-{index}"]
    again = cluster_state(tmp_path, **{"offsets.topic.num.partitions": "7"})
    try:
        assert len(serve_internal(again.cluster, "__consumer_offsets").partitions) == 50
        for i, group in enumerate(groups):
            node = coordinating(again, "__consumer_offsets", group).leader
            fetched = call(again, OffsetFetchRequest(group_id=group, topics=None), 7, node)
            assert [(t.name, [p.committed_offset for p in t.partitions]) for t in fetched.topics] == [("t", [10 + i])]
    finally:
        again.close()
    alone_dir = tmp_path / "alone"
    alone = BrokerState(BrokerConfig({"log.dirs": str(alone_dir)}))
    try:
        create(alone, "t", 1, 1)
        commit(alone, "g", 5)
    finally:
        alone.close()
    grown = cluster_state(alone_dir)
    try:
        offsets = serve_internal(grown.cluster, "__consumer_offsets").partitions
        assert len(offsets) == 1
        found = call(grown, FindCoordinatorRequest(key_type=0, coordinator_keys=groups), 4).coordinators
        assert {c.node_id for c in found} == {offsets[0].leader}
    finally:
        grown.close()


def test_share_states_are_kept_by_the_coordinator_of_each_share_partition(cluster):
    """A share-state request naming share partitions of several coordinators is served by a broker for those it
    coordinates, NOT_COORDINATOR for the others."""
    topic = create(cluster, "shared", 6, 3)
    keys = [f"g:{topic.topic_id}:{i}" for i in range(6)]
    coordinators = [c.node_id for c in call(cluster, FindCoordinatorRequest(key_type=2, coordinator_keys=keys), 6,
                                            1).coordinators]
    assert coordinators == [coordinating(cluster, "__share_group_state", k).leader for k in keys]
    assert len(set(coordinators)) > 1
    body = InitializeShareGroupStateRequest(group_id="g", topics=[InitializeShareGroupStateRequest.InitializeStateData(
        topic_id=topic.topic_id, partitions=[InitializeShareGroupStateRequest.PartitionData(
            partition=i, state_epoch=1, start_offset=0) for i in range(6)])])
    for node in NODES:
        answer = call(cluster, body, 0, node)
        assert sorted((p.partition, p.error_code) for t in answer.results for p in t.partitions) == [
            (i, 0 if coordinators[i] == node else errors.NOT_COORDINATOR.code) for i in range(6)]
    assert sorted(k[2] for k in cluster.shares.partitions) == list(range(6)), "each initialized once, where it lives"


def test_leadership_is_kept_across_a_restart(tmp_path):
    config = {"log.dirs": str(tmp_path), "kafkaproto.nodes": "3"}
    state = BrokerState(BrokerConfig(config))
    state.advertised = [Listener("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT")]
    try:
        topic = create(state, "kept", 2, 3)
        move_leader(state.cluster, topic.partitions[1], 3)
        kept = [(p.replicas, p.isr, p.leader, p.leader_epoch, p.partition_epoch) for p in topic.partitions]
        # and a coordinator moved: its internal topic has no TopicRecord, but its changes are kept too
        call(state, FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4)
        offsets = state.cluster.internal_topics["__consumer_offsets"].partitions[0]
        move_leader(state.cluster, offsets, 2)
        coordinator = (offsets.leader, offsets.leader_epoch, offsets.isr)
    finally:
        state.close()
    again = BrokerState(BrokerConfig(config))
    try:
        assert [(p.replicas, p.isr, p.leader, p.leader_epoch, p.partition_epoch)
                for p in again.cluster.topics["kept"].partitions] == kept
        offsets = serve_internal(again.cluster, "__consumer_offsets").partitions[0]
        assert (offsets.leader, offsets.leader_epoch, offsets.isr) == coordinator == (2, 1, [1, 2, 3])
    finally:
        again.close()
    # fewer brokers than the coordinator's: it goes back to the first, rather than to no one
    fewer = BrokerState(BrokerConfig({**config, "kafkaproto.nodes": "1"}))
    try:
        assert serve_internal(fewer.cluster, "__consumer_offsets").partitions[0].leader == 1
    finally:
        fewer.close()


# ---- a cluster served on sockets, with real clients ------------------------------------------------------------

def test_three_brokers_on_three_ports(three):
    assert sorted(three.nodes) == [1, 2, 3] and len({port for _, port in three.nodes.values()}) == 3
    for _, port in three.nodes.values():
        client = RawClient(port)
        try:
            answer = client.call(MetadataRequest(topics=[]), 12).body
            assert [(b.node_id, b.port) for b in answer.brokers] == [(n, p) for n, (_, p) in sorted(
                three.nodes.items())]
        finally:
            client.close()
    three.stop_node(2)
    with pytest.raises(OSError):
        RawClient(three.nodes[2][1])
    client = RawClient(three.nodes[1][1])
    try:
        assert [b.node_id for b in client.call(MetadataRequest(topics=[]), 12).body.brokers] == [1, 3]
    finally:
        client.close()
    three.start_node(2)
    RawClient(three.nodes[2][1]).close()


def test_an_idempotent_producer_and_a_group_through_leader_and_coordinator_moves(three):
    """librdkafka's idempotent producer writes while the partition's leader moves, a broker stops and starts, and
    the group coordinator moves; a consumer group then reads every acknowledged record exactly once."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    import threading

    from confluent_kafka.admin import AdminClient, NewTopic
    topic = f"moves-{uuid.uuid4().hex[:8]}"
    producer = confluent_kafka.Producer({"bootstrap.servers": three.bootstrap_servers, "enable.idempotence": True,
                                         "linger.ms": 5, "retry.backoff.ms": 50, "topic.metadata.refresh.interval.ms":
                                         1000})
    acknowledged, failed = [], []

    def delivered(error, message):
        (failed if error else acknowledged).append(error or message.value())
    done = threading.Event()

    def produce():
        sent = 0
        while not done.is_set() or sent < 300:
            producer.produce(topic, str(sent).encode(), on_delivery=delivered)
            producer.poll(0)
            sent += 1
            time.sleep(0.005)
        producer.flush(30)
    admin = AdminClient({"bootstrap.servers": three.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(10)
    writer = threading.Thread(target=produce)
    writer.start()
    time.sleep(0.5)
    leader, _ = three.leader(topic)
    three.move_leader(topic, 0, leader % 3 + 1)
    time.sleep(0.5)
    leader, epoch = three.leader(topic)
    three.stop_node(leader)
    assert three.leader(topic)[0] != leader and three.leader(topic)[1] == epoch + 1
    time.sleep(0.5)
    three.start_node(leader)
    done.set()
    writer.join(60)
    assert not failed and len(acknowledged) >= 300
    consumer = confluent_kafka.Consumer({"bootstrap.servers": three.bootstrap_servers, "group.id": topic,
                                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    read = []
    deadline = time.monotonic() + 60
    moved = False
    while len(read) < len(acknowledged) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None or message.error():
            continue
        read.append(message.value())
        consumer.commit(message, asynchronous=False)
        if len(read) == len(acknowledged) // 2 and not moved:
            three.move_coordinator("group", three.coordinator("group", topic) % 3 + 1, topic)
            moved = True
    consumer.close()
    assert moved and sorted(read, key=int) == sorted(acknowledged, key=int), "each acknowledged record once"


@pytest.fixture(scope="module")
def java_clients():
    """Kafka 4.3.1's Java clients (tests/kafka/Clients.java; test_broker_clients.py runs 3.9.2's too)."""
    return kafka_jvm.program("4.3.1", "Clients")


def test_java_clients_across_three_brokers(three, java_clients):
    """Kafka's Java clients run their whole sequence (admin, an idempotent producer, transactions, a read_committed
    group, delete) on the cluster, whose partitions and coordinators are spread over three brokers, while a
    partition's leader moves between two of the runs."""
    bootstrap = three.bootstrap_servers
    topic = f"java-three-{uuid.uuid4().hex[:8]}"
    for mode in ("admin", "produce", "txn", "consume", "delete"):
        run = subprocess.run(["java", "-cp", java_clients, "Clients", bootstrap, mode, topic], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, f"Java {mode} failed:\n{run.stderr[-3000:]}"
        if mode == "produce":
            leader, _ = three.leader(topic, 1)
            three.move_leader(topic, 1, leader % 3 + 1)


def test_kafka_python_through_a_leader_move_and_a_stopped_coordinator(three):
    """kafka-python's idempotent producer and a consumer group carry on when the partition's leader moves and the
    broker coordinating the group stops: every acknowledged record is read once."""
    kafka = pytest.importorskip("kafka")
    topic = f"kp-three-{uuid.uuid4().hex[:8]}"
    admin = kafka.KafkaAdminClient(bootstrap_servers=three.bootstrap_servers)
    admin.create_topics([kafka.admin.NewTopic(topic, 2, 3)])
    admin.close()
    producer = kafka.KafkaProducer(bootstrap_servers=three.bootstrap_servers, acks="all", enable_idempotence=True,
                                   retry_backoff_ms=50)
    sent = [producer.send(topic, str(i).encode()) for i in range(50)]
    leader, _ = three.leader(topic, 0)
    three.move_leader(topic, 0, leader % 3 + 1)
    sent += [producer.send(topic, str(i).encode()) for i in range(50, 100)]
    acknowledged = [future.get(30).offset >= 0 for future in sent]
    producer.close()
    assert all(acknowledged)
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=three.bootstrap_servers, group_id=topic,
                                   auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=20000)
    read = []
    coordinator = None
    for message in consumer:
        read.append(int(message.value))
        consumer.commit()
        if len(read) == 40 and coordinator is None:
            coordinator = three._on_loop(lambda: serve_internal(
                three._state.cluster, "__consumer_offsets").partitions[0].leader)
            three.stop_node(coordinator)
        if len(read) == 100:
            break
    consumer.close()
    three.start_node(coordinator)
    assert sorted(read) == list(range(100))


def test_the_command_serves_a_cluster(tmp_path):
    """`python -m kafkaproto.broker --nodes 2` (as Broker(subprocess=True) runs it, through kafkaproto.nodes)."""
    with Broker({"log.dirs": str(tmp_path)}, subprocess=True, nodes=2) as running:
        client = RawClient(running.port)
        try:
            brokers = client.call(MetadataRequest(topics=[]), 12).body.brokers
        finally:
            client.close()
        assert [b.node_id for b in brokers] == [1, 2] and brokers[0].port == running.port
        second = RawClient(brokers[1].port)
        second.close()


def test_preferred_and_unclean_elections_and_reassignments(cluster):
    from kafkaproto.messages import AlterPartitionReassignmentsRequest, ElectLeadersRequest
    topic = create(cluster, "elect", 1, 2)
    partition = topic.partitions[0]
    preferred, other = partition.replicas

    def elect(kind, asked=True):
        body = ElectLeadersRequest(election_type=kind, timeout_ms=1000, topic_partitions=[
            ElectLeadersRequest.TopicPartitions(topic="elect", partitions=[0])] if asked else None)
        results = call(cluster, body, 2).replica_election_results
        return [(r.topic, [(p.partition_id, p.error_code) for p in r.partition_result]) for r in results
                if r.topic == "elect"]
    assert elect(0) == [("elect", [(0, errors.ELECTION_NOT_NEEDED.code)])]
    move_leader(cluster.cluster, partition, other)
    assert elect(0, asked=False) == [("elect", [(0, 0)])] and partition.leader == preferred
    stop_node(cluster.cluster, preferred)
    stop_node(cluster.cluster, other)
    assert partition.leader == -1
    assert elect(1) == [("elect", [(0, errors.ELIGIBLE_LEADERS_NOT_AVAILABLE.code)])]
    start_node(cluster.cluster, other)  # a replica back: it leads again at once
    assert partition.leader == other
    assert elect(0) == [("elect", [(0, errors.PREFERRED_LEADER_NOT_AVAILABLE.code)])]
    start_node(cluster.cluster, preferred)
    third = next(n for n in NODES if n not in partition.replicas)
    body = AlterPartitionReassignmentsRequest(timeout_ms=1000, topics=[
        AlterPartitionReassignmentsRequest.ReassignableTopic(name="elect", partitions=[
            AlterPartitionReassignmentsRequest.ReassignablePartition(partition_index=0, replicas=[third, preferred])])])
    answer = call(cluster, body, 0).responses[0].partitions[0]
    # its leader is not one of the new replicas: the first running one leads
    assert answer.error_code == 0 and partition.replicas == [third, preferred] and partition.leader == third
    body.topics[0].partitions[0].replicas = [third]
    body.allow_replication_factor_change = False
    assert call(cluster, body, 1).responses[0].partitions[0].error_code == errors.INVALID_REPLICATION_FACTOR.code
    assert partition.replicas == [third, preferred]


def _franz_admin(go_clients, servers):  # noqa: F811 - the imported fixture's name
    """kadm's scenario (test_franz_go_admin's) on three brokers: the same, but each topic's three partitions are led
    by the three brokers."""
    result = go_tests.run(go_clients, "franz", servers, "admin")
    assert result["created_again"] == "TOPIC_ALREADY_EXISTS" and result["grown"] == ""
    listed = {name: topic for name, topic in result["listed"].items() if not name.endswith("-validated")}
    assert len(listed) == 2
    for topic in listed.values():
        assert topic["error"] == "" and topic["partitions"] == 3 and sorted(topic["leaders"]) == [1, 2, 3]
    assert set(result["deleted"].values()) == {""} and result["deleted_again"] == "UNKNOWN_TOPIC_OR_PARTITION"


GO_SCENARIOS = {"franz-produce": lambda go, servers: go_tests.test_franz_go_idempotent_produce(go, servers, "lz4"),
                "franz-group": lambda go, servers: go_tests.test_franz_go_consumer_group(go, servers, "kip848"),
                "franz-transaction": go_tests.test_franz_go_transaction_read_committed,
                "franz-admin": lambda go, servers: _franz_admin(go, servers),
                "sarama-produce": go_tests.test_sarama_idempotent_produce,
                "sarama-group": go_tests.test_sarama_consumer_group}


@pytest.mark.parametrize("scenario", GO_SCENARIOS)
def test_go_clients_on_three_brokers(three, go_clients, scenario):  # noqa: F811 - the imported fixture
    """franz-go's and Sarama's scenarios (tests/go), with their checks, on the cluster: every partition replicated
    three times and led by one of three brokers, the coordinators on one of them. The programs take one address
    (the first broker's) and find the others in Metadata."""
    GO_SCENARIOS[scenario](go_clients, f"{three.host}:{three.port}")
