# What editors and type checkers see of kafkaproto.spark.udfs. pyarrow's types are Any here: it carries no type
# information.
from typing import Any, Callable, Iterable, Iterator

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import StructType

# A column, a column's name, or (for api_key and api_version) a number.
_ColumnOrName = Column | str

REQUEST: StructType
RESPONSE: StructType
ARROW_UDF: Any  # pyspark.sql.functions.arrow_udf where Spark has it (4.1+), else None

def request_row(frame: bytes | bytearray | memoryview | None) -> dict[str, Any] | None:
    """One request frame (bytes-like, size prefix optional) as a dict of REQUEST's fields; None for None."""
def response_row(frame: bytes | bytearray | memoryview | None, api_key: int,
                 api_version: int) -> dict[str, Any] | None:
    """One response frame, read as the answer to a request of api_key at api_version, as RESPONSE's fields."""
def decode_request_frames(frames: Any) -> Any:
    """A binary array of request frames -> a struct array of REQUEST (the Arrow UDF's body)."""
def decode_response_frames(frames: Any, api_keys: Any, api_versions: Any) -> Any:
    """Binary response frames with their requests' API keys and versions -> a struct array of RESPONSE."""
def request_udf() -> Callable[..., Column]: ...
def response_udf() -> Callable[..., Column]: ...
def decode_request(frame: _ColumnOrName) -> Column:
    """A column of request frames (binary) -> a REQUEST struct column."""
def decode_response(frame: _ColumnOrName, api_key: _ColumnOrName | int, api_version: _ColumnOrName | int) -> Column:
    """Response frames -> a RESPONSE struct column. api_key and api_version: columns, column names or numbers."""
def register(spark: SparkSession) -> None:
    """The SQL functions kafka_decode_request(frame) and kafka_decode_response(frame, api_key, api_version)."""
def records_struct() -> StructType:
    """kafkaproto.records' columns, then ``error`` (why the records field did not read)."""
def records_exploder(column: str, keep: Iterable[str], output_arrow: Any, validate: bool = True,
                     allow_partial: bool = True) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The mapInArrow function of explode_records: input batches -> one row per record of ``column``, with the
    ``keep`` columns repeated."""
def explode_records(df: DataFrame, column: str = "records", keep: Iterable[str] | None = None, validate: bool = True,
                    allow_partial: bool = True) -> DataFrame:
    """One row per record in df's binary ``column`` (a Produce or Fetch ``records`` field).

    keep: df's columns to repeat on every record row (default: all but ``column``). validate: check CRCs.
    allow_partial: a field may end with a partial batch, as fetch responses do.
    """
