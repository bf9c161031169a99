"""DeleteTopics: by name, or from v6 by topic ID.

The topic leaves the metadata log at once; its partition directories are
renamed to ``<topic>-<partition>.<id>-delete`` and removed after
log.segment.delete.delay.ms. A stale or unknown ID is UNKNOWN_TOPIC_ID. With an authorizer, a topic the
client may not DELETE is TOPIC_AUTHORIZATION_FAILED.

A client with a controller_mutation_rate (KIP-599) has each topic it may delete counted by its partitions, in the
order Kafka's controller takes them (a Java HashMap of the topic IDs). From v5 the quota is strict: while the
client's bucket is below zero a topic is THROTTLING_QUOTA_EXCEEDED and stays; before, every topic goes. Either way
the answer carries the wait (throttle_time_ms).
"""

from ... import errors
from ...messages import ApiKey, DeleteTopicsResponse
from ...uuid import Uuid
from ..dispatch import handles
from ..state.acls import DELETE, TOPIC
from ..state.groups.assignors import java_order, uuid_hash

Result = DeleteTopicsResponse.DeletableTopicResult
# Kafka deletes __consumer_offsets and __transaction_state when asked (their groups and transactional ids start
# over); here each is a coordinator's own log
INTERNAL_STAYS = "{} is a coordinator's log on this broker and is not deleted"
# The first version at which controller_mutation_rate refuses topics (strict) rather than only throttling.
STRICT_QUOTA_VERSION = 5


@handles(ApiKey.DELETE_TOPICS, versions=range(1, 7))
def delete_topics(ctx, request):
    state = ctx.state
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, Uuid.ZERO) for name in request.topic_names]
    results = []
    going = {}  # topic ID -> (the topic, where its result goes), each topic once
    for name, topic_id in wanted:
        if name is not None and topic_id.int:
            results.append(Result(name=name, topic_id=topic_id, error_code=errors.INVALID_REQUEST.code,
                                  error_message="give a topic's name or its ID, not both"))
            continue
        topic, error = state.topic(name, topic_id)
        if (topic.name if topic is not None else name) is not None and not ctx.allowed(
                DELETE, TOPIC, topic.name if topic is not None else name):
            results.append(Result(name=name, topic_id=topic_id, error_code=errors.TOPIC_AUTHORIZATION_FAILED.code))
            continue
        if topic is not None and topic.topic_id in going:
            # named twice: the first deletes it, so the second finds it gone
            topic, error = None, (errors.UNKNOWN_TOPIC_ID if topic_id.int else errors.UNKNOWN_TOPIC_OR_PARTITION)
        if topic is None:
            results.append(Result(name=name, topic_id=topic_id, error_code=error.code, error_message=error.message))
            continue
        if not state.config["delete.topic.enable"]:
            results.append(Result(name=topic.name, topic_id=topic.topic_id,
                                  error_code=errors.TOPIC_DELETION_DISABLED.code))
            continue
        if topic.is_internal:
            results.append(Result(name=topic.name, topic_id=topic.topic_id, error_code=errors.INVALID_REQUEST.code,
                                  error_message=INTERNAL_STAYS.format(topic.name)))
            continue
        going[topic.topic_id] = (topic, len(results))
        results.append(None)
    quota = ctx.mutation_quota(STRICT_QUOTA_VERSION)
    for topic_id in going if quota is None else java_order(going, uuid_hash):
        topic, index = going[topic_id]
        if quota is not None and not quota.record(len(topic.partitions), state.now_ms()):
            # no message, as Kafka answers
            results[index] = Result(name=topic.name, topic_id=topic.topic_id,
                                    error_code=errors.THROTTLING_QUOTA_EXCEEDED.code, error_message=None)
            continue
        state.delete_topic(topic)
        results[index] = Result(name=topic.name, topic_id=topic.topic_id, error_code=errors.NONE.code)
    return DeleteTopicsResponse(throttle_time_ms=ctx.mutations_throttled(quota), responses=results)
