"""EndTxn: commit or abort. Markers go to every partition of the transaction, and on commit its
group offsets take effect. Repeating the same end (a retry) succeeds; the other end is INVALID_TXN_STATE.

v5 belongs to transactions version 2 (the epoch bumped at every end), which
this broker does not offer, so it serves v0-4.
"""

from ... import errors
from ...messages import ApiKey, EndTxnResponse
from ..dispatch import handles
from ..state.transactions import COMPLETE_ABORT, COMPLETE_COMMIT, ONGOING
from ._transactions import transaction


@handles(ApiKey.END_TXN, versions=range(0, 5))
def end_txn(ctx, request):
    state = ctx.state
    txn, error = transaction(state, request.transactional_id, request.producer_id, request.producer_epoch,
                             ctx.version, fenced_since=2)
    if txn is not None:
        done = COMPLETE_COMMIT if request.committed else COMPLETE_ABORT
        if txn.state == ONGOING:
            state.end_transaction(txn, request.committed)
        elif txn.state != done:
            error = errors.INVALID_TXN_STATE
    return EndTxnResponse(throttle_time_ms=0, error_code=error.code)
