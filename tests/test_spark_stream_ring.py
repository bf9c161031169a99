"""spark.readStream.format("kafka-pcap") at the ends of a ring, the driver's decisions called one by one (no Spark
session): the newest file read once it is idle and what it gains afterwards read later, each exchange once; files the
ring writes over or deletes before they are read reported as capture error rows, in a running stream and after a
restart; a stream started at the latest position naming topics by the pairs of the files it skips."""

import os

import pytest

pytest.importorskip("pyspark")
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles  # noqa: E402

from kafkaproto.spark import schema  # noqa: E402
from kafkaproto.spark.planning import ReadOptions  # noqa: E402
from kafkaproto.spark.stream import BEGINNING, KafkaPcapStreamReader  # noqa: E402

from test_capture_follow import CAPTURES, pieces  # noqa: E402

pytestmark = [pytest.mark.xdist_group("spark"), pytest.mark.above_the_codecs]

S = 10**9
NOW = 1_900_000_000 * S  # the driver's clock in these tests (the reader's ``now``)
ALL = ReadAllAvailable()


class Ring:
    """A folder a capture tool writes into, and the driver's clock."""

    def __init__(self, folder):
        self.folder = folder
        folder.mkdir()
        self.clock = NOW

    def path(self, k):
        return self.folder / f"ring{k:02d}.pcap"

    def put(self, k, data, age=0):
        """ringKK.pcap holding data, last written ``age`` seconds before the clock."""
        self.path(k).write_bytes(data)
        os.utime(self.path(k), ns=(self.clock - age * S,) * 2)

    def reader(self, **options):
        opts = ReadOptions({"path": str(self.folder), **options})
        source = KafkaPcapStreamReader(opts, schema.struct_for(opts.level))
        source.now = lambda: self.clock
        return source


def rows(source, start, end):
    return [row for part in source.partitions(start, end) for batch in source.read(part) for row in batch.to_pylist()]


def names(offset):
    return [os.path.basename(name) for name, _, _ in offset["batch"]]


def key(row):
    return tuple(sorted((k, repr(v)) for k, v in row.items()))


def test_the_newest_file_is_read_once_idle_and_what_it_gains_later_too(tmp_path):
    """A capture that goes quiet: its newest file is read once it has not grown for ``idle`` seconds; when the
    capture goes on in it, the bytes it gained are read, then a newer file finishes it. The micro-batches give
    the rows one micro-batch gives over the finished files: none twice, none lost."""
    files = pieces(CAPTURES["java-4.3.1"], 4) + pieces(CAPTURES["librdkafka"], 2)
    ring = Ring(tmp_path / "ring")
    half = len(files[2]) // 2 + 3  # inside a packet record
    ring.put(0, files[0], 100)
    ring.put(1, files[1], 90)
    ring.put(2, files[2][:half], 40)
    source = ring.reader(idle="30")
    offsets = [source.initialOffset()]
    assert offsets[0] == BEGINNING

    def step():
        offsets.append(source.latestOffset(offsets[-1], ALL))
        return offsets[-1]

    first = step()
    assert names(first) == ["ring00.pcap", "ring01.pcap", "ring02.pcap"] and first["open"]
    assert first["size"] == half
    ring.put(2, files[2], 5)  # the capture goes on in the same file: not idle yet
    assert step() is offsets[-2]
    offsets.pop()
    ring.clock += 60 * S  # quiet again: what it gained is read
    grown = step()
    assert names(grown) == ["ring02.pcap"] and grown["after"] == half and grown["open"]
    assert grown["files"] == 4 and grown["size"] == len(files[2])
    ring.put(3, files[3], 0)  # a newer file: ring02 is finished, and what was open at its end is seen to
    ended = step()
    assert names(ended) == ["ring02.pcap"] and ended["after"] == len(files[2]) and not ended["open"]
    ring.put(4, files[4], 0)
    ring.put(5, files[5], 0)
    ring.clock += 60 * S
    last = step()
    assert names(last) == ["ring03.pcap", "ring04.pcap", "ring05.pcap"] and last["open"]
    assert step() is last  # nothing new, nothing read again

    streamed = [row for a, b in zip(offsets, offsets[1:]) for row in rows(source, a, b)]
    by_piece = [len(rows(source, a, b)) for a, b in zip(offsets, offsets[1:])]
    assert by_piece[1] > 0  # the bytes ring02 gained after its first read held exchanges
    once = ring.reader(idle="30")  # the same files, finished, in one micro-batch
    whole = once.latestOffset(BEGINNING, ALL)
    assert len(whole["batch"]) == 6
    want = rows(once, BEGINNING, whole)
    assert sorted(map(key, streamed)) == sorted(map(key, want))
    assert len(set(map(key, want))) == len(want) > 50


def test_files_the_ring_writes_over_before_they_are_read_are_reported(tmp_path):
    """Each file lost before it was read gives one capture error row naming it, in the micro-batch after the
    loss was seen: one the stream listed and did not read yet (running, and from the checkpoint's offset after a
    restart), one a micro-batch planned that went before its task ran, one seen at a look that began no
    micro-batch, and the rest of a file read while idle."""
    files = pieces(CAPTURES["kafka-python"], 4) + pieces(CAPTURES["franz-go"], 4)
    ring = Ring(tmp_path / "ring")
    for k in range(4):
        ring.put(k, files[k], 40 - k)  # ring03 is being written
    one = ReadMaxFiles(1)
    source = ring.reader(maxFilesPerTrigger="1")
    start = source.initialOffset()
    first = source.latestOffset(start, one)
    assert names(first) == ["ring00.pcap"]
    assert [os.path.basename(p[0]) for p in first["pending"]] == ["ring01.pcap", "ring02.pcap", "ring03.pcap"]
    ring.put(1, files[4], 0)  # the ring comes round to ring01 before the stream read it
    restarted = ring.reader(maxFilesPerTrigger="1").latestOffset(first, one)
    second = source.latestOffset(first, one)
    assert second == restarted  # the loss is known from the offset alone
    assert names(second) == ["ring02.pcap"] and [os.path.basename(n) for n, _ in second["lost"]] == ["ring01.pcap"]
    got = rows(source, first, second)
    errors = [r for r in got if r["status"] == "capture error"]
    assert [os.path.basename(r["file"]) for r in errors] == ["ring01.pcap"]
    assert "written anew by the ring before the stream read it" in errors[0]["error"]
    assert {os.path.basename(r["file"]) for r in got} == {"ring01.pcap", "ring02.pcap"}

    # Planned, then gone before the micro-batch ran.
    third = source.latestOffset(second, one)
    assert names(third) == ["ring03.pcap"]
    ring.path(3).unlink()
    got = rows(source, second, third)
    assert [(os.path.basename(r["file"]), r["status"]) for r in got] == [("ring03.pcap", "capture error")]
    assert "deleted by the ring before the stream read it" in got[0]["error"]

    # Seen at a look that began no micro-batch (under Trigger.AvailableNow: written after the query started), so
    # in no offset: the running stream remembers it.
    ring.clock += 61 * S
    ring.put(5, files[5], 0)
    source.prepareForTriggerAvailableNow()  # the new ring01 is finished, ring05 is being written
    fourth = source.latestOffset(third, ALL)
    assert names(fourth) == ["ring01.pcap"]
    ring.put(6, files[6], 0)
    ring.put(7, files[7], 0)
    assert source.latestOffset(fourth, ALL) is fourth  # ring05 and ring06 finished after the start: not read
    ring.path(6).unlink()
    fifth = source.latestOffset(fourth, ALL)
    assert fifth["batch"] == [] and [os.path.basename(n) for n, _ in fifth["lost"]] == ["ring06.pcap"]
    got = rows(source, fourth, fifth)
    assert [(os.path.basename(r["file"]), r["status"]) for r in got] == [("ring06.pcap", "capture error")]
    assert source.latestOffset(fifth, ALL) is fifth  # said once

    # The rest of a file read while it was idle, lost: written anew before the stream saw it end.
    quiet = Ring(tmp_path / "quiet")
    quiet.put(0, files[0], 100)
    quiet.put(1, files[1][:len(files[1]) // 2], 100)
    stream = quiet.reader()
    read = stream.latestOffset(BEGINNING, ALL)
    assert names(read) == ["ring00.pcap", "ring01.pcap"] and read["open"]
    quiet.put(1, files[6], 0)  # the capture went on, round the ring and back to ring01
    quiet.put(2, files[7], 0)
    after = stream.latestOffset(read, ALL)
    assert names(after) == ["ring01.pcap"] and "after" not in after  # the new ring01, whole
    assert [os.path.basename(n) for n, _ in after["lost"]] == ["ring01.pcap"]
    errors = [r for r in rows(stream, read, after) if r["status"] == "capture error"]
    assert len(errors) == 1 and "before the stream read it to its end" in errors[0]["error"]


def test_a_file_grown_since_its_micro_batch_was_planned_is_read_as_planned(tmp_path):
    """An idle file planned at some size and written on before its task ran: the task reads the planned bytes (the
    rest is the next micro-batch's), not an error; one written anew meanwhile is an error row."""
    files = pieces(CAPTURES["java-4.3.1"], 3)
    ring = Ring(tmp_path / "ring")
    ring.put(0, files[0], 100)
    ring.put(1, files[1][:len(files[1]) // 3], 100)
    source = ring.reader()
    planned = source.latestOffset(BEGINNING, ALL)
    assert planned["open"]
    ring.put(1, files[1], 0)
    got = rows(source, BEGINNING, planned)
    assert got and all(r["status"] != "capture error" for r in got)
    ring.clock += 100 * S
    rest = source.latestOffset(planned, ALL)
    later = rows(source, planned, rest)
    assert later and not {key(r) for r in later} & {key(r) for r in got}
    ring.put(1, files[2], 0)  # written anew, shorter or not: another file
    errors = [r["error"] for r in rows(source, planned, rest) if r["status"] == "capture error"]
    assert len(errors) == 1 and "ring01.pcap" in errors[0]


def test_trigger_available_now_reads_a_file_idle_when_the_query_starts(tmp_path):
    files = pieces(CAPTURES["librdkafka"], 2)
    ring = Ring(tmp_path / "ring")
    ring.put(0, files[0], 100)
    ring.put(1, files[1], 61)
    source = ring.reader()
    source.prepareForTriggerAvailableNow()
    assert names(source.latestOffset(BEGINNING, ALL)) == ["ring00.pcap", "ring01.pcap"]
    ring.put(1, files[1], 59)  # not idle at the start: not read in this run, idle or not later
    late = ring.reader()
    late.prepareForTriggerAvailableNow()
    ring.clock += 10 * S
    assert names(late.latestOffset(BEGINNING, ALL)) == ["ring00.pcap"]
    assert names(ring.reader().latestOffset(BEGINNING, ALL)) == ["ring00.pcap", "ring01.pcap"]  # running: it is


def test_a_stream_started_at_the_latest_names_topics_by_the_files_it_skips(tmp_path):
    """The files already there are skipped, but their Metadata answers name the topic IDs of the rows to come:
    each file is read alone here (lookback 0), and the new ones carry no name."""
    from test_capture_names import unnamed_capture

    ring = Ring(tmp_path / "ring")
    bare = unnamed_capture(CAPTURES["java-4.3.1"])
    ring.put(0, CAPTURES["java-4.3.1"].read_bytes(), 30)
    ring.put(1, bare, 20)
    ring.put(2, bare, 0)  # being written
    source = ring.reader(level="records", lookback="0", startingPosition="latest")
    start = source.initialOffset()
    blind = ring.reader(level="records", lookback="0", startingPosition="latest", namesPass="false")
    blind_start = blind.initialOffset()
    assert os.path.basename(start["file"]) == "ring01.pcap" and start["files"] == 0
    assert list(start["names"].values()) == ["java-topic"]
    ring.put(3, bare, 0)
    end = source.latestOffset(start, ALL)
    assert names(end) == ["ring02.pcap"]
    got = rows(source, start, end)
    assert got and {(r["topic"], bool(r["topic_id"])) for r in got} == {("java-topic", True)}
    # Without the pairs of the files skipped, nothing names the topic.
    assert "names" not in blind_start
    blind_end = blind.latestOffset(blind_start, ALL)
    assert names(blind_end) == ["ring02.pcap"]
    assert {r["topic"] for r in rows(blind, blind_start, blind_end)} == {None}


def test_the_idle_option_is_checked(tmp_path):
    for value in ("-1", "soon", "inf"):
        with pytest.raises(ValueError, match="option idle"):
            ReadOptions({"path": str(tmp_path), "idle": value})
    assert ReadOptions({"path": str(tmp_path)}).idle == 60
    assert ReadOptions({"path": str(tmp_path), "idle": "0.5"}).idle == 0.5


def test_a_file_deleted_as_the_ring_is_listed_is_not_there(tmp_path, monkeypatch):
    """A ring deleting its oldest file (dumpcap -b files:N) between the folder's listing and the file's stat: the
    stream goes on without it rather than stopping the query."""
    files = pieces(CAPTURES["librdkafka"], 3)
    ring = Ring(tmp_path / "ring")
    for k in range(3):
        ring.put(k, files[k], 3 - k)
    stat = os.stat

    def deleted_meanwhile(path, *args, **kwargs):
        if str(path).endswith("ring00.pcap"):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", deleted_meanwhile)
    assert names(ring.reader().latestOffset(BEGINNING, ALL)) == ["ring01.pcap"]
