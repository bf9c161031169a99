"""ConsumerGroupHeartbeat (KIP-848): join, stay in and leave a consumer group whose partitions the broker assigns.

The group coordinator decides (GroupCoordinator.consumer_heartbeat, with the
rules of state/groups/consumer.py); this module turns its answer, or its error
with Kafka's message, into the response. The assignment is sent only when
the member must be told it. What the heartbeat changed of the group (epochs,
assignments, members) is written to the offsets log before the answer, so it
survives a restart.
"""

from ...messages import ApiKey, ConsumerGroupHeartbeatResponse
from ..dispatch import handles
from ..state.features import consumer_groups_enabled
from ..state.groups.assignors import topic_order
from ..state.groups.consumer import GroupError
from ._groups import advance, group_refused

R = ConsumerGroupHeartbeatResponse


@handles(ApiKey.CONSUMER_GROUP_HEARTBEAT, versions=range(0, 2), enabled=consumer_groups_enabled)
def consumer_group_heartbeat(ctx, request):
    refused = group_refused(ctx, request.group_id)
    if refused:
        return R(throttle_time_ms=0, error_code=refused.code, error_message=None, member_id=None, member_epoch=0,
                 heartbeat_interval_ms=0)
    try:
        beat = ctx.state.groups.consumer_heartbeat(advance(ctx.state), request, ctx.version,
                                                   ctx.header.client_id or "", ctx.client_host)
    except GroupError as e:
        return R(throttle_time_ms=0, error_code=e.error.code, error_message=e.message, member_id=None,
                 member_epoch=0, heartbeat_interval_ms=0)
    ctx.state.changed()
    assignment = None
    if beat.assignment is not None:
        assignment = R.Assignment(topic_partitions=[
            R.TopicPartitions(topic_id=topic_id, partitions=beat.assignment[topic_id])
            for topic_id in topic_order(beat.assignment)])
    return R(throttle_time_ms=0, error_code=0, error_message=None, member_id=beat.member_id,
             member_epoch=beat.member_epoch, heartbeat_interval_ms=beat.interval_ms, assignment=assignment)
