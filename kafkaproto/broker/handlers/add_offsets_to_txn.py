"""AddOffsetsToTxn: the transaction will commit offsets for a consumer group (sent before TxnOffsetCommit)."""


from ... import errors
from ...messages import AddOffsetsToTxnResponse, ApiKey
from ..dispatch import handles
from ..state.transactions import PREPARE_ABORT, PREPARE_COMMIT
from ..state.clock import clock_ms
from ._transactions import transaction


@handles(ApiKey.ADD_OFFSETS_TO_TXN, versions=range(0, 5))
def add_offsets_to_txn(ctx, request):
    state = ctx.state
    txn, error = transaction(state, request.transactional_id, request.producer_id, request.producer_epoch,
                             ctx.version, fenced_since=2)
    if txn is not None and txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
        error = errors.CONCURRENT_TRANSACTIONS
    elif txn is not None and not request.group_id:
        error = errors.INVALID_GROUP_ID
    if error is errors.NONE:
        txn.begin(clock_ms())
        txn.groups.add(request.group_id)
        state.transactions.save(txn)
    return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=error.code)
