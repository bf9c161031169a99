"""What the four delegation-token APIs share. Delegation tokens are not implemented: the broker answers as a Kafka
broker without ``delegation.token.secret.key`` does (and refuses to start with that key set: config.py). As from
Kafka, a request over a listener without SASL is DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (tokens are only for
clients that authenticated), and one over SASL DELEGATION_TOKEN_AUTH_DISABLED."""

from ... import errors


def refusal(ctx):
    """The error code a delegation-token request is answered with."""
    sasl = ctx.session is not None and ctx.session.sasl
    return (errors.DELEGATION_TOKEN_AUTH_DISABLED if sasl else errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED).code


def refused_at(ctx):
    """(error code, the timestamp Kafka fills in with it: 0 once SASL got as far as the disabled tokens, else -1)."""
    error = refusal(ctx)
    return error, 0 if error == errors.DELEGATION_TOKEN_AUTH_DISABLED.code else -1
