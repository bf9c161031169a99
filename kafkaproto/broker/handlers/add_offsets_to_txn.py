"""AddOffsetsToTxn: the transaction will commit offsets for a consumer group (sent before TxnOffsetCommit)."""

from ... import errors
from ...messages import AddOffsetsToTxnResponse, ApiKey
from ..dispatch import handles
from ..state.acls import GROUP, READ, TRANSACTIONAL_ID, WRITE
from ..state.clock import clock_ms


@handles(ApiKey.ADD_OFFSETS_TO_TXN, versions=range(0, 5))
def add_offsets_to_txn(ctx, request):
    if not ctx.allowed(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return AddOffsetsToTxnResponse(throttle_time_ms=0,
                                       error_code=errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code)
    if not ctx.allowed(READ, GROUP, request.group_id):
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=errors.GROUP_AUTHORIZATION_FAILED.code)
    error = ctx.state.transactions.add_offsets(clock_ms(), request.transactional_id, request.producer_id,
                                               request.producer_epoch, ctx.version, request.group_id)
    return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=error.code)
