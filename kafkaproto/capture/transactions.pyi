# What editors and type checkers see of kafkaproto.capture.transactions.
from typing import Any, Iterator, Protocol, Sequence

from .exchanges import Exchange

ABORT: int
COMMIT: int
READ_COMMITTED: int

class _AbortedTransaction(Protocol):
    producer_id: int
    first_offset: int

# (producer_id, transactional, control, marker, last_offset)
_Item = tuple[int, bool, bool, int | None, int]
_Field = tuple[str, int | None, str | None, Any, int | None, Any]

def marker_type(key: bytes | None) -> int | None:
    """The control type a control record's key holds (its second int16), or None when the key is too short."""
def outcomes(items: Sequence[_Item],
             aborted_transactions: Sequence[_AbortedTransaction] | None = None) -> list[bool | None]:
    """Whether each item's transaction was aborted: True, False, or None (not known)."""
def records_fields_with_aborted(ex: Exchange) -> Iterator[tuple[_Field, list[Any] | None]]:
    """records_fields(ex), each with the aborted transaction list that decides its batches (for a Fetch answer to
    a read_committed request), or None (their markers decide)."""
def aborted_array(table: Any, aborted_transactions: Sequence[_AbortedTransaction] | None = None) -> Any:
    """A pyarrow boolean array, the outcome of each row of a records table (kafkaproto.records.to_arrow's)."""
