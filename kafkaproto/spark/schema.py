"""The Spark schemas of exchange and record rows, derived from kafkaproto.capture.tables, and Arrow batches made to fit.

The Arrow schemas in ``tables`` are the source of truth; here each column becomes the Spark type that holds it:

    string -> STRING, int16 -> SMALLINT, int32 -> INT, int64 -> BIGINT, bool -> BOOLEAN, binary -> BINARY,
    timestamp (any unit, with or without a zone) -> TIMESTAMP (an instant, microseconds),
    list -> ARRAY, struct -> STRUCT

Every column is nullable, nested fields too: a row for a records field that did not read, or for a capture that is
damaged, has nulls where the Arrow schema promises values. Each column's description becomes its Spark comment
(``DESCRIBE`` shows it). Bodies stay JSON text; ``parse_json(request)`` makes a VARIANT of one.
"""

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ..capture import tables

EXCHANGES = "exchanges"
RECORDS = "records"
TOPIC_NAMES = "topic_names"
LEVELS = (EXCHANGES, RECORDS, TOPIC_NAMES)

_SIMPLE = {
    pa.string(): StringType(),
    pa.int16(): ShortType(),
    pa.int32(): IntegerType(),
    pa.int64(): LongType(),
    pa.bool_(): BooleanType(),
    pa.binary(): BinaryType(),
}


def spark_type(arrow_type: pa.DataType) -> DataType:
    """The Spark type holding an Arrow type of the capture tables (all nested fields nullable)."""
    if pa.types.is_timestamp(arrow_type):
        return TimestampType()
    if pa.types.is_list(arrow_type):
        return ArrayType(spark_type(arrow_type.value_type), containsNull=True)
    if pa.types.is_struct(arrow_type):
        return StructType([StructField(f.name, spark_type(f.type), nullable=True) for f in arrow_type])
    try:
        return _SIMPLE[arrow_type]
    except KeyError:
        raise TypeError(f"no Spark type is chosen for the Arrow type {arrow_type}") from None


def spark_schema(arrow_schema: pa.Schema) -> StructType:
    """A Spark StructType for an Arrow schema, with each field's "doc" metadata as its comment."""
    fields = []
    for field in arrow_schema:
        doc = (field.metadata or {}).get(b"doc")
        metadata = {"comment": doc.decode()} if doc else {}
        fields.append(StructField(field.name, spark_type(field.type), nullable=True, metadata=metadata))
    return StructType(fields)


def exchange_struct() -> StructType:
    """One row per exchange: the columns of tables.EXCHANGE_FIELDS."""
    return spark_schema(tables.exchange_schema())


def record_struct() -> StructType:
    """One row per record: where it travelled (tables.RECORD_CONTEXT), then kafkaproto.records' columns."""
    return spark_schema(tables.record_schema())


def topic_names_struct() -> StructType:
    """One row per topic id/name pair a split's answers carry (the level a first pass reads: see read_named)."""
    return spark_schema(tables.topic_names_schema())


def struct_for(level: str) -> StructType:
    if level == EXCHANGES:
        return exchange_struct()
    if level == RECORDS:
        return record_struct()
    if level == TOPIC_NAMES:
        return topic_names_struct()
    raise ValueError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")


def arrow_schema_of(struct: StructType) -> pa.Schema:
    """The Arrow schema Spark expects batches of this struct in (it compares types and nullability exactly)."""
    return to_arrow_schema(struct, timezone="UTC")


# Microseconds since the epoch must fit an int64: a timestamp beyond this many milliseconds (or seconds) does not.
_US_LIMITS = {"s": (2**63 - 1) // 1_000_000, "ms": (2**63 - 1) // 1_000}


def conform_array(array: pa.Array, target: pa.DataType) -> pa.Array:
    """An array cast to the type Spark expects. Finer timestamps are truncated to microseconds; coarser ones
    that microseconds cannot hold (a record timestamp no producer meant) become null rather than wrap."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.type == target:
        return array
    if pa.types.is_timestamp(array.type) and pa.types.is_timestamp(target):
        limit = _US_LIMITS.get(array.type.unit)
        if limit is not None:
            raw = array.view(pa.int64())
            fits = pc.and_(pc.greater_equal(raw, -limit), pc.less_equal(raw, limit))
            array = pc.if_else(fits, array, pa.scalar(None, array.type))
        return array.cast(target, safe=False)
    return array.cast(target)


def conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A batch with schema's column names and exact types, columns taken by name."""
    columns = [conform_array(batch.column(field.name), field.type) for field in schema]
    return pa.RecordBatch.from_arrays(columns, schema=schema)
