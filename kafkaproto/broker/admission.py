"""Which accepted connections the broker takes, and when: Kafka's ConnectionQuotas, kept apart from the sockets.

A connection counts from accept() until it closes, its TLS handshake included.
At max.connections the listeners accept no more until one closes (``slot``),
as Kafka's acceptor waits: new connections wait in the kernel's backlog. A
connection that would go over max.connections.per.ip (or its address's own
limit in max.connections.per.ip.overrides) is closed at once, with a log line.
Past max.connection.creation.rate (the listener's own count, or the count over
the listeners) a listener waits, at most a second, before it serves the
connection it took and accepts the next, as Kafka's acceptor does. A
connection from an address past its connection_creation_rate quota is kept
unread for its wait and then closed, as Kafka's acceptor does (its client sees
the connection reset), and is not counted. A change of
max.connections.per.ip.overrides holds for the connections that come after it
(the open ones stay); the host names in it are resolved on a thread.

The server asks here when it accepts a connection and tells when one closes;
the counts, limits and waits are decided here. A connection is only ever
closed here (refused, or at the end of its hold), never read or written. Time
is state/clock.py's; the holds' timers and the wait for a slot are the running
event loop's.
"""

import asyncio
import collections
import ipaddress
import logging
import socket
import time

from .config import ConfigError, parse_ip_overrides
from .state.clock import clock_ms
from .state.quotas import MOST_WAIT_MS, Rate, wait_ms

log = logging.getLogger("kafkaproto.broker")
# At most one line per this many seconds about refused connections (a flood of them would flood the log).
REFUSED_LOG_SECONDS = 10.0
# Kafka's inter-broker listener by default (security.inter.broker.protocol=PLAINTEXT names it).
INTER_BROKER_LISTENER = "PLAINTEXT"


def _ip_overrides(config):
    """{address: connections} from max.connections.per.ip.overrides, each host resolved to its addresses once, at
    start, as Kafka resolves them; a host of the file's or the overrides' that does not resolve stops the start
    (ConfigError), one changed while running is left out, with an error logged."""
    try:
        text = config["max.connections.per.ip.overrides"]
    except KeyError:
        return {}
    changed = "max.connections.per.ip.overrides" in getattr(config, "dynamic", {})
    out = {}
    for host, count in parse_ip_overrides(text).items():
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except OSError as e:
            if not changed:
                raise ConfigError(f"max.connections.per.ip.overrides: the host {host!r} cannot be resolved ({e})") \
                    from None
            log.error("max.connections.per.ip.overrides: the host %r cannot be resolved (%s); it has no limit of "
                      "its own", host, e)
            continue
        for info in infos:
            out[info[4][0]] = count
    return out


def _numeric_overrides(text):
    """(the overrides of max.connections.per.ip.overrides given by address, {address: connections}, and whether
    some are given by host name, to be resolved)."""
    out, named = {}, False
    for host, count in parse_ip_overrides(text).items():
        try:
            out[str(ipaddress.ip_address(host))] = count
        except ValueError:
            named = True
    return out, named


class Admission:
    """The connection counts and limits of one server. quotas: the cluster's client quotas (their
    connection_creation_rate by address); spawn(coroutine): runs it as one of the server's tasks, which the server
    waits for when it stops. Raises ConfigError when a host of max.connections.per.ip.overrides cannot be
    resolved."""

    def __init__(self, config, quotas, spawn):
        self.config = config
        self.quotas = quotas
        self._spawn = spawn
        self._overrides_version = 0  # counts the changes of max.connections.per.ip.overrides (names resolve late)
        # Connections from accept() until closed, TLS handshakes included: max.connections and, by address,
        # max.connections.per.ip count these.
        self.open_count = 0
        self._per_ip = collections.Counter()
        self._slot = None  # while max.connections are open: the future the accept loops wait on for a slot
        self._ip_overrides = _ip_overrides(config)  # address -> its own max.connections.per.ip
        self._overrides_text = self._overrides_value()  # the value _ip_overrides was made from
        # Connections accepted, for max.connection.creation.rate: by listener, and over the listeners but the
        # inter-broker one (Kafka's ConnectionQuotas).
        self._creation_rates = {}
        self._creation_rate = Rate()
        self._held = {}  # connections over their address's connection_creation_rate -> the timer closing each
        self._refused = {}  # reason -> [connections refused since the last line about it, when that line was]

    async def slot(self):
        """Return once fewer than max.connections are open. As Kafka's acceptor waits for a slot, new connections
        meanwhile wait in the kernel's backlog (the client's connect() has succeeded; nothing is read), and
        each is taken as one closes."""
        while self.open_count >= self.config["max.connections"]:
            if self._slot is None or self._slot.done():
                self._slot = asyncio.get_running_loop().create_future()
                self._log_refused(f"max.connections={self.config['max.connections']} reached; new connections "
                                  "wait until one closes", "connections wait")
            await self._slot

    def _creation_rates_of(self, listener, listeners_open):
        """The Rates a connection on listener counts in for max.connection.creation.rate, as in Kafka's
        ConnectionQuotas: its listener's (each takes the broker's setting as its own limit), and the broker's,
        which Kafka's inter-broker listener (the one named PLAINTEXT, by Kafka's default) is spared when there are
        several (listeners_open: how many this broker has open)."""
        rates = [self._creation_rates.setdefault(listener.name, Rate())]
        if listener.name != INTER_BROKER_LISTENER or listeners_open == 1:
            rates.append(self._creation_rate)
        return rates

    def creation_wait_ms(self, listener, listeners_open):
        """Count a connection accepted on listener against max.connection.creation.rate: how long to wait before
        serving it (0 within the rate), as Kafka reckons it."""
        now = clock_ms()
        limit = self.config["max.connection.creation.rate"]
        wait = 0
        for rate in self._creation_rates_of(listener, listeners_open):
            rate.record(now, 1)
            wait = max(wait, wait_ms(rate, limit, now, MOST_WAIT_MS))
        if wait:
            self._log_refused(f"max.connection.creation.rate={limit} reached; new connections wait",
                              "connections wait")
        return wait

    def admit(self, conn, ip, listener, listeners_open):
        """Count an accepted connection (True), or close it at once when it would go over max.connections.per.ip
        (or, when several listeners took one each for the last slot, max.connections): Kafka's ConnectionQuotas; a
        TLS handshake counts from accept(), as in Kafka. A connection over its address's connection_creation_rate
        quota is held, then closed (``_hold``). The server calls closed(ip) when a connection admitted closes."""
        quotas = self.quotas
        if quotas.by_entity:
            now = clock_ms()
            wait = quotas.connection_wait_ms(ip, now)
            if wait:
                for rate in self._creation_rates_of(listener, listeners_open):
                    rate.record(now, -1)  # as Kafka: a connection not taken is not counted
                self._hold(conn, wait)
                self._log_refused(f"connection_creation_rate quota of {ip} reached; connections held, then closed",
                                  "connections delayed")
                return False
        limit = self.config["max.connections"]
        per_ip = self._ip_overrides.get(ip, self.config["max.connections.per.ip"])
        if self.open_count >= limit:
            reason = f"max.connections={limit} reached"
        elif self._per_ip[ip] >= per_ip:
            reason = f"max.connections.per.ip={per_ip} reached by {ip}"
        else:
            self.open_count += 1
            self._per_ip[ip] += 1
            return True
        conn.close()
        self._log_refused(reason)
        return False

    def closed(self, ip):
        """A connection admitted from ip closed: its slot is free."""
        if self._slot is not None and not self._slot.done():
            self._slot.set_result(None)  # a connection waiting in the backlog may come in
        self.open_count -= 1
        self._per_ip[ip] -= 1
        if self._per_ip[ip] <= 0:
            del self._per_ip[ip]

    def _hold(self, conn, wait):
        """Keep a connection open and unread for wait ms, then close it: what Kafka's acceptor does with one over
        its address's connection_creation_rate (closed with the request unread, the client sees a reset)."""
        self._held[conn] = asyncio.get_running_loop().call_later(wait / 1000, self._release_held, conn)

    def _release_held(self, conn):
        self._held.pop(conn, None)
        conn.close()

    def release_held(self):
        """Close every held connection now (the server stops)."""
        for conn, timer in list(self._held.items()):
            timer.cancel()
            self._release_held(conn)

    def _log_refused(self, reason, what="connection refused"):
        """One line when connections start being refused (or made to wait) for a reason, then at most one every
        REFUSED_LOG_SECONDS with how many were meanwhile."""
        now = time.monotonic()
        seen = self._refused.get(reason)
        if seen is None or now - seen[1] >= REFUSED_LOG_SECONDS:
            more = f" ({seen[0]} more since the last line)" if seen is not None and seen[0] else ""
            log.warning("%s: %s%s", what, reason, more)
            self._refused[reason] = [0, now]
        else:
            seen[0] += 1

    def _overrides_value(self):
        try:
            return self.config["max.connections.per.ip.overrides"]
        except KeyError:
            return None

    def update_overrides(self):
        """max.connections.per.ip.overrides as it now is, if it changed: its addresses at once, its host names
        once resolved (as Kafka does, when the change is made)."""
        text = self._overrides_value()
        if text is None or text == self._overrides_text:
            return
        self._overrides_text = text
        numeric, named = _numeric_overrides(text)
        self._overrides_version += 1
        self._ip_overrides = numeric
        if named:
            self._spawn(self._resolve_overrides(self._overrides_version))

    async def _resolve_overrides(self, version):
        resolved = await asyncio.to_thread(_ip_overrides, self.config)
        if version == self._overrides_version:  # not changed again meanwhile
            self._ip_overrides = resolved
