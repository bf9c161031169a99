"""Faults and controls a test installs in a running broker: errors it answers instead of the usual, delays, and a
test's own function seeing each request.

    fault = broker.add_fault(errors.NOT_LEADER_OR_FOLLOWER, api_keys=[ApiKey.PRODUCE], topic="orders", budget=2)
    ...                                 # the next two Produce requests naming "orders" get the error for its partitions
    fault.fired                         # how many requests it answered (2)

    def slow_commits(request):          # sees every request, decoded, before the broker does
        if request.api_key == ApiKey.OFFSET_COMMIT:
            return Delay(500)           # or a response body to answer with, or DROP to close the connection
    control = broker.control(slow_commits)
    control.remove()

A fault names what it matches: API keys, the node a request came to, a topic (name or id) and partition. Where it
names a topic or partition, the matching partitions of a request are taken out of it and answered with the error;
the rest of the request goes on to the broker as usual, so a Produce to two partitions, one of them faulted, writes
the other. A fault naming neither answers the whole request: with the response's top-level error code where the
response has one at that version, the request not carried out; otherwise the request is carried out and every error
code of its answer set (FindCoordinator v4, say, answers each key). budget: how many requests it answers before it
is removed (None: until removed); delay_ms: how long the broker waits before answering.

Controls run first, in the order installed, then the faults (the first that matches). A control returning None
lets the request go on; Delay(ms) waits and lets it go on to the next control. Controls run on the broker's
event loop: they must not block. All of this runs in dispatch, without I/O: a delay is a Wait, a drop a Close.
"""

import copy
import threading
from typing import NamedTuple

from .. import fields
from ..registry import api
from ..uuid import Uuid


class Delay(NamedTuple):
    """What a control returns to make the broker wait ms before going on with the request."""

    ms: int


DROP = "dropped by a control"  # what a control returns to close the connection instead of answering


class Request(NamedTuple):
    """A request as a control sees it (change nothing in it)."""

    header: object
    body: object
    api_key: int
    version: int
    node_id: int
    client_host: str
    principal: str


class Fault:
    """An error the broker answers with (see the module's text); fired counts the requests it answered."""

    def __init__(self, error, api_keys=None, node=None, topic=None, partition=None, budget=None, delay_ms=0):
        self.error = error
        self.api_keys = None if api_keys is None else frozenset(int(k) for k in api_keys)
        self.node = node
        self.topic = topic
        self.partition = partition
        self.budget = budget
        self.delay_ms = delay_ms
        self.fired = 0
        self._faults = None

    @property
    def scoped(self):
        """Whether it answers partitions (a topic or partition named) rather than whole requests."""
        return self.topic is not None or self.partition is not None

    def matches(self, api_key, node_id):
        return (self.api_keys is None or api_key in self.api_keys) and (self.node is None or self.node == node_id)

    def matches_partition(self, name, topic_id, index):
        if self.partition is not None and index != self.partition:
            return False
        if self.topic is None:
            return True
        return self.topic == topic_id if isinstance(self.topic, Uuid) else self.topic == name

    def remove(self):
        if self._faults is not None:
            self._faults.remove(self)

    def __repr__(self):
        return (f"Fault({self.error.name}, api_keys={self.api_keys and sorted(self.api_keys)}, node={self.node}, "
                f"topic={self.topic!r}, partition={self.partition}, budget={self.budget}, fired={self.fired})")


class Control:
    """A test's function seeing requests (of api_keys, or all); times: how many it may handle (return something
    other than None for) before it is removed (None: until removed)."""

    def __init__(self, function, api_keys=None, times=None):
        self.function = function
        self.api_keys = None if api_keys is None else frozenset(int(k) for k in api_keys)
        self.times = times
        self.handled = 0
        self._faults = None

    def remove(self):
        if self._faults is not None:
            self._faults.remove(self)


class Faults:
    """The faults and controls installed. Tests install them from their own thread while the broker's event loop
    reads them: each change replaces a tuple, which the loop reads whole."""

    def __init__(self):
        self.faults = ()
        self.controls = ()
        self._lock = threading.Lock()

    def __bool__(self):
        return bool(self.faults or self.controls)

    def add(self, item):
        with self._lock:
            item._faults = self
            if isinstance(item, Control):
                self.controls = (*self.controls, item)
            else:
                self.faults = (*self.faults, item)
        return item

    def remove(self, item):
        with self._lock:
            self.controls = tuple(c for c in self.controls if c is not item)
            self.faults = tuple(f for f in self.faults if f is not item)

    def clear(self):
        with self._lock:
            self.faults = self.controls = ()

    # ---- in dispatch -------------------------------------------------------------------------------------------

    @staticmethod
    def decided(ctx):
        """Whether what to do with this request was decided (it waits, and its fault may be gone since)."""
        return Faults in ctx.memo

    def apply(self, ctx, body, run):
        """The answer to a request with the faults and controls in force: run(body) runs the handler. Decided once
        per request (ctx.memo keeps it while the request waits)."""
        memo = ctx.memo
        plan = memo.get(Faults)
        if plan is None:
            plan = memo[Faults] = self._decide(ctx, body)
        action, until, what = plan
        if until is not None:
            left = until - ctx.state.now_ms()
            if left > 0:
                return _wait(left)
        if action == "answer":
            return what
        if action == "drop":
            return _close(what)
        if action == "whole":
            answer = run(body)
            return answer if _waits(answer) else _set_errors(copy.deepcopy(answer), what, ctx.version)
        if action == "partitions":
            filtered, faulted, code = what
            answer = run(filtered)
            return answer if _waits(answer) else _add_faulted(answer, faulted, code)
        return run(body)

    def _decide(self, ctx, body):
        """(action, when to go on (ms) or None, what): answer a response, drop, run the request with the error set
        on its whole answer or on some partitions, or run it as usual."""
        header = ctx.header
        key, node = header.request_api_key, ctx.state.node_id
        delay = 0
        if self.controls:
            seen = Request(header, body, key, ctx.version, node, ctx.client_host, ctx.principal)
            for control in self.controls:
                if control.api_keys is not None and key not in control.api_keys:
                    continue
                result = control.function(seen)
                if result is None:
                    continue
                control.handled += 1
                if control.times is not None and control.handled >= control.times:
                    self.remove(control)
                if isinstance(result, Delay):
                    delay += result.ms
                    continue
                until = ctx.state.now_ms() + delay if delay else None
                if result == DROP:
                    return "drop", until, DROP
                if not isinstance(result, api(key).response):
                    raise TypeError(f"a control answered {type(body).__name__} with a {type(result).__name__}, "
                                    f"not a {api(key).response.__name__}")
                return "answer", until, result
        for fault in self.faults:
            if not fault.matches(key, node):
                continue
            plan = self._fault_plan(ctx, body, fault)
            if plan is None:
                continue
            fault.fired += 1
            if fault.budget is not None and fault.fired >= fault.budget:
                self.remove(fault)
            delay += fault.delay_ms
            return plan[0], ctx.state.now_ms() + delay if delay else None, plan[1]
        return "run", ctx.state.now_ms() + delay if delay else None, None

    def _fault_plan(self, ctx, body, fault):
        code = fault.error.code
        if not fault.scoped:
            answer = _top_level_error(api(ctx.header.request_api_key).response, ctx.version, code)
            return ("answer", answer) if answer is not None else ("whole", code)
        split = _split(body, fault, ctx.state)
        if split is None:
            return None
        filtered, faulted = split
        return "partitions", (filtered, faulted, code)


def _wait(ms):
    from .dispatch import Wait
    return Wait(ms, on=())


def _close(reason):
    from .dispatch import Close
    return Close(reason)


def _waits(answer):
    from .dispatch import Close, Wait
    return isinstance(answer, (Wait, Close))


def _top_level_error(response_class, version, code):
    """A response with only its top-level error code set, where it has one at version; else None."""
    for f in response_class._fields:
        if f.attr == "error_code" and version in f.versions:
            return response_class(error_code=code)
    return None


def _set_errors(answer, code, version):
    """The answer with each of its error codes that version has set to code (changed in place)."""
    for f in answer._fields:
        if version not in f.versions:
            continue
        if f.struct is not None:
            value = getattr(answer, f.attr)
            for item in (value or ()) if f.array else (value,):
                if item is not None:
                    _set_errors(item, code, version)
        elif fields.role_of(f, type(answer)) == fields.ERROR_CODE:
            setattr(answer, f.attr, code)
    return answer


# ---- the partitions a request names ---------------------------------------------------------------------------

def _shape(cls):
    """(topics attr, topic struct, name attr, id attr, partitions attr, partition struct, index attr) of a request
    or response that lists partitions under topics, or None."""
    for attr, role, array, struct in fields.roles(cls):
        if role != fields.STRUCT or not array:
            continue
        name = topic_id = None
        for a, r, _, _ in fields.roles(struct):
            if r == fields.TOPIC_NAME:
                name = a
            elif r == fields.TOPIC_ID:
                topic_id = a
        if name is None and topic_id is None:
            continue
        for a, r, arr, s in fields.roles(struct):
            if r == fields.STRUCT and arr:
                index = next((pa for pa, pr, parr, _ in fields.roles(s) if pr == fields.PARTITION and not parr),
                             None)
                if index is not None:
                    return attr, struct, name, topic_id, a, s, index
    return None


def _split(body, fault, state):
    """(the request without the partitions the fault matches, [(topic name, topic id, [indexes])] taken out), or
    None when it names none of them."""
    shape = _shape(type(body))
    if shape is None:
        return None
    topics_attr, _, name_attr, id_attr, parts_attr, _, index_attr = shape
    kept_topics, faulted = [], []
    for topic in getattr(body, topics_attr) or ():
        name = getattr(topic, name_attr) if name_attr else None
        topic_id = getattr(topic, id_attr) if id_attr else None
        if name is None and topic_id is not None:
            found = state.cluster.by_id.get(topic_id)
            name = found.name if found is not None else None
        if topic_id is None and name is not None:
            found = state.cluster.topics.get(name)
            topic_id = found.topic_id if found is not None else None
        kept, taken = [], []
        for partition in getattr(topic, parts_attr) or ():
            index = getattr(partition, index_attr)
            (taken if fault.matches_partition(name, topic_id, index) else kept).append(partition)
        if taken:
            faulted.append((getattr(topic, name_attr) if name_attr else None,
                            getattr(topic, id_attr) if id_attr else None, [getattr(p, index_attr) for p in taken]))
            if kept:
                topic = copy.copy(topic)
                setattr(topic, parts_attr, kept)
                kept_topics.append(topic)
        else:
            kept_topics.append(topic)
    if not faulted:
        return None
    body = copy.copy(body)
    setattr(body, topics_attr, kept_topics)
    return body, faulted


_UNKNOWN = ("leader_epoch", "timestamp", "log_append_time_ms")  # -1 in Kafka's error answers, as offsets are


def _add_faulted(answer, faulted, code):
    """The answer with an entry of error code for each partition taken out of its request."""
    shape = _shape(type(answer))
    if shape is None:
        return answer
    topics_attr, topic_class, name_attr, id_attr, parts_attr, part_class, index_attr = shape
    topics = list(getattr(answer, topics_attr) or ())
    for name, topic_id, indexes in faulted:
        entry = next((t for t in topics if (name_attr and name is not None and getattr(t, name_attr) == name)
                      or (id_attr and topic_id is not None and getattr(t, id_attr) == topic_id)), None)
        if entry is None:
            entry = topic_class()
            if name_attr:
                setattr(entry, name_attr, name)
            if id_attr and topic_id is not None:
                setattr(entry, id_attr, topic_id)
            setattr(entry, parts_attr, [])
            topics.append(entry)
        partitions = list(getattr(entry, parts_attr) or ())
        for index in indexes:
            partitions.append(_errored(part_class, index_attr, index, code))
        setattr(entry, parts_attr, partitions)
    answer = copy.copy(answer)
    setattr(answer, topics_attr, topics)
    return answer


def _errored(part_class, index_attr, index, code):
    partition = part_class()
    setattr(partition, index_attr, index)
    for attr, role, array, _ in fields.roles(part_class):
        if role == fields.ERROR_CODE:
            setattr(partition, attr, code)
        elif role == fields.OFFSET and not array:
            setattr(partition, attr, -1)
    for attr in _UNKNOWN:
        if hasattr(partition, attr):
            setattr(partition, attr, -1)
    return partition
