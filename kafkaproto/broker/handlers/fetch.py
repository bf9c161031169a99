"""Fetch: whole record batches from each partition's log, by topic name or (v13+) by topic ID.

The reply starts at the batch holding fetch_offset (consumers skip the
records before it), gives each partition up to partition_max_bytes and the
response up to max_bytes, but always at least one whole batch so a batch
larger than the limits still gets through. When fewer than min_bytes are
ready the request waits up to max_wait_ms for more (the handler returns Wait
and is asked again). read_committed (isolation level 1) stops at the last
stable offset, before the first open transaction, and lists the aborted
transactions in the range so consumers can drop them. Sessions are not kept: a request opening one gets a
sessionless reply (session id 0) and the client goes on with full fetches; a
request naming a session is FETCH_SESSION_ID_NOT_FOUND.
"""

from ... import errors
from ...messages import ApiKey, FetchResponse
from ..dispatch import Wait, handles

PartitionData = FetchResponse.PartitionData
READ_COMMITTED = 1


def _partition(index, error, high_watermark=-1, log_start_offset=-1, records=b"", stable=-1, aborted=None):
    if error is not errors.NONE:
        aborted = []  # as Kafka answers a partition in error: empty records and an empty (not null) list
    return PartitionData(partition_index=index, error_code=error.code, high_watermark=high_watermark,
                         last_stable_offset=stable, log_start_offset=log_start_offset,
                         aborted_transactions=aborted, preferred_read_replica=-1, records=records)


@handles(ApiKey.FETCH, versions=range(4, 19))
def fetch(ctx, request):
    state = ctx.state
    if request.session_id != 0:
        return FetchResponse(throttle_time_ms=0, error_code=errors.FETCH_SESSION_ID_NOT_FOUND.code, session_id=0,
                             responses=[])
    by_id = ctx.version >= 13
    read_committed = request.isolation_level == READ_COMMITTED
    budget = request.max_bytes
    total = 0
    responses = []
    for item in request.topics:
        topic, error = state.topic(None if by_id else item.topic, item.topic_id if by_id else None)
        partitions = []
        for p in item.partitions:
            partition, perror = state.partition(topic, p.partition) if topic is not None else (None, error)
            if partition is None:
                partitions.append(_partition(p.partition, perror))
                continue
            plog = partition.log
            high = plog.log_end_offset
            stable = state.last_stable_offset(partition)
            if not plog.log_start_offset <= p.fetch_offset <= high:
                partitions.append(_partition(p.partition, errors.OFFSET_OUT_OF_RANGE, high, plog.log_start_offset,
                                             stable=stable))
                continue
            limit = min(p.partition_max_bytes, budget - total)
            upto = stable if read_committed else high
            data = plog.read(p.fetch_offset, max(limit, 0), upto) if limit > 0 or total == 0 else b""
            total += len(data)
            aborted = None
            if read_committed:
                aborted = [FetchResponse.AbortedTransaction(producer_id=pid, first_offset=first) for pid, first in
                           state.partition_transactions[partition].aborted_between(p.fetch_offset, upto)]
            partitions.append(_partition(p.partition, errors.NONE, high, plog.log_start_offset, data, stable,
                                         aborted))
        responses.append(FetchResponse.FetchableTopicResponse(topic=item.topic, topic_id=item.topic_id,
                                                              partitions=partitions))
    if total < request.min_bytes and request.max_wait_ms > 0 and not ctx.final:
        return Wait(request.max_wait_ms)
    return FetchResponse(throttle_time_ms=0, error_code=errors.NONE.code, session_id=0, responses=responses)
