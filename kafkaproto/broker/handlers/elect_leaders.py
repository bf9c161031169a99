"""ElectLeaders (kafka-leader-election): elect a preferred (0) or unclean (1) leader for partitions.

A preferred election makes a partition's first replica its leader again, when it runs and is in the ISR
(PREFERRED_LEADER_NOT_AVAILABLE otherwise); an unclean one gives a partition without a running leader any running
replica (ELIGIBLE_LEADERS_NOT_AVAILABLE when none runs). A partition already led as asked is ELECTION_NOT_NEEDED,
as Kafka's controller answers (on a single node, every one); an unknown topic or partition is
UNKNOWN_TOPIC_OR_PARTITION. Asked for every partition (null), the controller elects wherever it can and lists every
topic with the partitions it elected.
"""

from ... import errors
from ...messages import ApiKey, ElectLeadersResponse
from ..dispatch import handles
from ..state.acls import ALTER, CLUSTER, CLUSTER_NAME

Result, PartitionResult = ElectLeadersResponse.ReplicaElectionResult, ElectLeadersResponse.PartitionResult


def _elect(state, name, index, unclean):
    topic = state.cluster.topics.get(name)
    if topic is None:
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {name}"
    if not 0 <= index < len(topic.partitions):
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {name}-{index}"
    partition, nodes = topic.partitions[index], state.cluster.nodes
    if unclean:
        if nodes.is_alive(partition.leader):
            return errors.ELECTION_NOT_NEEDED, None
        leader = next((node for node in partition.replicas if nodes.is_alive(node)), None)
        if leader is None:
            return errors.ELIGIBLE_LEADERS_NOT_AVAILABLE, None
        state.cluster.change_partition(partition, leader=leader, isr=[leader])
        return errors.NONE, None
    preferred = partition.replicas[0]
    if partition.leader == preferred:
        return errors.ELECTION_NOT_NEEDED, None
    if not nodes.is_alive(preferred) or preferred not in partition.isr:
        return errors.PREFERRED_LEADER_NOT_AVAILABLE, None
    state.cluster.change_partition(partition, leader=preferred)
    return errors.NONE, None


@handles(ApiKey.ELECT_LEADERS, versions=range(0, 3))
def elect_leaders(ctx, request):
    if not ctx.allowed(ALTER, CLUSTER, CLUSTER_NAME):
        refused = errors.CLUSTER_AUTHORIZATION_FAILED
        return ElectLeadersResponse(throttle_time_ms=0, error_code=refused.code, replica_election_results=[
            Result(topic=asked.topic, partition_result=[
                PartitionResult(partition_id=index, error_code=refused.code, error_message=refused.message)
                for index in asked.partitions]) for asked in request.topic_partitions or ()])
    unclean = ctx.version >= 1 and request.election_type == 1
    if request.topic_partitions is None:
        results = []
        for name, topic in list(ctx.state.cluster.topics.items()):
            elected = [p.index for p in topic.partitions if _elect(ctx.state, name, p.index, unclean)[0] is errors.NONE]
            results.append(Result(topic=name, partition_result=[
                PartitionResult(partition_id=index, error_code=0, error_message=None) for index in elected]))
        return ElectLeadersResponse(throttle_time_ms=0, error_code=0, replica_election_results=results)
    results = []
    for asked in request.topic_partitions:
        partitions = []
        for index in asked.partitions:
            error, message = _elect(ctx.state, asked.topic, index, unclean)
            partitions.append(PartitionResult(partition_id=index, error_code=error.code,
                                              error_message=message if message is not None or error is errors.NONE
                                              else error.message))
        results.append(Result(topic=asked.topic, partition_result=partitions))
    return ElectLeadersResponse(throttle_time_ms=0, error_code=0, replica_election_results=results)
