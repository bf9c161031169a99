"""Listeners changed while running on a cluster of three brokers in one process (nodes_served.py): being one
configuration for every broker, a listener added opens on each running broker (the i-th after the first at the
listener's port + i, any free port for port 0) and is advertised by each, one removed closes on each with its
connections, a TLS listener's new key store serves each broker's next connections, and a broker stopped meanwhile
starts on the listeners in effect then."""

import os
import socket

import pytest

from kafkaproto import errors
from kafkaproto.broker import Broker
from kafkaproto.messages import DescribeConfigsRequest, MetadataRequest

from test_broker_bounds import closed_by_broker
from test_broker_live_listeners import alter, certs, eventually, plain_answers, tls_answers  # noqa: F401 - certs
from test_kafka_broker import RawClient

pytestmark = pytest.mark.above_the_codecs

NODES = (1, 2, 3)
PROTOCOLS = "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT,MORE:PLAINTEXT"


def ports_in_a_row(count):
    """The first of count consecutive ports of 127.0.0.1 free now."""
    for _ in range(50):
        taken = []
        try:
            for i in range(count):
                sock = socket.socket()
                taken.append(sock)
                sock.bind(("127.0.0.1", taken[0].getsockname()[1] + i if i else 0))
            return taken[0].getsockname()[1]
        except (OSError, OverflowError):
            continue
        finally:
            for sock in taken:
                sock.close()
    pytest.fail(f"no {count} consecutive free ports found")


def listening_ports():
    """The TCP ports this process listens on (its brokers run in it), read from /proc."""
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc to see which ports the brokers listen on")
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if link.startswith("socket:["):
            inodes.add(link[len("socket:["):-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as rows:
                lines = rows.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def node_at(port):
    """The broker that listens on port: the only one that describes broker configs of its own id (each refuses
    another's)."""
    client = RawClient(port)
    try:
        served = [node for node in NODES if client.call(DescribeConfigsRequest(resources=[
            DescribeConfigsRequest.DescribeConfigsResource(resource_type=4, resource_name=str(node),
                                                           configuration_keys=["num.io.threads"])]), 4
        ).body.results[0].error_code == 0]
    finally:
        client.close()
    assert len(served) == 1, (port, served)
    return served[0]


def brokers_told(port):
    """[(node id, port)] of the brokers a Metadata asked on port lists."""
    client = RawClient(port)
    try:
        return [(b.node_id, b.port) for b in client.call(MetadataRequest(topics=[]), 12).body.brokers]
    finally:
        client.close()


def refused(port):
    """Whether a connection to port is refused (nothing listens there)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_a_listener_added_while_running_opens_on_every_broker(tmp_path):
    """Added for every broker (and refused for broker 2 alone), listener EXTRA on port P opens on broker i at
    P + i - 1, each broker served there advertising all three on EXTRA; a broker stopped takes its listeners along,
    and one added meanwhile (MORE, on port 0: a free port each) opens on the running brokers at once and on the
    stopped one when it starts, with those it had on their ports."""
    first = ports_in_a_row(3)
    extra = {node: first + node - 1 for node in NODES}
    with Broker({"log.dirs": str(tmp_path)}, nodes=3) as cluster:
        plain = {node: port for node, (_, port) in cluster.nodes.items()}
        admin, second = RawClient(plain[1]), RawClient(plain[2])
        listeners = f"PLAINTEXT://127.0.0.1:0,EXTRA://127.0.0.1:{first}"
        change = {"listeners": listeners, "listener.security.protocol.map": PROTOCOLS}
        code, message = alter(second, "2", change)
        assert code == errors.INVALID_REQUEST.code and "set for broker 1 or for every broker" in message
        assert alter(admin, "", change)[0] == errors.INVALID_REQUEST.code  # per broker, as in Kafka
        assert alter(admin, "1", change) == (0, None)
        for node, port in extra.items():
            assert eventually(lambda port=port: plain_answers(port)), (node, port)
            assert node_at(port) == node
            assert brokers_told(port) == sorted(extra.items())
        for port in plain.values():  # the first listener keeps its addresses, and is advertised on itself
            assert brokers_told(port) == sorted(plain.items())

        before = listening_ports()
        cluster.stop_node(2)
        assert refused(extra[2]) and refused(plain[2])
        assert brokers_told(extra[3]) == [(1, extra[1]), (3, extra[3])]
        assert alter(admin, "1", {"listeners": listeners + ",MORE://127.0.0.1:0"}) == (0, None)
        assert eventually(lambda: len(listening_ports() - before) == 2)
        more = {node_at(port): port for port in listening_ports() - before}
        assert sorted(more) == [1, 3]
        cluster.start_node(2)
        new = listening_ports() - before
        assert len(new) == 3 and more.items() <= {(node_at(port), port) for port in new}
        more.update((node_at(port), port) for port in new)
        for node in NODES:
            assert node_at(extra[node]) == node and node_at(plain[node]) == node
            assert brokers_told(more[node]) == sorted(more.items())
            assert brokers_told(extra[node]) == sorted(extra.items())
        admin.close()
        second.close()


def test_a_listener_removed_while_running_closes_on_every_broker(tmp_path):
    """With advertised.listeners naming PLAINTEXT only (so a listener may go), EXTRA added on port 0 opens on each
    broker (a free port each), which advertise PLAINTEXT's addresses there; removed, it closes on every broker
    with its connections, and a broker stopped meanwhile starts without it."""
    overrides = {"log.dirs": str(tmp_path), "advertised.listeners": "PLAINTEXT://127.0.0.1:0",
                 "listener.security.protocol.map": PROTOCOLS}
    with Broker(overrides, nodes=3) as cluster:
        plain = {node: port for node, (_, port) in cluster.nodes.items()}
        assert {node: node_at(port) for node, port in plain.items()} == {node: node for node in NODES}
        admin = RawClient(plain[1])
        before = listening_ports()
        assert alter(admin, "1", {"listeners": "PLAINTEXT://127.0.0.1:0,EXTRA://127.0.0.1:0"}) == (0, None)
        assert eventually(lambda: len(listening_ports() - before) == 3)
        extra = {node_at(port): port for port in listening_ports() - before}
        assert sorted(extra) == list(NODES)
        for port in extra.values():
            assert brokers_told(port) == sorted(plain.items())
        clients = [RawClient(port) for port in extra.values()]
        cluster.stop_node(3)
        assert refused(extra[3])
        assert alter(admin, "1", {"listeners": None}) == (0, None)
        assert closed_by_broker([client.sock for client in clients], 5.0) == {client.sock for client in clients}
        for port in extra.values():
            assert eventually(lambda port=port: refused(port)), port
        cluster.start_node(3)
        assert node_at(plain[3]) == 3 and refused(extra[3])
        assert listening_ports() == before
        assert brokers_told(plain[2]) == sorted(plain.items())
        for client in clients:
            client.close()
        admin.close()


def test_new_stores_serve_every_brokers_next_connections(certs, tmp_path):  # noqa: F811 - the imported fixture
    """A TLS listener's new key store (by another CA), set for the first broker, serves the next connections of
    every broker (each on the listener's port + i), and of a broker stopped and started again."""
    first = ports_in_a_row(3)
    overrides = {"log.dirs": str(tmp_path), "listeners": f"PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:{first}",
                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL",
                 "ssl.keystore.location": str(certs / "a-keystore.pem")}
    tls = [first, first + 1, first + 2]
    with Broker(overrides, nodes=3) as cluster:
        assert [(tls_answers(port, certs / "ca1.pem"), tls_answers(port, certs / "ca2.pem")) for port in tls] == [
            (True, False)] * 3
        admin = RawClient(cluster.port)
        assert alter(admin, "1", {"listener.name.ssl.ssl.keystore.location": str(certs / "b-keystore.pem")}) == (
            0, None)
        assert [(tls_answers(port, certs / "ca1.pem"), tls_answers(port, certs / "ca2.pem")) for port in tls] == [
            (False, True)] * 3
        cluster.stop_node(2)
        cluster.start_node(2)
        assert (tls_answers(tls[1], certs / "ca1.pem"), tls_answers(tls[1], certs / "ca2.pem")) == (False, True)
        admin.close()


def test_a_connection_waiting_to_be_accepted_when_its_listener_shuts_is_not_left_open():
    """The accept of a connection already waiting is queued in the same turn of the event loop as the shut: it must
    not take the connection into the cancelled accept and leave it open with nobody serving it."""
    import asyncio
    import types

    from kafkaproto.broker.nodes_served import shut

    async def main():
        loop = asyncio.get_running_loop()
        listening = socket.socket()
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        listening.setblocking(False)
        accepted = []

        async def accept():
            accepted.append(await loop.sock_accept(listening))

        task = loop.create_task(accept())
        running = types.SimpleNamespace(closed=False, listening=[(listening, task)], streams=set())
        await asyncio.sleep(0)  # the accept waits for a connection
        client = socket.create_connection(listening.getsockname())
        loop.call_soon(shut, running)  # runs before the accept the next turn's poll queues behind it
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.sleep(0.05)
        return client, accepted

    client, accepted = asyncio.run(main())
    try:
        assert accepted == []
        assert closed_by_broker([client], 2.0) == {client}
    finally:
        client.close()
