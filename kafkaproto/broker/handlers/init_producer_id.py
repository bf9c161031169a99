"""InitProducerId: a producer id and epoch for an idempotent or transactional producer.

Without a transactional id every call gets a new id at epoch 0. With one,
the first call gets a new id and each later call bumps the epoch (fencing the
older producer instance); past epoch 32766 a new id starts at epoch 0, as in
Kafka. The ids come in blocks recorded in the metadata log, so none is given
out twice across restarts.
"""

from ... import errors
from ...messages import ApiKey, InitProducerIdResponse
from ..dispatch import handles

MAX_EPOCH = 32766


@handles(ApiKey.INIT_PRODUCER_ID, versions=range(0, 6))
def init_producer_id(ctx, request):
    state = ctx.state
    limit = state.config["transaction.max.timeout.ms"]
    if request.transactional_id is not None and not 0 < request.transaction_timeout_ms <= limit:
        return InitProducerIdResponse(throttle_time_ms=0, error_code=errors.INVALID_TRANSACTION_TIMEOUT.code,
                                      producer_id=-1, producer_epoch=-1)
    if request.transactional_id is None:
        return InitProducerIdResponse(throttle_time_ms=0, error_code=errors.NONE.code,
                                      producer_id=state.cluster.allocate_producer_id(), producer_epoch=0)
    entry = state.transactional_ids.get(request.transactional_id)
    if entry is None or entry[1] >= MAX_EPOCH:
        entry = state.transactional_ids[request.transactional_id] = [state.cluster.allocate_producer_id(), 0]
    else:
        entry[1] += 1
    return InitProducerIdResponse(throttle_time_ms=0, error_code=errors.NONE.code, producer_id=entry[0],
                                  producer_epoch=entry[1])
