"""Client quotas: the rates each user and client id may use, kept as Kafka keeps them, and the throttle a
client gets when it goes over.

An entity is a user, a client id, both, or an IP address; None as a name is the default of its type. A request is
held to the quota of the most specific entity that has one, in Kafka's order: user and client id, user and default
client id, user, default user and client id, default user and default client id, default user, client id, default
client id. Rates are measured as Kafka's ClientQuotaManager measures them: over the last ``WINDOWS`` one-second
windows; a client over its quota is told to wait (throttle_time_ms) long enough to bring its rate back to it, and
the broker reads nothing more from the connection meanwhile.
"""

import ipaddress

USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCE, FETCH, REQUEST = "producer_byte_rate", "consumer_byte_rate", "request_percentage"
MUTATION, CONNECTIONS = "controller_mutation_rate", "connection_creation_rate"
# The keys each kind of entity takes, and whether their values must be whole numbers.
CLIENT_KEYS = {PRODUCE: True, FETCH: True, REQUEST: False, MUTATION: False}
IP_KEYS = {CONNECTIONS: True}
WINDOWS, WINDOW_MS = 11, 1000  # quota.window.num, quota.window.size.seconds (in ms)


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


class Rate:
    """A rate over the last WINDOWS windows of WINDOW_MS, as Kafka's SampledStat with its Rate measures it."""

    __slots__ = ("samples",)

    def __init__(self):
        self.samples = {}  # window start (ms) -> amount

    def record(self, now_ms, amount):
        start = int(now_ms // WINDOW_MS) * WINDOW_MS
        self.samples[start] = self.samples.get(start, 0) + amount
        oldest = start - (WINDOWS - 1) * WINDOW_MS
        for window in [w for w in self.samples if w < oldest]:
            del self.samples[window]

    def measure(self, now_ms):
        """(amount per second, the window it is measured over in ms): at least WINDOWS - 1 whole windows, so
        that a client's first burst is not read as a rate over a moment."""
        elapsed = max(now_ms - min(self.samples, default=now_ms), (WINDOWS - 1) * WINDOW_MS)
        return sum(self.samples.values()) * 1000 / elapsed, elapsed


class Quotas:
    """The quotas set, {entity key: {quota key: value}}, and what each client has used."""

    def __init__(self):
        self.by_entity = {}
        self._rates = {}  # (quota key, the client's user and client id where the quota names them) -> Rate

    def apply(self, entity, key, value, remove):
        values = self.by_entity.setdefault(entity_key(entity), {})
        if remove:
            values.pop(key, None)
            if not values:
                del self.by_entity[entity_key(entity)]
        else:
            values[key] = value

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

    def throttle_ms(self, key, user, client_id, amount, now_ms):
        """Record amount used by the client; how long it must wait, 0 when within its quota. A quota is shared
        by the clients its entity names (all of a user's, say); a default one is each user's or client id's
        own, as in Kafka. The wait brings the rate back to the quota: (observed - quota) / quota * window."""
        found = self.quota(key, user, client_id)
        if found is None:
            return 0
        entity, limit = found
        actual = {USER: user, CLIENT_ID: client_id}
        shared = (key, tuple(sorted((kind, actual[kind]) for kind in entity)))
        rate = self._rates.get(shared)
        if rate is None:
            rate = self._rates[shared] = Rate()
        rate.record(now_ms, amount)
        observed, window = rate.measure(now_ms)
        if observed <= limit:
            return 0
        return int((observed - limit) / limit * window)
