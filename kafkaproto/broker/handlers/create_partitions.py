"""CreatePartitions: grow a topic to count partitions (never shrink); assignments may name this broker only.

As in Kafka's controller, one request adds at most 10,000 partitions (a metadata record each, and a request
takes at most 10,000 records). The topics are taken in turn; the one whose new partitions would take the
request's total past that is answered UNKNOWN_SERVER_ERROR (Kafka's controller runs out of room for the
request's records there), and so is every later topic that would add any.
The topics before it grow. Kafka keeps the share of that topic's partitions that fitted; here a topic that is
refused, or that cannot be made on disk, gets no partition at all.

The topics are taken in the order Kafka's controller takes them: a Java HashSet of their names. A client with a
controller_mutation_rate (KIP-599) has each topic counted by the partitions it adds, once its count and the
number of its assignments are found right (the assignments' brokers are checked after, as in Kafka), validate_only
or not. From v3 the quota is strict: while the client's bucket is below zero a topic is THROTTLING_QUOTA_EXCEEDED;
before, every topic is taken. Either way the answer carries the wait (throttle_time_ms).
"""

import logging

from ... import errors
from ...messages import ApiKey, CreatePartitionsResponse
from ..dispatch import handles
from ..state.acls import ALTER, TOPIC
from ..state.cluster import READ_WRITE
from ..state.log import LogError
from .create_topics import (MAX_RECORDS_PER_REQUEST, TOO_MANY_RECORDS, assignment_error, java_hash_set_order,
                            too_few_brokers)

log = logging.getLogger("kafkaproto.broker")
Result = CreatePartitionsResponse.CreatePartitionsTopicResult
# The first version at which controller_mutation_rate refuses topics (strict) rather than only throttling.
STRICT_QUOTA_VERSION = 3


def _check(state, item, topic):
    """(error, message) for a topic that cannot grow as asked, or None: what Kafka checks before counting the
    partitions against a mutation quota."""
    if topic is None:
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {item.name!r}"
    if topic.is_internal:  # Kafka lets them grow; here each is one log (offsets.topic.num.partitions and the like)
        return errors.INVALID_REQUEST, f"{item.name} is an internal topic with one partition here; its partitions stay"
    if any(p.mode != READ_WRITE for p in topic.partitions):  # partition deletion: they go from the top
        return errors.INVALID_PARTITIONS, (f"partitions of {item.name!r} are being deleted; add partitions once "
                                           "they are gone")
    if item.count <= len(topic.partitions):
        return errors.INVALID_PARTITIONS, (f"topic {item.name!r} has {len(topic.partitions)} partitions; "
                                           f"{item.count} would not add any")
    if item.assignments is not None and len(item.assignments) != item.count - len(topic.partitions):
        return errors.INVALID_REPLICA_ASSIGNMENT, (f"{len(item.assignments)} assignments for "
                                                   f"{item.count - len(topic.partitions)} new partitions")
    return None


def _placed(state, item, topic):
    """(error, message) for assignments that cannot be the new partitions' (create_topics' checks, and as many
    replicas as the topic has), or for more replicas than brokers run, or None: checked after the quota."""
    factor = len(topic.partitions[0].replicas)
    if item.assignments is None:
        return too_few_brokers(state, factor)
    lists = [a.broker_ids for a in item.assignments]
    problem = assignment_error(state, lists)
    if problem is None and any(len(replicas) != factor for replicas in lists):
        problem = errors.INVALID_REPLICA_ASSIGNMENT, (f"The manual partition assignment includes a partition with "
                                                      f"{len(lists[0])} replica(s), but this is not consistent with "
                                                      f"previous partitions, which have {factor} replica(s).")
    return problem


@handles(ApiKey.CREATE_PARTITIONS, versions=range(0, 4))
def create_partitions(ctx, request):
    state = ctx.state
    results = [None] * len(request.topics)
    added = 0  # partitions the request adds so far
    over = False  # a topic went over the limit: Kafka has no room for any later one either
    quota = ctx.mutation_quota(STRICT_QUOTA_VERSION)
    order = {name: i for i, name in enumerate(java_hash_set_order(list(dict.fromkeys(
        t.name for t in request.topics))))}
    for index in sorted(range(len(request.topics)), key=lambda i: order[request.topics[i].name]):
        item = request.topics[index]
        topic = state.cluster.topics.get(item.name)
        error, message = ((errors.TOPIC_AUTHORIZATION_FAILED, None) if not ctx.allowed(ALTER, TOPIC, item.name)
                          else _check(state, item, topic) or (errors.NONE, None))
        if error is errors.NONE:
            more = item.count - len(topic.partitions)
            if quota is not None and not quota.record(more, state.now_ms()):
                error = errors.THROTTLING_QUOTA_EXCEEDED  # with no message, as Kafka answers
            else:
                error, message = _placed(state, item, topic) or (errors.NONE, None)
        if error is errors.NONE:
            if over or added + more > MAX_RECORDS_PER_REQUEST:
                error = errors.UNKNOWN_SERVER_ERROR
                message = TOO_MANY_RECORDS + (" A topic before this one went over the limit." if over else (
                    f" {item.name!r} would add {more} partitions to the {added} of the topics before it; at "
                    f"most {MAX_RECORDS_PER_REQUEST} in one request."))
                over = True
            else:
                added += more
                if not request.validate_only:
                    try:
                        state.cluster.create_partitions(topic, item.count, item.assignments and [
                            a.broker_ids for a in item.assignments])
                    except (OSError, LogError) as e:
                        log.error("partitions of %s not created: %s", item.name, e)
                        error, message = errors.UNKNOWN_SERVER_ERROR, (f"partitions of {item.name!r} could not be "
                                                                       f"made on disk: {e}")
        results[index] = Result(name=item.name, error_code=error.code, error_message=message)
    return CreatePartitionsResponse(throttle_time_ms=ctx.mutations_throttled(quota), results=results)
