"""Topic names behind topic IDs (kafkaproto.capture.names): learned from the traffic, from files and from a live
cluster, and applied to exchanges, record rows, filters and the summary, including requests seen before the answer
that names their topic."""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

import capture_files as cf
from kafkaproto.broker import Broker
from kafkaproto.capture import TopicNames, held, read_capture, records
from kafkaproto.capture.pcap import read_packets
from kafkaproto.metadata import TopicRecord, encode_record
from kafkaproto.records import RecordBatchBuilder
from kafkaproto.uuid import Uuid

CAPTURES = {p.stem: p for p in sorted((Path(__file__).parent / "data" / "captures").glob("*.pcap"))}
JAVA = CAPTURES["java-4.3.1"]  # Produce v13 and Fetch v18: topics by ID only


def kafkaproto(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "kafkaproto", *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def java_topic_id():
    names = TopicNames()
    list(read_capture(JAVA, names=names))
    ((topic_id, name),) = names.items()
    assert name == "java-topic"
    return topic_id


def test_ids_are_named_from_the_answers_that_pair_them():
    """Every capture's topics by ID get their names: exchanges, record rows (none left without a topic)."""
    for name, path in CAPTURES.items():
        names = TopicNames()
        exchanges = list(held(read_capture(path, names=names)))
        assert not any(ex.unnamed for ex in exchanges), name
        rows = list(records(exchanges))
        assert rows and all(row["topic"] for row in rows), name


def test_without_names_ids_stay_ids():
    rows = list(records(read_capture(JAVA)))
    assert {row["topic"] for row in rows if row["topic_id"]} == {None}


def test_the_java_capture_by_name_everywhere(tmp_path):
    """What the issue showed: the summary listed the topic by its ID, Produce and Fetch rows had no topic, and a
    --topic filter missed the exchanges that carry the data."""
    summary = kafkaproto("capture", JAVA, cwd=tmp_path).stdout
    produced = summary.split("topics by bytes produced\n")[1].splitlines()[0]
    assert produced.split()[0] == "java-topic" and str(java_topic_id()) not in summary
    filtered = kafkaproto("capture", JAVA, "--topic", "java-topic", "--api", "Produce,Fetch", "--format", "jsonl",
                          cwd=tmp_path)
    rows = [json.loads(line) for line in filtered.stdout.splitlines()]
    assert {row["api_name"] for row in rows} == {"Produce", "Fetch"} and len(rows) == 7
    assert all("java-topic" in row["topics"] and row["topic_ids"] for row in rows)
    record_rows = kafkaproto("capture", JAVA, "--records", "--format", "jsonl", cwd=tmp_path)
    assert {json.loads(line)["topic"] for line in record_rows.stdout.splitlines()} == {"java-topic"}


def cut_before_the_first_produce(path):
    """The capture from the packet of the first Produce request on: its clients learned the topic's ID before the
    capture began, and only a later Metadata answer (the consumer's) names it."""
    first = min(ex.request_packet for ex in read_capture(path) if ex.api_name == "Produce")
    packets = [p for number, p in enumerate(read_packets(path), 1) if number >= first]
    return cf.pcap([(p.timestamp_ns, p.data, p.original_length) for p in packets], link_type=packets[0].link_type,
                   nanos=True)


def unnamed_capture(path):
    """The capture from its first Produce on, without the packets that complete an answer naming topics: only
    --topic-names, --bootstrap-server or another capture can name its topic IDs."""
    data = cut_before_the_first_produce(path)
    packets = list(read_packets(io.BytesIO(data)))
    naming = {ex.response_packet for ex in read_capture(io.BytesIO(data))
              if ex.api_name in ("Metadata", "DescribeTopicPartitions", "CreateTopics", "DeleteTopics")}
    kept = [p for number, p in enumerate(packets, 1) if number not in naming]
    return cf.pcap([(p.timestamp_ns, p.data, p.original_length) for p in kept], link_type=packets[0].link_type,
                   nanos=True)


def test_requests_before_the_answer_that_names_their_topic():
    data = cut_before_the_first_produce(JAVA)
    names = TopicNames()
    exchanges = list(held(read_capture(io.BytesIO(data), names=names)))
    produces = [ex for ex in exchanges if ex.api_name == "Produce" and ex.request is not None]
    assert produces and all("java-topic" in ex.topics for ex in produces)
    first_naming = min(ex.response_packet for ex in exchanges if ex.api_name == "Metadata" and ex.response
                       and any(t.name == "java-topic" for t in ex.response.topics))
    assert min(ex.request_packet for ex in produces) < first_naming  # seen before, named all the same
    # Held at most so many: with a limit of 1 the early ones go out before their name is known, and say so.
    released = [(ex.api_name, ex.unnamed) for ex in held(read_capture(io.BytesIO(data), names=TopicNames()),
                                                          limit=1)]
    assert ("Produce", True) in released


def test_names_from_files_and_metadata_logs(tmp_path):
    topic_id = Uuid.random()
    (tmp_path / "names.json").write_text(json.dumps({str(topic_id): "orders"}))
    (tmp_path / "names.csv").write_text(f"topic_id,name\n{Uuid.random()},payments\n")
    builder = RecordBatchBuilder()
    record_id = Uuid.random()
    builder.append(None, encode_record(TopicRecord(name="from-kraft", topic_id=record_id)))
    (tmp_path / "00000000000000000000.log").write_bytes(builder.build())
    assert TopicNames.load(str(tmp_path / "names.json")).name(topic_id) == "orders"
    assert [name for _, name in TopicNames.load(str(tmp_path / "names.csv")).items()] == ["payments"]
    assert TopicNames.load(str(tmp_path)).name(record_id) == "from-kraft"
    (tmp_path / "bad.csv").write_text("one,two,three\n")
    with pytest.raises(ValueError, match=r"bad.csv, line 1: expected topic id,name"):
        TopicNames.load(str(tmp_path / "bad.csv"))
    (tmp_path / "bad.json").write_text('{"not-an-id": "x"}')
    with pytest.raises(ValueError, match="not a topic id"):
        TopicNames.load(str(tmp_path / "bad.json"))


def test_a_capture_with_no_naming_answers(tmp_path):
    """Only --topic-names or --bootstrap-server can name its IDs; without them the summary says how many stayed
    IDs."""
    bare = tmp_path / "bare.pcap"
    bare.write_bytes(unnamed_capture(JAVA))
    summary = kafkaproto("capture", bare, cwd=tmp_path).stdout
    assert "1 topic id named by no Metadata answer" in summary and str(java_topic_id()) in summary
    (tmp_path / "names.json").write_text(json.dumps({str(java_topic_id()): "java-topic"}))
    named = kafkaproto("capture", bare, "--topic-names", tmp_path / "names.json", cwd=tmp_path).stdout
    assert "named by no Metadata answer" not in named and "java-topic" in named
    with Broker() as broker:  # a live cluster's answer names its own topics
        kafkaproto("admin", "partitions", "--bootstrap-server", broker.bootstrap_servers, "--topic", "x", cwd=tmp_path)
        asked = kafkaproto("capture", bare, "--bootstrap-server", broker.bootstrap_servers, cwd=tmp_path)
    assert asked.returncode == 0 and "named by no Metadata answer" in asked.stdout  # it has no java-topic


def test_the_compiled_test_of_topic_ids_is_the_python_one():
    from kafkaproto import fields

    if fields.unnamed_in is fields.python_unnamed_in:
        pytest.skip("the compiled capture reader is not in use")
    checked = 0
    for path in CAPTURES.values():
        learned = TopicNames()
        for ex in read_capture(path, names=learned):
            for known in ({}, learned.known):
                for body in (ex.request, ex.response):
                    if body is not None:
                        assert fields.unnamed_in(body, known) == fields.python_unnamed_in(body, known)
                        checked += 1
    assert checked > 500
