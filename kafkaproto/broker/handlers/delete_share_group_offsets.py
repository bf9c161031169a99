"""DeleteShareGroupOffsets (KIP-932, kafka-share-groups --delete-offsets): forget an empty share group's share
state of whole topics; the next member to fetch from them starts where share.auto.offset.reset says. A topic
without share state is UNKNOWN_TOPIC_OR_PARTITION ("There is no offset information to delete."), as from Kafka."""

from ... import errors
from ...messages import ApiKey, DeleteShareGroupOffsetsResponse
from ...uuid import Uuid
from ..dispatch import handles
from ..state.acls import READ, TOPIC
from ..state.features import share_groups_enabled
from ._shares import NOT_HOSTED, Refused, empty_share_group

R = DeleteShareGroupOffsetsResponse


def _failed(error, message=None):
    return R(throttle_time_ms=0, error_code=error.code, error_message=message, responses=[])


@handles(ApiKey.DELETE_SHARE_GROUP_OFFSETS, versions=range(0, 1), enabled=share_groups_enabled)
def delete_share_group_offsets(ctx, request):
    state = ctx.state
    group_id = request.group_id
    try:
        group = empty_share_group(ctx, group_id)
    except Refused as e:
        return _failed(e.error, e.message)
    out = []
    for item in request.topics:
        topic = state.cluster.topics.get(item.topic_name)
        topic_id, error, message = Uuid.ZERO, errors.NONE, None
        if topic is None:
            error, message = errors.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED
        elif not ctx.allowed(READ, TOPIC, topic.name):
            error = errors.TOPIC_AUTHORIZATION_FAILED
        elif topic.topic_id not in group.initialized:
            error, message = errors.UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete."
        else:
            topic_id = topic.topic_id
            state.shares.delete(group_id, topic_id)
            state.groups.share.forget_topic(group, topic_id)
        out.append(R.DeleteShareGroupOffsetsResponseTopic(topic_name=item.topic_name, topic_id=topic_id,
                                                          error_code=error.code, error_message=message))
    state.groups.save(group_id)
    return R(throttle_time_ms=0, error_code=0, error_message=None, responses=out)
