"""AlterConfigs, the request before IncrementalAlterConfigs (librdkafka's and kafkajs's alter_configs): the
configs given become the resource's whole set, and any it had that are not given go back to their defaults
(a null value is INVALID_REQUEST, as in Kafka); _configs.py checks and writes them."""

from ... import errors
from ...messages import AlterConfigsResponse, ApiKey
from ..dispatch import handles
from ._configs import ChangeRefused, alter_resources


def _replace(configs):
    def make(current, resource_type):
        for c in configs:
            if c.value is None:
                raise ChangeRefused(errors.INVALID_REQUEST, f"Null value not supported for : {c.name}")
        given = {c.name: c.value for c in configs}
        return {**{name: None for name in current if name not in given}, **given}
    return make


@handles(ApiKey.ALTER_CONFIGS, versions=range(0, 3))
def alter_configs(ctx, request):
    return alter_resources(ctx, request, AlterConfigsResponse, _replace)
