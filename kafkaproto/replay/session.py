"""One replay of a plan against one broker, without I/O: it says what to send where and when, and takes the bytes
that come back (in the manner of h11).

    replayer = Replayer(plan, speed=1.0)
    replayer.start(now)
    while not replayer.finished:
        for action in replayer.actions(now):      # ("connect", key, endpoint or None), ("send", key, bytes),
            ...                                   # ("close", key); endpoint None means the bootstrap server;
                                                  # ("wait", None, Pause): a long wait begins (to announce)
        replayer.received(key, data, now)         # bytes read from a connection
        replayer.lost(key, now, reason)           # a connection that closed, or did not open
        replayer.wakeup()                         # when actions() has something to do without new input
    replayer.results                              # one StepResult per step of the plan

A step is sent once its turn in the captured order has come, every answer the capture saw before it was sent has
come back from the target (or timed out), and, at speed s, the capture's time has passed at s times its pace.
The capture's time is its own claim: a gap between two requests longer than ``max_gap`` seconds (a capture paused,
or a packet stamped decades later) is shortened to ``max_gap``, and so is a captured answer's latency when it sets
how long to wait for the answer. A wait for the pace of ``ANNOUNCED_WAIT`` seconds or more is said before it
begins, as a ("wait", None, Pause) action, so that a driver can tell its user what it waits for.
An answer saying the target is not ready yet, where the capture's was ready, is asked again with a fresh
correlation id until it is ready or ``settle_timeout`` passes (rule ``loading``).
"""

import copy
import heapq
import math
from typing import NamedTuple

from ..connection import ClientConnection, ProtocolError, ResponseReceived
from ..exceptions import KafkaProtoError
from .plan import Step, not_ready
from .rewrite import Values
from .setup import Setup

# Status of a step once it is over.
ANSWERED = "answered"
NO_ANSWER_DUE = "sent (no answer due)"
NO_ANSWER = "no answer"
CLOSED = "connection closed"
NOT_SENT = "not sent"
SKIPPED = "skipped"
OUTCOMES = (ANSWERED, NO_ANSWER_DUE, NO_ANSWER, CLOSED, NOT_SENT, SKIPPED)

_REASK_FIRST, _REASK_MAX = 0.1, 1.0  # seconds between asking a not-ready target again, doubling
MAX_GAP = 10.0  # seconds: the longest wait between two requests a capture's timestamps make, by default
ANNOUNCED_WAIT = 1.0  # seconds: a wait for the pace at least this long is announced (a Pause)


class Pause(NamedTuple):
    """A wait for the capture's pace, announced as it begins: ``seconds`` (on the replayer's clock) before
    ``step`` is sent; ``gap``, how long after the request before it the capture has it (seconds, as captured);
    ``shortened``, whether that gap was longer than max_gap and cut to it."""

    step: Step
    seconds: float
    gap: float
    shortened: bool


class StepResult:
    """What became of one step: ``status`` (OUTCOMES), the target's answer (body and the version it came at),
    when it was sent and answered (the replayer's clock), how many times it was asked, and why it failed."""

    __slots__ = ("step", "status", "answer", "version", "sent", "answered", "attempts", "error", "late")

    def __init__(self, step):
        self.step = step
        self.status = None  # until it is over
        self.answer = self.version = self.sent = self.answered = self.error = None
        self.attempts = 0
        self.late = False  # the answer came after the step had been given up on

    def __repr__(self):
        return f"StepResult({self.step!r}, {self.status}{', ' + self.error if self.error else ''})"


class _Connection:
    """A replayed connection: its framing and pairing, its correlation ids, what waits for an answer on it."""

    def __init__(self, key):
        self.key = key
        self.client = ClientConnection()
        self.next_id = 0
        self.waiting = {}  # correlation id -> StepResult
        self.open = True

    def frame(self, header, body):
        header = _with_correlation_id(header, self.next_id)
        self.next_id += 1
        return header.correlation_id, self.client.send_request(header, body)


def _with_correlation_id(header, correlation_id):
    header = copy.copy(header)
    header.correlation_id = correlation_id
    return header


class Replayer:
    """See the module's doc. speed: 1.0 replays at the capture's pace, 2.0 twice as fast, None as fast as the
    order allows. max_gap: the longest gap between two requests, and the longest answer's latency, taken from the
    capture (seconds of capture time; None: whatever the capture says). answer_timeout: seconds an answer may take
    beyond what it took in the capture (at that pace). setup: create the topics the capture uses first
    (plan.topics)."""

    def __init__(self, plan, *, speed=1.0, max_gap=MAX_GAP, answer_timeout=30.0, settle_timeout=30.0, setup=True):
        if speed is not None and not speed > 0:
            raise ValueError(f"speed must be above 0 (or None for as fast as possible), not {speed!r}")
        if max_gap is not None and not 0 <= max_gap < math.inf:
            raise ValueError(f"max_gap must be a number of seconds, 0 or more (or None for no limit), not {max_gap!r}")
        self.plan = plan
        self.values = Values(plan)
        self.results = [StepResult(step) for step in plan.steps]
        self.speed = speed
        self.max_gap = max_gap
        self._paced = _paced(plan.steps, max_gap)  # per step: (due ns after the first, gap ns, shortened)
        self._considered = -1  # the last step whose wait for the pace was looked at (announced if long)
        self.answer_timeout = answer_timeout
        self.settle_timeout = settle_timeout
        self.setup = Setup(plan) if setup else None
        self._remaining = {}  # connection -> steps not over yet
        for step in plan.steps:
            self._remaining[step.connection] = self._remaining.get(step.connection, 0) + 1
        self._ranked = [False] * sum(1 for s in plan.steps if s.rank is not None)
        self._prefix = 0  # the first this many ranked answers are all over
        self._next = 0  # the next step to send
        self._connections = {}
        self._timers = []  # heap of (time, sequence, what, payload)
        self._sequence = 0
        self._out = []
        self._origin = None
        self.started = self.ended = None
        self.requests_sent = 0  # steps sent (once or more): for progress, as are the two below
        self.answers = 0  # steps answered
        self.steps_over = 0  # steps over, whatever became of them

    @property
    def setting_up(self):
        """Whether it is still creating the capture's topics (before the first step)."""
        return self.started is not None and self._origin is None and self.setup is not None

    # ---- driving it ----

    def start(self, now):
        self.started = now
        if self.setup is not None:
            self._out.extend(self.setup.start(now))
        else:
            self._begin(now)

    @property
    def finished(self):
        return self.ended is not None

    def wakeup(self):
        """The time of the next timer (a paced step, an answer's deadline, a re-ask), or None."""
        times = [self._timers[0][0]] if self._timers else []
        if self._origin is not None and self.speed is not None and self._next < len(self.results):
            step = self.plan.steps[self._next]
            if self._prefix >= step.after:  # otherwise an answer (or its deadline) comes first
                times.append(self._due(step))
        if self.setup is not None and not self.setup.done and self.setup.wakeup is not None:
            times.append(self.setup.wakeup)
        return min(times) if times else None

    def actions(self, now):
        """What to do now: connect, send, close (see the module's doc)."""
        while self._timers and self._timers[0][0] <= now:
            _, _, what, payload = heapq.heappop(self._timers)
            what(payload, now)
        if self._origin is None and self.setup is not None:
            self._out.extend(self.setup.tick(now))
            if self.setup.done:
                self.values.learn_setup(self.setup)
                self._out.append(("close", Setup.KEY))
                self._begin(now)
        if self._origin is not None:
            self._send_ready(now)
            self._announce(now)
            self._maybe_end(now)
        out, self._out = self._out, []
        return out

    def received(self, key, data, now):
        if key == Setup.KEY:
            self._out.extend(self.setup.received(data, now))
            return
        conn = self._connections.get(key)
        if conn is None or not conn.open:
            return
        try:
            events = conn.client.receive_data(data)
        except ProtocolError as e:
            self._lose(conn, now, f"the target's answer cannot be read: {e}")
            self._out.append(("close", key))
            return
        for event in events:
            if isinstance(event, ResponseReceived):
                self._answered(conn, event, now)

    def lost(self, key, now, reason):
        """A connection closed (by the target, or the network), or could not be opened."""
        if key == Setup.KEY:
            self._out.extend(self.setup.lost(reason, now))
            return
        conn = self._connections.get(key)
        if conn is not None and conn.open:
            self._lose(conn, now, reason)

    # ---- sending ----

    def _begin(self, now):
        self._origin = now

    def _due(self, step):
        if self.speed is None:
            return self._origin
        return self._origin + self._paced[step.index][0] / 1e9 / self.speed

    def _announce(self, now):
        """Say once, as it begins, a wait for the pace of the next step that is ANNOUNCED_WAIT or longer. Its turn
        may first wait for answers: the wait for the pace is what is left once they have come."""
        steps = self.plan.steps
        if self.speed is None or self._next >= len(steps) or self._considered >= self._next:
            return
        step = steps[self._next]
        if self._prefix < step.after:
            return
        self._considered = self._next
        seconds = self._due(step) - now
        if seconds >= ANNOUNCED_WAIT:
            _, gap, shortened = self._paced[step.index]
            self._out.append(("wait", None, Pause(step, seconds, gap / 1e9, shortened)))

    def _send_ready(self, now):
        steps = self.plan.steps
        while self._next < len(steps):
            step = steps[self._next]
            if self._prefix < step.after or now < self._due(step):
                return
            self._next += 1
            result = self.results[step.index]
            if step.skip is not None:
                self._over(result, SKIPPED, now, step.skip)
            else:
                self._send(result, now)

    def _send(self, result, now):
        step = result.step
        conn = self._connections.get(step.connection)
        if conn is None or not conn.open:
            if conn is not None:
                result.error = "sent on a new connection: the target had closed the first"
            conn = self._connections[step.connection] = _Connection(step.connection)
            self._out.append(("connect", step.connection, self._endpoint(step)))
        try:
            correlation_id, frame = conn.frame(step.header, self.values.request(step))
        except (KafkaProtoError, ValueError, TypeError) as e:
            self._over(result, NOT_SENT, now, f"the rewritten request does not encode: {e}")
            return
        result.attempts += 1
        if result.sent is None:
            result.sent = now
            self.requests_sent += 1
        self._out.append(("send", step.connection, frame))
        if not step.expects_answer:
            self._over(result, NO_ANSWER_DUE, now)
            return
        conn.waiting[correlation_id] = result
        latency = max(0, step.exchange.latency_ns or 0) / 1e9
        if self.max_gap is not None:
            latency = min(latency, self.max_gap)
        latency /= self.speed or math.inf
        self._timer(now + latency + self.answer_timeout, self._timed_out, (result, result.attempts))

    def _endpoint(self, step):
        """Where the captured connection's broker is in the target: None (the bootstrap server) unless the
        capture shows which node it was and the target has that node elsewhere."""
        return self.values.endpoint(step.exchange.broker_address, step.exchange.broker_port)

    # ---- answers ----

    def _answered(self, conn, event, now):
        result = conn.waiting.pop(event.correlation_id, None)
        if result is None:
            return
        if result.status is not None:  # given up on already: keep what came, for the report
            result.late = True
            return
        step = result.step
        answer = event.body
        if not_ready(answer) and not (step.answer is not None and not_ready(step.answer)) \
                and now - result.sent < self.settle_timeout:
            delay = min(_REASK_MAX, _REASK_FIRST * 2 ** (result.attempts - 1))
            self._timer(now + delay, self._ask_again, result)
            return
        result.answer, result.version = answer, event.version
        self.values.learn(step, answer)
        self._over(result, ANSWERED, now)

    def _ask_again(self, result, now):
        if result.status is None:
            self._send(result, now)

    def _timed_out(self, payload, now):
        result, attempt = payload
        if result.status is None and result.attempts == attempt:
            self._over(result, NO_ANSWER, now, f"no answer within {self.answer_timeout:g} s of the captured "
                                               "answer's time")

    def _lose(self, conn, now, reason):
        conn.open = False
        for result in list(conn.waiting.values()):
            if result.status is None:
                self._over(result, CLOSED, now, reason)
        conn.waiting.clear()

    # ---- bookkeeping ----

    def _over(self, result, status, now, error=None):
        result.status = status
        result.answered = now
        self.steps_over += 1
        if status == ANSWERED:
            self.answers += 1
        if error is not None:
            result.error = error
        step = result.step
        if step.rank is not None:
            self._ranked[step.rank] = True
            while self._prefix < len(self._ranked) and self._ranked[self._prefix]:
                self._prefix += 1
        self._remaining[step.connection] -= 1
        if self._remaining[step.connection] == 0 and step.connection in self._connections:
            self._connections[step.connection].open = False
            self._out.append(("close", step.connection))

    def _maybe_end(self, now):
        if self.ended is None and self._next == len(self.results) and all(r.status for r in self.results):
            self.ended = now
            for conn in self._connections.values():
                if conn.open:
                    conn.open = False
                    self._out.append(("close", conn.key))

    def _timer(self, when, what, payload):
        self._sequence += 1
        heapq.heappush(self._timers, (when, self._sequence, what, payload))


def _paced(steps, max_gap):
    """Per step, in nanoseconds of capture time: when it is due after the first step, with every gap between two
    requests longer than max_gap shortened to it; the gap before it as captured; whether that gap was shortened."""
    limit = None if max_gap is None else round(max_gap * 1e9)
    out = []
    due = 0
    before = None
    for step in steps:
        ex = step.exchange
        at = ex.request_time_ns or ex.response_time_ns or 0  # the plan's order of sending (plan._sent_at)
        gap = 0 if before is None else max(0, at - before)
        before = at if before is None else max(before, at)
        shortened = limit is not None and gap > limit
        due += limit if shortened else gap
        out.append((due, gap, shortened))
    return out


__all__ = ["ANNOUNCED_WAIT", "ANSWERED", "CLOSED", "MAX_GAP", "NOT_SENT", "NO_ANSWER", "NO_ANSWER_DUE", "OUTCOMES",
           "Pause", "Replayer", "SKIPPED", "StepResult"]
