"""UpdateFeatures (kafka-features upgrade, downgrade, disable): finalize feature levels within those this broker
supports (state/features.py), as Kafka's controller checks them: a feature it does not know, a level outside its
range, a downgrade without a downgrade type (v0: allow_downgrade) or an unknown type fails the whole request,
INVALID_UPDATE_VERSION naming the first feature at fault, and nothing changes. Level 0 turns a feature off.
v0-1 answer each feature; v2 does not."""

from ... import errors
from ...messages import ApiKey, UpdateFeaturesResponse
from ..dispatch import handles
from ..state.acls import ALTER, CLUSTER, CLUSTER_NAME
from ..state.features import FEATURES

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def _problem(state, feature, level, upgrade_type):
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return "The controller does not support the given upgrade type."
    if feature not in FEATURES:
        return f"Local controller {state.node_id} does not support this feature."
    low, high = FEATURES[feature]
    if not low <= level <= high:
        return f"Local controller {state.node_id} only supports versions {low}-{high}"
    if level < state.cluster.features.get(feature, 0) and upgrade_type == UPGRADE:
        return ("Can't downgrade the version of this feature without setting the upgrade type to either safe or "
                "unsafe downgrade.")
    return None


@handles(ApiKey.UPDATE_FEATURES, versions=range(0, 3))
def update_features(ctx, request):
    def answer(error, message=None, results=()):
        return UpdateFeaturesResponse(throttle_time_ms=0, error_code=error.code, error_message=message,
                                      results=list(results) if ctx.version <= 1 else [])

    if not ctx.allowed(ALTER, CLUSTER, CLUSTER_NAME):
        return answer(errors.CLUSTER_AUTHORIZATION_FAILED)
    levels = {}
    for update in request.feature_updates:
        upgrade_type = update.upgrade_type if ctx.version >= 1 else (
            SAFE_DOWNGRADE if update.allow_downgrade else UPGRADE)
        problem = _problem(ctx.state, update.feature, update.max_version_level, upgrade_type)
        if problem:
            return answer(errors.INVALID_UPDATE_VERSION, "The update failed for all features since the following "
                          f"feature had an error: Invalid update version {update.max_version_level} for feature "
                          f"{update.feature}. {problem}")
        levels[update.feature] = update.max_version_level
    if levels and not request.validate_only:
        ctx.state.cluster.set_features(levels)
    return answer(errors.NONE, results=[UpdateFeaturesResponse.UpdatableFeatureResult(
        feature=name, error_code=errors.NONE.code, error_message=None) for name in levels])
