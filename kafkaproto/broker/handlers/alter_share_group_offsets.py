"""AlterShareGroupOffsets (KIP-932, kafka-share-groups --reset-offsets): start share partitions of an empty share
group over at the offsets given; what was in flight is forgotten. The group is made when there is none, as Kafka
does; one with members is NON_EMPTY_GROUP, a group of another kind GROUP_ID_NOT_FOUND. Unknown topics are answered
first, as from Kafka, each partition UNKNOWN_TOPIC_OR_PARTITION."""

from ... import errors
from ...messages import ApiKey, AlterShareGroupOffsetsResponse
from ...uuid import Uuid
from ..dispatch import handles
from ..state.acls import READ, TOPIC
from ..state.features import share_groups_enabled
from ._shares import NOT_HOSTED, Refused, empty_share_group

R = AlterShareGroupOffsetsResponse


def _failed(error, message=None):
    return R(throttle_time_ms=0, error_code=error.code, error_message=message, responses=[])


@handles(ApiKey.ALTER_SHARE_GROUP_OFFSETS, versions=range(0, 1), enabled=share_groups_enabled)
def alter_share_group_offsets(ctx, request):
    state = ctx.state
    group_id = request.group_id
    try:
        group = empty_share_group(ctx, group_id, create=True)
    except Refused as e:
        return _failed(e.error, e.message)
    unknown, known = [], []
    for item in request.topics:
        topic = state.cluster.topics.get(item.topic_name)
        if topic is None:
            unknown.append(R.AlterShareGroupOffsetsResponseTopic(
                topic_name=item.topic_name, topic_id=Uuid.ZERO, partitions=[
                    R.AlterShareGroupOffsetsResponsePartition(partition_index=p.partition_index,
                                                              error_code=errors.UNKNOWN_TOPIC_OR_PARTITION.code,
                                                              error_message=NOT_HOSTED)
                    for p in item.partitions]))
            continue
        parts = []
        for p in item.partitions:
            if not ctx.allowed(READ, TOPIC, topic.name):
                error, message = errors.TOPIC_AUTHORIZATION_FAILED, None
            elif not 0 <= p.partition_index < len(topic.partitions):
                error, message = errors.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED
            else:
                error, message = errors.NONE, None
                state.shares.initialize(group_id, {topic.topic_id: [p.partition_index]}, group.group_epoch,
                                        start=p.start_offset)
                group.initialized.setdefault(topic.topic_id, set()).add(p.partition_index)
                group.topic_names[topic.topic_id] = topic.name
            parts.append(R.AlterShareGroupOffsetsResponsePartition(partition_index=p.partition_index,
                                                                   error_code=error.code, error_message=message))
        known.append(R.AlterShareGroupOffsetsResponseTopic(topic_name=topic.name, topic_id=topic.topic_id,
                                                           partitions=parts))
    state.groups.save(group_id)
    state.changed()
    return R(throttle_time_ms=0, error_code=0, error_message=None, responses=unknown + known)
