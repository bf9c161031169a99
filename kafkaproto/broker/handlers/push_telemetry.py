"""PushTelemetry (KIP-714): a client's metrics, pushed at the interval its subscription gave it
(state/telemetry.py checks them as Kafka's ClientMetricsManager does: once per interval, its subscription id,
the compression, the size, and the payload decompressed). With kafkaproto.client.telemetry.enable, the broker
keeps what was pushed (BrokerState.telemetry.pushed; Broker.pushed_telemetry in tests). Served whether or not
ApiVersions lists it, as Kafka serves it; no ACL guards it."""

from ...messages import ApiKey, PushTelemetryResponse
from ..dispatch import handles
from ._telemetry import client, listed


@handles(ApiKey.PUSH_TELEMETRY, versions=range(0, 1), listed=listed)
def push_telemetry(ctx, request):
    state = ctx.state
    error = state.telemetry.push(request, client(ctx), ctx.session, state.now_ms())
    return PushTelemetryResponse(throttle_time_ms=0, error_code=error.code)
