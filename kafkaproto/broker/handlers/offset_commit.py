"""OffsetCommit: a group's consumed positions, with their leader epoch (v6+) and metadata, kept durably.

Who may commit is the group's rule (GroupCoordinator.commit_error; for a
classic group ClassicGroup.validate_commit): a member
of the current generation, in any state but CompletingRebalance; with
generation -1 and no member id (a consumer outside group management), while
the group is empty. A group that does not exist takes such a commit and is
made; a commit naming a generation to a group that does not exist is
ILLEGAL_GENERATION, from v9 GROUP_ID_NOT_FOUND. A KIP-848 consumer group checks
member epochs instead (ConsumerCoordinator.check_commit). From v10 topics are named by ID.
"""

from ... import errors
from ...messages import ApiKey, OffsetCommitResponse
from ...uuid import Uuid
from ..dispatch import handles
from ..state.acls import READ, TOPIC
from ._groups import advance, group_refused

MAX_METADATA = 4096  # Kafka's offset.metadata.max.bytes


@handles(ApiKey.OFFSET_COMMIT, versions=range(2, 11))
def offset_commit(ctx, request):
    state = ctx.state
    # "" too is a group id: Kafka 3.9 and 4.3 take it as any other
    error = group_refused(ctx, request.group_id) or state.groups.commit_error(
        advance(state), request.group_id, request, ctx.version, request.generation_id_or_member_epoch,
        request.member_id, request.group_instance_id if ctx.version >= 7 else None)
    by_id = ctx.version >= 10
    now = state.now_ms()
    topics = []
    commits = []
    topic_ids = {}
    for item in request.topics:
        topic, topic_error = state.topic(None if by_id else item.name, item.topic_id if by_id else None)
        name = topic.name if topic is not None else None if by_id else item.name
        if name is not None and not ctx.allowed(READ, TOPIC, name):
            topic, topic_error = None, errors.TOPIC_AUTHORIZATION_FAILED
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
                    topic_ids[topic.name] = topic.topic_id  # the record keeps it, as Kafka 4.3's does
            partitions.append(OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=p.partition_index,
                                                                                 error_code=code.code))
        topics.append((error is errors.NONE and topic is None, OffsetCommitResponse.OffsetCommitResponseTopic(
            name=item.name if not by_id else "", topic_id=item.topic_id if by_id else Uuid.ZERO,
            partitions=partitions)))
    if commits:
        state.groups.commit(request.group_id, commits, topic_ids)
    # As Kafka answers: the topics refused before the coordinator (not allowed, unknown) first.
    return OffsetCommitResponse(throttle_time_ms=0, topics=[t for refused, t in topics if refused]
                                + [t for refused, t in topics if not refused])
