"""ConsumerGroupDescribe (KIP-848): a consumer group's epochs, assignor and members, with each member's current
and target assignment (topics by ID and name). A classic group, or none, is GROUP_ID_NOT_FOUND."""

from ... import errors
from ...messages import ApiKey, ConsumerGroupDescribeResponse
from ..dispatch import handles
from ..state.acls import DESCRIBE
from ..state.features import consumer_groups_enabled
from ..state.groups.assignors import java_order, string_hash, topic_order
from ..state.groups.consumer import GroupError
from ._groups import group_refused

R = ConsumerGroupDescribeResponse
UNKNOWN_OPERATIONS = -2147483648
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1


def _assignment(cluster, partitions):
    listed = []
    for topic_id in topic_order(partitions):
        topic = cluster.by_id.get(topic_id)
        if topic is not None and partitions[topic_id]:
            listed.append(R.TopicPartitions(topic_id=topic_id, topic_name=topic.name,
                                            partitions=sorted(partitions[topic_id])))
    return R.Assignment(topic_partitions=listed)


@handles(ApiKey.CONSUMER_GROUP_DESCRIBE, versions=range(0, 2), enabled=consumer_groups_enabled)
def consumer_group_describe(ctx, request):
    coordinator = ctx.state.groups
    # As Kafka does, the ids that cannot name a group are answered first, then the groups.
    described = [R.DescribedGroup(group_id="", error_code=errors.INVALID_GROUP_ID.code,
                                  authorized_operations=UNKNOWN_OPERATIONS)
                 for group_id in request.group_ids if not group_id]
    for group_id in filter(None, request.group_ids):
        if group_refused(ctx, group_id, DESCRIBE):
            described.append(R.DescribedGroup(group_id=group_id, error_code=errors.GROUP_AUTHORIZATION_FAILED.code,
                                              authorized_operations=UNKNOWN_OPERATIONS))
            continue
        try:
            group = coordinator.consumer_group(group_id)
        except GroupError as e:
            described.append(R.DescribedGroup(group_id=group_id, error_code=e.error.code, error_message=e.message,
                                              authorized_operations=UNKNOWN_OPERATIONS))
            continue
        members = [R.Member(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
            client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=java_order(m.subscribed_names, string_hash, copied=True),
            subscribed_topic_regex=m.regex, assignment=_assignment(ctx.state.cluster, m.assigned),
            target_assignment=_assignment(ctx.state.cluster, group.target.get(m.member_id, {})),
            member_type=(CLASSIC_MEMBER if m.uses_classic_protocol else CONSUMER_MEMBER) if ctx.version >= 1 else -1)
            for m in group.members.values()]
        described.append(R.DescribedGroup(
            group_id=group_id, error_code=errors.NONE.code, group_state=group.state, group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=group.preferred_assignor(coordinator.consumer.assignors[0]),
            members=members, authorized_operations=UNKNOWN_OPERATIONS))
    return R(throttle_time_ms=0, groups=described)
