"""ListPartitionReassignments: the reassignments in progress, for the partitions asked (or all). A single node
has nowhere to move a replica, so none is ever in progress: the answer lists nothing, whatever topics (known or
not) the request names, as Kafka's controller answers for partitions that are not moving."""

from ... import errors
from ...messages import ApiKey, ListPartitionReassignmentsResponse
from ..dispatch import handles
from ..state.acls import CLUSTER, CLUSTER_NAME, DESCRIBE


@handles(ApiKey.LIST_PARTITION_REASSIGNMENTS, versions=range(0, 1))
def list_partition_reassignments(ctx, request):
    allowed = ctx.allowed(DESCRIBE, CLUSTER, CLUSTER_NAME)
    return ListPartitionReassignmentsResponse(
        throttle_time_ms=0, error_code=0 if allowed else errors.CLUSTER_AUTHORIZATION_FAILED.code, error_message=None,
        topics=[])
