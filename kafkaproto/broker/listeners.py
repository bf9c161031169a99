"""The listeners a broker runs, read from its settings and its dynamic configs, and the checks Kafka 4.3 makes
before it changes them while running (its DynamicListenerConfig, and each TLS listener's SslFactory). No sockets
here: server.py opens and closes what this module says, at start and after each change of this broker's configs
(on every broker of a cluster served by one process: nodes_served.py).

The settings in effect are this broker's dynamic configs over every broker's, over the file's and the defaults;
for one listener, ``listener.name.<listener>.<key>`` (dynamic or not) goes before ``<key>``. So a restart runs
what was changed while running: the metadata log keeps the dynamic configs.

What changes while the broker runs, as in Kafka:

- ``listeners`` (and ``listener.security.protocol.map``): a listener named anew is opened, with the TLS settings,
  SASL mechanisms and client authentication in effect then; one no longer named is closed, and its connections
  with it. A listener kept keeps its address until a restart, as Kafka's does (it goes by names). Checked first:
  every listener has a security protocol, the listeners advertised stay (with advertised.listeners unset, every
  listener is advertised, so none can go), and a listener kept keeps its protocol and its other per-listener
  settings.
- A TLS listener's key store and trust store (``listener.name.<listener>.ssl.keystore.*`` and
  ``.ssl.truststore.*``; Kafka refuses the keys without the prefix): the next connections get a new context,
  existing ones go on. Checked first, as Kafka checks them: the new stores load, the key store is not removed and
  its certificate keeps its subject (unless ssl.allow.dn.changes) and its alternative names (unless
  ssl.allow.san.changes), and a listener opened without a trust store does not get one.
- ``ssl.client.auth`` and ``sasl.enabled.mechanisms``: kept for the listeners opened later; an open listener keeps
  the ones it was opened with, as Kafka's does.

Where this broker goes its own way: a listener opened while running is advertised at once when
advertised.listeners is unset (Kafka registers its listeners with its controller at start, so its Metadata names
a listener added while running only after a restart); a TLS listener named anew whose stores cannot be used is
refused (Kafka takes the change and fails to open it); and a kept listener's per-listener settings are compared
with those in effect (Kafka compares them with its file's, so once one was changed while running, it refuses any
later change of listeners until a restart).
"""

from .config import PER_LISTENER_ONLY, Listener, parse_endpoints, parse_protocol_map
from .security import certificate_identity, keystore_certificate, tls_context
from .settings import Invalid, Problem, split_list

TLS_PROTOCOLS = ("SSL", "SASL_SSL")
# Kafka's protocol map when none is given: each protocol's own name is a listener name.
DEFAULT_PROTOCOLS = {name: name for name in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
# The keys whose change makes Kafka check its listeners again (DynamicListenerConfig's): the listeners, and the
# security and connection settings every listener takes unless it has its own.
LISTENER_CHECKED = frozenset({
    "listeners", "listener.security.protocol.map", "principal.builder.class", "ssl.protocol", "ssl.provider",
    "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.keystore.type", "ssl.keystore.location",
    "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type", "ssl.truststore.location",
    "ssl.truststore.password", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
    "ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation", "ssl.client.auth",
    "ssl.engine.factory.class", "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config",
    "sasl.enabled.mechanisms", "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.principal.to.local.rules",
    "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds", "max.connections", "max.connection.creation.rate", "num.network.threads"})
# Per-listener keys a kept listener may change while running: its stores, and its connection limits.
CHANGEABLE_PER_LISTENER = frozenset(PER_LISTENER_ONLY) | {"max.connections", "max.connection.creation.rate",
                                                           "num.network.threads"}


class Settings:
    """A broker's settings in effect: dynamic (text, this broker's over every broker's) over the configuration's."""

    def __init__(self, config, dynamic):
        self.config = config
        self.dynamic = dynamic

    def given(self, key):
        """The value of key as text, or None when neither a dynamic config nor the configuration gives one (a
        setting's default counts as given)."""
        if self.dynamic.get(key) is not None:
            return self.dynamic[key]
        for source in (self.config.extra, self.config.values):
            if source.get(key) is not None:
                value = source[key]
                return str(value).lower() if isinstance(value, bool) else str(value)
        return None

    def for_listener(self, name, key):
        """A listener's value of key: listener.name.<listener>.<key>, else key."""
        value = self.given(f"listener.name.{name.lower()}.{key}")
        return value if value is not None else self.given(key)

    def own(self, name):
        """{key: value} of the per-listener keys given for listener name (without their prefix)."""
        prefix = f"listener.name.{name.lower()}."
        keys = {*self.dynamic, *self.config.extra, *self.config.values}
        return {key[len(prefix):]: self.given(key) for key in keys
                if key.startswith(prefix) and self.given(key) is not None}

    def protocols(self):
        """{listener name: security protocol}: listener.security.protocol.map, or Kafka's default map when the
        map is neither given nor changed."""
        if "listener.security.protocol.map" not in self.dynamic and "listener.security.protocol.map" not in \
                self.config.given:
            return {**DEFAULT_PROTOCOLS, **parse_protocol_map(self.given("listener.security.protocol.map"))}
        return parse_protocol_map(self.given("listener.security.protocol.map") or "")

    def listeners(self, lenient=True):
        """[Listener] of the listeners setting, each with its security protocol; raises Invalid. As at start, a
        listener named after a protocol is of that protocol when the map does not name it; lenient: whether that
        holds for every listener (True) or only for those of these names (Kafka's rule for a listener added while
        running: the map must name it)."""
        protocols = self.protocols()
        out = []
        for name, host, port in parse_endpoints(self.given("listeners") or ""):
            if name not in protocols and name in DEFAULT_PROTOCOLS and (lenient is True or name in lenient):
                protocols[name] = name
            if name not in protocols:
                raise Invalid(f"listener {name} has no security protocol: name it in listener.security.protocol.map "
                              f"({name}:PLAINTEXT, say)")
            out.append(Listener(name, host or "0.0.0.0", port, protocols[name]))
        return out

    def advertised_names(self, listeners):
        """The names of the listeners advertised: advertised.listeners' (read only at start), else every
        listener's."""
        text = self.config.values.get("advertised.listeners")
        return [name for name, _, _ in parse_endpoints(text, distinct_ports=False)] if text else [
            listener.name for listener in listeners]

    def setup(self, listener):
        """What listener is opened with (its Setup)."""
        mechanisms = tuple(m.strip().upper() for m in split_list(
            self.for_listener(listener.name, "sasl.enabled.mechanisms") or ""))
        client_auth = (self.for_listener(listener.name, "ssl.client.auth") or "none").lower()
        return Setup(listener, mechanisms, client_auth, self.stores(listener))

    def stores(self, listener):
        """A TLS listener's key store and trust store settings, {key: value} (None for a listener without TLS)."""
        if listener.protocol not in TLS_PROTOCOLS:
            return None
        return {key: value for key in PER_LISTENER_ONLY
                if (value := self.for_listener(listener.name, key)) is not None}

    def allowed(self, key):
        """A boolean setting Kafka reads only at start (ssl.allow.dn.changes, ssl.allow.san.changes)."""
        value = self.given(key)
        return value is not None and value.strip().lower() == "true"


class Setup:
    """What a listener runs with: its address and protocol, SASL mechanisms, ssl.client.auth, and (TLS) the
    store settings its context was made from with the certificate they hold."""

    def __init__(self, listener, mechanisms, client_auth, stores):
        self.listener, self.mechanisms, self.client_auth, self.stores = listener, mechanisms, client_auth, stores
        self.identity = None  # (subject, its text, alternative names) of the key store's certificate, once loaded

    @property
    def name(self):
        return self.listener.name

    def context(self):
        """The listener's TLS context from its stores (None without TLS); sets identity. Raises ValueError or
        OSError (ssl.SSLError among them) when the stores cannot be used."""
        if self.stores is None:
            return None
        context = tls_context(self.stores.get, self.listener, self.client_auth)
        try:
            self.identity = certificate_identity(keystore_certificate(self.stores.get))
        except (OSError, ValueError):  # loaded, yet not read here: its subject is not compared
            self.identity = None
        return context

    @property
    def trusts(self):
        return self.stores is not None and bool(self.stores.get("ssl.truststore.location")
                                                or self.stores.get("ssl.truststore.certificates"))


def unknown_mechanisms(setup, known):
    """The SASL mechanisms of a listener's setup this broker does not implement."""
    return [m for m in setup.mechanisms if m not in known]


def check_change(config, before, after, running=None):
    """[Problem] of changing this broker's dynamic configs from before to after ({key: text}, this broker's over
    every broker's): the checks Kafka makes of its listeners before it takes a change. running: {name: Setup} of
    the listeners open (the server's), else those the settings before say."""
    old, new = Settings(config, before), Settings(config, after)
    problems = []
    try:
        before_listeners = old.listeners()
    except Invalid:  # a configuration only an older version took: nothing to compare with
        before_listeners = []
    try:
        listeners = new.listeners(lenient={listener.name for listener in before_listeners})
    except Invalid as e:
        return [Problem("listeners", f"listeners: {e}", e.kafka)]
    names = {listener.name for listener in listeners}
    static_advertised = config.values.get("advertised.listeners")
    if static_advertised:
        strangers = [n for n in new.advertised_names(listeners) if n not in names]
        if strangers:
            return [Problem("listeners", f"listeners: advertised.listeners names {', '.join(strangers)}, which would "
                            "no longer be a listener (advertised.listeners cannot change while running)")]
    if running is None:
        running = {listener.name: old.setup(listener) for listener in before_listeners}
    changed = {key for key in {*before, *after} if before.get(key) != after.get(key)}
    if changed & LISTENER_CHECKED:
        gone = [n for n in old.advertised_names(before_listeners) if n not in names]
        if gone:
            problems.append(Problem("listeners", f"listeners: listener {gone[0]} is advertised, so it cannot be "
                                    "removed while the broker runs" + ("" if static_advertised else
                                                                       " (with advertised.listeners unset, every "
                                                                       "listener is advertised)")))
        old_protocols = {listener.name: listener.protocol for listener in before_listeners}
        for listener in listeners:
            if listener.name not in old_protocols:
                continue
            if listener.protocol != old_protocols[listener.name]:
                problems.append(Problem("listener.security.protocol.map", f"listener.security.protocol.map: "
                                        f"listener {listener.name} is {old_protocols[listener.name]}; its protocol "
                                        "cannot change while the broker runs"))
            fixed_before, fixed_after = ({key: value for key, value in side.own(listener.name).items()
                                          if key not in CHANGEABLE_PER_LISTENER} for side in (old, new))
            if fixed_before != fixed_after:
                keys = sorted(k for k in {*fixed_before, *fixed_after} if fixed_before.get(k) != fixed_after.get(k))
                problems.append(Problem("listeners", f"listener {listener.name}: "
                                        f"{', '.join(f'listener.name.{listener.name.lower()}.{k}' for k in keys)} "
                                        "cannot change for an open listener together with the listeners (change "
                                        "it alone, or give the listener a new name)"))
    for listener in listeners:
        setup = new.setup(listener)
        current = running.get(listener.name)
        if current is None:
            problems += _check_new(setup)
        elif current.listener.protocol in TLS_PROTOCOLS and setup.stores != current.stores:
            problems += _check_stores(current, setup, new)
    return problems


def _check_new(setup):
    """A listener to be opened: its TLS context must be made (Kafka takes the change and fails to open it)."""
    try:
        setup.context()
    except (OSError, ValueError) as e:
        return [Problem("listeners", f"listener {setup.name} cannot be opened: its TLS settings cannot be used "
                        f"({_reason(e, setup)})", kafka=False)]
    return []


def _check_stores(current, setup, new):
    """A TLS listener's new stores, checked as Kafka's SslFactory checks them before it takes them."""
    key = f"listener.name.{setup.name.lower()}.ssl.keystore.location"
    if not (setup.stores.get("ssl.keystore.location") or setup.stores.get("ssl.keystore.certificate.chain")):
        return [Problem(key, f"listener {setup.name}: its key store cannot be removed while the broker runs")]
    if current.identity is None:
        try:
            current.context()
        except (OSError, ValueError):  # the open listener's own files went away: nothing to compare with
            current.identity = None
    try:
        setup.context()
    except (OSError, ValueError) as e:
        return [Problem(key, f"listener {setup.name}: the new TLS settings cannot be used ({_reason(e, setup)})")]
    if current.identity is not None and setup.identity is not None:
        (old_subject, old_text, old_names), (new_subject, new_text, new_names) = current.identity, setup.identity
        if old_subject != new_subject and not new.allowed("ssl.allow.dn.changes"):
            return [Problem(key, f"listener {setup.name}: the new certificate is for {new_text}, the listener's is "
                            f"for {old_text}; its subject may change only with ssl.allow.dn.changes=true")]
        if not old_names <= new_names and not new.allowed("ssl.allow.san.changes"):
            return [Problem(key, f"listener {setup.name}: the new certificate lacks alternative names the "
                            "listener's has; they may go only with ssl.allow.san.changes=true")]
    if setup.trusts and not current.trusts:
        return [Problem(f"listener.name.{setup.name.lower()}.ssl.truststore.location",
                        f"listener {setup.name} was opened without a trust store; one cannot be added while the "
                        "broker runs")]
    return []


def _reason(error, setup):
    """Why a TLS context cannot be made, naming the store files when the error does not."""
    if isinstance(error, OSError) and error.strerror:
        if error.filename:
            return f"{error.strerror}: {error.filename}"
        files = [f"{key}={value}" for key in ("ssl.keystore.location", "ssl.truststore.location")
                 if (value := setup.stores.get(key))]
        return error.strerror + (f"; {', '.join(files)}" if files else "")
    return str(error)


__all__ = ["CHANGEABLE_PER_LISTENER", "LISTENER_CHECKED", "Settings", "Setup", "check_change", "unknown_mechanisms"]
