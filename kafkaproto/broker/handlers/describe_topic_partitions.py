"""DescribeTopicPartitions: topics and their partitions, in pages of response_partition_limit partitions.

Topics are listed in name order (all of them when none is named); a page that
stops inside the list gives next_cursor, where the next request starts.
"""

from ... import errors
from ...messages import ApiKey, DescribeTopicPartitionsResponse
from ...uuid import Uuid
from ..dispatch import handles
from ..state.acls import DESCRIBE, TOPIC
from .metadata import offline

R = DescribeTopicPartitionsResponse
UNKNOWN_OPERATIONS = -2147483648


@handles(ApiKey.DESCRIBE_TOPIC_PARTITIONS, versions=range(0, 1))
def describe_topic_partitions(ctx, request):
    state = ctx.state
    names = sorted({t.name for t in request.topics} if request.topics else state.cluster.topics)
    start_name, start_partition = (request.cursor.topic_name, request.cursor.partition_index) if request.cursor \
        else (None, 0)
    budget = max(request.response_partition_limit, 1)
    topics, cursor = [], None
    for name in names:
        if start_name is not None and name < start_name:
            continue
        topic = state.cluster.topics.get(name)
        if not ctx.allowed(DESCRIBE, TOPIC, name):
            if request.topics:  # asked for every topic, the client sees those it may describe
                topics.append(R.DescribeTopicPartitionsResponseTopic(
                    error_code=errors.TOPIC_AUTHORIZATION_FAILED.code, name=name, topic_id=Uuid.ZERO,
                    partitions=[], topic_authorized_operations=UNKNOWN_OPERATIONS))
            continue
        if topic is None:
            topics.append(R.DescribeTopicPartitionsResponseTopic(
                error_code=errors.UNKNOWN_TOPIC_OR_PARTITION.code, name=name, topic_id=Uuid.ZERO, partitions=[],
                topic_authorized_operations=UNKNOWN_OPERATIONS))
            continue
        first = start_partition if name == start_name else 0
        partitions = []
        for p in topic.partitions[first:]:
            if budget == 0:
                cursor = R.Cursor(topic_name=name, partition_index=p.index)
                break
            budget -= 1
            partitions.append(R.DescribeTopicPartitionsResponsePartition(
                error_code=errors.NONE.code, partition_index=p.index, leader_id=p.leader, leader_epoch=p.leader_epoch,
                replica_nodes=p.replicas, isr_nodes=p.isr, eligible_leader_replicas=[], last_known_elr=[],
                offline_replicas=offline(state, p)))
        topics.append(R.DescribeTopicPartitionsResponseTopic(
            error_code=errors.NONE.code, name=name, topic_id=topic.topic_id, is_internal=topic.is_internal,
            partitions=partitions, topic_authorized_operations=UNKNOWN_OPERATIONS))
        if cursor is not None:
            break
    return R(throttle_time_ms=0, topics=topics, next_cursor=cursor)
