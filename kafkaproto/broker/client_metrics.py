"""Client-metrics subscriptions (KIP-714): the configs of ConfigResource type 16, as Kafka 4.3's
ClientMetricsConfigs defines and checks them.

A subscription is a named set of three configs, set with IncrementalAlterConfigs or AlterConfigs
(``kafka-client-metrics --alter``), described with DescribeConfigs and listed with ListConfigResources:

- ``metrics``: the prefixes of the metric names the clients it matches push (``*``: every metric);
- ``interval.ms``: how often they push them, 100 ms to an hour (300000 when not set);
- ``match``: ``selector=pattern`` items, each a Java regular expression a client's attribute must match whole
  (client_instance_id, client_id, client_software_name, client_software_version, client_source_address,
  client_source_port); none: every client.

A subscription whose keys are all deleted is gone. Values are read as Kafka's ConfigDef reads them: a list is
split at commas with the blanks around each item dropped, and an item given twice is kept once. Kafka reads the
patterns with java.util.regex; java_regex.py reads them the same way.
"""

import re
from typing import NamedTuple

from .. import errors
from .java_regex import JavaRegexError, compile_java

METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
DEFAULT_INTERVAL_MS = 300000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3600000
ALL_METRICS = "*"
MATCH_SELECTORS = ("client_instance_id", "client_id", "client_software_name", "client_software_version",
                   "client_source_address", "client_source_port")
# Kafka's type of each config and its default as DescribeConfigs shows it, in the order Kafka lists them.
CONFIGS = {INTERVAL_MS: ("INT", str(DEFAULT_INTERVAL_MS)), MATCH: ("LIST", ""), METRICS: ("LIST", "")}
# Kafka parses the configs in the order it defines them: the first wrong one is the one named.
_PARSE_ORDER = (METRICS, INTERVAL_MS, MATCH)

_JAVA_BLANKS = "".join(map(chr, range(33)))  # what Java's String.trim removes
_LIST_SEPARATOR = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")  # Java's \s*,\s*
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def split_list(name, text):
    """A LIST config's items, as Kafka's ConfigDef reads them (duplicates dropped, the first kept); raises
    ValueError with Kafka's words for an empty item."""
    trimmed = text.strip(_JAVA_BLANKS)
    if not trimmed:
        return []
    items = list(dict.fromkeys(_LIST_SEPARATOR.split(trimmed)))
    if "" in items:
        raise ValueError(f"Configuration '{name}' values must not be empty.")
    return items


def parse_interval(text):
    """interval.ms as Kafka's ConfigDef reads an INT; raises ValueError with Kafka's words."""
    trimmed = text.strip(_JAVA_BLANKS)
    if not _JAVA_INT.fullmatch(trimmed) or not -2**31 <= int(trimmed) < 2**31:
        raise ValueError(f"Invalid value {text} for configuration {INTERVAL_MS}: Not a number of type INT")
    return int(trimmed)


def parse_match(items):
    """{selector: compiled pattern} of match items; raises ValueError with Kafka's words. An item is split at
    '=' as Java's String.split splits it (trailing empty parts dropped), so it must have exactly one '=' before
    its last non-empty part; a selector given twice keeps its last pattern."""
    patterns = {}
    for item in items:
        parts = item.split("=")
        while parts and parts[-1] == "":
            parts.pop()
        selector = parts[0].strip(_JAVA_BLANKS) if len(parts) == 2 else None
        if selector not in MATCH_SELECTORS:
            raise ValueError(f"Illegal client matching pattern: {item}")
        try:
            patterns[selector] = compile_java(parts[1].strip(_JAVA_BLANKS))
        except JavaRegexError:
            raise ValueError(f"Illegal client matching pattern: {item}") from None
    return patterns


def check(name, configs):
    """(error, message) that refuses a subscription whose configs would be configs ({name: text}, the changes
    over what it has), or None; in Kafka's order and words."""
    if not name:
        return errors.INVALID_REQUEST, "Subscription name can't be empty"
    for key in configs:
        if key not in CONFIGS:
            return errors.INVALID_REQUEST, f"Unknown client metrics configuration: {key}"
    parsed = {}
    try:
        for key in _PARSE_ORDER:
            if key in configs:
                parsed[key] = parse_interval(configs[key]) if key == INTERVAL_MS else split_list(key, configs[key])
    except ValueError as e:
        return errors.INVALID_CONFIG, str(e)
    interval = parsed.get(INTERVAL_MS)
    if interval is not None and not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
        return errors.INVALID_REQUEST, (f"Invalid value {interval} for {INTERVAL_MS}, interval must be between "
                                        f"{MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)")
    try:
        parse_match(parsed.get(MATCH, ()))
    except ValueError as e:
        return errors.INVALID_CONFIG, str(e)
    return None


def shown(key, text):
    """A config's value as DescribeConfigs shows it: parsed, then written back (items trimmed and once each)."""
    try:
        return str(parse_interval(text)) if key == INTERVAL_MS else ",".join(split_list(key, text))
    except ValueError:  # checked when set: a metadata log written otherwise
        return text


class Subscription(NamedTuple):
    """A subscription as the telemetry of the clients it matches reads it."""

    name: str
    metrics: tuple  # metric name prefixes, once each, in the order given
    interval_ms: int
    patterns: dict  # selector -> compiled pattern; empty: every client

    def matches(self, attributes):
        """Whether a client with attributes {selector: text or None} is one of this subscription's."""
        return all(attributes.get(selector) is not None and pattern.fullmatch(attributes[selector])
                   for selector, pattern in self.patterns.items())


def subscription(name, configs):
    """The Subscription of configs ({name: text}) that check took; None for configs it cannot read."""
    try:
        return Subscription(name, tuple(split_list(METRICS, configs.get(METRICS, ""))),
                            parse_interval(configs.get(INTERVAL_MS, str(DEFAULT_INTERVAL_MS))),
                            parse_match(split_list(MATCH, configs.get(MATCH, ""))))
    except ValueError:
        return None
