"""Per-topic configs: the ones a topic may set, how each is checked, and the broker settings behind their defaults,
as Kafka 4.3's LogConfig defines them."""

from .config import (COMPRESSION_TYPES, CLEANUP_POLICIES, HOURS, MIN_SEGMENT_BYTES, ONLY_CREATE_TIME, ONLY_PRODUCER,
                     SETTINGS, TIMESTAMP_TYPES, Invalid, Setting, shown)

# Per-topic configs, as Kafka 4.3's LogConfig defines them (the broker's defaults come from SETTINGS and TOPIC_ONLY).
TOPIC_CONFIGS = {
    "segment.bytes": Setting("int", at_least=MIN_SEGMENT_BYTES),
    # Kafka's test-only size: any int (no range, no default), and when a topic sets it, its segments roll at it
    # instead of segment.bytes. Listed by DescribeConfigs only where it is set; no broker setting is behind it.
    "internal.segment.bytes": Setting("int", doc="segment size for tests, over segment.bytes when set"),
    "index.interval.bytes": Setting("int", at_least=0),
    "retention.ms": Setting("long", at_least=-1),
    "retention.bytes": Setting("long"),
    "cleanup.policy": Setting("list", one_of=CLEANUP_POLICIES),
    "message.timestamp.type": Setting("string", one_of=TIMESTAMP_TYPES, implemented=("CreateTime",),
                                      unimplemented=ONLY_CREATE_TIME),
    "compression.type": Setting("string", one_of=COMPRESSION_TYPES, implemented=("producer",),
                                unimplemented=ONLY_PRODUCER),
    "min.insync.replicas": Setting("int", at_least=1),
    "max.message.bytes": Setting("int", at_least=0),
    "file.delete.delay.ms": Setting("long", at_least=0),
    "segment.ms": Setting("long", at_least=1),
    "max.compaction.lag.ms": Setting("long", at_least=1),
    "min.compaction.lag.ms": Setting("long", at_least=0),
    "delete.retention.ms": Setting("long", at_least=0),
    "message.timestamp.after.max.ms": Setting("long", at_least=0),
    "message.timestamp.before.max.ms": Setting("long", at_least=0),
}
# Of those, the ones taken and checked but acted on by nothing here: a deleted segment waits the broker's
# log.segment.delete.delay.ms, and compaction cleans what it can without lag bounds.
KEPT_ONLY = frozenset({"file.delete.delay.ms", "max.compaction.lag.ms", "min.compaction.lag.ms"})
# Their types, as DescribeConfigs reports them (Kafka's ConfigDef type names).
TOPIC_CONFIG_TYPES = {name: setting.type.upper() for name, setting in TOPIC_CONFIGS.items()}
def topic_config_error(name, value):
    """Why a topic config cannot be set to value, or None."""
    setting = TOPIC_CONFIGS.get(name)
    if setting is None:
        return f"unknown topic config {name!r}"
    if value is None:
        return None
    try:
        setting.parse(value)
    except Invalid as e:
        return f"{name}={shown(value)}: {e}"
    return None


def segment_size(config):
    """The size a partition's segments roll at, from its topic's effective configs: internal.segment.bytes when
    set, else segment.bytes (Kafka's LogConfig.segmentSize())."""
    internal = config.get("internal.segment.bytes")
    return int(str(internal).strip()) if internal is not None else int(config["segment.bytes"])


# Per-topic configs with no broker-wide setting behind them.
TOPIC_ONLY = {"max.compaction.lag.ms": "9223372036854775807", "min.compaction.lag.ms": "0",
              "message.timestamp.after.max.ms": "3600000", "message.timestamp.before.max.ms": "9223372036854775807"}

LONG_MAX = "9223372036854775807"
# Every topic config Kafka 4.3 describes: {name: (Kafka's type, the broker settings behind it, Kafka's default)}.
# The first broker setting is the one whose default DescribeConfigs names as the synonym (when it has a default);
# the others set the same value in other units. Those this broker does not act on (flush, preallocation,
# tiered storage, replication throttles) are described with Kafka's defaults and cannot be set.
KAFKA_TOPIC_CONFIGS = {
    "cleanup.policy": ("LIST", ("log.cleanup.policy",), "delete"),
    "compression.gzip.level": ("INT", ("compression.gzip.level",), "-1"),
    "compression.lz4.level": ("INT", ("compression.lz4.level",), "9"),
    "compression.type": ("STRING", ("compression.type",), "producer"),
    "compression.zstd.level": ("INT", ("compression.zstd.level",), "3"),
    "delete.retention.ms": ("LONG", ("log.cleaner.delete.retention.ms",), "86400000"),
    "file.delete.delay.ms": ("LONG", ("log.segment.delete.delay.ms",), "60000"),
    "flush.messages": ("LONG", ("log.flush.interval.messages",), LONG_MAX),
    "flush.ms": ("LONG", ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"), LONG_MAX),
    "follower.replication.throttled.replicas": ("LIST", (), ""),
    "index.interval.bytes": ("INT", ("log.index.interval.bytes",), "4096"),
    "leader.replication.throttled.replicas": ("LIST", (), ""),
    "local.retention.bytes": ("LONG", ("log.local.retention.bytes",), "-2"),
    "local.retention.ms": ("LONG", ("log.local.retention.ms",), "-2"),
    "max.compaction.lag.ms": ("LONG", ("log.cleaner.max.compaction.lag.ms",), LONG_MAX),
    "max.message.bytes": ("INT", ("message.max.bytes",), "1048588"),
    "message.timestamp.after.max.ms": ("LONG", ("log.message.timestamp.after.max.ms",), "3600000"),
    "message.timestamp.before.max.ms": ("LONG", ("log.message.timestamp.before.max.ms",), LONG_MAX),
    "message.timestamp.type": ("STRING", ("log.message.timestamp.type",), "CreateTime"),
    "min.cleanable.dirty.ratio": ("DOUBLE", ("log.cleaner.min.cleanable.ratio",), "0.5"),
    "min.compaction.lag.ms": ("LONG", ("log.cleaner.min.compaction.lag.ms",), "0"),
    "min.insync.replicas": ("INT", ("min.insync.replicas",), "1"),
    "preallocate": ("BOOLEAN", ("log.preallocate",), "false"),
    "remote.log.copy.disable": ("BOOLEAN", (), "false"),
    "remote.log.delete.on.disable": ("BOOLEAN", (), "false"),
    "remote.storage.enable": ("BOOLEAN", (), "false"),
    "retention.bytes": ("LONG", ("log.retention.bytes",), "-1"),
    "retention.ms": ("LONG", ("log.retention.ms", "log.retention.minutes", "log.retention.hours"), "604800000"),
    "segment.bytes": ("INT", ("log.segment.bytes",), "1073741824"),
    "segment.index.bytes": ("INT", ("log.index.size.max.bytes",), "10485760"),
    "segment.jitter.ms": ("LONG", ("log.roll.jitter.ms", "log.roll.jitter.hours"), "0"),
    "segment.ms": ("LONG", ("log.roll.ms", "log.roll.hours"), "604800000"),
    "unclean.leader.election.enable": ("BOOLEAN", ("unclean.leader.election.enable",), "false"),
}


def topic_defaults(config):
    """{topic config: its default as text} from a BrokerConfig's settings (not those changed while running),
    as DescribeConfigs shows them."""
    out = dict(TOPIC_ONLY)
    for key, setting in SETTINGS.items():
        if setting.topic_key and config.values[key] is not None:
            value = config.values[key]
            out[setting.topic_key] = str(value).lower() if isinstance(value, bool) else str(value)
    out["retention.ms"] = str(config.retention_ms())
    roll = config.values["log.roll.ms"]
    out["segment.ms"] = str(roll if roll is not None else config.values["log.roll.hours"] * HOURS)
    return out
