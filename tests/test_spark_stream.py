"""spark.readStream.format("kafka-pcap") over a folder a ring is written into: offsets, micro-batches, and a query
stopped, failed mid-batch and restarted from its checkpoint giving every exchange once, row for row the batch
reader's (option ring) over the same files."""

import os
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles  # noqa: E402

from kafkaproto.capture.pcap import read_packets  # noqa: E402
from kafkaproto.spark import schema  # noqa: E402
from kafkaproto.spark.planning import ReadOptions  # noqa: E402
from kafkaproto.spark.stream import KafkaPcapStreamReader  # noqa: E402

from test_capture_follow import CAPTURES, pieces  # noqa: E402
from test_spark import spark  # noqa: E402, F401 - the session

pytestmark = [pytest.mark.xdist_group("spark"), pytest.mark.above_the_codecs]

# A day ahead of the clock: no file here goes idle (option idle), so the newest is the one being written.
T0 = (time.time_ns() // 10**9 + 86_400) * 10**9


def ring_files():
    """Three clients' captures, one after another, cut into 14 files (inside connections, inside frames)."""
    return pieces(CAPTURES["java-4.3.1"], 6) + pieces(CAPTURES["librdkafka"], 4) + pieces(CAPTURES["franz-go"], 4)


def write(folder, files, start):
    """Files as a capture tool leaves them: ring00.pcap, ring01.pcap, ... each written after the one before."""
    for k, data in enumerate(files, start):
        path = folder / f"ring{k:02d}.pcap"
        path.write_bytes(data)
        os.utime(path, ns=(T0 + k * 10**9,) * 2)


def reader(folder, **options):
    opts = ReadOptions({"path": str(folder), **options})
    return KafkaPcapStreamReader(opts, schema.struct_for(opts.level))


def test_offsets_name_finished_files(tmp_path):
    files = ring_files()
    write(tmp_path, files[:4], 0)
    source = reader(tmp_path, maxFilesPerTrigger="2")
    start = source.initialOffset()
    assert start["files"] == 0
    assert source.getDefaultReadLimit() == ReadMaxFiles(2)
    first = source.latestOffset(start, source.getDefaultReadLimit())
    assert (Path(first["file"]).name, first["files"]) == ("ring01.pcap", 2)
    everything = source.latestOffset(start, ReadAllAvailable())
    assert (Path(everything["file"]).name, everything["files"]) == ("ring02.pcap", 3)  # ring03 is being written
    assert everything["size"] == (tmp_path / "ring02.pcap").stat().st_size
    assert source.latestOffset(everything, ReadAllAvailable()) == everything  # nothing new
    # The new file's partition reads the two files before it first, and reports what ends in its own.
    parts = source.partitions(first, everything)
    assert [Path(p.file.name).name for p in parts] == ["ring02.pcap"]
    assert [Path(f.name).name for f in parts[0].ring[0]] == ["ring00.pcap", "ring01.pcap", "ring02.pcap"]
    assert source.partitions(everything, everything) == []
    rows = [row for batch in source.read(parts[0]) for row in batch.to_pylist()]
    assert rows and {row["file"] for row in rows} == {str(tmp_path / "ring02.pcap")}
    # A query that starts at the latest reads only what is finished after it starts.
    late = reader(tmp_path, startingPosition="latest")
    assert late.initialOffset()["file"] == str(tmp_path / "ring02.pcap")
    write(tmp_path, files[4:5], 4)
    assert Path(late.latestOffset(late.initialOffset(), ReadAllAvailable())["file"]).name == "ring03.pcap"
    # A ring going round: ring00 written anew is the file being written, then a new file, read again.
    os.utime(tmp_path / "ring00.pcap", ns=(T0 + 20 * 10**9,) * 2)
    later = source.latestOffset(everything, ReadAllAvailable())
    assert (Path(later["file"]).name, later["files"]) == ("ring04.pcap", 5)
    write(tmp_path, files[5:6], 5)
    os.utime(tmp_path / "ring05.pcap", ns=(T0 + 30 * 10**9,) * 2)
    round_again = source.latestOffset(later, ReadAllAvailable())
    assert (Path(round_again["file"]).name, round_again["files"]) == ("ring00.pcap", 6)
    parts = source.partitions(later, round_again)
    assert [Path(f.name).name for f in parts[0].ring[0]] == ["ring03.pcap", "ring04.pcap", "ring00.pcap"]


def test_topic_names_are_read_again_for_every_micro_batch(tmp_path):
    """Option topicNames as a file: the driver reads it for every micro-batch, so a map (or a metadata log) kept
    up to date names topics created after the query began."""
    import json

    ring = tmp_path / "ring"
    ring.mkdir()
    write(ring, pieces(CAPTURES["java-4.3.1"], 6), 0)
    names = tmp_path / "names.json"
    names.write_text("{}")
    source = reader(ring, level="records", topicNames=str(names))
    start = source.initialOffset()
    end = source.latestOffset(start, ReadAllAvailable())

    def topics():
        return {(row["topic"], row["topic_id"]) for part in source.partitions(start, end)
                for batch in source.read(part) for row in batch.to_pylist()}

    before = topics()
    assert len(before) == 1 and next(iter(before))[0] == "java-topic"  # the windows' Metadata answers name it
    topic_id = next(iter(before))[1]
    names.write_text(json.dumps({topic_id: "named-by-the-map"}))  # given pairs come first
    assert topics() == {("named-by-the-map", topic_id)}


def test_a_name_learned_in_one_micro_batch_names_the_next(tmp_path, caplog):
    """Micro-batch 1 reads a capture whose Metadata answers name java-topic; micro-batch 2 one that only uses its ID:
    the pairs go on in the offsets (so in the checkpoint), and a reader started again from them names it too. An
    ID nothing names is said once."""
    import logging

    from test_capture_names import unnamed_capture

    ring = tmp_path / "ring"
    ring.mkdir()
    bare_franz = unnamed_capture(CAPTURES["franz-go"])
    # Each file read alone (lookback 0): the bare capture's connections are the full one's, cut.
    write(ring, [CAPTURES["java-4.3.1"].read_bytes(), unnamed_capture(CAPTURES["java-4.3.1"]), bare_franz,
                 bare_franz], 0)  # the last is the file being written
    caplog.set_level(logging.WARNING, logger="kafkaproto.spark")
    source = reader(ring, level="records", lookback="0", maxFilesPerTrigger="1")
    start = source.initialOffset()
    first = source.latestOffset(start, source.getDefaultReadLimit())
    second = source.latestOffset(first, source.getDefaultReadLimit())
    assert list(first["names"].values()) == ["java-topic"] and second["names"] == first["names"]

    def rows(stream, begin, end):
        return [row for part in stream.partitions(begin, end) for batch in stream.read(part)
                for row in batch.to_pylist()]

    def topics(stream, begin, end):
        return {(row["topic_id"], row["topic"]) for row in rows(stream, begin, end)}

    java_topics = topics(source, start, first)
    assert len(java_topics) == 1 and next(iter(java_topics))[1] == "java-topic"
    assert topics(source, first, second) == java_topics  # IDs only in the file, named all the same
    restarted = reader(ring, level="records", lookback="0")
    assert topics(restarted, first, second) == java_topics  # from the offsets alone
    assert caplog.records == []
    third = source.latestOffset(second, source.getDefaultReadLimit())
    franz = topics(source, second, third)
    assert len(franz) == 1 and next(iter(franz))[1] is None
    assert source.unnamed == {next(iter(franz))[0]}
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "1 topic id named by no Metadata answer" in said[0]
    write(ring, [bare_franz], 4)  # the same ID again: not said again
    source.latestOffset(third, source.getDefaultReadLimit())
    assert len(caplog.records) == 1


def test_options_are_checked(tmp_path):
    for options, message in (({"lookback": "-1"}, "lookback"), ({"maxFilesPerTrigger": "0"}, "maxFilesPerTrigger"),
                             ({"startingPosition": "middle"}, "startingPosition"), ({"ring": "maybe"}, "ring")):
        with pytest.raises(ValueError, match=message):
            reader(tmp_path, **options)


def test_a_stream_restarted_from_its_checkpoint_equals_the_batch_read(spark, tmp_path):  # noqa: F811
    ring, out, checkpoint = tmp_path / "ring", tmp_path / "out", tmp_path / "checkpoint"
    ring.mkdir()
    files = ring_files()
    calls = []

    def save(batch, batch_id):
        # Idempotent per micro-batch, as a sink must be for exactly once: a batch run again replaces its rows.
        calls.append(batch_id)
        batch.write.mode("overwrite").parquet(str(out / f"batch={batch_id}"))

    def run():
        query = (spark.readStream.format("kafka-pcap").option("maxFilesPerTrigger", "2").load(str(ring))
                 .writeStream.foreachBatch(save).option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination(300)
        assert query.exception() is None

    write(ring, files[:7], 0)  # ring00-05 finished, ring06 being written
    run()
    assert calls == [0, 1, 2]
    # The query dies after its last micro-batch wrote its rows but before it committed that batch.
    for name in ("2", ".2.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    write(ring, files[7:], 7)  # the capture goes on: ring13 is being written
    run()
    assert calls[3] == 2 and calls.count(2) == 2  # batch 2 ran again, with the offsets it had
    assert max(calls) >= 5

    streamed = spark.read.parquet(str(out)).drop("batch")
    last = str(ring / "ring13.pcap")
    batch = spark.read.format("kafka-pcap").option("ring", "true").load(str(ring))
    want = sorted((tuple(r) for r in batch.collect() if r.file != last), key=repr)
    got = sorted((tuple(r) for r in streamed.select(*batch.columns).collect()), key=repr)
    assert got == want  # every column, every row, once

    # The rows are the captures' exchanges, paired across the cuts: all ok, and some answers end in a file after
    # the one their request was sent in.
    status = batch.columns.index("status")
    assert {r[status] for r in got} == {"ok"} and len(got) > 100
    first_time = {str(p): next(iter(read_packets(p))).timestamp_ns for p in ring.iterdir()}
    file, request_time = batch.columns.index("file"), batch.columns.index("request_time")
    assert [r for r in got if round(r[request_time].timestamp() * 10**6) * 1000 + 1000 <= first_time[r[file]]]


def test_the_readme_stream_example(spark, tmp_path):  # noqa: F811
    import re

    from test_readme import README

    block = re.search(r"```python stream\n(.*?)```", README.read_text(), re.S).group(1)
    (tmp_path / "ring").mkdir()
    write(tmp_path / "ring", ring_files()[:5], 0)
    code = "\n".join(line[2:] for line in block.splitlines())
    for folder in ("ring/", "exchanges/", "checkpoint/"):  # relative paths are the JVM's, which began elsewhere
        code = code.replace(f'"{folder}"', f'"{tmp_path / folder}"')
    exec(compile(code, str(README), "exec"), {"spark": spark})
    got = spark.read.parquet(str(tmp_path / "exchanges"))
    want = spark.read.format("kafka-pcap").option("ring", "true").load(str(tmp_path / "ring"))
    assert got.count() == want.filter(want.file != str(tmp_path / "ring" / "ring04.pcap")).count() > 20
