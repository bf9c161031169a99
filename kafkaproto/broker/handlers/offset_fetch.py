"""OffsetFetch: a group's committed offsets (all of them when topics is null), one group (v1-7) or several (v8+).

A partition with nothing committed answers offset -1 with empty metadata.
From v10 topics are named by ID.
"""

from ... import errors
from ...messages import ApiKey, OffsetFetchResponse
from ...uuid import Uuid
from ..dispatch import handles
from ..state.acls import DESCRIBE, TOPIC
from ._groups import group_refused

R = OffsetFetchResponse


def _committed(ctx, group_id, wanted, partition_class):
    """{topic name: [partition responses]} for one group; wanted: [(name, [partitions])] or None for all."""
    offsets = ctx.state.groups.committed(group_id)
    if wanted is None:
        wanted = {}
        for (topic, partition) in sorted(offsets):
            if ctx.allowed(DESCRIBE, TOPIC, topic):  # asked for all, the client sees those it may describe
                wanted.setdefault(topic, []).append(partition)
        wanted = list(wanted.items())
    out = []
    for name, partitions in wanted:
        rows = []
        refused = not ctx.allowed(DESCRIBE, TOPIC, name)
        for index in partitions:
            offset, epoch, metadata, _ = (-1, -1, "", 0) if refused else offsets.get((name, index), (-1, -1, "", 0))
            rows.append(partition_class(partition_index=index, committed_offset=offset,
                                        committed_leader_epoch=epoch if ctx.version >= 5 else -1,
                                        metadata=metadata if metadata is not None else "",
                                        error_code=(errors.TOPIC_AUTHORIZATION_FAILED if refused
                                                    else errors.NONE).code))
        out.append((name, rows))
    return out


@handles(ApiKey.OFFSET_FETCH, versions=range(1, 11))
def offset_fetch(ctx, request):
    state = ctx.state
    if ctx.version < 8:
        refused = group_refused(ctx, request.group_id, DESCRIBE)
        if refused:
            return R(throttle_time_ms=0, error_code=refused.code, topics=[])
        wanted = None if request.topics is None else [(t.name, list(t.partition_indexes)) for t in request.topics]
        found = _committed(ctx, request.group_id, wanted, R.OffsetFetchResponsePartition)
        return R(throttle_time_ms=0, error_code=errors.NONE.code,
                 topics=[R.OffsetFetchResponseTopic(name=name, partitions=rows) for name, rows in found])
    by_id = ctx.version >= 10
    groups = []
    for group in request.groups:
        # from v9 a consumer-protocol member names itself and its epoch, which must be current
        error = group_refused(ctx, group.group_id, DESCRIBE) or (
            state.groups.fetch_error(group.group_id, group.member_id, group.member_epoch)
            if ctx.version >= 9 else errors.NONE)
        if error is not errors.NONE:
            groups.append(R.OffsetFetchResponseGroup(group_id=group.group_id, topics=[], error_code=error.code))
            continue
        names = {}
        if group.topics is None:
            wanted = None
        else:
            wanted = []
            for t in group.topics:
                topic, _ = state.topic(None, t.topic_id) if by_id else (None, None)
                name = topic.name if topic is not None else t.name
                names[name] = t.topic_id
                wanted.append((name, list(t.partition_indexes)))
        found = _committed(ctx, group.group_id, wanted, R.OffsetFetchResponsePartitions)
        topics = []
        for name, rows in found:
            topic_id = names.get(name)
            if by_id and topic_id is None:
                known = state.cluster.topics.get(name)
                topic_id = known.topic_id if known is not None else Uuid.ZERO
            topics.append(R.OffsetFetchResponseTopics(name="" if by_id else name,
                                                      topic_id=topic_id if by_id else Uuid.ZERO, partitions=rows))
        groups.append(R.OffsetFetchResponseGroup(group_id=group.group_id, topics=topics, error_code=errors.NONE.code))
    return R(throttle_time_ms=0, groups=groups)
