"""Which API each handler answers, at which versions; ApiVersions is built from this table.

    @handles(ApiKey.FETCH, versions=range(4, 19))
    def fetch(ctx, request): ...            # -> a FetchResponse, or Wait(ms) to be asked again later

A handler takes the decoded request and a Context (the broker's state, the
request header, the time) and returns the response body. It does no I/O.
The version ranges are Apache Kafka 4.3's, for the APIs implemented here.
"""

from typing import NamedTuple

from ..messages import ApiKey
from ..registry import api


class Handler(NamedTuple):
    api_key: int
    versions: range
    advertised_min: int  # what ApiVersions says; below versions.start for Produce, as Kafka does
    function: object
    enabled: object = None  # enabled(state): whether this broker serves it; None: always


HANDLERS = {}


def handles(api_key, versions, advertised_min=None, enabled=None):
    """Register the decorated function as the handler of api_key at versions.

    enabled(state) makes it a feature a broker's configuration turns on; such an API may come
    from an extension that is not loaded (the broker refuses to start when it is enabled then).
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
                                         enabled)
        return function

    return register


def served(handler, state):
    return handler.enabled is None or handler.enabled(state)


class Wait(NamedTuple):
    """Ask again when the state changes (data appended, a group moves on) or after ms, with ctx.final True.
    A Fetch short of min_bytes, a JoinGroup waiting for the other members, a SyncGroup for the leader.
    Asked with ctx.final, a handler may return Wait again: its time starts over."""
    ms: int


class Context:
    """What a handler knows besides the request: the state, the header, and whether it may still wait."""

    __slots__ = ("state", "header", "version", "final", "session", "client_host", "memo")

    def __init__(self, state, header, final=False, session=None, client_host=""):
        self.state = state
        self.header = header
        self.version = header.request_api_version
        self.final = final
        self.session = session  # the connection's security.Session (None in tests that need none)
        self.client_host = client_host
        self.memo = {}  # what a handler keeps between the times one request is asked again (after Wait)

    @property
    def endpoint(self):
        """(host, port) of this broker as advertised on the listener the request came in on."""
        return self.state.endpoint_for(self.session.listener.name if self.session is not None else None)


def advertised(state):
    """[(api key, min version, max version)] for ApiVersions."""
    return [(h.api_key, h.advertised_min, h.versions.stop - 1)
            for h in sorted(HANDLERS.values(), key=lambda h: h.api_key) if served(h, state)]


class NotHandled(Exception):
    """A request this broker has no handler for at its version (the server answers UNSUPPORTED_VERSION or closes)."""


def dispatch(ctx, body):
    handler = HANDLERS.get(ctx.header.request_api_key)
    if handler is None or ctx.version not in handler.versions or not served(handler, ctx.state):
        raise NotHandled(f"{type(body).__name__} v{ctx.version} is not served here")
    return handler.function(ctx, body)


def load_handlers():
    """Import every handler module, so that each registers itself."""
    from . import handlers  # noqa: F401


__all__ = ["ApiKey", "Context", "HANDLERS", "Handler", "NotHandled", "Wait", "advertised", "dispatch", "handles"]
