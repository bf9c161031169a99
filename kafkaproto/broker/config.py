"""The broker's settings, under Apache Kafka's own server.properties keys.

    config = BrokerConfig.load("server.properties", overrides={"num.partitions": "3"})
    BrokerConfig()   # 127.0.0.1:9092, data in ./kafkaproto-data

Keys this broker does not use are kept (DescribeConfigs shows them) and
named once in the log; a value that does not parse is an error naming the key.
"""

import logging
from dataclasses import dataclass

log = logging.getLogger("kafkaproto.broker")


class ConfigError(ValueError):
    """A setting is missing, unreadable or out of range; the message names the key and where it came from."""


@dataclass(frozen=True)
class Setting:
    kind: type
    default: object
    topic_key: str = None  # the per-topic config this broker setting is the default of
    doc: str = ""


HOURS = 3600 * 1000

SETTINGS = {
    "node.id": Setting(int, 1, doc="this broker's id; also the controller's and every coordinator's"),
    "listeners": Setting(str, "PLAINTEXT://127.0.0.1:9092", doc="where to accept connections (port 0: any free one)"),
    "advertised.listeners": Setting(str, None, doc="the addresses clients are told to use (default: listeners)"),
    "listener.security.protocol.map": Setting(str, "PLAINTEXT:PLAINTEXT"),
    "log.dirs": Setting(str, None, doc="the data directory (one; the first of a list)"),
    "log.dir": Setting(str, "kafkaproto-data"),
    "num.partitions": Setting(int, 1, doc="partitions of a topic created without a count"),
    "default.replication.factor": Setting(int, 1),
    "auto.create.topics.enable": Setting(bool, True),
    "log.segment.bytes": Setting(int, 1 << 30, "segment.bytes"),
    "log.index.interval.bytes": Setting(int, 4096, "index.interval.bytes"),
    "log.retention.hours": Setting(int, 168),
    "log.retention.minutes": Setting(int, None),
    "log.retention.ms": Setting(int, None, "retention.ms"),
    "log.retention.bytes": Setting(int, -1, "retention.bytes"),
    "log.retention.check.interval.ms": Setting(int, 300000, doc="how often old segments are looked for"),
    "log.roll.ms": Setting(int, None, "segment.ms"),
    "log.roll.hours": Setting(int, 168),
    "log.cleaner.backoff.ms": Setting(int, 15000, doc="how often compacted topics are compacted"),
    "log.cleaner.delete.retention.ms": Setting(int, 86400000, "delete.retention.ms"),
    "log.cleanup.policy": Setting(str, "delete", "cleanup.policy"),
    "log.message.timestamp.type": Setting(str, "CreateTime", "message.timestamp.type"),
    "compression.type": Setting(str, "producer", "compression.type"),
    "min.insync.replicas": Setting(int, 1, "min.insync.replicas"),
    "message.max.bytes": Setting(int, 1048588, "max.message.bytes"),
    "socket.request.max.bytes": Setting(int, 104857600),
    # Kafka's default is 102400. Left to the system (which grows it as a connection needs), a 1 MiB fetch goes
    # out in one sendfile(2) instead of waiting for the client to read each 200 KiB: consume measured 10-20 %
    # faster against the Java consumer, with a third less broker CPU.
    "socket.send.buffer.bytes": Setting(int, -1, doc="SO_SNDBUF of each accepted connection (-1: the system's)"),
    "socket.receive.buffer.bytes": Setting(int, 102400, doc="SO_RCVBUF of the listening sockets, which their "
                                           "connections inherit (-1: the system's)"),
    "connections.max.idle.ms": Setting(int, 600000),
    "max.connections": Setting(int, 2147483647),
    "max.incremental.fetch.session.cache.slots": Setting(int, 1000),
    "group.initial.rebalance.delay.ms": Setting(int, 3000),
    "group.min.session.timeout.ms": Setting(int, 6000),
    "group.max.session.timeout.ms": Setting(int, 1800000),
    "group.max.size": Setting(int, 2147483647, doc="members a classic group takes at most (GROUP_MAX_SIZE_REACHED)"),
    # KIP-848 consumer groups (state/groups/consumer.py)
    "group.consumer.session.timeout.ms": Setting(int, 45000),
    "group.consumer.heartbeat.interval.ms": Setting(int, 5000),
    "group.consumer.max.size": Setting(int, 2147483647),
    "group.consumer.assignors": Setting(str, "uniform,range", doc="the server-side assignors; the first is the "
                                        "default (of uniform and range)"),
    "group.consumer.assignment.interval.ms": Setting(int, 1000, doc="the least time between two computations of a "
                                                     "group's target assignment"),
    "group.consumer.regex.refresh.interval.ms": Setting(int, 600000),
    "group.consumer.migration.policy": Setting(str, "bidirectional", doc="whether a classic group's members may "
                                               "move to the consumer protocol (upgrade), back (downgrade), both "
                                               "(bidirectional) or neither (disabled)"),
    "offsets.retention.minutes": Setting(int, 10080),
    "offsets.retention.check.interval.ms": Setting(int, 600000),
    "transaction.max.timeout.ms": Setting(int, 900000),
    "transactional.id.expiration.ms": Setting(int, 604800000),
    "log.segment.delete.delay.ms": Setting(int, 60000, "file.delete.delay.ms"),
    "delete.topic.enable": Setting(bool, True),
    "kafkaproto.extensions": Setting(str, "", doc="kafkaproto extensions to load at start-up, comma-separated"),
    "kafkaproto.open.segment.files.max": Setting(int, -1, doc="segment files kept open at once across all "
                                                  "partitions, the least recently used closed first (-1: half the "
                                                  "soft RLIMIT_NOFILE)"),
    # Partition deletion (examples/partition-deletion): needs that extension loaded.
    "delete.topic.partition.enable": Setting(bool, False, doc="serve DeletePartitions (the partition_deletion "
                                             "extension must be loaded)"),
    "delete.topic.partition.check.interval.ms": Setting(int, 300000, doc="how often partitions whose deletion "
                                                        "delay has passed are removed"),
    # Security (per listener too, as listener.name.<listener>.<key>); see security.py.
    "sasl.enabled.mechanisms": Setting(str, "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                                       doc="of PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512"),
    "ssl.keystore.type": Setting(str, "PEM"),
    "ssl.keystore.location": Setting(str, None),
    "ssl.keystore.certificate.chain": Setting(str, None),
    "ssl.keystore.key": Setting(str, None),
    "ssl.key.password": Setting(str, None),
    "ssl.truststore.type": Setting(str, "PEM"),
    "ssl.truststore.location": Setting(str, None),
    "ssl.truststore.certificates": Setting(str, None),
    "ssl.client.auth": Setting(str, "none"),
}
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SENSITIVE = {"ssl.keystore.key", "ssl.key.password", "ssl.truststore.certificates"}

# Per-topic configs and their types, as DescribeConfigs reports them (Kafka's ConfigDef types).
TOPIC_CONFIG_TYPES = {
    "segment.bytes": "INT", "index.interval.bytes": "INT", "retention.ms": "LONG", "retention.bytes": "LONG",
    "cleanup.policy": "LIST", "message.timestamp.type": "STRING", "compression.type": "STRING",
    "min.insync.replicas": "INT", "max.message.bytes": "INT", "file.delete.delay.ms": "LONG", "segment.ms": "LONG",
    "max.compaction.lag.ms": "LONG", "min.compaction.lag.ms": "LONG", "delete.retention.ms": "LONG",
    "message.timestamp.after.max.ms": "LONG", "message.timestamp.before.max.ms": "LONG",
}
CONFIG_TYPE_CODES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7,
                     "CLASS": 8, "PASSWORD": 9}
# Values this broker would have to act on but does not (yet): refused rather than silently ignored.
NOT_HONOURED = {
    "cleanup.policy": ({"delete", "compact"}, "cleanup.policy is delete, compact or both"),
    "message.timestamp.type": ({"CreateTime"}, "only CreateTime timestamps are implemented"),
    "compression.type": ({"producer"}, "only compression.type=producer is implemented (no recompression)"),
}


def topic_config_error(name, value):
    """Why a topic config cannot be set to value, or None."""
    kind = TOPIC_CONFIG_TYPES.get(name)
    if kind is None:
        return f"unknown topic config {name!r}"
    if value is None:
        return None
    if kind in ("INT", "LONG"):
        try:
            number = int(value)
        except ValueError:
            return f"{name}={value!r} is not an integer"
        if kind == "INT" and not -2**31 <= number < 2**31 or not -2**63 <= number < 2**63:
            return f"{name}={value!r} is out of range"
    allowed = NOT_HONOURED.get(name)
    if allowed is not None:
        values = {v.strip() for v in value.split(",")} if kind == "LIST" else {value}
        if not values <= allowed[0]:
            return allowed[1]
    return None


# Per-topic configs with no broker-wide setting behind them.
TOPIC_ONLY = {"max.compaction.lag.ms": "9223372036854775807", "min.compaction.lag.ms": "0",
              "message.timestamp.after.max.ms": "3600000", "message.timestamp.before.max.ms": "9223372036854775807"}


def parse_value(key, text, kind, where):
    text = text.strip()
    if kind is bool:
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"{where}: {key}={text!r} is not true or false")
        return text.lower() == "true"
    if kind is int:
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"{where}: {key}={text!r} is not an integer") from None
    return text


def read_properties(text, where):
    """{key: value} from Java .properties text (comments, key=value or key: value, line continuations)."""
    out = {}
    lines = iter(text.splitlines())
    for number, line in enumerate(lines, 1):
        line = line.strip()
        while line.endswith("\\"):
            line = line[:-1] + next(lines, "").strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep <= 0:
            raise ConfigError(f"{where}, line {number}: {line!r} is not key=value")
        out[line[:sep].strip()] = line[sep + 1:].strip()
    return out


class Listener:
    """One listener: its name, security protocol, host and port (port 0 until bound, when asked for any)."""

    def __init__(self, name, host, port, protocol):
        self.name, self.host, self.port, self.protocol = name, host, port, protocol

    def __repr__(self):
        return f"{self.name}://{self.host}:{self.port}"


def parse_listeners(text, protocols, key):
    out = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, address = item.partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not port.isdigit():
            raise ConfigError(f"{key}: {item!r} is not NAME://host:port")
        protocol = protocols.get(name.upper(), name.upper())
        out.append(Listener(name.upper(), host.strip("[]") or "0.0.0.0", int(port), protocol))
    if not out:
        raise ConfigError(f"{key} names no listener")
    return out


class BrokerConfig:
    """Every setting, parsed; ``values`` keeps them by Kafka key, including keys this broker does not use."""

    def __init__(self, values=None, where="configuration"):
        values = dict(values or {})
        self.where = where
        self.values = {}
        unknown = sorted(k for k in values if k not in SETTINGS)
        unused = [k for k in unknown if not (k.startswith("listener.name.") or k.endswith("sasl.jaas.config"))]
        if unused:
            log.info("%s: not used by this broker: %s", where, ", ".join(unused))
        for key, setting in SETTINGS.items():
            raw = values.get(key)
            self.values[key] = setting.default if raw is None else parse_value(key, str(raw), setting.kind, where)
        self.extra = {k: values[k] for k in unknown}
        self.given = set(values)  # keys set in the file or by overrides (STATIC_BROKER_CONFIG)
        get = self.values.__getitem__
        self.node_id = get("node.id")
        protocols = {}
        for pair in filter(None, (p.strip() for p in get("listener.security.protocol.map").split(","))):
            name, _, protocol = pair.partition(":")
            protocols[name.strip().upper()] = protocol.strip().upper()
        self.listeners = parse_listeners(get("listeners"), protocols, "listeners")
        for listener in self.listeners:
            if listener.protocol not in PROTOCOLS:
                raise ConfigError(f"{where}: listener {listener!r} has security protocol {listener.protocol!r} "
                                  f"(listener.security.protocol.map); known: {', '.join(PROTOCOLS)}")
        advertised = get("advertised.listeners")
        self.advertised = parse_listeners(advertised, protocols, "advertised.listeners") if advertised else None
        self.log_dir = (get("log.dirs") or get("log.dir")).split(",")[0].strip()
        self.segment_delete_delay_ms = get("log.segment.delete.delay.ms")
        self.cluster_id = None
        for key in ("num.partitions", "message.max.bytes", "socket.request.max.bytes", "log.segment.bytes"):
            if get(key) <= 0:
                raise ConfigError(f"{where}: {key}={get(key)} must be positive")
        unknown = [a for a in get("group.consumer.assignors").split(",") if a.strip() not in ("uniform", "range")]
        if unknown or not get("group.consumer.assignors").strip():
            raise ConfigError(f"{where}: group.consumer.assignors={get('group.consumer.assignors')!r}; the "
                              "assignors are uniform and range")
        if get("group.consumer.migration.policy").lower() not in ("bidirectional", "upgrade", "downgrade",
                                                                  "disabled"):
            raise ConfigError(f"{where}: group.consumer.migration.policy={get('group.consumer.migration.policy')!r}"
                              " is not bidirectional, upgrade, downgrade or disabled")
        if get("default.replication.factor") != 1:
            raise ConfigError(f"{where}: default.replication.factor={get('default.replication.factor')}; a one-node "
                              "cluster can only keep 1 replica")

    def __getitem__(self, key):
        return self.values[key]

    @classmethod
    def load(cls, path=None, overrides=None):
        """From a server.properties file (optional), then key=value overrides on top."""
        values = {}
        where = "defaults"
        if path is not None:
            try:
                with open(path) as f:
                    text = f.read()
            except OSError as e:
                raise ConfigError(f"cannot read {path}: {e.strerror}") from None
            values = read_properties(text, path)
            where = str(path)
        values.update(overrides or {})
        return cls(values, where)

    def retention_ms(self):
        for key, scale in (("log.retention.ms", 1), ("log.retention.minutes", 60000), ("log.retention.hours", HOURS)):
            if self.values[key] is not None:
                return self.values[key] * scale
        return 168 * HOURS

    def topic_defaults(self):
        """{topic config: default value as text}, as DescribeConfigs shows them."""
        out = dict(TOPIC_ONLY)
        for key, setting in SETTINGS.items():
            if setting.topic_key and self.values[key] is not None:
                value = self.values[key]
                out[setting.topic_key] = str(value).lower() if isinstance(value, bool) else str(value)
        out["retention.ms"] = str(self.retention_ms())
        roll = self.values["log.roll.ms"]
        out["segment.ms"] = str(roll if roll is not None else self.values["log.roll.hours"] * HOURS)
        return out

    def describe(self):
        """{broker config: value as text or None} for DescribeConfigs (secrets as None, as Kafka shows them)."""
        out = {}
        for key, value in {**self.values, **self.extra}.items():
            if key in SENSITIVE or "password" in key or key.endswith("jaas.config"):
                value = None
            out[key] = None if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        return out

