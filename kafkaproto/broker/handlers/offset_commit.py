"""OffsetCommit: a group's consumed positions, with their leader epoch (v6+) and metadata, kept durably.

A commit with generation -1 and no member id (a consumer outside any group,
"simple" commits) is taken when the group has no members. Otherwise the
member and generation must be current: UNKNOWN_MEMBER_ID,
ILLEGAL_GENERATION, or REBALANCE_IN_PROGRESS while the group rebalances.
From v10 topics are named by ID.
"""

import time

from ... import errors
from ...messages import ApiKey, OffsetCommitResponse
from ...uuid import Uuid
from ..dispatch import handles
from ..state.groups import COMPLETING, PREPARING

MAX_METADATA = 4096  # Kafka's offset.metadata.max.bytes


def _check_member(ctx, request, group):
    if group is not None and group.kind == "consumer":
        return ctx.state.consumer_groups.commit_error(group, request, ctx.version)
    if request.generation_id_or_member_epoch < 0 and not request.member_id:
        return errors.NONE if group is None or not group.members else errors.UNKNOWN_MEMBER_ID
    if group is None:
        return errors.UNKNOWN_MEMBER_ID if ctx.version < 9 else errors.GROUP_ID_NOT_FOUND
    member, error = group.member(request.member_id, request.group_instance_id if ctx.version >= 7 else None)
    if member is None:
        return error
    if request.generation_id_or_member_epoch != group.generation:
        return errors.ILLEGAL_GENERATION
    if group.state in (PREPARING, COMPLETING):
        return errors.REBALANCE_IN_PROGRESS
    member.last_seen = time.monotonic()
    return errors.NONE


@handles(ApiKey.OFFSET_COMMIT, versions=range(2, 11))
def offset_commit(ctx, request):
    state = ctx.state
    group = state.groups.group(request.group_id)
    error = errors.INVALID_GROUP_ID if not request.group_id else _check_member(ctx, request, group)
    by_id = ctx.version >= 10
    now = int(time.time() * 1000)
    topics = []
    commits = []
    for item in request.topics:
        topic, topic_error = state.topic(None if by_id else item.name, item.topic_id if by_id else None)
        partitions = []
        for p in item.partitions:
            code = error
            if code is errors.NONE:
                if topic is None:
                    code = topic_error
                elif not 0 <= p.partition_index < len(topic.partitions):
                    code = errors.UNKNOWN_TOPIC_OR_PARTITION
                elif p.committed_metadata is not None and len(p.committed_metadata.encode()) > MAX_METADATA:
                    code = errors.OFFSET_METADATA_TOO_LARGE
                else:
                    epoch = p.committed_leader_epoch if ctx.version >= 6 else -1
                    commits.append(((topic.name, p.partition_index),
                                    (p.committed_offset, epoch, p.committed_metadata, now)))
            partitions.append(OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=p.partition_index,
                                                                                 error_code=code.code))
        topics.append(OffsetCommitResponse.OffsetCommitResponseTopic(
            name=item.name if not by_id else "", topic_id=item.topic_id if by_id else Uuid.ZERO,
            partitions=partitions))
    if commits:
        state.groups.group(request.group_id, create=True)
        state.groups.commit(request.group_id, commits)
    return OffsetCommitResponse(throttle_time_ms=0, topics=topics)
