"""DescribeProducers (kafka-transactions describe-producers, find-hanging): the producers that wrote to each
partition asked (answered by its leader), with the last sequence and timestamp each wrote, the epoch of the
coordinator that wrote its last transaction marker, and where its open transaction starts (-1 when none is
open)."""

from ... import errors
from ...messages import ApiKey, DescribeProducersResponse
from ..dispatch import handles
from ..routing import led_elsewhere
from ..state.acls import READ, TOPIC

Topic, Partition = DescribeProducersResponse.TopicResponse, DescribeProducersResponse.PartitionResponse
Producer = DescribeProducersResponse.ProducerState


def _partition(ctx, name, index):
    state = ctx.state
    topic, _ = state.topic(name)
    partition, error = state.partition(topic, index)
    if not ctx.allowed(READ, TOPIC, name):
        partition, error = None, errors.TOPIC_AUTHORIZATION_FAILED
    if partition is not None and led_elsewhere(ctx, partition):
        partition, error = None, errors.NOT_LEADER_OR_FOLLOWER
    if partition is None:
        return Partition(partition_index=index, error_code=error.code, error_message=None, active_producers=[])
    open_txns = partition.transactions.open
    return Partition(partition_index=index, error_code=errors.NONE.code, error_message=None, active_producers=[
        Producer(producer_id=producer_id, producer_epoch=entry.epoch, last_sequence=entry.last_sequence,
                 last_timestamp=entry.last_timestamp, coordinator_epoch=entry.coordinator_epoch,
                 current_txn_start_offset=open_txns.get(producer_id, -1))
        for producer_id, entry in partition.producers.entries.items()])


@handles(ApiKey.DESCRIBE_PRODUCERS, versions=range(0, 1))
def describe_producers(ctx, request):
    return DescribeProducersResponse(throttle_time_ms=0, topics=[
        Topic(name=asked.name, partitions=[_partition(ctx, asked.name, index)
                                           for index in asked.partition_indexes])
        for asked in request.topics])
