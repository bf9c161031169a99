"""Which broker of the cluster answers a request (state/replicas.py), and the answers of those that should not.

A partition's requests go to its leader: another broker answers NOT_LEADER_OR_FOLLOWER for it, naming the leader it
knows where the answer has room (KIP-951), and serves the request's other partitions as usual. A Fetch from a
consumer at v11 or later may also be served by a follower in the ISR, as Kafka serves one. A group's requests go to
the group coordinator, a transactional id's to the transaction coordinator, a share partition's state to the share
coordinator: each is the leader of its internal topic's partition (Kafka's hashing, over the one partition each has
here), and another broker answers NOT_COORDINATOR without carrying the request out. ListGroups and ListTransactions
list nothing on a broker that coordinates nothing.

A cluster of one broker routes nothing: dispatch asks only when there are several.
"""

from .. import errors
from ..messages import ApiKey
from ..registry import api
from .error_answers import add_partition_errors, set_errors, split, top_level_error
from .state.cluster import OFFSETS_TOPIC, SHARE_STATE_TOPIC, TRANSACTIONS_TOPIC
from .state.internal_topics import serve_internal
from .state.replicas import NO_LEADER

# The requests a partition's leader answers.
LED = frozenset({ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.OFFSET_FOR_LEADER_EPOCH,
                 ApiKey.DELETE_RECORDS, ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE})
GROUP_REQUESTS = frozenset({
    ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH, ApiKey.DESCRIBE_GROUPS, ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE, ApiKey.TXN_OFFSET_COMMIT,
    ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE, ApiKey.SHARE_GROUP_HEARTBEAT,
    ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, ApiKey.ALTER_SHARE_GROUP_OFFSETS, ApiKey.DELETE_SHARE_GROUP_OFFSETS})
TRANSACTION_REQUESTS = frozenset({ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN,
                                  ApiKey.DESCRIBE_TRANSACTIONS})
SHARE_STATE_REQUESTS = frozenset({
    ApiKey.INITIALIZE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE, ApiKey.WRITE_SHARE_GROUP_STATE,
    ApiKey.DELETE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY})
LISTS = {ApiKey.LIST_GROUPS: OFFSETS_TOPIC, ApiKey.LIST_TRANSACTIONS: TRANSACTIONS_TOPIC}


def coordinator(state, internal_topic):
    """The node coordinating what internal_topic keeps: the leader of its partition (made now if it is not yet, as
    Kafka makes it for the first key found), NO_LEADER when none runs."""
    topic = serve_internal(state.cluster, internal_topic)
    if topic is None:
        return state.cluster.nodes.controller
    return topic.partitions[0].leader


def led_elsewhere(ctx, partition):
    """Whether another broker leads partition: what the handlers of requests that name partitions by bare index
    (DescribeProducers, WriteTxnMarkers; split cannot take them apart) answer NOT_LEADER_OR_FOLLOWER for."""
    return ctx.state.routed and partition.leader != ctx.node_id


def route(ctx, body, run):
    """The answer to a request that came to ctx.node_id: run(body) for what this broker serves, and the answers of
    a broker that should not serve the rest. None when it serves all of it (the common case: run is not called)."""
    key = ctx.header.request_api_key
    if key in LED:
        return _led(ctx, body, run)
    internal = None
    if key in GROUP_REQUESTS:
        internal = OFFSETS_TOPIC
    elif key in TRANSACTION_REQUESTS or (key == ApiKey.INIT_PRODUCER_ID and body.transactional_id):
        internal = TRANSACTIONS_TOPIC
    elif key in SHARE_STATE_REQUESTS:
        internal = SHARE_STATE_TOPIC
    elif key in LISTS:
        listed = ctx.state.cluster.internal_topics.get(LISTS[key])  # not made by a listing: nothing to list yet
        if listed is None or listed.partitions[0].leader == ctx.node_id:
            return None
        answer = run(body)
        for attr in ("groups", "transaction_states"):
            if hasattr(answer, attr):
                setattr(answer, attr, [])
        return answer
    if internal is None or coordinator(ctx.state, internal) == ctx.node_id:
        return None
    return _not_coordinator(ctx, body, run)


def _not_coordinator(ctx, body, run):
    response = api(ctx.header.request_api_key).response
    code = errors.NOT_COORDINATOR.code
    answer = top_level_error(response, ctx.version, code)
    if answer is not None:
        return answer
    if ctx.header.request_api_key == ApiKey.DELETE_GROUPS:  # not carried out: each group answered
        return response(throttle_time_ms=0, results=[response.DeletableGroupResult(group_id=g, error_code=code)
                                                     for g in body.groups_names])
    found = split(body, lambda *_: True, ctx.state)
    if found is not None:  # OffsetCommit, TxnOffsetCommit: not carried out, each partition answered
        return add_partition_errors(response(throttle_time_ms=0), found[1], lambda *_: (code, None), ctx.version)
    # the describing requests (DescribeGroups, OffsetFetch v8+, the *GroupDescribe ones), which change nothing:
    # each group answered
    return set_errors(run(body), code, ctx.version)


def _led(ctx, body, run):
    state, node = ctx.state, ctx.node_id
    key = ctx.header.request_api_key
    follower_reads = key == ApiKey.FETCH and ctx.version >= 11 and _from_consumer(ctx, body)
    cluster = state.cluster

    def elsewhere(name, topic_id, index):
        topic = cluster.topics.get(name) if name is not None else cluster.by_id.get(topic_id)
        if topic is None or not 0 <= index < len(topic.partitions):
            return False  # the handler answers for what does not exist
        partition = topic.partitions[index]
        return partition.leader != node and not (follower_reads and node in partition.isr)

    found = split(body, elsewhere, state)
    if found is None:
        return None
    served, taken = found
    answer = run(served)
    if not hasattr(answer, "throttle_time_ms"):  # a Wait or a Close: nothing to add yet
        return answer

    def error_of(name, topic_id, index):
        topic = cluster.by_id.get(topic_id) if topic_id is not None else cluster.topics.get(name)
        partition = topic.partitions[index]
        if partition.leader == NO_LEADER:
            return errors.LEADER_NOT_AVAILABLE.code if key == ApiKey.LIST_OFFSETS else \
                errors.NOT_LEADER_OR_FOLLOWER.code, None
        return errors.NOT_LEADER_OR_FOLLOWER.code, (partition.leader, partition.leader_epoch)
    answer = add_partition_errors(answer, taken, error_of, ctx.version)
    _tell_leaders(ctx, answer, taken)
    return answer


def _from_consumer(ctx, body):
    if ctx.version >= 15:
        return body.replica_state is None or body.replica_state.replica_id < 0
    return body.replica_id < 0


def _tell_leaders(ctx, answer, taken):
    """KIP-951: the endpoints of the leaders an answer names, where it has room for them (Produce v10+, Fetch
    v16+)."""
    f = next((f for f in type(answer)._fields if f.attr == "node_endpoints"), None)
    if f is None or ctx.version not in f.versions:
        return
    cluster = ctx.state.cluster
    known = {e.node_id for e in answer.node_endpoints or ()}
    endpoints = list(answer.node_endpoints or ())
    for name, topic_id, indexes in taken:
        topic = cluster.by_id.get(topic_id) if topic_id is not None else cluster.topics.get(name)
        for index in indexes:
            leader = topic.partitions[index].leader
            if leader != NO_LEADER and leader not in known and (
                    leader == ctx.state.node_id or leader in ctx.state.advertised_by_node):
                known.add(leader)
                host, port = ctx.state.endpoint_for(ctx.listener_name, leader)
                endpoints.append(f.struct(node_id=leader, host=host, port=port, rack=None))
    answer.node_endpoints = endpoints
