"""ListConfigResources (kafka-configs --describe with no entity name, kafka-client-metrics --list): the resources
that configs can be described for. v0 lists client-metrics subscriptions only; v1 takes the types asked for
(none: every type Kafka lists) among topics, brokers, broker loggers, client-metrics subscriptions and groups
(those with configs of their own). It needs DESCRIBE_CONFIGS on the cluster, as in Kafka."""

from ... import errors
from ...messages import ApiKey, ListConfigResourcesResponse
from ..dispatch import handles
from ..state.acls import CLUSTER, CLUSTER_NAME, DESCRIBE_CONFIGS

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
LISTED = (GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)  # in the order Kafka 4.3 lists them, whatever asked
Resource = ListConfigResourcesResponse.ConfigResource


def _names(state, resource_type):
    if resource_type == TOPIC:
        return list(state.cluster.topics)
    if resource_type in (BROKER, BROKER_LOGGER):
        return [str(state.node_id)]
    if resource_type == GROUP:
        return sorted(state.cluster.group_configs)
    return sorted(state.cluster.client_metrics)


@handles(ApiKey.LIST_CONFIG_RESOURCES, versions=range(0, 2))
def list_config_resources(ctx, request):
    if not ctx.allowed(DESCRIBE_CONFIGS, CLUSTER, CLUSTER_NAME):
        return ListConfigResourcesResponse(throttle_time_ms=0, error_code=errors.CLUSTER_AUTHORIZATION_FAILED.code,
                                           config_resources=[])
    asked = list(request.resource_types) if ctx.version >= 1 else [CLIENT_METRICS]
    if any(t not in LISTED for t in asked):
        return ListConfigResourcesResponse(throttle_time_ms=0, error_code=errors.UNSUPPORTED_VERSION.code,
                                           config_resources=[])
    return ListConfigResourcesResponse(throttle_time_ms=0, error_code=errors.NONE.code, config_resources=[
        Resource(resource_name=name, resource_type=resource_type)
        for resource_type in LISTED if not asked or resource_type in asked
        for name in _names(ctx.state, resource_type)])
