"""ExpireDelegationToken (kafka-delegation-tokens --expire): refused, as a Kafka broker
without delegation.token.secret.key answers (_delegation_tokens.py)."""

from ...messages import ApiKey, ExpireDelegationTokenResponse
from ..dispatch import handles
from ._delegation_tokens import refused_at


@handles(ApiKey.EXPIRE_DELEGATION_TOKEN, versions=range(1, 3))
def expire_delegation_token(ctx, request):
    error, when = refused_at(ctx)
    return ExpireDelegationTokenResponse(error_code=error, expiry_timestamp_ms=when, throttle_time_ms=0)
