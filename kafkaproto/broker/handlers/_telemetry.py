"""What GetTelemetrySubscriptions and PushTelemetry share: who the client is, as the subscriptions' match
patterns see it (state/telemetry.py), and whether ApiVersions lists the two."""


def listed(state):
    """Kafka lists client telemetry's APIs only with a telemetry receiver plugin; here, with
    kafkaproto.client.telemetry.enable (both are answered either way, as Kafka answers them)."""
    return state.config["kafkaproto.client.telemetry.enable"]


def client(ctx):
    """A client's attributes but its instance id: client id, software (from its ApiVersions; "unknown" before
    it), address and port (None where they are not known)."""
    session = ctx.session
    name, version = session.client_software if session is not None else ("unknown", "unknown")
    host = ctx.client_host.lstrip("/") or None
    port = session.peer.rpartition(":")[2] if session is not None and ":" in session.peer else None
    return {"client_id": ctx.header.client_id, "client_software_name": name, "client_software_version": version,
            "client_source_address": host, "client_source_port": port}
