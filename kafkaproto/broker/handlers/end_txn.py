"""EndTxn: commit or abort. Markers go to every partition of the transaction, and on commit its
group offsets take effect.

Up to v4 (transactions version 1) the request must carry the producer's current epoch; repeating the
same end (a retry) succeeds, the other end is INVALID_TXN_STATE.

v5 (transactions version 2, KIP-890) bumps the epoch at every end, commit or abort: the markers carry the
new epoch, and the answer gives the producer id and epoch to go on with (a new id at epoch 0 once the epoch
is spent). A retry (the epoch before the bump, after the end went through) gets the same answer again; an
abort with nothing in the transaction still bumps the epoch; anything else from another epoch is
PRODUCER_FENCED; errors carry producer id and epoch -1. This follows Kafka 4.3's coordinator.
"""

from ... import errors
from ...messages import ApiKey, EndTxnResponse
from ..dispatch import handles
from ..state.transactions import COMPLETE_ABORT, COMPLETE_COMMIT, EMPTY, ONGOING
from ._transactions import transaction

TRANSACTIONS_V2 = 5  # the first EndTxn version that ends with an epoch bump


def _answer(error, txn=None):
    if txn is None or error is not errors.NONE:
        return EndTxnResponse(throttle_time_ms=0, error_code=error.code, producer_id=-1, producer_epoch=-1)
    return EndTxnResponse(throttle_time_ms=0, error_code=0, producer_id=txn.producer_id, producer_epoch=txn.epoch)


@handles(ApiKey.END_TXN, versions=range(0, 6))
def end_txn(ctx, request):
    if ctx.version >= TRANSACTIONS_V2:
        return _end_v2(ctx.state, request)
    state = ctx.state
    txn, error = transaction(state, request.transactional_id, request.producer_id, request.producer_epoch,
                             ctx.version, fenced_since=2)
    if txn is not None:
        done = COMPLETE_COMMIT if request.committed else COMPLETE_ABORT
        if txn.state == ONGOING:
            state.end_transaction(txn, request.committed)
        elif txn.state != done:
            error = errors.INVALID_TXN_STATE
    return _answer(error)


def _end_v2(state, request):
    txn = state.transactions.by_id.get(request.transactional_id)
    producer = (request.producer_id, request.producer_epoch)
    if txn is None or request.producer_id not in (txn.producer_id, (txn.last_producer or (None,))[0]):
        return _answer(errors.INVALID_PRODUCER_ID_MAPPING)
    current = producer == (txn.producer_id, txn.epoch)
    retry = producer == txn.last_producer
    commit = request.committed
    if txn.state == ONGOING:
        if not current:
            return _answer(errors.PRODUCER_FENCED)
        state.end_transaction(txn, commit, bump=True)
        return _answer(errors.NONE, txn)
    if txn.state in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT) and (current or retry and txn.state != EMPTY):
        if current and not commit:  # an abort with nothing to abort: the epoch still goes up
            state.end_transaction(txn, False, bump=True)
            return _answer(errors.NONE, txn)
        if retry and txn.state == (COMPLETE_COMMIT if commit else COMPLETE_ABORT):
            return _answer(errors.NONE, txn)
        return _answer(errors.INVALID_TXN_STATE)
    return _answer(errors.PRODUCER_FENCED)
