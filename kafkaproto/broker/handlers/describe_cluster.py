"""DescribeCluster: this broker, which is also the controller (endpoint type 2 asks for controllers)."""

from ... import errors
from ...messages import ApiKey, DescribeClusterResponse
from ..dispatch import handles


@handles(ApiKey.DESCRIBE_CLUSTER, versions=range(0, 3))
def describe_cluster(ctx, request):
    state = ctx.state
    host, port = ctx.endpoint
    broker = DescribeClusterResponse.DescribeClusterBroker(broker_id=state.node_id, host=host, port=port, rack=None)
    return DescribeClusterResponse(throttle_time_ms=0, error_code=errors.NONE.code,
                                   endpoint_type=request.endpoint_type if ctx.version >= 1 else 1,
                                   cluster_id=state.cluster.cluster_id, controller_id=state.node_id,
                                   brokers=[broker], cluster_authorized_operations=-2147483648)
