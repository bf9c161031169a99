"""SASL/OAUTHBEARER (RFC 7628) as a Kafka broker serves it when no callback handler is configured: unsecured JWS
tokens (an ``{"alg":"none"}`` header, the claims, an empty signature), checked by the rules of Kafka's unsecured
validator, with the options of the listener's JAAS config (``unsecuredValidatorPrincipalClaimName``,
``unsecuredValidatorScopeClaimName``, ``unsecuredValidatorRequiredScope``,
``unsecuredValidatorAllowableClockSkewMs``). No signature is checked: anyone can make such a token. A secured
setup (keys from a JWKS endpoint) is not built; config.py refuses its settings.

One exchange, as Kafka runs it:

- the client's first message, ``n,[a=<authzid>],^Aauth=Bearer <token>[^Akey=value...]^A^A``. One that breaks
  the grammar gets Kafka's refusal for bad credentials (``CredentialsRefused``: the reason is only logged);
- a token that fails a check is answered with a challenge, ``{"status":"invalid_token"}`` (or
  ``insufficient_scope`` and the scope required), which the client acknowledges with ``^A``; that fails the
  exchange with the challenge's JSON as the error message;
- an authzid other than the token's principal fails it with Kafka's message; otherwise the principal is
  ``User:<principal claim>`` and ``lifetime_ms`` the token's exp, which sets the session's lifetime (security.py);
- where Kafka's own server ends up throwing something other than an authentication error (a header without
  ``alg``, a scheme other than Bearer), its broker closes the connection without an answer: ``ExchangeAborted``.

Nothing here trusts a size the client states. The token's JSON is read by an iterative parser with the limits
of Kafka's JSON library (nesting 1000 deep, names of 50,000 characters, numbers of 1,000, strings of 20,000,000),
base64url as Java's decoder reads it; the client's message is bounded by sasl.server.max.receive.size before it
gets here (security.Session).
"""

import base64
import binascii
import json
import math
import re
import time
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

from .sasl_errors import AuthenticationError, CredentialsRefused, ExchangeAborted
from .settings import Invalid

MECHANISM = "OAUTHBEARER"
LONG_MAX, LONG_MIN = (1 << 63) - 1, -(1 << 63)
INT_MAX = (1 << 31) - 1

# ---- the client's first message (RFC 7628 section 3.1, as Kafka's OAuthBearerClientInitialResponse reads it)

_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"  # any ASCII but ',' and '=', or their escapes
_FIRST_MESSAGE = re.compile(r"n,(?:a=(?P<authzid>%s))?,\x01(?P<pairs>(?:[A-Za-z]+=[\x21-\x7e \t\r\n]+\x01)*)\x01"
                            % _SASLNAME)
_AUTH = re.compile(r"(?P<scheme>[A-Za-z0-9_]+) +(?P<token>[-_~+/.A-Za-z0-9]+=*)")
CONTROL_A = b"\x01"

# ---- JSON limits: those of the Jackson version Kafka 4.3 ships (its StreamReadConstraints defaults)
MAX_DEPTH, MAX_NAME, MAX_NUMBER, MAX_STRING = 1000, 50_000, 1000, 20_000_000


@dataclass(frozen=True)
class ValidatorOptions:
    """A listener's unsecured-validator options, defaults applied as Kafka applies them."""
    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple = ()
    clock_skew_ms: int = 0
    raw: dict = field(default_factory=dict, compare=False)


class InvalidToken(Exception):
    """The token fails a check: the client is told ``status`` (and ``scope``); the message is for the log."""

    def __init__(self, reason, scope=None):
        super().__init__(reason)
        self.scope = scope

    def answer(self):
        """The challenge the client gets, in Kafka's exact form."""
        if self.scope is None:
            return '{"status":"invalid_token"}'
        return '{"status":"insufficient_scope", "scope":"%s"}' % self.scope


class _Malformed(Exception):
    pass


@dataclass
class Token:
    principal: str
    lifetime_ms: int  # exp, in ms since the epoch (Java's Math.round of exp * 1000)
    scope: frozenset


class OAuthBearerExchange:
    """One OAUTHBEARER authentication on the server side. ``step(message)`` gives the bytes to answer with or
    raises AuthenticationError (or its kinds); ``done`` once a token was taken, with ``user`` and ``lifetime_ms``.
    now_ms: the wall clock in ms, which exp and iat are checked against."""

    def __init__(self, options=None, now_ms=None):
        self.options = options or ValidatorOptions()
        self.now_ms = now_ms or (lambda: time.time_ns() // 1_000_000)
        self.done = False
        self.user = None
        self.lifetime_ms = None
        self.extensions = {}
        self.reason = None  # why the last token was refused (for the log)
        self._challenge = None

    def step(self, message):
        message = bytes(message)
        if message == CONTROL_A and self._challenge is not None:
            # the client took note of the refusal: the exchange fails with it
            refused = AuthenticationError(self._challenge)
            refused.reason = f"{self.reason}: {self._challenge}"
            raise refused
        self._challenge = None
        authzid, token, extensions = parse_first_message(message)
        try:
            found = validate(token, self.options, self.now_ms())
        except InvalidToken as e:
            self.reason = str(e)
            self._challenge = e.answer()
            return self._challenge.encode()
        if authzid and authzid != found.principal:
            raise AuthenticationError(
                f"Authentication failed: Client requested an authorization id ({authzid}) that is different from "
                f"the token's principal name ({found.principal})")
        self.extensions = extensions  # the unsecured validator takes every extension
        self.user, self.lifetime_ms, self.done = found.principal, found.lifetime_ms, True
        return b""


def parse_first_message(message):
    """(authzid, token, {extension: value}) of a client's first message; raises CredentialsRefused for one that
    breaks the grammar, ExchangeAborted for a scheme other than Bearer (Kafka's server throws there)."""
    # Only ASCII fits the grammar: any other byte fails it, whatever it decodes to.
    match = _FIRST_MESSAGE.fullmatch(message.decode("latin-1"))
    if match is None:
        raise CredentialsRefused(MECHANISM, "the client's first message does not follow RFC 7628")
    pairs = {}
    for pair in match.group("pairs").split("\x01")[:-1]:
        key, _, value = pair.partition("=")
        pairs[key] = value  # a key given twice: the last one counts, as in Kafka
    auth = pairs.pop("auth", None)
    if auth is None:
        raise CredentialsRefused(MECHANISM, "the client's first message has no auth=")
    bearer = _AUTH.fullmatch(auth)
    if bearer is None:
        raise CredentialsRefused(MECHANISM, "the client's auth= is not '<scheme> <token>'")
    if bearer.group("scheme").lower() != "bearer":
        raise ExchangeAborted(f"the client's auth scheme is {bearer.group('scheme')!r}, not Bearer")
    return match.group("authzid") or "", bearer.group("token"), pairs


# ---- the token


def _java_trim(text):
    return text.strip("".join(map(chr, range(33))))


def _blank(text):
    return text is None or not _java_trim(text)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _java_round(value):
    """Java's Math.round(double): the nearest long, halves up, clamped to a long."""
    if value != value:
        return 0
    if math.isinf(value):
        return LONG_MAX if value > 0 else LONG_MIN
    return max(LONG_MIN, min(LONG_MAX, math.floor(Fraction(value) + Fraction(1, 2))))


def _double(number):
    try:
        return float(number)
    except OverflowError:  # an integer past a double's range: Java's BigInteger.doubleValue gives infinity
        return math.inf if number > 0 else -math.inf


def validate(token, options, now_ms):
    """The Token a compact serialization stands for, checked as Kafka's unsecured validator checks it at now_ms;
    raises InvalidToken, or ExchangeAborted where Kafka's validator throws something else."""
    if ".." in token:
        raise InvalidToken("the token has an empty part ('..')")
    parts = token.split(".")
    while parts and parts[-1] == "":  # as Java's String.split drops the trailing empty parts...
        parts.pop()
    if token.endswith("."):  # ...and Kafka then puts back the empty signature
        parts.append("")
    if len(parts) != 3:
        raise InvalidToken(f"the token has {len(parts)} dot-separated parts, not 3")
    header, claims = json_members(parts[0]), json_members(parts[1])
    if "alg" not in header:
        raise ExchangeAborted("the token's header has no alg")
    if header["alg"] != "none":
        raise InvalidToken("the token's alg is not none")
    if parts[2]:
        raise InvalidToken("an unsecured token has a signature")
    scope = _scope(claims, options.scope_claim)
    exp = claims.get("exp")
    if exp is None:
        raise InvalidToken("the token has no exp")
    if not _is_number(exp):
        raise InvalidToken("the token's exp is not a number")
    principal = claims.get(options.principal_claim)
    if principal is not None and not isinstance(principal, str):
        raise InvalidToken(f"the token's {options.principal_claim} is not a string")
    if _blank(principal):
        raise InvalidToken(f"the token has no {options.principal_claim}")
    iat = claims.get("iat")
    if iat is not None and not _is_number(iat):
        raise InvalidToken("the token's iat is not a number")
    skew = options.clock_skew_ms
    exp_s = _double(exp)
    # Compared in doubles, as Kafka compares them (a long turned double against 1000 * seconds).
    if iat is not None and 1000 * _double(iat) > float(now_ms + skew):
        raise InvalidToken("the token's iat is in the future (beyond the allowed clock skew)")
    if float(now_ms - skew) >= 1000 * exp_s:
        raise InvalidToken("the token has expired (beyond the allowed clock skew)")
    if iat is not None and exp_s <= _double(iat):
        raise InvalidToken("the token's exp is not after its iat")
    for item in options.required_scope:
        if item not in scope:
            raise InvalidToken(f"the token's scope lacks {item}", "[" + ", ".join(options.required_scope) + "]")
    return Token(principal, _java_round(exp_s * 1000), scope)


def _scope(claims, name):
    value = claims.get(name)
    if isinstance(value, str):  # one scope, the whole string (Kafka does not split it)
        return frozenset() if _blank(value) else frozenset([_java_trim(value)])
    if value is None:
        return frozenset()
    if not isinstance(value, list):
        raise InvalidToken(f"the token's {name} is neither a string nor a list")
    return frozenset(_java_trim(item) for item in value if not _blank(item))


def base64url(text):
    """The bytes of a base64url text, as Java's URL decoder reads them: padding optional but right if there,
    no other characters; raises _Malformed."""
    body = text.rstrip("=")
    padding = len(text) - len(body)
    if not re.fullmatch(r"[A-Za-z0-9_-]*", body) or len(body) % 4 == 1 \
            or padding and (padding > 2 or (len(body) + padding) % 4):
        raise _Malformed("not base64url")
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        raise _Malformed("not base64url") from None


def json_members(part):
    """{name: value} of one base64url part of the token, as Kafka converts a JSON object's members: a number
    stays a number, an array becomes a list of its elements' text, anything else its text. Content that is not an
    object gives no members (as in Kafka); raises InvalidToken for bad base64url or bad JSON."""
    try:
        tree = parse_json(base64url(part))
    except _Malformed as e:
        raise InvalidToken(f"a part of the token is not base64url-encoded JSON ({e})") from None
    if not isinstance(tree, dict):
        return {}
    return {name: [_text(item) for item in value] if isinstance(value, list) else
            value if _is_number(value) else _text(value) for name, value in tree.items()}


def _text(value):
    """Jackson's asText of a value: containers have none."""
    if value is True or value is False:
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, int):
        return str(value)
    return ""


def _java_double(value):
    """Java's Double.toString: plain from 10^-3 to 10^7, else d.dddE<n>, with the shortest digits."""
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        return repr(value)  # Python writes this range plainly, with a '.'
    _, digits, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digits))
    return f"{'-' if value < 0 else ''}{digits[0]}.{digits[1:] or '0'}E{len(digits) - 1 + exponent}"


# ---- JSON, read iteratively with the limits Kafka's Jackson has

_WHITESPACE = " \t\n\r"
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_PLAIN = re.compile('[^"\\\\\x00-\x1f\udc80-\udcff]*')  # the characters a string holds as they are
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS = (("true", True), ("false", False), ("null", None))


def _skip(text, at):
    while at < len(text) and text[at] in _WHITESPACE:
        at += 1
    return at


def _identifier_part(char):
    """Whether Java would read char as part of an identifier (what may not follow a literal)."""
    code = ord(char)
    return char.isalnum() or char in "_$" or code <= 8 or 0x0e <= code <= 0x1b or 0x7f <= code <= 0x9f


def _decode(data):
    """The text of JSON bytes, in the encoding their first bytes show (UTF-8, -16 or -32, with or without a
    byte order mark). A UTF-8 byte that is not valid becomes a stand-in the parser refuses inside a token (the
    JSON library refuses those only where it reads them)."""
    encoding = json.detect_encoding(data)
    if encoding.startswith("utf-8"):
        return data.decode(encoding, "surrogateescape")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        raise _Malformed("not valid " + encoding) from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _unpaired_to_question_marks(text):
    """Pairs of surrogates (from \\u escapes) as the characters they stand for; a lone one as '?', as Java
    writes it in UTF-8."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").replace("\ufffd", "?")


def _string(text, at, limit):
    """(string, position after its closing quote) of a JSON string whose opening quote is before at."""
    pieces, length = [], 0
    while True:
        plain = _PLAIN.match(text, at)
        pieces.append(plain.group())
        length += plain.end() - at
        at = plain.end()
        if length > limit:
            raise _Malformed("a string or name is too long")
        if at >= len(text):
            raise _Malformed("a string does not end")
        char = text[at]
        if char == '"':
            return _unpaired_to_question_marks("".join(pieces)), at + 1
        if char != "\\":
            raise _Malformed("a control character or a byte that is not UTF-8 in a string")
        escape = text[at + 1:at + 2]
        if escape == "u":
            digits = text[at + 2:at + 6]
            if not re.fullmatch(r"[0-9A-Fa-f]{4}", digits):
                raise _Malformed("a \\u escape without four hex digits")
            pieces.append(chr(int(digits, 16)))
            at += 6
        elif escape in _ESCAPES:
            pieces.append(_ESCAPES[escape])
            at += 2
        else:
            raise _Malformed("an unknown escape in a string")
        length += 1


def _name(text, at):
    """(member name, position of its value) at a name's opening quote."""
    if text[at:at + 1] != '"':
        raise _Malformed("an object member without a name")
    name, at = _string(text, at + 1, MAX_NAME)
    at = _skip(text, at)
    if text[at:at + 1] != ":":
        raise _Malformed("a member name without ':'")
    return name, _skip(text, at + 1)


def parse_json(data):
    """The value of JSON bytes as dict, list, str, int, float, bool or None, as Kafka's Jackson reads it: content
    after the first value is not read; none at all is None. Raises _Malformed."""
    text = _decode(data)
    at = _skip(text, 0)
    if at == len(text):
        return None
    stack = []  # [container, name of the member being read (objects)]
    while True:
        char = text[at:at + 1]
        if char in ("{", "["):
            if len(stack) >= MAX_DEPTH:
                raise _Malformed("nested too deep")
            container = {} if char == "{" else []
            at = _skip(text, at + 1)
            closing = "}" if char == "{" else "]"
            if text[at:at + 1] == closing:
                value, at = container, at + 1
            else:
                name = None
                if char == "{":
                    name, at = _name(text, at)
                stack.append([container, name])
                continue
        elif char == '"':
            value, at = _string(text, at + 1, MAX_STRING)
        elif char and char in "-0123456789":
            number = _NUMBER.match(text, at)
            if number is None:
                raise _Malformed("a bad number")
            digits = number.group()
            integral = number.group(1) is None and number.group(2) is None
            if sum(map(str.isdigit, digits)) > MAX_NUMBER:  # Jackson counts the digits (the exponent's too)
                raise _Malformed("a number is too long")
            value = int(digits) if integral else float(digits)
            at = number.end()
            if not stack and at < len(text) and text[at] not in _WHITESPACE:
                raise _Malformed("a number followed by more than space at the top level")
        else:
            literal = next((pair for pair in _LITERALS if text.startswith(pair[0], at)), None)
            if literal is None:
                raise _Malformed("an unexpected character")
            at, value = at + len(literal[0]), literal[1]
            if not stack and at < len(text) and _identifier_part(text[at]):
                raise _Malformed("a literal followed by more letters")
        # The value is read: put it in its container, then close what ends here.
        while True:
            if not stack:
                return value
            container, name = stack[-1]
            if isinstance(container, dict):
                container[name] = value
            else:
                container.append(value)
            at = _skip(text, at)
            char = text[at:at + 1]
            if char == ",":
                at = _skip(text, at + 1)
                if isinstance(container, dict):
                    stack[-1][1], at = _name(text, at)
                break
            if char != ("}" if isinstance(container, dict) else "]"):
                raise _Malformed("a value not followed by ',' or the end of its container")
            value, at = container, at + 1
            stack.pop()


# ---- the JAAS config: Kafka's grammar (a java.io.StreamTokenizer over the text)

_NUMBER_START = "0123456789.-"
_QUOTES = "\"'"
_ESCAPED = {"a": "\x07", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\x0b"}


def _word_start(char):
    return char.isascii() and char.isalpha() or char in "_$" or ord(char) >= 0xa0


def _word_part(char):
    return _word_start(char) or char in "0123456789.-"


def _jaas_tokens(text):
    """(kind, text) tokens: ("word", w) and ("quoted", s) carry text; numbers and other characters do not."""
    at, end = 0, len(text)
    while True:
        while at < end:
            char = text[at]
            if char <= " ":
                at += 1
            elif char == "/":
                if text.startswith("/*", at):
                    close = text.find("*/", at + 2)
                    at = end if close < 0 else close + 2
                else:  # "//", and a lone "/" too (the tokenizer's comment character), run to the end of the line
                    while at < end and text[at] not in "\r\n":
                        at += 1
            else:
                break
        if at >= end:
            return
        char = text[at]
        if char in _NUMBER_START:
            if char == "-" and (at + 1 >= end or text[at + 1] not in "0123456789."):
                yield "-", None
                at += 1
                continue
            at += 1
            seen_dot = char == "."
            while at < end and (text[at].isdigit() and text[at].isascii() or text[at] == "." and not seen_dot):
                seen_dot = seen_dot or text[at] == "."
                at += 1
            yield "number", None
        elif _word_start(char):
            start = at
            while at < end and _word_part(text[at]):
                at += 1
            yield "word", text[start:at]
        elif char in _QUOTES:
            at += 1
            out = []
            while at < end and text[at] not in (char, "\n", "\r"):
                if text[at] == "\\" and at + 1 < end:
                    escape = text[at + 1]
                    octal = re.match(r"[0-3][0-7]{0,2}|[4-7][0-7]?", text[at + 1:at + 4])
                    if octal:
                        out.append(chr(int(octal.group(), 8)))
                        at += 1 + octal.end()
                    else:
                        out.append(_ESCAPED.get(escape, escape))
                        at += 2
                elif text[at] == "\\":
                    out.append("\uffff")  # a backslash at the very end reads the end of input as a character
                    at += 1
                else:
                    out.append(text[at])
                    at += 1
            if at < end and text[at] == char:
                at += 1
            yield "quoted", "".join(out)
        else:
            yield char, None
            at += 1


def jaas_entries(text):
    """[(login module, flag, {option: value})] of a JAAS config as Kafka reads it; raises Invalid with Kafka's
    message for one it refuses."""
    tokens = _jaas_tokens(text)
    entries = []
    for kind, module in tokens:
        flag = next(tokens, None)
        if flag is None:
            raise Invalid("Login module control flag not specified in JAAS config")
        if flag[1] is None:
            raise Invalid("Login module control flag is not available in the JAAS config")
        if flag[1].upper() not in ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL"):
            raise Invalid(f"Invalid login module control flag '{flag[1]}' in JAAS config")
        options = {}
        ended = False
        for kind, key in tokens:
            if kind == ";":
                ended = True
                break
            equals, value = next(tokens, (None, None)), next(tokens, (None, None))
            if equals[0] != "=" or value[1] is None:
                raise Invalid(f"Value not specified for key '{'null' if key is None else key}' in JAAS config")
            options[key] = value[1]
        if not ended:
            raise Invalid("JAAS config entry not terminated by semi-colon")
        if not module:
            raise Invalid("LoginModule name must not be empty")
        entries.append((module, flag[1], options))
    if not entries:
        raise Invalid("Login module not specified in JAAS config")
    return entries


_SCOPE_ITEM = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")


def validator_options(jaas):
    """The unsecured validator's options from a listener's oauthbearer JAAS config (None: the defaults); raises
    Invalid for a config Kafka refuses at start, and (kafka=False) for options it takes at start but refuses at
    every login."""
    if jaas is None:
        return ValidatorOptions()
    entries = jaas_entries(jaas)
    if len(entries) != 1:
        raise Invalid(f"JAAS config property contains {len(entries)} login modules, should be 1 module")
    raw = entries[0][2]
    prefix = "unsecuredValidator"
    principal = raw.get(prefix + "PrincipalClaimName")
    scope_claim = raw.get(prefix + "ScopeClaimName")
    scope = raw.get(prefix + "RequiredScope")
    items = [] if _blank(scope) else [item for item in _java_trim(scope).split(" ") if item]
    for item in items:
        if not _SCOPE_ITEM.fullmatch(item):
            raise Invalid(f"{prefix}RequiredScope: {item!r} is not a scope token (RFC 6749 section 3.3); Kafka "
                          "would refuse every OAUTHBEARER login", kafka=False)
    skew_text = raw.get(prefix + "AllowableClockSkewMs")
    skew = 0
    if not _blank(skew_text):
        trimmed = _java_trim(skew_text)
        if not re.fullmatch(r"[+-]?[0-9]+", trimmed) or not -INT_MAX - 1 <= int(trimmed) <= INT_MAX:
            raise Invalid(f"{prefix}AllowableClockSkewMs: {skew_text!r} is not an int; Kafka would refuse every "
                          "OAUTHBEARER login", kafka=False)
        skew = int(trimmed)
        if skew < 0:
            raise Invalid(f"{prefix}AllowableClockSkewMs: {skew_text!r} is negative; Kafka would refuse every "
                          "OAUTHBEARER login", kafka=False)
    return ValidatorOptions("sub" if _blank(principal) else _java_trim(principal),
                            "scope" if _blank(scope_claim) else _java_trim(scope_claim), tuple(items), skew, raw)


# ---- settings: what config.py checks at start

# The keys of a secured setup (tokens signed, checked against a JWKS endpoint's keys), which is not built here.
SECURED_KEYS = ("sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.jwks.endpoint.refresh.ms",
                "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
                "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", "sasl.oauthbearer.expected.audience",
                "sasl.oauthbearer.expected.issuer")
UNSECURED_HANDLER = ("org.apache.kafka.common.security.oauthbearer.internals.unsecured."
                     "OAuthBearerUnsecuredValidatorCallbackHandler")
DEFAULT_JWT_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator"
_SERVED = ("this broker serves OAUTHBEARER as Kafka does without a callback handler of its own: unsecured tokens "
           "(alg none), no signature checked")
_KEY = re.compile(r"(?:listener\.name\.(?P<listener>[^.]+)\.)?(?P<oauthbearer>oauthbearer\.)?(?P<base>.+)")
_REAUTH = re.compile(r"listener\.name\.[^.]+\.(?:[^.]+\.)?connections\.max\.reauth\.ms")


def config_problem(key, value):
    """Invalid for a broker setting about SASL that this broker refuses at start (with kafka=False where Kafka
    takes it), else None: the keys of a secured OAUTHBEARER setup, a listener's oauthbearer JAAS config Kafka
    would refuse, a listener's connections.max.reauth.ms that is not a long."""
    parts = _KEY.fullmatch(key)
    base, oauthbearer = parts.group("base"), parts.group("oauthbearer")
    value = str(value).strip()
    if base in SECURED_KEYS and value:
        return Invalid(f"checking OAUTHBEARER tokens' signatures (JWKS keys, issuer, audience) is not built "
                       f"here; {_SERVED}", kafka=False)
    if base == "sasl.oauthbearer.jwt.validator.class" and value != DEFAULT_JWT_VALIDATOR:
        return Invalid(f"a JWT validator of one's own is not supported; {_SERVED}", kafka=False)
    if oauthbearer and base == "sasl.server.callback.handler.class" and value != UNSECURED_HANDLER:
        return Invalid(f"an OAUTHBEARER callback handler of one's own (such as Kafka's OAuthBearerValidatorCallback"
                       f"Handler, for signed tokens) is not supported; {_SERVED}", kafka=False)
    if oauthbearer and base == "sasl.jaas.config":
        try:
            validator_options(value)
        except Invalid as e:
            return e
    if _REAUTH.fullmatch(key):
        if not re.fullmatch(r"[+-]?[0-9]+", value) or not LONG_MIN <= int(value) <= LONG_MAX:
            return Invalid("not a long (connections.max.reauth.ms, in ms)")
    return None
