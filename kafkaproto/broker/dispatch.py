"""Which API each handler answers, at which versions; ApiVersions is built from this table.

    @handles(ApiKey.FETCH, versions=range(4, 19))
    def fetch(ctx, request): ...            # -> a FetchResponse, or Wait(ms) to be asked again later

A handler takes the decoded request and a Context (the broker's state, the
request header, the time) and returns the response body. It does no I/O.
The version ranges are Apache Kafka 4.3's, for the APIs implemented here.
"""

from time import monotonic_ns
from typing import NamedTuple

from ..messages import ApiKey
from ..registry import api
from .faults import Faults
from .outcomes import Close, Wait
from .routing import route
from .state.quotas import REQUEST


class Handler(NamedTuple):
    api_key: int
    versions: range
    advertised_min: int  # what ApiVersions says; below versions.start for Produce, as Kafka does
    function: object
    enabled: object = None  # enabled(state): whether this broker serves it; None: always
    listed: object = None  # listed(state): whether ApiVersions lists it, when served; None: always


HANDLERS = {}


def handles(api_key, versions, advertised_min=None, enabled=None, listed=None):
    """Register the decorated function as the handler of api_key at versions.

    enabled(state) makes it a feature a broker's configuration turns on; such an API may come
    from an extension that is not loaded (the broker refuses to start when it is enabled then).
    listed(state) serves it always but lists it in ApiVersions only when it holds, as Kafka answers client
    telemetry's requests and lists them only with a telemetry receiver configured.
    """
    try:
        known = api(api_key).valid_versions
    except KeyError:
        if enabled is None:
            raise
        known = versions
    if versions.start < known.start or versions.stop > known.stop:
        raise ValueError(f"{api(api_key).name} versions {versions} are not all known ({known})")

    def register(function):
        HANDLERS[int(api_key)] = Handler(int(api_key), versions,
                                         versions.start if advertised_min is None else advertised_min, function,
                                         enabled, listed)
        return function

    return register


def served(handler, state):
    return handler.enabled is None or handler.enabled(state)


class Context:
    """What a handler knows besides the request: the state, the header, and whether it may still wait."""

    __slots__ = ("state", "header", "version", "final", "session", "client_host", "memo", "regions",
                 "throttle_ms", "handler_ns", "began_ns", "request_counted", "node_id")

    def __init__(self, state, header, final=False, session=None, client_host="", regions=None, node_id=None):
        self.state = state
        # the broker of the cluster the request came to (state/replicas.py); the first one by default
        self.node_id = state.node_id if node_id is None else node_id
        self.header = header
        self.version = header.request_api_version
        self.final = final
        self.session = session  # the connection's security.Session (None in tests that need none)
        self.client_host = client_host
        self.memo = {}  # what a handler keeps between the times one request is asked again (after Wait)
        # A list when the connection can send file bytes with sendfile: a log read may then answer with
        # FileRegions, listed here so that the server releases them once sent (or dropped).
        self.regions = regions
        # How long the client must wait before it is read from again: over a quota (state/quotas.py), the
        # response says so (throttle_time_ms) and the server mutes the connection as long, as Kafka does.
        self.throttle_ms = 0
        # The handler's time on this request, for request_percentage: measured by dispatch only while some client
        # quota is set (handler_ns over the times it was asked, began_ns the start of the present one).
        self.handler_ns = 0
        self.began_ns = None
        self.request_counted = False

    def _client(self):
        return self.principal.partition(":")[2], self.header.client_id or ""

    def throttled(self, key, amount):
        """Count amount against the client's quota of key (state/quotas.py); the throttle time in ms, 0 within
        it."""
        quotas = self.state.cluster.quotas
        if not quotas.by_entity:
            return 0
        ms = quotas.throttle_ms(key, *self._client(), amount, self.state.now_ms())
        self.throttle_ms = max(self.throttle_ms, ms)
        return ms

    def unrecord(self, key, amount):
        """Take back amount counted by ``throttled`` (a throttled fetch sends none of its bytes)."""
        quotas = self.state.cluster.quotas
        if quotas.by_entity:
            quotas.unrecord(key, *self._client(), amount, self.state.now_ms())

    def request_throttled(self):
        """Count the handler's time on this request so far against the client's request_percentage (once per
        request: dispatch does it when the handler has not); the throttle time in ms, 0 within it. Kafka records
        the time as a percentage of a second per second: 100 is a handler busy all the time."""
        if self.request_counted or self.began_ns is None:
            return 0
        self.request_counted = True
        quotas = self.state.cluster.quotas
        if not quotas.uses(REQUEST):
            return 0
        spent_ns = self.handler_ns + monotonic_ns() - self.began_ns
        return self.throttled(REQUEST, spent_ns * 100 / 1e9)

    def mutation_quota(self, strict_since):
        """The client's controller_mutation_rate for this request (state/quotas.MutationQuota), strict from version
        strict_since as in Kafka, or None when it has none. A handler records each topic's partitions with it and
        ends with ``mutations_throttled``."""
        quotas = self.state.cluster.quotas
        if not quotas.by_entity:
            return None
        return quotas.mutation_quota(*self._client(), strict=self.version >= strict_since)

    def mutations_throttled(self, quota):
        """The throttle time a MutationQuota (or None) leaves this request with."""
        if quota is None:
            return 0
        ms = quota.throttle_ms(self.state.now_ms())
        self.throttle_ms = max(self.throttle_ms, ms)
        return ms

    @property
    def principal(self):
        """Who sent the request: the SASL user ("User:alice"), or User:ANONYMOUS."""
        session = self.session
        return session.principal if session is not None and session.principal else "User:ANONYMOUS"

    def allowed(self, operation, resource_type, name):
        """Whether the request's principal may do operation on the resource (state/acls.py); always, without an
        authorizer."""
        acls = self.state.cluster.acls
        return not acls.enabled or acls.allowed(self.principal, self.client_host.lstrip("/"), operation, resource_type,
                                                name)

    @property
    def listener_name(self):
        return self.session.listener.name if self.session is not None else None

    @property
    def endpoint(self):
        """(host, port) of the broker the request came to, as advertised on the listener it came in on."""
        return self.state.endpoint_for(self.listener_name, self.node_id)


def advertised(state):
    """[(api key, min version, max version)] for ApiVersions."""
    return [(h.api_key, h.advertised_min, h.versions.stop - 1)
            for h in sorted(HANDLERS.values(), key=lambda h: h.api_key)
            if served(h, state) and (h.listed is None or h.listed(state))]


def handler_for(state, api_key, version):
    """The handler that serves api_key at version on this broker, or None."""
    handler = HANDLERS.get(api_key)
    if handler is None or version not in handler.versions or not served(handler, state):
        return None
    return handler


# What Kafka does with a request it does not serve at its version (SocketServer and KafkaApis): ApiVersions is
# answered at version 0 with UNSUPPORTED_VERSION and its own versions, so the client can ask again at a version both
# have (KIP-511); anything else (an API it lacks, a version outside the range, Produce v0-2, which Kafka 4
# advertises but cannot read) closes the connection, whatever error field the response may have.
ANSWER_API_VERSIONS_V0, CLOSE = "answer ApiVersions at v0", "close the connection"


def unserved(state, header):
    """None when this broker serves the request; else ANSWER_API_VERSIONS_V0 or CLOSE."""
    if handler_for(state, header.request_api_key, header.request_api_version) is not None:
        return None
    return ANSWER_API_VERSIONS_V0 if header.request_api_key == ApiKey.API_VERSIONS else CLOSE


class NotHandled(Exception):
    """dispatch was given a request this broker does not serve (the server asks ``unserved`` first)."""


def dispatch(ctx, body):
    handler = handler_for(ctx.state, ctx.header.request_api_key, ctx.version)
    if handler is None:
        raise NotHandled(f"{type(body).__name__} v{ctx.version} is not served here")
    state = ctx.state
    # a test's faults or controls (faults.py) come before the handler; one decided for a request that waits holds
    # even once it is removed
    if state.faults.active or (ctx.memo and Faults in ctx.memo):
        return state.faults.apply(ctx, body, lambda request: _routed(handler, ctx, request))
    return _routed(handler, ctx, body)


def _routed(handler, ctx, body):
    """In a cluster of several brokers, what another broker should answer is answered so here (routing.py)."""
    if ctx.state.routed:
        answer = route(ctx, body, lambda request: _handle(handler, ctx, request))
        if answer is not None:
            return answer
    return _handle(handler, ctx, body)


def _handle(handler, ctx, body):
    if not ctx.state.cluster.quotas.by_entity:  # no quota set: nothing to measure
        return handler.function(ctx, body)
    if not ctx.request_counted and not _request_quota_applies(ctx, body):
        ctx.request_counted = True  # exempt: never counted
    ctx.began_ns = monotonic_ns()
    response = handler.function(ctx, body)
    if isinstance(response, (Wait, Close)):
        ctx.handler_ns += monotonic_ns() - ctx.began_ns
        return response
    throttle = ctx.request_throttled()
    if throttle and getattr(response, "throttle_time_ms", None) is not None:
        # Kafka answers with the longer of the waits (a byte rate's, a mutation quota's, this one)
        response.throttle_time_ms = max(response.throttle_time_ms, throttle)
    return response


def _request_quota_applies(ctx, body):
    """Whether request_percentage counts this request, as in Kafka's KafkaApis: not the SASL exchange before a
    client has authenticated (Kafka's authenticator answers it, outside the request handlers), a Produce with
    acks 0 (nothing is answered), WriteTxnMarkers or a follower's Fetch (broker-to-broker)."""
    if not getattr(ctx.session, "authenticated", True):
        return False
    key = ctx.header.request_api_key
    if key == ApiKey.PRODUCE:
        return body.acks != 0
    if key == ApiKey.FETCH:
        return _replica_id(ctx, body) < 0
    return key != ApiKey.WRITE_TXN_MARKERS


def _replica_id(ctx, body):
    """The id of the broker a Fetch comes from (v15+ in replica_state), or -1 from a consumer."""
    if ctx.version >= 15:
        state = body.replica_state
        return state.replica_id if state is not None else -1
    return body.replica_id


def load_handlers():
    """Import every handler module, so that each registers itself."""
    from . import handlers  # noqa: F401


__all__ = ["ANSWER_API_VERSIONS_V0", "ApiKey", "CLOSE", "Close", "Context", "HANDLERS", "Handler", "NotHandled", "Wait",
           "advertised", "dispatch", "handler_for", "handles", "unserved"]
