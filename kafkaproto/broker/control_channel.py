"""The control channel: what a test in any language does to a running broker (move leaders and coordinators, stop
and start brokers, install faults), over TCP, one JSON object a line each way.

Off unless ``kafkaproto.control.channel`` is set (``--control-channel`` on the command line) to a HOST:PORT, which
should be a loopback address: whoever reaches it can stop brokers. The broker logs ``control channel on HOST:PORT``.
``kafkaproto cluster`` is its command line; from a shell, ``nc``:

    $ echo '{"op": "move-leader", "topic": "orders", "partition": 0, "node": 2}' | nc 127.0.0.1 9999
    {"ok": true, "leader": 2, "leader_epoch": 1, "replicas": [2, 3, 1], "isr": [2, 3, 1]}

Each line asks one thing (``op``, with its fields); each answer is ``{"ok": true, ...}`` or ``{"ok": false,
"error": "..."}``, in the order asked. The ops (OPS below): nodes; leader, move-leader (topic or topic_id,
partition, node); coordinator, move-coordinator (kind: group, transaction or share; key: the group id,
transactional id or share partition's group:topic id:partition, needed when the internal topic has several
partitions; node); stop-node, start-node
(node); add-fault (error: a name such as NOT_LEADER_OR_FOLLOWER or a code; optional api_keys (names such as
"Produce", or numbers), node, topic or topic_id, partition, budget, delay_ms; faults.py says what each means),
answered with the fault's id; faults (those in force, with how often each fired); fault (id); remove-fault (id);
clear-faults. A line is at most 64 KiB.
"""

import asyncio
import json
import logging

from .. import errors
from ..registry import api
from ..uuid import Uuid
from .faults import Fault

log = logging.getLogger("kafkaproto.broker")
MAX_LINE = 64 * 1024


class Refused(ValueError):
    """A request the channel cannot carry out, with why."""


def _field(request, name, kind, required=True):
    value = request.get(name)
    if value is None:
        if required:
            raise Refused(f"{request['op']} needs {name!r}")
        return None
    if kind is int and (type(value) is not int):
        raise Refused(f"{name!r} must be an integer, not {json.dumps(value)}")
    if kind is str and not isinstance(value, str):
        raise Refused(f"{name!r} must be a string, not {json.dumps(value)}")
    return value


def _topic(request):
    """The topic a request names: by name (topic) or id (topic_id, Kafka's base64 form), one of the two."""
    name, topic_id = _field(request, "topic", str, False), _field(request, "topic_id", str, False)
    if (name is None) == (topic_id is None):
        raise Refused(f"{request['op']} needs one of 'topic' and 'topic_id'")
    if topic_id is None:
        return name
    try:
        return Uuid.from_string(topic_id)
    except ValueError as e:
        raise Refused(f"'topic_id' {topic_id!r} is not a topic id: {e}") from None


def _error(request):
    value = request.get("error")
    if isinstance(value, str):
        try:
            return errors.by_name(value.upper())
        except KeyError as e:
            raise Refused(e.args[0]) from None
    if type(value) is int:
        if value not in {e.code for e in errors.ALL}:
            raise Refused(f"no Kafka error code {value}")
        return errors.by_code(value)
    raise Refused("add-fault needs 'error': an error code's name (NOT_LEADER_OR_FOLLOWER) or number")


def _api_keys(request):
    keys = request.get("api_keys")
    if keys is None:
        return None
    if not isinstance(keys, list) or not keys:
        raise Refused("'api_keys' must be a list of API names or keys")
    out = []
    for key in keys:
        if type(key) is not int and not isinstance(key, str):
            raise Refused(f"'api_keys': {json.dumps(key)} is not an API name or key")
        try:
            out.append(api(key).api_key)
        except KeyError as e:
            raise Refused(f"'api_keys': {e.args[0]}") from None
    return out


def _fault_json(fault):
    topic = fault.topic
    return {"id": fault.id, "error": fault.error.name, "api_keys": sorted(fault.api_keys or ()) or None,
            "node": fault.node, "topic": topic if isinstance(topic, str) else None,
            "topic_id": str(topic) if isinstance(topic, Uuid) else None, "partition": fault.partition,
            "budget": fault.budget, "delay_ms": fault.delay_ms, "fired": fault.fired}


def _at_least(request, name, least):
    value = _field(request, name, int, False)
    if value is not None and value < least:
        raise Refused(f"{name!r} must be at least {least}, not {value}")
    return value


async def _leader(controls, request):
    return controls.describe(_topic(request), _field(request, "partition", int))


async def _move_leader(controls, request):
    topic, partition = _topic(request), _field(request, "partition", int)
    controls.move_leader(topic, partition, _field(request, "node", int))
    return controls.describe(topic, partition)


async def _coordinator(controls, request):
    return {"node": controls.coordinator(_field(request, "kind", str), _field(request, "key", str, False))}


async def _move_coordinator(controls, request):
    kind, key = _field(request, "kind", str), _field(request, "key", str, False)
    controls.move_coordinator(kind, _field(request, "node", int), key)
    return {"node": controls.coordinator(kind, key)}


async def _stop_node(controls, request):
    await controls.stop_node(_field(request, "node", int))
    return {"nodes": controls.nodes()}


async def _start_node(controls, request):
    await controls.start_node(_field(request, "node", int))
    return {"nodes": controls.nodes()}


async def _add_fault(controls, request):
    topic = _topic(request) if "topic" in request or "topic_id" in request else None
    fault = Fault(_error(request), api_keys=_api_keys(request), node=_field(request, "node", int, False),
                  topic=topic, partition=_at_least(request, "partition", 0), budget=_at_least(request, "budget", 1),
                  delay_ms=_at_least(request, "delay_ms", 0) or 0)
    return _fault_json(controls.add_fault(fault))


async def _fault(controls, request):
    return _fault_json(controls.fault(_field(request, "id", int)))


async def _faults(controls, request):
    return {"faults": [_fault_json(f) for f in controls.faults()]}


async def _remove_fault(controls, request):
    fault = controls.fault(_field(request, "id", int))
    fault.remove()
    return _fault_json(fault)


async def _clear_faults(controls, request):
    controls.state.faults.clear()
    return {}


async def _nodes(controls, request):
    return {"nodes": controls.nodes()}


# op -> (the function answering it, the fields it takes)
OPS = {
    "nodes": (_nodes, ()),
    "leader": (_leader, ("topic", "topic_id", "partition")),
    "move-leader": (_move_leader, ("topic", "topic_id", "partition", "node")),
    "coordinator": (_coordinator, ("kind", "key")),
    "move-coordinator": (_move_coordinator, ("kind", "node", "key")),
    "stop-node": (_stop_node, ("node",)),
    "start-node": (_start_node, ("node",)),
    "add-fault": (_add_fault, ("error", "api_keys", "node", "topic", "topic_id", "partition", "budget",
                               "delay_ms")),
    "fault": (_fault, ("id",)),
    "faults": (_faults, ()),
    "remove-fault": (_remove_fault, ("id",)),
    "clear-faults": (_clear_faults, ()),
}


async def answer(controls, line):
    """The answer (a dict) to one line a test sent: what it asked carried out, or why not."""
    try:
        try:
            request = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise Refused(f"the line is not UTF-8 (byte {e.start})") from None
        except json.JSONDecodeError as e:
            raise Refused(f"the line is not JSON: {e.msg} at character {e.pos}") from None
        except RecursionError:
            raise Refused("the line's JSON is nested too deeply") from None
        if not isinstance(request, dict):
            raise Refused("the line must be a JSON object with an 'op'")
        op = request.get("op")
        if op not in OPS:
            raise Refused(f"no op {json.dumps(op)}: one of {', '.join(OPS)}")
        function, fields = OPS[op]
        unknown = sorted(set(request) - {"op", *fields})
        if unknown:
            raise Refused(f"{op} takes no {', '.join(map(repr, unknown))} (its fields: "
                          f"{', '.join(fields) or 'none'})")
        return {"ok": True, **await function(controls, request)}
    except (Refused, KeyError, ValueError) as e:
        return {"ok": False, "error": e.args[0] if e.args else str(e)}
    except Exception as e:  # a fault of the broker's: said, and the channel goes on
        log.exception("the control channel could not answer %r", line[:200])
        return {"ok": False, "error": f"the broker failed: {e!r}"}


class Channel:
    """The channel served on host:port (0: any free port), until closed."""

    def __init__(self, controls):
        self.controls = controls
        self._server = None
        self._writers = set()

    async def open(self, host, port):
        self._server = await asyncio.start_server(self._serve, host, port, limit=MAX_LINE)
        return self

    @property
    def address(self):
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    async def close(self):
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()

    async def _serve(self, reader, writer):
        self._writers.add(writer)
        try:
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError as e:
                    if not e.partial.strip():
                        return
                    line = e.partial  # the last line, sent without its newline
                except asyncio.LimitOverrunError:
                    writer.write(_encode({"ok": False, "error": f"a line is longer than {MAX_LINE} bytes"}))
                    await writer.drain()
                    return
                if line.strip():
                    writer.write(_encode(await answer(self.controls, line)))
                    await writer.drain()
        except ConnectionError:
            pass
        finally:
            self._writers.discard(writer)
            writer.close()


def _encode(answer):
    return json.dumps(answer).encode() + b"\n"


class ChannelClient:
    """A blocking client of the channel (what ``kafkaproto cluster`` and subprocess Brokers use)."""

    def __init__(self, address, timeout=30):
        import socket
        host, _, port = address.rpartition(":")
        self.sock = socket.create_connection((host.strip("[]"), int(port)), timeout)
        self.file = self.sock.makefile("rb")

    def ask(self, op, **fields):
        """The answer to op; Refused with the broker's reason when it says no."""
        self.sock.sendall(_encode({"op": op, **{k: v for k, v in fields.items() if v is not None}}))
        line = self.file.readline(MAX_LINE + 1)
        if not line:
            raise ConnectionError("the broker closed the control channel")
        answer = json.loads(line)
        if not answer.pop("ok"):
            raise Refused(answer["error"])
        return answer

    def close(self):
        self.file.close()
        self.sock.close()
