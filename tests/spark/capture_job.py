"""A spark-submit application for tests/test_spark_cluster.py: captures read with the kafka-pcap data source on the
cluster, and what was read, written as JSON.

    spark-submit --master spark://HOST:PORT ... capture_job.py OUT.json CAPTURE...
"""

import json
import sys

from pyspark.sql import SparkSession

from kafkaproto import spark as kspark


def counts(spark, paths):
    """(file, api, status, exchanges) of the captures, and records per topic and partition, sorted."""
    exchanges = spark.read.format("kafka-pcap").option("splits", "2").load(paths)
    by_api = exchanges.groupBy("file", "api_name", "status").count().collect()
    records = kspark.read_named(spark, paths, level="records").groupBy("file", "topic", "partition").count().collect()
    return {"exchanges": sorted([r.file, r.api_name or "", r.status, r["count"]] for r in by_api),
            "records": sorted([r.file, r.topic or "", r.partition, r["count"]] for r in records)}


def main(out, paths):
    spark = kspark.register(SparkSession.builder.appName("kafkaproto-capture-job").getOrCreate())
    found = counts(spark, paths)
    # Where each executor's tasks found kafkaproto: the copy shipped with the job, not one installed on the node.
    found["kafkaproto"] = sorted(set(spark.sparkContext.parallelize(range(8), 8).map(
        lambda _: __import__("kafkaproto").__file__).collect()))
    with open(out, "w") as f:
        json.dump(found, f)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
