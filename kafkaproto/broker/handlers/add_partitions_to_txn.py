"""AddPartitionsToTxn: partitions a transaction will write to (v0-3 from producers; v4+ several
transactions at once, or verify_only to check that partitions already belong to one).

A partition that does not exist fails the whole request: it gets
UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, as in Kafka.
"""


from ... import errors
from ...messages import AddPartitionsToTxnResponse, ApiKey
from ..dispatch import handles
from ..state.transactions import ONGOING, PREPARE_ABORT, PREPARE_COMMIT
from ..state.clock import clock_ms
from ._transactions import transaction

R = AddPartitionsToTxnResponse


def _add(state, version, transactional_id, producer_id, epoch, topics, verify_only=False):
    """(top-level error, {(topic, partition): error})"""
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    txn, error = transaction(state, transactional_id, producer_id, epoch, version, fenced_since=2)
    if txn is not None and txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
        error = errors.CONCURRENT_TRANSACTIONS
    if error is not errors.NONE:
        return error, {key: error for key in wanted}
    if verify_only:
        ok = txn.state == ONGOING
        return errors.NONE, {key: errors.NONE if ok and key in txn.partitions else errors.INVALID_TXN_STATE
                             for key in wanted}
    missing = {key for key in wanted
               if state.partition(state.cluster.topics.get(key[0]), key[1])[0] is None}
    if missing:
        return errors.NONE, {key: errors.UNKNOWN_TOPIC_OR_PARTITION if key in missing
                             else errors.OPERATION_NOT_ATTEMPTED for key in wanted}
    txn.begin(clock_ms())
    txn.partitions.update(wanted)
    state.transactions.save(txn)
    return errors.NONE, {key: errors.NONE for key in wanted}


def _topic_results(results):
    by_topic = {}
    for (name, index), error in results.items():
        by_topic.setdefault(name, []).append(R.AddPartitionsToTxnPartitionResult(partition_index=index,
                                                                                 partition_error_code=error.code))
    return [R.AddPartitionsToTxnTopicResult(name=name, results_by_partition=rows) for name, rows in by_topic.items()]


@handles(ApiKey.ADD_PARTITIONS_TO_TXN, versions=range(0, 6))
def add_partitions_to_txn(ctx, request):
    state = ctx.state
    if ctx.version < 4:
        _, results = _add(state, ctx.version, request.v3_and_below_transactional_id,
                          request.v3_and_below_producer_id, request.v3_and_below_producer_epoch,
                          request.v3_and_below_topics)
        return R(throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(results))
    out = []
    for t in request.transactions:
        _, results = _add(state, ctx.version, t.transactional_id, t.producer_id, t.producer_epoch, t.topics,
                          t.verify_only)
        out.append(R.AddPartitionsToTxnResult(transactional_id=t.transactional_id,
                                              topic_results=_topic_results(results)))
    return R(throttle_time_ms=0, error_code=errors.NONE.code, results_by_transaction=out)
