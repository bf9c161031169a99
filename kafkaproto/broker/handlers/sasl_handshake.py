"""SaslHandshake: the client picks a mechanism. v0 is followed by raw SASL tokens (framed by their size
only; the server turns to them), v1 by SaslAuthenticate requests.

A mechanism not enabled on the listener is UNSUPPORTED_SASL_MECHANISM, with
the enabled ones listed; a handshake where no SASL is due (a PLAINTEXT or SSL
listener, or after authenticating) is ILLEGAL_SASL_STATE.
"""

from ... import errors
from ...messages import ApiKey, SaslHandshakeResponse
from ..dispatch import handles


@handles(ApiKey.SASL_HANDSHAKE, versions=range(0, 2))
def sasl_handshake(ctx, request):
    session = ctx.session
    enabled = list(session.mechanisms) if session is not None and session.sasl else []
    if session is None or not session.sasl or session.authenticated or session.mechanism is not None:
        return SaslHandshakeResponse(error_code=errors.ILLEGAL_SASL_STATE.code, mechanisms=enabled)
    if request.mechanism not in enabled:
        return SaslHandshakeResponse(error_code=errors.UNSUPPORTED_SASL_MECHANISM.code, mechanisms=enabled)
    session.start(request.mechanism, ctx.version)
    return SaslHandshakeResponse(error_code=errors.NONE.code, mechanisms=enabled)
