"""EndTxn: commit or abort. Markers go to every partition of the transaction, and on commit its
group offsets take effect.

Up to v4 (transactions version 1) the request must carry the producer's current epoch; repeating the
same end (a retry) succeeds, the other end is INVALID_TXN_STATE.

v5 (transactions version 2, KIP-890) bumps the epoch at every end, commit or abort: the markers carry the
new epoch, and the answer gives the producer id and epoch to go on with (a new id at epoch 0 once the epoch
is spent). A retry (the epoch before the bump, after the end went through) gets the same answer again; an
abort with nothing in the transaction still bumps the epoch; anything else from another epoch is
PRODUCER_FENCED; errors carry producer id and epoch -1. This follows Kafka 4.3's coordinator
(TransactionCoordinator.end).
"""

from ... import errors
from ...messages import ApiKey, EndTxnResponse
from ..dispatch import handles
from ..state.acls import TRANSACTIONAL_ID, WRITE


def _answer(error, txn=None):
    if txn is None or error is not errors.NONE:
        return EndTxnResponse(throttle_time_ms=0, error_code=error.code, producer_id=-1, producer_epoch=-1)
    return EndTxnResponse(throttle_time_ms=0, error_code=0, producer_id=txn.producer_id, producer_epoch=txn.epoch)


@handles(ApiKey.END_TXN, versions=range(0, 6))
def end_txn(ctx, request):
    if not ctx.allowed(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return _answer(errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    return _answer(*ctx.state.transactions.end(request.transactional_id, request.producer_id,
                                               request.producer_epoch, request.committed, ctx.version))
