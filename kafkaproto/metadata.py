"""KRaft metadata records (the payloads of the __cluster_metadata log).

    from kafkaproto.metadata import TopicRecord, record_class
"""

from . import _generated
from .messages import registry
from .registry import record_class

_RECORDS = {name: cls for name, cls in registry.classes().items()
            if name in _generated.SPECS and _generated.SPECS[name].kind == "metadata"}
globals().update(_RECORDS)
__all__ = sorted(_RECORDS) + ["record_class"]
