# What editors and type checkers see of kafkaproto.capture.tables. pyarrow's types are Any here: pyarrow is
# optional, and carries no type information.
from typing import Any, Iterable, Iterator, Literal, Mapping

from ..registry import ApiInfo
from .exchanges import Exchange

# (name, Arrow type, what it holds) of each column.
EXCHANGE_FIELDS: tuple[tuple[str, str, str], ...]
RECORD_CONTEXT: tuple[tuple[str, str, str], ...]
RECORD_OUTCOME: tuple[tuple[str, str, str], ...]
TOPIC_NAME_FIELDS: tuple[tuple[str, str, str], ...]

_Bodies = bool | Literal["exact"]

def exchange_schema() -> Any:
    """The pyarrow schema of exchange tables."""
def topic_names_schema() -> Any:
    """The pyarrow schema of topic id/name tables."""
def record_schema() -> Any:
    """The pyarrow schema of record tables."""
def api_or_none(key: int | None) -> ApiInfo | None: ...
def exchange_row(ex: Exchange, file: str | None = None, bodies: _Bodies = True) -> dict[str, Any]:
    """One exchange as a dict of the exchange schema's columns. bodies: True (JSON with records spelled out),
    False (none), or "exact" (records as base64 bytes, so that exchange_of gives back the same exchange)."""
def exchange_of(row: Mapping[str, Any]) -> Exchange:
    """The Exchange an exchange row (a dict, a Spark Row's asDict()) came from, its bodies read back with
    jsonview.from_json."""
BATCH_BODY_BYTES: int

def exchange_batches(exchanges: Iterable[Exchange], file: str | None = None, size: int = 4096,
                     bodies: _Bodies = True, body_bytes: int | None = None) -> Iterator[Any]:
    """pyarrow RecordBatches of the exchange schema, size rows at most each, and ended once their bodies' text
    reaches body_bytes (BATCH_BODY_BYTES by default)."""
def exchanges_table(exchanges: Iterable[Exchange], file: str | None = None, bodies: _Bodies = True) -> Any:
    """A pyarrow.Table of the exchange schema, one row per exchange."""
def record_batches(exchanges: Iterable[Exchange], file: str | None = None, validate: bool = True,
                   rows: int = 65536) -> Iterator[Any]:
    """pyarrow RecordBatches of the record schema, of up to about ``rows`` rows each."""
def records_table(exchanges: Iterable[Exchange], file: str | None = None, validate: bool = True) -> Any:
    """A pyarrow.Table of the record schema, one row per record."""
def compiled_record_lines(batch: Any) -> str | None:
    """The JSON lines of a batch of the record schema written in compiled code; None where that code does not take
    the batch, or is not built."""
