"""CreateDelegationToken (kafka-delegation-tokens --create): refused, naming the requester as
owner, as a Kafka broker without delegation.token.secret.key answers (_delegation_tokens.py)."""

from ...messages import ApiKey, CreateDelegationTokenResponse
from ..dispatch import handles
from ._delegation_tokens import refused_at


@handles(ApiKey.CREATE_DELEGATION_TOKEN, versions=range(1, 4))
def create_delegation_token(ctx, request):
    kind, _, name = ctx.principal.partition(":")
    error, when = refused_at(ctx)
    v3 = ctx.version >= 3  # the requester is named from v3
    return CreateDelegationTokenResponse(
        error_code=error, principal_type=kind, principal_name=name,
        token_requester_principal_type=kind if v3 else "", token_requester_principal_name=name if v3 else "",
        issue_timestamp_ms=when, expiry_timestamp_ms=when, max_timestamp_ms=when, token_id="", hmac=b"",
        throttle_time_ms=0)
