"""ShareGroupDescribe (KIP-932): a share group's epochs, assignor and members, with each member's partitions
(topics by ID and name). A group of another kind, or none, is GROUP_ID_NOT_FOUND."""

from ... import errors
from ...messages import ApiKey, ShareGroupDescribeResponse
from ..dispatch import handles
from ..state.acls import DESCRIBE
from ..state.features import share_groups_enabled
from ..state.groups.assignors import java_order, string_hash, topic_order
from ..state.groups.consumer import GroupError
from ._groups import advance, group_refused

R = ShareGroupDescribeResponse
UNKNOWN_OPERATIONS = -2147483648


def _assignment(cluster, partitions):
    listed = []
    for topic_id in topic_order(partitions):
        topic = cluster.by_id.get(topic_id)
        if topic is not None and partitions[topic_id]:
            listed.append(R.TopicPartitions(topic_id=topic_id, topic_name=topic.name,
                                            partitions=sorted(partitions[topic_id])))
    return R.Assignment(topic_partitions=listed)


def _failed(group_id, error, message=None):
    return R.DescribedGroup(group_id=group_id, error_code=error.code, error_message=message, group_state="",
                            group_epoch=0, assignment_epoch=0, assignor_name="", members=[],
                            authorized_operations=UNKNOWN_OPERATIONS)


@handles(ApiKey.SHARE_GROUP_DESCRIBE, versions=range(1, 2), enabled=share_groups_enabled)
def share_group_describe(ctx, request):
    advance(ctx.state)
    coordinator = ctx.state.groups
    described = [_failed("", errors.INVALID_GROUP_ID) for group_id in request.group_ids if not group_id]
    for group_id in filter(None, request.group_ids):
        if group_refused(ctx, group_id, DESCRIBE):
            described.append(_failed(group_id, errors.GROUP_AUTHORIZATION_FAILED))
            continue
        try:
            group = coordinator.share_group(group_id)
        except GroupError as e:
            described.append(_failed(group_id, e.error, e.message))
            continue
        members = [R.Member(member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                            client_id=m.client_id, client_host=m.client_host,
                            subscribed_topic_names=java_order(m.subscribed, string_hash, copied=True),
                            assignment=_assignment(ctx.state.cluster, m.assigned))
                   for m in group.members.values()]
        described.append(R.DescribedGroup(
            group_id=group_id, error_code=errors.NONE.code, error_message=None, group_state=group.state,
            group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
            assignor_name=ctx.state.config["group.share.assignors"].split(",")[0].strip(), members=members,
            authorized_operations=UNKNOWN_OPERATIONS))
    return R(throttle_time_ms=0, groups=described)
