"""DescribeShareGroupOffsets (KIP-932, kafka-share-groups --describe --offsets): where each share partition of a
group starts (records before it are done with) and, from v1, its lag: the records after the start not yet
delivered for good (the log end, less the start, less those acknowledged or archived after it).

Topics null asks for every partition the group has share state for. As from Kafka, a group need not exist, and a
partition without share state (or whose start the share coordinator has not been told yet) starts at -1 with lag
-1. The figures are the share coordinator's, which lag the last acknowledgement by a step (state/shares.py).
"""

from ... import errors
from ...messages import ApiKey, DescribeShareGroupOffsetsResponse
from ...uuid import Uuid
from ..dispatch import handles
from ..state.acls import DESCRIBE, TOPIC
from ..state.features import share_groups_enabled
from ..state.shares import UNINITIALIZED
from ._groups import group_refused
from ._shares import NOT_HOSTED

R = DescribeShareGroupOffsetsResponse


def _partition(ctx, group_id, topic, index):
    state = ctx.state
    if topic is not None and not 0 <= index < len(topic.partitions):
        return R.DescribeShareGroupOffsetsResponsePartition(
            partition_index=index, start_offset=-1, leader_epoch=0, lag=-1,
            error_code=errors.UNKNOWN_TOPIC_OR_PARTITION.code, error_message=NOT_HOSTED)
    share = state.shares.get(group_id, topic.topic_id, index) if topic is not None else None
    start, lag = -1, -1
    if share is not None and share.shown_start != UNINITIALIZED:
        start = share.shown_start
        plog = topic.partitions[index].log
        if plog is not None and share.shown_complete != UNINITIALIZED:
            lag = plog.log_end_offset - start - share.shown_complete
    return R.DescribeShareGroupOffsetsResponsePartition(partition_index=index, start_offset=start, leader_epoch=0,
                                                        lag=lag, error_code=0, error_message=None)


def _group(ctx, asked):
    state = ctx.state
    group_id = asked.group_id
    if not group_id:
        return R.DescribeShareGroupOffsetsResponseGroup(group_id=group_id, topics=[],
                                                        error_code=errors.INVALID_GROUP_ID.code,
                                                        error_message="The group id is invalid.")
    if group_refused(ctx, group_id, DESCRIBE):
        return R.DescribeShareGroupOffsetsResponseGroup(group_id=group_id, topics=[],
                                                        error_code=errors.GROUP_AUTHORIZATION_FAILED.code,
                                                        error_message=None)
    if asked.topics is None:
        group = state.groups.group(group_id)
        kept = group.initialized if group is not None and group.kind == "share" else {}
        wanted = [(state.cluster.by_id.get(t), sorted(ps)) for t, ps in kept.items()]
        wanted = [(topic.name, topic, ps) for topic, ps in wanted if topic is not None]
    else:
        wanted = [(t.topic_name, state.cluster.topics.get(t.topic_name), t.partitions) for t in asked.topics]
    topics = []
    for name, topic, indexes in wanted:
        if topic is not None and not ctx.allowed(DESCRIBE, TOPIC, name):
            parts = [R.DescribeShareGroupOffsetsResponsePartition(
                partition_index=i, start_offset=-1, leader_epoch=0, lag=-1,
                error_code=errors.TOPIC_AUTHORIZATION_FAILED.code, error_message=None) for i in indexes]
        else:
            parts = [_partition(ctx, group_id, topic, i) for i in indexes]
        topics.append(R.DescribeShareGroupOffsetsResponseTopic(
            topic_name=name, topic_id=topic.topic_id if topic is not None else Uuid.ZERO, partitions=parts))
    return R.DescribeShareGroupOffsetsResponseGroup(group_id=group_id, topics=topics, error_code=0,
                                                    error_message=None)


@handles(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, versions=range(0, 2), enabled=share_groups_enabled)
def describe_share_group_offsets(ctx, request):
    return R(throttle_time_ms=0, groups=[_group(ctx, asked) for asked in request.groups])
