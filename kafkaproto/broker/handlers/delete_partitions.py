"""DeletePartitions (the partition_deletion extension, examples/partition-deletion): shrink topics.

Served when delete.topic.partition.enable is set. The partitions asked for must
be a topic's highest ones, at least one staying; they turn ReadOnly (fetch
still works, produce gets LEADER_NOT_AVAILABLE) and, once
delete_partitions_delay_ms has passed, None: their data is removed and the
topic's partition count shrinks. Partitions go from the top down: one whose
delay ends first waits for those above it. A delay of 0 deletes them at once.
Each topic succeeds or fails whole.
"""

from ... import errors
from ...messages import api
from ..dispatch import handles
from ..state.cluster import NONE_MODE, READ_ONLY

DELETE_PARTITIONS = 10000  # the extension's api key


def enabled(state):
    return state.config["delete.topic.partition.enable"]


@handles(DELETE_PARTITIONS, versions=range(0, 1), enabled=enabled)
def delete_partitions(ctx, request):
    state = ctx.state
    response = api(DELETE_PARTITIONS).response
    if request.delete_partitions_delay_ms < 0:
        return response(error_code=errors.INVALID_REQUEST.code, responses=[],
                        error_message=f"delete_partitions_delay_ms {request.delete_partitions_delay_ms} is negative")
    results, deleted_now = [], False
    for item in request.topics:
        topic = state.cluster.topics.get(item.name)
        error, message = _check(topic, item)
        if error is errors.NONE:
            asked = set(item.partitions)
            fresh = sorted(i for i in asked if topic.partitions[i].mode != READ_ONLY)
            if fresh:
                state.cluster.delete_partitions(topic, fresh[0], request.delete_partitions_delay_ms, state.now_ms())
                deleted_now |= request.delete_partitions_delay_ms == 0
        partitions = [response.DeletePartitionsPartitionResult(
            partition_index=i, error_code=error.code, error_message=message,
            status_code=topic.partitions[i].mode if topic is not None and 0 <= i < len(topic.partitions) else 0)
            for i in item.partitions]
        results.append(response.DeletePartitionsTopicResult(name=item.name, partitions=partitions))
    if deleted_now:
        state.cluster.finish_partition_deletions(state.now_ms())
        for result in results:
            topic = state.cluster.topics[result.name] if result.name in state.cluster.topics else None
            for partition in result.partitions:
                if partition.error_code == errors.NONE.code:
                    gone = partition.partition_index >= len(topic.partitions)
                    partition.status_code = NONE_MODE if gone else topic.partitions[partition.partition_index].mode
    return response(throttle_time_ms=0, error_code=errors.NONE.code, responses=results)


def _check(topic, item):
    """(error, message) for one topic of the request."""
    if topic is None:
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {item.name!r}"
    if topic.is_internal:
        return errors.INVALID_REQUEST, f"{item.name} is an internal topic; its partitions stay"
    count = len(topic.partitions)
    asked = set(item.partitions)
    if not asked:
        return errors.INVALID_REQUEST, "no partitions named"
    if len(asked) != len(item.partitions):
        return errors.INVALID_REQUEST, "a partition is named twice"
    missing = sorted(i for i in asked if not 0 <= i < count)
    if missing:
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"{item.name} has no partition {missing[0]} (it has {count})"
    going = asked | {p.index for p in topic.partitions if p.mode == READ_ONLY}
    first = min(going)
    if going != set(range(first, count)):
        return errors.INVALID_PARTITIONS, (f"only a topic's highest partitions can be deleted: {item.name} has "
                                           f"{count}, so deleting {first} means deleting {first}-{count - 1}")
    if first == 0:
        return errors.INVALID_PARTITIONS, f"deleting every partition of {item.name}; delete the topic instead"
    return errors.NONE, None
