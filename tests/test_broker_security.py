"""The broker's security: SASL PLAIN and SCRAM (with an independent SCRAM client here), credentials from
configuration and from AlterUserScramCredentials, TLS listeners, and real clients over SCRAM and TLS."""

import base64
import hashlib
import hmac
import os
import socket
import subprocess
import uuid

import pytest

from kafkaproto import errors
from kafkaproto.broker import Broker
from kafkaproto.broker.security import (AuthenticationError, Credentials, ScramExchange, check_plain, jaas_users,
                                        make_credential)
from kafkaproto.connection import ClientConnection
from kafkaproto.messages import (AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest,
                                 MetadataRequest, RequestHeader, SaslAuthenticateRequest, SaslHandshakeRequest)

import kafka_jvm
from test_broker_groups import call
from test_broker_handlers import make_state

# The broker is the same code over either codec implementation (conftest.py: the pure-Python pass).
pytestmark = pytest.mark.above_the_codecs

USERS = {"alice": "alice-secret", "bob": "b0b"}
JAAS_PLAIN = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_alice="alice-secret" user_bob="b0b";')
JAAS_SCRAM = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'user_alice="alice-secret" user_bob="b0b";')
HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


class ScramClient:
    """The client side of RFC 5802, written from the RFC for these tests."""

    def __init__(self, mechanism, user, password):
        self.hash = HASHES[mechanism]
        self.user, self.password = user, password
        self.nonce = base64.b64encode(os.urandom(18)).decode()
        self.first_bare = f"n={user},r={self.nonce}"

    def first(self):
        return f"n,,{self.first_bare}".encode()

    def final(self, server_first):
        fields = dict(item.split("=", 1) for item in server_first.decode().split(","))
        assert fields["r"].startswith(self.nonce)
        salted = hashlib.pbkdf2_hmac(self.hash, self.password.encode(), base64.b64decode(fields["s"]),
                                     int(fields["i"]))
        client_key = hmac.new(salted, b"Client Key", self.hash).digest()
        without_proof = f"c=biws,r={fields['r']}"
        self.auth_message = f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.new(hashlib.new(self.hash, client_key).digest(), self.auth_message, self.hash).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        self.server_key = hmac.new(salted, b"Server Key", self.hash).digest()
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final):
        expected = hmac.new(self.server_key, self.auth_message, self.hash).digest()
        return server_final.decode() == f"v={base64.b64encode(expected).decode()}"


def credentials():
    c = Credentials()
    c.add_plain(USERS)
    for mechanism in HASHES:
        c.add_scram(mechanism, USERS)
    return c


def test_jaas_users():
    assert jaas_users(JAAS_PLAIN) == USERS
    assert jaas_users('x required user_q="a\\"b";') == {"q": 'a"b'}


def test_plain():
    assert check_plain(b"\0alice\0alice-secret", credentials()) == "alice"
    assert check_plain(b"alice\0alice\0alice-secret", credentials()) == "alice"
    for token in (b"\0alice\0wrong", b"\0nobody\0x", b"alice-secret", b"bob\0alice\0alice-secret"):
        with pytest.raises(AuthenticationError):
            check_plain(token, credentials())


@pytest.mark.parametrize("mechanism", sorted(HASHES))
def test_scram_exchange(mechanism):
    client = ScramClient(mechanism, "alice", "alice-secret")
    server = ScramExchange(mechanism, credentials())
    final = server.step(client.final(server.step(client.first())))
    assert server.done and server.user == "alice" and client.verify(final)
    for user, password in (("alice", "wrong"), ("nobody", "alice-secret")):
        client = ScramClient(mechanism, user, password)
        server = ScramExchange(mechanism, credentials())
        server_first = server.step(client.first())  # an unknown user still gets a challenge: no user oracle
        with pytest.raises(AuthenticationError):
            server.step(client.final(server_first))


def test_scram_credentials_altered_described_and_kept(tmp_path):
    state = make_state(tmp_path)
    salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", b"carol-pw", salt, 8192)
    upsert = AlterUserScramCredentialsRequest.ScramCredentialUpsertion(name="carol", mechanism=1, iterations=8192,
                                                                       salt=salt, salted_password=salted)
    weak = AlterUserScramCredentialsRequest.ScramCredentialUpsertion(name="dave", mechanism=1, iterations=100,
                                                                     salt=salt, salted_password=salted)
    missing = AlterUserScramCredentialsRequest.ScramCredentialDeletion(name="erin", mechanism=2)
    results = call(state, AlterUserScramCredentialsRequest(deletions=[missing], upsertions=[upsert, weak]), 0).results
    assert {r.user: r.error_code for r in results} == {"carol": 0, "dave": errors.UNACCEPTABLE_CREDENTIAL.code,
                                                        "erin": errors.RESOURCE_NOT_FOUND.code}
    state.close()
    state = make_state(tmp_path)
    described = call(state, DescribeUserScramCredentialsRequest(users=None), 0).results
    assert [(r.user, [(c.mechanism, c.iterations) for c in r.credential_infos]) for r in described] == [
        ("carol", [(1, 8192)])]
    client = ScramClient("SCRAM-SHA-256", "carol", "carol-pw")
    server = ScramExchange("SCRAM-SHA-256", state.credentials)
    assert client.verify(server.step(client.final(server.step(client.first()))))
    gone = AlterUserScramCredentialsRequest.ScramCredentialDeletion(name="carol", mechanism=1)
    assert call(state, AlterUserScramCredentialsRequest(deletions=[gone]), 0).results[0].error_code == 0
    assert call(state, DescribeUserScramCredentialsRequest(users=[
        DescribeUserScramCredentialsRequest.UserName(name="carol")]), 0).results[0].error_code == \
        errors.RESOURCE_NOT_FOUND.code
    state.close()


def test_a_configured_scram_user_authenticates_with_a_stored_credential():
    credential = make_credential("SCRAM-SHA-512", "pw", iterations=4096)
    c = Credentials()
    c.scram[("SCRAM-SHA-512", "u")] = credential
    client = ScramClient("SCRAM-SHA-512", "u", "pw")
    server = ScramExchange("SCRAM-SHA-512", c)
    assert client.verify(server.step(client.final(server.step(client.first()))))


# --- over sockets


SASL_OVERRIDES = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
    "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS_PLAIN,
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": JAAS_SCRAM,
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": JAAS_SCRAM,
}


@pytest.fixture(scope="module")
def sasl_broker():
    with Broker(SASL_OVERRIDES) as broker:
        yield broker


class Raw:
    """A raw kafkaproto client connection."""

    def __init__(self, broker):
        self.sock = socket.create_connection((broker.host, broker.port), timeout=10)
        self.client = ClientConnection()
        self.correlation_id = 0

    def events(self):
        while True:
            data = self.sock.recv(65536)
            if not data:
                return None
            events = self.client.receive_data(data)
            if events:
                return events[0]

    def ask(self, body, version):
        self.correlation_id += 1
        header = RequestHeader(request_api_key=body.api_key, request_api_version=version,
                               correlation_id=self.correlation_id, client_id="tests")
        self.sock.sendall(self.client.send_request(header, body))
        event = self.events()
        return None if event is None else event.body

    def raw(self, token):
        self.sock.sendall(self.client.send_raw(token))
        return self.events()

    def close(self):
        self.sock.close()


def test_nothing_but_the_handshake_before_authenticating(sasl_broker):
    raw = Raw(sasl_broker)
    assert raw.ask(MetadataRequest(topics=None), 12) is None  # the connection is closed
    raw.close()


def test_sasl_handshake_v0_raw_tokens_then_requests(sasl_broker):
    raw = Raw(sasl_broker)
    response = raw.ask(SaslHandshakeRequest(mechanism="PLAIN"), 0)
    assert response.error_code == 0 and set(response.mechanisms) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert raw.raw(b"\0alice\0alice-secret").data == b""
    assert raw.ask(MetadataRequest(topics=None), 12).controller_id == 1
    raw.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_authenticate_and_a_wrong_password(sasl_broker, mechanism, caplog):
    for password, ok in (("alice-secret", True), ("wrong", False)):
        raw = Raw(sasl_broker)
        assert raw.ask(SaslHandshakeRequest(mechanism=mechanism), 1).error_code == 0
        if mechanism == "PLAIN":
            answer = raw.ask(SaslAuthenticateRequest(auth_bytes=b"\0alice\0" + password.encode()), 2)
        else:
            client = ScramClient(mechanism, "alice", password)
            first = raw.ask(SaslAuthenticateRequest(auth_bytes=client.first()), 2)
            assert first.error_code == 0
            answer = raw.ask(SaslAuthenticateRequest(auth_bytes=client.final(first.auth_bytes)), 2)
            assert not ok or client.verify(answer.auth_bytes)
        assert answer.error_code == (0 if ok else errors.SASL_AUTHENTICATION_FAILED.code)
        if ok:
            assert raw.ask(MetadataRequest(topics=None), 12).brokers[0].port == sasl_broker.port
        else:
            assert raw.events() is None  # closed after the failure
        raw.close()
    assert "authentication failed" in caplog.text


def test_an_unknown_mechanism_is_refused(sasl_broker):
    raw = Raw(sasl_broker)
    response = raw.ask(SaslHandshakeRequest(mechanism="GSSAPI"), 1)
    assert response.error_code == errors.UNSUPPORTED_SASL_MECHANISM.code and "PLAIN" in response.mechanisms
    raw.close()


def kafka_python_round_trip(bootstrap, **security):
    kafka = pytest.importorskip("kafka")
    topic = f"sec-{uuid.uuid4().hex[:8]}"
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all", **security)
    producer.send(topic, b"secret value").get(20)
    producer.close()
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"g-{topic}",
                                   auto_offset_reset="earliest", consumer_timeout_ms=10000, **security)
    values = [next(consumer).value]
    consumer.close()
    return values


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_over_sasl(sasl_broker, mechanism):
    assert kafka_python_round_trip(sasl_broker.bootstrap_servers, security_protocol="SASL_PLAINTEXT",
                                   sasl_mechanism=mechanism, sasl_plain_username="bob",
                                   sasl_plain_password="b0b") == [b"secret value"]


def test_confluent_kafka_over_scram(sasl_broker):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    settings = {"bootstrap.servers": sasl_broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": "alice-secret"}
    topic = f"sec-rd-{uuid.uuid4().hex[:8]}"
    producer = confluent_kafka.Producer(settings)
    reports = []
    producer.produce(topic, b"over scram", on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(20) == 0 and reports == [None]
    from confluent_kafka.admin import AdminClient
    with pytest.raises(confluent_kafka.KafkaException):
        AdminClient({**settings, "sasl.password": "wrong"}).list_topics(timeout=2)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    """A CA and a server certificate for 127.0.0.1 and localhost, made with openssl."""
    openssl = pytest.importorskip("shutil").which("openssl")
    if openssl is None:
        pytest.skip("openssl is needed to make test certificates")
    d = tmp_path_factory.mktemp("tls")

    def run(*args):
        subprocess.run([openssl, *args], check=True, capture_output=True, cwd=d)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=kafkaproto test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj",
        "/CN=localhost")
    (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out",
        "server.pem", "-days", "2", "-extfile", "san.cnf")
    (d / "keystore.pem").write_text((d / "server.key").read_text() + (d / "server.pem").read_text())
    return d


@pytest.fixture(scope="module")
def tls_broker(certificates):
    overrides = {**SASL_OVERRIDES,
                 "listeners": "SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
                 "listener.security.protocol.map": "SSL:SSL,SASL_SSL:SASL_SSL",
                 "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certificates / "keystore.pem"),
                 "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": JAAS_SCRAM}
    with Broker(overrides) as broker:
        yield broker


def test_tls_listener_with_kafka_python(tls_broker, certificates):
    assert kafka_python_round_trip(tls_broker.bootstrap_servers, security_protocol="SSL",
                                   ssl_cafile=str(certificates / "ca.pem")) == [b"secret value"]


def confluent_round_trip(settings, topic, value):
    """librdkafka (confluent-kafka) with settings produces value to topic and reads it back in a group."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    producer = confluent_kafka.Producer(settings)
    reports = []
    producer.produce(topic, value, on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(20) == 0 and reports == [None]
    consumer = confluent_kafka.Consumer({**settings, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    message = None
    for _ in range(40):
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            break
    consumer.close()
    assert message is not None and message.value() == value


def test_confluent_kafka_over_tls(tls_broker, certificates):
    settings = {"bootstrap.servers": tls_broker.bootstrap_servers, "security.protocol": "SSL",
                "ssl.ca.location": str(certificates / "ca.pem")}
    confluent_round_trip(settings, f"sec-tls-{uuid.uuid4().hex[:8]}", b"over tls")


def test_java_clients_over_sasl_ssl_scram(tls_broker, certificates, tmp_path):
    """The Java clients (4.3.1) over TLS with SCRAM-SHA-512 on the second listener: admin, produce, consume."""
    cp = kafka_jvm.program(kafka_jvm.KAFKA_VERSIONS[-1], "Clients")
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required '
        'username="alice" password="alice-secret";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={certificates / 'ca.pem'}\n")
    sasl_port = tls_broker.ports["SASL_SSL"]
    topic = f"java-tls-{uuid.uuid4().hex[:8]}"
    for mode in ("admin", "produce"):
        run = subprocess.run(["java", f"-Dclient.config={config}", "-cp", cp, "Clients",
                              f"127.0.0.1:{sasl_port}", mode, topic], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, f"Java {mode} over SASL_SSL failed:\n{run.stderr[-3000:]}"


def test_confluent_kafka_held_to_acls_over_scram():
    """With an authorizer: alice (SCRAM) may write one topic and read it in one group. librdkafka's producer is
    refused another topic, and its consumer another group, with Kafka's errors; the admin (a super user) makes
    the ACLs with CreateAcls."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic,
                                       ResourcePatternType, ResourceType)
    overrides = {**SASL_OVERRIDES, "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                 "super.users": "User:bob", "auto.create.topics.enable": "false"}
    run = uuid.uuid4().hex[:8]
    allowed, refused, group = f"acl-ok-{run}", f"acl-no-{run}", f"acl-group-{run}"
    with Broker(overrides) as broker:
        base = {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-512"}
        admin = AdminClient({**base, "sasl.username": "bob", "sasl.password": "b0b"})
        for future in admin.create_topics([NewTopic(t, 1, 1) for t in (allowed, refused)]).values():
            future.result(20)
        bindings = [AclBinding(ResourceType.TOPIC, allowed, ResourcePatternType.LITERAL, "User:alice", "*", op,
                               AclPermissionType.ALLOW) for op in (AclOperation.WRITE, AclOperation.READ)]
        bindings.append(AclBinding(ResourceType.GROUP, group, ResourcePatternType.LITERAL, "User:alice", "*",
                                   AclOperation.READ, AclPermissionType.ALLOW))
        for future in admin.create_acls(bindings).values():
            future.result(20)
        alice = {**base, "sasl.username": "alice", "sasl.password": "alice-secret"}
        producer = confluent_kafka.Producer(alice)
        reports = []
        for topic in (allowed, refused):
            producer.produce(topic, b"v", on_delivery=lambda err, msg: reports.append(err))
        producer.flush(20)
        assert reports[0] is None or reports[1] is None
        codes = sorted(err.code() if err is not None else 0 for err in reports)
        assert codes == [0, confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED], reports

        def consumed(group_id):
            consumer = confluent_kafka.Consumer({**alice, "group.id": group_id, "auto.offset.reset": "earliest"})
            consumer.subscribe([allowed])
            try:
                for _ in range(40):
                    message = consumer.poll(0.5)
                    if message is not None:
                        return message.error().code() if message.error() else message.value()
                return None
            finally:
                consumer.close()
        assert consumed(group) == b"v"
        assert consumed(f"other-{run}") == confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED
