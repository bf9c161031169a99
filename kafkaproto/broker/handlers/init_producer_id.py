"""InitProducerId: a producer id and epoch for an idempotent or transactional producer.

Without a transactional id a producer gets a new id at epoch 0, or (v3+,
KIP-360) the same id at the next epoch when it names its current one. With a
transactional id the transaction coordinator answers
(TransactionCoordinator.init_producer_id). Ids come in blocks recorded in the
metadata log, so none is given out twice across restarts. With an authorizer, a transactional id needs WRITE
on it, an idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
"""

from ... import errors
from ...messages import ApiKey, InitProducerIdResponse
from ..dispatch import handles
from ..state.acls import CLUSTER, CLUSTER_NAME, IDEMPOTENT_WRITE, TOPIC, TRANSACTIONAL_ID, WRITE
from ..state.transactions import MAX_EPOCH


def _answer(error, producer_id=-1, epoch=-1):
    return InitProducerIdResponse(throttle_time_ms=0, error_code=error.code, producer_id=producer_id,
                                  producer_epoch=epoch)


@handles(ApiKey.INIT_PRODUCER_ID, versions=range(0, 6))
def init_producer_id(ctx, request):
    state = ctx.state
    producer_id, epoch = (request.producer_id, request.producer_epoch) if ctx.version >= 3 else (-1, -1)
    if request.transactional_id is None:
        if not (ctx.allowed(IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME) or state.cluster.acls.allowed_on_any(
                ctx.principal, ctx.client_host.lstrip("/"), WRITE, TOPIC)):
            return _answer(errors.CLUSTER_AUTHORIZATION_FAILED)
        if producer_id >= 0 and 0 <= epoch < MAX_EPOCH:
            return _answer(errors.NONE, producer_id, epoch + 1)
        return _answer(errors.NONE, state.cluster.allocate_producer_id(), 0)
    if not ctx.allowed(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return _answer(errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    error, producer_id, epoch = state.transactions.init_producer_id(
        request.transactional_id, request.transaction_timeout_ms, producer_id, epoch, ctx.version)
    return _answer(error, producer_id, epoch)
