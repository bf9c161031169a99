# The generated record classes, for editors and type checkers (kafkaproto/_generated/metadata.pyi is made by the build).
from typing import Any, ClassVar, Protocol

from ._generated.metadata import *  # noqa: F403
from .registry import record_class as record_class

FRAME_VERSION: int

class _Record(Protocol):
    api_key: ClassVar[int]
    def encode(self, version: int) -> bytes: ...

def encode_record(record: _Record, version: int | None = None) -> bytes: ...
def decode_record(value: bytes | bytearray | memoryview) -> tuple[Any, int]: ...
