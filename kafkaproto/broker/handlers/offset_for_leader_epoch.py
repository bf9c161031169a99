"""OffsetForLeaderEpoch: where a leader epoch ended in a partition's log (state/log.py's LeaderEpochs, as Kafka's
leader epoch cache answers), so that a consumer or follower whose log diverged knows where. The request's current
leader epoch, when given, must be the partition's: an older one is FENCED_LEADER_EPOCH, a newer one
UNKNOWN_LEADER_EPOCH."""

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
            elif p.current_leader_epoch >= 0 and p.current_leader_epoch != partition.leader_epoch:
                error = errors.FENCED_LEADER_EPOCH if p.current_leader_epoch < partition.leader_epoch \
                    else errors.UNKNOWN_LEADER_EPOCH
                partitions.append(Result(error_code=error.code, partition=p.partition, leader_epoch=-1,
                                         end_offset=-1))
            else:
                epoch, end = partition.log.epochs.end_offset_for(p.leader_epoch, partition.log.log_end_offset)
                partitions.append(Result(error_code=errors.NONE.code, partition=p.partition, leader_epoch=epoch,
                                         end_offset=end))
        topics.append(OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=item.topic, partitions=partitions))
    return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=topics)
