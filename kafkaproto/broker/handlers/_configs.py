"""Changing configs, shared by IncrementalAlterConfigs and the older AlterConfigs: each resource's changes,
{name: new value or None (back to the default)}, checked whole and then written as one batch of ConfigRecords to
the metadata log, so they survive a restart. A value the broker would not honour (compaction, LogAppendTime,
recompression) is INVALID_CONFIG rather than stored and ignored.

A broker takes the settings Kafka changes while it runs (config.live_change_refusal says which): for itself
(named by its id) or for every broker (""), as Kafka takes them. Any other, and a value that is not valid, is
INVALID_REQUEST for a broker, as Kafka answers (a topic's wrong value is INVALID_CONFIG); so is a change of its
listeners Kafka would refuse (listeners.py).
"""

from ... import errors
from .. import client_metrics, group_config
from ..config import SETTINGS, ConfigError, live_change_refusal, parse_value
from ..listeners import check_change
from ..topic_configs import topic_config_error
from ..state import acls
from ..state.cluster import BROKER_RESOURCE, CLIENT_METRICS_RESOURCE, GROUP_RESOURCE, TOPIC_RESOURCE


# What Kafka says when a config request is not authorized (its errors' default messages).
DENIED = {errors.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
          errors.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
          errors.GROUP_AUTHORIZATION_FAILED: "Group authorization failed."}


class ChangeRefused(ValueError):
    """Changes make_changes refuses with an error of their own (other ValueErrors are INVALID_CONFIG)."""

    def __init__(self, error, message):
        super().__init__(message)
        self.error, self.message = error, message


def topic_configs(state, name):
    """(the topic's own configs, None) or (None, (error, message))."""
    topic = state.cluster.topics.get(name)
    if topic is None:
        return None, (errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
    if topic.is_internal:
        # Kafka takes them; here __consumer_offsets and __transaction_state are coordinators' logs, kept as written
        return None, (errors.INVALID_REQUEST, f"the configs of the internal topic {name} are fixed on this broker")
    return topic.configs, None


def broker_configs(ctx, name):
    """(the dynamic configs of the broker asked, or of every broker for "", None) or (None, (error, message))."""
    if name not in ("", str(ctx.node_id)):
        return None, (errors.INVALID_REQUEST, f"this broker is {ctx.node_id}, not {name!r}")
    return ctx.state.cluster.default_broker_configs if name == "" else \
        ctx.state.cluster.dynamic_configs(ctx.node_id), None


def alter_topic(state, name, changes, validate_only):
    """(error, message) of setting changes on a topic."""
    for key, value in changes.items():
        why = topic_config_error(key, value)
        if why:
            return errors.INVALID_CONFIG, why
    if not validate_only:
        state.cluster.set_configs(TOPIC_RESOURCE, name, changes)
    return errors.NONE, None


def alter_broker(state, name, changes, validate_only):
    """(error, message) of setting changes on this broker, or on every broker's defaults (name ""). The listeners
    are checked as Kafka checks them before it takes a change (listeners.check_change) against those the server
    runs, which applies the change once it is made."""
    refused = [problem for key in changes if (problem := live_change_refusal(key, cluster_wide=name == ""))]
    if refused:
        return errors.INVALID_REQUEST, "; ".join(map(str, refused))
    for key, value in changes.items():
        if value is None:
            continue
        try:
            parse_value(key, value, "AlterConfigs")
        except ConfigError as e:
            return errors.INVALID_REQUEST, str(e)
        setting = SETTINGS.get(key)
        why = setting is not None and setting.topic_key and topic_config_error(setting.topic_key, value)
        if why:
            return errors.INVALID_REQUEST, why
    if name not in ("", str(state.node_id)):
        return _alter_other_broker(state, int(name), changes, validate_only)
    cluster = state.cluster
    default, own = cluster.default_broker_configs, cluster.broker_configs
    if name == "":
        default = {k: v for k, v in {**default, **changes}.items() if v is not None}
    else:
        own = {k: v for k, v in {**own, **changes}.items() if v is not None}
    network = getattr(state, "network", None)
    refused = check_change(state.config, cluster.configs, {**default, **own},
                           running=None if network is None else network.running())
    if refused:
        return errors.INVALID_REQUEST, "; ".join(map(str, refused))
    if not validate_only:
        cluster.set_configs(BROKER_RESOURCE, name, changes)
        if network is not None:
            network.reconfigure()
    return errors.NONE, None


def _alter_other_broker(state, node, changes, validate_only):
    """Another broker of the cluster (kafkaproto.nodes) keeps the keys this broker does not act on, as Kafka's
    brokers keep theirs; those it acts on are the whole process's, set for the first broker or for every one."""
    acted_on = sorted(key for key, value in changes.items() if key in SETTINGS and value is not None)
    if acted_on:
        return errors.INVALID_REQUEST, (
            f"{', '.join(acted_on)}: the brokers of this cluster run in one process from one configuration, so "
            f"these are set for broker {state.node_id} or for every broker (\"\"), not for broker {node}")
    if not validate_only:
        state.cluster.set_configs(BROKER_RESOURCE, str(node), changes)
    return errors.NONE, None


def alter_group(state, name, changes, validate_only):
    """(error, message) of setting changes on a group's configs (group_config.py); the group need not exist."""
    why = group_config.check(changes, state.cluster.group_configs.get(name, {}), state.config.__getitem__)
    if why:
        return errors.INVALID_CONFIG, why
    if not validate_only:
        state.cluster.set_configs(GROUP_RESOURCE, name, changes)
    return errors.NONE, None


def alter_client_metrics(state, name, changes, validate_only):
    """(error, message) of changing a client-metrics subscription (client_metrics.py), checked whole as Kafka's
    controller checks it; only what changes is written (a subscription's telemetry is read again after each)."""
    current = state.cluster.client_metrics.get(name, {})
    after = {**current, **changes}
    refused = client_metrics.check(name, {key: value for key, value in after.items() if value is not None})
    if refused:
        return refused
    changed = {key: value for key, value in changes.items() if current.get(key) != value}
    if changed and not validate_only:
        state.cluster.set_configs(CLIENT_METRICS_RESOURCE, name, changed)
    return errors.NONE, None


def alter(ctx, resource_type, name, make_changes, validate_only):
    """(error, message) of altering one resource; make_changes(its current configs) gives the changes or raises
    ValueError naming what is wrong. With an authorizer, a topic needs ALTER_CONFIGS on it, a broker or a
    client-metrics subscription on the cluster."""
    state = ctx.state
    if resource_type == TOPIC_RESOURCE and not ctx.allowed(acls.ALTER_CONFIGS, acls.TOPIC, name):
        return errors.TOPIC_AUTHORIZATION_FAILED, DENIED[errors.TOPIC_AUTHORIZATION_FAILED]
    if resource_type in (BROKER_RESOURCE, CLIENT_METRICS_RESOURCE) and not ctx.allowed(
            acls.ALTER_CONFIGS, acls.CLUSTER, acls.CLUSTER_NAME):
        return errors.CLUSTER_AUTHORIZATION_FAILED, DENIED[errors.CLUSTER_AUTHORIZATION_FAILED]
    if resource_type == GROUP_RESOURCE and not ctx.allowed(acls.ALTER_CONFIGS, acls.GROUP, name):
        return errors.GROUP_AUTHORIZATION_FAILED, DENIED[errors.GROUP_AUTHORIZATION_FAILED]
    if resource_type == GROUP_RESOURCE:
        current, refused = state.cluster.group_configs.get(name, {}), None
        change = alter_group
    elif resource_type == TOPIC_RESOURCE:
        current, refused = topic_configs(state, name)
        change = alter_topic
    elif resource_type == BROKER_RESOURCE:
        current, refused = broker_configs(ctx, name)
        change = alter_broker
    elif resource_type == CLIENT_METRICS_RESOURCE:
        current, refused = state.cluster.client_metrics.get(name, {}), None
        change = alter_client_metrics
    else:
        return errors.INVALID_REQUEST, f"resource type {resource_type} cannot be altered here"
    if refused:
        return refused
    try:
        changes = make_changes(current, resource_type)
    except ChangeRefused as e:
        return e.error, e.message
    except ValueError as e:
        return errors.INVALID_CONFIG, str(e)
    return change(state, name, changes, validate_only)


def alter_resources(ctx, request, response_class, changes_of, once_each=False):
    """The answer to AlterConfigs or IncrementalAlterConfigs: each resource altered (alter) with the changes
    changes_of(its configs) makes. As Kafka does before it looks at anything else, a resource that names a config
    twice is refused, and (once_each) so is every resource the request names twice."""
    result = response_class.AlterConfigsResourceResponse
    named = [(resource.resource_type, resource.resource_name) for resource in request.resources]
    out = []
    for resource in request.resources:
        if once_each and named.count((resource.resource_type, resource.resource_name)) > 1:
            error, message = errors.INVALID_REQUEST, "Each resource must appear at most once."
        elif len({config.name for config in resource.configs}) < len(resource.configs):
            error, message = errors.INVALID_REQUEST, "Error due to duplicate config keys"
        else:
            error, message = alter(ctx, resource.resource_type, resource.resource_name,
                                   changes_of(resource.configs), request.validate_only)
        out.append(result(error_code=error.code, error_message=message, resource_type=resource.resource_type,
                          resource_name=resource.resource_name))
    ctx.state.changed()
    return response_class(throttle_time_ms=0, responses=out)
