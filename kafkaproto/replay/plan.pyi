# What editors and type checkers see of kafkaproto.replay.plan.
from typing import Any, Iterable, Mapping

from ..capture.exchanges import Exchange
from ..uuid import Uuid

CLUSTER_OWN: set[int]
UNREPEATABLE_SASL: dict[str, str]

def cluster_own(header: Any, body: Any) -> str | None:
    """Why a request is one a broker sends another (None for a client's): the target sends its own."""
def not_ready(body: Any) -> bool:
    """Whether an answer only says the broker was not ready yet: every error code in it is one of
    compare.LOADING."""

class Step:
    """One request to send: the captured exchange, and where it stands in the captured order.

    ``after``: how many captured answers (counted in the order they arrived) came before it was sent; it waits
    for their replays. ``rank``: its own answer's place in that order (None when no answer is awaited).
    ``skip``: why it is not sent. ``compare``: whether its answer can be compared (the capture holds it whole).
    """

    index: int
    connection: int
    exchange: Exchange
    after: int
    rank: int | None
    skip: str | None
    compare: bool
    def __init__(self, index: int, connection: int, exchange: Exchange) -> None: ...
    @property
    def header(self) -> Any: ...
    @property
    def request(self) -> Any: ...
    @property
    def answer(self) -> Any:
        """The captured answer's body, or None."""
    @property
    def expects_answer(self) -> bool: ...

class TopicSetup:
    """A topic to create before the replay: what the capture tells of it."""

    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str | None]
    def __init__(self, name: str) -> None: ...

class Plan:
    """The steps of a replay (see the module's doc). Build one with Plan.of(exchanges)."""

    steps: list[Step]
    # (connection index or None, client (address, port) or None, reason)
    not_replayable: list[tuple[int | None, tuple[str | None, int | None] | None, str]]
    topics: dict[str, TopicSetup]
    topic_names: dict[Uuid, str]
    named_topics: set[str]
    named_groups: set[str]
    versions: dict[int, set[int]]
    nodes: dict[tuple[str, int], int]
    damage: str | None
    def __init__(self) -> None: ...
    @classmethod
    def of(cls, exchanges: Iterable[Exchange]) -> Plan:
        """The plan for a capture's exchanges (from kafkaproto.capture.read_capture, in any order)."""
    @classmethod
    def of_rows(cls, rows: Iterable[Mapping[str, Any] | Any]) -> Plan:
        """The plan for exchange rows (kafkaproto.capture.tables' columns), as dicts or Spark Rows."""
    def node_of(self, address: str, port: int) -> int | None:
        """The captured node id of the broker a connection went to, or None."""
    def connections(self) -> dict[int, list[Step]]:
        """{connection index: [its steps, in order]}."""
