"""AddPartitionsToTxn: partitions a transaction will write to (v0-3 from producers; v4+ several
transactions at once, or verify_only to check that partitions already belong to one).

The transaction coordinator decides (TransactionCoordinator.add_partitions):
a partition that does not exist fails the whole request, as in Kafka. Kafka's internal topics
(``__consumer_offsets``) are refused as a topic the producer may not WRITE is, whether or not they exist.
"""

from ... import errors
from ...messages import AddPartitionsToTxnResponse, ApiKey
from ..dispatch import handles
from ..state.acls import CLUSTER, CLUSTER_ACTION, CLUSTER_NAME, TOPIC, TRANSACTIONAL_ID, WRITE
from ..state.clock import clock_ms
from ..state.cluster import INTERNAL_TOPICS

R = AddPartitionsToTxnResponse


def _add(ctx, transactional_id, producer_id, epoch, topics, verify_only=False):
    """(top-level error, {(topic, partition): error})"""
    state, version = ctx.state, ctx.version
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    if not ctx.allowed(WRITE, TRANSACTIONAL_ID, transactional_id):
        return errors.NONE, {key: errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for key in wanted}
    refused = {name for name, _ in wanted if name in INTERNAL_TOPICS or not ctx.allowed(WRITE, TOPIC, name)}
    if refused:
        return errors.NONE, {key: errors.TOPIC_AUTHORIZATION_FAILED if key[0] in refused
                             else errors.OPERATION_NOT_ATTEMPTED for key in wanted}
    missing = {key for key in wanted if state.partition(state.cluster.topics.get(key[0]), key[1])[0] is None}
    return state.transactions.add_partitions(clock_ms(), transactional_id, producer_id, epoch, version, wanted,
                                             missing, verify_only)


def _topic_results(results):
    by_topic = {}
    for (name, index), error in results.items():
        by_topic.setdefault(name, []).append(R.AddPartitionsToTxnPartitionResult(partition_index=index,
                                                                                 partition_error_code=error.code))
    return [R.AddPartitionsToTxnTopicResult(name=name, results_by_partition=rows) for name, rows in by_topic.items()]


@handles(ApiKey.ADD_PARTITIONS_TO_TXN, versions=range(0, 6))
def add_partitions_to_txn(ctx, request):
    if ctx.version < 4:
        _, results = _add(ctx, request.v3_and_below_transactional_id,
                          request.v3_and_below_producer_id, request.v3_and_below_producer_epoch,
                          request.v3_and_below_topics)
        return R(throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(results))
    if not ctx.allowed(CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):  # v4+ come from other brokers
        return R(throttle_time_ms=0, error_code=errors.CLUSTER_AUTHORIZATION_FAILED.code, results_by_transaction=[])
    out = []
    for t in request.transactions:
        _, results = _add(ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics,
                          t.verify_only)
        out.append(R.AddPartitionsToTxnResult(transactional_id=t.transactional_id,
                                              topic_results=_topic_results(results)))
    return R(throttle_time_ms=0, error_code=errors.NONE.code, results_by_transaction=out)
