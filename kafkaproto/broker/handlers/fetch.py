"""Fetch: whole record batches from each partition's log, by topic name or (v13+) by topic ID.

The reply starts at the batch holding fetch_offset (consumers skip the
records before it), gives each partition up to partition_max_bytes and the
response up to max_bytes, but always at least one whole batch so a batch
larger than the limits still gets through. When fewer than min_bytes are
ready the request waits up to max_wait_ms for more (the handler returns Wait
and is asked again). read_committed (isolation level 1) stops at the last
stable offset, before the first open transaction, and lists the aborted
transactions in the range so consumers can drop them.

Fetch sessions (KIP-227, v7+): epoch 0 opens one with the partitions named
(the reply carries its id); later fetches carry the id and the next epoch,
add or update partitions and forget others, and are answered with only the
partitions that have records or news (a new high watermark, last stable
offset or log start, or an error). Epoch -1 closes a session. An unknown
session is FETCH_SESSION_ID_NOT_FOUND, a wrong epoch INVALID_FETCH_SESSION_EPOCH,
and a session opened by topic name continued by topic ID (or the reverse)
FETCH_SESSION_TOPIC_ID_ERROR, as in Kafka. The session and topic IDs are resolved when
the request arrives: a fetch that waits keeps its session if another request closes
it meanwhile, and a topic deleted meanwhile is UNKNOWN_TOPIC_OR_PARTITION. With an authorizer, a
topic the consumer may not READ is TOPIC_AUTHORIZATION_FAILED.
"""

from collections import OrderedDict

from ... import errors
from ...messages import ApiKey, FetchResponse
from ...uuid import Uuid
from ..dispatch import Wait, handles
from ..state.acls import READ, TOPIC
from ..state.fetch_sessions import CachedPartition
from ..state.quotas import FETCH as CONSUMER_BYTE_RATE

PartitionData = FetchResponse.PartitionData
READ_COMMITTED = 1
FINAL_EPOCH, INITIAL_EPOCH = -1, 0


def _partition(index, error, high_watermark=-1, log_start_offset=-1, records=b"", stable=-1, aborted=None):
    return PartitionData(partition_index=index, error_code=error.code, high_watermark=high_watermark,
                         last_stable_offset=stable, log_start_offset=log_start_offset,
                         aborted_transactions=aborted, preferred_read_replica=-1, records=records)


def _wanted(request, by_id):
    """OrderedDict (topic key, index) -> CachedPartition for the partitions a request names."""
    out = OrderedDict()
    for item in request.topics:
        key = item.topic_id if by_id else item.topic
        for p in item.partitions:
            out[(key, p.partition)] = CachedPartition(key, item.topic, p.partition, p.fetch_offset,
                                                      p.partition_max_bytes)
    return out


def _error_response(error):
    return FetchResponse(throttle_time_ms=0, error_code=error.code, session_id=0, responses=[])


@handles(ApiKey.FETCH, versions=range(4, 19))
def fetch(ctx, request):
    by_id = ctx.version >= 13
    session_id, epoch = (request.session_id, request.session_epoch) if ctx.version >= 7 else (0, FINAL_EPOCH)
    # The session is looked up once, when the request arrives (as Kafka makes its fetch context then): a fetch
    # that waits goes on with it even if another request closes it meanwhile.
    found = ctx.memo.get("session")
    if found is None:
        found = ctx.memo["session"] = _session(ctx, request, by_id, session_id, epoch)
    if isinstance(found, FetchResponse):
        return found
    session, scope = found
    answers, total, read = _read(ctx, request, scope, by_id)
    if total < request.min_bytes and request.max_wait_ms > 0 and not ctx.final:
        return Wait(request.max_wait_ms, on=read)  # asked again when one of these partitions takes a batch
    # Kafka counts the request's handler time, then the bytes; over either quota, the bytes are taken back.
    throttle = max(ctx.request_throttled(), ctx.throttled(CONSUMER_BYTE_RATE, total))
    if throttle:
        # Over its quota, a consumer gets the throttle time and no data, as from Kafka, and asks again once it
        # may; a session goes on, a new one is not made.
        ctx.unrecord(CONSUMER_BYTE_RATE, total)
        if session is not None:
            session.partitions = scope
            session.epoch = epoch + 1 if epoch < 2**31 - 1 else 1
        return FetchResponse(throttle_time_ms=throttle, error_code=errors.NONE.code,
                             session_id=session.session_id if session is not None else 0, responses=[])
    if session is None and epoch == INITIAL_EPOCH and ctx.version >= 7:
        session = ctx.state.fetch_sessions.create(by_id, scope)
        session_id = session.session_id if session is not None else 0
    elif session is not None:
        session.partitions = scope
        session.epoch = epoch + 1 if epoch < 2**31 - 1 else 1
    else:
        session_id = 0
    return FetchResponse(throttle_time_ms=0, error_code=errors.NONE.code, session_id=session_id,
                         responses=_group(_keep(answers, scope, incremental=epoch > 0), by_id))


def _session(ctx, request, by_id, session_id, epoch):
    """(the fetch session or None, the partitions in scope), or the error response."""
    sessions = ctx.state.fetch_sessions
    session = None
    if epoch in (FINAL_EPOCH, INITIAL_EPOCH):
        if session_id:
            sessions.remove(session_id)  # closed (-1) or replaced by a new one (0)
        scope = _wanted(request, by_id)
    else:
        session = sessions.get(session_id)
        if session is None:
            return _error_response(errors.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return _error_response(errors.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_ids != by_id:
            return _error_response(errors.FETCH_SESSION_TOPIC_ID_ERROR)
        scope = OrderedDict(session.partitions)
        for key, cached in _wanted(request, by_id).items():
            old = scope.get(key)
            if old is not None:  # keep what the last response said, take the new position
                cached.high_watermark, cached.stable, cached.log_start = old.high_watermark, old.stable, \
                    old.log_start
            scope[key] = cached
        for item in request.forgotten_topics_data if ctx.version >= 7 else ():
            key = item.topic_id if by_id else item.topic
            for index in item.partitions:
                scope.pop((key, index), None)
    return session, scope


def _read(ctx, request, scope, by_id):
    """[(CachedPartition, PartitionData)] for every partition in scope, the bytes of records read, and the
    partitions read (a tuple: those whose appends may complete a fetch that waits)."""
    state = ctx.state
    read_committed = request.isolation_level == READ_COMMITTED
    budget = request.max_bytes
    total = 0
    out = []
    # Kafka finds the partitions when a request arrives, and answers those it cannot with an empty (not null)
    # list of aborted transactions; one deleted while the fetch waits fails when its log is read instead: an
    # unknown partition (not an unknown topic ID), with no list.
    found = ctx.memo.get("found")
    read = []
    for cached in scope.values():
        topic, error = state.topic(None if by_id else cached.topic, cached.topic if by_id else None)
        name = topic.name if topic is not None else None if by_id else cached.topic
        if name is not None and not ctx.allowed(READ, TOPIC, name):
            topic, error = None, errors.TOPIC_AUTHORIZATION_FAILED
        partition, perror = state.partition(topic, cached.index) if topic is not None else (None, error)
        if found is not None and (cached.topic, cached.index) in found:
            if partition is None:
                out.append((cached, _partition(cached.index, errors.UNKNOWN_TOPIC_OR_PARTITION)))
                continue
        elif partition is None:
            out.append((cached, _partition(cached.index, perror, aborted=[])))
            continue
        if topic.name != cached.name and by_id:
            cached.name = topic.name
        plog = partition.log
        read.append(partition)
        high = plog.log_end_offset
        stable = state.last_stable_offset(partition)
        if not plog.log_start_offset <= cached.fetch_offset <= high:
            out.append((cached, _partition(cached.index, errors.OFFSET_OUT_OF_RANGE)))
            continue
        limit = min(cached.max_bytes, budget - total)
        upto = stable if read_committed else high
        data = plog.read(cached.fetch_offset, max(limit, 0), upto, ctx.regions) if limit > 0 or total == 0 \
            else b""
        total += len(data)
        aborted = None
        if read_committed:
            aborted = [FetchResponse.AbortedTransaction(producer_id=pid, first_offset=first) for pid, first in
                       partition.transactions.aborted_between(cached.fetch_offset, upto)]
        out.append((cached, _partition(cached.index, errors.NONE, high, plog.log_start_offset, data, stable,
                                       aborted)))
    if found is None:
        ctx.memo["found"] = {(cached.topic, cached.index) for cached, data in out if data.error_code == 0
                             or data.error_code == errors.OFFSET_OUT_OF_RANGE.code}
    return out, total, tuple(read)


def _keep(answers, scope, incremental):
    """The answers to send (all of them, unless incremental: then those with records or news), remembering
    what was said for the session."""
    kept = []
    for cached, data in answers:
        news = (data.error_code != 0 or data.records or cached.high_watermark != data.high_watermark
                or cached.stable != data.last_stable_offset or cached.log_start != data.log_start_offset)
        if news or not incremental:
            kept.append((cached, data))
        cached.high_watermark, cached.stable, cached.log_start = (data.high_watermark, data.last_stable_offset,
                                                                  data.log_start_offset)
    return kept


def _group(answers, by_id):
    """FetchableTopicResponses, one per topic, in the order topics first appear."""
    topics = OrderedDict()
    for cached, data in answers:
        topics.setdefault(cached.topic, (cached, []))[1].append(data)
    return [FetchResponse.FetchableTopicResponse(topic="" if by_id else cached.name,
                                                 topic_id=cached.topic if by_id else Uuid.ZERO,
                                                 partitions=partitions)
            for cached, partitions in topics.values()]
