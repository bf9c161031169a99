"""DescribeDelegationToken (kafka-delegation-tokens --describe): refused, as a Kafka broker
without delegation.token.secret.key answers (_delegation_tokens.py)."""

from ...messages import ApiKey, DescribeDelegationTokenResponse
from ..dispatch import handles
from ._delegation_tokens import refusal


@handles(ApiKey.DESCRIBE_DELEGATION_TOKEN, versions=range(1, 4))
def describe_delegation_token(ctx, request):
    return DescribeDelegationTokenResponse(error_code=refusal(ctx), tokens=[], throttle_time_ms=0)
