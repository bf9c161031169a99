"""CreateTopics: each new topic gets a fresh random topic ID (returned from v7) and its partition directories.

num_partitions -1 takes num.partitions (v4+); the replication factor must be
1 or -1, and explicit assignments may name this broker only. Configs must be
topic configs this broker knows. validate_only checks without creating.
From v5 the result carries the partition count, replication factor and the
topic's effective configs.

Kafka's controller limits a request to 10,000 partitions in all (POLICY_VIOLATION for every topic, nothing
made), and to 10,000 metadata records: a topic takes one, plus one per config and one per partition, so one
topic of 10,000 partitions is already too many (POLICY_VIOLATION again, whether validate_only or not).

A topic that cannot be made on disk (out of descriptors or space, say) is
answered UNKNOWN_SERVER_ERROR with the reason, and nothing of it is left.

Names are refused as Kafka 3.9 and 4.3 refuse them, with their codes and
messages: a name given twice is not created and is answered once, INVALID_REQUEST
"Duplicate topic name.", after the other topics (several in the order of a
Java HashSet); ``__cluster_metadata`` is INVALID_REQUEST after those;
``__consumer_offsets`` and ``__transaction_state``, the broker's own logs here
and Kafka's internal topics, exist (TOPIC_ALREADY_EXISTS, "Topic 'x' already
exists."), as does any topic of the name; and a name that is an existing
topic's once '.' and '_' are made alike is INVALID_TOPIC_EXCEPTION ("Topic 'a_b'
collides with existing topic: a.b"). The topics of one request are checked
against those before it, so two of them may collide with each other.

With an authorizer, CREATE on the cluster allows every topic, else each needs CREATE on itself
(TOPIC_AUTHORIZATION_FAILED).

A client with a controller_mutation_rate (KIP-599) has each topic that passes every other check counted, in the
request's order, by its partitions, validate_only or not (as Kafka's controller counts them). From v6 the quota
is strict: while the client's bucket is below zero a topic is THROTTLING_QUOTA_EXCEEDED (with no message, as
Kafka answers); before, every topic is taken. Either way the answer carries the wait (throttle_time_ms).
"""

import logging
from collections import Counter

from ... import errors
from ...messages import ApiKey, CreateTopicsResponse
from ...uuid import Uuid
from ..topic_configs import topic_config_error
from ..dispatch import handles
from ..state.acls import CLUSTER, CLUSTER_NAME, CREATE, TOPIC
from ..state import topic_name_error
from ..state.cluster import METADATA_TOPIC
from ..state.log import LogError

log = logging.getLogger("kafkaproto.broker")

Result = CreateTopicsResponse.CreatableTopicResult
DEFAULT_CONFIG, TOPIC_CONFIG = 5, 1  # DescribeConfigs config sources
# The first version at which controller_mutation_rate refuses topics (strict) rather than only throttling.
STRICT_QUOTA_VERSION = 6
# Kafka's controller refuses a CreateTopics request asking for more partitions than this in all...
MAX_PARTITIONS_PER_REQUEST = 10_000
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."  # Kafka's messages
# ...and any request whose changes take more metadata records than this (a new topic's TopicRecord, its
# ConfigRecords and PartitionRecords; CreatePartitions' PartitionRecords).
MAX_RECORDS_PER_REQUEST = 10_000
TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."


def _error(name, error, message=None):
    return Result(name=name, topic_id=Uuid.ZERO, error_code=error.code, error_message=message or error.message,
                  num_partitions=-1, replication_factor=-1, configs=[])  # an empty list, as Kafka answers


def _check(state, item):
    """(error, message) for a topic that cannot be created, or None."""
    why = topic_name_error(item.name)
    if why:
        return errors.INVALID_TOPIC_EXCEPTION, why
    refused = state.cluster.creation_refused(item.name)
    if refused:
        return refused
    if item.assignments:
        if item.num_partitions != -1 or item.replication_factor != -1:
            return errors.INVALID_REQUEST, "give either assignments or a partition count and replication factor"
        indexes = sorted(a.partition_index for a in item.assignments)
        if indexes != list(range(len(indexes))):
            return errors.INVALID_REPLICA_ASSIGNMENT, "assignments must cover partitions 0 to n-1 once each"
        return assignment_error(state, [a.broker_ids for a in item.assignments])
    if item.num_partitions == 0 or item.num_partitions < -1:
        return errors.INVALID_PARTITIONS, f"{item.num_partitions} partitions"
    factor = _replication_factor(state, item)
    if factor <= 0:
        return errors.INVALID_REPLICATION_FACTOR, ("Replication factor must be larger than 0, or -1 to use the default "
                                                   "value.")
    problem = too_few_brokers(state, factor)
    if problem:
        return problem
    for config in item.configs:
        why = topic_config_error(config.name, config.value)
        if why:
            return errors.INVALID_CONFIG, why
    return None


def too_few_brokers(state, factor):
    """(INVALID_REPLICATION_FACTOR, Kafka's message) when fewer brokers run than factor, or None."""
    running = len(state.cluster.nodes.alive)
    if factor <= running:
        return None
    return errors.INVALID_REPLICATION_FACTOR, (
        f"Unable to replicate the partition {factor} time(s): The target replication factor of {factor} cannot be "
        f"reached because only {running} broker(s) are registered or some brokers have all their log directories "
        "cordoned.")


def assignment_error(state, assignments):
    """(INVALID_REPLICA_ASSIGNMENT, Kafka's message) for replica lists that cannot be a topic's, or None."""
    nodes = state.cluster.nodes
    for replicas in assignments:
        if not replicas:
            return errors.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
        for node in replicas:
            if replicas.count(node) > 1:
                return errors.INVALID_REPLICA_ASSIGNMENT, (f"The manual partition assignment includes the broker "
                                                           f"{node} more than once.")
            if not nodes.is_alive(node):
                return errors.INVALID_REPLICA_ASSIGNMENT, (f"The manual partition assignment includes broker {node}, "
                                                           "but no such broker is registered.")
    if len({len(replicas) for replicas in assignments}) > 1:
        return errors.INVALID_REPLICA_ASSIGNMENT, ("All partitions in the manual partition assignment must have "
                                                   "the same number of replicas.")
    return None


def _replication_factor(state, item):
    if item.assignments:
        return len(item.assignments[0].broker_ids)
    return item.replication_factor if item.replication_factor != -1 else state.config["default.replication.factor"]


def _partition_count(state, item):
    return len(item.assignments) if item.assignments else (
        item.num_partitions if item.num_partitions != -1 else state.config["num.partitions"])


def _configs(item):
    return {c.name: c.value for c in item.configs if c.value is not None}


def _partitions_asked(state, topics):
    """The partitions the topics would make, counted as Kafka's controller counts them."""
    total = 0
    for item in topics:
        if item.assignments:
            total += len(item.assignments)
        elif item.num_partitions == -1:
            total += state.config["num.partitions"]
        elif item.num_partitions > 0:
            total += item.num_partitions
    return total


def java_hash_set_order(names):
    """names (distinct) in the order a java.util.HashSet of them, filled in this order, iterates: by bucket
    (String.hashCode over UTF-16 units, its high bits spread into the low ones, as HashMap does), then in order of
    insertion (the table starts at 16 buckets and doubles past three quarters full)."""
    buckets = 16
    while len(names) > buckets * 3 // 4:
        buckets *= 2

    def bucket(name):
        h = 0
        units = name.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(units), 2):
            h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (buckets - 1)

    return sorted(names, key=bucket)  # sorted() is stable: insertion order within a bucket


@handles(ApiKey.CREATE_TOPICS, versions=range(2, 8))
def create_topics(ctx, request):
    state = ctx.state
    # As Kafka's broker does before its controller sees the request: a name given twice is dropped, and answered
    # once after the other topics; so is __cluster_metadata, the metadata log's own name.
    counts = Counter(item.name for item in request.topics)
    duplicates = java_hash_set_order([name for name, n in counts.items() if n > 1])
    topics = [item for item in request.topics if counts[item.name] == 1 and item.name != METADATA_TOPIC]
    last = [_error(name, errors.INVALID_REQUEST, "Duplicate topic name.") for name in duplicates]
    if counts.get(METADATA_TOPIC) == 1:
        last.append(_error(METADATA_TOPIC, *state.cluster.creation_refused(METADATA_TOPIC)))
    if _partitions_asked(state, topics) > MAX_PARTITIONS_PER_REQUEST:
        return CreateTopicsResponse(throttle_time_ms=0, topics=[
            _error(item.name, errors.POLICY_VIOLATION, TOO_MANY_PARTITIONS) for item in topics] + last)
    everywhere = ctx.allowed(CREATE, CLUSTER, CLUSTER_NAME)
    checked = [(item, _check(state, item) if everywhere or ctx.allowed(CREATE, TOPIC, item.name)
                else (errors.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")) for item in topics]
    # The records the topics that can be created would take: over the limit, Kafka makes none of them.
    if sum(1 + len(_configs(item)) + _partition_count(state, item)
           for item, problem in checked if problem is None) > MAX_RECORDS_PER_REQUEST:
        return CreateTopicsResponse(throttle_time_ms=0, topics=[
            _error(item.name, errors.POLICY_VIOLATION, TOO_MANY_RECORDS) for item in topics] + last)
    results = []
    quota = ctx.mutation_quota(STRICT_QUOTA_VERSION)
    for item, problem in checked:
        if problem:
            results.append(_error(item.name, *problem))
            continue
        count = _partition_count(state, item)
        if quota is not None and not quota.record(count, state.now_ms()):
            refused = _error(item.name, errors.THROTTLING_QUOTA_EXCEEDED)
            refused.error_message = None  # as Kafka answers
            results.append(refused)
            continue
        configs = _configs(item)
        if request.validate_only:
            # Kafka gives a validated topic an ID too (a random one, never used).
            topic_id, effective = Uuid.random(), {**state.cluster.topic_defaults(), **configs}
        else:
            try:
                assignments = [a.broker_ids for a in sorted(item.assignments, key=lambda a: a.partition_index)] \
                    if item.assignments else None
                topic = state.cluster.create_topic(item.name, count, configs, _replication_factor(state, item),
                                                   assignments)
            except (OSError, LogError) as e:
                log.error("topic %s not created: %s", item.name, e)
                results.append(_error(item.name, errors.UNKNOWN_SERVER_ERROR,
                                      f"topic {item.name!r} could not be made on disk: {e}"))
                continue
            topic_id, effective = topic.topic_id, state.cluster.topic_config(topic)
        results.append(Result(
            name=item.name, topic_id=topic_id, error_code=errors.NONE.code, error_message=None, num_partitions=count,
            replication_factor=_replication_factor(state, item),
            configs=[CreateTopicsResponse.CreatableTopicConfigs(
                name=k, value=v, read_only=False, config_source=TOPIC_CONFIG if k in configs else DEFAULT_CONFIG,
                is_sensitive=False) for k, v in sorted(effective.items())]))
    return CreateTopicsResponse(throttle_time_ms=ctx.mutations_throttled(quota), topics=results + last)
