"""SaslHandshake: the client picks a mechanism. v0 is followed by raw SASL tokens (framed by their size
only; the server turns to them), v1 by SaslAuthenticate requests.

A mechanism not enabled on the listener is UNSUPPORTED_SASL_MECHANISM, with
the enabled ones listed; a handshake where no SASL is due (a PLAINTEXT or SSL
listener, or after authenticating) is ILLEGAL_SASL_STATE.

Once authenticated, a session with an end (security.Session: a token's exp,
connections.max.reauth.ms) may begin again with a handshake, at most once a
second (KIP-368); the new exchange must use the same mechanism (another one ends
the connection at its first token, unanswered) and reach the same principal. A
mechanism the listener does not enable ends the connection unanswered then. A
session that has ended is closed at any other request, as Kafka closes it.
"""

from ... import errors
from ...messages import ApiKey, SaslHandshakeResponse
from ..dispatch import Close, handles


@handles(ApiKey.SASL_HANDSHAKE, versions=range(0, 2))
def sasl_handshake(ctx, request):
    session = ctx.session
    enabled = list(session.mechanisms) if session is not None and session.sasl else []
    if session is not None and session.sasl and session.principal is not None and not session.reauthenticating:
        if not session.may_reauthenticate():
            if session.lapsed:
                return Close("the SASL session has ended and the client did not authenticate again")
            # Kafka's request handler answers this one, with no mechanisms, and the connection goes on.
            return SaslHandshakeResponse(error_code=errors.ILLEGAL_SASL_STATE.code, mechanisms=[])
        session.begin_reauthentication()
    elif session is None or not session.sasl or session.authenticated or session.mechanism is not None:
        return SaslHandshakeResponse(error_code=errors.ILLEGAL_SASL_STATE.code, mechanisms=enabled)
    if request.mechanism not in enabled:
        if session.reauthenticating:
            session.failed = True
            return Close(f"re-authentication with {request.mechanism}, which the listener does not enable")
        return SaslHandshakeResponse(error_code=errors.UNSUPPORTED_SASL_MECHANISM.code, mechanisms=enabled)
    session.start(request.mechanism, ctx.version)
    return SaslHandshakeResponse(error_code=errors.NONE.code, mechanisms=enabled)
