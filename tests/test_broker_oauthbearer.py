"""SASL/OAUTHBEARER (kafkaproto/broker/oauthbearer.py, security.Session): the exchange held to Kafka 4.3.1's own
OAuthBearerSaslServer with its unsecured validator (tests/kafka/OAuthBearerProbe.java feeds it the same client
messages), listeners' JAAS configs read as Kafka reads them, the settings refused at start, sessions with an end and
re-authentication (KIP-368) over sockets, and real clients: librdkafka's unsecured JWT and the Java client 4.3.1.

What Kafka's broker does around its SASL server (session_lifetime_ms from the token's exp whether or not
connections.max.reauth.ms is set, the smaller of the two when it is, re-authentication at most once a second,
a session that ended closed at its next request, a request over sasl.server.max.receive.size closed unanswered)
was read from its SaslServerAuthenticator and SocketServer and watched on a running Kafka 4.3.1; the socket tests
here hold this broker to those observations."""

import base64
import json
import socket
import subprocess
import time
import uuid

import pytest

from kafkaproto import errors
from kafkaproto.broker import Broker
from kafkaproto.broker.config import BrokerConfig, Listener
from kafkaproto.broker.oauthbearer import OAuthBearerExchange, jaas_entries, parse_json, validator_options
from kafkaproto.broker.security import (AuthenticationError, Credentials, CredentialsRefused, ExchangeAborted,
                                        Session)
from kafkaproto.broker.settings import ConfigError, Invalid
from kafkaproto.messages import (ApiVersionsRequest, MetadataRequest, SaslAuthenticateRequest,
                                 SaslHandshakeRequest)

import kafka_jvm
from test_broker_security import JAAS_PLAIN, Raw, confluent_round_trip

# One worker for the module: one run of the probe, one broker.
pytestmark = [pytest.mark.xdist_group("oauthbearer"), pytest.mark.above_the_codecs]

NOW_MS = 1_700_000_000_000  # the probe's clock and the exchanges'
EXP = NOW_MS // 1000 + 100
MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
JAAS = MODULE + ";"


def b64url(data):
    return base64.urlsafe_b64encode(data if isinstance(data, bytes) else data.encode()).rstrip(b"=").decode()


def jws(claims, header='{"alg":"none"}', signature=""):
    """An unsecured JWS: claims and header as JSON text (or bytes, or a dict)."""
    def text(part):
        return json.dumps(part) if isinstance(part, dict) else part
    return f"{b64url(text(header))}.{b64url(text(claims))}.{signature}"


def first(token, authzid="", extensions=""):
    """A client's first message (RFC 7628), as every client writes it."""
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {token}{extensions}\x01\x01".encode()


def claims(extra="", sub='"alice"', exp=EXP):
    return '{"sub":%s,"exp":%s%s}' % (sub, exp, "," + extra if extra else "")


def good(extra=""):
    return [first(jws(claims(extra)))]


# (name, client messages) for Kafka's default options: each a new exchange.
DEFAULT_CASES = [
    ("a good token", good()),
    ("iat, a scope and extensions", [first(jws(claims('"iat":%d,"scope":["read"]' % (EXP - 200))),
                                           extensions="\x01traceId=abc 123\x01x=a=b")]),
    ("the authzid of the token's principal", [first(jws(claims()), "alice")]),
    ("another authzid", [first(jws(claims()), "bob")]),
    ("an authzid with an escaped comma", [first(jws(claims(sub='"a,b"')), "a=2Cb")]),
    ("an authzid with ^A", [b"n,a=al\x01ice,\x01auth=Bearer " + jws(claims()).encode() + b"\x01\x01"]),
    ("expired, then ^A", [first(jws(claims(exp=1))), b"\x01"]),
    ("expired, then a good token", [first(jws(claims(exp=1))), first(jws(claims(sub='"bob"')))]),
    ("expired, then ^A and more", [first(jws(claims(exp=1))), b"\x01x"]),
    ("^A first", [b"\x01"]),
    ("an empty message", [b""]),
    ("no closing ^A", [first(jws(claims()))[:-1]]),
    ("a closing ^A too many", [first(jws(claims())) + b"\x01"]),
    ("a y GS2 header", [b"y" + first(jws(claims()))[1:]]),
    ("an authzid with a raw comma", [b"n,a=a,b,\x01auth=Bearer " + jws(claims()).encode() + b"\x01\x01"]),
    ("an empty authzid", [b"n,a=,\x01auth=Bearer " + jws(claims()).encode() + b"\x01\x01"]),
    ("an extension key with a digit", [first(jws(claims()), extensions="\x01k1=v")]),
    ("an empty extension value", [first(jws(claims()), extensions="\x01k=")]),
    ("a non-ASCII extension value", [first(jws(claims()), extensions="\x01k=\u00e9")]),
    ("an extension before auth", [b"n,,\x01k=v\x01auth=Bearer " + jws(claims()).encode() + b"\x01\x01"]),
    ("no auth", [b"n,,\x01k=v\x01\x01"]),
    ("auth twice: the last counts", [b"n,,\x01auth=Bearer " + jws(claims()).encode() + b"\x01auth=Bearer x\x01\x01"]),
    ("scheme Basic", [b"n,,\x01auth=Basic abc\x01\x01"]),
    ("scheme in another case, spaces", [b"n,,\x01auth=bEaReR   " + jws(claims()).encode() + b"\x01\x01"]),
    ("a tab after the scheme", [b"n,,\x01auth=Bearer\t" + jws(claims()).encode() + b"\x01\x01"]),
    ("a space after the token", [b"n,,\x01auth=Bearer " + jws(claims()).encode() + b" \x01\x01"]),
    ("'=' inside the token", [first(base64.urlsafe_b64encode(b'{"alg":"none"}').decode() + "." + b64url(claims())
                                    + ".")]),
    ("'+' and '/' in the token", [first(b64url('{"alg":"none"}') + "." + base64.b64encode(
        b'{"sub":"a","exp":%d,"x":"\xff\xfe>>?"}' % EXP).decode() + ".")]),
    ("'~' in the token", [first(b64url('{"alg":"none"}') + "~." + b64url(claims()) + ".")]),
    ("a part of 4n+1 characters", [first(b64url('{"alg":"none"}') + ".AAAAA.")]),
    ("two parts", [first(b64url('{"alg":"none"}') + "." + b64url(claims()))]),
    ("four parts", [first(jws(claims()) + ".")]),
    ("'..'", [first(".." + b64url("x"))]),
    ("an empty header part", [first("." + b64url(claims()) + ".")]),
    ("a signature", [first(jws(claims(), signature="abc"))]),
    ("header {}", [first(jws(claims(), "{}"))]),
    ("header of no JSON", [first(jws(claims(), " "))]),
    ("header null", [first(jws(claims(), "null"))]),
    ("header an array", [first(jws(claims(), "[]"))]),
    ("header a string", [first(jws(claims(), '"x"'))]),
    ("alg HS256", [first(jws(claims(), '{"alg":"HS256"}'))]),
    ("alg a list", [first(jws(claims(), '{"alg":["none"]}'))]),
    ("alg null", [first(jws(claims(), '{"alg":null}'))]),
    ("content after the header", [first(jws(claims(), '{"alg":"none"}} x'))]),
    ("a top-level number then a space", [first(jws(claims(), "12 x"))]),
    ("a top-level number then ']'", [first(jws(claims(), "12]"))]),
    ("a top-level true then ']'", [first(jws(claims(), "true]"))]),
    ("a top-level truex", [first(jws(claims(), "truex"))]),
    ("no sub", [first(jws('{"exp":%d}' % EXP))]),
    ("a blank sub", [first(jws(claims(sub='" \\t "')))]),
    ("a sub with spaces", [first(jws(claims(sub='" a "')))]),
    ("sub true", [first(jws(claims(sub="true")))]),
    ("sub null", [first(jws(claims(sub="null")))]),
    ("sub a number", [first(jws(claims(sub="5")))]),
    ("sub a decimal", [first(jws(claims(sub="1.5")))]),
    ("sub an array", [first(jws(claims(sub='["a"]')))]),
    ("sub an object", [first(jws(claims(sub='{"a":1}')))]),
    ("no exp", [first(jws('{"sub":"alice"}'))]),
    ("exp a string", [first(jws(claims(exp='"%d"' % EXP)))]),
    ("exp null", [first(jws(claims(exp="null")))]),
    ("exp a list", [first(jws(claims(exp="[%d]" % EXP)))]),
    ("exp with a fraction", [first(jws(claims(exp="%d.7" % EXP)))]),
    ("exp past a long", [first(jws(claims(exp="9" * 30)))]),
    ("exp past a double", [first(jws(claims(exp="1e400")))]),
    ("exp far negative", [first(jws(claims(exp="-1e400")))]),
    ("exp now", [first(jws(claims(exp=NOW_MS // 1000)))]),
    ("exp a ms after now", [first(jws(claims(exp=(NOW_MS + 1) / 1000)))]),
    ("iat in the future", [first(jws(claims('"iat":%d' % (EXP - 50))))]),
    ("iat equal to exp", [first(jws(claims('"iat":%d' % EXP)))]),
    ("iat a string", [first(jws(claims('"iat":"1"')))]),
    ("a byte order mark", [first(jws(b"\xef\xbb\xbf" + claims().encode()))]),
    ("UTF-16", [first(jws(claims().encode("utf-16-le")))]),
    ("UTF-16 with a byte order mark", [first(jws(claims().encode("utf-16")))]),
    ("a byte that is not UTF-8 in a string", [first(jws(claims('"q":"\xff"').encode("latin-1")))]),
    ("a byte that is not UTF-8 after the object", [first(jws(claims().encode() + b" \xff"))]),
    ("a control character in a string", [first(jws(claims('"q":"a\x01b"')))]),
    ("an unknown escape", [first(jws(claims('"q":"\\x"')))]),
    ("escapes in sub", [first(jws(claims(sub='"\\u0041\\n\\/"')))]),
    ("a lone surrogate in sub", [first(jws(claims(sub='"a\\ud800"')))]),
    ("a surrogate pair in sub", [first(jws(claims(sub='"\\ud83d\\ude00"')))]),
    ("sub twice", [first(jws('{"sub":"a","sub":"b","exp":%d}' % EXP))]),
    ("nested 999 deep in the claims", [first(jws(claims('"x":' + "[" * 999 + "]" * 999)))]),
    ("nested 1000 deep in the claims", [first(jws(claims('"x":' + "[" * 1000 + "]" * 1000)))]),
    ("a name of 50000 characters", [first(jws(claims('"%s":1' % ("n" * 50000))))]),
    ("a name of 50001 characters", [first(jws(claims('"%s":1' % ("n" * 50001))))]),
    ("an integer of 1000 digits", [first(jws(claims('"q":-' + "9" * 1000)))]),
    ("an integer of 1001 digits", [first(jws(claims('"q":' + "9" * 1001)))]),
    ("a decimal of 1000 digits", [first(jws(claims('"q":1.' + "0" * 999)))]),
    ("a decimal of 1001 digits", [first(jws(claims('"q":1.' + "0" * 1000)))]),
    ("a number of 1001 digits with its exponent", [first(jws(claims('"q":1.' + "0" * 996 + "e1000")))]),
    ("NaN", [first(jws(claims('"q":NaN')))]),
    ("a leading zero", [first(jws(claims('"q":01')))]),
    ("a trailing comma", [first(jws(claims() [:-1] + ",}"))]),
    ("single quotes", [first(jws(claims().replace('"', "'")))]),
    ("a comment", [first(jws(claims('/*c*/"q":1')))]),
    ("an unclosed object", [first(jws(claims()[:-1]))]),
    ("a vertical tab between members", [first(jws(claims()[:-1] + ",\x0b\"q\":1}"))]),
    # A token of megabytes: a claim of 3 MB, then claims of 3 MB that are no JSON, then 1 MB of nesting.
    ("a token of megabytes", good('"pad":"%s"' % ("x" * 3_000_000))),
    ("megabytes that are no JSON", [first(jws("{" + "x" * 3_000_000))]),
    ("a megabyte of nesting", [first(jws("[" * 1_000_000))]),
]
SCOPE_JAAS = (MODULE + ' unsecuredValidatorRequiredScope=" read  write " unsecuredValidatorAllowableClockSkewMs='
              '"120000" unsecuredValidatorPrincipalClaimName=" user ";')
SCOPE_CASES = [
    ("the scope required", [first(jws('{"user":"u","exp":%d,"scope":["read"," write ","x"]}' % EXP))]),
    ("a scope missing, then ^A", [first(jws('{"user":"u","exp":%d,"scope":["read"]}' % EXP)), b"\x01"]),
    ("the scope as one string", [first(jws('{"user":"u","exp":%d,"scope":"read write"}' % EXP)), b"\x01"]),
    ("a scope of a number", [first(jws('{"user":"u","exp":%d,"scope":5}' % EXP))]),
    ("the principal claim missing", [first(jws('{"sub":"a","exp":%d,"scope":["read","write"]}' % EXP))]),
    ("expired within the clock skew", [first(jws('{"user":"u","exp":%d,"scope":["read","write"]}'
                                                 % (NOW_MS // 1000 - 60)))]),
    ("iat ahead within the clock skew", [first(jws('{"user":"u","exp":%d,"iat":%d,"scope":["read","write"]}'
                                                   % (EXP, NOW_MS // 1000 + 60)))]),
]
SCOPE_CLAIM_JAAS = MODULE + ' unsecuredValidatorRequiredScope="1.0E10 5 true null 2.5 1.0E-4 -0.0" ' \
                            'unsecuredValidatorScopeClaimName="roles";'
SCOPE_CLAIM_CASES = [
    ("scope items from other JSON types", [first(jws(claims(
        '"roles":[1e10, 5, true, null, 2.50, 0.0001, -0.0, {"a":1}, [1]]')))]),
    ("scope items, one missing", [first(jws(claims('"roles":[1e10, 5, true, null, 2.5, 1E-4]'))), b"\x01"]),
]
GROUPS = [(JAAS, DEFAULT_CASES), (SCOPE_JAAS, SCOPE_CASES), (SCOPE_CLAIM_JAAS, SCOPE_CLAIM_CASES)]


def ours(jaas, messages):
    """This broker's outcome of each message, in the probe's words (the refused and closed ones without their
    reasons, which neither broker sends)."""
    exchange = OAuthBearerExchange(validator_options(jaas), lambda: NOW_MS)
    out = []
    for message in messages:
        try:
            reply = exchange.step(message)
        except CredentialsRefused:
            out.append(("refused",))
        except ExchangeAborted:
            out.append(("closed",))
        except AuthenticationError as e:
            out.append(("failed", str(e)))
        else:
            out.append(("done", exchange.user, exchange.lifetime_ms) if exchange.done and not reply else
                       ("challenge", reply.decode()))
    return out


def run_probe(script):
    """Kafka's answers to a probe script (tests/kafka/OAuthBearerProbe.java), one line each."""
    version = kafka_jvm.KAFKA_VERSIONS[-1]
    try:
        cp = kafka_jvm.classpath(version, kafka_jvm.compiled(version, "OAuthBearerProbe"))
    except kafka_jvm.KafkaUnavailable as e:
        kafka_jvm.unavailable(str(e))
    run = subprocess.run(["java", "-cp", cp, "OAuthBearerProbe"], input="\n".join(script) + "\n",
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert len(lines) == len(script), run.stdout[-3000:] + run.stderr[-3000:]
    return lines


def unb64(text):
    return base64.b64decode(text).decode("utf-8", "replace")


def kafka_outcome(line):
    word, _, rest = line.partition(" ")
    if word in ("refused", "closed"):
        return (word,)
    if word == "failed":
        return (word, unb64(rest))
    if word == "challenge":
        return (word, unb64(rest))
    if word == "done":
        principal, lifetime = rest.split(" ")
        return (word, unb64(principal), int(lifetime))
    return (word, rest)


def b64(data):
    return base64.b64encode(data if isinstance(data, bytes) else data.encode()).decode()


@pytest.fixture(scope="module")
def kafka_answers():
    """Kafka's answers to every probe line of this module, from one run of the probe: the exchanges of GROUPS
    ({case name: outcomes}), the JAAS_TEXTS (one line each), then one login under each of OPTION_SCRIPTS."""
    script, slots = [], []
    for jaas, cases in GROUPS:
        script += [f"jaas {b64(jaas)}", f"now {NOW_MS}"]
        slots += [None, None]
        for name, messages in cases:
            script.append("new")
            slots.append(None)
            script += [f"step {b64(message)}" for message in messages]
            slots += [name] * len(messages)
    script += [f"jaas {b64(text)}" for text in JAAS_TEXTS]
    slots += ["jaas"] * len(JAAS_TEXTS)
    for jaas in OPTION_SCRIPTS:
        script += [f"jaas {b64(jaas)}", f"now {NOW_MS}", "new", f"step {b64(good()[0])}"]
        slots += [None, None, None, "options"]
    exchanges, jaas_lines, option_lines = {}, [], []
    for line, slot in zip(run_probe(script), slots):
        if slot is None:
            assert line == "-" or line.startswith("options"), line
        elif slot == "jaas":
            jaas_lines.append(line)
        elif slot == "options":
            option_lines.append(line)
        else:
            exchanges.setdefault(slot, []).append(kafka_outcome(line))
    return exchanges, jaas_lines, option_lines


def test_the_exchange_answers_as_kafkas_oauthbearer_server(kafka_answers):
    """Every case's client messages, given to Kafka 4.3.1's OAuthBearerSaslServer (over its unsecured validator,
    clock at NOW_MS) and to this broker's exchange, get the same outcomes: the challenge bytes, the principal and
    the token's lifetime, the error message sent, or a refusal / a closed connection."""
    kafka, wrong = kafka_answers[0], []
    for jaas, cases in GROUPS:
        for name, messages in cases:
            mine = ours(jaas, messages)
            if mine != kafka[name]:
                wrong.append(f"{name}: Kafka {str(kafka[name])[:300]}, this broker {str(mine)[:300]}")
    assert not wrong, "\n".join(wrong)
    outcomes = {outcome[0] for outcomes in kafka.values() for outcome in outcomes}
    assert outcomes == {"done", "challenge", "failed", "refused", "closed"}  # every kind is tried
    assert kafka["a token of megabytes"] == [("done", "alice", EXP * 1000)]
    assert kafka["a lone surrogate in sub"] == [("done", "a?", EXP * 1000)]


# JAAS configs of a listener's oauthbearer mechanism, as Kafka reads them at start.
JAAS_TEXTS = [
    "x required;", "", "   ", "x", "x required", "x required a", "x required a=", "x required a=b",
    'x required a="b c";', "x required a='b c';", "x required a=5;", "x required a=-5;", "x required a=-b;",
    "x required a=b.c-d$e_f;", "x required a=b1;", "x required a=.b;", "x required a=_b;", "x bogus;",
    "x REQUIRED;", "x Optional;", "x required; y required;", "// c\nx required a=b;",
    "/* c */ x required /* d */ a = b ;", "x required a=b // c\n;", "x required a=b / c\n;",
    'x required a="b\\"c";', 'x required a="b\\nc";', 'x required a="b\\101c";', 'x required a="b\\x";',
    'x required a="b\nc";', 'x required a="unterminated;', "x required a=b c=d;", "x required =b;",
    "x required a==b;", '"x" required;', "x 5;", "x required a=b;;", "x required a=\u00e9t\u00e9;",
    "x required a=\u4e2d;", "x required a=b\u0080;", "x required a=b c;", "x required a=-;",
    SCOPE_JAAS, SCOPE_CLAIM_JAAS,
]


def test_jaas_configs_are_read_as_kafka_reads_them(kafka_answers):
    """Each JAAS config gives this broker the options Kafka's JaasContext gives its validator, or is refused
    where Kafka refuses it at start, with Kafka's message."""
    wrong = []
    for text, line in zip(JAAS_TEXTS, kafka_answers[1]):
        word, _, rest = line.partition(" ")
        try:
            options = validator_options(text).raw
            mine = ("options", options)
        except Invalid as e:
            mine = ("invalid", str(e))
        if word == "options":
            kafka = ("options", {unb64(k): unb64(v) for k, v in (item.split(":") for item in rest.split())})
        else:
            message = unb64(rest)
            kafka = ("invalid", "JAAS config property contains 2 login modules, should be 1 module"
                     if message == "2 modules" else message)
        if mine != kafka:
            wrong.append(f"{text!r}: Kafka {kafka}, this broker {mine}")
    assert not wrong, "\n".join(wrong)


OPTION_ERRORS = [
    MODULE + ' unsecuredValidatorAllowableClockSkewMs="-1";',
    MODULE + ' unsecuredValidatorAllowableClockSkewMs="x";',
    MODULE + ' unsecuredValidatorAllowableClockSkewMs="99999999999";',
    MODULE + ' unsecuredValidatorRequiredScope="a\\\\b";',
    MODULE + ' unsecuredValidatorRequiredScope="a\\"b";',
]


OPTION_SCRIPTS = OPTION_ERRORS + [MODULE + ' unsecuredValidatorAllowableClockSkewMs=" +5 ";']


def test_options_kafka_fails_every_login_with_are_refused_at_start(kafka_answers):
    """Options Kafka takes at start but that make its validator throw at every login (the connection closed,
    unanswered) are refused at start here, naming the key; a skew Kafka takes is taken."""
    assert [line.split(" ")[0] for line in kafka_answers[2]] == ["closed"] * len(OPTION_ERRORS) + ["done"]
    for jaas in OPTION_ERRORS:
        key = "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config"
        with pytest.raises(ConfigError) as refused:
            BrokerConfig({key: jaas})
        assert key in str(refused.value) and "unsecuredValidator" in str(refused.value)
        assert [problem.kafka for problem in refused.value.problems] == [False]
    assert validator_options(MODULE + ' unsecuredValidatorAllowableClockSkewMs=" +5 ";').clock_skew_ms == 5


@pytest.mark.parametrize("key, value", [
    ("sasl.oauthbearer.jwks.endpoint.url", "https://keys.example/jwks"),
    ("listener.name.sasl_plaintext.sasl.oauthbearer.jwks.endpoint.url", "file:///keys.json"),
    ("sasl.oauthbearer.expected.audience", "kafka"),
    ("sasl.oauthbearer.expected.issuer", "https://issuer.example"),
    ("sasl.oauthbearer.jwt.validator.class", "org.apache.kafka.common.security.oauthbearer.BrokerJwtValidator"),
    ("listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class",
     "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"),
])
def test_a_secured_setup_is_refused_at_start(key, value):
    """The settings of signed tokens (a JWKS endpoint, issuer, audience, a callback handler) are not built: the
    broker refuses to start with them, saying so, rather than taking unsigned tokens in their stead."""
    with pytest.raises(ConfigError) as refused:
        BrokerConfig({key: value})
    assert key in str(refused.value) and "not" in str(refused.value) and "unsecured" in str(refused.value)


def test_the_unsecured_setup_kafka_names_is_taken():
    config = BrokerConfig({
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "OAUTHBEARER", "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": JAAS,
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.internals.unsecured."
            "OAuthBearerUnsecuredValidatorCallbackHandler",
        "sasl.oauthbearer.jwt.validator.class": "org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator",
        "listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms": "60000"})
    assert config["sasl.enabled.mechanisms"] == "OAUTHBEARER"
    with pytest.raises(ConfigError, match="not a long"):
        BrokerConfig({"listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms": "soon"})


def test_bounded_where_kafka_is_not():
    """An authzid of 100,000 characters (Kafka's regular expression overflows its stack on a few thousand, and
    its broker never answers) is read as any other; nesting a million deep is refused as too deep, at once."""
    exchange = OAuthBearerExchange(None, lambda: NOW_MS)
    with pytest.raises(AuthenticationError, match="authorization id"):
        exchange.step(first(jws(claims()), "b" * 100_000))
    started = time.monotonic()
    assert exchange.step(first(jws("[" * 5_000_000 + "]" * 5_000_000))) == b'{"status":"invalid_token"}'
    assert time.monotonic() - started < 10
    assert parse_json(b'{"a":[1,{"b":null}],"c":"\\ud83d\\ude00"} trailing') == {"a": [1, {"b": None}],
                                                                                 "c": "\U0001F600"}
    assert jaas_entries('m required a="1";') == [("m", "required", {"a": "1"})]


# ---- sessions: lifetime and re-authentication (security.Session), without sockets


class Clock:
    def __init__(self):
        self.seconds, self.wall = 1000.0, NOW_MS

    def advance(self, seconds):
        self.seconds += seconds
        self.wall += int(seconds * 1000)


def session(credentials=None, listener="SASL_PLAINTEXT", clock=None):
    clock = clock or Clock()
    credentials = credentials or Credentials()
    credentials.add_plain({"alice": "pw", "bob": "pw"})
    return Session(Listener(listener, "127.0.0.1", 0, "SASL_PLAINTEXT"), credentials,
                   ("PLAIN", "OAUTHBEARER"), clock=lambda: clock.seconds, wall_ms=lambda: clock.wall), clock


def login(s, mechanism, token):
    s.start(mechanism, 1)
    return s.step(token)


def test_session_lifetime_as_kafka_sets_it():
    """Kafka's rule: the token's exp decides (exp - now) whether or not connections.max.reauth.ms is set, the
    smaller of the two when it is; a password only with connections.max.reauth.ms; never below 0."""
    s, clock = session()
    login(s, "OAUTHBEARER", first(jws(claims(exp=EXP))))
    assert (s.principal, s.lifetime_ms) == ("User:alice", 100_000) and s.authenticated
    clock.advance(100.001)
    assert s.expired and s.lapsed and not s.authenticated
    s, _ = session()
    login(s, "PLAIN", b"\0alice\0pw")
    assert (s.lifetime_ms, s.expires) == (0, None)
    credentials = Credentials()
    credentials.max_reauth_ms.update({(None, None): 30_000, ("SASL_PLAINTEXT", "OAUTHBEARER"): 60_000})
    s, _ = session(credentials)
    login(s, "PLAIN", b"\0alice\0pw")
    assert s.lifetime_ms == 30_000
    s, _ = session(credentials)
    login(s, "OAUTHBEARER", first(jws(claims(exp=EXP))))
    assert s.lifetime_ms == 60_000
    credentials.oauthbearer["SASL_PLAINTEXT"] = validator_options(
        MODULE + ' unsecuredValidatorAllowableClockSkewMs="120000";')
    s, clock = session(credentials)
    login(s, "OAUTHBEARER", first(jws(claims(exp=NOW_MS // 1000 - 60))))  # expired, within the skew
    assert s.lifetime_ms == 0 and s.principal == "User:alice"
    clock.advance(0.001)
    assert s.lapsed
    s, _ = session()  # a token ending in 300 years: Kafka's nanosecond arithmetic overflows, its broker closes
    with pytest.raises(ExchangeAborted):
        login(s, "OAUTHBEARER", first(jws(claims(exp=NOW_MS // 1000 + 300 * 366 * 86400))))


def test_reauthentication_in_a_session():
    s, clock = session()
    login(s, "OAUTHBEARER", first(jws(claims(exp=EXP))))
    assert s.may_reauthenticate()  # the first time at once
    s.begin_reauthentication()
    assert not s.authenticated and s.principal == "User:alice"
    assert login(s, "OAUTHBEARER", first(jws(claims(exp=EXP + 50)))) == b"" and s.lifetime_ms == 150_000
    assert s.authenticated and not s.may_reauthenticate()  # at most once a second
    clock.advance(1)
    s.begin_reauthentication()
    with pytest.raises(AuthenticationError, match=r"^Cannot change principals during re-authentication from "
                                                  r"User\.alice: User\.bob$"):
        login(s, "OAUTHBEARER", first(jws(claims(sub='"bob"'))))
    s, clock = session()
    login(s, "OAUTHBEARER", first(jws(claims())))
    s.begin_reauthentication()
    with pytest.raises(ExchangeAborted, match="not supported for re-authentication of mechanism 'OAUTHBEARER'"):
        login(s, "PLAIN", b"\0alice\0pw")
    s, clock = session()
    login(s, "OAUTHBEARER", first(jws(claims())))
    s.begin_reauthentication()
    s.start("OAUTHBEARER", 1)
    with pytest.raises(AuthenticationError, match="during re-authentication due to invalid credentials"):
        s.step(b"\x01")
    s, _ = session()
    s.start("OAUTHBEARER", 1)
    with pytest.raises(ExchangeAborted, match="sasl.server.max.receive.size"):
        s.step(first(jws(claims('"pad":"%s"' % ("x" * 600_000)))))


# ---- over sockets


SCOPE_ONLY_JAAS = MODULE + ' unsecuredValidatorRequiredScope="read";'


@pytest.fixture(scope="module")
def oauth_broker():
    """Two SASL listeners: SASL_PLAINTEXT with Kafka's default options, REAUTH with connections.max.reauth.ms
    (60 s), a required scope, and PLAIN too."""
    overrides = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0,REAUTH://127.0.0.1:0",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,REAUTH:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "OAUTHBEARER,PLAIN",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": JAAS,
        "listener.name.reauth.oauthbearer.sasl.jaas.config": SCOPE_ONLY_JAAS,
        "listener.name.reauth.plain.sasl.jaas.config": JAAS_PLAIN,
        "listener.name.reauth.connections.max.reauth.ms": "60000",
        "connection.failed.authentication.delay.ms": "0",
    }
    with Broker(overrides) as broker:
        yield broker


def connect(broker, listener="SASL_PLAINTEXT"):
    raw = Raw(broker)
    raw.sock.close()
    raw.sock = socket.create_connection((broker.host, broker.ports[listener]), timeout=10)
    return raw


def authenticate(raw, token, version=2, mechanism="OAUTHBEARER"):
    assert raw.ask(SaslHandshakeRequest(mechanism=mechanism), 1).error_code == 0
    return raw.ask(SaslAuthenticateRequest(auth_bytes=first(token) if mechanism == "OAUTHBEARER" else token),
                   version)


def now_jws(seconds, sub="alice", extra=""):
    # exp on a whole millisecond, rounded down: Kafka rounds exp * 1000 to the nearest ms, which would otherwise let
    # the lifetime it gives exceed `seconds` by one ms.
    exp_ms = (time.time_ns() + int(seconds * 1e9)) // 1_000_000
    return jws(claims(extra, sub=f'"{sub}"', exp=f"{exp_ms // 1000}.{exp_ms % 1000:03d}"))


def test_tokens_over_sasl_authenticate(oauth_broker):
    raw = connect(oauth_broker)
    answer = authenticate(raw, now_jws(3600))
    assert answer.error_code == 0 and 3_590_000 < answer.session_lifetime_ms <= 3_600_000
    assert raw.ask(MetadataRequest(topics=None), 12).brokers
    answer = raw.ask(SaslAuthenticateRequest(auth_bytes=b"x"), 2)
    assert (answer.error_code, answer.error_message) == (
        errors.ILLEGAL_SASL_STATE.code, "SaslAuthenticate request received after successful authentication")
    raw.close()

    raw = connect(oauth_broker)
    challenge = authenticate(raw, now_jws(-60))
    assert (challenge.error_code, challenge.auth_bytes, challenge.session_lifetime_ms) == (
        0, b'{"status":"invalid_token"}', 0)
    failed = raw.ask(SaslAuthenticateRequest(auth_bytes=b"\x01"), 2)
    assert (failed.error_code, failed.error_message) == (errors.SASL_AUTHENTICATION_FAILED.code,
                                                         '{"status":"invalid_token"}')
    assert raw.events() is None
    raw.close()

    raw = connect(oauth_broker)  # no alg: Kafka's broker closes the connection unanswered
    assert raw.ask(SaslHandshakeRequest(mechanism="OAUTHBEARER"), 1).error_code == 0
    assert raw.ask(SaslAuthenticateRequest(auth_bytes=first(jws(claims(), "{}"))), 2) is None
    raw.close()

    raw = connect(oauth_broker)
    assert raw.ask(SaslHandshakeRequest(mechanism="OAUTHBEARER"), 1).error_code == 0
    answer = raw.ask(SaslAuthenticateRequest(auth_bytes=first(now_jws(60), "bob")), 2)
    assert answer.error_message == ("Authentication failed: Client requested an authorization id (bob) that is "
                                    "different from the token's principal name (alice)")
    raw.close()

    raw = connect(oauth_broker)  # SaslHandshake v0: raw tokens
    assert raw.ask(SaslHandshakeRequest(mechanism="OAUTHBEARER"), 0).error_code == 0
    assert raw.raw(first(now_jws(-60))).data == b'{"status":"invalid_token"}'
    raw.sock.sendall(b"\0\0\0\1\1")  # ^A, framed by its size alone: the refusal ends the connection, unanswered
    assert raw.sock.recv(100) == b""
    raw.close()
    raw = connect(oauth_broker)
    assert raw.ask(SaslHandshakeRequest(mechanism="OAUTHBEARER"), 0).error_code == 0
    assert raw.raw(first(now_jws(60))).data == b""
    assert raw.ask(MetadataRequest(topics=None), 12).brokers
    raw.close()

    raw = connect(oauth_broker)
    assert raw.ask(SaslHandshakeRequest(mechanism="OAUTHBEARER"), 1).error_code == 0
    answer = raw.ask(SaslAuthenticateRequest(auth_bytes=b"n,,auth=Bearer x\x01\x01"), 2)
    assert (answer.error_code, answer.error_message) == (
        errors.SASL_AUTHENTICATION_FAILED.code,
        "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER")
    raw.close()


def test_a_request_over_sasl_server_max_receive_size_is_not_answered(oauth_broker):
    """A SaslAuthenticate over 524288 bytes (sasl.server.max.receive.size) closes the connection unanswered, as
    Kafka closes it; one a little under is read."""
    for pad, answered in ((530_000, False), (500_000, True)):
        raw = connect(oauth_broker)
        answer = authenticate(raw, now_jws(60, extra='"pad":"%s"' % ("x" * int(pad * 3 / 4))))
        assert (answer is not None) == answered
        if answered:
            assert answer.error_code == 0
        raw.close()


def test_reauthentication_over_sockets(oauth_broker):
    """KIP-368 as Kafka 4.3.1 runs it: a SaslHandshake on an authenticated connection begins again (the first at
    once, then at most once a second: ILLEGAL_SASL_STATE with no mechanisms, the connection going on), the same
    principal gets a new lifetime, another principal fails it and the connection, and so does another
    mechanism (unanswered) or a bad token (the challenge, then the failure)."""
    raw = connect(oauth_broker)
    assert authenticate(raw, now_jws(3600)).error_code == 0
    again = authenticate(raw, now_jws(100))
    assert again.error_code == 0 and 95_000 < again.session_lifetime_ms <= 100_000
    assert raw.ask(MetadataRequest(topics=None), 12).brokers
    refused = raw.ask(SaslHandshakeRequest(mechanism="OAUTHBEARER"), 1)
    assert (refused.error_code, list(refused.mechanisms)) == (errors.ILLEGAL_SASL_STATE.code, [])
    assert raw.ask(MetadataRequest(topics=None), 12).brokers
    time.sleep(1.05)
    other = authenticate(raw, now_jws(100, sub="bob"))
    assert (other.error_code, other.error_message) == (
        errors.SASL_AUTHENTICATION_FAILED.code,
        "Cannot change principals during re-authentication from User.alice: User.bob")
    assert raw.events() is None
    raw.close()

    raw = connect(oauth_broker)  # another mechanism: its handshake is answered, its first token is not
    assert authenticate(raw, now_jws(3600)).error_code == 0
    assert raw.ask(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
    assert raw.ask(SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"), 2) is None
    raw.close()

    raw = connect(oauth_broker)  # a mechanism the listener does not enable: the handshake is not answered
    assert authenticate(raw, now_jws(3600)).error_code == 0
    assert raw.ask(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1) is None
    raw.close()

    raw = connect(oauth_broker)
    assert authenticate(raw, now_jws(3600)).error_code == 0
    assert authenticate(raw, now_jws(-100)).auth_bytes == b'{"status":"invalid_token"}'
    failed = raw.ask(SaslAuthenticateRequest(auth_bytes=b"\x01"), 2)
    assert (failed.error_code, failed.error_message) == (errors.SASL_AUTHENTICATION_FAILED.code,
                                                         '{"status":"invalid_token"}')
    assert raw.events() is None
    raw.close()


def test_a_session_that_ended_is_closed_at_its_next_request(oauth_broker):
    """Tokens ending 1.2 s on: after that, Metadata or ApiVersions closes the connection (a v0 SaslAuthenticate's
    session too, though v0 cannot say its lifetime); a SaslHandshake begins again and the connection goes on."""
    metadata, versions, handshake, v0 = (connect(oauth_broker) for _ in range(4))
    for raw in (metadata, versions, handshake):
        answer = authenticate(raw, now_jws(1.2))
        assert answer.error_code == 0 and 0 < answer.session_lifetime_ms <= 1200
    assert authenticate(v0, now_jws(1.2), version=0).error_code == 0
    assert metadata.ask(MetadataRequest(topics=None), 12).brokers
    time.sleep(1.5)
    assert metadata.ask(MetadataRequest(topics=None), 12) is None
    assert versions.ask(ApiVersionsRequest(), 3) is None
    assert v0.ask(MetadataRequest(topics=None), 12) is None
    again = authenticate(handshake, now_jws(100))
    assert again.error_code == 0 and again.session_lifetime_ms > 95_000
    assert handshake.ask(MetadataRequest(topics=None), 12).brokers
    for raw in (metadata, versions, handshake, v0):
        raw.close()


def test_connections_max_reauth_ms_and_a_required_scope(oauth_broker):
    """On REAUTH (connections.max.reauth.ms=60000): a password's session lasts 60 s, a token's the smaller of its
    exp and 60 s; a token without the required scope gets insufficient_scope."""
    raw = connect(oauth_broker, "REAUTH")
    assert authenticate(raw, b"\0alice\0alice-secret", mechanism="PLAIN").session_lifetime_ms == 60_000
    raw.close()
    raw = connect(oauth_broker, "REAUTH")
    assert authenticate(raw, now_jws(3600, extra='"scope":["read"]')).session_lifetime_ms == 60_000
    raw.close()
    raw = connect(oauth_broker, "REAUTH")
    answer = authenticate(raw, now_jws(30, extra='"scope":["read"]'))
    assert 25_000 < answer.session_lifetime_ms <= 30_000
    raw.close()
    raw = connect(oauth_broker, "REAUTH")
    assert authenticate(raw, now_jws(3600)).auth_bytes == b'{"status":"insufficient_scope", "scope":"[read]"}'
    raw.close()


def test_confluent_kafka_with_its_unsecured_jwt(oauth_broker):
    """librdkafka's own unsecured JWT (sasl.oauthbearer.config principal=alice): produce and consume; on the
    listener that requires a scope, without one it is refused with the broker's reason."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient
    settings = {"bootstrap.servers": f"127.0.0.1:{oauth_broker.ports['SASL_PLAINTEXT']}",
                "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                "sasl.oauthbearer.method": "default", "enable.sasl.oauthbearer.unsecure.jwt": True,
                "sasl.oauthbearer.config": "principal=alice"}
    topic = f"oauth-{uuid.uuid4().hex[:8]}"
    confluent_round_trip(settings, topic, b"over oauthbearer")

    seen = []
    admin = AdminClient({
        **settings, "bootstrap.servers": f"127.0.0.1:{oauth_broker.ports['REAUTH']}",
        "reconnect.backoff.ms": 1000, "error_cb": lambda error: seen.append(str(error))})
    with pytest.raises(confluent_kafka.KafkaException):
        admin.list_topics(timeout=2)
    admin.poll(1)  # serves error_cb
    assert any("insufficient_scope" in error for error in seen), seen
    scoped = AdminClient({
        **settings, "bootstrap.servers": f"127.0.0.1:{oauth_broker.ports['REAUTH']}",
        "sasl.oauthbearer.config": "principal=alice scope=read"})
    assert topic in scoped.list_topics(timeout=20).topics


def test_java_clients_over_oauthbearer(oauth_broker, tmp_path):
    """The Java clients (4.3.1), with Kafka's unsecured login (unsecuredLoginStringClaim_sub): the admin makes
    a topic, the idempotent producer writes 30 records to it."""
    cp = kafka_jvm.program(kafka_jvm.KAFKA_VERSIONS[-1], "Clients")
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
                      f'sasl.jaas.config={MODULE} unsecuredLoginStringClaim_sub="alice";\n')
    topic = f"java-oauth-{uuid.uuid4().hex[:8]}"
    for mode in ("admin", "produce"):
        run = subprocess.run(["java", f"-Dclient.config={config}", "-cp", cp, "Clients",
                              f"127.0.0.1:{oauth_broker.ports['SASL_PLAINTEXT']}", mode, topic],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, f"Java {mode} over OAUTHBEARER failed:\n{run.stderr[-3000:]}"
