"""CreatePartitions: grow a topic to count partitions (never shrink); assignments may name this broker only."""

from ... import errors
from ...messages import ApiKey, CreatePartitionsResponse
from ..dispatch import handles
from ..state.cluster import READ_WRITE

Result = CreatePartitionsResponse.CreatePartitionsTopicResult


@handles(ApiKey.CREATE_PARTITIONS, versions=range(0, 4))
def create_partitions(ctx, request):
    state = ctx.state
    results = []
    for item in request.topics:
        topic = state.cluster.topics.get(item.name)
        if topic is None:
            error, message = errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {item.name!r}"
        elif any(p.mode != READ_WRITE for p in topic.partitions):  # partition deletion: they go from the top
            error, message = errors.INVALID_PARTITIONS, (f"partitions of {item.name!r} are being deleted; add "
                                                         "partitions once they are gone")
        elif item.count <= len(topic.partitions):
            error, message = errors.INVALID_PARTITIONS, (f"topic {item.name!r} has {len(topic.partitions)} "
                                                         f"partitions; {item.count} would not add any")
        elif item.assignments is not None and (len(item.assignments) != item.count - len(topic.partitions) or any(
                a.broker_ids != [state.node_id] for a in item.assignments)):
            error, message = errors.INVALID_REPLICA_ASSIGNMENT, f"one assignment per new partition, to broker " \
                                                                f"{state.node_id}"
        else:
            error, message = errors.NONE, None
            if not request.validate_only:
                state.cluster.create_partitions(topic, item.count)
        results.append(Result(name=item.name, error_code=error.code, error_message=message))
    return CreatePartitionsResponse(throttle_time_ms=0, results=results)
