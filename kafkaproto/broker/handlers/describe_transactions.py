"""DescribeTransactions (kafka-transactions describe): each transactional id's state, producer, timeout, when
its transaction began (-1 before the first) and the partitions it has written to; an id the coordinator does not
know is TRANSACTIONAL_ID_NOT_FOUND, its other fields left at zero as Kafka leaves them."""

from ... import errors
from ...messages import ApiKey, DescribeTransactionsResponse
from ..dispatch import handles
from ..state.acls import DESCRIBE, TRANSACTIONAL_ID

State, TopicData = DescribeTransactionsResponse.TransactionState, DescribeTransactionsResponse.TopicData


def _described(txn, transactional_id):
    if txn is None:
        return State(error_code=errors.TRANSACTIONAL_ID_NOT_FOUND.code, transactional_id=transactional_id,
                     transaction_state="", transaction_timeout_ms=0, transaction_start_time_ms=0, producer_id=0,
                     producer_epoch=0, topics=[])
    topics = {}
    for name, index in sorted(txn.partitions):
        topics.setdefault(name, []).append(index)
    return State(error_code=errors.NONE.code, transactional_id=transactional_id, transaction_state=txn.state,
                 transaction_timeout_ms=txn.timeout_ms, transaction_start_time_ms=txn.start_time_ms,
                 producer_id=txn.producer_id, producer_epoch=txn.epoch,
                 topics=[TopicData(topic=name, partitions=indexes) for name, indexes in topics.items()])


@handles(ApiKey.DESCRIBE_TRANSACTIONS, versions=range(0, 1))
def describe_transactions(ctx, request):
    by_id = ctx.state.transactions.by_id
    return DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=[
        _described(by_id.get(tid), tid) if ctx.allowed(DESCRIBE, TRANSACTIONAL_ID, tid) else State(
            error_code=errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code, transactional_id=tid, transaction_state="",
            transaction_timeout_ms=0, transaction_start_time_ms=0, producer_id=0, producer_epoch=0, topics=[])
        for tid in request.transactional_ids])
