# What editors and type checkers see of kafkaproto.replay.session.
from typing import Any, NamedTuple

from .plan import Plan, Step
from .rewrite import Values
from .setup import Setup

ANSWERED: str
NO_ANSWER_DUE: str
NO_ANSWER: str
CLOSED: str
NOT_SENT: str
SKIPPED: str
OUTCOMES: tuple[str, ...]
MAX_GAP: float
ANNOUNCED_WAIT: float

# What actions() says to do: ("connect", key, (host, port) or None for the bootstrap server), ("send", key, bytes)
# or ("close", key); a key is a captured connection's index, or Setup.KEY for the connection that creates topics.
# ("wait", None, Pause) says that a long wait for the capture's pace begins (nothing to do but tell).
_Action = tuple[Any, ...]

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

    step: Step
    status: str | None
    answer: Any
    version: int | None
    sent: float | None
    answered: float | None
    attempts: int
    error: str | None
    late: bool
    def __init__(self, step: Step) -> None: ...

class Replayer:
    """One replay of a plan against one broker, without I/O (see the module's doc). speed: 1.0 replays at the
    capture's pace, 2.0 twice as fast, None as fast as the order allows. max_gap: the longest gap between two
    requests, and the longest answer's latency, taken from the capture (seconds of capture time; None: whatever
    the capture says). answer_timeout: seconds an answer may take beyond what it took in the capture (at that
    pace). setup: create the topics the capture uses first."""

    plan: Plan
    values: Values
    results: list[StepResult]
    speed: float | None
    max_gap: float | None
    answer_timeout: float
    settle_timeout: float
    setup: Setup | None
    started: float | None
    ended: float | None
    requests_sent: int
    answers: int
    steps_over: int
    def __init__(self, plan: Plan, *, speed: float | None = 1.0, max_gap: float | None = 10.0,
                 answer_timeout: float = 30.0, settle_timeout: float = 30.0, setup: bool = True) -> None: ...
    @property
    def setting_up(self) -> bool:
        """Whether it is still creating the capture's topics (before the first step)."""
    def start(self, now: float) -> None: ...
    @property
    def finished(self) -> bool: ...
    def wakeup(self) -> float | None:
        """The time of the next timer (a paced step, an answer's deadline, a re-ask), or None."""
    def actions(self, now: float) -> list[_Action]:
        """What to do now: connect, send, close (see the module's doc)."""
    def received(self, key: int | str, data: bytes, now: float) -> None: ...
    def lost(self, key: int | str, now: float, reason: str) -> None:
        """A connection closed (by the target, or the network), or could not be opened."""

__all__ = ["ANNOUNCED_WAIT", "ANSWERED", "CLOSED", "MAX_GAP", "NOT_SENT", "NO_ANSWER", "NO_ANSWER_DUE", "OUTCOMES",
           "Pause", "Replayer", "SKIPPED", "StepResult"]
