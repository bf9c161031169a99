"""Client quotas: the rates each user, client id and IP address may use, kept as Kafka keeps them, and the
throttle a client gets when it goes over.

An entity is a user, a client id, both, or an IP address; None as a name is the default of its type. A request is
held to the quota of the most specific entity that has one, in Kafka's order: user and client id, user and default
client id, user, default user and client id, default user and default client id, default user, client id, default
client id. A connection is held to its address's connection_creation_rate, else the default address's.

What each key holds, as Kafka enforces it:
- producer_byte_rate, consumer_byte_rate: bytes per second, measured as Kafka's Rate measures them (``Rate``);
  over it, the client waits long enough to bring its rate back to the quota (throttle_time_ms), and the broker
  reads nothing more from its connection meanwhile.
- request_percentage: the share of one request handler's time (100 is one whole handler) the client's requests
  may take, measured the same way; the wait is at most one window (Kafka's ClientRequestQuotaManager).
- controller_mutation_rate: partitions created or deleted per second (KIP-599), a token bucket holding
  ``WINDOWS`` seconds' worth (``TokenBucket``, ``MutationQuota``).
- connection_creation_rate: new connections per second from an address (KIP-612); one over it is held unserved
  for the wait (at most one window), then closed, and does not count.
"""

import ipaddress
import math

USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCE, FETCH, REQUEST = "producer_byte_rate", "consumer_byte_rate", "request_percentage"
MUTATION, CONNECTIONS = "controller_mutation_rate", "connection_creation_rate"
# The keys each kind of entity takes, and whether their values must be whole numbers.
CLIENT_KEYS = {PRODUCE: True, FETCH: True, REQUEST: False, MUTATION: False}
IP_KEYS = {CONNECTIONS: True}
# quota.window.num and quota.window.size.seconds (in ms); controller.quota.window.num and .size.seconds, which size
# the mutation bucket, have the same defaults.
WINDOWS, WINDOW_MS = 11, 1000
# Kafka waits at most one window for request_percentage and for the connection rates (the byte rates are unbounded).
MOST_WAIT_MS = WINDOW_MS
# A connection_creation_rate of this is Kafka's "no quota".
UNLIMITED_CONNECTIONS = 2**31 - 1


def entity_key(pairs):
    """The key of an entity given as [(type, name or None)]: a sorted tuple."""
    return tuple(sorted(dict(pairs).items(), key=lambda item: item[0]))


def entity_error(pairs):
    """Why [(type, name)] is not an entity quotas may be set for, or None (Kafka's texts)."""
    if not pairs:
        return "Invalid empty client quota entity"
    entity = dict(pairs)
    for kind, name in entity.items():
        if kind not in (USER, CLIENT_ID, IP):
            return f"Unhandled client quota entity type: {kind}"
        if kind == USER and name == "":
            return "Empty user not supported"
        if kind == IP and name is not None:
            try:
                ipaddress.ip_address(name)
            except ValueError:
                return f"{name} is not a valid IP or resolvable host."
    if IP in entity and len(entity) > 1:
        return "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
    return None


def value_error(entity, key, value):
    """Why key=value cannot be set on the entity, or None."""
    keys = IP_KEYS if IP in dict(entity) else CLIENT_KEYS
    if key not in keys:
        return f"Invalid configuration key {key}"
    if value <= 0:
        return f"Quota {key} must be greater than 0"
    if keys[key] and value != int(value):
        return f"{key} cannot be a fractional value."
    return None


def java_round(value):
    """Java's Math.round: halves go up."""
    return math.floor(value + 0.5)


class Rate:
    """Amounts per second, as Kafka's Rate over its sampled sum measures them.

    A sample is begun by the first amount recorded once the current one is WINDOW_MS old (samples start where the
    traffic does, not on the clock's seconds); WINDOWS + 1 of them are kept, reused in turn, and one with nothing
    recorded for WINDOWS windows starts afresh. The rate is their sum over the time since the oldest began, but
    over no less than WINDOWS - 1 windows, so that a client's first burst is not read as a rate over a moment."""

    __slots__ = ("samples", "current")

    def __init__(self):
        self.samples = []  # [began ms, last recorded ms, amount]
        self.current = 0

    def record(self, now_ms, amount):
        samples = self.samples
        if not samples:
            samples.append([now_ms, now_ms, 0.0])
        sample = samples[self.current]
        if now_ms - sample[0] >= WINDOW_MS:
            self.current = (self.current + 1) % (WINDOWS + 1)
            if self.current >= len(samples):
                sample = [now_ms, now_ms, 0.0]
                samples.append(sample)
            else:
                sample = samples[self.current]
                sample[:] = [now_ms, now_ms, 0.0]
        sample[2] += amount
        sample[1] = now_ms

    def measure(self, now_ms):
        """(amount per second, the window in ms it is measured over)."""
        samples = self.samples
        for sample in samples:
            if now_ms - sample[1] >= WINDOWS * WINDOW_MS:
                sample[:] = [now_ms, now_ms, 0.0]
        if not samples:
            samples.append([now_ms, now_ms, 0.0])
        elapsed = now_ms - min(sample[0] for sample in samples)
        whole = int(elapsed / WINDOW_MS)
        if whole < WINDOWS - 1:
            elapsed += (WINDOWS - 1 - whole) * WINDOW_MS
        window = max(elapsed, 1)
        total = 0.0
        for sample in samples:  # added in turn, as Java does (sum() compensates from Python 3.12)
            total += sample[2]
        return total / (window / 1000), window


def wait_ms(rate, limit, now_ms, most=None):
    """For a Rate just recorded to: 0 within limit (per second), else the wait Kafka gives, which brings the rate
    back to the limit if nothing more comes, (observed - limit) / limit * window, rounded, and at most ``most``."""
    observed, window = rate.measure(now_ms)
    if observed <= limit:
        return 0
    wait = (observed - limit) / limit * window if limit > 0 else math.inf
    if most is not None:
        return most if wait >= most else min(java_round(wait), most)
    return java_round(wait)


class TokenBucket:
    """Kafka's TokenBucket (KIP-599): credit that refills at the quota's rate, up to WINDOWS windows' worth (the
    burst), and may go below zero. As in Kafka it was last filled at time 0, so on a wall clock it starts full."""

    __slots__ = ("tokens", "updated_ms")

    def __init__(self):
        self.tokens = 0.0
        self.updated_ms = 0

    def _refill(self, rate, now_ms):
        burst = WINDOWS * (WINDOW_MS / 1000) * rate
        self.tokens = min(burst, self.tokens + rate * ((now_ms - self.updated_ms) / 1000))
        self.updated_ms = now_ms
        return burst

    def measure(self, rate, now_ms):
        self._refill(rate, now_ms)
        return self.tokens

    def record(self, rate, amount, now_ms):
        burst = self._refill(rate, now_ms)
        self.tokens = min(burst, self.tokens - amount)


class MutationQuota:
    """A request's controller_mutation_rate (Kafka's Strict- and PermissiveControllerMutationQuota): ``record``
    counts the partitions a topic creates or deletes. A strict quota (CreateTopics v6+, CreatePartitions v3+,
    DeleteTopics v5+) refuses a topic while the bucket is below zero, and takes one however large while it is not;
    a permissive one takes every topic. The wait (``throttle_ms``) is the time the bucket took to refill to zero,
    as measured when it was last found below it, less the time since."""

    __slots__ = ("bucket", "rate", "strict", "wait", "waited_from")

    def __init__(self, bucket, rate, strict):
        self.bucket = bucket
        self.rate = rate
        self.strict = strict
        self.wait = 0
        self.waited_from = 0

    def record(self, partitions, now_ms):
        """Whether the partitions may be created or deleted (only a strict quota says no)."""
        if self.strict:
            tokens = self.bucket.measure(self.rate, now_ms)
            if tokens < 0:
                self._under(tokens, now_ms)
                return False
            self.bucket.record(self.rate, partitions, now_ms)
            return True
        self.bucket.record(self.rate, partitions, now_ms)
        tokens = self.bucket.measure(self.rate, now_ms)
        if tokens < 0:
            self._under(tokens, now_ms)
        return True

    def _under(self, tokens, now_ms):
        self.wait = java_round(-tokens / self.rate * 1000)
        self.waited_from = now_ms

    def throttle_ms(self, now_ms):
        if not self.wait:
            return 0
        return max(0, int(self.wait - (now_ms - self.waited_from)))


def _address(text):
    """An address as Java compares them (an IPv4-mapped IPv6 address is the IPv4 one), or None."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    return address.ipv4_mapped or address if address.version == 6 else address


class Quotas:
    """The quotas set, {entity key: {quota key: value}}, and what each client and address has used."""

    def __init__(self):
        self.by_entity = {}
        # (quota key, the client's user and client id where the quota names them, or the address) -> Rate, or the
        # TokenBucket of controller_mutation_rate
        self._used = {}
        self._keys = None  # the quota keys some entity has, worked out again after a change
        self._by_address = None  # {address, or None for the default: connection_creation_rate}, likewise

    def apply(self, entity, key, value, remove):
        values = self.by_entity.setdefault(entity_key(entity), {})
        if remove:
            values.pop(key, None)
            if not values:
                del self.by_entity[entity_key(entity)]
        else:
            values[key] = value
        self._keys = self._by_address = None

    def uses(self, key):
        """Whether some entity has a quota of key."""
        keys = self._keys
        if keys is None:
            keys = self._keys = {k for values in self.by_entity.values() for k in values}
        return key in keys

    def quota(self, key, user, client_id):
        """(the entity whose quota applies, its value), or None."""
        if not self.by_entity:
            return None
        for entity in ({USER: user, CLIENT_ID: client_id}, {USER: user, CLIENT_ID: None}, {USER: user},
                       {USER: None, CLIENT_ID: client_id}, {USER: None, CLIENT_ID: None}, {USER: None},
                       {CLIENT_ID: client_id}, {CLIENT_ID: None}):
            found = self.by_entity.get(entity_key(entity.items()), {}).get(key)
            if found is not None:
                return entity, found
        return None

    def _of(self, kind, key, entity, user, client_id):
        """What the client has used of key. A quota is shared by the clients its entity names (all of a user's,
        say); a default one is each user's or client id's own, as in Kafka."""
        actual = {USER: user, CLIENT_ID: client_id}
        shared = (key, tuple(sorted((name, actual[name]) for name in entity)))
        used = self._used.get(shared)
        if used is None:
            used = self._used[shared] = kind()
        return used

    def throttle_ms(self, key, user, client_id, amount, now_ms):
        """Record amount used by the client (bytes, or request_percentage's percent-seconds of handler time); how
        long it must wait, 0 when within its quota."""
        found = self.quota(key, user, client_id)
        if found is None:
            return 0
        entity, limit = found
        rate = self._of(Rate, key, entity, user, client_id)
        rate.record(now_ms, amount)
        return wait_ms(rate, limit, now_ms, MOST_WAIT_MS if key == REQUEST else None)

    def unrecord(self, key, user, client_id, amount, now_ms):
        """Take back amount recorded (a throttled fetch sends none of the bytes it counted), as Kafka does."""
        found = self.quota(key, user, client_id)
        if found is not None:
            self._of(Rate, key, found[0], user, client_id).record(now_ms, -amount)

    def mutation_quota(self, user, client_id, strict):
        """The client's controller_mutation_rate for one request (a MutationQuota), or None without one."""
        found = self.quota(MUTATION, user, client_id)
        if found is None:
            return None
        entity, limit = found
        return MutationQuota(self._of(TokenBucket, MUTATION, entity, user, client_id), limit, strict)

    def connection_wait_ms(self, ip, now_ms):
        """Count a new connection from ip against its connection_creation_rate: 0 when within it, else how long
        Kafka holds the connection before closing it (such a connection is not counted)."""
        by_address = self._by_address
        if by_address is None:
            by_address = self._by_address = {
                None if entity[0][1] is None else _address(entity[0][1]): values[CONNECTIONS]
                for entity, values in self.by_entity.items()
                if len(entity) == 1 and entity[0][0] == IP and CONNECTIONS in values}
        if not by_address:
            return 0
        address = _address(ip)
        limit = by_address.get(address, by_address.get(None))
        if limit is None or limit == UNLIMITED_CONNECTIONS:
            return 0
        rate = self._used.get((CONNECTIONS, address))
        if rate is None:
            rate = self._used[(CONNECTIONS, address)] = Rate()
        rate.record(now_ms, 1)
        wait = wait_ms(rate, limit, now_ms, MOST_WAIT_MS)
        if wait:
            rate.record(now_ms, -1)
        return wait
