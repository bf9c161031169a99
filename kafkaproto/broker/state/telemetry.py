"""Client telemetry (KIP-714), as Kafka 4.3's ClientMetricsManager keeps it: client instances, the subscription
each gets, the pushes each may make, and the metrics pushed.

A client asks for its subscription (GetTelemetrySubscriptions) and pushes its metrics (PushTelemetry) at the
interval it was given. The broker knows it as a client instance: its id (made up here on its first request), its
attributes (client id, software name and version, address and port, which the subscriptions' ``match``
patterns select on), and what every subscription that matches it asks for: the union of their metric prefixes
(``*`` alone when one of them asks for everything), the shortest of their intervals (and of the default, five
minutes), and the subscription id, Kafka's CRC32C of the prefixes in its hash set's order and the interval,
XORed with the instance id's hash. When the subscriptions change, an instance is worked out again at its next
request, and its clock starts over.

Each instance may ask or push once per interval (THROTTLING_QUOTA_EXCEEDED sooner): a push right after it asked
is allowed, and so is a terminating one; asking again right after a push refused for an unknown subscription id
or compression is allowed too, so that the client can learn its new subscription. A push is refused, in this
order, after a terminating one (INVALID_REQUEST), too soon, with a subscription id that is not the instance's
(UNKNOWN_SUBSCRIPTION_ID), with a compression Kafka does not know (UNSUPPORTED_COMPRESSION_TYPE), over
``telemetry.max.bytes`` (TELEMETRY_TOO_LARGE); its metrics are then decompressed, and a payload that cannot be,
or is larger than ``telemetry.max.bytes`` once decompressed, is INVALID_RECORD.

Kafka forgets an instance when its connection closes, or when it has not been heard from for three intervals (at
least a minute), and keeps 16384 at most, the least recently heard from going first.

Kafka hands the metrics to its telemetry receiver plugins. Where ``kafkaproto.client.telemetry.enable`` is on,
this broker keeps them instead (``pushed``): the last pushes of each client instance, decompressed, for the most
recent clients, within a bound in bytes.
"""

import logging
from collections import OrderedDict, deque
from typing import NamedTuple


from ... import errors
from ...records import Compression, RecordsError, decompress
from ...records.checksum import crc32c
from ...uuid import Uuid
from ..client_metrics import ALL_METRICS, DEFAULT_INTERVAL_MS, subscription

log = logging.getLogger("kafkaproto.broker")

# The compression types a client is offered, in Kafka's order of preference: zstd, lz4, gzip, snappy.
ACCEPTED_COMPRESSION_TYPES = tuple(map(int, (Compression.ZSTD, Compression.LZ4, Compression.GZIP,
                                             Compression.SNAPPY)))
KNOWN_COMPRESSION_TYPES = frozenset(Compression)  # none to zstd: a push may use any of them
MAX_INSTANCES = 16384
EXPIRY_MS = 60000
PUSHES_KEPT = 16  # per client instance
CLIENTS_KEPT = 1024
BYTES_KEPT = 64 << 20  # decompressed, every client's together
CONTENT_TYPE = "OTLP"  # what a push carries: an OpenTelemetry MetricsData message (protobuf)
INT32 = 1 << 32


def _int32(value):
    value &= INT32 - 1
    return value - INT32 if value >= 1 << 31 else value


def java_string_hash(text):
    """Java's String.hashCode, over UTF-16 code units."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & (INT32 - 1)
    return h


def java_hash_order(items, grows_at_threshold=False, presized=False):
    """items (distinct) in the order a java.util.HashSet iterates them: by bucket of its final table, then in the
    order added. A HashSet added to one by one doubles its 16 buckets once it holds more than three quarters of
    them (a ConcurrentHashMap, grows_at_threshold, once it holds three quarters); one made from a collection
    (presized) starts with enough for it."""
    buckets = 16
    if presized:
        while buckets < int(len(items) / 0.75) + 1:
            buckets *= 2
    while len(items) > buckets * 3 // 4 or (grows_at_threshold and len(items) == buckets * 3 // 4):
        buckets *= 2

    def bucket(item):
        h = java_string_hash(item)
        return (h ^ (h >> 16)) & (buckets - 1)

    return sorted(items, key=bucket)  # sorted() is stable: the order added, within a bucket


def uuid_hash(uuid):
    """Kafka's Uuid.hashCode."""
    both = uuid.most_significant_bits ^ uuid.least_significant_bits
    return _int32((both >> 32) ^ both)


def subscription_id(metrics, interval_ms, client_instance_id):
    """Kafka's subscription id: CRC32C of the metrics' Java text ("[a, b]") and the interval, XOR the instance's
    hash."""
    text = "[" + ", ".join(metrics) + "]" + str(interval_ms)
    return _int32(crc32c(text.encode("utf-8")) ^ uuid_hash(client_instance_id))


class Instance:
    """A client instance: who it is, what it is subscribed to, and when it last asked and pushed."""

    __slots__ = ("client_instance_id", "attributes", "version", "metrics", "interval_ms", "subscription_id",
                 "last_get_ms", "last_push_ms", "terminating", "last_error", "expires_ms", "connection")

    def __init__(self, client_instance_id, attributes, version, metrics, interval_ms, connection):
        self.client_instance_id = client_instance_id
        self.attributes = attributes
        self.version = version  # of the subscriptions it was worked out from
        self.metrics = metrics
        self.interval_ms = interval_ms
        self.subscription_id = subscription_id(metrics, interval_ms, client_instance_id)
        self.last_get_ms = self.last_push_ms = 0  # Kafka's: epoch milliseconds, never
        self.terminating = False
        self.last_error = errors.NONE
        self.expires_ms = None
        self.connection = connection  # the connection it was made on: it goes with it

    def may_get(self, now_ms):
        """Whether it may ask for its subscription now (once per interval since it last asked or pushed); notes
        the time if so."""
        if now_ms - max(self.last_get_ms, self.last_push_ms) >= self.interval_ms:
            self.last_get_ms = now_ms
            return True
        return False

    def may_push(self, now_ms):
        """Whether it may push now (it asked since its last push, or an interval has passed); notes the time if
        so."""
        if self.last_get_ms > self.last_push_ms or now_ms - self.last_push_ms >= self.interval_ms:
            self.last_push_ms = now_ms
            return True
        return False


class Pushed(NamedTuple):
    """Metrics a client pushed, as this broker keeps them."""

    client_instance_id: Uuid
    received_ms: int  # epoch milliseconds
    client_id: str
    subscription_id: int
    terminating: bool
    compression_type: int  # as pushed; data is decompressed
    content_type: str  # "OTLP"
    data: bytes  # an OpenTelemetry MetricsData message


class ClientTelemetry:
    """The client instances and the subscriptions they get (cluster.client_metrics), and the metrics kept."""

    def __init__(self, cluster, max_bytes, keeping):
        self.cluster = cluster
        self.max_bytes = max_bytes  # () -> telemetry.max.bytes
        self.keeping = keeping  # () -> whether pushed metrics are kept
        self.instances = OrderedDict()  # Uuid -> Instance, the least recently heard from first
        self.by_connection = {}  # connection -> the id of the instance made on it
        self._subscriptions = (None, [])  # (cluster.client_metrics_version, [Subscription] in Kafka's order)
        self._pushed = OrderedDict()  # Uuid -> deque of Pushed, the least recently pushing client first
        self._pushed_bytes = 0

    def subscriptions(self):
        version, found = self._subscriptions
        if version != self.cluster.client_metrics_version:
            configs = self.cluster.client_metrics
            found = [s for s in (subscription(name, configs[name])
                                 for name in java_hash_order(list(configs), grows_at_threshold=True))
                     if s is not None]
            self._subscriptions = (self.cluster.client_metrics_version, found)
        return found

    def _make(self, client_instance_id, attributes, connection):
        interval, metrics, everything = DEFAULT_INTERVAL_MS, [], False
        for sub in self.subscriptions():
            if sub.matches(attributes):
                everything = everything or ALL_METRICS in sub.metrics
                metrics += [m for m in java_hash_order(list(sub.metrics), presized=True) if m not in metrics]
                interval = min(interval, sub.interval_ms)
        metrics = [ALL_METRICS] if everything else java_hash_order(metrics)
        return Instance(client_instance_id, attributes, self.cluster.client_metrics_version, metrics, interval,
                        connection)

    def instance(self, client_instance_id, client, connection, now_ms):
        """The instance of that id, made (or worked out again, after the subscriptions changed) as needed; heard
        from now. client: its attributes but its id."""
        found = self.instances.get(client_instance_id)
        if found is None or found.version != self.cluster.client_metrics_version:
            attributes = found.attributes if found is not None else {
                **client, "client_instance_id": str(client_instance_id)}
            found = self.instances[client_instance_id] = self._make(client_instance_id, attributes, connection)
            if connection is not None:
                self.by_connection[connection] = client_instance_id
        self.instances.move_to_end(client_instance_id)
        while len(self.instances) > MAX_INSTANCES:
            self._forget(next(iter(self.instances)))
        found.expires_ms = now_ms + max(EXPIRY_MS, 3 * found.interval_ms)
        return found

    def _forget(self, client_instance_id):
        instance = self.instances.pop(client_instance_id, None)
        if instance is not None and self.by_connection.get(instance.connection) == client_instance_id:
            del self.by_connection[instance.connection]

    def get_subscriptions(self, client_instance_id, client, connection, now_ms):
        """(error, Instance or None) for GetTelemetrySubscriptions: the zero id asks for a new one."""
        if client_instance_id == Uuid.ZERO:
            client_instance_id = Uuid.random()
            while client_instance_id in self.instances:
                client_instance_id = Uuid.random()
        instance = self.instance(client_instance_id, client, connection, now_ms)
        if not instance.may_get(now_ms) and instance.last_error not in (errors.UNKNOWN_SUBSCRIPTION_ID,
                                                                         errors.UNSUPPORTED_COMPRESSION_TYPE):
            return errors.THROTTLING_QUOTA_EXCEEDED, None
        instance.last_error = errors.NONE
        return errors.NONE, instance

    def push(self, request, client, connection, now_ms):
        """The error for a PushTelemetry request (NONE when its metrics were taken)."""
        if request.client_instance_id in Uuid.RESERVED:
            return errors.INVALID_REQUEST
        instance = self.instance(request.client_instance_id, client, connection, now_ms)
        error = self._refusal(instance, request, now_ms)
        instance.terminating = request.terminating  # whether refused or not, as Kafka does
        if error is errors.NONE and request.metrics:
            try:
                data = decompress(request.compression_type, request.metrics, self.max_bytes())
            except RecordsError as e:
                log.info("client instance %s pushed metrics that cannot be read: %s", instance.client_instance_id,
                         e)
                error = errors.INVALID_RECORD
            else:
                if self.keeping():
                    self._keep(Pushed(instance.client_instance_id, now_ms, instance.attributes.get("client_id"),
                                      request.subscription_id, request.terminating, request.compression_type,
                                      CONTENT_TYPE, data))
        instance.last_error = error
        return error

    def _refusal(self, instance, request, now_ms):
        if instance.terminating:
            return errors.INVALID_REQUEST
        if not instance.may_push(now_ms) and not request.terminating:
            return errors.THROTTLING_QUOTA_EXCEEDED
        if request.subscription_id != instance.subscription_id:
            return errors.UNKNOWN_SUBSCRIPTION_ID
        if request.compression_type not in KNOWN_COMPRESSION_TYPES:
            return errors.UNSUPPORTED_COMPRESSION_TYPE
        if request.metrics is not None and len(request.metrics) > self.max_bytes():
            return errors.TELEMETRY_TOO_LARGE
        return errors.NONE

    def _keep(self, pushed):
        kept = self._pushed.pop(pushed.client_instance_id, None) or deque(maxlen=PUSHES_KEPT)
        if len(kept) == PUSHES_KEPT:
            self._pushed_bytes -= len(kept[0].data)
        kept.append(pushed)
        self._pushed[pushed.client_instance_id] = kept
        self._pushed_bytes += len(pushed.data)
        while len(self._pushed) > CLIENTS_KEPT or self._pushed_bytes > BYTES_KEPT:
            oldest_id, oldest = next(iter(self._pushed.items()))
            self._pushed_bytes -= len(oldest.popleft().data)
            if not oldest:
                del self._pushed[oldest_id]

    def pushed(self, client_instance_id=None):
        """The metrics kept, oldest first: of one client instance, or of every one."""
        if client_instance_id is not None:
            return list(self._pushed.get(client_instance_id, ()))
        return sorted((p for kept in self._pushed.values() for p in kept), key=lambda p: p.received_ms)

    def expire(self, now_ms):
        """Forget the instances not heard from in time; how many."""
        gone = [key for key, instance in self.instances.items() if instance.expires_ms <= now_ms]
        for key in gone:
            self._forget(key)
        return len(gone)

    def connection_closed(self, connection):
        client_instance_id = self.by_connection.pop(connection, None)
        if client_instance_id is not None:
            self.instances.pop(client_instance_id, None)
