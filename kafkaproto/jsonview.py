"""Decoded messages as plain JSON values: what the CLI prints and captures export.

    from kafkaproto.jsonview import to_json, to_json_text
    json.dumps(to_json(message))
    to_json_text(message)          # json.dumps(to_json(message), separators=(",", ":")), written directly

Fields keep their snake_case names; bytes become base64 strings, topic IDs their
Kafka base64 form (as Kafka's tools print them), and ``records`` fields the
batches and records they hold (or, when they do not decode, their base64 bytes
and the error). With ``decode_records=False`` records stay base64 bytes too, and
``from_json`` reads such a value back into the very message it came from.
"""

from __future__ import annotations

import base64
import json
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any, TypeVar

from ._impl import COMPILED
from .exceptions import RecordsError
from .uuid import Uuid

_T = TypeVar("_T")


def to_json(msg: Any, decode_records: bool = True) -> dict[str, Any]:
    """A message (or any generated struct) as dicts, lists, strings, numbers, booleans and None."""
    out = {}
    for f in type(msg)._fields:
        out[f.attr] = _value(f, getattr(msg, f.attr), decode_records)
    if msg.unknown_tagged_fields:
        out["unknown_tagged_fields"] = {str(tag): _b64(data) for tag, data in msg.unknown_tagged_fields.items()}
    return out


def to_json_text(msg: Any, decode_records: bool = True, ensure_ascii: bool = True) -> str:
    """json.dumps(to_json(msg, decode_records), ensure_ascii=ensure_ascii, separators=(",", ":")), the same text
    written without building the dicts first: a records field's batches go from their bytes to text in compiled
    code where it is built (kafkaproto.capture._crecordrows), which spares a dict and two base64 strings per
    record."""
    return "".join(json_parts(msg, [], decode_records, ensure_ascii))


def json_parts(msg: Any, parts: list[str], decode_records: bool = True, ensure_ascii: bool = True) -> list[str]:
    """parts, with the pieces of to_json_text(msg, ...) appended (for a caller joining more text around them)."""
    _struct_text(msg, decode_records, _TEXT[ensure_ascii], parts)
    return parts


def records_text(data: bytes | bytearray | memoryview, ensure_ascii: bool = True) -> str:
    """json.dumps(records_json(data), ensure_ascii=ensure_ascii, separators=(",", ":"))."""
    if _compiled_records_json is None:
        _load_compiled()
    if _compiled_records_json:
        text = _compiled_records_json(data, ensure_ascii)
        if text is not None:  # None: not plain magic-2 batches that all read; records_json says what they hold
            return text
    return _TEXT[ensure_ascii].dumps(records_json(data))


class _Text:
    """How one JSON value is written: as json.dumps writes it, with or without ensure_ascii."""

    def __init__(self, ensure_ascii):
        self.ensure_ascii = ensure_ascii
        self.dumps = json.JSONEncoder(ensure_ascii=ensure_ascii, separators=(",", ":")).encode
        self.string = encode_basestring_ascii if ensure_ascii else encode_basestring
        self.plans = {}  # a struct's class -> its fields' plan (_plan)

    def value(self, value):
        kind = type(value)
        if kind is str:
            return self.string(value)
        if kind is int:
            return int.__repr__(value)
        if value is None:
            return "null"
        if kind is bool:
            return "true" if value else "false"
        return self.dumps(value)


_TEXT = {True: _Text(True), False: _Text(False)}

# How a field is written (see _plan).
_SCALAR, _STRUCT, _STRUCTS, _RECORDS, _ARRAY = range(5)


def _plan(cls, text):
    """(attribute, its key with the comma before it, how it is written, the field) of each of a struct's fields:
    worked out once per class, as every struct of a capture is written the same way."""
    plan = []
    for f in cls._fields:
        if f.struct is not None:
            how = _STRUCTS if f.array else _STRUCT
        elif f.kind == "records" and not f.array:
            how = _RECORDS
        else:
            how = _ARRAY if f.array else _SCALAR
        plan.append((f.attr, ("," if plan else "") + text.string(f.attr) + ":", how, f))
    return tuple(plan)


def python_struct_text(msg, decode_records, text, parts):
    """Appends to parts the JSON text of a struct (_cjsonview.struct_text is its compiled twin)."""
    plan = text.plans.get(type(msg))
    if plan is None:
        plan = text.plans[type(msg)] = _plan(type(msg), text)
    append = parts.append
    append("{")
    for attr, key, how, f in plan:
        append(key)
        value = getattr(msg, attr)
        if value is None:
            append("null")
        elif how == _SCALAR:
            kind = type(value)
            if kind is int:
                append(int.__repr__(value))
            elif kind is str:
                append(text.string(value))
            elif kind is bool:
                append("true" if value else "false")
            else:
                append(text.value(_item(f, value, decode_records)))
        elif how == _STRUCT:
            python_struct_text(value, decode_records, text, parts)
        elif how == _STRUCTS:
            append("[")
            for i, item in enumerate(value):
                if i:
                    append(",")
                if item is None:
                    append("null")
                else:
                    python_struct_text(item, decode_records, text, parts)
            append("]")
        elif how == _RECORDS and decode_records:
            append(records_text(value, text.ensure_ascii))
        elif how == _ARRAY:
            append(text.dumps(_value(f, value, decode_records)))
        else:  # records left as their bytes
            append(text.value(_item(f, value, decode_records)))
    if msg.unknown_tagged_fields:
        append(("," if plan else "") + text.string("unknown_tagged_fields") + ":")
        append(text.dumps({str(tag): _b64(data) for tag, data in msg.unknown_tagged_fields.items()}))
    append("}")


_compiled_records_json = None  # the compiled records_text, or False where it is not there; looked up on first use


def _load_compiled():
    global _compiled_records_json
    _compiled_records_json = False
    if COMPILED:
        # Imported here, not above: the capture package imports this module.
        from .capture._crecordrows import records_json as _compiled_records_json


def _value(f, value, decode_records):
    if value is None:
        return None
    if f.array:
        return [_item(f, x, decode_records) for x in value]
    return _item(f, value, decode_records)


def _item(f, value, decode_records):
    if value is None:
        return None
    if f.struct is not None:
        return to_json(value, decode_records)
    if f.kind == "records":
        return records_json(value) if decode_records else _b64(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _b64(value)
    if isinstance(value, Uuid):
        return str(value)
    return value


def _b64(data):
    return base64.b64encode(bytes(data)).decode("ascii")


def records_json(data: bytes | bytearray | memoryview) -> list[dict[str, Any]] | dict[str, Any]:
    """The batches in a records field, each with its header fields and its records."""
    from . import records as _records  # here: the codec's import (tens of ms) is not every command's

    out = []
    try:
        for batch in _records.iter_batches(data, allow_partial=True):
            entry = {"base_offset": batch.base_offset, "magic": batch.magic,
                     "compression": _records.Compression(batch.compression).name.lower()
                     if batch.compression < 5 else batch.compression,
                     "producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
                     "base_sequence": batch.base_sequence, "transactional": batch.is_transactional,
                     "control": batch.is_control, "records": []}
            for r in batch:
                entry["records"].append({
                    "offset": r.offset, "timestamp": r.timestamp,
                    "key": None if r.key is None else _b64(r.key),
                    "value": None if r.value is None else _b64(r.value),
                    "headers": [{"key": k, "value": None if v is None else _b64(v)} for k, v in r.headers]})
            out.append(entry)
    except RecordsError as e:
        return {"bytes": _b64(data), "error": str(e), "batches": out}
    return out


def from_json(cls: type[_T], value: Any, path: str | None = None) -> _T:
    """The message (of class cls) that to_json(message, decode_records=False) gave value for; ValueError naming
    the field path when value does not fit cls (records spelled out as batches cannot be turned back into the
    bytes they came from)."""
    path = path or cls._qualname
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected an object for {cls._qualname}, got {type(value).__name__}")
    fields = {f.attr: f for f in cls._fields}
    values = {}
    for key, item in value.items():
        if key == "unknown_tagged_fields":
            values[key] = {int(tag): _unb64(data, f"{path}.{key}.{tag}") for tag, data in (item or {}).items()}
            continue
        f = fields.get(key)
        if f is None:
            raise ValueError(f"{path}: {cls._qualname} has no field {key!r}")
        where = f"{path}.{key}"
        if item is None:
            values[key] = None
        elif f.array:
            if not isinstance(item, list):
                raise ValueError(f"{where}: expected a list, got {type(item).__name__}")
            values[key] = [_from_item(f, x, f"{where}[{i}]") for i, x in enumerate(item)]
        else:
            values[key] = _from_item(f, item, where)
    return cls(**values)


def _from_item(f, item, where):
    if item is None:
        return None
    if f.struct is not None:
        return from_json(f.struct, item, where)
    if f.kind == "records":
        if not isinstance(item, str):
            raise ValueError(f"{where}: records spelled out as batches cannot be read back into their bytes; "
                             "write them as bytes (to_json(..., decode_records=False))")
        return _unb64(item, where)
    if f.kind == "bytes":
        return _unb64(item, where)
    if f.kind == "uuid":
        try:
            return Uuid.from_string(item)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{where}: {e}") from None
    return item


def _unb64(text, where):
    try:
        return base64.b64decode(text, validate=True)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: not base64: {e}") from None


_struct_text = python_struct_text
if COMPILED:  # the same text, compiled (it reads the plans _plan makes)
    from ._cjsonview import struct_text as _struct_text  # noqa: E402, F811
