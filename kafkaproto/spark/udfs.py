"""Kafka frames and records fields already in a table (stored by a proxy, a broker plugin, another job), decoded.

    from kafkaproto.spark import udfs

    frames.select(udfs.decode_request("frame"))                        # struct: header fields, request JSON, error
    frames.select(udfs.decode_response("frame", "api_key", "api_version"))   # struct: response JSON, error
    udfs.explode_records(produced, "records", keep=["topic", "partition"])   # one row per record

A frame may carry its int32 size prefix or not (it is taken as one when it equals the length of the rest). Nothing
raises: a frame that does not decode gives a struct whose ``error`` says why (with the header fields when the
header read), a records field that does not read gives one row whose ``error`` says why. Null in, null out.

decode_request and decode_response are Arrow UDFs (``arrow_udf``, Spark 4.1+; Spark 4.0 gets Arrow-optimized
Python UDFs instead). explode_records runs through ``mapInArrow``: kafkaproto.records.to_arrow builds the record
columns in compiled code, so no Python object is made per record. In SQL, after ``kafkaproto.spark.register``:
``kafka_decode_request(frame)`` and ``kafka_decode_response(frame, api_key, api_version)``.
"""

import json

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import ShortType, StringType, StructField, StructType

from .. import protocol
from .. import records as _records
from ..jsonview import to_json
from ..registry import api
from . import schema as _schema

REQUEST = StructType([
    StructField("api_key", ShortType(), metadata={"comment": "the request's API key"}),
    StructField("api_name", StringType(), metadata={"comment": "the API's name, null for keys kafkaproto lacks"}),
    StructField("api_version", ShortType(), metadata={"comment": "the request's version"}),
    StructField("correlation_id", _schema.spark_type(pa.int32()), metadata={"comment": "the correlation id"}),
    StructField("client_id", StringType(), metadata={"comment": "the client id in the header"}),
    StructField("request", StringType(), metadata={"comment": "the request body as JSON"}),
    StructField("error", StringType(), metadata={"comment": "why the frame did not decode"}),
])

RESPONSE = StructType([
    StructField("correlation_id", _schema.spark_type(pa.int32()), metadata={"comment": "the correlation id"}),
    StructField("api_version", ShortType(),
                metadata={"comment": "the version it was read at (ApiVersions may answer at 0)"}),
    StructField("response", StringType(), metadata={"comment": "the response body as JSON"}),
    StructField("error", StringType(), metadata={"comment": "why the frame did not decode"}),
])

_REQUEST_ARROW = _schema.arrow_schema_of(REQUEST)
_RESPONSE_ARROW = _schema.arrow_schema_of(RESPONSE)


def _payload(data):
    """The frame without its size prefix, when it starts with one."""
    if len(data) >= 4 and int.from_bytes(data[:4], "big", signed=True) == len(data) - 4:
        return data[4:]
    return data


def _text(message):
    return json.dumps(to_json(message), separators=(",", ":"))


def _api_name(key):
    try:
        return api(key).name
    except (KeyError, TypeError):
        return None


def _error(e):
    return f"{type(e).__name__}: {e}"


def request_row(frame):
    """One request frame (bytes-like, size prefix optional) as a dict of REQUEST's fields; None for None."""
    if frame is None:
        return None
    data = _payload(memoryview(frame))
    try:
        decoded = protocol.decode_request(data)
        header, body, error = decoded.header, decoded.body, None
    except Exception as e:  # whatever the bytes are, the row says so
        body, error = None, _error(e)
        try:
            header = protocol.read_request_header(data)
        except Exception:
            header = None
    row = {"api_key": None, "api_name": None, "api_version": None, "correlation_id": None, "client_id": None,
           "request": None, "error": error}
    if header is not None:
        row.update(api_key=header.request_api_key, api_name=_api_name(header.request_api_key),
                   api_version=header.request_api_version, correlation_id=header.correlation_id,
                   client_id=header.client_id)
    if body is not None:
        try:
            row["request"] = _text(body)
        except Exception as e:
            row["error"] = _error(e)
    return row


def response_row(frame, api_key, api_version):
    """One response frame, read as the answer to a request of api_key at api_version, as RESPONSE's fields."""
    if frame is None:
        return None
    data = _payload(memoryview(frame))
    row = {"correlation_id": None, "api_version": None, "response": None, "error": None}
    if len(data) >= 4:
        row["correlation_id"] = int.from_bytes(data[:4], "big", signed=True)
    if api_key is None or api_version is None:
        row["error"] = "the API key and version of the request are needed to read a response"
        return row
    try:
        decoded = protocol.decode_response(data, int(api_key), int(api_version))
        row.update(api_version=decoded.version, response=_text(decoded.body))
    except Exception as e:
        row["error"] = _error(e)
    return row


def _buffers(array):
    """Each value of a binary array as a zero-copy buffer (None for nulls)."""
    return [None if not v.is_valid else v.as_buffer() for v in array]


def decode_request_frames(frames: pa.Array) -> pa.Array:
    """A binary array of request frames -> a struct array of REQUEST (the Arrow UDF's body)."""
    return pa.array([request_row(f) for f in _buffers(frames)], type=pa.struct(list(_REQUEST_ARROW)))


def decode_response_frames(frames: pa.Array, api_keys: pa.Array, api_versions: pa.Array) -> pa.Array:
    """Binary response frames with their requests' API keys and versions -> a struct array of RESPONSE."""
    rows = [response_row(f, k, v) for f, k, v in zip(_buffers(frames), api_keys.to_pylist(), api_versions.to_pylist())]
    return pa.array(rows, type=pa.struct(list(_RESPONSE_ARROW)))


# Spark 4.1+ has Arrow UDFs: whole columns in and out, no Row per value. Spark 4.0 lacks them.
ARROW_UDF = getattr(F, "arrow_udf", None)


def _scalar_udf(arrow_fn, row_fn, return_type):
    """arrow_fn as an Arrow UDF where Spark has them; else row_fn as an Arrow-optimized Python UDF."""
    if ARROW_UDF is not None:
        return ARROW_UDF(arrow_fn, return_type)
    return F.udf(row_fn, return_type, useArrow=True)


def _column(value):
    if isinstance(value, Column):
        return value
    if isinstance(value, str):
        return F.col(value)
    return F.lit(value)


def request_udf():
    return _scalar_udf(decode_request_frames, request_row, REQUEST)


def response_udf():
    return _scalar_udf(decode_response_frames, response_row, RESPONSE)


def decode_request(frame):
    """A column of request frames (binary) -> a REQUEST struct column."""
    return request_udf()(_column(frame))


def decode_response(frame, api_key, api_version):
    """Response frames -> a RESPONSE struct column. api_key and api_version: columns, column names or numbers."""
    return response_udf()(_column(frame), _column(api_key).cast("smallint"), _column(api_version).cast("smallint"))


def register(spark):
    """The SQL functions kafka_decode_request(frame) and kafka_decode_response(frame, api_key, api_version)."""
    spark.udf.register("kafka_decode_request", request_udf())
    spark.udf.register("kafka_decode_response", response_udf())


# ---- records ---------------------------------------------------------------------------------------------------

def records_struct():
    """kafkaproto.records' columns, then ``error`` (why the records field did not read)."""
    fields = list(_schema.spark_schema(_records.arrow_schema()).fields)
    fields.append(StructField("error", StringType(), metadata={"comment": "why the records field did not read"}))
    return StructType(fields)


_FLUSH_ROWS = 1 << 16  # output rows gathered before a batch goes out


def records_exploder(column, keep, output_arrow, validate=True, allow_partial=True):
    """The mapInArrow function of explode_records: input batches -> one row per record of ``column``, with the
    ``keep`` columns repeated. Records go in as zero-copy slices and come out as Arrow columns from to_arrow."""
    record_fields = [f for f in output_arrow if f.name not in keep]

    def null_piece():
        return [pa.nulls(1, f.type) for f in record_fields]

    def explode(batches):
        for batch in batches:
            taken, pieces, rows = [], [], 0
            for i, data in enumerate(_buffers(batch.column(column))):
                if data is None or not data.size:
                    continue
                try:
                    table = _records.to_arrow(memoryview(data), validate=validate, allow_partial=allow_partial)
                    piece = [_schema.conform_array(table.column(f.name), f.type) for f in record_fields[:-1]]
                    piece.append(pa.nulls(table.num_rows, pa.string()))
                    n = table.num_rows
                except Exception as e:  # a field that does not read is one row saying why
                    piece = null_piece()
                    piece[-1] = pa.array([_error(e)], pa.string())
                    n = 1
                if not n:
                    continue
                taken.extend([i] * n)
                pieces.append(piece)
                rows += n
                if rows >= _FLUSH_ROWS:
                    yield _assemble(batch, keep, taken, pieces, output_arrow)
                    taken, pieces, rows = [], [], 0
            if rows:
                yield _assemble(batch, keep, taken, pieces, output_arrow)

    return explode


def _assemble(batch, keep, taken, pieces, output_arrow):
    indices = pa.array(taken, pa.int32())
    columns = [_schema.conform_array(batch.column(name).take(indices), output_arrow.field(name).type) for name in keep]
    for j in range(len(pieces[0])):
        columns.append(pa.concat_arrays([piece[j] for piece in pieces]))
    return pa.RecordBatch.from_arrays(columns, schema=output_arrow)


def explode_records(df, column="records", keep=None, validate=True, allow_partial=True):
    """One row per record in df's binary ``column`` (a Produce or Fetch ``records`` field).

    keep: df's columns to repeat on every record row (default: all but ``column``). validate: check CRCs.
    allow_partial: a field may end with a partial batch, as fetch responses do.
    """
    keep = [c for c in df.columns if c != column] if keep is None else list(keep)
    out = records_struct()
    clash = sorted(set(keep) & set(out.fieldNames()))
    if clash:
        raise ValueError(f"kept columns {clash} have the names of record columns: rename them first")
    output = StructType([df.schema[name] for name in keep] + list(out.fields))
    exploder = records_exploder(column, keep, _schema.arrow_schema_of(output), validate, allow_partial)
    return df.mapInArrow(exploder, output)
