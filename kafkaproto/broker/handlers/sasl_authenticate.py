"""SaslAuthenticate: one round of the SASL exchange a v1 SaslHandshake began.

A failed round is SASL_AUTHENTICATION_FAILED with the reason, logged, and the
connection is closed after the answer, as Kafka does. Sent when no exchange is
due, it is ILLEGAL_SASL_STATE.
"""

import logging

from ... import errors
from ...messages import ApiKey, SaslAuthenticateResponse
from ..dispatch import handles
from ..security import AuthenticationError

log = logging.getLogger("kafkaproto.broker")


@handles(ApiKey.SASL_AUTHENTICATE, versions=range(0, 3))
def sasl_authenticate(ctx, request):
    session = ctx.session
    if session is None or session.handshake_version != 1 or session.authenticated:
        # Once authenticated (on any listener: a PLAINTEXT one is from the start), Kafka's request handler
        # answers this and the connection goes on; during a SASL exchange its authenticator fails it.
        if session is not None and not session.authenticated:
            session.failed = True
        return SaslAuthenticateResponse(error_code=errors.ILLEGAL_SASL_STATE.code,
                                        error_message="SaslAuthenticate is not expected now", auth_bytes=b"")
    try:
        reply = session.step(request.auth_bytes)
    except AuthenticationError as e:
        session.failed = True
        log.warning("%s: authentication failed (%s): %s", session.peer, session.mechanism, e)
        return SaslAuthenticateResponse(error_code=errors.SASL_AUTHENTICATION_FAILED.code, error_message=str(e),
                                        auth_bytes=b"")
    if session.authenticated:
        log.info("%s: authenticated as %s (%s)", session.peer, session.principal, session.mechanism)
    return SaslAuthenticateResponse(error_code=errors.NONE.code, auth_bytes=reply, session_lifetime_ms=0)
