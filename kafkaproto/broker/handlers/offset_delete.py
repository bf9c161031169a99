"""OffsetDelete (kafka-consumer-groups --delete-offsets): drop a group's committed offsets for some partitions.

A partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION (the broker checks before asking the coordinator);
a topic one of the group's members subscribes to is refused per partition with GROUP_SUBSCRIBED_TO_TOPIC; an
unknown group is GROUP_ID_NOT_FOUND, with no topics. Partitions without a committed offset answer NONE, as in Kafka.
"""

from ... import errors
from ...messages import ApiKey, OffsetDeleteResponse
from ..dispatch import handles
from ..state.acls import DELETE, READ, TOPIC
from ._groups import advance, group_refused

Topic, Partition = OffsetDeleteResponse.OffsetDeleteResponseTopic, OffsetDeleteResponse.OffsetDeleteResponsePartition


@handles(ApiKey.OFFSET_DELETE, versions=range(0, 1))
def offset_delete(ctx, request):
    advance(ctx.state)
    refused = group_refused(ctx, request.group_id, DELETE)
    if refused:
        return OffsetDeleteResponse(error_code=refused.code, throttle_time_ms=0, topics=[])
    asked, known = {}, {}
    for item in request.topics:
        topic = ctx.state.cluster.topics.get(item.name)
        partitions = asked.setdefault(item.name, {})
        for p in item.partitions:
            exists = topic is not None and 0 <= p.partition_index < len(topic.partitions)
            partitions[p.partition_index] = None if exists else errors.UNKNOWN_TOPIC_OR_PARTITION
            if not ctx.allowed(READ, TOPIC, item.name):
                exists, partitions[p.partition_index] = False, errors.TOPIC_AUTHORIZATION_FAILED
            if exists:
                known.setdefault(item.name, []).append(p.partition_index)
    error, answers = ctx.state.groups.delete_offsets(request.group_id, known)
    if error is not errors.NONE:
        return OffsetDeleteResponse(error_code=error.code, throttle_time_ms=0, topics=[])
    # Kafka's answer lists the topics with a partition refused before the coordinator first, then the others.
    order = sorted(asked, key=lambda name: all(perror is None for perror in asked[name].values()))
    return OffsetDeleteResponse(error_code=0, throttle_time_ms=0, topics=[
        Topic(name=name, partitions=[Partition(partition_index=p, error_code=(perror or answers[name]).code)
                                     for p, perror in asked[name].items()])
        for name in order])
