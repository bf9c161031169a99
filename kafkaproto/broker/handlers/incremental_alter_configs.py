"""IncrementalAlterConfigs: set, delete (back to the default), append to or subtract from list configs,
for a topic or for this broker (the topic defaults it gives, under their broker names).

Each resource's changes are checked first and then written as one batch of
ConfigRecords to the metadata log, so they survive a restart. A value the
broker would not honour (compaction, LogAppendTime, recompression) is
INVALID_CONFIG rather than stored and ignored.
"""

from ... import errors
from ...messages import ApiKey, IncrementalAlterConfigsResponse
from ..config import SETTINGS, TOPIC_CONFIG_TYPES, ConfigError, parse_value, topic_config_error
from ..dispatch import handles
from ..state.cluster import BROKER_RESOURCE, TOPIC_RESOURCE

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
R = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse


def _changes(current, configs, is_list):
    """{name: new value or None}, or raises ValueError naming the problem."""
    out = {}
    for c in configs:
        if c.config_operation == SET:
            out[c.name] = c.value
        elif c.config_operation == DELETE:
            out[c.name] = None
        elif c.config_operation in (APPEND, SUBTRACT):
            if not is_list(c.name):
                raise ValueError(f"{c.name} is not a list config")
            items = [v for v in (out.get(c.name, current.get(c.name)) or "").split(",") if v]
            given = [v for v in (c.value or "").split(",") if v]
            items = items + [v for v in given if v not in items] if c.config_operation == APPEND else [
                v for v in items if v not in given]
            out[c.name] = ",".join(items)
        else:
            raise ValueError(f"unknown config operation {c.config_operation}")
    return out


def _topic(state, resource, validate_only):
    topic = state.cluster.topics.get(resource.resource_name)
    if topic is None:
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {resource.resource_name!r}"
    try:
        changes = _changes(state.cluster.topic_config(topic), resource.configs,
                           lambda name: TOPIC_CONFIG_TYPES.get(name) == "LIST")
    except ValueError as e:
        return errors.INVALID_CONFIG, str(e)
    for name, value in changes.items():
        why = topic_config_error(name, value)
        if why:
            return errors.INVALID_CONFIG, why
    if not validate_only:
        state.cluster.set_configs(TOPIC_RESOURCE, topic.name, changes)
    return errors.NONE, None


def _broker(state, resource, validate_only):
    if resource.resource_name not in ("", str(state.node_id)):
        return errors.INVALID_REQUEST, f"this broker is {state.node_id}, not {resource.resource_name!r}"
    try:
        changes = _changes(state.config.describe(), resource.configs, lambda name: False)
    except ValueError as e:
        return errors.INVALID_CONFIG, str(e)
    for name, value in changes.items():
        setting = SETTINGS.get(name)
        if setting is None or not setting.topic_key:
            return errors.INVALID_CONFIG, f"{name} cannot be changed while the broker runs"
        try:
            if value is not None:
                parse_value(name, value, setting.kind, "IncrementalAlterConfigs")
        except ConfigError as e:
            return errors.INVALID_CONFIG, str(e)
        why = topic_config_error(setting.topic_key, value)
        if why:
            return errors.INVALID_CONFIG, why
    if not validate_only:
        state.cluster.set_configs(BROKER_RESOURCE, resource.resource_name, changes)
    return errors.NONE, None


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, versions=range(0, 2))
def incremental_alter_configs(ctx, request):
    out = []
    for resource in request.resources:
        if resource.resource_type == TOPIC_RESOURCE:
            error, message = _topic(ctx.state, resource, request.validate_only)
        elif resource.resource_type == BROKER_RESOURCE:
            error, message = _broker(ctx.state, resource, request.validate_only)
        else:
            error, message = errors.INVALID_REQUEST, f"resource type {resource.resource_type} cannot be altered here"
        out.append(R(error_code=error.code, error_message=message, resource_type=resource.resource_type,
                     resource_name=resource.resource_name))
    ctx.state.changed()
    return IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=out)
