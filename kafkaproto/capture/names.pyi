# What editors and type checkers see of kafkaproto.capture.names.
from typing import Any, Iterable, ItemsView, Iterator, Mapping, TypeVar

from ..uuid import Uuid
from .exchanges import Exchange

_T = TypeVar("_T")

NAMING: frozenset[int]
METADATA_TOPIC: str
HOLD: int

class TopicNames:
    """Topic ID -> name pairs (see the module's doc). ``conflicts`` counts pairs that named a known ID otherwise
    (the first is kept: an ID never changes its name)."""

    known: dict[Uuid, str]
    conflicts: int
    def __init__(self, pairs: Mapping[Uuid | str, str] | None = None) -> None: ...
    def __len__(self) -> int: ...
    def __contains__(self, topic_id: object) -> bool: ...
    def items(self) -> ItemsView[Uuid, str]: ...
    def name(self, topic_id: Uuid | str) -> str | None:
        """The name of a topic ID (a Uuid or its text), or None."""
    def add(self, topic_id: Uuid | str | None, name: str | None) -> None: ...
    def update(self, other: TopicNames | Mapping[Uuid | str, str] | Iterable[tuple[Uuid | str, str]]) -> None:
        """Take in the pairs of another TopicNames (or a {topic id: name} mapping)."""
    def learn(self, ex: Exchange) -> bool:
        """Take in the pairs an exchange carries; True when it taught anything new."""
    def read_metadata_records(self, data: bytes | bytearray | memoryview | None) -> None:
        """Take in the TopicRecords of KRaft metadata record batches (bytes); what does not read is skipped."""
    @classmethod
    def load(cls, path: str) -> TopicNames:
        """Pairs from a file: JSON ({"<topic id>": "<name>"}), CSV (topic id, name on each line; a header line is
        skipped), or KRaft metadata: a segment file (``.log``) or a ``__cluster_metadata-0`` folder."""
    def to_json(self) -> dict[str, str]: ...
    def unnamed_in(self, body: Any) -> bool:
        """Whether a message names a topic by an id these names do not know."""

def held(items: Iterable[_T], limit: int = ..., exchange: Any = None) -> Iterator[_T]:
    """The items (exchanges, or what exchange(item) gives one of) in their order, each let go once every topic id
    its exchange names has a name, or once ``limit`` items wait behind the first that does not."""

