"""ElectLeaders (kafka-leader-election): elect a preferred (0) or unclean (1) leader for partitions.

On a single node every partition already has its one replica as preferred leader, so each election is
ELECTION_NOT_NEEDED, as Kafka's controller answers a partition whose leader is already the one asked for; an
unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION. Asked for every partition (null), the controller lists
every topic but leaves out the partitions that need no election: each topic's list is empty.
"""

from ... import errors
from ...messages import ApiKey, ElectLeadersResponse
from ..dispatch import handles
from ..state.acls import ALTER, CLUSTER, CLUSTER_NAME

Result, PartitionResult = ElectLeadersResponse.ReplicaElectionResult, ElectLeadersResponse.PartitionResult


def _elect(state, name, index):
    topic = state.cluster.topics.get(name)
    if topic is None:
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {name}"
    if not 0 <= index < len(topic.partitions):
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {name}-{index}"
    return errors.ELECTION_NOT_NEEDED, None


@handles(ApiKey.ELECT_LEADERS, versions=range(0, 3))
def elect_leaders(ctx, request):
    if not ctx.allowed(ALTER, CLUSTER, CLUSTER_NAME):
        refused = errors.CLUSTER_AUTHORIZATION_FAILED
        return ElectLeadersResponse(throttle_time_ms=0, error_code=refused.code, replica_election_results=[
            Result(topic=asked.topic, partition_result=[
                PartitionResult(partition_id=index, error_code=refused.code, error_message=refused.message)
                for index in asked.partitions]) for asked in request.topic_partitions or ()])
    if request.topic_partitions is None:
        return ElectLeadersResponse(throttle_time_ms=0, error_code=0, replica_election_results=[
            Result(topic=name, partition_result=[]) for name in ctx.state.cluster.topics])
    results = []
    for asked in request.topic_partitions:
        partitions = []
        for index in asked.partitions:
            error, message = _elect(ctx.state, asked.topic, index)
            partitions.append(PartitionResult(partition_id=index, error_code=error.code,
                                              error_message=message if message is not None else error.message))
        results.append(Result(topic=asked.topic, partition_result=partitions))
    return ElectLeadersResponse(throttle_time_ms=0, error_code=0, replica_election_results=results)
