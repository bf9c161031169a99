"""ListTransactions (kafka-transactions list, find-hanging): the coordinator's transactional ids, filtered as
Kafka filters them: by state (names it does not know are listed back as unknown, the others still apply), by
producer id, by how long the transaction has been open (v1: strictly longer than the duration; an id with no
transaction yet counts as open since forever, as in Kafka) and by a regular expression the whole id must match
(v2: INVALID_REGULAR_EXPRESSION when it does not compile)."""

import re
import time

from ... import errors
from ...messages import ApiKey, ListTransactionsResponse
from ..dispatch import handles
from ..state.acls import DESCRIBE, TRANSACTIONAL_ID
from ..state.transactions import STATES

Listed = ListTransactionsResponse.TransactionState


@handles(ApiKey.LIST_TRANSACTIONS, versions=range(0, 3))
def list_transactions(ctx, request):
    response = ListTransactionsResponse(throttle_time_ms=0, error_code=errors.NONE.code, unknown_state_filters=[],
                                        transaction_states=[])
    pattern = None
    if request.transactional_id_pattern:
        try:
            pattern = re.compile(request.transactional_id_pattern)
        except re.error:
            response.error_code = errors.INVALID_REGULAR_EXPRESSION.code
            return response
    states = set()
    for name in request.state_filters:
        if name in STATES:
            states.add(name)
        else:
            response.unknown_state_filters.append(name)
    producer_ids = set(request.producer_id_filters)
    now = int(time.time() * 1000)
    for txn in ctx.state.transactions.by_id.values():
        if ((producer_ids and txn.producer_id not in producer_ids) or (states and txn.state not in states)
                or (request.duration_filter >= 0 and now - txn.start_time_ms <= request.duration_filter)
                or (pattern is not None and not pattern.fullmatch(txn.transactional_id))
                or not ctx.allowed(DESCRIBE, TRANSACTIONAL_ID, txn.transactional_id)):
            continue
        response.transaction_states.append(Listed(transactional_id=txn.transactional_id,
                                                  producer_id=txn.producer_id, transaction_state=txn.state))
    return response
