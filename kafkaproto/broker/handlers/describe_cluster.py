"""DescribeCluster: the running brokers, one of them named the controller (endpoint type 2 asks for controllers)."""

from ... import errors
from ...messages import ApiKey, DescribeClusterResponse
from ..dispatch import handles


@handles(ApiKey.DESCRIBE_CLUSTER, versions=range(0, 3))
def describe_cluster(ctx, request):
    state = ctx.state
    brokers = [DescribeClusterResponse.DescribeClusterBroker(broker_id=node, host=host, port=port, rack=None)
               for node, host, port in state.brokers(ctx.listener_name)]
    return DescribeClusterResponse(throttle_time_ms=0, error_code=errors.NONE.code,
                                   endpoint_type=request.endpoint_type if ctx.version >= 1 else 1,
                                   cluster_id=state.cluster.cluster_id, controller_id=state.cluster.nodes.controller,
                                   brokers=brokers, cluster_authorized_operations=-2147483648)
