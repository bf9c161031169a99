"""Metadata: this broker as the only broker and controller, and the topics asked for.

Topics are asked for by name or, from v12, by topic ID (name null). A null
topic list (v1+) or an empty one at v0 means every topic. An unknown name is
created when the request (v4+, always before) and auto.create.topics.enable
allow it; an unknown ID is UNKNOWN_TOPIC_ID, with a null name.

The topics one request asks to create are checked together, against those
there were before it, as Kafka's controller checks them: two names of one
request may differ only by '.' and '_', but a name that collides so with an
existing topic's is not created, nor are the names of the broker's own logs
(``__cluster_metadata``, ``__consumer_offsets``, ``__transaction_state``).
Kafka answers UNKNOWN_TOPIC_OR_PARTITION for every topic its controller
refused, and flags the names of its internal topics (is_internal) even then.
``__consumer_offsets``, ``__transaction_state`` and ``__share_group_state``
are listed as topics, internal, once their coordinators made them
(state/internal_topics.py's serve_internal).

With an authorizer, every-topic requests list only the topics the client may DESCRIBE; one asked for by name
that it may not is TOPIC_AUTHORIZATION_FAILED whether it exists or not, and one it may describe but that does
not exist is created only with CREATE on the cluster or on the topic (else TOPIC_AUTHORIZATION_FAILED).
"""

from ... import errors
from ...messages import ApiKey, api
from ...uuid import Uuid
from ..dispatch import handles
from ..state import topic_name_error
from ..state.acls import CLUSTER, CLUSTER_NAME, CREATE, DESCRIBE, TOPIC
from ..state.cluster import INTERNAL_TOPICS

UNKNOWN_OPERATIONS = -2147483648


def describe_topic(state, topic, response=None, modes=False):
    """modes: give each partition's mode (partition deletion; the class must be the extension's)."""
    response = response or api(ApiKey.METADATA).response
    partitions = []
    for p in topic.partitions:
        partition = response.MetadataResponsePartition(
            error_code=(errors.NONE if p.leader >= 0 else errors.LEADER_NOT_AVAILABLE).code, partition_index=p.index,
            leader_id=p.leader, leader_epoch=p.leader_epoch, replica_nodes=p.replicas, isr_nodes=p.isr,
            offline_replicas=offline(state, p))
        if modes:
            partition.mode = p.mode
        partitions.append(partition)
    return response.MetadataResponseTopic(
        error_code=errors.NONE.code, name=topic.name, topic_id=topic.topic_id, is_internal=topic.is_internal,
        partitions=partitions, topic_authorized_operations=UNKNOWN_OPERATIONS)


def offline(state, partition):
    """The replicas of a partition on brokers that are stopped."""
    nodes = state.cluster.nodes
    return [node for node in partition.replicas if not nodes.is_alive(node)]


def unknown(error, name=None, topic_id=Uuid.ZERO, response=None):
    response = response or api(ApiKey.METADATA).response
    return response.MetadataResponseTopic(error_code=error.code, name=name, topic_id=topic_id, partitions=[],
                                          topic_authorized_operations=UNKNOWN_OPERATIONS)


@handles(ApiKey.METADATA, versions=range(0, 14))
def metadata(ctx, request):
    state = ctx.state
    # The class of the registry, an extension's when one amends Metadata (partition deletion adds the mode,
    # given to clients that ask for it with include_partition_modes).
    response = api(ApiKey.METADATA).response
    modes = bool(getattr(request, "include_partition_modes", False)) and state.config["delete.topic.partition.enable"]
    wanted = request.topics
    if wanted and ctx.version < 12 and any(item.name is None or item.topic_id.int for item in wanted):
        # Versions before 12 name topics by name only (v10 and v11 carry an id field that must be zero). Kafka
        # fails the whole request INVALID_REQUEST, and its error answer lists every topic asked for ("" for a
        # null name, and the id it was asked by) with that error and nothing else.
        return response(throttle_time_ms=0, brokers=[], cluster_id=None, controller_id=-1, topics=[
            response.MetadataResponseTopic(error_code=errors.INVALID_REQUEST.code, name=item.name or "",
                                           topic_id=item.topic_id, is_internal=False, partitions=[])
            for item in wanted])
    if wanted is None or (ctx.version == 0 and not wanted):
        topics = [describe_topic(state, t, response, modes) for t in state.cluster.topics.values()
                  if ctx.allowed(DESCRIBE, TOPIC, t.name)]
    else:
        allow_create = request.allow_auto_topic_creation if ctx.version >= 4 else True
        by_name = [item for item in wanted if item.name is not None and not item.topic_id.int]
        hidden = {item.name for item in by_name if not ctx.allowed(DESCRIBE, TOPIC, item.name)}
        not_creatable = set()
        if allow_create:  # together, so that they are checked against the topics before this request
            new = [item.name for item in by_name if item.name not in state.cluster.topics
                   and item.name not in hidden and not topic_name_error(item.name)]
            if new and not ctx.allowed(CREATE, CLUSTER, CLUSTER_NAME):
                not_creatable = {name for name in new if not ctx.allowed(CREATE, TOPIC, name)}
            state.auto_create([name for name in new if name not in not_creatable])
        # As Kafka lists them: those the client may see, then those it may not create, then those it may not see.
        refused = hidden | not_creatable
        topics = [_one(ctx, item, response, modes) for item in wanted
                  if item.topic_id.int or item.name not in refused]
        topics += [_refused(item.name, response) for item in by_name if item.name in not_creatable]
        topics += [_refused(item.name, response) for item in by_name if item.name in hidden]
    brokers = [response.MetadataResponseBroker(node_id=node, host=host, port=port, rack=None)
               for node, host, port in state.brokers(ctx.listener_name)]
    return response(throttle_time_ms=0, brokers=brokers, cluster_id=state.cluster.cluster_id,
                    controller_id=state.cluster.nodes.controller, topics=topics,
                    cluster_authorized_operations=UNKNOWN_OPERATIONS)


def _refused(name, response):
    answer = unknown(errors.TOPIC_AUTHORIZATION_FAILED, name, response=response)
    answer.is_internal = name in INTERNAL_TOPICS
    return answer


def _one(ctx, item, response, modes):
    state = ctx.state
    if item.topic_id.int:
        topic, error = state.topic(item.name, item.topic_id)
        if topic is None:
            return unknown(error, None, item.topic_id, response)
        if not ctx.allowed(DESCRIBE, TOPIC, topic.name):
            return unknown(errors.TOPIC_AUTHORIZATION_FAILED, None, item.topic_id, response)
        return describe_topic(state, topic, response, modes)
    if item.name is None:
        return unknown(errors.INVALID_REQUEST)
    topic = state.cluster.topics.get(item.name)
    if topic is None:
        if topic_name_error(item.name):
            return unknown(errors.INVALID_TOPIC_EXCEPTION, item.name, response=response)
        # Not made (auto-creation is off, or the name was refused), or the broker's own log of that name, which is
        # not a topic here: Kafka answers this for a topic it does not have, and flags its internal topics' names.
        answer = unknown(errors.UNKNOWN_TOPIC_OR_PARTITION, item.name, response=response)
        answer.is_internal = item.name in INTERNAL_TOPICS
        return answer
    return describe_topic(state, topic, response, modes)
