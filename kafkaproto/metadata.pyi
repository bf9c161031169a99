# The generated record classes, for editors and type checkers (kafkaproto/_generated/metadata.pyi is made by the build).
from ._generated.metadata import *  # noqa: F403
from .registry import record_class as record_class
