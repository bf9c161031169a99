"""The broker's settings, under Apache Kafka's own server.properties keys.

    config = BrokerConfig.load("server.properties", overrides={"num.partitions": "3"})
    BrokerConfig()   # 127.0.0.1:9092, data in ./kafkaproto-data

Every key this broker knows is defined as Kafka 4.3 defines it: a type (int,
long, short, double, boolean, string, list, class, password), a range and the
values it allows, and the rules Kafka checks between keys (a consumer group's
session timeout within its bounds, say). Values are read as Kafka reads them
(trimmed; true/false in any case; integers in decimal, within their type).
Every value given is checked at start, and every wrong one is reported at once
in a ConfigError, each naming its key and where it came from: an --override,
a line of the properties file, or the defaults. A value Kafka takes but this
broker does not implement (LogAppendTime, a JKS keystore) is refused too, and
says so. Where this broker is more lenient than Kafka on purpose, the setting
says why (DIFFERENCES).

Keys this broker does not use are kept (DescribeConfigs shows them) and named
once in the log, with the known key a misspelt one was probably meant to be.
"""

import difflib
import ipaddress
import logging
import re

from .kafka_broker_configs import KAFKA_BROKER_CONFIGS, PER_BROKER, READ_ONLY
from .oauthbearer import config_problem as sasl_config_problem
from .settings import ConfigError, Invalid, Problem, Setting, split_list

log = logging.getLogger("kafkaproto.broker")


# ---- checks of single values that ranges cannot say

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
PORTS = (0, 65535)


class Listener:
    """One listener: its name, security protocol, host and port (port 0 until bound, when asked for any)."""

    def __init__(self, name, host, port, protocol):
        self.name, self.host, self.port, self.protocol = name, host, port, protocol

    def __repr__(self):
        return f"{self.name}://{self.host}:{self.port}"


def parse_endpoints(text, distinct_ports=True):
    """[(NAME, host, port)] of a listeners value (NAME://host:port, the host in brackets if it is IPv6, empty
    for every address); raises Invalid naming the endpoint that is wrong."""
    out = []
    for item in split_list(text):
        name, sep, address = item.partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not name or ":" in host and not (host.startswith("[") and host.endswith("]")):
            raise Invalid(f"{item!r} is not NAME://host:port (for example PLAINTEXT://127.0.0.1:9092)")
        if not colon or not port:
            raise Invalid(f"{item!r} has no port (NAME://host:port; port 0 takes any free one)")
        if not re.fullmatch(r"-?[0-9]+", port):
            raise Invalid(f"{item!r}: the port {port!r} is not a number")
        if not PORTS[0] <= int(port) <= PORTS[1]:
            raise Invalid(f"port {int(port)} is out of range ({PORTS[0]}-{PORTS[1]}; 0 takes any free port)",
                          kafka=False)
        out.append((name.upper(), host[1:-1] if host.startswith("[") else host, int(port)))
    names = [name for name, _, _ in out]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise Invalid(f"listener name {twice[0]} is used twice; each listener needs a name of its own")
    if distinct_ports:
        for port in sorted({port for _, _, port in out if port}):
            hosts = [host for _, host, p in out if p == port]
            if len(hosts) > 1 and sorted(_ip_version(h) for h in hosts) != [4, 6]:
                raise Invalid(f"port {port} is used twice; each listener needs a port of its own (or two, one on "
                              "an IPv4 address and one on an IPv6 address, may share one)")
    return out


def _ip_version(host):
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return None  # a host name


def _check_endpoints(text):
    parse_endpoints(text)


def parse_host_port(text):
    """(host, port) of "HOST:PORT" (an IPv6 host in brackets); raises Invalid."""
    host, colon, port = text.strip().rpartition(":")
    host = host.strip("[]")
    if not colon or not host or not port.isdigit() or int(port) > 65535:
        raise Invalid(f"{text!r} is not HOST:PORT")
    return host, int(port)


def _check_host_port(text):
    parse_host_port(text)


def _check_advertised(text):
    parse_endpoints(text, distinct_ports=False)


def parse_protocol_map(text):
    """{LISTENER NAME: PROTOCOL} of listener.security.protocol.map; raises Invalid."""
    out = {}
    for item in split_list(text):
        name, colon, protocol = item.partition(":")
        if not colon or not name.strip() or not protocol.strip():
            raise Invalid(f"{item!r} is not LISTENER_NAME:SECURITY_PROTOCOL")
        if protocol.strip().upper() not in PROTOCOLS:
            raise Invalid(f"{item!r}: {protocol.strip()!r} is not a security protocol ({', '.join(PROTOCOLS)})")
        out[name.strip().upper()] = protocol.strip().upper()
    return out


def _check_protocol_map(text):
    parse_protocol_map(text)


_HOST_CHARACTERS = re.compile(r"[0-9a-zA-Z\-%._:]*")


def parse_ip_overrides(text):
    """{host: connections} of max.connections.per.ip.overrides ("host:count,..."; the last colon splits, so an
    IPv6 address may be the host), as Kafka parses it; raises Invalid."""
    out = {}
    for item in split_list(text):
        host, colon, count = item.rpartition(":")
        host = host.strip()
        if not colon or not host:
            raise Invalid(f"{item!r} is not host:count")
        try:
            out[host] = int(count.strip())
        except ValueError:
            raise Invalid(f"the count {count.strip()!r} of {host!r} is not a number") from None
    invalid = [host for host in out if not _HOST_CHARACTERS.fullmatch(host)]
    if invalid:  # Kafka's check: letters, digits and - % . _ : only (an IPv6 address without brackets)
        raise Invalid(f"invalid addresses: {', '.join(invalid)}")
    return out


def _check_ip_overrides(text):
    parse_ip_overrides(text)


def _internal_partitions(value):
    if value > 1000:
        raise Invalid("at most 1000 here, where each partition is a directory of logs opened at start", kafka=False)


def _no_delegation_tokens(value):
    """Delegation tokens are not implemented: their requests are answered DELEGATION_TOKEN_AUTH_DISABLED, as by a
    Kafka broker without this key; a broker given one refuses to start rather than pretend."""
    if value:
        raise Invalid("delegation tokens are not implemented here (without this key their requests are answered "
                      "DELEGATION_TOKEN_AUTH_DISABLED, as Kafka answers)", kafka=False)


def _check_buffer(value):
    if value != -1 and value < 1:
        raise Invalid("must be -1 (the system's size) or a positive size; the socket would refuse it", kafka=False)


HOURS = 3600 * 1000
INT_MAX = 2**31 - 1

# What Kafka 4.3 allows, for the settings below.
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("compact", "delete")
ONLY_CREATE_TIME = "only CreateTime timestamps are implemented here (Kafka also has LogAppendTime)"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ONLY_PRODUCER = "only compression.type=producer is implemented here (the broker does not recompress)"
# Where this broker takes what Kafka 4.3 refuses, on purpose: {key: why}. None at present.
DIFFERENCES = {}
# Kafka 4's least log.segment.bytes and segment.bytes (1 MiB). Smaller segments, for tests, are had as Kafka's own
# tests have them: a topic's internal.segment.bytes (see segment_size).
MIN_SEGMENT_BYTES = 1 << 20

INTERNAL_PARTITIONS = ("offsets.topic.num.partitions", "transaction.state.log.num.partitions",
                       "share.coordinator.state.topic.num.partitions")
KAFKA_INTERNAL_PARTITIONS = 50  # their default on Kafka, and here on a cluster of several brokers

SETTINGS = {
    "node.id": Setting("int", 1, doc="this broker's id; also the controller's and every coordinator's",
                       at_least=0),
    "kafkaproto.nodes": Setting("int", 1, at_least=1, at_most=64, doc="how many brokers this process serves as "
                                "one cluster, with the ids node.id, node.id + 1, ...; each has its own listeners "
                                "(their ports one apart, or each any free one for port 0)"),
    "kafkaproto.control.channel": Setting("string", None, check=_check_host_port, doc="HOST:PORT of the control "
                                          "channel, where tests in any language move leaders, stop brokers and "
                                          "install faults (control_channel.py); a loopback address, since whoever "
                                          "reaches it can stop brokers; port 0: any free one. Off by default"),
    "listeners": Setting("list", "PLAINTEXT://127.0.0.1:9092", non_empty=True, check=_check_endpoints,
                         doc="where to accept connections (port 0: any free one)", dynamic=True),
    "advertised.listeners": Setting("list", None, non_empty=True, check=_check_advertised,
                                    doc="the addresses clients are told to use (default: listeners)"),
    "listener.security.protocol.map": Setting("string", "PLAINTEXT:PLAINTEXT", check=_check_protocol_map,
                                              dynamic=True),
    "log.dirs": Setting("list", None, non_empty=True, doc="the data directory (one; the first of a list)"),
    "log.dir": Setting("list", "kafkaproto-data", non_empty=True),
    "num.partitions": Setting("int", 1, doc="partitions of a topic created without a count", at_least=1),
    "default.replication.factor": Setting("int", 1, doc="replicas of a topic created without a count (more than "
                                          "the brokers running: the creation fails, as on Kafka)"),
    "auto.create.topics.enable": Setting("boolean", True),
    "log.segment.bytes": Setting("int", 1 << 30, "segment.bytes", at_least=MIN_SEGMENT_BYTES),
    "log.index.interval.bytes": Setting("int", 4096, "index.interval.bytes", at_least=0),
    "log.retention.hours": Setting("int", 168),
    "log.retention.minutes": Setting("int", None),
    "log.retention.ms": Setting("long", None, "retention.ms"),
    "log.retention.bytes": Setting("long", -1, "retention.bytes"),
    "log.retention.check.interval.ms": Setting("long", 300000, doc="how often old segments are looked for",
                                               at_least=1),
    "log.roll.ms": Setting("long", None, "segment.ms", at_least=1),
    "log.roll.hours": Setting("int", 168, at_least=1),
    "log.cleaner.backoff.ms": Setting("long", 15000, doc="how often compacted topics are compacted", at_least=0,
                                      dynamic=True),
    "log.cleaner.delete.retention.ms": Setting("long", 86400000, "delete.retention.ms", at_least=0),
    "log.cleanup.policy": Setting("list", "delete", "cleanup.policy", one_of=CLEANUP_POLICIES),
    "log.message.timestamp.type": Setting("string", "CreateTime", "message.timestamp.type", one_of=TIMESTAMP_TYPES,
                                          implemented=("CreateTime",), unimplemented=ONLY_CREATE_TIME),
    "compression.type": Setting("string", "producer", "compression.type", one_of=COMPRESSION_TYPES,
                                implemented=("producer",), unimplemented=ONLY_PRODUCER),
    "min.insync.replicas": Setting("int", 1, "min.insync.replicas", at_least=1),
    "message.max.bytes": Setting("int", 1048588, "max.message.bytes", at_least=0),
    "socket.request.max.bytes": Setting("int", 104857600, at_least=1),
    # Kafka's default is 102400. Left to the system (which grows it as a connection needs), a 1 MiB fetch goes
    # out in one sendfile(2) instead of waiting for the client to read each 200 KiB: consume measured 10-20 %
    # faster against the Java consumer, with a third less broker CPU.
    "socket.send.buffer.bytes": Setting("int", -1, doc="SO_SNDBUF of each accepted connection (-1: the system's)",
                                        check=_check_buffer),
    "socket.receive.buffer.bytes": Setting("int", 102400, doc="SO_RCVBUF of the listening sockets, which their "
                                           "connections inherit (-1: the system's)", check=_check_buffer),
    "connections.max.idle.ms": Setting("long", 600000),
    "max.connections": Setting("int", INT_MAX, at_least=0, dynamic=True),
    "max.connections.per.ip": Setting("int", INT_MAX, at_least=0, dynamic=True),
    "max.connections.per.ip.overrides": Setting("string", "", check=_check_ip_overrides, dynamic=True),
    "max.connection.creation.rate": Setting("int", INT_MAX, at_least=0, dynamic=True, doc="new connections a "
                                            "second, on a listener and over the listeners, past which a listener "
                                            "waits (at most a second) before serving the next"),
    "queued.max.requests": Setting("int", 500, at_least=1, doc="requests read and waiting to be handled, over "
                                   "every connection, past which the broker stops reading"),
    "connection.failed.authentication.delay.ms": Setting("int", 100, at_least=0, doc="how long the answer to a "
                                                         "failed authentication waits, before the connection closes"),
    "max.incremental.fetch.session.cache.slots": Setting("int", 1000, at_least=0),
    "delegation.token.secret.key": Setting("password", None, check=lambda value: _no_delegation_tokens(value)),
    "delegation.token.max.lifetime.ms": Setting("long", 604800000, at_least=1),
    "delegation.token.expiry.time.ms": Setting("long", 86400000, at_least=1),
    "group.initial.rebalance.delay.ms": Setting("int", 3000),
    "group.min.session.timeout.ms": Setting("int", 6000),
    "group.max.session.timeout.ms": Setting("int", 1800000),
    "group.max.size": Setting("int", INT_MAX, doc="members a classic group takes at most (GROUP_MAX_SIZE_REACHED)",
                              at_least=1),
    # KIP-848 consumer groups (state/groups/consumer.py); the min/max keys bound the others, as in Kafka.
    "group.consumer.session.timeout.ms": Setting("int", 45000, at_least=1),
    "group.consumer.min.session.timeout.ms": Setting("int", 45000, at_least=1),
    "group.consumer.max.session.timeout.ms": Setting("int", 60000, at_least=1),
    "group.consumer.heartbeat.interval.ms": Setting("int", 5000, at_least=1),
    "group.consumer.min.heartbeat.interval.ms": Setting("int", 5000, at_least=1),
    "group.consumer.max.heartbeat.interval.ms": Setting("int", 15000, at_least=1),
    "group.consumer.max.size": Setting("int", INT_MAX, at_least=1),
    "group.consumer.assignors": Setting("list", "uniform,range", non_empty=True, implemented=("uniform", "range"),
                                        unimplemented="this broker's assignors are uniform and range (Kafka also "
                                        "takes class names)",
                                        doc="the server-side assignors; the first is the default (of uniform and "
                                        "range)"),
    "group.consumer.assignment.interval.ms": Setting("int", 1000, at_least=0, dynamic=True, doc="the least time "
                                                     "between two computations of a group's target assignment"),
    "group.consumer.min.assignment.interval.ms": Setting("int", 0, at_least=0),
    "group.consumer.max.assignment.interval.ms": Setting("int", 15000, at_least=0),
    "group.consumer.regex.refresh.interval.ms": Setting("int", 600000, at_least=10000),
    # Share groups (KIP-932: state/groups/share.py and state/shares.py); the min/max keys bound the others and
    # the groups' own configs (group_config.py), as in Kafka.
    "group.share.session.timeout.ms": Setting("int", 45000, at_least=1),
    "group.share.min.session.timeout.ms": Setting("int", 45000, at_least=1),
    "group.share.max.session.timeout.ms": Setting("int", 60000, at_least=1),
    "group.share.heartbeat.interval.ms": Setting("int", 5000, at_least=1),
    "group.share.min.heartbeat.interval.ms": Setting("int", 5000, at_least=1),
    "group.share.max.heartbeat.interval.ms": Setting("int", 15000, at_least=1),
    "group.share.assignment.interval.ms": Setting("int", 1000, at_least=0, dynamic=True, doc="the least time "
                                                  "between two computations of a share group's target assignment"),
    "group.share.min.assignment.interval.ms": Setting("int", 0, at_least=0),
    "group.share.max.assignment.interval.ms": Setting("int", 15000, at_least=0),
    "group.share.max.size": Setting("int", 200, at_least=1, at_most=1000),
    "group.share.assignors": Setting("list", "simple", non_empty=True, implemented=("simple",),
                                     unimplemented="share groups are assigned by the simple assignor"),
    "group.share.delivery.count.limit": Setting("int", 5, at_least=2, at_most=10, doc="deliveries of a record "
                                                "before it is archived instead of delivered again"),
    "group.share.min.delivery.count.limit": Setting("int", 2, at_least=2, at_most=5),
    "group.share.max.delivery.count.limit": Setting("int", 10, at_least=5, at_most=25),
    "group.share.record.lock.duration.ms": Setting("int", 30000, at_least=1000, at_most=3600000, doc="how long a "
                                                   "share consumer holds the records it was given"),
    "group.share.min.record.lock.duration.ms": Setting("int", 15000, at_least=1000, at_most=30000),
    "group.share.max.record.lock.duration.ms": Setting("int", 60000, at_least=30000, at_most=3600000),
    "group.share.partition.max.record.locks": Setting("int", 2000, at_least=100, at_most=10000, doc="records of a "
                                                      "partition delivered and not yet acknowledged, at most"),
    "group.share.min.partition.max.record.locks": Setting("int", 100, at_least=100, at_most=2000),
    "group.share.max.partition.max.record.locks": Setting("int", 4000, at_least=100, at_most=10000),
    "group.share.max.share.sessions": Setting("int", 2000, at_least=1, doc="share sessions the broker keeps at "
                                              "once (SHARE_SESSION_LIMIT_REACHED past them)"),
    # Streams groups (KIP-1071): their group configs are described and may be set (group_config.py).
    "group.streams.session.timeout.ms": Setting("int", 45000, at_least=1),
    "group.streams.min.session.timeout.ms": Setting("int", 45000, at_least=1),
    "group.streams.max.session.timeout.ms": Setting("int", 60000, at_least=1),
    "group.streams.heartbeat.interval.ms": Setting("int", 5000, at_least=1),
    "group.streams.min.heartbeat.interval.ms": Setting("int", 5000, at_least=1),
    "group.streams.max.heartbeat.interval.ms": Setting("int", 15000, at_least=1),
    "group.streams.num.standby.replicas": Setting("int", 0, at_least=0),
    "group.streams.max.size": Setting("int", INT_MAX, at_least=1),
    "group.streams.max.standby.replicas": Setting("int", 2, at_least=0),
    "group.streams.initial.rebalance.delay.ms": Setting("int", 3000, at_least=0),
    "group.streams.assignment.interval.ms": Setting("int", 1000, at_least=0, dynamic=True),
    "group.streams.min.assignment.interval.ms": Setting("int", 0, at_least=0),
    "group.streams.max.assignment.interval.ms": Setting("int", 15000, at_least=0),

    "group.consumer.migration.policy": Setting("string", "bidirectional", one_of=(
        "disabled", "downgrade", "upgrade", "bidirectional"), ignore_case=True, doc="whether a classic group's "
        "members may move to the consumer protocol (upgrade), back (downgrade), both (bidirectional) or neither "
        "(disabled)"),
    "offsets.retention.minutes": Setting("int", 10080, at_least=1),
    "offsets.retention.check.interval.ms": Setting("long", 600000, at_least=1),
    # The partitions of the coordinators' internal topics, each key (group id, transactional id, share partition)
    # in the one Kafka's hashing picks, coordinated by its leader: Kafka's 50 on a cluster of several brokers, so
    # that coordinators spread over them as on Kafka; 1 on a broker alone, where they cannot (INTERNAL_PARTITIONS).
    # Once a topic is made, its own count holds (state/coordinator_logs.py).
    "offsets.topic.num.partitions": Setting("int", 1, at_least=1, check=_internal_partitions, doc=(
        "the partitions of __consumer_offsets: 1 on one broker, Kafka's 50 on several")),
    "transaction.state.log.num.partitions": Setting("int", 1, at_least=1, check=_internal_partitions, doc=(
        "the partitions of __transaction_state: 1 on one broker, Kafka's 50 on several")),
    # Replicas of the internal topics, over as many brokers as run when one is made (Kafka refuses to make one
    # with fewer): the brokers a coordinator fails over to (state/replicas.py).
    "offsets.topic.replication.factor": Setting("short", 3, at_least=1),
    "transaction.state.log.replication.factor": Setting("short", 3, at_least=1),
    "share.coordinator.state.topic.replication.factor": Setting("short", 3, at_least=1),
    "share.coordinator.state.topic.num.partitions": Setting(
        "int", 1, at_least=1, check=_internal_partitions, doc=(
            "the partitions of __share_group_state: 1 on one broker, Kafka's 50 on several")),
    "share.coordinator.snapshot.update.records.per.snapshot": Setting(
        "int", 500, at_least=0, at_most=500, doc="how many updates of a share partition's state are written to "
        "__share_group_state between two snapshots of it"),
    "transaction.max.timeout.ms": Setting("int", 900000, at_least=1),
    "transactional.id.expiration.ms": Setting("int", 604800000, at_least=1),
    "log.segment.delete.delay.ms": Setting("long", 60000, "file.delete.delay.ms", at_least=0),
    "delete.topic.enable": Setting("boolean", True),
    # asyncio's by default: on uvloop's, which has no sendfile of its own, a Fetch's records are copied through
    # Python and the broker spends about twice the CPU per GB consumed (BENCHMARKS.md, the event loop A/B)
    "kafkaproto.event.loop": Setting("string", "asyncio", one_of=("asyncio", "uvloop"), doc="the event loop "
                                     "`kafkaproto broker` serves on: asyncio's, or uvloop's (pip install "
                                     "'kafkaproto[uvloop]')"),
    "kafkaproto.extensions": Setting("list", "", doc="kafkaproto extensions to load at start-up, comma-separated"),
    # Client telemetry (KIP-714): GetTelemetrySubscriptions and PushTelemetry are answered either way, as Kafka
    # answers them; Kafka lists them in ApiVersions only when a telemetry receiver plugin is configured.
    "telemetry.max.bytes": Setting("int", 1048576, at_least=1, doc="the largest metrics payload a client may push, "
                                   "compressed and decompressed (TELEMETRY_TOO_LARGE, INVALID_RECORD past it)"),
    "kafkaproto.client.telemetry.enable": Setting("boolean", False, doc="list GetTelemetrySubscriptions and "
                                                  "PushTelemetry in ApiVersions, so that clients push their "
                                                  "metrics, and keep the last ones each client pushed (the "
                                                  "broker's stand-in for Kafka's telemetry receiver plugin)"),
    "kafkaproto.open.segment.files.max": Setting("int", -1, at_least=1, also=(-1,), doc="segment files kept open "
                                                 "at once across all partitions, the least recently used closed "
                                                 "first (-1: half the soft RLIMIT_NOFILE)"),
    # Partition deletion (examples/partition-deletion): needs that extension loaded.
    "delete.topic.partition.enable": Setting("boolean", False, doc="serve DeletePartitions (the partition_deletion "
                                             "extension must be loaded)"),
    "delete.topic.partition.check.interval.ms": Setting("long", 1000, at_least=1, doc="how often the broker looks "
                                                        "for partitions whose deletion delay has passed"),
    # Security (per listener too, as listener.name.<listener>.<key>); see security.py.
    "sasl.enabled.mechanisms": Setting("list", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", implemented=SASL_MECHANISMS,
                                       ignore_case=True,
                                       unimplemented="the SASL mechanisms implemented here are "
                                       + ", ".join(SASL_MECHANISMS), doc="of " + ", ".join(SASL_MECHANISMS),
                                       dynamic=True),
    # Per listener and mechanism too (listener.name.<listener>[.<mechanism>].connections.max.reauth.ms).
    "connections.max.reauth.ms": Setting("long", 0, doc="how long an authenticated SASL session lasts before the "
                                         "client must authenticate again on its connection (0: as long as its "
                                         "credential, forever for a password)"),
    "sasl.server.max.receive.size": Setting("int", 524288, doc="the largest request read before a SASL client "
                                            "has authenticated (SaslAuthenticate); a larger one closes the "
                                            "connection"),
    # Changed while running only per listener (PER_LISTENER_ONLY), as in Kafka; see listeners.py.
    "ssl.keystore.type": Setting("string", "PEM", implemented=("PEM",), ignore_case=True,
                                 unimplemented="only PEM keystores are read here (ssl.keystore.type=PEM)",
                                 dynamic=True),
    "ssl.keystore.location": Setting("string", None, dynamic=True),
    "ssl.keystore.certificate.chain": Setting("password", None, dynamic=True),
    "ssl.keystore.key": Setting("password", None, dynamic=True),
    "ssl.key.password": Setting("password", None, dynamic=True),
    "ssl.truststore.type": Setting("string", "PEM", implemented=("PEM",), ignore_case=True,
                                   unimplemented="only PEM truststores are read here (ssl.truststore.type=PEM)",
                                   dynamic=True),
    "ssl.truststore.location": Setting("string", None, dynamic=True),
    "ssl.truststore.certificates": Setting("password", None, dynamic=True),
    "ssl.client.auth": Setting("string", "none", one_of=("required", "requested", "none"), dynamic=True),
    # Authorization (state/acls.py): Kafka's StandardAuthorizer, or none (every request allowed, and the ACL
    # requests answered SECURITY_DISABLED).
    "authorizer.class.name": Setting("string", "", implemented=("", STANDARD_AUTHORIZER),
                                     unimplemented=f"the authorizer implemented here is {STANDARD_AUTHORIZER}",
                                     doc=f"{STANDARD_AUTHORIZER} to enforce ACLs (empty: none)"),
    "super.users": Setting("string", "", doc="principals allowed everything, separated by ';' (User:admin)"),
    "allow.everyone.if.no.acl.found": Setting("boolean", False, doc="whether a resource no ACL names is open to "
                                              "everyone"),
}
# Read by Kafka's StandardAuthorizer rather than its broker config (so not among KafkaConfig's keys).
AUTHORIZER_SETTINGS = ("super.users", "allow.everyone.if.no.acl.found")
SENSITIVE = {key for key, setting in SETTINGS.items() if setting.type == "password"}
LISTENER_PREFIX = re.compile(r"listener\.name\.([^.]+)\.(.+)")
# A listener's key store and trust store: Kafka changes them while running only for one listener
# (listener.name.<listener>.<key>), and refuses the keys themselves (its SslConfigs.RECONFIGURABLE_CONFIGS).
PER_LISTENER_ONLY = ("ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
                     "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
                     "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates")
# The per-listener keys Kafka takes for every broker at once; a listener's others are set per broker.
CLUSTER_LEVEL_LISTENER_KEYS = ("max.connections", "max.connection.creation.rate", "num.network.threads")

# Kafka's other broker keys (kafka_broker_configs.py), checked as Kafka checks them; they do nothing here.
KAFKA_ONLY = {name: Setting(k.type.lower(), k.default, at_least=k.at_least, at_most=k.at_most, also=k.also,
                            one_of=k.one_of, ignore_case=k.ignore_case, non_empty=k.non_empty,
                            dynamic=k.mode != READ_ONLY)
              for name, k in KAFKA_BROKER_CONFIGS.items() if name not in SETTINGS}


def setting_of(key):
    """The Setting of a broker key: this broker's, else Kafka's (KAFKA_ONLY), else None."""
    return SETTINGS.get(key) or KAFKA_ONLY.get(key)


# Keys Kafka keeps internal (not described unless given), that this broker has as settings.
KAFKA_INTERNAL = frozenset({"group.consumer.regex.refresh.interval.ms"})
# This broker's own keys, which Kafka does not have.
OWN_SETTINGS = frozenset(k for k in SETTINGS if k not in KAFKA_BROKER_CONFIGS and k not in KAFKA_INTERNAL
                         and k not in AUTHORIZER_SETTINGS)


def default_text(key):
    """A broker key's default as DescribeConfigs shows it (this broker's where it has the setting), or None. The
    authorizer's keys have none: they are not a broker's."""
    setting = setting_of(key) if key not in AUTHORIZER_SETTINGS else None
    value = None if setting is None else setting.default
    return None if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def live_change_refusal(key, cluster_wide):
    """Why key cannot be changed while the broker runs, for every broker (cluster_wide) or this one, or None.
    As in Kafka: its read-only keys cannot, a listener's key store and trust store only with the listener's
    prefix, its per-broker keys (and a listener's own, but for its connection limits) only for a broker named,
    and a key it does not know is kept. Of the keys Kafka changes live, those this broker reads only at start are
    refused."""
    prefixed = LISTENER_PREFIX.fullmatch(key)
    if prefixed:
        if cluster_wide and prefixed.group(2) not in CLUSTER_LEVEL_LISTENER_KEYS:
            return Problem(key, f"{key} is one listener's, changed per broker: name the broker, not the default of "
                           "every broker")
        return None
    kafka = KAFKA_BROKER_CONFIGS.get(key)
    setting = SETTINGS.get(key)
    if kafka is None:
        if setting is None or setting.dynamic or key in AUTHORIZER_SETTINGS:
            return None
        return Problem(key, f"{key} cannot be changed while the broker runs", kafka=False)
    if kafka.mode == READ_ONLY:
        return Problem(key, f"{key} cannot be changed while the broker runs")
    if key in PER_LISTENER_ONLY:
        return Problem(key, f"{key} is changed while the broker runs only for one listener: set "
                       f"listener.name.<listener>.{key}")
    if cluster_wide and kafka.mode == PER_BROKER:
        return Problem(key, f"{key} is changed per broker: name the broker, not the default of every broker")
    if setting is not None and not (setting.dynamic or setting.topic_key):
        return Problem(key, f"{key} is read only at start here (Kafka changes it while running)", kafka=False)
    return None


def is_read_only(key):
    """Whether DescribeConfigs calls one of Kafka's broker keys read-only: as live_change_refusal refuses it for
    this broker, but for a listener's stores, which Kafka shows changeable though it takes them only with a
    listener's prefix."""
    return key not in PER_LISTENER_ONLY and live_change_refusal(key, cluster_wide=False) is not None

def shown(text):
    """A value as a message shows it: as given, quoted when it is empty or has spaces at an end."""
    text = str(text)
    return repr(text) if not text or text != text.strip() else text


def parse_value(key, text, where):
    """A broker setting's value from text, checked as at start; raises ConfigError naming where and the key. A
    listener's own (listener.name.<listener>.<key>) is checked as its key, as Kafka checks it; a key neither this
    broker nor Kafka knows is text."""
    prefixed = LISTENER_PREFIX.fullmatch(key)
    setting = setting_of(key) or (prefixed and setting_of(prefixed.group(2))) or Setting("string")
    try:
        return setting.parse(text)
    except Invalid as e:
        raise ConfigError(f"{where}: {key}={shown(text)}: {e}") from None


def read_properties(text, where, lines=None):
    """{key: value} from Java .properties text: comments, key=value, key: value or key value, line
    continuations. lines, if given, gets each key's line number. Every line that is not a setting is reported."""
    out = {}
    wrong = []
    rows = iter(enumerate(text.splitlines(), 1))
    for number, line in rows:
        line = line.strip()
        while line.endswith("\\"):
            line = line[:-1] + next(rows, (0, ""))[1].strip()
        if not line or line[0] in "#!":
            continue
        found = re.match(r"([^=:\s]+)\s*[=:]?\s*", line)
        if found is None or found.end() == len(found.group(1)) == len(line) or line[0] in "=:":
            wrong.append(f"{where}, line {number}: {line!r} is not key=value")
            continue
        key = found.group(1)
        out[key] = line[found.end():].strip()
        if lines is not None:
            lines[key] = number
    if wrong:
        raise ConfigError(wrong)
    return out


class BrokerConfig:
    """Every setting, parsed and checked; ``values`` keeps them by Kafka key, including keys this broker does not
    use.

    where names the source of the values (a file, "Broker()"); origins, if given, names each key's own source:
    "--override", or "server.properties, line 3"."""

    def __init__(self, values=None, where="configuration", origins=None):
        values = {k: str(v) for k, v in dict(values or {}).items() if v is not None}
        self.where = where
        self._given_text = values
        self._origins = dict(origins or {})
        self.values = {}
        problems = []
        bad = set()

        def refuse(key, why, kafka=True):
            problems.append(Problem(key, f"{self._at(key)}: {why}", kafka))
            bad.add(key)

        unknown = sorted(k for k in values if k not in SETTINGS)
        for key, setting in SETTINGS.items():
            raw = values.get(key)
            self.values[key] = setting.default
            if raw is not None:
                try:
                    self.values[key] = setting.parse(raw)
                except Invalid as e:
                    refuse(key, e, e.kafka)
        unused = []
        for key in unknown:
            refusal = sasl_config_problem(key, values[key])  # OAUTHBEARER's and re-authentication's keys
            if refusal is not None:
                refuse(key, refusal, refusal.kafka)
                continue
            prefixed = LISTENER_PREFIX.fullmatch(key)
            if prefixed and prefixed.group(2) in SETTINGS and prefixed.group(2).startswith(("ssl.", "sasl.")):
                # a setting for one listener: checked as the setting
                try:
                    SETTINGS[prefixed.group(2)].parse(values[key])
                except Invalid as e:
                    refuse(key, e, e.kafka)
            elif not (key.startswith("listener.name.") or key.endswith("sasl.jaas.config")):
                unused.append(key)
                if key in KAFKA_ONLY:  # refused as Kafka refuses it, though it does nothing here
                    try:
                        KAFKA_ONLY[key].parse(values[key])
                    except Invalid as e:
                        refuse(key, e, e.kafka)
        if unused:
            guesses = {k: difflib.get_close_matches(k, SETTINGS, n=1, cutoff=0.9) for k in unused}
            log.log(logging.WARNING if any(guesses.values()) else logging.INFO, "%s: not used by this broker: %s",
                    where, ", ".join(k + (f" (did you mean {guesses[k][0]}?)" if guesses[k] else "") for k in unused))
        if self.values["kafkaproto.nodes"] > 1:
            for key in INTERNAL_PARTITIONS:
                if key not in values:
                    self.values[key] = KAFKA_INTERNAL_PARTITIONS
        self.extra = {k: values[k] for k in unknown}
        self.given = set(values)  # keys set in the file or by overrides (STATIC_BROKER_CONFIG)
        self.dynamic = {}  # dynamic settings changed while running (set_dynamic), over values
        get = self.values.__getitem__
        self.node_id = get("node.id")

        protocols = {} if "listener.security.protocol.map" in bad else parse_protocol_map(
            get("listener.security.protocol.map"))
        self.listeners = self._listeners("listeners", protocols, bad, refuse) or []
        self.advertised = self._listeners("advertised.listeners", protocols, bad, refuse)
        if self.advertised and self.listeners:
            names = {listener.name for listener in self.listeners}
            strangers = [a.name for a in self.advertised if a.name not in names]
            if strangers:
                refuse("advertised.listeners", f"names listener {strangers[0]}, which listeners does not have")
        self.log_dir = split_list(get("log.dirs") or get("log.dir") or "kafkaproto-data")[0]
        self.cluster_id = None
        self._check_together(values, bad, refuse)
        if problems:
            order = {key: i for i, key in enumerate(values)}  # as given: the file's lines, then the overrides
            raise ConfigError(sorted(problems, key=lambda p: order.get(p.key, len(order))))

    def _at(self, key):
        """How a message names a given setting: where it came from, the key and its value."""
        if key not in self._given_text:
            return self._said(key)
        setting = f"{key}={shown(self._given_text[key])}"
        origin = self._origins.get(key, self.where)
        return f"--override {setting}" if origin == "--override" else f"{origin}: {setting}"

    def _said(self, key):
        """A setting and its value, with where the value came from (the default if not given)."""
        if key not in self._given_text:
            return f"{key}={self.values[key]} (the default)"
        return f"{key}={shown(self._given_text[key])} ({self._origins.get(key, self.where)})"

    def _listeners(self, key, protocols, bad, refuse):
        text = self.values[key]
        if key in bad or text is None:
            return None
        out = []
        for name, host, port in parse_endpoints(text, distinct_ports=key == "listeners"):
            protocol = protocols.get(name, name)
            if protocol not in PROTOCOLS:
                refuse(key, f"listener {name} has no security protocol: name it in listener.security.protocol.map "
                            f"({name}:PLAINTEXT, say), or call it one of {', '.join(PROTOCOLS)}")
                return None
            out.append(Listener(name, host or "0.0.0.0", port, protocol))
        return out

    def _check_together(self, values, bad, refuse):
        """The rules Kafka checks between settings, each reported against a setting that was given (the first
        named if none was)."""
        get = self.values.__getitem__
        opposite = {"at least": "at most", "at most": "at least", "less than": "more than", "more than": "less than"}

        def compare(a, relation, b):
            if a in bad or b in bad:
                return True
            ok = {"at least": get(a) >= get(b), "at most": get(a) <= get(b), "less than": get(a) < get(b),
                  "more than": get(a) > get(b)}[relation]
            if not ok:
                if a in values or b not in values:
                    refuse(a, f"must be {relation} {self._said(b)}")
                else:
                    refuse(b, f"must be {opposite[relation]} {self._said(a)}")
            return ok

        retention_key = next((k for k in ("log.retention.ms", "log.retention.minutes") if get(k) is not None),
                             "log.retention.hours")
        retention = self.retention_ms()
        if retention_key not in bad and not (retention < 0 or retention >= 1):
            refuse(retention_key, "the retention time must be unlimited (negative) or at least 1 ms")
        for what in ("session.timeout", "heartbeat.interval", "assignment.interval"):
            key, low, high = (f"group.consumer.{what}.ms", f"group.consumer.min.{what}.ms",
                              f"group.consumer.max.{what}.ms")
            if compare(high, "at least", low) and compare(key, "at least", low):
                compare(key, "at most", high)
        compare("group.consumer.heartbeat.interval.ms", "less than", "group.consumer.session.timeout.ms")
        for kind, whats in (("share", ("session.timeout", "heartbeat.interval", "assignment.interval",
                                       "delivery.count.limit", "record.lock.duration", "partition.max.record.locks")),
                            ("streams", ("session.timeout", "heartbeat.interval", "assignment.interval"))):
            for what in whats:
                key, low, high = (f"group.{kind}.{what}", f"group.{kind}.min.{what}", f"group.{kind}.max.{what}")
                if key.endswith(("timeout", "interval", "duration")):
                    key, low, high = key + ".ms", low + ".ms", high + ".ms"
                if compare(high, "at least", low) and compare(key, "at least", low):
                    compare(key, "at most", high)
            compare(f"group.{kind}.heartbeat.interval.ms", "less than", f"group.{kind}.session.timeout.ms")
        compare("group.share.max.share.sessions", "at least", "group.share.max.size")
        compare("group.streams.num.standby.replicas", "at most", "group.streams.max.standby.replicas")
        if "max.connections.per.ip" not in bad and get("max.connections.per.ip") == 0 and \
                "max.connections.per.ip.overrides" not in bad and not get("max.connections.per.ip.overrides").strip():
            refuse("max.connections.per.ip", "may be 0 only when max.connections.per.ip.overrides lets some "
                   "addresses in")
        idle = get("connections.max.idle.ms")
        if "connections.max.idle.ms" in bad or idle >= 0:  # negative: idle connections are never closed
            # so that the answer to a failed authentication is not cut off
            compare("connections.max.idle.ms", "more than", "connection.failed.authentication.delay.ms")

    def __getitem__(self, key):
        dynamic = self.dynamic
        return dynamic[key] if dynamic and key in dynamic else self.values[key]

    @property
    def segment_delete_delay_ms(self):
        return self["log.segment.delete.delay.ms"]

    def set_dynamic(self, key, text):
        """The value a setting has while the broker runs, from the metadata log's dynamic configs (text, or None:
        back to the file's or the default); raises ConfigError for one not valid. Keys this broker does not act on
        are not kept here (the cluster keeps them)."""
        if key not in SETTINGS:
            return
        if text is None:
            self.dynamic.pop(key, None)
        else:
            self.dynamic[key] = parse_value(key, text, "AlterConfigs")

    @classmethod
    def load(cls, path=None, overrides=None, overrides_from="--override"):
        """From a server.properties file (optional), then key=value overrides on top. A wrong setting is named
        with its source: the file and line, or overrides_from."""
        values, origins = {}, {}
        if path is not None:
            try:
                with open(path) as f:
                    text = f.read()
            except OSError as e:
                raise ConfigError(f"cannot read {path}: {e.strerror}") from None
            lines = {}
            values = read_properties(text, path, lines)
            origins = {key: f"{path}, line {number}" for key, number in lines.items()}
        for key, value in (overrides or {}).items():
            values[key] = value
            origins[key] = overrides_from
        return cls(values, "defaults" if path is None else str(path), origins)

    def retention_ms(self):
        for key, scale in (("log.retention.ms", 1), ("log.retention.minutes", 60000), ("log.retention.hours", HOURS)):
            if self.values[key] is not None:
                return max(self.values[key] * scale, -1)  # any negative time: unlimited, as Kafka reads it
        return 168 * HOURS

    def describe(self):
        """{broker config: value as text or None} for DescribeConfigs (secrets as None, as Kafka shows them)."""
        out = {}
        for key, value in {**self.values, **self.extra}.items():
            if key in SENSITIVE or "password" in key or key.endswith("jaas.config"):
                value = None
            out[key] = None if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        return out
