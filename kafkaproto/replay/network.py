"""The sockets under a replay: asyncio connections carrying what a Replayer says to send, and the bytes that come
back. This is all the I/O a replay does.

    plan = Plan.of(read_capture("session.pcap"))
    run = asyncio.run(replay(plan, "localhost:9092"))             # one target
    a, b = asyncio.run(replay_both(plan, "kafka:9092", "other:9092"))

Both first make sure every target answers a connection (``Unreachable`` otherwise), so that a broker that is not
there is said to be missing instead of diverging on every request. ``on_wait(target, pause)`` hears of each long
wait for the capture's pace as it begins (a session.Pause: what it waits for, how long, and whether the capture's
gap was shortened).
"""

import asyncio
import os
import ssl as _ssl

from .session import Replayer

_READ_SIZE = 1 << 16
_CONNECT_TIMEOUT = 10.0


def parse_address(text):
    """(host, port) of "host:port" ("[::1]:9092" for IPv6)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"{text!r} is not host:port")
    return host.strip("[]"), int(port)


class Unreachable(ConnectionError):
    """A target that does not take a connection (refused, unknown host, no answer, a TLS handshake that fails):
    nothing was replayed."""


async def check_reachable(target, *, ssl=None, timeout=_CONNECT_TIMEOUT):
    """Open a connection to target ("host:port") and close it again; Unreachable, naming it, if that fails."""
    host, port = parse_address(target)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port, ssl=ssl), timeout)
    except asyncio.TimeoutError:
        raise Unreachable(f"cannot reach the broker at {target}: no connection within {timeout:g} s") from None
    except _ssl.SSLError as e:
        raise Unreachable(f"cannot reach the broker at {target} over TLS: {e}") from None
    except OSError as e:
        why = os.strerror(e.errno) if e.errno and e.errno > 0 else e.strerror or str(e)
        raise Unreachable(f"cannot reach the broker at {target}: {why}") from None
    writer.close()
    try:
        await writer.wait_closed()
    except OSError:
        pass


async def replay(plan, bootstrap, *, ssl=None, watch=None, on_wait=None, check=True, **options):
    """Replay plan against the broker at bootstrap ("host:port"); options as for Replayer. Returns the finished
    Replayer (its results, values and setup). Raises Unreachable, having sent nothing, when the broker does not
    take a connection (check=False: try anyway, each connection's failure a result). watch: called with the
    Replayer and bootstrap before it starts (to follow its progress). on_wait: called with bootstrap and a
    session.Pause as each long wait for the capture's pace begins."""
    address = parse_address(bootstrap)
    if check:
        await check_reachable(bootstrap, ssl=ssl)
    replayer = Replayer(plan, **options)
    if watch is not None:
        watch(replayer, bootstrap)
    await drive(replayer, address, ssl=ssl,
                on_wait=None if on_wait is None else lambda pause: on_wait(bootstrap, pause))
    return replayer


async def replay_both(plan, first, second, *, ssl=None, watch=None, on_wait=None, check=True, **options):
    """The same plan against two brokers at once (each with its own Replayer), once both take a connection."""
    if check:
        await asyncio.gather(check_reachable(first, ssl=ssl), check_reachable(second, ssl=ssl))
    return await asyncio.gather(
        replay(plan, first, ssl=ssl, watch=watch, on_wait=on_wait, check=False, **options),
        replay(plan, second, ssl=ssl, watch=watch, on_wait=on_wait, check=False, **options))


class _Link:
    """One connection: opened in the background, writes queued until it is, reads handed to the replayer."""

    def __init__(self, key, endpoint, replayer, wake, ssl):
        self.key = key
        self.replayer = replayer
        self.wake = wake
        self.queue = []
        self.writer = None
        self.closing = False
        self.task = asyncio.get_running_loop().create_task(self._run(endpoint, ssl))

    def send(self, data):
        if self.writer is not None:
            self.writer.write(data)
        else:
            self.queue.append(data)

    def close(self):
        self.closing = True
        if self.writer is not None:
            self.writer.close()
        else:
            self.task.cancel()

    async def _run(self, endpoint, ssl):
        loop = asyncio.get_running_loop()
        host, port = endpoint
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, ssl=ssl), _CONNECT_TIMEOUT)
        except (OSError, asyncio.TimeoutError) as e:
            self._lost(loop, f"could not connect to {host}:{port}: {e or 'timed out'}")
            return
        self.writer = writer
        for data in self.queue:
            writer.write(data)
        self.queue = []
        if self.closing:
            writer.close()
            return
        try:
            while True:
                data = await reader.read(_READ_SIZE)
                if not data:
                    break
                self.replayer.received(self.key, data, loop.time())
                self.wake.set()
        except OSError as e:
            self._lost(loop, f"the connection failed: {e}")
            return
        self._lost(loop, "the target closed the connection")

    def _lost(self, loop, reason):
        if not self.closing:
            self.replayer.lost(self.key, loop.time(), reason)
            self.wake.set()


async def drive(replayer, bootstrap, *, ssl=None, on_wait=None):
    """Carry out a Replayer's actions until it is finished; bootstrap is (host, port). on_wait: called with the
    session.Pause of each long wait the replayer announces."""
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()
    links = {}
    replayer.start(loop.time())
    try:
        while True:
            wake.clear()
            for action in replayer.actions(loop.time()):
                kind, key = action[0], action[1]
                if kind == "connect":
                    old = links.get(key)
                    if old is not None:
                        old.close()
                    links[key] = _Link(key, action[2] or bootstrap, replayer, wake, ssl)
                elif kind == "send":
                    links[key].send(action[2])
                elif kind == "close" and key in links:
                    links.pop(key).close()
                elif kind == "wait" and on_wait is not None:
                    on_wait(action[2])
            if replayer.finished:
                break
            wakeup = replayer.wakeup()
            timeout = None if wakeup is None else max(0.0, wakeup - loop.time())
            try:
                await asyncio.wait_for(wake.wait(), timeout)
            except asyncio.TimeoutError:
                pass
    finally:
        for link in links.values():
            link.close()
        tasks = [link.task for link in links.values()]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
