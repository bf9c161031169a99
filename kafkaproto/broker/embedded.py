"""Running the broker: ``serve`` on an event loop, ``Broker`` in a thread or a subprocess, and the command line."""

import argparse
import asyncio
import inspect
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading

from .cluster_controls import ClusterControls
from .config import BrokerConfig, ConfigError, Listener, parse_host_port
from .control_channel import Channel, ChannelClient
from .faults import Control, Fault
from .server import ListenError, Server
from ..allocator import keep_freed_memory
from ..uuid import Uuid
from .state import BrokerState

log = logging.getLogger("kafkaproto.broker")
STARTED = re.compile(r"started on (\S+):(\d+) ")
CHANNEL = re.compile(r"control channel on (\S+:\d+)")


async def serve(config, ready=None, stop=None):
    """Serve until stop (an asyncio.Event) is set; ready(server) is called once listening.

    A broker that cannot start (a listener's address in use, say) raises at once, having logged nothing about
    starting or stopping: the error is the first thing said about it."""
    state = BrokerState(config)
    server = Server(state)
    server.controls = ClusterControls(server)
    channel = None
    try:
        await server.start()
        if config["kafkaproto.control.channel"]:
            channel = await _open_channel(config["kafkaproto.control.channel"], server.controls)
    except BaseException:
        await server.stop()
        state.close()
        raise
    try:
        if channel is not None:
            server.control_address = channel.address
            log.info("control channel on %s", channel.address)
        host, port = state.endpoint
        log.info("kafkaproto broker started on %s:%d (cluster id %s, node id %d, data in %s)", host, port,
                 state.cluster.cluster_id, state.node_id, os.path.abspath(config.log_dir))
        for node, (host, port) in list(server.node_endpoints.items())[1:]:
            log.info("broker %d of the cluster on %s:%d", node, host, port)
        if ready is not None:
            ready(server)
        await (stop or asyncio.Event()).wait()
    finally:
        if channel is not None:
            await channel.close()
        await server.stop()
        state.close()
        log.info("kafkaproto broker stopped")


async def _open_channel(address, controls):
    host, port = parse_host_port(address)
    try:
        return await Channel(controls).open(host, port)
    except OSError as e:
        raise ListenError(Listener("control channel", host, port, "JSON lines"), e) from None


async def _call(function, *args):
    result = function(*args)
    return await result if inspect.isawaitable(result) else result


def _event_loop_policy(choice):
    """The event loop policy the command line serves on (kafkaproto.event.loop): None for asyncio's own;
    ConfigError when uvloop is asked for and missing."""
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        raise ConfigError("kafkaproto.event.loop=uvloop: uvloop is not installed (pip install "
                          "'kafkaproto[uvloop]')") from None
    return uvloop.EventLoopPolicy()


class Broker:
    """A broker on a free port of 127.0.0.1 with its data in a temporary directory (or log_dir), for tests.

        with Broker() as broker:
            KafkaProducer(bootstrap_servers=broker.bootstrap_servers)

    subprocess=True runs it as ``python -m kafkaproto.broker`` (so it can be killed);
    otherwise it runs on an event loop in a thread of this process.
    """

    def __init__(self, overrides=None, *, log_dir=None, subprocess=False, nodes=None):
        self.overrides = {"listeners": "PLAINTEXT://127.0.0.1:0", "group.initial.rebalance.delay.ms": "0",
                          **(overrides or {})}
        if nodes is not None:
            self.overrides["kafkaproto.nodes"] = str(nodes)
        if subprocess:  # what its move_leader, stop_node... reach it through
            self.overrides.setdefault("kafkaproto.control.channel", "127.0.0.1:0")
        self._tmp = None
        if log_dir is None and "log.dirs" not in self.overrides:
            self._tmp = tempfile.TemporaryDirectory(prefix="kafkaproto-broker-")
            log_dir = self._tmp.name
        if log_dir is not None:
            self.overrides["log.dirs"] = str(log_dir)
        self.log_dir = self.overrides["log.dirs"]
        self.subprocess = subprocess
        self.host = self.port = None
        self.ports = {}  # listener name -> port (the in-process broker; the first listener's is self.port)
        self.process = None
        self._thread = self._loop = self._stop = None
        self._state = self._server = None
        self.nodes = {}  # node id -> (host, port) of each broker of the cluster (in-process brokers)
        self.control_address = None  # "host:port" of its control channel (control_channel.py), when it has one

    @property
    def bootstrap_servers(self):
        """"host:port" of its first listener; with several brokers, of each broker's, comma-separated."""
        if len(self.nodes) > 1:
            return ",".join(f"{host}:{port}" for host, port in self.nodes.values())
        return f"{self.host}:{self.port}"

    def start(self, timeout=30):
        if self.subprocess:
            self._start_process(timeout)
        else:
            self._start_thread(timeout)
        return self

    def _start_thread(self, timeout):
        config = BrokerConfig(self.overrides, "Broker()")
        started = threading.Event()
        failure = []

        def ready(server):
            self._state, self._server = server.state, server
            self.nodes = server.node_endpoints
            self.host, self.port = server.state.endpoint
            self.control_address = server.control_address
            self.ports = {listener.name: listener.port for listener in server.state.advertised}
            started.set()

        def run():
            self._loop = asyncio.new_event_loop()
            self._stop = asyncio.Event()
            try:
                self._loop.run_until_complete(serve(config, ready, self._stop))
            except BaseException as e:  # reported to start()
                failure.append(e)
                started.set()
            finally:
                self._loop.close()

        self._thread = threading.Thread(target=run, name="kafkaproto-broker", daemon=True)
        self._thread.start()
        if not started.wait(timeout) or failure:
            raise RuntimeError(f"the broker did not start: {failure[0] if failure else 'timed out'}") from (
                failure[0] if failure else None)

    def _start_process(self, timeout):
        # -P: the working directory does not go first on sys.path, so a kafkaproto source tree there (this
        # project's own, when its tests run) does not shadow the installed, compiled package.
        args = [sys.executable] + (["-P"] if sys.version_info >= (3, 11) else []) + ["-m", "kafkaproto.broker"]
        for key, value in self.overrides.items():
            args += ["--override", f"{key}={value}"]
        self.process = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
        lines = []
        timer = threading.Timer(timeout, self.process.kill)
        timer.start()
        try:
            for line in self.process.stderr:
                lines.append(line)
                channel = CHANNEL.search(line)
                if channel:
                    self.control_address = channel.group(1)
                found = STARTED.search(line)
                if found:
                    self.host, self.port = found.group(1), int(found.group(2))
                    break
        finally:
            timer.cancel()
        if self.port is None:
            self.process.kill()
            raise RuntimeError("the broker did not start:\n" + "".join(lines[-20:]))
        # keep draining its log so the pipe never fills
        threading.Thread(target=self.process.stderr.read, daemon=True).start()

    def pushed_telemetry(self, client_instance_id=None, timeout=10):
        """The client metrics this broker kept (kafkaproto.client.telemetry.enable=true), oldest first: of one
        client instance (a Uuid), or of every one. Each is a state.telemetry.Pushed: who pushed it, when, and
        its data, decompressed (an OpenTelemetry MetricsData message, protobuf). The last pushes of each client
        are kept, for the most recent clients (state/telemetry.py). In-process brokers only, running or
        stopped."""
        if self._state is None:
            raise RuntimeError("pushed_telemetry needs a broker started in this process (subprocess=False)")
        telemetry = self._state.telemetry
        if self._thread is None:  # stopped: nothing else reads or changes it now
            return telemetry.pushed(client_instance_id)
        # The broker's state belongs to its event loop's thread: read there.
        return asyncio.run_coroutine_threadsafe(_call(telemetry.pushed, client_instance_id),
                                                self._loop).result(timeout)

    # ---- a cluster of several brokers (kafkaproto.nodes; state/replicas.py) -----------------------------------

    def _on_loop(self, function, *args, timeout=30):
        """function(*args) run on the broker's event loop (its state belongs to that thread); its result."""
        if self._server is None or self._thread is None:
            raise RuntimeError("this needs a running broker started in this process (subprocess=False)")
        return asyncio.run_coroutine_threadsafe(_call(function, *args), self._loop).result(timeout)

    def _ask(self, op, **fields):
        """op (a control channel's, with its fields; a topic by name or Uuid) carried out: on the event loop of a
        broker in this process, over the control channel of a subprocess one."""
        if self.process is not None:
            if self.control_address is None:
                raise RuntimeError("this broker runs without a control channel (kafkaproto.control.channel)")
            topic = fields.pop("topic", None)
            if topic is not None:
                fields["topic_id" if isinstance(topic, Uuid) else "topic"] = str(topic)
            client = ChannelClient(self.control_address)
            try:
                return client.ask(op, **fields)
            finally:
                client.close()
        if self._server is None or self._thread is None:
            raise RuntimeError("this needs a running broker")
        controls, f = self._server.controls, fields
        calls = {"leader": lambda: controls.describe(f["topic"], f["partition"]),
                 "move-leader": lambda: controls.move_leader(f["topic"], f["partition"], f["node"]),
                 "coordinator": lambda: {"node": controls.coordinator(f["kind"], f.get("key"))},
                 "move-coordinator": lambda: controls.move_coordinator(f["kind"], f["node"], f.get("key")),
                 "stop-node": lambda: controls.stop_node(f["node"]),
                 "start-node": lambda: controls.start_node(f["node"])}
        return self._on_loop(calls[op])

    def leader(self, topic, partition=0):
        """(leader node id, leader epoch) of a partition (topic by name or Uuid); -1 when none runs."""
        found = self._ask("leader", topic=topic, partition=partition)
        return found["leader"], found["leader_epoch"]

    def move_leader(self, topic, partition, node):
        """Make node lead the partition (a new leader epoch), as a reassignment and election would; a broker that
        is not a replica becomes one. Clients that ask the old leader get NOT_LEADER_OR_FOLLOWER."""
        self._ask("move-leader", topic=topic, partition=partition, node=node)

    def coordinator(self, kind, key=None):
        """The broker coordinating a group ("group", key its id), a transactional id ("transaction") or a share
        partition ("share", key ``group:topic id:partition``). The key may be left out when the internal topic has
        one partition (offsets.topic.num.partitions and its peers; a broker alone)."""
        return self._ask("coordinator", kind=kind, key=key)["node"]

    def move_coordinator(self, kind, node, key=None):
        """Move key's coordinator to node, as coordinator() names it: the leader of the internal topic's partition
        Kafka's hashing picks for key moves there, and with it every key of that partition."""
        self._ask("move-coordinator", kind=kind, node=node, key=key)

    def stop_node(self, node):
        """Stop a broker of the cluster as if its process died: its listeners close with its connections, and
        its partitions' leaders move to the other replicas in their ISR. start_node brings it back."""
        self._ask("stop-node", node=node)

    def start_node(self, node):
        self._ask("start-node", node=node)

    # ---- faults and controls (faults.py) ----------------------------------------------------------------------

    def _faults(self):
        if self._state is None:
            raise RuntimeError("faults and controls need a broker started in this process (subprocess=False)")
        return self._state.faults

    def add_fault(self, error, *, api_keys=None, node=None, topic=None, partition=None, budget=None, delay_ms=0):
        """Answer error (a kafkaproto.errors code) to matching requests until removed or budget requests were
        answered: those of api_keys (all by default), to node, for topic (a name or Uuid) and partition. The
        Fault; its fired counts the requests it answered, its remove() takes it out. See faults.py."""
        fault = Fault(error, api_keys, node, topic, partition, budget, delay_ms)
        return self._on_loop(self._server.controls.add_fault, fault)

    def control(self, function, *, api_keys=None, times=None):
        """Have function(request) see each request (of api_keys) first and answer it (a response body), delay it
        (faults.Delay(ms)), drop its connection (faults.DROP) or let it go on (None). It runs on the broker's
        event loop, so it must not block. The Control; its remove() takes it out."""
        return self._faults().add(Control(function, api_keys, times))

    def clear_faults(self):
        """Remove every fault and control."""
        self._faults().clear()

    def kill(self):
        """SIGKILL the subprocess (no clean shutdown), as a crash would."""
        self.process.kill()
        self.process.wait()

    def stop(self):
        if self.process is not None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGINT)
                try:
                    self.process.wait(30)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            self.process = None
        if self._thread is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(30)
            self._thread = None

    def cleanup(self):
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        self.cleanup()


DESCRIPTION = ("A Kafka broker, or a cluster of several in one process (--nodes). Settings use Apache Kafka's "
               "server.properties keys; with none it serves 127.0.0.1:9092 with its data in ./kafkaproto-data. "
               "Ctrl-C stops it cleanly.")


def add_arguments(parser):
    parser.add_argument("properties", nargs="?", help="a server.properties file")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting on top of the file (repeatable)")
    parser.add_argument("--nodes", type=int, metavar="N",
                        help="serve a cluster of N brokers (kafkaproto.nodes), the i-th after the first on each "
                             "listener's port + i")
    parser.add_argument("--control-channel", metavar="HOST:PORT",
                        help="serve the control channel there (kafkaproto.control.channel), for `kafkaproto "
                             "cluster` and tests in any language to move leaders, stop brokers and install faults")


def run(args):
    """Serve until SIGINT or SIGTERM; the exit status: 0 after a clean stop, 2 when it could not run (wrong
    settings, a listener or the data directory that cannot be had)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    overrides = {}
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            print(f"kafkaproto broker: --override {item!r} is not KEY=VALUE", file=sys.stderr)
            return 2
        overrides[key.strip()] = value
    if getattr(args, "nodes", None) is not None:
        overrides["kafkaproto.nodes"] = str(args.nodes)
    if getattr(args, "control_channel", None) is not None:
        overrides["kafkaproto.control.channel"] = args.control_channel
    try:
        config = BrokerConfig.load(args.properties, overrides)
    except ConfigError as e:
        print(f"kafkaproto broker: {e}", file=sys.stderr)
        return 2
    try:
        policy = _event_loop_policy(config["kafkaproto.event.loop"])
    except ConfigError as e:
        print(f"kafkaproto broker: {e}", file=sys.stderr)
        return 2
    if policy is not None:
        asyncio.set_event_loop_policy(policy)

    async def until_signalled():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await serve(config, stop=stop)

    keep_freed_memory()  # serving is this process's work: a large request's buffer is not faulted in afresh
    try:
        asyncio.run(until_signalled())
    except (ConfigError, ListenError) as e:
        print(f"kafkaproto broker: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # the data directory: locked by another broker, unreadable, not writable
        print(f"kafkaproto broker: {e}", file=sys.stderr)
        return 2
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kafkaproto.broker", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))
