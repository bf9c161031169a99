"""Listeners, TLS stores and per-address connection limits changed while the broker runs (kafkaproto/broker/
listeners.py and server.py), as Kafka 4.3 changes them: a TLS listener's new key store serves the next
connections (checked first as Kafka's own SslFactory checks it, run here from Kafka's jars), a listener named anew
is opened and one no longer named is closed with its connections, new max.connections.per.ip.overrides meet the
next connection; and each comes back after a restart. The same changes are compared with a Kafka broker's answers
in test_broker_differential_configs.py.
"""

import shutil
import socket
import ssl
import subprocess
import time

import pytest

from kafkaproto import errors
from kafkaproto.broker import Broker
from kafkaproto.broker.config import BrokerConfig
from kafkaproto.broker.listeners import check_change
from kafkaproto.broker.security import certificate_identity, keystore_certificate
from kafkaproto.messages import (ApiVersionsRequest, DescribeClusterRequest, DescribeConfigsRequest,
                                 IncrementalAlterConfigsRequest, MetadataRequest, SaslHandshakeRequest)

import kafka_jvm
from test_broker_bounds import closed_by_broker
from test_kafka_broker import RawClient

pytestmark = pytest.mark.above_the_codecs

NODE = "1"
SAN = "subjectAltName=IP:127.0.0.1,DNS:localhost\n"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """Two CAs, and certificates made with openssl: a (for CN=localhost, by the first CA), b (the same subject and
    names, by the second), other (another subject), narrow and wide (fewer and more alternative names), client (a
    client's, by the first CA). Each X's key store is X-keystore.pem (its key, then its certificate)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is needed to make test certificates")
    d = tmp_path_factory.mktemp("live-tls")

    def run(*args):
        subprocess.run([openssl, *args], check=True, capture_output=True, cwd=d)

    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca1", "ca2"):
        run("req", "-x509", *key, "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-days", "2", "-subj", f"/CN=test {ca}")
    for name, ca, subject, names in (("a", "ca1", "localhost", SAN), ("b", "ca2", "localhost", SAN),
                                     ("other", "ca2", "elsewhere", SAN),
                                     ("narrow", "ca2", "localhost", "subjectAltName=IP:127.0.0.1\n"),
                                     ("wide", "ca2", "localhost", SAN.strip() + ",DNS:kafka.example\n"),
                                     ("client", "ca1", "client", SAN)):
        run("req", *key, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={subject}")
        (d / f"{name}.cnf").write_text(names)
        run("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
            "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.cnf")
        (d / f"{name}-keystore.pem").write_text((d / f"{name}.key").read_text() + (d / f"{name}.pem").read_text())
    return d


class TlsClient(RawClient):
    """RawClient over TLS, trusting cafile only; certfile: the client's own certificate and key."""

    def __init__(self, port, cafile, certfile=None):
        context = ssl.create_default_context(cafile=str(cafile))
        if certfile is not None:
            context.load_cert_chain(str(certfile))
        self.sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                                        server_hostname="127.0.0.1")
        self.correlation_id = 0
        self.client_id = "live-listeners"


def answers(client):
    """Whether a client's connection serves a request (ApiVersions)."""
    try:
        return client.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3
                           ).body.error_code == 0
    except (OSError, ConnectionError):
        return False


def plain_answers(port):
    """Whether a new plain-text connection is served."""
    try:
        client = RawClient(port)
    except OSError:
        return False
    try:
        return answers(client)
    finally:
        client.close()


def tls_answers(port, cafile, certfile=None):
    """Whether a new TLS connection, trusting cafile only, is served."""
    try:
        client = TlsClient(port, cafile, certfile)
    except (OSError, ConnectionError):  # ssl.SSLError among them: the broker's certificate is not trusted
        return False
    try:
        return answers(client)
    finally:
        client.close()


def alter(client, name, configs, validate_only=False):
    """(error code, message) of an IncrementalAlterConfigs of broker name: {key: value, or None to delete}."""
    body = IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[
        IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=4, resource_name=name, configs=[
            IncrementalAlterConfigsRequest.AlterableConfig(name=key, config_operation=0 if value is not None else 1,
                                                           value=value) for key, value in configs.items()])])
    response = client.call(body, 1).body.responses[0]
    return response.error_code, response.error_message


def described(client, keys):
    body = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=4, resource_name=NODE, configuration_keys=keys)])
    return {c.name: (c.value, c.config_source, c.read_only) for c in client.call(body, 4).body.results[0].configs}


def eventually(check, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# (what the listener starts with, the change): ssl.* keys, a value of "" removes one, "@NAME" is the file NAME's
# text; start keys named ssl.allow.* are the broker's (read only at start), the others the listener's.
STORE_CASES = [
    ({"ssl.keystore.location": "a-keystore.pem"}, {"ssl.keystore.location": "b-keystore.pem"}),
    ({"ssl.keystore.location": "a-keystore.pem"}, {"ssl.keystore.location": "other-keystore.pem"}),
    ({"ssl.keystore.location": "a-keystore.pem"}, {"ssl.keystore.location": "narrow-keystore.pem"}),
    ({"ssl.keystore.location": "a-keystore.pem"}, {"ssl.keystore.location": "wide-keystore.pem"}),
    ({"ssl.keystore.location": "a-keystore.pem"}, {"ssl.keystore.location": "missing.pem"}),
    ({"ssl.keystore.location": "a-keystore.pem"}, {"ssl.keystore.location": "ca1.pem"}),
    ({"ssl.keystore.location": "a-keystore.pem"}, {"ssl.keystore.location": ""}),
    ({"ssl.keystore.location": "a-keystore.pem"}, {"ssl.truststore.location": "ca1.pem"}),
    ({"ssl.keystore.location": "a-keystore.pem"}, {"ssl.keystore.location": "", "ssl.keystore.key": "@b.key",
                                                   "ssl.keystore.certificate.chain": "@b.pem"}),
    ({"ssl.keystore.location": "a-keystore.pem"}, {"ssl.keystore.location": "", "ssl.keystore.key": "@other.key",
                                                   "ssl.keystore.certificate.chain": "@other.pem"}),
    ({"ssl.keystore.location": "a-keystore.pem", "ssl.truststore.location": "ca1.pem"},
     {"ssl.truststore.location": "ca2.pem"}),
    ({"ssl.keystore.location": "a-keystore.pem", "ssl.truststore.location": "ca1.pem"},
     {"ssl.truststore.location": ""}),
    ({"ssl.keystore.location": "a-keystore.pem", "ssl.truststore.location": "ca1.pem"},
     {"ssl.truststore.location": "missing.pem"}),
    ({"ssl.keystore.location": "a-keystore.pem", "ssl.allow.dn.changes": "true"},
     {"ssl.keystore.location": "other-keystore.pem"}),
    ({"ssl.keystore.location": "a-keystore.pem", "ssl.allow.san.changes": "true"},
     {"ssl.keystore.location": "narrow-keystore.pem"}),
]


def test_new_stores_are_checked_as_kafka_checks_them(certs):
    """Each change of a TLS listener's stores is taken or refused by this broker's check (listeners.check_change)
    as Kafka 4.3.1's SslFactory takes or refuses it (tests/kafka/SslReconfigure.java, on Kafka's jars): a new
    certificate of the same subject and names is taken, another subject or fewer names are refused unless
    ssl.allow.dn.changes / ssl.allow.san.changes, stores that do not load are refused, the key store cannot be
    removed, a trust store not added where there was none (and may be removed)."""
    version = kafka_jvm.KAFKA_VERSIONS[-1]
    try:
        cp = kafka_jvm.classpath(version, kafka_jvm.compiled(version, "SslReconfigure"))
    except kafka_jvm.KafkaUnavailable as e:
        kafka_jvm.unavailable(str(e))

    def path(key, value):  # as the script gives it
        if value.startswith("@"):
            return "@" + str(certs / value[1:])
        return str(certs / value) if value and key.endswith(".location") else value

    def text(key, value):  # as a config's value
        if value.startswith("@"):
            return (certs / value[1:]).read_text()
        return str(certs / value) if value and key.endswith(".location") else value or None

    script, ours = [], []
    for start, change in STORE_CASES:
        typed = {"ssl.keystore.type": "PEM", "ssl.truststore.type": "PEM", **start}
        script.append("start " + " ".join(f"{k}={path(k, v)}" for k, v in typed.items()))
        script.append("change " + " ".join(f"{k}={path(k, v)}" for k, v in change.items()))
        config = BrokerConfig({"listeners": "SSL://127.0.0.1:0", "listener.security.protocol.map": "SSL:SSL",
                               **{k: v for k, v in start.items() if k.startswith("ssl.allow.")}})
        before = {f"listener.name.ssl.{k}": text(k, v) for k, v in start.items() if not k.startswith("ssl.allow.")}
        after = {**before, **{f"listener.name.ssl.{k}": text(k, v) for k, v in change.items()}}
        after = {k: v for k, v in after.items() if v is not None}
        ours.append(check_change(config, before, after))
    run = subprocess.run(["java", "-cp", cp, "SslReconfigure"], input="\n".join(script) + "\n", capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert len(lines) == 2 * len(STORE_CASES), run.stdout
    wrong = []
    for (start, change), started, kafka, problems in zip(STORE_CASES, lines[::2], lines[1::2], ours):
        assert started == "ok", (start, started)
        assert kafka == "ok" or kafka.startswith("refused: "), kafka
        if (kafka == "ok") != (not problems):
            wrong.append(f"{start} then {change}: Kafka {kafka!r}, this broker {[str(p) for p in problems]}")
    assert not wrong, "\n".join(wrong)
    assert sum(line == "ok" for line in lines[1::2]) == 7  # both outcomes are tried


def test_a_certificate_that_cannot_be_read_is_a_clear_error(certs):
    """The certificate reader behind the subject check (security.certificate_identity) reads a real certificate's
    subject and names, and refuses every cut of it, and one whose length runs past its end, with ValueError."""
    der = keystore_certificate({"ssl.keystore.location": str(certs / "wide-keystore.pem")}.get)
    subject, text, names = certificate_identity(der)
    assert text == "CN=localhost" and subject == (((("2.5.4.3", "localhost"),),))
    assert names == {(0x82, b"localhost"), (0x82, b"kafka.example"), (0x87, bytes([127, 0, 0, 1]))}
    for cut in range(len(der)):
        with pytest.raises(ValueError):
            certificate_identity(der[:cut])
    with pytest.raises(ValueError, match="longer than the certificate"):
        certificate_identity(b"\x30\x84\x7f\xff\xff\xff" + der[4:])


def test_key_store_changed_while_running(certs, tmp_path):
    """A TLS listener's new key store (by the second CA) serves the next connections, checked first; the open
    connection goes on; the base key is refused, as Kafka refuses it (only per listener); after a restart the
    listener starts with the new store."""
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL",
                 "ssl.keystore.location": str(certs / "a-keystore.pem"), "log.dirs": str(tmp_path / "data")}
    key = "listener.name.ssl.ssl.keystore.location"
    with Broker(overrides) as broker:
        port = broker.ports["SSL"]
        admin = RawClient(broker.port)
        before = TlsClient(port, certs / "ca1.pem")
        assert answers(before) and not tls_answers(port, certs / "ca2.pem")
        for refused in ({key: str(certs / "other-keystore.pem")}, {key: str(certs / "narrow-keystore.pem")},
                        {key: str(certs / "missing.pem")}, {"ssl.keystore.location": str(certs / "b-keystore.pem")}):
            code, message = alter(admin, NODE, refused)
            assert code == errors.INVALID_REQUEST.code and message, refused
        assert alter(admin, "", {key: str(certs / "b-keystore.pem")})[0] == errors.INVALID_REQUEST.code
        assert alter(admin, NODE, {key: str(certs / "b-keystore.pem")}, validate_only=True) == (0, None)
        assert tls_answers(port, certs / "ca1.pem")  # validating only changes nothing
        assert alter(admin, NODE, {key: str(certs / "b-keystore.pem")}) == (0, None)
        assert tls_answers(port, certs / "ca2.pem") and not tls_answers(port, certs / "ca1.pem")
        assert answers(before)  # the open connection keeps its session
        assert described(admin, [key, "ssl.keystore.location"]) == {
            key: (str(certs / "b-keystore.pem"), 2, True),  # DYNAMIC_BROKER_CONFIG; a listener's, as in Kafka
            "ssl.keystore.location": (str(certs / "a-keystore.pem"), 4, False)}  # STATIC; not read-only (Kafka's)
        before.close()
        admin.close()
    with Broker(overrides) as broker:
        port = broker.ports["SSL"]
        assert tls_answers(port, certs / "ca2.pem") and not tls_answers(port, certs / "ca1.pem")


def test_listener_opened_while_running(certs, tmp_path):
    """Listeners named anew are opened with the settings in effect then (here ssl.client.auth=required and
    sasl.enabled.mechanisms=PLAIN, set before, which the open listeners do not take, as in Kafka), and advertised
    on themselves (advertised.listeners being unset); being advertised, they cannot be removed, as in Kafka; after
    a restart they are opened again."""
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
                 "log.dirs": str(tmp_path / "data")}
    port, sasl_port = kafka_jvm.free_port(), kafka_jvm.free_port()
    with Broker(overrides) as broker:
        admin = RawClient(broker.port)
        assert alter(admin, NODE, {"ssl.client.auth": "required", "sasl.enabled.mechanisms": "PLAIN"}) == (0, None)
        sasl = RawClient(broker.ports["SASL_PLAINTEXT"])  # opened before: keeps its mechanisms
        assert sorted(sasl.call(SaslHandshakeRequest(mechanism="PLAIN"), 1).body.mechanisms) == [
            "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        sasl.close()
        listeners = (f"PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:{port},"
                     f"SASL_EXTRA://127.0.0.1:{sasl_port}")
        tls = {"listener.name.ssl.ssl.keystore.location": str(certs / "a-keystore.pem"),
               "listener.name.ssl.ssl.truststore.location": str(certs / "ca1.pem")}
        assert alter(admin, NODE, {"listeners": listeners, **tls})[0] == errors.INVALID_REQUEST.code  # no protocol
        protocols = "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,SASL_EXTRA:SASL_PLAINTEXT"
        assert alter(admin, NODE, {"listeners": listeners, "listener.security.protocol.map": protocols,
                                   "listener.name.ssl.ssl.keystore.location": str(certs / "missing.pem")}
                     )[0] == errors.INVALID_REQUEST.code  # a TLS listener that cannot be opened
        assert alter(admin, NODE, {"listeners": listeners, "listener.security.protocol.map": protocols, **tls}
                     ) == (0, None)
        client_cert = certs / "client-keystore.pem"
        assert eventually(lambda: tls_answers(port, certs / "ca1.pem", client_cert))
        assert not tls_answers(port, certs / "ca1.pem")  # no client certificate: refused, as required now
        client = TlsClient(port, certs / "ca1.pem", client_cert)
        metadata = client.call(MetadataRequest(topics=[]), 12).body
        assert [(b.host, b.port) for b in metadata.brokers] == [("127.0.0.1", port)]
        cluster = client.call(DescribeClusterRequest(), 0).body
        assert [(b.host, b.port) for b in cluster.brokers] == [("127.0.0.1", port)]
        assert [b.port for b in admin.call(MetadataRequest(topics=[]), 12).body.brokers] == [broker.port]
        assert eventually(lambda: plain_answers(sasl_port))
        sasl = RawClient(sasl_port)
        assert list(sasl.call(SaslHandshakeRequest(mechanism="PLAIN"), 1).body.mechanisms) == ["PLAIN"]
        sasl.close()
        code, message = alter(admin, NODE, {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"})
        assert code == errors.INVALID_REQUEST.code and "advertised" in message
        assert answers(client)
        client.close()
        admin.close()
    with Broker(overrides) as broker:
        assert (broker.ports["SSL"], broker.ports["SASL_EXTRA"]) == (port, sasl_port)
        assert tls_answers(port, certs / "ca1.pem", client_cert) and not tls_answers(port, certs / "ca1.pem")


def test_listener_closed_while_running():
    """A listener no longer named (and not advertised) stops accepting, and its connections are closed, as Kafka
    does; one advertised cannot be removed, and a listener kept keeps its protocol."""
    port = kafka_jvm.free_port()
    with Broker({"listeners": "PLAINTEXT://127.0.0.1:0", "advertised.listeners": "PLAINTEXT://127.0.0.1:0",
                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT"}) as broker:
        admin = RawClient(broker.port)
        both = f"PLAINTEXT://127.0.0.1:0,EXTRA://127.0.0.1:{port}"
        assert alter(admin, NODE, {"listeners": both}) == (0, None)
        assert eventually(lambda: plain_answers(port))
        extra = RawClient(port)
        metadata = extra.call(MetadataRequest(topics=[]), 12).body
        assert [b.port for b in metadata.brokers] == [broker.port]  # advertised.listeners names PLAINTEXT only
        assert alter(admin, NODE, {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTRA:SSL"}
                     )[0] == errors.INVALID_REQUEST.code
        assert alter(admin, NODE, {"listeners": f"EXTRA://127.0.0.1:{port}"})[0] == errors.INVALID_REQUEST.code
        assert alter(admin, NODE, {"listeners": None}) == (0, None)
        assert closed_by_broker([extra.sock], 5.0) == {extra.sock}

        def refused():
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
            except ConnectionRefusedError:
                return True
            return False
        assert eventually(refused)
        assert answers(admin)
        admin.close()


def test_ip_overrides_changed_while_running(tmp_path):
    """New max.connections.per.ip.overrides, for every broker, meet the next connection; the connections open
    stay, though over the new limit (as Kafka's ConnectionQuotas leaves them); removed, the broker's
    max.connections.per.ip is the limit again; set for this broker, it holds after a restart."""
    overrides = {"max.connections.per.ip": "2", "log.dirs": str(tmp_path / "data")}
    with Broker(overrides) as broker:
        admin = RawClient(broker.port)
        second = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
        third = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
        assert closed_by_broker([second, third], 0.5) == {third}
        assert alter(admin, "", {"max.connections.per.ip.overrides": "127.0.0.1:3"}) == (0, None)
        more = [socket.create_connection(("127.0.0.1", broker.port), timeout=10) for _ in range(2)]
        assert closed_by_broker(more, 0.5) == {more[1]}
        assert alter(admin, "", {"max.connections.per.ip.overrides": "127.0.0.1:1"}) == (0, None)
        assert answers(admin)  # three open where one is allowed now: none is closed
        late = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
        assert closed_by_broker([late, second, more[0]], 0.5) == {late}
        assert described(admin, ["max.connections.per.ip.overrides"]) == {
            "max.connections.per.ip.overrides": ("127.0.0.1:1", 3, False)}  # DYNAMIC_DEFAULT_BROKER_CONFIG
        assert alter(admin, "", {"max.connections.per.ip.overrides": None}) == (0, None)
        for sock in (second, more[0]):
            sock.close()
        assert eventually(lambda: plain_answers(broker.port))
        assert alter(admin, NODE, {"max.connections.per.ip.overrides": "localhost:3"}) == (0, None)
        admin.close()
    with Broker(overrides) as broker:
        mine = [socket.create_connection(("127.0.0.1", broker.port), timeout=10) for _ in range(4)]
        assert closed_by_broker(mine, 0.5) == {mine[3]}
        for sock in mine:
            sock.close()
