"""What the share coordinator's five APIs share (InitializeShareGroupState, ReadShareGroupState,
WriteShareGroupState, DeleteShareGroupState, ReadShareGroupStateSummary): Kafka's brokers send them to the broker
that keeps a group's share state; here that is this broker, which keeps it in state/shares.py. They are served as
Kafka serves them to another broker (CLUSTER_ACTION on the cluster, with an authorizer), with its answers for
partitions without state."""

from ... import errors
from ..state.acls import CLUSTER, CLUSTER_ACTION, CLUSTER_NAME

from ._shares import NOT_HOSTED  # noqa: F401 - the state APIs' modules import it from here


def answer(ctx, request, response, result, answer_partition):
    """The response: for each topic's partitions, answer_partition(topic id, partition data) gives the fields of
    its result (error_code and error_message at least); all CLUSTER_AUTHORIZATION_FAILED without the right."""
    allowed = ctx.allowed(CLUSTER_ACTION, CLUSTER, CLUSTER_NAME)
    results = []
    for item in request.topics:
        parts = []
        for p in item.partitions:
            fields = answer_partition(item.topic_id, p) if allowed else {
                "error_code": errors.CLUSTER_AUTHORIZATION_FAILED.code, "error_message": None}
            parts.append(response.PartitionResult(partition=p.partition, **fields))
        results.append(result(topic_id=item.topic_id, partitions=parts))
    return response(results=results)


def hosted(state, topic_id, index):
    """Whether the partition exists."""
    topic = state.cluster.by_id.get(topic_id)
    return topic is not None and 0 <= index < len(topic.partitions)
