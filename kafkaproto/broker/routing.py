"""Which broker of the cluster answers a request (state/replicas.py), and the answers of those that should not.

A partition's requests go to its leader: another broker answers NOT_LEADER_OR_FOLLOWER for it, naming the leader it
knows where the answer has room (KIP-951), and serves the request's other partitions as usual. A Fetch from a
consumer at v11 or later may also be served by a follower in the ISR, as Kafka serves one. A group's requests go to
the group coordinator, a transactional id's to the transaction coordinator, a share partition's state to the share
coordinator: each is the leader of the partition of its internal topic that Kafka's hashing picks for the key
(state/coordinator_logs.py), and another broker answers NOT_COORDINATOR without carrying the request out. A request
naming several groups or transactional ids is served for those coordinated here and answered NOT_COORDINATOR for
the others, each in its place. ListGroups and ListTransactions list what the broker coordinates.

A cluster of one broker routes nothing: dispatch asks only when there are several.
"""

import copy

from .. import errors
from ..messages import ApiKey
from ..registry import api
from .outcomes import Close, Wait
from .error_answers import add_partition_errors, set_errors, split, top_level_error
from .state.coordinator_logs import OFFSETS_TOPIC, SHARE_STATE_TOPIC, TRANSACTIONS_TOPIC, partition_for, share_key
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
# What a listing answers with: (internal topic, the answer's list, its entries' key)
LISTS = {ApiKey.LIST_GROUPS: (OFFSETS_TOPIC, "groups", "group_id"),
         ApiKey.LIST_TRANSACTIONS: (TRANSACTIONS_TOPIC, "transaction_states", "transactional_id")}
# The requests naming several keys: (from version, the request's list, its entries' key (None: the entries are the
# keys), the answer's list, its entries' key)
SEVERAL = {
    ApiKey.DESCRIBE_GROUPS: (0, "groups", None, "groups", "group_id"),
    ApiKey.DELETE_GROUPS: (0, "groups_names", None, "results", "group_id"),
    ApiKey.OFFSET_FETCH: (8, "groups", "group_id", "groups", "group_id"),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, "group_ids", None, "groups", "group_id"),
    ApiKey.SHARE_GROUP_DESCRIBE: (0, "group_ids", None, "groups", "group_id"),
    ApiKey.STREAMS_GROUP_DESCRIBE: (0, "group_ids", None, "groups", "group_id"),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (0, "groups", "group_id", "groups", "group_id"),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, "transactional_ids", None, "transaction_states", "transactional_id"),
    ApiKey.ADD_PARTITIONS_TO_TXN: (4, "transactions", "transactional_id", "results_by_transaction",
                                   "transactional_id"),
}


def coordinator(state, internal_topic, key):
    """The node coordinating key (a group id, a transactional id, a share partition's key) of internal_topic: the
    leader of the partition Kafka's hashing picks (the topic made now if it is not yet, as Kafka makes it for the
    first key found), NO_LEADER when none runs."""
    topic = serve_internal(state.cluster, internal_topic)
    if topic is None:
        return state.cluster.nodes.controller
    return topic.partitions[partition_for(key, len(topic.partitions))].leader


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
    if key in LISTS:
        return _listed(ctx, body, run, *LISTS[key])
    if key in SHARE_STATE_REQUESTS:
        return _share_states(ctx, body, run)
    if key in GROUP_REQUESTS:
        internal = OFFSETS_TOPIC
    elif key in TRANSACTION_REQUESTS or (key == ApiKey.INIT_PRODUCER_ID and body.transactional_id):
        internal = TRANSACTIONS_TOPIC
    else:
        return None
    several = SEVERAL.get(key)
    if several is not None and ctx.version >= several[0]:
        return _several(ctx, body, run, internal, *several[1:])
    asked = body.v3_and_below_transactional_id if key == ApiKey.ADD_PARTITIONS_TO_TXN else \
        body.transactional_id if internal == TRANSACTIONS_TOPIC else body.group_id
    if coordinator(ctx.state, internal, asked) == ctx.node_id:
        return None
    return _not_coordinator(ctx, body, run)


def _listed(ctx, body, run, internal, listed, key_attr):
    """ListGroups, ListTransactions: what this broker coordinates."""
    topic = ctx.state.cluster.internal_topics.get(internal)  # not made by a listing: nothing to list yet
    if topic is None or all(p.leader == ctx.node_id for p in topic.partitions):
        return None
    answer = run(body)
    if hasattr(answer, listed):
        setattr(answer, listed, [entry for entry in getattr(answer, listed) or ()
                                 if coordinator(ctx.state, internal, getattr(entry, key_attr)) == ctx.node_id])
    return answer


def _several(ctx, body, run, internal, asked_attr, asked_key, listed, key_attr):
    """A request naming several keys: run for those coordinated here; NOT_COORDINATOR for each of the others (not
    carried out), in its place."""
    asked = getattr(body, asked_attr) or []

    def key_of(entry):
        return entry if asked_key is None else getattr(entry, asked_key)
    here = [entry for entry in asked if coordinator(ctx.state, internal, key_of(entry)) == ctx.node_id]
    if len(here) == len(asked):
        return None
    served = copy.copy(body)
    setattr(served, asked_attr, here)
    answer = run(served)
    if isinstance(answer, (Wait, Close)):
        return answer
    struct = next(f.struct for f in type(answer)._fields if f.attr == listed)
    answered = {}
    for entry in getattr(answer, listed) or ():
        answered.setdefault(getattr(entry, key_attr), []).append(entry)
    entries = []
    for entry in asked:
        key = key_of(entry)
        if answered.get(key):
            entries.append(answered[key].pop(0))
        else:
            entries.append(_not_coordinator_entry(struct, key_attr, key, entry, ctx.version))
    answer = copy.copy(answer)
    setattr(answer, listed, entries)
    return answer


def _not_coordinator_entry(struct, key_attr, key, asked, version):
    """An answer's entry for a key coordinated elsewhere: NOT_COORDINATOR in each of its error codes, and for each
    partition the request named under it (AddPartitionsToTxn v4+)."""
    entry = struct()
    setattr(entry, key_attr, key)
    topics = getattr(asked, "topics", None) if not isinstance(asked, str) else None
    if topics:
        taken = [(t.name, None, list(t.partitions)) for t in topics]
        entry = add_partition_errors(entry, taken, lambda *_: (errors.NOT_COORDINATOR.code, None), version)
    return set_errors(entry, errors.NOT_COORDINATOR.code, version)


def _share_states(ctx, body, run):
    """The share-state requests name share partitions, each found by its own key: served for those this broker
    coordinates, NOT_COORDINATOR for the others."""
    def elsewhere(name, topic_id, index):
        return coordinator(ctx.state, SHARE_STATE_TOPIC, share_key(body.group_id, topic_id, index)) != ctx.node_id
    found = split(body, elsewhere, ctx.state)
    if found is None:
        return None
    served, taken = found
    answer = run(served)
    if isinstance(answer, (Wait, Close)):
        return answer
    return add_partition_errors(answer, taken, lambda *_: (errors.NOT_COORDINATOR.code, None), ctx.version)


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
