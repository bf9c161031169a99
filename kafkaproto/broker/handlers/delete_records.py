"""DeleteRecords: move partitions' log start offsets forward, so that the records before them are gone for good.

An offset of -1 means the high watermark (here the log end: a single node's writes are all committed). An offset
below 0 or past the high watermark is OFFSET_OUT_OF_RANGE; a topic whose cleanup.policy lacks "delete" refuses with
POLICY_VIOLATION, as Kafka's UnifiedLog does, and an internal topic (``__consumer_offsets``,
``__transaction_state``) with INVALID_TOPIC_EXCEPTION, as Kafka's ReplicaManager does. The answer's low
watermark is the partition's log start offset after the move (or -1 with an error). The new start is kept across
restarts, and the segments wholly below it go at once.
"""

from ... import errors
from ...messages import ApiKey, DeleteRecordsResponse
from ..dispatch import handles
from ..state.acls import DELETE, TOPIC

HIGH_WATERMARK = -1
Topic, Partition = DeleteRecordsResponse.DeleteRecordsTopicResult, DeleteRecordsResponse.DeleteRecordsPartitionResult


@handles(ApiKey.DELETE_RECORDS, versions=range(0, 3))
def delete_records(ctx, request):
    state = ctx.state
    topics = []
    for item in request.topics:
        topic, error = state.topic(item.name)
        if not ctx.allowed(DELETE, TOPIC, item.name):
            topic, error = None, errors.TOPIC_AUTHORIZATION_FAILED
        deletes = "delete" in state.cluster.topic_config(topic)["cleanup.policy"] if topic is not None else False
        partitions = []
        for p in item.partitions:
            partition, perror = state.partition(topic, p.partition_index) if topic else (None, error)
            if partition is None:
                partitions.append(Partition(partition_index=p.partition_index, low_watermark=-1,
                                            error_code=perror.code))
                continue
            log = partition.log
            offset = log.log_end_offset if p.offset == HIGH_WATERMARK else p.offset
            if topic.is_internal:
                perror = errors.INVALID_TOPIC_EXCEPTION
            elif not 0 <= offset <= log.log_end_offset:
                perror = errors.OFFSET_OUT_OF_RANGE
            elif not deletes:
                perror = errors.POLICY_VIOLATION
            if perror is not errors.NONE:
                partitions.append(Partition(partition_index=p.partition_index, low_watermark=-1,
                                            error_code=perror.code))
                continue
            try:
                start = state.delete_records(partition, offset)
            except OSError:  # the new start could not be saved: nothing moved
                partitions.append(Partition(partition_index=p.partition_index, low_watermark=-1,
                                            error_code=errors.KAFKA_STORAGE_ERROR.code))
                continue
            partitions.append(Partition(partition_index=p.partition_index, error_code=errors.NONE.code,
                                        low_watermark=start))
        topics.append(Topic(name=item.name, partitions=partitions))
    return DeleteRecordsResponse(throttle_time_ms=0, topics=topics)
