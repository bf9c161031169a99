"""KRaft metadata records (the payloads of the __cluster_metadata log).

    from kafkaproto.metadata import TopicRecord, record_class
"""

from . import _generated
from .messages import _CLASSES

_RECORDS = {name: cls for name, cls in _CLASSES.items() if _generated.SPECS[name][0] == "metadata"}
_BY_TYPE = {cls.api_key: cls for cls in _RECORDS.values()}
globals().update(_RECORDS)
__all__ = sorted(_RECORDS) + ["record_class"]


def record_class(record_type):
    """The record class for a metadata record type number (the spec's apiKey)."""
    try:
        return _BY_TYPE[record_type]
    except KeyError:
        raise KeyError(f"no metadata record type {record_type!r}") from None
