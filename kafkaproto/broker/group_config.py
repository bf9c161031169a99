"""A group's own configs (Kafka's GroupConfig, KIP-848 and KIP-932): set with IncrementalAlterConfigs on a GROUP
resource, described with DescribeConfigs, kept in the metadata log. Each has a broker setting as its default
(``group.share.record.lock.duration.ms`` behind ``share.record.lock.duration.ms``) and, where Kafka bounds it,
the broker's min and max settings as its range; a group need not exist to have configs.
"""

import re
from typing import NamedTuple

from .config import SETTINGS


class GroupConfig(NamedTuple):
    type: str  # Kafka's type name: "int", "string" or "boolean"
    broker_key: str  # the broker setting giving its default; None where Kafka has a fixed default
    default: str = None  # the fixed default, where there is no broker key
    at_least: int = None
    low_key: str = None  # broker settings that bound it (inclusive)
    high_key: str = None
    one_of: tuple = None


def _bounded(kind, what, at_least=1, high_only=False):
    key = f"group.{kind}.{what}"
    low = None if high_only else f"group.{kind}.min.{what.replace('num.', '')}"
    high = f"group.{kind}.max.{what.replace('num.', '')}"
    return GroupConfig("int", key, at_least=at_least, low_key=low, high_key=high)


BY_DURATION = re.compile(r"by_duration:P(?:\d{1,12}D)?(?:T(?:\d{1,12}H)?(?:\d{1,12}M)?(?:\d{1,12}(?:\.\d{1,9})?S)?)?")

# In the order Kafka's DescribeConfigs lists them (its GroupConfig's HashMap order).
GROUP_CONFIGS = {
    "consumer.session.timeout.ms": _bounded("consumer", "session.timeout.ms"),
    "consumer.assignment.interval.ms": _bounded("consumer", "assignment.interval.ms", at_least=0),
    "share.auto.offset.reset": GroupConfig("string", None, "latest"),
    "share.renew.acknowledge.enable": GroupConfig("boolean", None, "true"),
    "streams.initial.rebalance.delay.ms": GroupConfig("int", "group.streams.initial.rebalance.delay.ms",
                                                      at_least=0),
    "share.session.timeout.ms": _bounded("share", "session.timeout.ms"),
    "streams.assignment.interval.ms": _bounded("streams", "assignment.interval.ms", at_least=0),
    "share.heartbeat.interval.ms": _bounded("share", "heartbeat.interval.ms"),
    "streams.heartbeat.interval.ms": _bounded("streams", "heartbeat.interval.ms"),
    "share.delivery.count.limit": _bounded("share", "delivery.count.limit", at_least=2),
    "consumer.heartbeat.interval.ms": _bounded("consumer", "heartbeat.interval.ms"),
    "share.record.lock.duration.ms": _bounded("share", "record.lock.duration.ms", at_least=1000),
    "share.assignment.interval.ms": _bounded("share", "assignment.interval.ms", at_least=0),
    "share.isolation.level": GroupConfig("string", None, "read_uncommitted",
                                         one_of=("read_committed", "read_uncommitted")),
    "streams.session.timeout.ms": _bounded("streams", "session.timeout.ms"),
    "share.partition.max.record.locks": _bounded("share", "partition.max.record.locks", at_least=100),
    "streams.num.standby.replicas": _bounded("streams", "num.standby.replicas", at_least=0, high_only=True),
}
# A group's session must outlast its heartbeat interval.
PAIRS = [(f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms") for kind in ("consumer", "share", "streams")]


def _invalid(name, value, why):
    return f"Invalid value {value} for configuration {name}: {why}"


def _parse(name, config, value):
    """The value as its type, or ValueError with Kafka's words."""
    if config.type == "int":
        try:
            number = int(value.strip())
        except ValueError:
            raise ValueError(_invalid(name, value, "Not a number of type INT")) from None
        if not -2**31 <= number < 2**31:
            raise ValueError(_invalid(name, value, "Not a number of type INT"))
        if config.at_least is not None and number < config.at_least:
            raise ValueError(_invalid(name, value, f"Value must be at least {config.at_least}"))
        return number
    if config.type == "boolean":
        if value.strip().lower() not in ("true", "false"):
            raise ValueError(_invalid(name, value, "Expected value to be either true or false"))
        return value.strip().lower() == "true"
    if config.one_of is not None and value not in config.one_of:
        raise ValueError(_invalid(name, value, f"String must be one of: {', '.join(config.one_of)}"))
    if name == "share.auto.offset.reset" and value not in ("earliest", "latest") and \
            not BY_DURATION.fullmatch(value):
        raise ValueError(_invalid(name, value, f"Invalid value `{value}` for configuration {name}. The value must "
                                  "be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."))
    return value


def check(changes, current, broker):
    """Why these changes {name: value or None} cannot be made to a group whose configs are current, or None.
    broker(key) is a broker setting's value."""
    values = {**current}
    for name, value in changes.items():
        config = GROUP_CONFIGS.get(name)
        if config is None:
            return f"Unknown group config name: {name}"
        if value is None:
            values.pop(name, None)
            continue
        try:
            number = _parse(name, config, value)
        except ValueError as e:
            return str(e)
        if config.low_key is not None and number < broker(config.low_key):
            return f"{name} must be greater than or equal to {config.low_key}"
        if config.high_key is not None and number > broker(config.high_key):
            return f"{name} must be less than or equal to {config.high_key}"
        values[name] = value
    for session, heartbeat in PAIRS:
        if session in changes or heartbeat in changes:
            if int(effective(values, session, broker)) <= int(effective(values, heartbeat, broker)):
                return f"{session} must be greater than {heartbeat}"
    return None


def effective(configs, name, broker):
    """A group config's value (text): the group's own, else its broker setting's, else Kafka's default."""
    if name in configs:
        return configs[name]
    config = GROUP_CONFIGS[name]
    if config.broker_key is None:
        return config.default
    value = broker(config.broker_key)
    return str(value).lower() if isinstance(value, bool) else str(value)


def typed(configs, name, broker):
    """A group config's value as its type (the groups' rules read it so)."""
    config = GROUP_CONFIGS[name]
    value = effective(configs, name, broker)
    if config.type == "int":
        return int(value)
    if config.type == "boolean":
        return value.lower() == "true"
    return value


assert all(c.broker_key is None or c.broker_key in SETTINGS for c in GROUP_CONFIGS.values())
