"""AlterPartitionReassignments (kafka-reassign-partitions): move partitions' replicas to other brokers of the
cluster. Replication being virtual (state/replicas.py), a reassignment is done at once: the new replicas are the
partition's, the running ones its ISR, and its leader stays if it is one of them, else the first running one leads
(a new leader epoch). So none is ever in progress: a cancellation (replicas null) is NO_REASSIGNMENT_IN_PROGRESS.
Replicas on a broker the cluster does not have, or not running, are INVALID_REPLICA_ASSIGNMENT with Kafka's words,
and a changed replica count with allow_replication_factor_change false (v1) INVALID_REPLICATION_FACTOR."""

from ... import errors
from ...messages import ApiKey, AlterPartitionReassignmentsResponse
from ..dispatch import handles
from ..state.acls import ALTER, CLUSTER, CLUSTER_NAME

R = AlterPartitionReassignmentsResponse


def _check(state, topic, name, index, replicas, allow):
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
        if not state.cluster.nodes.is_alive(broker):
            return errors.INVALID_REPLICA_ASSIGNMENT, \
                f"The manual partition assignment includes broker {broker}, but no such broker is registered."
    before = len(topic.partitions[index].replicas)
    if not allow and len(replicas) != before:
        return errors.INVALID_REPLICATION_FACTOR, (f"The replication factor is changed from {before} to "
                                                   f"{len(replicas)} but allowReplicationFactorChange is false")
    return errors.NONE, None


def _reassign(state, partition, replicas):
    nodes = state.cluster.nodes
    isr = [node for node in replicas if nodes.is_alive(node)]
    leader = partition.leader if partition.leader in isr else isr[0]
    state.cluster.change_partition(partition, leader=leader, isr=isr, replicas=replicas)


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
            error, message = _check(ctx.state, topic, item.name, p.partition_index, p.replicas, allow)
            if error is errors.NONE:
                _reassign(ctx.state, topic.partitions[p.partition_index], list(p.replicas))
            partitions.append(R.ReassignablePartitionResponse(partition_index=p.partition_index,
                                                              error_code=error.code, error_message=message))
        out.append(R.ReassignableTopicResponse(name=item.name, partitions=partitions))
    return R(throttle_time_ms=0, allow_replication_factor_change=allow, error_code=0, error_message=None,
             responses=out)
