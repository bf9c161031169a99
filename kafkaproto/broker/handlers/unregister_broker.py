"""UnregisterBroker (kafka-cluster unregister): forget a broker the cluster knows. Any id but this broker's is
BROKER_ID_NOT_REGISTERED, with Kafka's words. This broker's own is answered NONE, as from Kafka, and changes
nothing: Kafka fences an unregistered broker until it registers again, which a broker that is its own controller
does at once."""

from ... import errors
from ...messages import ApiKey, UnregisterBrokerResponse
from ..dispatch import handles
from ..state.acls import ALTER, CLUSTER, CLUSTER_NAME


@handles(ApiKey.UNREGISTER_BROKER, versions=range(0, 1))
def unregister_broker(ctx, request):
    if not ctx.allowed(ALTER, CLUSTER, CLUSTER_NAME):
        return UnregisterBrokerResponse(throttle_time_ms=0, error_code=errors.CLUSTER_AUTHORIZATION_FAILED.code,
                                        error_message=None)
    if request.broker_id != ctx.state.node_id:
        return UnregisterBrokerResponse(throttle_time_ms=0, error_code=errors.BROKER_ID_NOT_REGISTERED.code,
                                        error_message=f"Broker ID {request.broker_id} is not currently registered")
    return UnregisterBrokerResponse(throttle_time_ms=0, error_code=0, error_message="")
