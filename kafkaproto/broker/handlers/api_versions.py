"""ApiVersions: the APIs and versions this broker serves, from the handler table.

v3+ clients name their software (kept for the connection, as Kafka keeps it:
client telemetry's subscriptions match on it); a name or version that breaks
Kafka's pattern is INVALID_REQUEST. A request at a version above 4 never reaches
here (``dispatch.unserved``): the server answers it at v0 with
UNSUPPORTED_VERSION and, as Kafka does, only ApiVersions' own range (``refused``),
so the client can ask again at a version both know.
"""

import re

from ... import errors
from ...messages import ApiKey, ApiVersionsResponse
from ..dispatch import Close, advertised, handles
from ..state.features import FEATURES

SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def table(state):
    return [ApiVersionsResponse.ApiVersion(api_key=key, min_version=low, max_version=high)
            for key, low, high in advertised(state)]


def response(state, version=4):
    # Before v4 a client cannot take a supported feature whose lowest level is 0 (KAFKA-17011): Kafka leaves
    # those out of the supported list then.
    supported = [ApiVersionsResponse.SupportedFeatureKey(name=name, min_version=low, max_version=high)
                 for name, (low, high) in FEATURES.items() if version >= 4 or low > 0]
    finalized = [ApiVersionsResponse.FinalizedFeatureKey(name=name, min_version_level=level, max_version_level=level)
                 for name, level in state.cluster.features.items() if level > 0]
    return ApiVersionsResponse(error_code=0, api_keys=table(state), throttle_time_ms=0, supported_features=supported,
                               finalized_features=finalized,
                               finalized_features_epoch=max(0, state.cluster.metadata.log_end_offset - 1))


def refused(state):
    """The answer to ApiVersions at a version this broker does not serve: UNSUPPORTED_VERSION and the versions of
    ApiVersions alone (Kafka lists no other API there: the client learns the rest when it asks again)."""
    return ApiVersionsResponse(error_code=errors.UNSUPPORTED_VERSION.code, throttle_time_ms=0,
                               api_keys=[v for v in table(state) if v.api_key == ApiKey.API_VERSIONS])


@handles(ApiKey.API_VERSIONS, versions=range(0, 5))
def api_versions(ctx, request):
    if ctx.session is not None and ctx.session.lapsed:  # a SASL session that ended: Kafka closes the connection
        return Close("the SASL session has ended and the client did not authenticate again")
    if ctx.version >= 3 and not (SOFTWARE.fullmatch(request.client_software_name)
                                 and SOFTWARE.fullmatch(request.client_software_version)):
        return ApiVersionsResponse(error_code=errors.INVALID_REQUEST.code, throttle_time_ms=0)
    if ctx.session is not None and ctx.version >= 3:
        ctx.session.client_software = (request.client_software_name, request.client_software_version)
    return response(ctx.state, version=ctx.version)
