"""Authentication without I/O: SASL PLAIN, SCRAM-SHA-256/512 (RFC 5802) and OAUTHBEARER (oauthbearer.py) for the
broker, the session each connection's authentication makes, and TLS contexts.

Credentials come from configuration, with Kafka's JAAS syntax (``user_alice="secret"``, under
``listener.name.<listener>.<mechanism>.sasl.jaas.config`` or ``<mechanism>.sasl.jaas.config``), and for SCRAM
also from the metadata log, where AlterUserScramCredentials keeps them. A SCRAM password is never kept: only
its salt, iteration count, stored key and server key.

A SCRAM exchange for a user that does not exist goes on as for one that does, with a made-up credential: the
same salt at every attempt (derived from the user's name and a secret of this process), the default
iteration count, and the same refusal at the end, so the answers do not tell which users exist. Making it up
costs two HMACs, no PBKDF2: no exchange runs PBKDF2 (the only PBKDF2 runs are for the configured users, once,
at start-up).

A session whose credential has an end (an OAUTHBEARER token's exp), or whose listener sets
connections.max.reauth.ms, lasts as long as Kafka makes it last (the session_lifetime_ms of the last
SaslAuthenticate): the client may authenticate again on the same connection (KIP-368: a SaslHandshake once
authenticated, at most once a second, the same mechanism and the same principal), and a connection whose session
has ended is closed at its next request.
"""

import base64
import hashlib
import hmac
import os
import re
import ssl
import time
from dataclasses import dataclass

from .oauthbearer import OAuthBearerExchange, validator_options
from .sasl_errors import AuthenticationError, CredentialsRefused, ExchangeAborted

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
SCRAM_CODES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}  # Kafka's ScramMechanism types
SCRAM_NAMES = {code: name for name, code in SCRAM_CODES.items()}
HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}
MIN_ITERATIONS, MAX_ITERATIONS, DEFAULT_ITERATIONS = 4096, 16384, 4096
JAAS_USER = re.compile(r'user_([^\s=]+)\s*=\s*"((?:[^"\\]|\\.)*)"')
# What unknown users' made-up SCRAM credentials are derived from: random for each process, so that they cannot be
# told from real ones made with a random salt.
_FAKE_SECRET = os.urandom(32)
MAX_RECEIVE_SIZE = 524288  # sasl.server.max.receive.size's default
LONG_MAX = (1 << 63) - 1


def jaas_users(text):
    """{user: password} from a JAAS config's user_NAME="password" options."""
    return {name: re.sub(r"\\(.)", r"\1", password) for name, password in JAAS_USER.findall(text or "")}


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(mechanism, key, data):
    return hmac.new(key, data, HASHES[mechanism]).digest()


def credential_from_salted(mechanism, salted_password, salt, iterations):
    """The stored and server keys of a salted password (what AlterUserScramCredentials sends)."""
    client_key = _hmac(mechanism, salted_password, b"Client Key")
    return ScramCredential(salt, HASHES[mechanism](client_key).digest(),
                           _hmac(mechanism, salted_password, b"Server Key"), iterations)


def make_credential(mechanism, password, iterations=DEFAULT_ITERATIONS, salt=None):
    salt = salt or os.urandom(32)
    salted = hashlib.pbkdf2_hmac(HASHES[mechanism]().name, password.encode(), salt, iterations)
    return credential_from_salted(mechanism, salted, salt, iterations)


def fake_credential(mechanism, user):
    """A made-up credential for a user that does not exist: the same at every attempt, shaped as make_credential
    makes real ones (32 bytes of salt, the default iterations), derived by HMAC from the user's name and this
    process's secret. ScramExchange refuses every proof against it."""
    salt = hmac.new(_FAKE_SECRET, f"{mechanism}\0{user}".encode(), hashlib.sha256).digest()
    return ScramCredential(salt, _hmac(mechanism, salt, b"Stored Key"), _hmac(mechanism, salt, b"Server Key"),
                           DEFAULT_ITERATIONS)


class Credentials:
    """PLAIN passwords, SCRAM credentials by (mechanism, user), and what else authentication reads from the
    configuration, per listener (its name; None: every listener)."""

    def __init__(self):
        self.plain = {}
        self.scram = {}
        self.oauthbearer = {}  # listener -> oauthbearer.ValidatorOptions
        self.max_reauth_ms = {}  # (listener, mechanism), (listener, None) or (None, None) -> connections.max.reauth.ms
        self.max_receive_size = {}  # listener -> sasl.server.max.receive.size

    def validator_options(self, listener):
        """The OAUTHBEARER validator options of a listener (None: the defaults)."""
        return self.oauthbearer.get(listener, self.oauthbearer.get(None))

    def reauth_ms(self, listener, mechanism):
        """connections.max.reauth.ms for a mechanism on a listener, the most specific setting first (0: unset)."""
        for key in ((listener, mechanism), (listener, None), (None, None)):
            if key in self.max_reauth_ms:
                return self.max_reauth_ms[key]
        return 0

    def receive_limit(self, listener):
        return self.max_receive_size.get(listener, self.max_receive_size.get(None, MAX_RECEIVE_SIZE))

    def add_plain(self, users):
        self.plain.update(users)

    def add_scram(self, mechanism, users):
        for user, password in users.items():
            self.scram[(mechanism, user)] = make_credential(mechanism, password)


def check_plain(token, credentials):
    """The user a PLAIN token (authzid NUL user NUL password) authenticates; raises AuthenticationError."""
    parts = bytes(token).split(b"\0")
    if len(parts) != 3:
        raise AuthenticationError("Invalid SASL/PLAIN response: expected 3 tokens")
    authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
    if not user or authzid not in ("", user):
        raise AuthenticationError("Authentication failed: invalid username or authorization id")
    known = credentials.plain.get(user)
    if known is None or not hmac.compare_digest(known.encode(), password.encode()):
        raise AuthenticationError("Authentication failed: Invalid username or password")
    return user


def _scram_attributes(text):
    out = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or len(key) != 1:
            raise AuthenticationError(f"Invalid SCRAM message: {item!r}")
        out[key] = value
    return out


class ScramExchange:
    """One SCRAM authentication: the client's first message, then its final one."""

    def __init__(self, mechanism, credentials):
        self.mechanism = mechanism
        self.credentials = credentials
        self.user = None
        self.done = False
        self._client_first_bare = self._server_first = self._nonce = self._credential = None
        self._known = False

    def step(self, token):
        """The server's reply to a client message; raises AuthenticationError."""
        text = bytes(token).decode("utf-8", "replace")
        if self._server_first is None:
            return self._first(text)
        if not self.done:
            return self._final(text)
        raise AuthenticationError("Unexpected SASL token after SCRAM authentication completed")

    def _first(self, text):
        gs2, _, bare = text.partition(",")
        authzid, _, bare = bare.partition(",")
        if gs2 not in ("n", "y") or not bare:
            raise AuthenticationError("Invalid SCRAM client-first message (channel binding is not supported)")
        attributes = _scram_attributes(bare)
        user = attributes.get("n", "").replace("=2C", ",").replace("=3D", "=")
        nonce = attributes.get("r")
        if not user or not nonce or "m" in attributes:
            raise AuthenticationError("Invalid SCRAM client-first message")
        if authzid and authzid[2:] != user:
            raise AuthenticationError("Authentication failed: authorization id does not match the user")
        self.user = user
        credential = self.credentials.scram.get((self.mechanism, user))
        # An unknown user is answered as a known one, to the end (no user oracle), with a made-up credential.
        self._known = credential is not None
        self._credential = credential = credential or fake_credential(self.mechanism, user)
        self._client_first_bare = bare
        self._nonce = nonce + base64.b64encode(os.urandom(18)).decode()
        self._server_first = (f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},"
                              f"i={credential.iterations}")
        return self._server_first.encode()

    def _final(self, text):
        without_proof, _, proof = text.rpartition(",p=")
        attributes = _scram_attributes(without_proof)
        if attributes.get("r") != self._nonce or not proof:
            raise AuthenticationError("Invalid SCRAM client-final message: nonce mismatch")
        message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self.mechanism, self._credential.stored_key, message)
        try:
            client_key = bytes(a ^ b for a, b in zip(base64.b64decode(proof), signature))
        except ValueError:
            raise AuthenticationError("Invalid SCRAM client proof") from None
        matches = hmac.compare_digest(HASHES[self.mechanism](client_key).digest(), self._credential.stored_key)
        if not (matches and self._known):
            raise CredentialsRefused(self.mechanism, "wrong password or unknown user")
        self.done = True
        server_signature = _hmac(self.mechanism, self._credential.server_key, message)
        return f"v={base64.b64encode(server_signature).decode()}".encode()


class Session:
    """A connection's authentication: which listener, which mechanism, who, whether it is done, and until when.

    clock: monotonic seconds (the session's end); wall_ms: the wall clock in ms (a credential's end)."""

    def __init__(self, listener, credentials, mechanisms, peer="", clock=time.monotonic,
                 wall_ms=lambda: time.time_ns() // 1_000_000):
        self.listener = listener
        self.peer = peer
        self.failed = False  # the exchange failed: the server closes the connection after answering
        self.sasl = listener.protocol in ("SASL_PLAINTEXT", "SASL_SSL")
        self.credentials = credentials
        self.mechanisms = mechanisms
        self.mechanism = None
        self.handshake_version = None
        self.exchange = None
        self.principal = None if self.sasl else "User:ANONYMOUS"
        # (name, version) the client's ApiVersions named (Kafka's ClientInformation): client telemetry matches on it
        self.client_software = ("unknown", "unknown")
        self.clock, self.wall_ms = clock, wall_ms
        self.expires = None  # clock time the session ends at; None: it does not
        self.lifetime_ms = 0  # the session_lifetime_ms of the last exchange that succeeded
        self.reauthenticating = False
        self._reauth_started = None
        self._before = None  # (mechanism, principal) of the session being authenticated again
        self.refusal = None  # why the next token ends a re-authentication (a mechanism other than the first)

    @property
    def authenticated(self):
        return self.principal is not None and not self.reauthenticating and not self.expired

    @property
    def expired(self):
        return self.expires is not None and self.clock() > self.expires

    @property
    def lapsed(self):
        """Authenticated once, and the session has ended without a new authentication begun: Kafka closes the
        connection at any request but a SaslHandshake that begins one."""
        return self.principal is not None and not self.reauthenticating and self.expired

    def may_reauthenticate(self):
        """Whether a SaslHandshake now begins a new authentication (KIP-368): only a session with an end, at
        most once a second."""
        if self.principal is None or self.reauthenticating or self.expires is None or not self.sasl:
            return False
        return self._reauth_started is None or self.clock() - self._reauth_started >= 1

    def begin_reauthentication(self):
        self._reauth_started = self.clock()
        self._before = (self.mechanism, self.principal)
        self.reauthenticating = True
        self.mechanism = self.handshake_version = self.exchange = None

    def start(self, mechanism, version):
        self.mechanism = mechanism
        self.handshake_version = version
        self.refusal = None
        if self.reauthenticating and mechanism != self._before[0]:
            self.refusal = (f"SASL mechanism '{mechanism}' requested by client is not supported for "
                            f"re-authentication of mechanism '{self._before[0]}'")
        if mechanism in SCRAM_CODES:
            self.exchange = ScramExchange(mechanism, self.credentials)
        elif mechanism == "OAUTHBEARER":
            self.exchange = OAuthBearerExchange(self.credentials.validator_options(self.listener.name),
                                                self.wall_ms)
        else:
            self.exchange = None

    @property
    def receive_limit(self):
        return self.credentials.receive_limit(self.listener.name)

    def step(self, token, size=None):
        """The reply to a client token (size: the bytes of the request that carried it, the token's own by
        default); sets principal once the exchange succeeds. Raises AuthenticationError, or its kinds."""
        if self.mechanism is None or self.principal is not None and not self.reauthenticating:
            raise AuthenticationError("Unexpected SASL token")
        size = len(token) if size is None else size
        if size > self.receive_limit:  # Kafka does not read past the bound: the connection is closed
            raise ExchangeAborted(f"a SASL request of {size} bytes, over sasl.server.max.receive.size "
                                  f"({self.receive_limit})")
        if self.refusal is not None:
            raise ExchangeAborted(self.refusal)
        try:
            if self.mechanism == "PLAIN":
                reply, user = b"", check_plain(token, self.credentials)
            else:
                reply = self.exchange.step(token)
                if not self.exchange.done:
                    return reply
                user = self.exchange.user
        except CredentialsRefused as e:
            if self.reauthenticating:
                raise CredentialsRefused(e.mechanism, e.reason, "re-authentication") from None
            raise
        self._complete("User:" + user, getattr(self.exchange, "lifetime_ms", None))
        return reply

    def _complete(self, principal, credential_ms):
        """The exchange succeeded: the session's principal and lifetime, as Kafka's SaslServerAuthenticator sets
        them (the credential's end, connections.max.reauth.ms, whichever comes first)."""
        if self.reauthenticating and principal != self._before[1]:
            old, new = self._before[1].split(":", 1), principal.split(":", 1)
            raise AuthenticationError(f"Cannot change principals during re-authentication from {old[0]}.{old[1]}: "
                                      f"{new[0]}.{new[1]}")
        reauth_ms = self.credentials.reauth_ms(self.listener.name, self.mechanism)
        lifetime, expires = 0, None
        if credential_ms is not None or reauth_ms > 0:
            left = None if credential_ms is None else credential_ms - self.wall_ms()
            lifetime = max(0, reauth_ms if left is None else left if reauth_ms <= 0 else min(left, reauth_ms))
            # Kafka adds the lifetime in ns to its monotonic clock and fails on a long overflow (a token ending
            # centuries from now): its broker then closes the connection.
            if time.monotonic_ns() + min(lifetime * 1_000_000, LONG_MAX) > LONG_MAX:
                raise ExchangeAborted(f"a session lifetime of {lifetime} ms overflows Kafka's nanosecond clock")
            expires = self.clock() + lifetime / 1000
        self.principal, self.lifetime_ms, self.expires = principal, lifetime, expires
        self.reauthenticating = False


REAUTH_KEY = re.compile(r"listener\.name\.([^.]+)\.(?:([^.]+)\.)?connections\.max\.reauth\.ms")
OAUTHBEARER_JAAS_KEY = re.compile(r"(?:listener\.name\.([^.]+)\.)?oauthbearer\.sasl\.jaas\.config")
RECEIVE_SIZE_KEY = re.compile(r"listener\.name\.([^.]+)\.sasl\.server\.max\.receive\.size")


def load_credentials(config):
    """Credentials from every JAAS config in the settings (any listener, any mechanism), and the other settings
    authentication reads (config.py has checked them all)."""
    credentials = Credentials()
    credentials.max_reauth_ms[(None, None)] = config["connections.max.reauth.ms"]
    credentials.max_receive_size[None] = config["sasl.server.max.receive.size"]
    for key, value in {**config.values, **config.extra}.items():
        if not isinstance(value, str):
            continue
        reauth, receive = REAUTH_KEY.fullmatch(key), RECEIVE_SIZE_KEY.fullmatch(key)
        if reauth:
            mechanism = reauth.group(2) and reauth.group(2).upper()
            credentials.max_reauth_ms[(reauth.group(1).upper(), mechanism)] = int(value.strip())
        elif receive:
            credentials.max_receive_size[receive.group(1).upper()] = int(value.strip())
        if not key.endswith("sasl.jaas.config"):
            continue
        oauthbearer = OAUTHBEARER_JAAS_KEY.fullmatch(key)
        if oauthbearer:
            listener = oauthbearer.group(1)
            credentials.oauthbearer[listener and listener.upper()] = validator_options(value)
            continue
        mechanism = key[: -len(".sasl.jaas.config")].rsplit(".", 1)[-1].upper() if key != "sasl.jaas.config" \
            else "PLAIN"
        users = jaas_users(value)
        if mechanism == "PLAIN":
            credentials.add_plain(users)
        elif mechanism in SCRAM_CODES:
            credentials.add_scram(mechanism, users)
    return credentials


def tls_context(get, listener, client_auth=None):
    """The server TLS context of an SSL or SASL_SSL listener, from Kafka's ssl.* keys (PEM key stores): get(key)
    gives the listener's value of a key (listener.name.<listener>.<key> before <key>). client_auth: the listener's
    ssl.client.auth, if not get's (a listener keeps the one it was opened with)."""
    kind = (get("ssl.keystore.type") or "PEM").upper()
    if kind != "PEM":
        raise ValueError(f"listener {listener.name}: ssl.keystore.type={kind}; this broker reads PEM keystores "
                         "(ssl.keystore.type=PEM)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    password = get("ssl.key.password")
    location = get("ssl.keystore.location")
    chain = get("ssl.keystore.certificate.chain")
    key = get("ssl.keystore.key")
    if location:
        context.load_cert_chain(location, password=password)
    elif chain and key:
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".pem") as pem:
            pem.write(key.strip() + "\n" + chain.strip() + "\n")
            pem.flush()
            context.load_cert_chain(pem.name, password=password)
    else:
        raise ValueError(f"listener {listener.name} uses {listener.protocol} but has no ssl.keystore.location "
                         "(or ssl.keystore.certificate.chain and ssl.keystore.key)")
    client_auth = (client_auth or get("ssl.client.auth") or "none").lower()
    trust_location = get("ssl.truststore.location")
    trust_inline = get("ssl.truststore.certificates")
    if trust_location or trust_inline:
        context.load_verify_locations(cafile=trust_location, cadata=trust_inline)
    if client_auth == "required":
        context.verify_mode = ssl.CERT_REQUIRED
    elif client_auth == "requested":
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


PEM_CERTIFICATE = re.compile(r"-----BEGIN CERTIFICATE-----\s*(.*?)-----END CERTIFICATE-----", re.S)


def keystore_certificate(get):
    """The DER bytes of a PEM key store's own certificate (the first of its chain: the one Kafka compares when the
    store changes), from ssl.keystore.location's file or ssl.keystore.certificate.chain; None without one. Raises
    OSError when the file cannot be read, ValueError when it holds no certificate."""
    location = get("ssl.keystore.location")
    if location:
        with open(location) as f:
            text = f.read()
    else:
        text = get("ssl.keystore.certificate.chain")
        if not text:
            return None
    found = PEM_CERTIFICATE.search(text)
    if found is None:
        raise ValueError("the key store holds no PEM certificate")
    try:
        return base64.b64decode("".join(found.group(1).split()), validate=True)
    except ValueError:
        raise ValueError("the key store's certificate is not base64") from None


# The attribute types a subject names, as RFC 4514 writes them.
NAME_ATTRIBUTES = {"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O",
                   "2.5.4.11": "OU", "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC",
                   "0.9.2342.19200300.100.1.1": "UID", "1.2.840.113549.1.9.1": "EMAILADDRESS"}
SUBJECT_ALT_NAME = "2.5.29.17"
# The string types of a name's attribute values, and how their bytes read.
STRING_TYPES = {0x0C: "utf-8", 0x13: "ascii", 0x16: "ascii", 0x14: "latin-1", 0x1A: "ascii", 0x1E: "utf-16-be",
                0x1C: "utf-32-be"}


def _der(data, start, end):
    """(tag, first content byte, end of content) of the DER element at start, within [start, end); raises
    ValueError for a length that runs past end (a certificate lying about its size allocates nothing)."""
    if start + 2 > end:
        raise ValueError("the certificate ends inside an element")
    tag, length, at = data[start], data[start + 1], start + 2
    if length & 0x80:
        count = length & 0x7F
        if not 1 <= count <= 4 or at + count > end:
            raise ValueError("the certificate has an element of an unreadable length")
        length, at = int.from_bytes(data[at:at + count], "big"), at + count
    if at + length > end:
        raise ValueError("the certificate has an element longer than the certificate")
    return tag, at, at + length


def _elements(data, start, end):
    """[(tag, content start, content end)] of the DER elements in [start, end)."""
    out = []
    while start < end:
        tag, at, stop = _der(data, start, end)
        out.append((tag, at, stop))
        start = stop
    return out


def _oid(raw):
    if not raw:
        raise ValueError("the certificate has an empty object identifier")
    parts = [min(raw[0] // 40, 2), raw[0] - 40 * min(raw[0] // 40, 2)]
    value = 0
    for byte in raw[1:]:
        value = value << 7 | byte & 0x7F
        if not byte & 0x80:
            parts.append(value)
            value = 0
    return ".".join(map(str, parts))


def certificate_identity(der):
    """(subject, subject as text, alternative names) of a DER certificate, to compare a new key store's with the
    old one's as Kafka does: the subject as its attributes, values in lower case with spaces folded (Kafka matches
    subjects that differ only so); the alternative names as a frozenset of (kind, bytes). None for None; raises
    ValueError for bytes that are not a certificate."""
    if der is None:
        return None
    _, at, end = _der(der, 0, len(der))
    tbs = _elements(der, at, end)
    if not tbs or tbs[0][0] != 0x30:
        raise ValueError("not a certificate")
    fields = _elements(der, tbs[0][1], tbs[0][2])
    if fields and fields[0][0] == 0xA0:  # the version, before the serial number
        fields = fields[1:]
    if len(fields) < 6:
        raise ValueError("not a certificate: its fields are missing")
    subject, subject_text = [], []
    for rdn in _elements(der, fields[4][1], fields[4][2]):
        attributes = []
        for _, a_at, a_end in _elements(der, rdn[1], rdn[2]):
            parts = _elements(der, a_at, a_end)
            if len(parts) != 2 or parts[0][0] != 0x06:
                raise ValueError("not a certificate: a subject attribute is not a type and a value")
            kind = _oid(der[parts[0][1]:parts[0][2]])
            raw = der[parts[1][1]:parts[1][2]]
            encoding = STRING_TYPES.get(parts[1][0])
            text = raw.decode(encoding, "replace") if encoding else "#" + raw.hex()
            attributes.append((kind, " ".join(text.lower().split())))
            subject_text.append(f"{NAME_ATTRIBUTES.get(kind, kind)}={text}")
        subject.append(tuple(sorted(attributes)))
    names = frozenset()
    for tag, x_at, x_end in fields[6:]:
        if tag != 0xA3:  # the extensions, after the optional unique identifiers
            continue
        for _, e_at, e_end in _elements(der, *_der(der, x_at, x_end)[1:]):
            parts = _elements(der, e_at, e_end)
            if parts and parts[0][0] == 0x06 and _oid(der[parts[0][1]:parts[0][2]]) == SUBJECT_ALT_NAME:
                _, n_at, n_end = _der(der, parts[-1][1], parts[-1][2])
                names = frozenset((t, bytes(der[a:b])) for t, a, b in _elements(der, n_at, n_end))
    return tuple(subject), ", ".join(reversed(subject_text)), names

