"""A TCP proxy that records what crosses it, written out as a pcap: captures of a client's session without tcpdump
(or the privileges it needs).

    with RecordingProxy() as proxy:                     # listening on proxy.port
        with Broker({"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"}) as broker:
            proxy.upstream = ("127.0.0.1", broker.port)
            run_a_client(f"127.0.0.1:{proxy.port}")     # every connection goes through the proxy
    data = proxy.pcap()

The broker advertises the proxy, so the client's later connections (to the coordinator, the leader) go through it
too. Each connection becomes a TCP connection from 10.0.0.2 (a port of its own) to 10.0.0.1 at the broker's port,
its bytes segmented as a sender would, at the times they crossed the proxy.
"""

import asyncio
import threading
import time

import capture_files as cf
from test_capture import Tcp, wire_frame

CLIENT_ADDRESS, BROKER_ADDRESS = "10.0.0.2", "10.0.0.1"


class RecordingProxy:
    def __init__(self):
        self.upstream = None  # (host, port) to forward to, set before the first client connects
        self.connections = []  # per connection: [(time ns, from client, bytes)]
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = None

    def __enter__(self):
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc):
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self):
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()

    async def _serve(self, client_reader, client_writer):
        log = []
        self.connections.append(log)
        broker_reader, broker_writer = await asyncio.open_connection(*self.upstream)

        async def pump(reader, writer, from_client):
            try:
                while data := await reader.read(1 << 16):
                    log.append((time.time_ns(), from_client, data))
                    writer.write(data)
                    await writer.drain()
            except OSError:
                pass
            finally:
                writer.close()

        await asyncio.gather(pump(client_reader, broker_writer, True), pump(broker_reader, client_writer, False))

    def pcap(self):
        """The recorded connections as a classic pcap (nanosecond timestamps)."""
        packets = []
        for index, log in enumerate(self.connections):
            if not log:
                continue
            tcp = Tcp(client=(CLIENT_ADDRESS, 40000 + index), broker=(BROKER_ADDRESS, self.upstream[1]))
            packets += [(log[0][0] - 1000, seg) for seg in tcp.handshake()]
            for time_ns, from_client, data in log:
                packets += [(time_ns, seg) for seg in tcp.send(from_client, data)]
            packets += [(log[-1][0] + 1000, seg) for seg in tcp.close()]
        packets.sort(key=lambda packet: packet[0])  # stable: a connection's own segments keep their order
        return cf.pcap([(time_ns, *wire_frame(seg)) for time_ns, seg in packets], nanos=True)
