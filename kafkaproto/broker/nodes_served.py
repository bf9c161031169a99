"""The brokers of a cluster served by one process (kafkaproto.nodes), as the Server (server.py) listens for them.

Every broker listens on the listeners the first one has: the i-th after the first on each listener's configured
port + i (any free port for port 0), and is advertised likewise. The listeners being one configuration for every
broker, a change made while running (listeners.py) reaches each: a listener added opens on every running broker, one
removed closes on every broker with its connections, and a TLS listener's new stores serve the next connections of
each. A broker stopped by a test (stop_node) listens again when started (start_node), on the listeners the first
broker has then: those it had on the ports it had, a listener added meanwhile at its port + i.
"""

import asyncio
import logging

from .config import ConfigError, Listener
from .state.replicas import start_node, stop_node

log = logging.getLogger("kafkaproto.broker")


def shut(running):
    """Stop accepting on an open listener (server.py's _Open) and close its connections; it is closed from then on.
    The tasks that accepted on it: each socket is closed once its task has let go of it (so no other socket's
    descriptor is unwatched), which awaiting them waits for."""
    running.closed = True
    listening, running.listening = running.listening, []
    loop = asyncio.get_running_loop()
    for sock, task in listening:
        # Unwatched first: an accept already queued in this turn of the loop would otherwise run after the
        # cancel, take a waiting connection into the cancelled future and leave it open with nobody serving it.
        loop.remove_reader(sock.fileno())
        task.cancel()
        task.add_done_callback(lambda _, sock=sock: sock.close())
    for stream in list(running.streams):
        stream.close()
    return [task for _, task in listening]


class NodesServed:
    """The Server's part for the cluster's brokers. It uses the Server's state, config, _open_listeners (the first
    broker's listeners by name: the others' pattern), _open_listener, _closing and _wake_all."""

    def _init_nodes(self):
        self._node_listeners = {}  # node id -> {listener name: _Open} of the brokers after the first
        # Opening listeners, stopping and starting brokers take turns: a broker stopped while a listener opens for
        # it would otherwise go on accepting there.
        self._node_changes = asyncio.Lock()

    def _listeners_of(self, node):
        """{name: _Open} of a broker of the cluster (closed ones while it is stopped)."""
        return self._open_listeners if node == self.state.node_id else self._node_listeners.get(node, {})

    def _other_listeners(self):
        return [running for mine in self._node_listeners.values() for running in mine.values()]

    async def _open_other_nodes(self):
        """At start: the listeners of the brokers after the first; one that cannot be opened raises (ListenError,
        ConfigError)."""
        for node in self.state.cluster.nodes.ids[1:]:
            self._node_listeners[node] = {}
            await self._listen_as_first(node)
        self._advertise_nodes()

    async def _listen_as_first(self, node, strict=True):
        """Make node listen on each listener the first broker has: a listener it had (closed while it was stopped)
        on the port it had, another at the listener's port + i (any free port for port 0); close those the first
        broker no longer has. strict: raise when a listener cannot be opened (ListenError, ConfigError), else log
        it and go on."""
        mine = self._listeners_of(node)
        index = self.state.cluster.nodes.ids.index(node)
        for name in [name for name in mine if name not in self._open_listeners]:
            shut(mine.pop(name))
        for name, first in list(self._open_listeners.items()):
            had = mine.get(name)
            if had is not None and not had.closed:
                continue
            configured = first.setup.listener.port
            port = had.bound.port if had is not None else configured + index if configured else 0
            try:
                opened = await self._open_listener(first.setup, node, port)
            except (ConfigError, OSError) as e:
                if strict:
                    raise
                log.error("broker %d: listener %s is not opened: %s", node, name, e)
                continue
            if self._closing or self._open_listeners.get(name) is not first or mine.get(name) is not had:
                shut(opened)  # the listener was closed, or the server stopped, while it was being opened
                continue
            # the first broker's listener may have taken new stores meanwhile
            opened.setup, opened.context = first.setup, first.context
            mine[name] = opened
            if not strict:
                log.info("broker %d: listener %s opened on %s:%d", node, name, opened.bound.host, opened.bound.port)

    async def _follow_on_nodes(self):
        """Open on each running broker after the first the listeners of the first it lacks (one named while
        running); one that cannot be opened on a broker is logged, as on the first."""
        for node in self.state.cluster.nodes.ids[1:]:
            if self.state.cluster.nodes.is_alive(node):  # a stopped broker opens them when it starts
                await self._listen_as_first(node, strict=False)

    def _close_on_nodes(self, name):
        """Close listener name on every broker after the first, with its connections."""
        for node, mine in self._node_listeners.items():
            running = mine.pop(name, None)
            if running is not None:
                connections = len(running.streams)
                shut(running)
                log.info("broker %d: listener %s closed, with its %d connections", node, name, connections)

    def _share_stores(self, name):
        """The brokers after the first take the first's setup and TLS context of listener name (its new stores)."""
        first = self._open_listeners[name]
        for mine in self._node_listeners.values():
            if name in mine:
                mine[name].setup, mine[name].context = first.setup, first.context

    def _advertise_nodes(self):
        """What clients are told about the brokers after the first (state.advertised_by_node): the first's
        advertised listeners, each on the broker's own port for it, or advertised.listeners' port + i where it gives
        one (other than 0)."""
        static = {listener.name: listener.port for listener in self.config.advertised or ()}
        for index, node in enumerate(self.state.cluster.nodes.ids[1:], 1):
            mine = self._node_listeners.get(node, {})
            self.state.advertised_by_node[node] = [
                Listener(a.name, a.host, static[a.name] + index if static.get(a.name)
                         else mine[a.name].bound.port if a.name in mine else a.port + index, a.protocol)
                for a in self.state.advertised]

    async def stop_node(self, node):
        """Stop a broker of the cluster, as if its process died: its listeners stop accepting, its connections
        close, and its partitions' leaders move to the other replicas of their ISR (state/replicas.py)."""
        async with self._node_changes:
            changed = stop_node(self.state.cluster, node)  # first: it raises for a broker not running
            await asyncio.gather(*(task for running in list(self._listeners_of(node).values())
                                   for task in shut(running)), return_exceptions=True)
        log.info("broker %d stopped; %d partitions changed leader or ISR", node, len(changed))
        self._wake_all()

    async def start_node(self, node):
        """Start a stopped broker again, on the listeners the first broker has (those it had on their addresses):
        it rejoins the ISR of its partitions. A listener that cannot be opened raises, and the broker stays
        stopped."""
        async with self._node_changes:
            if node not in self.state.cluster.nodes.stopped:
                raise ValueError(f"broker {node} is not stopped")
            try:
                await self._listen_as_first(node)
            except BaseException:
                for running in list(self._listeners_of(node).values()):
                    shut(running)
                raise
            changed = start_node(self.state.cluster, node)
            self._advertise_nodes()
        log.info("broker %d started again; %d partitions changed leader or ISR", node, len(changed))
        self._wake_all()

    @property
    def node_endpoints(self):
        """{node id: (host, port)} of each broker's first listener, as advertised."""
        return {node: self.state.endpoint_for(None, node) for node in self.state.cluster.nodes.ids}
