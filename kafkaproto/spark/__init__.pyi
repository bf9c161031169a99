# What editors and type checkers see of kafkaproto.spark.
from typing import Mapping

from pyspark.sql import DataFrame, SparkSession

from .planning import NAME as NAME
from .datasource import KafkaPcapDataSource as KafkaPcapDataSource
from .schema import exchange_struct as exchange_struct
from .schema import record_struct as record_struct

# What a data source option may be set to, as DataFrameReader.option takes it.
_Option = bool | float | int | str | None

def register(spark: SparkSession) -> SparkSession:
    """Make ``spark.read.format("kafka-pcap")`` and the SQL functions of ``udfs`` available on a session."""
def session(master: str = "local[*]", app_name: str = "kafkaproto",
            config: Mapping[str, str] | None = None) -> SparkSession:
    """A SparkSession (the active one if there is one) with the data source registered.

    By default a local one using every core; ``config`` adds settings (``{"spark.driver.memory": "4g"}``).
    Session times are in UTC, as capture times are.
    """
def topic_names(spark: SparkSession, paths: str | list[str], **options: _Option) -> dict[str, str]:
    """{topic id (text): name} of every pair the captures' answers carry, read on the cluster and gathered on the
    driver. options: the data source's."""
def read_named(spark: SparkSession, paths: str | list[str], level: str = "exchanges",
               **options: _Option) -> DataFrame:
    """The captures read at a level (exchanges or records) with every topic id named that any of them names:
    topic_names first, then the read with those pairs (option topicNames) in every task."""

__all__ = ["NAME", "KafkaPcapDataSource", "exchange_struct", "read_named", "record_struct", "register", "session",
           "topic_names"]
