"""InitProducerId: a producer id and epoch for an idempotent or transactional producer.

Without a transactional id a producer gets a new id at epoch 0, or (v3+,
KIP-360) the same id at the next epoch when it names its current one. With a
transactional id the first call gets a new id; each later call aborts what
the previous instance left open and bumps the epoch, fencing that instance;
past epoch 32766 a new id starts at epoch 0, as in Kafka. Ids come in blocks
recorded in the metadata log, so none is given out twice across restarts.
"""

from ... import errors
from ...messages import ApiKey, InitProducerIdResponse
from ..dispatch import handles
from ..state.transactions import MAX_EPOCH, ONGOING, PREPARE_ABORT, PREPARE_COMMIT, Transaction
from ._transactions import fenced


def _answer(error, producer_id=-1, epoch=-1):
    return InitProducerIdResponse(throttle_time_ms=0, error_code=error.code, producer_id=producer_id,
                                  producer_epoch=epoch)


@handles(ApiKey.INIT_PRODUCER_ID, versions=range(0, 6))
def init_producer_id(ctx, request):
    state = ctx.state
    producer_id, epoch = (request.producer_id, request.producer_epoch) if ctx.version >= 3 else (-1, -1)
    if request.transactional_id is None:
        if producer_id >= 0 and 0 <= epoch < MAX_EPOCH:
            return _answer(errors.NONE, producer_id, epoch + 1)
        return _answer(errors.NONE, state.cluster.allocate_producer_id(), 0)
    if not 0 < request.transaction_timeout_ms <= state.config["transaction.max.timeout.ms"]:
        return _answer(errors.INVALID_TRANSACTION_TIMEOUT)
    txn = state.transactions.by_id.get(request.transactional_id)
    if txn is None:
        txn = Transaction(request.transactional_id, state.cluster.allocate_producer_id(), 0,
                          request.transaction_timeout_ms)
        state.transactions.by_id[txn.transactional_id] = txn
    else:
        if producer_id >= 0 and (producer_id, epoch) != (txn.producer_id, txn.epoch):
            return _answer(fenced(ctx.version, 4))
        if txn.state in (ONGOING, PREPARE_ABORT, PREPARE_COMMIT):
            state.end_transaction(txn, commit=txn.state == PREPARE_COMMIT)
        if txn.epoch >= MAX_EPOCH:
            txn.producer_id, txn.epoch = state.cluster.allocate_producer_id(), 0
        else:
            txn.epoch += 1
        txn.timeout_ms = request.transaction_timeout_ms
    state.transactions.save(txn)
    return _answer(errors.NONE, txn.producer_id, txn.epoch)
