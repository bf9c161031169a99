"""IncrementalAlterConfigs (kafka-configs --alter): set, delete (back to the default), append to or subtract
from list configs, for a topic or for this broker; _configs.py checks and writes them."""

from ...messages import ApiKey, IncrementalAlterConfigsResponse
from ..config import setting_of
from ..topic_configs import TOPIC_CONFIG_TYPES
from ..dispatch import handles
from ._configs import alter_resources

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _is_list(name):
    setting = setting_of(name)
    return TOPIC_CONFIG_TYPES.get(name) == "LIST" or (setting is not None and setting.type == "list")


def _changes(configs):
    """make_changes for _configs.alter: {name: new value or None}, or raises ValueError naming the problem."""
    def make(current):
        out = {}
        for c in configs:
            if c.config_operation == SET:
                out[c.name] = c.value
            elif c.config_operation == DELETE:
                out[c.name] = None
            elif c.config_operation in (APPEND, SUBTRACT):
                if not _is_list(c.name):
                    raise ValueError(f"{c.name} is not a list config")
                items = [v for v in (out.get(c.name, current.get(c.name)) or "").split(",") if v]
                given = [v for v in (c.value or "").split(",") if v]
                items = items + [v for v in given if v not in items] if c.config_operation == APPEND else [
                    v for v in items if v not in given]
                out[c.name] = ",".join(items)
            else:
                raise ValueError(f"unknown config operation {c.config_operation}")
        return out
    return make


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, versions=range(0, 2))
def incremental_alter_configs(ctx, request):
    return alter_resources(ctx, request, IncrementalAlterConfigsResponse, _changes)
