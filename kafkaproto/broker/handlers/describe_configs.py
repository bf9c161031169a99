"""DescribeConfigs: a topic's configs or this broker's, with where each value comes from.

Sources as Kafka names them: set on the topic (1), dynamic for this broker (2) or all brokers (3), from
server.properties or an override (4), a default (5). configuration_keys null asks for every config.
Documentation is not given (null), as Kafka answers a request that does not ask for it.
A group (v3+ clients ask with resource type 32) lists every group config, set on it (8) or its broker default.
A topic lists every config Kafka's topics have, with the broker settings behind each as its synonyms (named
as Kafka names them); its internal.segment.bytes is listed only where it is set, as Kafka lists it.
"""

from ... import errors
from ...messages import ApiKey, DescribeConfigsResponse
from ..config import CONFIG_TYPE_CODES, KAFKA_TOPIC_CONFIGS, SETTINGS, TOPIC_CONFIG_TYPES, broker_default
from ..dispatch import handles
from ..group_config import GROUP_CONFIGS, effective
from ..state import acls

TOPIC, BROKER, GROUP = 2, 4, 32
TOPIC_SOURCE, DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER, STATIC_BROKER, DEFAULT, GROUP_SOURCE = 1, 2, 3, 4, 5, 8
R = DescribeConfigsResponse


def _entry(ctx, name, value, source, kind, synonyms=()):
    return R.DescribeConfigsResourceResult(
        name=name, value=value, read_only=False, config_source=source if ctx.version >= 1 else -1,
        is_sensitive=False, synonyms=[R.DescribeConfigsSynonym(name=n, value=v, source=s) for n, v, s in synonyms]
        if ctx.version >= 1 else [], config_type=CONFIG_TYPE_CODES.get(kind, 0) if ctx.version >= 3 else 0,
        documentation=None)  # as Kafka leaves it unless asked; asked, it has no text of Kafka's to give


def _broker_synonyms(state, keys, described):
    """The broker settings behind a topic config, as Kafka lists them: by source (dynamic, static, default),
    then left out up to the first that names the setting whose default the config takes."""
    found = [(key, state.cluster.configs[key], DYNAMIC_BROKER) for key in keys if key in state.cluster.configs]
    found += [(key, described[key], STATIC_BROKER) for key in keys if key in state.config.given]
    found += [(key, default, DEFAULT) for key in keys if (default := broker_default(key)) is not None]
    while found and found[0][0] != keys[0]:
        found.pop(0)
    return found


def _topic(ctx, request, resource):
    state = ctx.state
    topic = state.cluster.topics.get(resource.resource_name)
    if topic is None:
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {resource.resource_name!r}", []
    effective = state.cluster.topic_config(topic)
    described = state.config.describe()
    names = sorted({*KAFKA_TOPIC_CONFIGS, *effective})
    out = []
    for name in names:
        if resource.configuration_keys is not None and name not in resource.configuration_keys:
            continue
        kind, broker_keys, kafka_default = KAFKA_TOPIC_CONFIGS.get(name, (TOPIC_CONFIG_TYPES.get(name, "STRING"),
                                                                          (), None))
        synonyms = [(name, topic.configs[name], TOPIC_SOURCE)] if name in topic.configs else []
        if broker_keys:
            synonyms += _broker_synonyms(state, broker_keys, described)
        source = synonyms[0][2] if synonyms else DEFAULT
        value = effective.get(name, kafka_default)
        out.append(_entry(ctx, name, value, source, kind, synonyms if request.include_synonyms else ()))
    return errors.NONE, None, out


def _broker(ctx, request, resource):
    state = ctx.state
    if resource.resource_name not in ("", str(state.node_id)):
        return errors.INVALID_REQUEST, f"this broker is {state.node_id}, not {resource.resource_name!r}", []
    out = []
    described = state.config.describe()
    for name, value in sorted(described.items()):
        if resource.configuration_keys is not None and name not in resource.configuration_keys:
            continue
        # the setting and those that give the same value in other units after it (log.retention.hours, say)
        units = next((keys[keys.index(name):] for _, keys, _ in KAFKA_TOPIC_CONFIGS.values() if name in keys),
                     (name,))
        synonyms = _broker_synonyms(state, units, described)
        source = synonyms[0][2] if synonyms else DEFAULT
        if name in state.cluster.configs:
            value = state.cluster.configs[name]
        setting = SETTINGS.get(name)
        kind = setting.type.upper() if setting and setting.type.upper() in CONFIG_TYPE_CODES else "STRING"
        out.append(_entry(ctx, name, value, source, kind, synonyms if request.include_synonyms else ()))
    return errors.NONE, None, out


def _group(ctx, request, resource):
    """A group's configs (group_config.py): its own, else the broker setting behind each, else Kafka's default.
    A group need not exist to be described."""
    state = ctx.state
    own = state.cluster.group_configs.get(resource.resource_name, {})
    described = state.config.describe()
    out = []
    for name, config in GROUP_CONFIGS.items():
        if resource.configuration_keys is not None and name not in resource.configuration_keys:
            continue
        synonyms = [(name, own[name], GROUP_SOURCE)] if name in own else []
        if config.broker_key is not None:
            synonyms += _broker_synonyms(state, (config.broker_key,), described)
        else:
            synonyms.append((name, config.default, DEFAULT))
        value = effective(own, name, state.config.__getitem__)
        out.append(_entry(ctx, name, value, synonyms[0][2], config.type.upper(),
                          synonyms if request.include_synonyms else ()))
    return errors.NONE, None, out


def _refused(ctx, operation, resource):
    """The authorization error for operation on a topic or the cluster (a broker's configs), or None."""
    if resource.resource_type == TOPIC and not ctx.allowed(operation, acls.TOPIC, resource.resource_name):
        return errors.TOPIC_AUTHORIZATION_FAILED
    if resource.resource_type == BROKER and not ctx.allowed(operation, acls.CLUSTER, acls.CLUSTER_NAME):
        return errors.CLUSTER_AUTHORIZATION_FAILED
    if resource.resource_type == GROUP and not ctx.allowed(operation, acls.GROUP, resource.resource_name):
        return errors.GROUP_AUTHORIZATION_FAILED
    return None


@handles(ApiKey.DESCRIBE_CONFIGS, versions=range(1, 5))
def describe_configs(ctx, request):
    results = []
    for resource in request.resources:
        refused = _refused(ctx, acls.DESCRIBE_CONFIGS, resource)
        if refused:
            error, message, configs = refused, None, []
        elif resource.resource_type == TOPIC:
            error, message, configs = _topic(ctx, request, resource)
        elif resource.resource_type == BROKER:
            error, message, configs = _broker(ctx, request, resource)
        elif resource.resource_type == GROUP:
            error, message, configs = _group(ctx, request, resource)
        else:
            error, message, configs = errors.INVALID_REQUEST, f"resource type {resource.resource_type} is not " \
                                                              "described here", []
        results.append(R.DescribeConfigsResult(error_code=error.code, error_message=message,
                                               resource_type=resource.resource_type,
                                               resource_name=resource.resource_name, configs=configs))
    return R(throttle_time_ms=0, results=results)
