"""AlterConfigs, the request before IncrementalAlterConfigs (librdkafka's and kafkajs's alter_configs): the
configs given become the resource's whole set, and any it had that are not given go back to their defaults;
_configs.py checks and writes them."""

from ...messages import AlterConfigsResponse, ApiKey
from ..dispatch import handles
from ._configs import alter

R = AlterConfigsResponse.AlterConfigsResourceResponse


def _replace(configs):
    def make(current):
        given = {c.name: c.value for c in configs}
        return {**{name: None for name in current if name not in given}, **given}
    return make


@handles(ApiKey.ALTER_CONFIGS, versions=range(0, 3))
def alter_configs(ctx, request):
    out = []
    for resource in request.resources:
        error, message = alter(ctx, resource.resource_type, resource.resource_name,
                               _replace(resource.configs), request.validate_only)
        out.append(R(error_code=error.code, error_message=message, resource_type=resource.resource_type,
                     resource_name=resource.resource_name))
    ctx.state.changed()
    return AlterConfigsResponse(throttle_time_ms=0, responses=out)
