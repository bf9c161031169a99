"""The network side: asyncio listeners, one task per connection, requests answered in order.

Each connection receives its bytes straight into a kafkaproto ServerConnection's
frame buffer (framing, size limits, correlation ids, the ApiVersions fallback;
a large request lands in a buffer of its own and goes to the log without
another copy), hands each request to dispatch, and writes the response. As in
Kafka, a connection's requests are handled one at a time, so its responses
leave in order, while the next ones are read ahead up to a bound; a Fetch
waiting for data holds only its own connection.
A connection that sends what cannot be read, stays idle past
connections.max.idle.ms, or goes over max.connections is closed with a log line.
On SASL listeners a client gets nothing but ApiVersions and the SASL exchange
until it has authenticated; TLS listeners wrap the same loop. On plain-text
listeners a Fetch's record bytes go from the segment files to the socket with
sendfile(2), never through Python (the handler answers with FileRegions).
When accept() fails (out of file descriptors, say), the listener backs off and
tries again, with one warning when that starts and one line when it accepts again.
"""

import asyncio
import collections
import errno
import logging
import os
import socket
import time

from .. import errors
from ..connection import ProtocolError, SaslBytes, ServerConnection
from ..messages import ApiKey
from ..exceptions import KafkaProtoError
from ..protocol import FileRegion
from ..registry import api
from .config import Listener
from .dispatch import ANSWER_API_VERSIONS_V0, Context, Wait, dispatch, load_handlers, unserved
from .handlers import api_versions
from .security import MECHANISMS, AuthenticationError, Session, listener_setting, tls_context
from .state.cluster import remove_directories

log = logging.getLogger("kafkaproto.broker")
READ_SIZE = 1 << 16
READ_AHEAD = 1 << 20  # bytes of whole requests read ahead of the one being answered
# What a client on a SASL listener may send before it has authenticated (anything else closes the connection).
BEFORE_AUTHENTICATION = {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
HOUSEKEEPING_SECONDS = 1.0
LISTEN_BACKLOG = 100
# While accept() fails, the wait before the next try: doubling from the first to the last.
ACCEPT_BACKOFF_SECONDS = (0.05, 1.0)


class Server:
    """Serves a BrokerState on the configured listeners, on the running event loop."""

    def __init__(self, state):
        load_handlers()
        self.state = state
        self.config = state.config
        self.listeners = []  # bound Listener objects (ports resolved)
        self._listening = []  # (listening socket, the task accepting on it)
        # stream -> when it last read (loop time), or None while it answers a request: the housekeeping closes
        # those idle past connections.max.idle.ms (a timer per read would cost a task per read)
        self._connections = {}
        self._idled = set()
        self._tasks = set()
        self._closing = False
        self._change = asyncio.Event()
        self._change_awaited = False  # whether a request waits on _change (most appends wake no one)
        self._housekeeping = None
        state.on_change = self._changed

    def _changed(self):
        if self._change_awaited:
            self._change_awaited = False
            self._change.set()
            self._change = asyncio.Event()

    async def start(self):
        for listener in self.config.listeners:
            context = tls_context(self.config, listener) if listener.protocol in ("SSL", "SASL_SSL") else None
            mechanisms = [m.strip().upper() for m in listener_setting(
                self.config, listener, "sasl.enabled.mechanisms").split(",") if m.strip()]
            unknown = [m for m in mechanisms if m not in MECHANISMS]
            if unknown:
                raise ValueError(f"listener {listener.name}: SASL mechanisms {', '.join(unknown)} are not "
                                 f"implemented (known: {', '.join(MECHANISMS)})")
            loop = asyncio.get_running_loop()
            sockets = await _listen(listener.host, listener.port, self.config["socket.receive.buffer.bytes"])
            for sock in sockets:
                task = loop.create_task(self._accept(sock, listener, mechanisms, context))
                self._listening.append((sock, task))
            port = sockets[0].getsockname()[1]
            self.listeners.append(Listener(listener.name, listener.host, port, listener.protocol))
        advertised = []
        for i, listener in enumerate(self.config.advertised or self.listeners):
            bound = self.listeners[min(i, len(self.listeners) - 1)]
            host = listener.host if listener.host not in ("0.0.0.0", "::", "") else socket.gethostname()
            advertised.append(Listener(listener.name, host, listener.port or bound.port, listener.protocol))
        self.state.advertised = advertised
        self._housekeeping = asyncio.get_running_loop().create_task(self._housekeep())

    async def _housekeep(self):
        retention_due = cleaning_due = offsets_due = partitions_due = time.monotonic()
        while True:
            await asyncio.sleep(HOUSEKEEPING_SECONDS)
            self._close_idle()
            try:
                due = self.state.cluster.take_due_deletes()
                if due:  # off the event loop: removing a topic of gigabytes stalled every connection for 0.1 s
                    await asyncio.to_thread(remove_directories, due)
                if time.monotonic() >= retention_due:
                    retention_due = time.monotonic() + self.config["log.retention.check.interval.ms"] / 1000
                    if self.state.enforce_retention():
                        self._changed()
                if time.monotonic() >= offsets_due:
                    offsets_due = time.monotonic() + self.config["offsets.retention.check.interval.ms"] / 1000
                    self.state.groups.expire_offsets(self.state.now_ms(),
                                                     self.config["offsets.retention.minutes"] * 60000)
                if self.config["delete.topic.partition.enable"] and time.monotonic() >= partitions_due:
                    partitions_due = time.monotonic() + self.config["delete.topic.partition.check.interval.ms"] / 1000
                    if self.state.cluster.finish_partition_deletions(self.state.now_ms()):
                        self._changed()
                if time.monotonic() >= cleaning_due:
                    cleaning_due = time.monotonic() + self.config["log.cleaner.backoff.ms"] / 1000
                    self.state.compact()
                now = time.monotonic()
                if self.state.groups.tick(now) | self.state.consumer_groups.expire(now * 1000) | \
                        self.state.expire_transactions(now):
                    self._changed()
            except OSError as e:
                log.error("housekeeping: %s", e)

    def _close_idle(self):
        idle_before = asyncio.get_running_loop().time() - self.config["connections.max.idle.ms"] / 1000
        for stream, last_read in list(self._connections.items()):
            if last_read is not None and last_read < idle_before:
                self._idled.add(stream)
                stream.close()  # its read then ends, and its task says why

    async def _accept(self, sock, listener, mechanisms, context):
        """Accept connections on a listening socket until cancelled; each is served by a task of its own."""
        loop = asyncio.get_running_loop()
        backoff = failing_since = None
        while True:
            try:
                conn, _ = await loop.sock_accept(sock)
            except ConnectionAbortedError:
                continue  # the client gave up before it was accepted
            except OSError as e:
                # Out of descriptors, the pending connections wait in the kernel's backlog; retrying at once
                # would spin, and a line per try would flood the log.
                if backoff is None:
                    failing_since = loop.time()
                    backoff = ACCEPT_BACKOFF_SECONDS[0]
                    why = "out of file descriptors" if e.errno in (errno.EMFILE, errno.ENFILE) else "failing"
                    log.warning("listener %s: accept() is %s (%s); backing off until it works again",
                                listener.name, why, e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, ACCEPT_BACKOFF_SECONDS[1])
                continue
            if backoff is not None:
                log.info("listener %s: accepting connections again after %.1f s", listener.name,
                         loop.time() - failing_since)
                backoff = None
            _tune(conn, self.config["socket.send.buffer.bytes"])
            task = loop.create_task(self._open(conn, listener, mechanisms, context))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _open(self, conn, listener, mechanisms, context):
        """A _Stream over an accepted socket (after the TLS handshake, on a TLS listener), then serve it."""
        loop = asyncio.get_running_loop()
        connection = ServerConnection(max_frame=self.config["socket.request.max.bytes"])
        stream = _Stream(connection)
        try:
            await loop.connect_accepted_socket(lambda: stream, conn, ssl=context)
        except (OSError, asyncio.TimeoutError) as e:  # ssl.SSLError is an OSError
            log.info("connection from %s not started: %s", _peer(conn), e)
            conn.close()
            return
        await self._serve(listener, mechanisms, connection, stream)

    async def stop(self):
        for _, task in self._listening:
            task.cancel()
        # Each socket is closed once its accept has let go of it (so no other socket's descriptor is unwatched).
        await asyncio.gather(*(task for _, task in self._listening), return_exceptions=True)
        for sock, _ in self._listening:
            sock.close()
        if self._housekeeping is not None:
            self._housekeeping.cancel()
        # Closing the sockets ends each connection's task; waking the waiting requests ends theirs.
        self._closing = True
        for stream in list(self._connections):
            stream.close()
        self._changed()
        tasks = list(self._tasks)
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=5)
            for task in late:
                task.cancel()

    async def _serve(self, listener, mechanisms, connection, stream):
        peer = stream.get_extra_info("peername")
        where = f"{peer[0]}:{peer[1]}" if peer else "?"
        session = Session(listener, self.state.credentials, mechanisms, where)
        if len(self._connections) >= self.config["max.connections"]:
            log.warning("%s: refused, max.connections=%d reached", where, self.config["max.connections"])
            stream.close()
            return
        loop = asyncio.get_running_loop()
        self._connections[stream] = loop.time()
        self._tasks.add(asyncio.current_task())
        idle = self.config["connections.max.idle.ms"] / 1000
        # Kafka shows a member's host as Java prints an InetAddress: "/127.0.0.1".
        client_host = "/" + where.rpartition(":")[0]
        sendfile = listener.protocol in ("PLAINTEXT", "SASL_PLAINTEXT") and hasattr(loop, "sendfile")
        try:
            while True:
                await stream.drain()  # a client that does not read its answers is not read from either
                self._connections[stream] = loop.time()
                try:
                    frame = await stream.frame()
                    if frame is None:
                        if stream in self._idled:
                            log.info("%s: closed after %.0f s idle (connections.max.idle.ms)", where, idle)
                        return
                    self._connections[stream] = None
                    event = connection.receive_frame(frame)
                except ProtocolError as e:
                    # A request kafkaproto cannot read: an ApiVersions at a version it lacks keeps its header.
                    if e.header is None:
                        log.warning("%s: closing the connection: %s", where, e)
                        return
                    if not self._refuse(connection, stream, e.header, where):
                        return
                    continue
                if isinstance(event, SaslBytes):
                    try:
                        stream.write(connection.send_raw(session.step(event.data)))
                    except AuthenticationError as e:
                        log.warning("%s: authentication failed (%s): %s", where, session.mechanism, e)
                        return
                    if session.authenticated:
                        log.info("%s: authenticated as %s (%s)", where, session.principal, session.mechanism)
                    continue
                if not session.authenticated and event.header.request_api_key not in BEFORE_AUTHENTICATION:
                    log.warning("%s: %s before authenticating on SASL listener %s; closing the connection",
                                where, type(event.body).__name__, listener.name)
                    return
                if unserved(self.state, event.header) is not None:
                    if not self._refuse(connection, stream, event.header, where):
                        return
                    continue
                ctx = Context(self.state, event.header, session=session, client_host=client_host,
                              regions=[] if sendfile else None)
                try:
                    response = await self._answer(ctx, event, where)
                    if response is None:
                        return
                    if event.expects_response:
                        try:
                            answer = connection.send_response(event, response, parts=bool(ctx.regions))
                        except Exception:  # a handler's answer that cannot be written: its bug, logged whole
                            log.exception("%s: the answer to %s v%d cannot be written; closing the connection",
                                          where, type(event.body).__name__, event.version)
                            return
                        if ctx.regions:
                            sendfile = await _send_parts(stream, answer)
                        else:
                            stream.write(answer)
                finally:
                    _release(ctx)
                if session.failed:
                    await stream.drain()
                    return
        except (ConnectionError, OSError) as e:
            log.info("%s: connection lost: %s", where, e)
        finally:
            self._connections.pop(stream, None)
            self._idled.discard(stream)
            self._tasks.discard(asyncio.current_task())
            stream.close()

    def _refuse(self, connection, stream, header, where):
        """Treat a request this broker does not serve as Kafka does (dispatch.unserved); False to close."""
        if unserved(self.state, header) == ANSWER_API_VERSIONS_V0:
            # UNSUPPORTED_VERSION and ApiVersions' own versions, at version 0, which every client reads (KIP-511).
            stream.write(connection.send_response(header, api_versions.refused(self.state), version=0))
            return True
        log.warning("%s: %s v%d is not served here; closing the connection, as Kafka does", where,
                    api(header.request_api_key).name, header.request_api_version)
        return False

    async def _answer(self, ctx, event, where):
        """The response to a request, or None to close the connection."""
        loop = asyncio.get_running_loop()
        deadline = None
        try:
            while True:
                response = dispatch(ctx, event.body)
                if not isinstance(response, Wait):
                    return response
                _release(ctx)  # what it read is read again when it is asked again
                if deadline is None or ctx.final:  # a Wait after its time was up starts a new one
                    deadline = loop.time() + response.ms / 1000
                try:
                    self._change_awaited = True
                    await asyncio.wait_for(self._change.wait(), max(deadline - loop.time(), 0))
                    ctx.final = False
                except asyncio.TimeoutError:
                    ctx.final = True
                if self._closing:
                    return None
        except Exception as e:  # a handler's bug: logged whole, and answered as Kafka answers an unexpected error
            log.exception("%s: %s v%d failed", where, type(event.body).__name__, event.version)
            return self._error_response(event, errors.UNKNOWN_SERVER_ERROR, where, str(e))

    @staticmethod
    def _error_response(event, error, where, reason):
        """A response with only a top-level error code, where the response has one at that version; else None."""
        response_class = api(event.header.request_api_key).response
        try:
            body = response_class(error_code=error.code)
            if response_class.decode(body.encode(event.version), event.version).error_code == error.code:
                log.warning("%s: %s: answered %s", where, reason, error.name)
                return body
        except (TypeError, KafkaProtoError):
            pass
        log.warning("%s: %s; closing the connection (no error field to answer with)", where, reason)
        return None


class _Stream(asyncio.BufferedProtocol):
    """One connection's transport end: the client's bytes are received straight into its ServerConnection's
    frame buffer (a large request into a bytearray of its own, never copied on its way to the log), whole
    frames wait for the connection's task, and writes are paced as StreamWriter paces them (drain).

    It reads ahead while a request is handled, up to READ_AHEAD bytes of waiting frames."""

    def __init__(self, connection):
        self._connection = connection
        self.transport = None
        self._frames = collections.deque()
        self._waiting = 0  # bytes in _frames
        self._ended = False  # no more frames: end of stream, connection lost or an unreadable size prefix
        self._error = None  # what ended it, raised after the frames before it
        self._wake = None  # the future the connection's task waits on for frames
        self._writable = None  # the future drain waits on while the transport's buffer is full
        self._spare = None

    def connection_made(self, transport):
        self.transport = transport

    def get_buffer(self, sizehint):
        if not self._ended:
            try:
                return self._connection.get_buffer(sizehint)
            except ProtocolError as e:
                self._end(e)
        if self._spare is None:  # what still arrives after the end is dropped
            self._spare = bytearray(READ_SIZE)
        return self._spare

    def buffer_updated(self, nbytes):
        if self._ended:
            return
        try:
            frames = self._connection.buffer_updated(nbytes)
        except ProtocolError as e:
            self._end(e)
            return
        if frames:
            self._frames.extend(frames)
            self._waiting += sum(map(len, frames))
            if self._waiting >= READ_AHEAD:
                self.transport.pause_reading()
            self._wakeup()

    def eof_received(self):
        self._end(None)
        return False  # close: a Kafka client that stops sending is gone

    def connection_lost(self, exc):
        self._frames.clear()  # no one is left to read their answers
        self._waiting = 0
        self._end(exc)
        writable, self._writable = self._writable, None
        if writable is not None and not writable.done():
            writable.set_exception(ConnectionResetError("connection lost"))

    def pause_writing(self):
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self):
        writable, self._writable = self._writable, None
        if writable is not None and not writable.done():
            writable.set_result(None)

    def _end(self, error):
        if not self._ended:
            self._ended, self._error = True, error
            if not self.transport.is_closing():
                self.transport.pause_reading()
        self._wakeup()

    def _wakeup(self):
        wake, self._wake = self._wake, None
        if wake is not None and not wake.done():
            wake.set_result(None)

    async def frame(self):
        """The next whole frame; None at the end of the stream. An unreadable size prefix or a lost
        connection is raised once the frames before it are taken."""
        while not self._frames:
            if self._ended:
                if self._error is not None:
                    raise self._error
                return None
            self._wake = asyncio.get_running_loop().create_future()
            await self._wake
        frame = self._frames.popleft()
        self._waiting -= len(frame)
        if not self._frames and not self._ended and not self.transport.is_reading():
            self.transport.resume_reading()
        return frame

    def write(self, data):
        self.transport.write(data)

    async def drain(self):
        if self._writable is not None:
            await self._writable

    def get_extra_info(self, name):
        return self.transport.get_extra_info(name)

    def close(self):
        self.transport.close()


async def _send_parts(stream, parts):
    """Write a frame's parts, each FileRegion with sendfile(2); False when this event loop has no sendfile
    for the connection (its regions were read and written instead)."""
    loop = asyncio.get_running_loop()
    transport = stream.transport
    native = True
    for part in parts:
        if type(part) is not FileRegion:
            stream.write(part)
            continue
        if not native:
            stream.write(part.read())
            continue
        sent = 0
        if not transport.get_write_buffer_size():
            # Nothing of ours is waiting to go out, so the socket can take the bytes at once: usually all of
            # them, in one system call and no turn of the event loop.
            try:
                sent = os.sendfile(transport.get_extra_info("socket").fileno(), part.fd, part.position, part.size)
            except (BlockingIOError, InterruptedError):
                pass
        if sent < part.size:
            try:
                await loop.sendfile(transport, part, part.position + sent, part.size - sent, fallback=False)
            except (NotImplementedError, asyncio.SendfileNotAvailableError):
                native = False
                stream.write(part.read()[sent:])
    return native


def _release(ctx):
    if ctx.regions:
        for region in ctx.regions:
            region.release()
        ctx.regions.clear()


def _tune(conn, send_buffer):
    """The options Kafka gives an accepted connection: no Nagle delay, keepalive, its send buffer."""
    try:
        if conn.family in (socket.AF_INET, socket.AF_INET6):
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        if send_buffer != -1:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    except OSError as e:  # the peer may already be gone; the connection's first read says so
        log.debug("socket options of %s not set: %s", _peer(conn), e)


async def _listen(host, port, receive_buffer=-1):
    """Bound, listening, non-blocking sockets for host:port, one per address host resolves to (as
    asyncio.start_server makes them); port 0 takes a free port, the same one on every address. A
    receive_buffer other than -1 is set before bind, as Kafka does, so that the TCP window the
    connections offer is scaled for it."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets = []
    seen = set()
    try:
        for family, kind, proto, _, address in infos:
            if (family, address) in seen:
                continue
            seen.add((family, address))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if receive_buffer != -1:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)  # the IPv4 address binds on its own
            if port == 0 and len(sockets) > 1:
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    if not sockets:
        raise OSError(f"{host}:{port}: no address to listen on")
    return sockets


def _peer(conn):
    try:
        host, port = conn.getpeername()[:2]
        return f"{host}:{port}"
    except OSError:
        return "?"
