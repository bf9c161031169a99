"""IncrementalAlterConfigs (kafka-configs --alter): set, delete (back to the default), append to or subtract
from list configs, for a topic, this broker, a group or a client-metrics subscription; _configs.py checks and
writes them. Setting a config to null is INVALID_REQUEST, as in Kafka; appending to or subtracting from a
client-metrics subscription's configs is INVALID_CONFIG, as in Kafka (whose broker knows no types for them)."""

from ... import errors
from ...messages import ApiKey, IncrementalAlterConfigsResponse
from ..config import setting_of
from ..topic_configs import TOPIC_CONFIG_TYPES
from ..dispatch import handles
from ..state.cluster import CLIENT_METRICS_RESOURCE
from ._configs import ChangeRefused, alter_resources

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _is_list(name, resource_type):
    if resource_type == CLIENT_METRICS_RESOURCE:
        return False
    setting = setting_of(name)
    return TOPIC_CONFIG_TYPES.get(name) == "LIST" or (setting is not None and setting.type == "list")


def _changes(configs):
    """make_changes for _configs.alter: {name: new value or None}, or raises ValueError naming the problem."""
    def make(current, resource_type):
        for c in configs:
            if c.config_operation == SET and c.value is None:
                raise ChangeRefused(errors.INVALID_REQUEST, f"Null value not supported for : {c.name}")
        out = {}
        for c in configs:
            if c.config_operation == SET:
                out[c.name] = c.value
            elif c.config_operation == DELETE:
                out[c.name] = None
            elif c.config_operation in (APPEND, SUBTRACT):
                if not _is_list(c.name, resource_type):
                    raise ValueError(f"Can't {'APPEND' if c.config_operation == APPEND else 'SUBTRACT'} to key "
                                     f"{c.name} because its type is not LIST.")
                items = [v for v in (out.get(c.name, current.get(c.name)) or "").split(",") if v]
                given = [v for v in (c.value or "").split(",") if v]
                items = items + [v for v in given if v not in items] if c.config_operation == APPEND else [
                    v for v in items if v not in given]
                out[c.name] = ",".join(items)
            else:  # Kafka fails on it, and says no more
                raise ChangeRefused(errors.UNKNOWN_SERVER_ERROR, None)
        return out
    return make


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, versions=range(0, 2))
def incremental_alter_configs(ctx, request):
    return alter_resources(ctx, request, IncrementalAlterConfigsResponse, _changes, once_each=True)
