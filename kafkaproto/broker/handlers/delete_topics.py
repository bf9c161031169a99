"""DeleteTopics: by name, or from v6 by topic ID.

The topic leaves the metadata log at once; its partition directories are
renamed to ``<topic>-<partition>.<id>-delete`` and removed after
log.segment.delete.delay.ms. A stale or unknown ID is UNKNOWN_TOPIC_ID. With an authorizer, a topic the
client may not DELETE is TOPIC_AUTHORIZATION_FAILED.
"""

from ... import errors
from ...messages import ApiKey, DeleteTopicsResponse
from ...uuid import Uuid
from ..dispatch import handles
from ..state.acls import DELETE, TOPIC

Result = DeleteTopicsResponse.DeletableTopicResult


@handles(ApiKey.DELETE_TOPICS, versions=range(1, 7))
def delete_topics(ctx, request):
    state = ctx.state
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, Uuid.ZERO) for name in request.topic_names]
    results = []
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
        if topic is None:
            results.append(Result(name=name, topic_id=topic_id, error_code=error.code, error_message=error.message))
            continue
        if not state.config["delete.topic.enable"]:
            results.append(Result(name=topic.name, topic_id=topic.topic_id,
                                  error_code=errors.TOPIC_DELETION_DISABLED.code))
            continue
        state.delete_topic(topic)
        results.append(Result(name=topic.name, topic_id=topic.topic_id, error_code=errors.NONE.code))
    return DeleteTopicsResponse(throttle_time_ms=0, responses=results)
