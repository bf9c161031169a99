"""AlterPartitionReassignments (kafka-reassign-partitions): move partitions' replicas to other brokers. A single
node has nowhere to move them: a partition asked to stay where it is ([this broker]) is answered NONE, one asked
onto another broker INVALID_REPLICA_ASSIGNMENT with Kafka's words, and a cancellation (replicas null)
NO_REASSIGNMENT_IN_PROGRESS, as Kafka's controller answers on a cluster of one."""

from ... import errors
from ...messages import ApiKey, AlterPartitionReassignmentsResponse
from ..dispatch import handles
from ..state.acls import ALTER, CLUSTER, CLUSTER_NAME

R = AlterPartitionReassignmentsResponse


def _check(state, topic, name, index, replicas):
    """(error, message) of one partition's new replicas."""
    if topic is None:
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {name}."
    if not 0 <= index < len(topic.partitions):
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {name}:{index}."
    if replicas is None:
        return errors.NO_REASSIGNMENT_IN_PROGRESS, None
    if not replicas:
        return errors.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
    seen = set()
    for broker in replicas:
        if broker in seen:
            return errors.INVALID_REPLICA_ASSIGNMENT, \
                f"The manual partition assignment includes the broker {broker} more than once."
        seen.add(broker)
    for broker in replicas:
        if broker != state.node_id:
            return errors.INVALID_REPLICA_ASSIGNMENT, \
                f"The manual partition assignment includes broker {broker}, but no such broker is registered."
    return errors.NONE, None


@handles(ApiKey.ALTER_PARTITION_REASSIGNMENTS, versions=range(0, 2))
def alter_partition_reassignments(ctx, request):
    allow = request.allow_replication_factor_change if ctx.version >= 1 else True
    if not ctx.allowed(ALTER, CLUSTER, CLUSTER_NAME):
        return R(throttle_time_ms=0, allow_replication_factor_change=allow,
                 error_code=errors.CLUSTER_AUTHORIZATION_FAILED.code, error_message=None, responses=[])
    out = []
    for item in request.topics:
        topic = ctx.state.cluster.topics.get(item.name)
        partitions = []
        for p in item.partitions:
            error, message = _check(ctx.state, topic, item.name, p.partition_index, p.replicas)
            partitions.append(R.ReassignablePartitionResponse(partition_index=p.partition_index,
                                                              error_code=error.code, error_message=message))
        out.append(R.ReassignableTopicResponse(name=item.name, partitions=partitions))
    return R(throttle_time_ms=0, allow_replication_factor_change=allow, error_code=0, error_message=None,
             responses=out)
