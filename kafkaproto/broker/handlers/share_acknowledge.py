"""ShareAcknowledge (KIP-932): a share group member says what it did with records it was given: accepted,
released (to be delivered again), rejected, or (v2) still working on them (renew: the lock starts over).

It continues the member's share session (epoch 0 is INVALID_SHARE_SESSION_EPOCH: a session is opened by a
ShareFetch) or closes it (-1), which releases what the member still holds. Each partition is answered with the
error of its acknowledgements, all applied or none (INVALID_RECORD_STATE for records the member does not hold).
"""

from ... import errors
from ...messages import ApiKey, ShareAcknowledgeResponse
from ..dispatch import handles
from ..state.clock import clock_ms
from ..state.features import share_groups_enabled
from ._groups import group_refused
from ._shares import FINAL_EPOCH, INITIAL_EPOCH, Refused, acknowledge, continued_session

R = ShareAcknowledgeResponse


@handles(ApiKey.SHARE_ACKNOWLEDGE, versions=range(1, 3), enabled=share_groups_enabled)
def share_acknowledge(ctx, request):
    state = ctx.state
    lock_ms = state.cluster.group_setting(request.group_id, "share.record.lock.duration.ms") \
        if request.group_id else 0
    try:
        refused = group_refused(ctx, request.group_id)
        if refused:
            raise Refused(refused)
        if request.share_session_epoch == INITIAL_EPOCH:
            raise Refused(errors.INVALID_SHARE_SESSION_EPOCH)
        session = continued_session(state, request, ctx.node_id)
    except Refused as e:
        return R(throttle_time_ms=0, error_code=e.error.code, error_message=e.message,
                 acquisition_lock_timeout_ms=0, responses=[], node_endpoints=[])
    acked = acknowledge(ctx, request, request.topics, clock_ms())
    if request.share_session_epoch == FINAL_EPOCH:
        state.share_sessions.close(session)
        state.release_share_session(session)
    topics = {}
    for (topic_id, index), error in acked.items():
        topics.setdefault(topic_id, []).append(R.PartitionData(
            partition_index=index, error_code=error.code, error_message=None,
            current_leader=R.LeaderIdAndEpoch(leader_id=0, leader_epoch=0)))
    return R(throttle_time_ms=0, error_code=errors.NONE.code, error_message=None,
             acquisition_lock_timeout_ms=lock_ms,
             responses=[R.ShareAcknowledgeTopicResponse(topic_id=t, partitions=ps) for t, ps in topics.items()],
             node_endpoints=[])
