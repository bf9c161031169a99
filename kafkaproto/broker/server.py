"""The network side: asyncio listeners, one task per connection, requests answered in order.

Each connection receives its bytes straight into a kafkaproto ServerConnection's
frame buffer (framing, size limits, correlation ids, the ApiVersions fallback;
a large request lands in a buffer of its own and goes to the log without
another copy), hands each request to dispatch, and writes the response. As in
Kafka, a connection's requests are handled one at a time, so its responses
leave in order: while one is answered, the connection reads ahead at most
stream.READ_AHEAD bytes of requests (Kafka mutes the channel), so a pipelining
client waits in its own socket buffer and costs the broker little. Requests read and ready but not yet
started, over every connection, stop all reading at queued.max.requests. A Fetch
waiting for data holds only its own connection, wakes only when one of its
partitions takes a batch (waiting.py), and is dropped the moment its client hangs up.
A connection that sends what cannot be read, or stays idle past
connections.max.idle.ms (a TLS handshake too), is closed with a log line.
Which accepted connections are taken, and when (max.connections,
max.connections.per.ip and its overrides, max.connection.creation.rate, the
connection_creation_rate quota), admission.py decides. A failed
authentication is answered after connection.failed.authentication.delay.ms,
then the connection is closed.
The once-a-second housekeeping runs each of its steps on its own: one that
fails is logged with its cause and the others go on, at this turn and the next.
On SASL listeners a client gets nothing but ApiVersions and the SASL exchange
until it has authenticated; TLS listeners wrap the same loop. On plain-text
listeners a Fetch's record bytes go from the segment files to the socket with
sendfile(2), never through Python (the handler answers with FileRegions).
When accept() fails (out of file descriptors, say), the listener backs off and
tries again, with one warning when that starts and one line when it accepts again.
After a change of this broker's dynamic configs (reconfigure), the listeners are
opened and closed as listeners.py says (a closed one's connections with it), a
TLS listener's next connections get its new key store and trust store, and new
connections meet the new max.connections.per.ip.overrides (admission.py); on a
cluster served by this process, on every broker of it (nodes_served.py).
"""

import asyncio
import errno
import logging
import os
import socket

from .. import errors
from ..connection import ProtocolError, SaslBytes, ServerConnection
from ..messages import ApiKey
from ..exceptions import KafkaProtoError
from ..protocol import FileRegion
from ..registry import api
from .admission import Admission
from .config import ConfigError, Listener
from .dispatch import ANSWER_API_VERSIONS_V0, Close, Context, Wait, dispatch, load_handlers, unserved
from .handlers import api_versions
from .listeners import Settings, Setup, unknown_mechanisms
from .nodes_served import NodesServed, shut
from .security import MECHANISMS, AuthenticationError, Session
from .settings import Invalid
from .state import CHANGED, WAKE_ALL
from .state.clock import clock_ms
from .state.data_dir import remove_directories
from .stream import RequestQueue, Stream
from .waiting import Waiting

log = logging.getLogger("kafkaproto.broker")
# Kafka's defaults of the settings this module reads with _setting (when the configuration does not define them).
KAFKA_DEFAULTS = {"queued.max.requests": 500, "connection.failed.authentication.delay.ms": 100}
# What a client on a SASL listener may send before it has authenticated (anything else closes the connection).
BEFORE_AUTHENTICATION = {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
HOUSEKEEPING_SECONDS = 1.0
LISTEN_BACKLOG = 100
# While accept() fails, the wait before the next try: doubling from the first to the last.
ACCEPT_BACKOFF_SECONDS = (0.05, 1.0)


class ListenError(OSError):
    """A listener's address cannot be listened on: taken, not this machine's, or a port that needs privileges.
    The message names the address and why, for the person starting the broker."""

    def __init__(self, listener, error):
        host = f"[{listener.host}]" if ":" in listener.host else listener.host
        super().__init__(error.errno, f"cannot listen on {host}:{listener.port}: {_listen_reason(listener, error)}")
        self.listener = listener

    def __str__(self):
        return self.strerror


def _listen_reason(listener, error):
    if isinstance(error, socket.gaierror):
        return f"{listener.host!r} is not a host name or address known here ({error.strerror})"
    if error.errno == errno.EADDRINUSE:
        return ("address already in use (another broker or program listens there; stop it, or choose another "
                "port, or port 0 for any free one)")
    if error.errno == errno.EACCES:
        return "permission denied (ports below 1024 need privileges)"
    if error.errno == errno.EADDRNOTAVAIL:
        return f"cannot assign the address ({listener.host} is not an address of this machine)"
    return _reason(error)


def _reason(error):
    """An exception's message for a person: an OSError's description, lower-cased, with its file if it has one."""
    if isinstance(error, OSError) and error.strerror:
        text = error.strerror[:1].lower() + error.strerror[1:]
        return f"{text}: {error.filename}" if error.filename else text
    return str(error)


class _Open:
    """A listener the server has open: what it was opened with (its Setup: TLS stores, SASL mechanisms, client
    authentication), the TLS context its next connections get, where it listens (bound: the port resolved), its
    listening sockets with their accept tasks, and its connections."""

    def __init__(self, setup, context, bound, node):
        self.setup, self.context, self.bound = setup, context, bound
        self.node = node  # the broker of the cluster it is a listener of (state/replicas.py)
        self.listening = []  # (listening socket, the task accepting on it)
        self.streams = set()
        self.closed = False  # removed, or its broker stopped (nodes_served.shut): it takes no more connections

    @property
    def listener(self):
        return self.setup.listener


def _setting(config, key):
    """A broker setting by its Kafka key: the configuration's value, or Kafka's default (KAFKA_DEFAULTS) for a key
    the configuration does not define (given anyway, it is read from the keys the configuration keeps as text)."""
    try:
        return config[key]
    except KeyError:
        default = KAFKA_DEFAULTS[key]
        text = getattr(config, "extra", {}).get(key)
        if text is None:
            return default
        try:
            return type(default)(str(text).strip())
        except ValueError:
            log.warning("%s=%r is not a number; Kafka's default %r is used", key, text, default)
            return default


class Server(NodesServed):
    """Serves a BrokerState on the configured listeners, on the running event loop (and the other brokers of its
    cluster: NodesServed)."""

    def __init__(self, state):
        load_handlers()
        self.state = state
        self.config = state.config
        self._open_listeners = {}  # name -> _Open, in the order opened (the first broker's)
        self._init_nodes()  # the cluster's other brokers (kafkaproto.nodes)
        self._opening = set()  # names of listeners being opened while running
        # stream -> when it last read (loop time), or None while it answers a request: the housekeeping closes
        # those idle past connections.max.idle.ms (a timer per read would cost a task per read)
        self._connections = {}
        self._idled = set()
        self._admission = Admission(self.config, state.cluster.quotas, self._spawn)  # which connections are taken
        self._queue = RequestQueue(int(_setting(self.config, "queued.max.requests")))  # read-only, as in Kafka
        self._tasks = set()
        self._closing = False
        self._waiting = Waiting()  # requests that wait (dispatch.Wait), and what wakes them
        self._housekeeping = None
        state.on_change = self._waiting.changed
        self.controls = None  # a test's moves and faults (cluster_controls.py), and where the channel to them is
        self.control_address = None

    def _wake_all(self):
        """Wake every waiting request (logs shrank, partitions went, the broker stops): each looks again."""
        self._waiting.wake_all()

    async def start(self):
        """Listen on every listener, or on none: a listener that cannot be opened (ListenError) or set up
        (ConfigError) closes those opened before it."""
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    @property
    def listeners(self):
        """The listeners open, as bound (ports resolved)."""
        return [running.bound for running in self._open_listeners.values()]

    def running(self):
        """{name: Setup} of the listeners open (listeners.check_change compares a change with them)."""
        return {name: running.setup for name, running in self._open_listeners.items()}

    def _settings(self):
        """The settings in effect: the configuration, with this broker's dynamic configs over it."""
        return Settings(self.config, self.state.cluster.configs)

    async def _start(self):
        settings = self._settings()
        try:
            listeners = settings.listeners()
        except Invalid as e:  # dynamic listeners an older version wrote: the configuration's are opened
            log.error("the metadata log's listeners are not used: %s", e)
            listeners = self.config.listeners
        for listener in listeners:
            self._open_listeners[listener.name] = await self._open_listener(settings.setup(listener))
        self._advertise(settings)
        await self._open_other_nodes()
        self.state.network = self
        self._housekeeping = asyncio.get_running_loop().create_task(self._housekeep())

    async def _open_listener(self, setup, node=None, port=None):
        """An _Open listening where setup says (at port, for another broker of the cluster than the first), with its
        TLS context (ConfigError when it cannot be made) and SASL mechanisms; ListenError when the address cannot be
        listened on."""
        listener = setup.listener
        try:
            context = setup.context()
        except (OSError, ValueError) as e:  # ssl.SSLError is an OSError
            why = _reason(e)
            files = [f"{key}={value}" for key in ("ssl.keystore.location", "ssl.truststore.location")
                     if (value := setup.stores.get(key))]
            if isinstance(e, OSError) and not e.filename and files:
                why += f" ({', '.join(files)})"
            raise ConfigError(why if why.startswith(f"listener {listener.name} ")
                              else f"listener {listener.name}: TLS cannot be set up: {why}") from None
        unknown = unknown_mechanisms(setup, MECHANISMS)
        if unknown:
            raise ConfigError(f"listener {listener.name}: SASL mechanisms {', '.join(unknown)} are not "
                              f"implemented (known: {', '.join(MECHANISMS)})")
        port = listener.port if port is None else port
        try:
            sockets = await _listen(listener.host, port, self.config["socket.receive.buffer.bytes"])
        except OSError as e:
            raise ListenError(Listener(listener.name, listener.host, port, listener.protocol), e) from None
        running = _Open(setup, context, Listener(listener.name, listener.host, sockets[0].getsockname()[1],
                                                 listener.protocol), self.state.node_id if node is None else node)
        loop = asyncio.get_running_loop()
        running.listening = [(sock, loop.create_task(self._accept(sock, running))) for sock in sockets]
        return running

    def _advertise(self, settings):
        """What clients are told to use (state.advertised): advertised.listeners (read only at start), else every
        open listener, in the order of the listeners setting; a wildcard host is this machine's name, a port 0
        the listener's bound port."""
        bound = [running.bound for running in self._open_listeners.values()]
        if not bound:
            return
        try:
            order = [listener.name for listener in settings.listeners()]
        except Invalid:
            order = []
        bound.sort(key=lambda b: order.index(b.name) if b.name in order else len(order))
        by_name = {b.name: b for b in bound}
        advertised = []
        for i, listener in enumerate(self.config.advertised or bound):
            port = listener.port or by_name.get(listener.name, bound[min(i, len(bound) - 1)]).port
            host = listener.host if listener.host not in ("0.0.0.0", "::", "") else socket.gethostname()
            advertised.append(Listener(listener.name, host, port, listener.protocol))
        self.state.advertised = advertised

    def reconfigure(self):
        """Apply this broker's dynamic configs as they now are (listeners.check_change took the change): new
        max.connections.per.ip.overrides for the next connections, listeners closed and opened, and each TLS
        listener whose stores changed given a new context for its next connections."""
        if self._closing:
            return
        settings = self._settings()
        self._admission.update_overrides()
        try:
            listeners = settings.listeners()
        except Invalid as e:  # check_change refuses such a change: a log written by another version
            log.error("listeners: %s; the listeners open stay", e)
            return
        wanted = {listener.name for listener in listeners}
        for name in [name for name in self._open_listeners if name not in wanted]:
            self._close_listener(name)
            self._close_on_nodes(name)
        for running in self._open_listeners.values():
            stores = settings.stores(running.listener)
            if stores is not None and stores != running.setup.stores:
                self._new_stores(running, stores)
                self._share_stores(running.listener.name)
        for listener in listeners:
            if listener.name not in self._open_listeners and listener.name not in self._opening:
                self._opening.add(listener.name)
                self._spawn(self._open_added(settings.setup(listener)))
        self._advertise(settings)
        self._advertise_nodes()

    async def _open_added(self, setup):
        """Open a listener named while running, on every running broker of the cluster; one that cannot be opened
        is logged (the config stays)."""
        async with self._node_changes:  # not while a broker of the cluster stops or starts
            name = setup.name
            try:
                running = await self._open_listener(setup)
            except (ConfigError, OSError) as e:
                log.error("listener %s (%s) is not opened: %s", name, setup.listener, e)
                return
            finally:
                self._opening.discard(name)
            self._open_listeners[name] = running
            try:
                still = name in {listener.name for listener in self._settings().listeners()}
            except Invalid:
                still = False
            if self._closing or not still:  # closed again, or the broker stopped, while it was being opened
                self._close_listener(name)
                return
            if not self.state.cluster.nodes.is_alive(self.state.node_id):
                shut(running)  # a test stopped the first broker: it listens there (that port) when started
            log.info("listener %s opened on %s:%d", name, running.bound.host, running.bound.port)
            await self._follow_on_nodes()
            self._advertise(self._settings())
            self._advertise_nodes()

    def _close_listener(self, name):
        """Stop accepting on a listener and close its connections, as Kafka does with a listener removed."""
        running = self._open_listeners.pop(name, None)
        if running is None:
            return
        connections = len(running.streams)
        shut(running)
        log.info("listener %s closed, with its %d connections", name, connections)

    def _new_stores(self, running, stores):
        """A TLS listener's new key store and trust store: a new context for its next connections (the open ones
        keep theirs); the listener keeps its client authentication, as Kafka's does."""
        setup = Setup(running.listener, running.setup.mechanisms, running.setup.client_auth, stores)
        try:
            context = setup.context()
        except (OSError, ValueError) as e:  # checked before the change was taken: its files changed meanwhile
            log.error("listener %s keeps its TLS context: the new one cannot be made (%s)", running.listener.name,
                      _reason(e))
            return
        running.setup, running.context = setup, context
        log.info("listener %s: new TLS key store and trust store, for the connections from now on",
                 running.listener.name)

    async def _housekeep(self):
        """Once every HOUSEKEEPING_SECONDS: close idle connections, then the state's housekeeping
        (BrokerState.tick, which supervises its own steps), whose directory removals run on a thread (removing a
        topic of gigabytes on the event loop stalled every connection for 0.1 s). Each part that fails is logged
        and tried again at the next turn; the others go on."""
        while True:
            await asyncio.sleep(HOUSEKEEPING_SECONDS)
            for name, part in (("closing idle connections", self._close_idle),
                               ("the state's housekeeping", self._tick)):
                try:
                    await part()
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    log.error("housekeeping: %s failed (%s: %s); tried again at its next turn", name,
                              type(e).__name__, e, exc_info=True)

    async def _tick(self):
        done = self.state.tick(clock_ms())
        try:
            if done.remove:
                await asyncio.to_thread(remove_directories, done.remove)
        finally:
            if WAKE_ALL in done.wake:
                self._wake_all()  # logs start later: a fetch waiting there may now be out of range
            elif CHANGED in done.wake:
                self._waiting.changed()

    async def _close_idle(self):
        if self.config["connections.max.idle.ms"] < 0:  # Kafka's "never"
            return
        idle_before = asyncio.get_running_loop().time() - self.config["connections.max.idle.ms"] / 1000
        for stream, last_read in list(self._connections.items()):
            if last_read is not None and last_read < idle_before:
                self._idled.add(stream)
                stream.close()  # its read then ends, and its task says why

    async def _accept(self, sock, running):
        """Accept connections on a listening socket of an open listener until cancelled; each is served by a task
        of its own, with the listener's TLS context as it is when the connection comes."""
        loop = asyncio.get_running_loop()
        listener = running.listener
        backoff = failing_since = None
        while True:
            await self._admission.slot()
            try:
                conn, address = await loop.sock_accept(sock)
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
            ip = address[0] if isinstance(address, tuple) else ""
            wait = self._admission.creation_wait_ms(listener, len(self._open_listeners))
            if wait:
                # As Kafka's acceptor: this listener serves this connection, and takes the next, that much later.
                try:
                    await asyncio.sleep(wait / 1000)
                except asyncio.CancelledError:
                    conn.close()
                    raise
            if not self._admission.admit(conn, ip, listener, len(self._open_listeners)):
                continue
            _tune(conn, self.config["socket.send.buffer.bytes"])
            self._spawn(self._open(conn, ip, running))

    def _spawn(self, coroutine):
        """Run coroutine as a task of the server's: stop() waits for it, and what escapes it is logged."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task):
        """A connection's task ended: what escaped it is logged (it would otherwise surface, if ever, as
        "Task exception was never retrieved" when the task is collected)."""
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            error = task.exception()
            log.error("a connection's task failed: %s: %s", type(error).__name__, error,
                      exc_info=(type(error), error, error.__traceback__))

    async def _open(self, conn, ip, running):
        """A Stream over an accepted socket (after the TLS handshake, on a TLS listener, with the listener's context
        as it is now), then serve it. The handshake may take connections.max.idle.ms at most: a client that stalls
        in it is closed as an idle one."""
        loop = asyncio.get_running_loop()
        context = running.context
        try:
            connection = ServerConnection(max_frame=self.config["socket.request.max.bytes"])
            stream = Stream(connection, self._queue)
            idle = self.config["connections.max.idle.ms"] / 1000
            # a negative idle time never closes an idle connection; a handshake then has asyncio's 60 s
            options = {"ssl": context, "ssl_handshake_timeout": idle if idle > 0 else None} if context else {}
            try:
                await loop.connect_accepted_socket(lambda: stream, conn, **options)
            except (OSError, asyncio.TimeoutError) as e:  # ssl.SSLError is an OSError
                if isinstance(e, asyncio.TimeoutError) or "handshake is taking longer" in str(e):
                    log.info("connection from %s closed after %.0f s idle in its TLS handshake "
                             "(connections.max.idle.ms)", _peer(conn), idle)
                else:
                    log.info("connection from %s not started: %s", _peer(conn), e)
                conn.close()
                return
            if running.closed:  # the listener closed during the handshake
                stream.close()
                return
            running.streams.add(stream)
            try:
                await self._serve(running.listener, running.setup.mechanisms, connection, stream, running.node)
            finally:
                running.streams.discard(stream)
        finally:
            self._admission.closed(ip)

    async def stop(self):
        self.state.network = None
        self._closing = True  # a listener still being opened closes once it is
        await asyncio.gather(*(task for running in [*self._open_listeners.values(), *self._other_listeners()]
                               for task in shut(running)), return_exceptions=True)
        self._admission.release_held()
        if self._housekeeping is not None:
            self._housekeeping.cancel()
        # Closing the sockets ends each connection's task; waking the waiting requests ends theirs.
        for stream in list(self._connections):
            stream.close()
        self._wake_all()
        tasks = list(self._tasks)
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=5)
            for task in late:
                task.cancel()

    async def _serve(self, listener, mechanisms, connection, stream, node=None):
        peer = stream.get_extra_info("peername")
        where = f"{peer[0]}:{peer[1]}" if peer else "?"
        session = Session(listener, self.state.credentials, mechanisms, where)
        loop = asyncio.get_running_loop()
        self._connections[stream] = loop.time()
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
                        await self._failed_authentication(stream)  # no answer to give: closed after the delay
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
                              regions=[] if sendfile else None, node_id=node)
                try:
                    response = await self._answer(ctx, event, where, stream)
                    if response is None:
                        return
                    if isinstance(response, Close):
                        log.info("%s: closing the connection: %s", where, response.reason)
                        return
                    if session.failed:
                        await self._failed_authentication(stream)
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
                    if ctx.throttle_ms:  # over a quota: nothing more is read from the client meanwhile
                        stream.send_held()
                        await stream.drain()
                        await asyncio.wait((stream.lost,), timeout=ctx.throttle_ms / 1000)
                finally:
                    _release(ctx)
                if session.failed:
                    await stream.drain()
                    return
        except (ConnectionError, OSError) as e:
            log.info("%s: connection lost: %s", where, e)
        except Exception:  # this module's bug: logged whole, with the connection it ended
            log.exception("%s: closing the connection after an unexpected error", where)
        finally:
            self._connections.pop(stream, None)
            self._idled.discard(stream)
            stream.close()
            try:
                self.state.connection_closed(session)
            except Exception:
                log.exception("%s: what the connection held could not be given back", where)

    async def _failed_authentication(self, stream):
        """Wait connection.failed.authentication.delay.ms before the answer to a failed authentication (then the
        connection is closed), as Kafka does: a client guessing passwords gets one guess per delay and
        connection, and its connection counts against max.connections meanwhile. A client that hangs up ends
        the wait."""
        delay = _setting(self.config, "connection.failed.authentication.delay.ms") / 1000
        stream.send_held()
        if delay > 0:
            await asyncio.wait((stream.lost,), timeout=delay)

    def _refuse(self, connection, stream, header, where):
        """Treat a request this broker does not serve as Kafka does (dispatch.unserved); False to close."""
        if unserved(self.state, header) == ANSWER_API_VERSIONS_V0:
            # UNSUPPORTED_VERSION and ApiVersions' own versions, at version 0, which every client reads (KIP-511).
            stream.write(connection.send_response(header, api_versions.refused(self.state), version=0))
            return True
        log.warning("%s: %s v%d is not served here; closing the connection, as Kafka does", where,
                    api(header.request_api_key).name, header.request_api_version)
        return False

    async def _answer(self, ctx, event, where, stream):
        """The response to a request, or None to close the connection. A request that waits (dispatch.Wait) is
        asked again when what it waits on changes or its time is up; when its client hangs up meanwhile, it is
        dropped at once (None), and its connection with it."""
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
                woken = loop.create_future()
                keys = self._waiting.watch(woken, response.on)
                stream.send_held()  # the answers before it do not wait with it
                try:
                    await asyncio.wait((woken, stream.lost), timeout=max(deadline - loop.time(), 0),
                                       return_when=asyncio.FIRST_COMPLETED)
                finally:
                    self._waiting.unwatch(woken, keys)
                if self._closing or stream.lost.done():
                    return None
                # Its time is up even when something woke it meanwhile: on a busy broker something always does,
                # and a request asked again whenever it is woken would never be answered.
                ctx.final = not woken.done() or loop.time() >= deadline
                woken.cancel()
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


async def _send_parts(stream, parts):
    """Write a frame's parts, each FileRegion with sendfile(2); False when this event loop has no sendfile
    for the connection (its regions were read and written instead)."""
    loop = asyncio.get_running_loop()
    transport = stream.transport
    native = True
    for part in parts:
        if transport.is_closing():  # the client hung up while its answer was being sent
            raise ConnectionResetError("the connection closed while its answer was being sent")
        if type(part) is not FileRegion:
            stream.write(part)
            continue
        if not native:
            stream.write(part.read())
            continue
        sent = 0
        stream.send_held()  # what comes before the region goes before it
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
            except RuntimeError as e:  # asyncio's word for a transport that closed meanwhile
                if not transport.is_closing():
                    raise
                raise ConnectionResetError(f"the connection closed while its answer was being sent ({e})") from e
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
