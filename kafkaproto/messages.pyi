# The generated classes, for editors and type checkers (kafkaproto/_generated/messages.pyi is made by the build).
from typing import Any

from ._generated import ApiKey as ApiKey
from ._generated.messages import *  # noqa: F403
from .registry import ApiInfo as ApiInfo
from .registry import api as api
from .registry import apis as apis

def load_implementation(impl: str | None = None) -> dict[str, type[Any]]: ...
