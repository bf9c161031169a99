"""OffsetForLeaderEpoch: the end offset of a leader epoch. Leadership never moves here, so every
partition has one epoch, 0: asking for it (or a later one not yet begun) gives the log end offset."""

from ... import errors
from ...messages import ApiKey, OffsetForLeaderEpochResponse
from ..dispatch import handles
from ..state.acls import DESCRIBE, TOPIC

Result = OffsetForLeaderEpochResponse.EpochEndOffset


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, versions=range(2, 5))
def offset_for_leader_epoch(ctx, request):
    state = ctx.state
    topics = []
    for item in request.topics:
        topic, error = state.topic(item.topic)
        if not ctx.allowed(DESCRIBE, TOPIC, item.topic):
            topic, error = None, errors.TOPIC_AUTHORIZATION_FAILED
        partitions = []
        for p in item.partitions:
            partition, perror = state.partition(topic, p.partition) if topic else (None, error)
            if partition is None:
                partitions.append(Result(error_code=perror.code, partition=p.partition, leader_epoch=-1,
                                         end_offset=-1))
            elif p.current_leader_epoch > partition.leader_epoch:
                partitions.append(Result(error_code=errors.UNKNOWN_LEADER_EPOCH.code, partition=p.partition,
                                         leader_epoch=-1, end_offset=-1))
            elif p.leader_epoch < 0:
                partitions.append(Result(error_code=errors.NONE.code, partition=p.partition, leader_epoch=-1,
                                         end_offset=-1))
            else:
                partitions.append(Result(error_code=errors.NONE.code, partition=p.partition,
                                         leader_epoch=partition.leader_epoch, end_offset=partition.log.log_end_offset))
        topics.append(OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=item.topic, partitions=partitions))
    return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=topics)
