# What editors and type checkers see of kafkaproto.replay.report.
from collections import Counter
from typing import Any, Iterator, NamedTuple

from .plan import Plan
from .session import Replayer

REPLAY_RULES: tuple[str, ...]
RULES: tuple[str, ...]
GOVERNING_FEATURES: dict[str, set[int]]

class Divergence(NamedTuple):
    """One difference: where (captured connection, the step's index in the plan, the request) and what (the
    field's path in the answer, the value on each side; ``left`` is the capture's, or the first target's)."""

    connection: int
    step: int
    api: str
    version: int
    correlation_id: int
    path: str
    left: object
    right: object
    def to_json(self) -> dict[str, Any]: ...

class Report:
    """What a replay found: ``divergences``, per API the steps compared and the steps that diverged,
    ``excused`` (rule -> how many differences a rule accounted for), ``shifts`` ((topic, partition) -> (the
    captured offset from which the shift holds, the shift)), ``not_replayable``, ``notes``."""

    plan: Plan
    sides: tuple[str, str]
    divergences: list[Divergence]
    compared: Counter[str]
    diverged: Counter[str]
    uncompared: Counter[str]
    excused: Counter[str]
    shifts: dict[tuple[str, int], tuple[int, int]]
    notes: list[str]
    def __init__(self, plan: Plan, sides: tuple[str, str]) -> None: ...
    @property
    def not_replayable(self) -> list[tuple[int | None, tuple[str | None, int | None] | None, str]]: ...
    @property
    def ok(self) -> bool:
        """True when no answer diverged."""
    def json_lines(self) -> Iterator[dict[str, Any]]:
        """The report as JSON values, one per line to write: divergences, connections not replayed, and a summary."""

def compare_with_capture(plan: Plan, replayer: Replayer, target: str = "target") -> Report:
    """Each answer of a finished Replayer against the capture's."""
def compare_targets(plan: Plan, first: Replayer, second: Replayer,
                    names: tuple[str, str] = ("first", "second")) -> Report:
    """Each answer of one finished Replayer against another's, for the same plan."""
