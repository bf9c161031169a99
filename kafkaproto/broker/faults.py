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

from ..registry import api
from ..uuid import Uuid
from .error_answers import add_partition_errors, set_errors, split, top_level_error
from .outcomes import Close, Wait


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
        self.id = None  # given when installed through a Broker or the control channel
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
        self.active = False  # whether any is installed: what dispatch reads first, on every request
        self._lock = threading.Lock()

    def _changed(self):
        self.active = bool(self.faults or self.controls)

    def add(self, item):
        with self._lock:
            item._faults = self
            if isinstance(item, Control):
                self.controls = (*self.controls, item)
            else:
                self.faults = (*self.faults, item)
            self._changed()
        return item

    def remove(self, item):
        with self._lock:
            self.controls = tuple(c for c in self.controls if c is not item)
            self.faults = tuple(f for f in self.faults if f is not item)
            self._changed()

    def clear(self):
        with self._lock:
            self.faults = self.controls = ()
            self._changed()

    # ---- in dispatch -------------------------------------------------------------------------------------------


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
            return answer if _waits(answer) else set_errors(copy.deepcopy(answer), what, ctx.version)
        if action == "partitions":
            filtered, faulted, code = what
            answer = run(filtered)
            return answer if _waits(answer) else add_partition_errors(answer, faulted, lambda *_: (code, None),
                                                                      ctx.version)
        return run(body)

    def _decide(self, ctx, body):
        """(action, when to go on (ms) or None, what): answer a response, drop, run the request with the error set
        on its whole answer or on some partitions, or run it as usual."""
        header = ctx.header
        key, node = header.request_api_key, ctx.node_id  # the broker of the cluster it came to
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
            answer = top_level_error(api(ctx.header.request_api_key).response, ctx.version, code)
            return ("answer", answer) if answer is not None else ("whole", code)
        found = split(body, fault.matches_partition, ctx.state)
        if found is None:
            return None
        filtered, faulted = found
        return "partitions", (filtered, faulted, code)


def _wait(ms):
    return Wait(ms, on=())


def _close(reason):
    return Close(reason)


def _waits(answer):
    return isinstance(answer, (Wait, Close))


