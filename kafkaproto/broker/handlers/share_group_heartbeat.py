"""ShareGroupHeartbeat (KIP-932): join, stay in and leave a share group; the broker assigns its members the
partitions whose records they share (state/groups/share.py decides, with Kafka's errors and messages).

A member subscribing to a topic it may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED, as from Kafka; what the
heartbeat changed of the group is written to the offsets log before the answer.
"""

from ... import errors
from ...messages import ApiKey, ShareGroupHeartbeatResponse
from ..dispatch import handles
from ..state.acls import DESCRIBE, TOPIC
from ..state.features import share_groups_enabled
from ..state.groups.assignors import topic_order
from ..state.groups.consumer import GroupError
from ._groups import advance, group_refused

R = ShareGroupHeartbeatResponse


def _refused(error, message=None):
    return R(throttle_time_ms=0, error_code=error.code, error_message=message, member_id=None, member_epoch=0,
             heartbeat_interval_ms=0)


@handles(ApiKey.SHARE_GROUP_HEARTBEAT, versions=range(1, 2), enabled=share_groups_enabled)
def share_group_heartbeat(ctx, request):
    refused = group_refused(ctx, request.group_id)
    if refused:
        return _refused(refused)
    if any(not ctx.allowed(DESCRIBE, TOPIC, name) for name in request.subscribed_topic_names or ()):
        return _refused(errors.TOPIC_AUTHORIZATION_FAILED)
    try:
        beat = ctx.state.groups.share_heartbeat(advance(ctx.state), request, ctx.header.client_id or "",
                                                ctx.client_host)
    except GroupError as e:
        return _refused(e.error, e.message)
    ctx.state.changed()
    assignment = None
    if beat.assignment is not None:
        assignment = R.Assignment(topic_partitions=[
            R.TopicPartitions(topic_id=topic_id, partitions=beat.assignment[topic_id])
            for topic_id in topic_order(beat.assignment)])
    return R(throttle_time_ms=0, error_code=0, error_message=None, member_id=beat.member_id,
             member_epoch=beat.member_epoch, heartbeat_interval_ms=beat.interval_ms, assignment=assignment)
