"""DescribeConfigs: a topic's configs or this broker's, with where each value comes from.

Sources as Kafka names them: set on the topic (1), dynamic for this broker (2) or all brokers (3), from
server.properties or an override (4), a default (5). configuration_keys null asks for every config.
Documentation is null unless the request asks for it (v3+), as in Kafka. Asked, each config gets a line in this
project's words (_documentation): what the setting does where this broker says so, its type, when it may be
changed, and whether this broker acts on it or only keeps it.
A group (v3+ clients ask with resource type 32) lists every group config, set on it (8) or its broker default.
A client-metrics subscription (16) lists its three configs, set on it (7) or Kafka's default, named or not.
A topic lists every config Kafka's topics have, with the broker settings behind each as its synonyms (named
as Kafka names them); its internal.segment.bytes is listed only where it is set, as Kafka lists it.
"""

from ... import errors
from ...messages import ApiKey, DescribeConfigsResponse
from ..client_metrics import CONFIGS as CLIENT_METRICS_CONFIGS, shown as client_metrics_value
from ..config import AUTHORIZER_SETTINGS, LISTENER_PREFIX, OWN_SETTINGS, SETTINGS, default_text, is_read_only
from ..dispatch import handles
from ..group_config import GROUP_CONFIGS, effective
from ..kafka_broker_configs import CLUSTER_WIDE, KAFKA_BROKER_CONFIGS, PER_BROKER
from ..oauthbearer import SECURED_KEYS
from ..state import acls
from ..topic_configs import KAFKA_TOPIC_CONFIGS, KEPT_ONLY, TOPIC_CONFIG_TYPES, TOPIC_CONFIGS
from ._configs import DENIED

TOPIC, BROKER, GROUP = 2, 4, 32
CLIENT_METRICS, CLIENT_METRICS_SOURCE = 16, 7
TOPIC_SOURCE, DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER, STATIC_BROKER, DEFAULT, GROUP_SOURCE = 1, 2, 3, 4, 5, 8
R = DescribeConfigsResponse
CONFIG_TYPE_CODES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7,
                     "CLASS": 8, "PASSWORD": 9}  # and 0: a key of no known type
TYPE_NAMES = {code: name for name, code in CONFIG_TYPE_CODES.items()}


def _entry(ctx, name, value, source, kind, synonyms=(), read_only=False, sensitive=False):
    return R.DescribeConfigsResourceResult(
        name=name, value=value, read_only=read_only, config_source=source if ctx.version >= 1 else -1,
        is_sensitive=sensitive, synonyms=[R.DescribeConfigsSynonym(name=n, value=v, source=s)
                                          for n, v, s in synonyms] if ctx.version >= 1 else [],
        config_type=CONFIG_TYPE_CODES.get(kind, 0) if ctx.version >= 3 else 0,
        documentation=None)  # filled in by describe_configs when asked


def _broker_synonyms(state, keys, described, hidden=False, node=None):
    """The broker settings behind a config, as Kafka lists them: by source (this broker's dynamic value, every
    broker's, the file's, the default), then left out up to the first that names keys[0], whose default the
    config takes (the others give the same value in other units). hidden: a secret's values are None."""
    cluster = state.cluster
    own = cluster.dynamic_configs(state.node_id if node is None else node)
    found = [(key, own[key], DYNAMIC_BROKER) for key in keys if key in own]
    found += [(key, cluster.default_broker_configs[key], DYNAMIC_DEFAULT_BROKER) for key in keys
              if key in cluster.default_broker_configs]
    found += [(key, described[key], STATIC_BROKER) for key in keys if key in state.config.given]
    found += [(key, default, DEFAULT) for key in keys if (default := default_text(key)) is not None]
    while found and found[0][0] != keys[0]:
        found.pop(0)
    return [(key, None, source) for key, _, source in found] if hidden else found


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


def _broker_key(name):
    """The broker key behind name, and the listener it is set for (None if for all)."""
    prefixed = LISTENER_PREFIX.fullmatch(name)
    base = prefixed.group(2) if prefixed else name
    if base.endswith(".sasl.jaas.config"):  # listener.name.NAME.MECHANISM.sasl.jaas.config
        base = "sasl.jaas.config"
    return base, prefixed.group(1) if prefixed else None


def _broker_type(name):
    """A broker key's type as DescribeConfigs names it, or None for a key of no known type."""
    base, _ = _broker_key(name)
    kafka = KAFKA_BROKER_CONFIGS.get(base)
    if kafka is not None:
        return kafka.type
    setting = SETTINGS.get(base) if base not in AUTHORIZER_SETTINGS else None  # the authorizer's, not a broker's
    return setting.type.upper() if setting is not None else None


def _broker(ctx, request, resource):
    """Every broker config, as Kafka lists them for a broker named by its id: each of Kafka's keys (those this
    broker does not act on with Kafka's default), this broker's own, and any other key given or set while running
    (of no known type, so hidden as a secret is). For "" (every broker's defaults), those set so, as Kafka does."""
    state = ctx.state
    cluster = state.cluster
    if resource.resource_name not in ("", str(ctx.node_id)):
        return errors.INVALID_REQUEST, f"this broker is {ctx.node_id}, not {resource.resource_name!r}", []
    described = state.config.describe()
    every_broker = resource.resource_name == ""
    if every_broker:
        names = set(cluster.default_broker_configs)
    else:
        names = {*KAFKA_BROKER_CONFIGS, *OWN_SETTINGS, *state.config.given, *cluster.default_broker_configs,
                 *cluster.dynamic_configs(ctx.node_id)}
    if resource.configuration_keys is not None:
        names &= set(resource.configuration_keys)
    out = []
    for name in sorted(names):
        kind = _broker_type(name)
        sensitive = kind in ("PASSWORD", None)
        # the setting and those that give the same value in other units after it (log.retention.hours, say)
        units = next((keys[keys.index(name):] for _, keys, _ in KAFKA_TOPIC_CONFIGS.values() if name in keys),
                     (name,))
        synonyms = _broker_synonyms(state, units, described, hidden=sensitive, node=ctx.node_id)
        if every_broker:
            synonyms = [s for s in synonyms if s[2] == DYNAMIC_DEFAULT_BROKER]
        source, value = (synonyms[0][2], synonyms[0][1]) if synonyms else (DEFAULT, None)
        # as Kafka: only the keys it changes while running are not read-only (of them, here, those this broker
        # acts on live), and this broker's own that it changes live
        read_only = (name not in KAFKA_BROKER_CONFIGS and not (name in OWN_SETTINGS and SETTINGS[name].dynamic)
                     or is_read_only(name))
        out.append(_entry(ctx, name, value, source, kind, synonyms if request.include_synonyms else (),
                          read_only=read_only, sensitive=sensitive))
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


def _client_metrics(ctx, request, resource):
    """A client-metrics subscription's configs (client_metrics.py): its own, else Kafka's defaults, with no
    synonyms but itself; one never set is described all the same, with the defaults, as Kafka does."""
    if not resource.resource_name:
        return errors.INVALID_REQUEST, "Client metrics subscription name must not be empty", []
    own = ctx.state.cluster.client_metrics.get(resource.resource_name, {})
    out = []
    for name, (kind, default) in CLIENT_METRICS_CONFIGS.items():
        if resource.configuration_keys and name not in resource.configuration_keys:
            continue
        if name in own:
            value = client_metrics_value(name, own[name])
            synonyms = [(name, value, CLIENT_METRICS_SOURCE)] if request.include_synonyms else ()
            out.append(_entry(ctx, name, value, CLIENT_METRICS_SOURCE, kind, synonyms))
        else:
            out.append(_entry(ctx, name, default, DEFAULT, kind))
    return errors.NONE, None, out


_CHANGED = {PER_BROKER: "changed while running, for one broker or for all",
            CLUSTER_WIDE: "changed while running, for all brokers at once"}


def _documentation(resource_type, name, kind):
    """A few sentences saying what a config is: this broker's description where it has one, then its type,
    where its value comes from or when it may be changed, and whether this broker acts on it."""
    own = None
    if resource_type == TOPIC:
        own = TOPIC_CONFIGS.get(name)
        _, broker_keys, _ = KAFKA_TOPIC_CONFIGS.get(name, (None, (), None))
        facts = [f"A topic config of type {kind}",
                 f"where the topic sets none, the broker setting {', else '.join(broker_keys)} gives it"
                 if broker_keys else "",
                 "acted on by this broker" if own is not None and name not in KEPT_ONLY
                 else "kept as set; this broker does not act on it"]
    elif resource_type == GROUP:
        config = GROUP_CONFIGS[name]
        facts = [f"A group config of type {kind}",
                 f"where the group sets none, the broker setting {config.broker_key} gives it"
                 if config.broker_key else f"its default is {config.default}"]
    elif resource_type == CLIENT_METRICS:
        facts = [f"A setting of a client metrics subscription, of type {kind}"]
    else:
        base, listener = _broker_key(name)
        own = SETTINGS.get(base)
        kafka = KAFKA_BROKER_CONFIGS.get(base)
        if own is not None or base == "sasl.jaas.config":  # security.py reads the JAAS configs
            use = "acted on by this broker"
        elif base in SECURED_KEYS:
            use = "refused when set: this broker checks no token's signature"
        else:
            use = "kept as given; this broker does not act on it"
        what = (f"A broker config of type {kind}" if kind else "A setting of the authorizer"
                if base in AUTHORIZER_SETTINGS else "A broker config this broker does not know")
        facts = [what,
                 f"for the listener {listener}" if listener else "",
                 _CHANGED.get(kafka.mode, "read when the broker starts") if kafka is not None else "", use]
    description = own.doc if own is not None and own.doc else ""
    sentences = [description[:1].upper() + description[1:], "; ".join(fact for fact in facts if fact)]
    return ". ".join(sentence for sentence in sentences if sentence) + "."


def _refused(ctx, operation, resource):
    """The authorization error for operation on a topic or the cluster (a broker's configs), or None."""
    if resource.resource_type == TOPIC and not ctx.allowed(operation, acls.TOPIC, resource.resource_name):
        return errors.TOPIC_AUTHORIZATION_FAILED
    if resource.resource_type in (BROKER, CLIENT_METRICS) and not ctx.allowed(operation, acls.CLUSTER,
                                                                              acls.CLUSTER_NAME):
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
            error, message, configs = refused, DENIED[refused], []
        elif resource.resource_type == TOPIC:
            error, message, configs = _topic(ctx, request, resource)
        elif resource.resource_type == BROKER:
            error, message, configs = _broker(ctx, request, resource)
        elif resource.resource_type == GROUP:
            error, message, configs = _group(ctx, request, resource)
        elif resource.resource_type == CLIENT_METRICS:
            error, message, configs = _client_metrics(ctx, request, resource)
        else:
            error, message, configs = errors.INVALID_REQUEST, f"resource type {resource.resource_type} is not " \
                                                              "described here", []
        if request.include_documentation:  # v3+
            for entry in configs:
                entry.documentation = _documentation(resource.resource_type, entry.name,
                                                     TYPE_NAMES.get(entry.config_type))
        results.append(R.DescribeConfigsResult(error_code=error.code, error_message=message,
                                               resource_type=resource.resource_type,
                                               resource_name=resource.resource_name, configs=configs))
    return R(throttle_time_ms=0, results=results)
