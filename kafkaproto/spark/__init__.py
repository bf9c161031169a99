"""Kafka captures and frames in Spark: the ``kafka-pcap`` data source and Arrow UDFs (extra ``[spark]``).

    from kafkaproto import spark as kspark

    spark = kspark.session()                       # a local session (local[*]) with kafka-pcap registered
    df = spark.read.format("kafka-pcap").option("ports", "9092").load("captures/*.pcap")
    df.groupBy("api_name").count().show()
    df.selectExpr("parse_json(response) AS response")   # bodies are JSON text; VARIANT on demand

    records = spark.read.format("kafka-pcap").option("level", "records").load("captures/")

    from kafkaproto.spark import udfs                # frames already in a table (see udfs)
    frames.select(udfs.decode_request("frame"))

Kafka 4's clients name topics by ID only (Produce v13, Fetch v13 on). A read names them by every pair its files carry
(Metadata answers and the like), whichever task reads them: the driver gathers the pairs first, in a quick pass
(option namesPass, see datasource). ``read_named`` gathers them with a Spark job instead, for reads too large for one
machine to pass over:

    records = kspark.read_named(spark, "captures/*.pcap", level="records")

A ring of files a capture tool rotates, as one capture (``option("ring", "true")``), and the folder it is written
into as a stream (``spark.readStream.format("kafka-pcap").load("ring/")``): see ``stream``.

``datasource`` describes the options and how files are split between tasks; ``schema`` the columns (from
kafkaproto.capture.tables). Any other session, e.g. one spark-submit made, gets the data source (and the SQL
functions kafka_decode_request, kafka_decode_response) with ``register(spark)``.

On a cluster the executors run this package's code: install kafkaproto with this extra on every node
(``pip install '.[spark]'`` in a checkout), or ship it with the job: ``pip install --target kp .`` (or a built
wheel instead of ``.``), pack ``kp`` as ``kp.tar.gz`` and
``spark-submit --archives kp.tar.gz#kp --conf spark.executorEnv.PYTHONPATH=kp``.
"""

import json
import os
import sys

from .._optional import require

# Before the modules that import them, so that a missing one is named with the extra that installs it.
require("pyspark", "spark", "kafkaproto.spark")
require("pyarrow", "spark", "kafkaproto.spark")

from .datasource import KafkaPcapDataSource  # noqa: E402
from .planning import NAME  # noqa: E402
from .schema import exchange_struct, record_struct  # noqa: E402

__all__ = ["NAME", "KafkaPcapDataSource", "exchange_struct", "read_named", "record_struct", "register", "session",
           "topic_names"]


def register(spark):
    """Make ``spark.read.format("kafka-pcap")`` and the SQL functions of ``udfs`` available on a session."""
    from . import udfs

    spark.dataSource.register(KafkaPcapDataSource)
    udfs.register(spark)
    return spark


def session(master="local[*]", app_name="kafkaproto", config=None):
    """A SparkSession (the active one if there is one) with the data source registered.

    By default a local one using every core; ``config`` adds settings (``{"spark.driver.memory": "4g"}``).
    Session times are in UTC, as capture times are. Local workers run this Python (unless PYSPARK_PYTHON says
    otherwise), so they import the same kafkaproto.
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name).config("spark.sql.session.timeZone", "UTC")
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    return register(builder.getOrCreate())


def topic_names(spark, paths, **options):
    """{topic id (text): name} of every pair the captures' answers carry, read on the cluster (level topic_names:
    only the answers that pair them are decoded) and gathered on the driver. options: the data source's."""
    reader = spark.read.format(NAME).options(**options).option("level", "topic_names")
    return {row.topic_id: row.name for row in reader.load(paths).distinct().collect()}


def read_named(spark, paths, level="exchanges", **options):
    """The captures read at a level (exchanges or records) with every topic id named that any of them names:
    topic_names first, then the read with those pairs (option topicNames) in every task."""
    names = topic_names(spark, paths, **{k: v for k, v in options.items() if k != "topicNames"})
    return (spark.read.format(NAME).options(**options).option("level", level)
            .option("topicNames", json.dumps(names)).option("namesPass", "false").load(paths))
