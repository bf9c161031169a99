"""kafkaproto capture: the summary, the row formats and the filters, run as a user runs them."""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafkaproto import capture
from kafkaproto.capture import tables
from kafkaproto.cli import capture as cli

CAPTURES = sorted((Path(__file__).parent / "data" / "captures").glob("*.pcap"))
KAFKAJS = next(p for p in CAPTURES if p.name == "kafkajs.pcap")
AIOKAFKA = next(p for p in CAPTURES if p.name == "aiokafka.pcap")


def kafkaproto(*args, cwd):
    """The console command, run outside the checkout so the installed package answers."""
    return subprocess.run([sys.executable, "-m", "kafkaproto", "capture", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


def test_the_summary_counts_what_the_reader_reads(tmp_path):
    proc = kafkaproto(KAFKAJS, AIOKAFKA, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    total = sum(len(list(capture.read_capture(p))) for p in (KAFKAJS, AIOKAFKA))
    assert proc.stdout.startswith(f"{total} exchanges in 2 file(s): {total} ok")
    out = proc.stdout
    for heading in ("exchanges by API and version", "latency in ms", "error codes in responses",
                    "topics by bytes produced", "topics by bytes fetched", "clients"):
        assert heading in out
    assert "NOT_COORDINATOR" in out  # aiokafka's JoinGroup met it (tests/data/captures/README.md)
    assert "js-topic" in out and "aio-topic" in out and "kafkajs" in out


def test_json_lines_carry_the_bodies_as_objects(tmp_path):
    proc = kafkaproto(KAFKAJS, "--format", "jsonl", "--api", "Produce,Fetch", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    expected = [ex for ex in capture.read_capture(KAFKAJS) if ex.api_name in ("Produce", "Fetch")]
    assert len(rows) == len(expected) > 0
    for row, ex in zip(rows, expected):
        assert row["api_name"] == ex.api_name and row["correlation_id"] == ex.correlation_id
        assert isinstance(row["request"], dict) and row["request"]["topics" if ex.api_key == 1 else "topic_data"]
        assert row["request_time"].endswith("Z") and row["latency_ns"] == ex.latency_ns
        assert set(row) == {f.name for f in tables.exchange_schema()}


def test_filters(tmp_path):
    def rows(*args):
        proc = kafkaproto(AIOKAFKA, "--format", "jsonl", *args, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return [json.loads(line) for line in proc.stdout.splitlines()]

    every = rows()
    errors = rows("--errors-only")
    assert errors and len(errors) < len(every)
    assert all(r["status"] != "ok" or r["error_code"] or r["partition_errors"] for r in errors)
    topic = rows("--topic", "aio-topic")
    assert topic and all("aio-topic" in r["topics"] for r in topic)
    client = rows("--client-id", "aiokafka-producer")
    assert client and all(r["client_id"] == "aiokafka-producer" for r in client)
    assert rows("--api", "0") == rows("--api", "Produce") != []


def test_csv_and_parquet_hold_the_same_rows(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    assert kafkaproto(KAFKAJS, "--output", tmp_path / "x.csv", cwd=tmp_path).returncode == 0
    assert kafkaproto(KAFKAJS, "--output", tmp_path / "x.parquet", cwd=tmp_path).returncode == 0
    table = pq.read_table(tmp_path / "x.parquet")
    assert table.schema.equals(tables.exchange_schema(), check_metadata=False)
    lines = (tmp_path / "x.csv").read_text().splitlines()
    assert lines[0].split(",") == table.schema.names
    assert len(lines) - 1 == table.num_rows == len(list(capture.read_capture(KAFKAJS)))
    assert table.column("api_name").to_pylist() == [ex.api_name for ex in capture.read_capture(KAFKAJS)]


def test_records_rows(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    assert kafkaproto(*CAPTURES, "--records", "--output", tmp_path / "r.parquet", cwd=tmp_path).returncode == 0
    table = pq.read_table(tmp_path / "r.parquet")
    expected = [row for p in CAPTURES for row in capture.records(capture.read_capture(p))]
    assert table.num_rows == len(expected) > 0
    assert table.column("value").to_pylist() == [row["value"] for row in expected]
    proc = kafkaproto(KAFKAJS, "--records", "--format", "jsonl", cwd=tmp_path)
    first = json.loads(proc.stdout.splitlines()[0])
    assert first["topic"] == "js-topic" and first["side"] in ("request", "response") and first["headers"]


def test_a_damaged_file_is_reported_not_a_traceback(tmp_path):
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(KAFKAJS.read_bytes()[:9000])
    proc = kafkaproto(cut, cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "capture error" in proc.stdout and "truncated" in proc.stdout
    missing = kafkaproto(tmp_path / "nope.pcap", cwd=tmp_path)
    assert missing.returncode == 1 and "nope.pcap" in missing.stderr and "Traceback" not in missing.stderr
    assert kafkaproto(KAFKAJS, "--format", "parquet", cwd=tmp_path).returncode == 1  # needs --output


def test_the_progress_line_shows_on_a_terminal_only(monkeypatch):
    clock = iter(range(0, 1000))
    monkeypatch.setattr(cli.time, "monotonic", lambda: next(clock))
    err = io.StringIO()
    monkeypatch.setattr(cli.sys, "stderr", err)
    reader = capture.read_capture(KAFKAJS)
    progress = cli._Progress(enabled=True)
    progress.start(str(KAFKAJS), reader)
    for _ in reader:
        for _ in range(64):
            progress.tick()
    progress.done()
    assert "packets/s" in err.getvalue() and err.getvalue().endswith("\n")
    shown = err.getvalue()
    quiet = cli._Progress(enabled=False)
    quiet.start(str(KAFKAJS), reader)
    for _ in range(1000):
        quiet.tick()
    quiet.done()
    assert err.getvalue() == shown


def test_the_latency_histogram_is_within_two_percent():
    hist = cli.LatencyHistogram()
    values = [i * 1000 for i in range(1, 10001)]
    for v in values:
        hist.add(v)
    for q in (0.5, 0.9, 0.99):
        exact = values[int(q * len(values)) - 1]
        assert abs(hist.percentile(q) - exact) <= 0.02 * exact
    assert hist.percentile(1.0) <= hist.max == values[-1]
