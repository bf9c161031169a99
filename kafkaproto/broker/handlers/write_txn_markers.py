"""WriteTxnMarkers: write commit or abort markers for a producer to partitions, as a transaction coordinator on
another broker does, and as kafka-transactions abort does to end a hanging transaction.

Only a partition's leader writes its markers (another broker answers NOT_LEADER_OR_FOLLOWER). Each partition is
checked as Kafka's producer state checks a marker: a partition that does not exist is
UNKNOWN_TOPIC_OR_PARTITION; an epoch older than the producer's is INVALID_PRODUCER_EPOCH (under transactions
version 2 the marker's epoch must be newer than the data's, as the coordinator bumps it at every end, save for a
retry once the transaction has ended); a coordinator epoch older than the one that wrote the producer's last
marker is TRANSACTION_COORDINATOR_FENCED.
"""

from ... import errors
from ...messages import ApiKey, WriteTxnMarkersResponse
from ..dispatch import handles
from ..routing import led_elsewhere
from ..state.acls import CLUSTER, CLUSTER_ACTION, CLUSTER_NAME
from ..state.transactions import MAX_EPOCH

Result = WriteTxnMarkersResponse.WritableTxnMarkerResult
TopicResult = WriteTxnMarkersResponse.WritableTxnMarkerTopicResult
PartitionResult = WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult


def _write(ctx, marker, name, index):
    state = ctx.state
    topic, _ = state.topic(name)
    partition, error = state.partition(topic, index)
    if partition is None:
        return error
    if led_elsewhere(ctx, partition):
        return errors.NOT_LEADER_OR_FOLLOWER
    entry = partition.producers.entries.get(marker.producer_id)
    if entry is not None:
        epoch, bumps = marker.producer_epoch, marker.transaction_version >= 2
        if epoch <= entry.epoch if bumps else epoch < entry.epoch:
            # a retried version-2 marker (same epoch, its transaction already ended) is written again
            closed = marker.producer_id not in partition.transactions.open
            if not (bumps and epoch == entry.epoch and (closed or epoch == MAX_EPOCH + 1)):
                return errors.INVALID_PRODUCER_EPOCH
        if marker.coordinator_epoch < entry.coordinator_epoch:
            return errors.TRANSACTION_COORDINATOR_FENCED
    state.write_marker(partition, marker.producer_id, marker.producer_epoch, marker.transaction_result,
                       marker.coordinator_epoch)
    return errors.NONE


@handles(ApiKey.WRITE_TXN_MARKERS, versions=range(1, 3))
def write_txn_markers(ctx, request):
    allowed = ctx.allowed(CLUSTER_ACTION, CLUSTER, CLUSTER_NAME)
    results = []
    for marker in request.markers:
        topics = [TopicResult(name=asked.name, partitions=[
            PartitionResult(partition_index=index, error_code=(_write(ctx, marker, asked.name, index) if allowed
                                                               else errors.CLUSTER_AUTHORIZATION_FAILED).code)
            for index in asked.partition_indexes]) for asked in marker.topics]
        results.append(Result(producer_id=marker.producer_id, topics=topics))
    return WriteTxnMarkersResponse(markers=results)
