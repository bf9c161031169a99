"""SaslAuthenticate: one round of the SASL exchange a v1 SaslHandshake began.

A failed round is SASL_AUTHENTICATION_FAILED with the reason, logged, and the
connection is closed after the answer, as Kafka does. Sent when no exchange is
due, it is ILLEGAL_SASL_STATE. Where Kafka's broker closes the connection
without an answer (a request over sasl.server.max.receive.size, an exchange its
SASL server ends with an unexpected error: security.ExchangeAborted), so does
this one. The round that completes the exchange carries session_lifetime_ms
(v1+): how long the session lasts before the client must authenticate again
(security.Session), 0 for ever.
"""

import logging

from ... import encode_request, errors
from ...messages import ApiKey, SaslAuthenticateResponse
from ..dispatch import Close, handles
from ..security import AuthenticationError, ExchangeAborted

log = logging.getLogger("kafkaproto.broker")


@handles(ApiKey.SASL_AUTHENTICATE, versions=range(0, 3))
def sasl_authenticate(ctx, request):
    session = ctx.session
    if session is not None and session.lapsed:
        return Close("the SASL session has ended and the client did not authenticate again")
    if session is None or session.handshake_version != 1 or session.authenticated:
        # Once authenticated (on any listener: a PLAINTEXT one is from the start), Kafka's request handler
        # answers this and the connection goes on; during a SASL exchange its authenticator fails it.
        if session is not None and not session.authenticated:
            session.failed = True
        message = "SaslAuthenticate request received after successful authentication" \
            if session is None or session.authenticated else "SaslAuthenticate is not expected now"
        return SaslAuthenticateResponse(error_code=errors.ILLEGAL_SASL_STATE.code, error_message=message,
                                        auth_bytes=b"")
    size = len(request.auth_bytes)
    if size > session.receive_limit - 1024:  # near the bound: count the whole request, as Kafka does
        size = len(encode_request(ctx.header, request, ctx.version)) - 4
    try:
        reply = session.step(request.auth_bytes, size)
    except ExchangeAborted as e:
        session.failed = True
        log.warning("%s: authentication ended without an answer (%s): %s", session.peer, session.mechanism, e)
        return Close(f"authentication ended without an answer: {e}")
    except AuthenticationError as e:
        session.failed = True
        log.warning("%s: authentication failed (%s): %s", session.peer, session.mechanism,
                    getattr(e, "reason", None) or e)
        return SaslAuthenticateResponse(error_code=errors.SASL_AUTHENTICATION_FAILED.code, error_message=str(e),
                                        auth_bytes=b"")
    done = session.principal is not None and not session.reauthenticating
    if done:
        log.info("%s: authenticated as %s (%s)", session.peer, session.principal, session.mechanism)
    return SaslAuthenticateResponse(error_code=errors.NONE.code, auth_bytes=reply,
                                    session_lifetime_ms=session.lifetime_ms if done else 0)
