"""Arrow arrays from Python values, put together from their buffers.

pyarrow.array() (and RecordBatch.from_pylist, which calls it) imports pandas the first time it is given Python
objects, about 0.3 s that a command writing a few hundred rows to Parquet would spend for nothing. The types
here are those of the capture tables' schemas: strings, integers, booleans, timestamps (as integers), lists and
structs of them. Values read as pyarrow.array() reads them (None is null; a struct is a dict, a missing key null).
"""

from array import array

from .._impl import COMPILED

if COMPILED:  # strings copied once, from where each str keeps its UTF-8
    from ._carrowcols import text_column
else:
    text_column = None

_INTS = {8: "b", 16: "h", 32: "i", 64: "q"}


def batch(pa, rows, schema):
    """A RecordBatch of the dicts rows, one column per field of schema (RecordBatch.from_pylist's result)."""
    return pa.RecordBatch.from_arrays([column(pa, f.type, [row.get(f.name) for row in rows]) for f in schema],
                                      schema=schema)


def column(pa, typ, values):
    """An Array of type typ holding values."""
    n = len(values)
    validity = _validity(pa, values)
    types = pa.types
    if text_column is not None and typ == pa.string() and all(v is None or type(v) is str for v in values):
        return text_column(pa, values)
    if types.is_string(typ) or types.is_binary(typ):
        data = [b"" if v is None else v.encode() if isinstance(v, str) else bytes(v) for v in values]
        return pa.Array.from_buffers(typ, n, [validity, _offsets(pa, data), pa.py_buffer(b"".join(data))])
    if types.is_boolean(typ):
        return pa.Array.from_buffers(typ, n, [validity, _bits(pa, [v is not None and bool(v) for v in values])])
    if types.is_integer(typ) or types.is_timestamp(typ):
        code = _INTS[typ.bit_width] if types.is_signed_integer(typ) or types.is_timestamp(typ) else \
            _INTS[typ.bit_width].upper()
        data = array(code, [0 if v is None else v for v in values])
        return pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(data.tobytes())])
    if types.is_list(typ):
        items = [() if v is None else v for v in values]
        child = column(pa, typ.value_type, [x for v in items for x in v])
        return pa.Array.from_buffers(typ, n, [validity, _offsets(pa, items)], children=[child])
    if types.is_struct(typ):
        children = [column(pa, f.type, [None if v is None else v.get(f.name) for v in values]) for f in typ]
        return pa.Array.from_buffers(typ, n, [validity], children=children)
    raise TypeError(f"no Arrow column of {typ} from Python values here")


def _validity(pa, values):
    if all(v is not None for v in values):
        return None
    return _bits(pa, [v is not None for v in values])


def _bits(pa, flags):
    out = bytearray((len(flags) + 7) // 8)
    for i, flag in enumerate(flags):
        if flag:
            out[i >> 3] |= 1 << (i & 7)
    return pa.py_buffer(bytes(out))


def _offsets(pa, items):
    offsets = array("q", [0])
    total = 0
    for item in items:
        total += len(item)
        offsets.append(total)
    if total > 0x7FFFFFFF:
        raise ValueError(f"{total} bytes or items for one Arrow column of {len(items)} rows: more than its 32-bit "
                         "offsets reach (2 GiB); write fewer rows to a batch")
    return pa.py_buffer(array("i", offsets).tobytes())
