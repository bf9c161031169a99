"""GetTelemetrySubscriptions (KIP-714): what a client is to push and how often (state/telemetry.py). A client
that names no instance id (the zero id) is given one. Asked again within its push interval, it is refused with
THROTTLING_QUOTA_EXCEEDED, unless its last push was refused for its subscription id or compression: then it is
told its subscription at once. A refusal carries no field but its error code, as Kafka's does. Served whether
or not ApiVersions lists it (kafkaproto.client.telemetry.enable), as Kafka serves it; no ACL guards it."""

from ... import errors
from ...messages import ApiKey, GetTelemetrySubscriptionsResponse
from ...uuid import Uuid
from ..dispatch import handles
from ..state.telemetry import ACCEPTED_COMPRESSION_TYPES
from ._telemetry import client, listed


@handles(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, versions=range(0, 1), listed=listed)
def get_telemetry_subscriptions(ctx, request):
    state = ctx.state
    error, instance = state.telemetry.get_subscriptions(request.client_instance_id, client(ctx), ctx.session,
                                                        state.now_ms())
    if instance is None:
        return GetTelemetrySubscriptionsResponse(
            throttle_time_ms=0, error_code=error.code, client_instance_id=Uuid.ZERO, subscription_id=0,
            accepted_compression_types=[], push_interval_ms=0, telemetry_max_bytes=0, delta_temporality=False,
            requested_metrics=[])
    return GetTelemetrySubscriptionsResponse(
        throttle_time_ms=0, error_code=errors.NONE.code, client_instance_id=instance.client_instance_id,
        subscription_id=instance.subscription_id, accepted_compression_types=list(ACCEPTED_COMPRESSION_TYPES),
        push_interval_ms=instance.interval_ms, telemetry_max_bytes=state.config["telemetry.max.bytes"],
        delta_temporality=True, requested_metrics=list(instance.metrics))
