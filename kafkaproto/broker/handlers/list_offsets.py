"""ListOffsets: the earliest (-2), latest (-1), max-timestamp (-3, v7+) or first-at-a-timestamp offset.

read_committed (v2+) puts latest at the last stable offset. Earliest-local (-4)
answers as earliest, there being no remote storage. A timestamp no batch
reaches gives offset -1 and timestamp -1, as Kafka does. With an authorizer, a topic the client may not
DESCRIBE is TOPIC_AUTHORIZATION_FAILED.
"""

from ... import errors
from ...messages import ApiKey, ListOffsetsResponse
from ..dispatch import handles
from ..state.acls import DESCRIBE, TOPIC

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
Partition = ListOffsetsResponse.ListOffsetsPartitionResponse


def _offset(log, timestamp, latest):
    """(offset, timestamp) for one query; latest is the log end or (read_committed) the last stable offset."""
    if timestamp == LATEST or timestamp == LATEST_TIERED:
        return latest, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return log.log_start_offset, -1
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp()
        return found if found is not None else (-1, -1)
    found = log.offset_for_timestamp(timestamp)
    return found if found is not None else (-1, -1)


@handles(ApiKey.LIST_OFFSETS, versions=range(1, 12))
def list_offsets(ctx, request):
    state = ctx.state
    topics = []
    for item in request.topics:
        topic, error = state.topic(item.name)
        if not ctx.allowed(DESCRIBE, TOPIC, item.name):
            topic, error = None, errors.TOPIC_AUTHORIZATION_FAILED
        partitions = []
        for p in item.partitions:
            partition, perror = state.partition(topic, p.partition_index) if topic else (None, error)
            if partition is None:
                partitions.append(Partition(partition_index=p.partition_index, error_code=perror.code, timestamp=-1,
                                            offset=-1, leader_epoch=-1))
                continue
            if p.timestamp < LATEST_TIERED or (p.timestamp == MAX_TIMESTAMP and ctx.version < 7):
                partitions.append(Partition(partition_index=p.partition_index, timestamp=-1, offset=-1,
                                            error_code=errors.UNSUPPORTED_VERSION.code, leader_epoch=-1))
                continue
            latest = state.last_stable_offset(partition) if request.isolation_level == 1 else \
                partition.log.log_end_offset
            offset, timestamp = _offset(partition.log, p.timestamp, latest)
            partitions.append(Partition(partition_index=p.partition_index, error_code=errors.NONE.code,
                                        timestamp=timestamp, offset=offset,
                                        leader_epoch=partition.leader_epoch if offset >= 0 and ctx.version >= 4
                                        else -1))
        topics.append(ListOffsetsResponse.ListOffsetsTopicResponse(name=item.name, partitions=partitions))
    return ListOffsetsResponse(throttle_time_ms=0, topics=topics)
