"""ShareFetch (KIP-932): a share group member's records, each acquired for it alone (state/shares.py), and the
acknowledgements of those it had.

The request opens (epoch 0), continues or closes (-1) the member's share session on this broker (each broker of a
cluster keeps its own, as Kafka's do), whose partitions add up over requests (ForgottenTopicsData takes some out);
acknowledgements ride on any but the opening request. Every partition of the session this broker leads is fetched
from (one whose leader moved away is answered NOT_LEADER_OR_FOLLOWER, with its leader): records made available
again first, then new ones, whole log batches at a time, at most max_records in all (at least one batch) and
max_bytes. With nothing to give, the request waits up to max_wait_ms for records to come or be released. A
partition is answered with the log's batches from the first record acquired to the last (records among them that
were not acquired are the client's to skip) and the acquired ranges with their delivery counts; only partitions
with records, an error or acknowledgements are answered, as from Kafka.

As from Kafka: acknowledgements at epoch 0 are INVALID_REQUEST; an unknown session SHARE_SESSION_NOT_FOUND; a
wrong epoch INVALID_SHARE_SESSION_EPOCH; more sessions than group.share.max.share.sessions
SHARE_SESSION_LIMIT_REACHED; a group the client may not READ GROUP_AUTHORIZATION_FAILED, a topic
TOPIC_AUTHORIZATION_FAILED; an unknown topic id UNKNOWN_TOPIC_ID. The answer says how long records stay locked
(acquisition_lock_timeout_ms, the group's share.record.lock.duration.ms).
"""

from ... import errors
from ...messages import ApiKey, ShareFetchResponse
from ..dispatch import Wait, handles
from ..routing import led_elsewhere
from ..state.acls import READ, TOPIC
from ..state.clock import clock_ms
from ..state.features import share_groups_enabled
from ..state.log import headers
from ._groups import group_refused
from ._shares import FINAL_EPOCH, INITIAL_EPOCH, Refused, acknowledge, continued_session

R = ShareFetchResponse
READ_COMMITTED = "read_committed"
MAX_READ = 8 << 20  # bytes of batches read from a partition to find what to acquire, at most


def _refused(error, message=None):
    return R(throttle_time_ms=0, error_code=error.code, error_message=message, acquisition_lock_timeout_ms=0,
             responses=[], node_endpoints=[])


def _begin(ctx, request):
    """(session, closing) once per request, or Refused."""
    state = ctx.state
    refused = group_refused(ctx, request.group_id)
    if refused:
        raise Refused(refused)
    if not request.group_id or not request.member_id:
        raise Refused(errors.INVALID_REQUEST)
    epoch = request.share_session_epoch
    if epoch == INITIAL_EPOCH:
        if any(p.acknowledgement_batches for t in request.topics for p in t.partitions):
            raise Refused(errors.INVALID_REQUEST)
        try:
            session, _ = state.share_sessions.open(request.group_id, request.member_id, ctx.session, ctx.node_id)
        except Exception as e:
            raise Refused(getattr(e, "error", errors.UNKNOWN_SERVER_ERROR)) from None
    else:
        session = continued_session(state, request, ctx.node_id)
    for item in request.topics:
        for p in item.partitions:
            session.partitions[(item.topic_id, p.partition_index)] = None
    for item in request.forgotten_topics_data:
        for index in item.partitions:
            session.partitions.pop((item.topic_id, index), None)
    return session, epoch == FINAL_EPOCH


@handles(ApiKey.SHARE_FETCH, versions=range(1, 3), enabled=share_groups_enabled)
def share_fetch(ctx, request):
    begun = ctx.memo.get("begun")
    if begun is None:
        try:
            begun = ctx.memo["begun"] = _begin(ctx, request)
        except Refused as e:
            begun = ctx.memo["begun"] = _refused(e.error, e.message)
    if isinstance(begun, R):
        return begun
    session, closing = begun
    if not closing and ctx.state.share_sessions.get(request.group_id, request.member_id, ctx.node_id) is not session:
        # closed or replaced by another request while this one waited
        return _refused(errors.SHARE_SESSION_NOT_FOUND)
    order = list(session.partitions)  # the answer's order (a partition that does not exist leaves the session)
    # The fetch comes first and the acknowledgements after, as on Kafka, whose acknowledgements take effect once
    # the share coordinator has written them: records released by this request go to a later one, unless this
    # one found nothing else.
    answers = {} if closing else _fetch(ctx, request, session)
    acked = ctx.memo.get("acked")
    if acked is None:
        acked = ctx.memo["acked"] = acknowledge(ctx, request, request.topics, clock_ms()) \
            if request.share_session_epoch != INITIAL_EPOCH else {}
        if closing:
            ctx.state.share_sessions.close(session)
            ctx.state.release_share_session(session)
        elif acked and not any(a[1] for a in answers.values()):
            answers = {**answers, **_fetch(ctx, request, session)}
    # Records or an error answer at once; otherwise the request waits for records to come or be released.
    if not any(acquired or error is not errors.NONE for error, acquired, _ in answers.values()) and \
            request.max_wait_ms > 0 and not ctx.final and not closing and request.max_records != 0:
        return Wait(request.max_wait_ms)
    lock_ms = ctx.state.cluster.group_setting(request.group_id, "share.record.lock.duration.ms")
    topics = {}
    for key in dict.fromkeys([*order, *acked]):
        error, acquired, records = answers.get(key, (errors.NONE, [], b""))
        if error is errors.NONE and not acquired and key not in acked:
            continue
        ack_error = acked.get(key, errors.NONE)
        topics.setdefault(key[0], []).append(R.PartitionData(
            partition_index=key[1], error_code=error.code, error_message=None,
            acknowledge_error_code=ack_error.code, acknowledge_error_message=None,
            current_leader=_leader(ctx, key, error), records=records,
            acquired_records=[R.AcquiredRecords(first_offset=a, last_offset=b, delivery_count=c)
                              for a, b, c in acquired]))
    return R(throttle_time_ms=0, error_code=errors.NONE.code, error_message=None,
             acquisition_lock_timeout_ms=lock_ms,
             responses=[R.ShareFetchableTopicResponse(topic_id=t, partitions=ps) for t, ps in topics.items()],
             node_endpoints=[])


def _leader(ctx, key, error):
    """Where the partition is led, for a broker that does not lead it (KIP-951); 0s otherwise, as from Kafka."""
    if error is errors.NOT_LEADER_OR_FOLLOWER:
        partition = ctx.state.cluster.by_id[key[0]].partitions[key[1]]
        return R.LeaderIdAndEpoch(leader_id=partition.leader, leader_epoch=partition.leader_epoch)
    return R.LeaderIdAndEpoch(leader_id=0, leader_epoch=0)


def _fetch(ctx, request, session):
    """{(topic id, partition): (error, [(first, last, deliveries)], records)} for the session's
    partitions: the records acquired for the member."""
    state = ctx.state
    group_id, member_id = request.group_id, request.member_id
    setting = state.cluster.group_setting
    now = clock_ms()
    lock_ms = setting(group_id, "share.record.lock.duration.ms")
    limit = state.delivery_limit(group_id)
    max_locks = setting(group_id, "share.partition.max.record.locks")
    read_committed = setting(group_id, "share.isolation.level") == READ_COMMITTED
    budget = request.max_records if ctx.version >= 1 else 500
    bytes_left = request.max_bytes
    out = {}
    keys = list(session.partitions)
    turn = request.share_session_epoch % len(keys) if keys and request.share_session_epoch > 0 else 0
    for key in keys[turn:] + keys[:turn]:  # Kafka's round robin: each request starts one partition further
        topic_id, index = key
        topic = state.cluster.by_id.get(topic_id)
        if topic is None or not 0 <= index < len(topic.partitions):
            # answered once, and not kept in the session: a client cannot fill one with partitions that do not
            # exist (Kafka keeps them, and answers them again each time)
            out[key] = (errors.UNKNOWN_TOPIC_ID if topic is None else errors.UNKNOWN_TOPIC_OR_PARTITION, [], b"")
            del session.partitions[key]
            continue
        if not ctx.allowed(READ, TOPIC, topic.name):
            out[key] = (errors.TOPIC_AUTHORIZATION_FAILED, [], b"")
            continue
        partition, error = state.partition(topic, index)
        if partition is not None and led_elsewhere(ctx, partition):  # its leader moved since it joined the session
            partition, error = None, errors.NOT_LEADER_OR_FOLLOWER
        if partition is None:
            out[key] = (error, [], b"")
            continue
        if budget <= 0 or bytes_left <= 0:
            out[key] = (errors.NONE, [], b"")
            continue
        share = state.shares.get(group_id, topic_id, index)
        if share is None:
            # no share state: the group never subscribed to it (or is no share group). Kafka's share partition
            # cannot be loaded then (its share coordinator refuses to read it), and the fetch says so
            out[key] = (errors.UNKNOWN_SERVER_ERROR, [], b"")
            continue
        plog = partition.log
        changed = share.begin(plog, setting(group_id, "share.auto.offset.reset"), state.now_ms())
        changed |= share.follow_log_start(plog.log_start_offset)
        upto = state.last_stable_offset(partition) if read_committed else plog.log_end_offset
        batches = []
        if share.end < upto and share.end - share.start < max_locks:
            data = plog.read(share.end, min(bytes_left, MAX_READ), upto)
            aborted = partition.transactions.aborted_between(share.end, upto) if read_committed else ()
            for batch in headers(bytes(data)):
                dropped = read_committed and batch.is_transactional and not batch.is_control and any(
                    pid == batch.producer_id and first <= batch.base_offset <= last for pid, first, last in
                    _spans(partition, aborted))
                batches.append((batch.base_offset, batch.last_offset, dropped))
        acquired = share.acquire(member_id, budget, max_locks, batches, now, lock_ms, limit,
                                 request.batch_size if ctx.version >= 1 else 0, upto)
        if acquired or changed:
            state.shares.save((group_id, topic_id, index))
        records = b""
        if acquired:
            first, last = acquired[0][0], max(r[1] for r in acquired)
            records = bytes(plog.read(first, 2**31 - 1, last + 1))
            bytes_left -= len(records)
            budget -= sum(b - a + 1 for a, b, _ in acquired)
        out[key] = (errors.NONE, acquired, records)
    return out


def _spans(partition, aborted):
    """(producer id, first offset, last offset) of the aborted transactions listed."""
    wanted = set(aborted)
    return [(pid, first, last) for pid, first, last in partition.transactions.aborted if (pid, first) in wanted]
