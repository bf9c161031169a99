"""kafkaproto capture: the summary, the row formats and the filters, run as a user runs them."""

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkaproto import capture
from kafkaproto import compiled as kafkaproto_compiled
from kafkaproto.capture import tables
from kafkaproto.capture.summary import LatencyHistogram
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


def test_parquet_row_groups_are_bounded_by_their_bytes(tmp_path, monkeypatch):
    pq = pytest.importorskip("pyarrow.parquet")
    from kafkaproto.__main__ import main
    whole, bounded = tmp_path / "whole.parquet", tmp_path / "bounded.parquet"
    assert main(["capture", str(KAFKAJS), "--output", str(whole)]) == 0
    monkeypatch.setattr(cli._Parquet, "BYTES", 1)
    monkeypatch.setattr(tables, "BATCH_BODY_BYTES", 1)
    assert main(["capture", str(KAFKAJS), "--output", str(bounded)]) == 0
    exchanges = len(list(capture.read_capture(KAFKAJS)))
    assert pq.ParquetFile(whole).num_row_groups == 1
    assert pq.ParquetFile(bounded).num_row_groups == exchanges  # a row group for each batch, each body ends one
    assert pq.read_table(bounded).equals(pq.read_table(whole))


@pytest.mark.parametrize("rows", [[], ["--records"]], ids=["exchanges", "records"])
def test_parquet_is_the_same_written_without_numpy(tmp_path, rows):
    """The console command keeps numpy out of its process (pyarrow imports it only to trade arrays); main() called
    by a program that has numpy must write the same file, byte for byte."""
    pytest.importorskip("pyarrow.parquet")
    assert kafkaproto(*CAPTURES, *rows, "--output", tmp_path / "console.parquet", cwd=tmp_path).returncode == 0
    program = ("import sys, numpy; from kafkaproto.__main__ import main; "
               "sys.exit(main(sys.argv[1:]) or ('pyarrow' in sys.modules and 'numpy' in sys.modules) - 1)")
    proc = subprocess.run([sys.executable, "-c", program, "capture", *map(str, CAPTURES), *rows, "--output",
                           str(tmp_path / "program.parquet")], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "console.parquet").read_bytes() == (tmp_path / "program.parquet").read_bytes()


@pytest.mark.parametrize("folders, expected", [(["pyarrow-26.0.1.dist-info"], True),
                                               (["pyarrow-15.0.2.dist-info"], False), ([], False)])
def test_numpy_is_kept_out_only_for_a_pyarrow_that_runs_without_it(tmp_path, monkeypatch, folders, expected):
    import importlib.machinery
    import importlib.util
    from kafkaproto.__main__ import _pyarrow_runs_without_numpy

    (tmp_path / "pyarrow").mkdir()
    (tmp_path / "pyarrow" / "__init__.py").write_text("")
    for name in folders:
        (tmp_path / name).mkdir()
    spec = importlib.machinery.ModuleSpec("pyarrow", None, origin=str(tmp_path / "pyarrow" / "__init__.py"))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec if name == "pyarrow" else None)
    assert _pyarrow_runs_without_numpy() is expected


# A large frame's buffer, freed: glibc maps a block this large on its own and unmaps it when freed (its
# threshold adapts to the largest block freed so far, which the imports keep far below this), unless told to keep
# it; mallinfo2 (glibc 2.33 on) says where it was and what is left free in the heap.
_FRAME = """
import ctypes, sys
from kafkaproto import capture

class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
kept = capture.keep_freed_memory() if sys.argv[1] == "keep" else None
frame = bytes(12 << 20)
mapped = libc.mallinfo2().hblkhd >= 12 << 20
del frame
print(kept, mapped, libc.mallinfo2().fordblks >= 12 << 20)
"""


def _has_mallinfo2():
    import ctypes
    return hasattr(ctypes.CDLL(None), "mallinfo2")


@pytest.mark.skipif(not kafkaproto_compiled() or os.confstr("CS_GNU_LIBC_VERSION") is None or not _has_mallinfo2(),
                    reason="asked of glibc (2.33 on, for mallinfo2), by the compiled build")
def test_freed_frames_are_kept_instead_of_given_back():
    seen = {}
    for how in ("leave", "keep"):
        seen[how] = subprocess.run([sys.executable, "-c", _FRAME, how], capture_output=True, text=True,
                                   check=True).stdout.split()
    assert seen["leave"] == ["None", "True", "False"]  # mapped on its own, and given back when freed
    assert seen["keep"] == ["True", "False", "True"]  # taken from the heap, and left free there


def test_the_capture_command_keeps_freed_memory(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(cli, "keep_freed_memory", lambda: asked.append(True))
    from kafkaproto.__main__ import main
    assert main(["capture", str(KAFKAJS), "--format", "jsonl", "--output", str(tmp_path / "rows.jsonl")]) == 0
    assert asked == [True]


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
    assert missing.returncode == 2 and "nope.pcap" in missing.stderr and "Traceback" not in missing.stderr
    assert kafkaproto(KAFKAJS, "--format", "parquet", cwd=tmp_path).returncode == 2  # needs --output


def test_check_exits_1_when_the_capture_holds_errors(tmp_path):
    """--check: 1 when a kept exchange has errors (after the usual output), 0 when none does."""
    failing = kafkaproto(KAFKAJS, "--check", cwd=tmp_path)
    plain = kafkaproto(KAFKAJS, cwd=tmp_path)
    assert plain.returncode == 0 and failing.returncode == 1, failing.stderr
    assert failing.stdout == plain.stdout and "with errors (--check)" in failing.stderr
    errors_only = kafkaproto(KAFKAJS, "--errors-only", "--format", "jsonl", cwd=tmp_path)
    counted = int(failing.stderr.split("capture: ")[1].split()[0])
    assert counted == len(errors_only.stdout.splitlines()) > 0
    rows = kafkaproto(KAFKAJS, "--check", "--format", "jsonl", cwd=tmp_path)
    assert rows.returncode == 1 and len(rows.stdout.splitlines()) > counted
    clean = kafkaproto(KAFKAJS, "--check", "--api", "ApiVersions", cwd=tmp_path)
    assert clean.returncode == 0 and "ApiVersions" in clean.stdout, clean.stderr


@pytest.mark.parametrize("content", [b"", b"hello, this is not a capture\n"], ids=["empty", "text"])
def test_a_file_that_is_not_a_capture_cannot_be_summarised(tmp_path, content):
    """Exit status 2 and one line on standard error naming the file; nothing on standard output."""
    path = tmp_path / "notes.pcap"
    path.write_bytes(content)
    for args in ((), ("--format", "jsonl"), (KAFKAJS,)):
        proc = kafkaproto(path, *args, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert proc.stdout == ""
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        assert f"{path}: not a pcap or pcapng file" in proc.stderr


def test_standard_input_that_is_not_a_capture(tmp_path):
    for args in ((), ("--format", "jsonl")):
        proc = subprocess.run([sys.executable, "-m", "kafkaproto", "capture", "-", *args], input="GET / HTTP/1.1\r\n",
                              capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stdout == "", proc.stdout
        assert proc.stderr.startswith("kafkaproto: error: standard input: not a pcap or pcapng file")


def fake_tool(folder, name, script):
    """A stand-in for a capture tool on PATH (the test machine may have none, nor the right to capture)."""
    folder.mkdir()
    tool = folder / name
    tool.write_text(f"#!{sys.executable}\n{script}")
    tool.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_an_interface_that_is_not_there(tmp_path):
    """dumpcap refuses an unknown interface with exit status 2: so does the command, with its reason."""
    env = fake_tool(tmp_path / "bin", "dumpcap", "import sys\n"
                    "print('Capturing on ' + repr(sys.argv[3]), file=sys.stderr)\n"
                    "print('dumpcap: There is no device named ' + repr(sys.argv[3]) + '.', file=sys.stderr)\n"
                    "sys.exit(2)\n")
    proc = subprocess.run([sys.executable, "-m", "kafkaproto", "capture", "--interface", "nosuch0"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert proc.stderr == ("kafkaproto: error: interface nosuch0: dumpcap failed (exit status 2): "
                           "There is no device named 'nosuch0'.\n")


def test_a_capture_tool_that_fails_after_capturing(tmp_path):
    """What came is summarised, then the tool's failure is the exit status."""
    env = fake_tool(tmp_path / "bin", "dumpcap", "import sys\n"
                    f"sys.stdout.buffer.write(open({str(KAFKAJS)!r}, 'rb').read())\n"
                    "sys.stdout.flush()\n"
                    "print('dumpcap: The network adapter on which the capture was being done is no longer running',"
                    " file=sys.stderr)\n"
                    "sys.exit(1)\n")
    proc = subprocess.run([sys.executable, "-m", "kafkaproto", "capture", "--interface", "eth9"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout.startswith(f"{len(list(capture.read_capture(KAFKAJS)))} exchanges in 1 file(s)")
    assert proc.stderr == ("kafkaproto: error: interface eth9: dumpcap failed (exit status 1): The network adapter "
                           "on which the capture was being done is no longer running\n")


@pytest.mark.parametrize("ports", ["abc", "9092,x", "0", "65536", "9092,", "-1"])
def test_ports_must_be_port_numbers(tmp_path, ports):
    proc = kafkaproto(KAFKAJS, "--ports", ports, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    bad = next(p for p in ports.split(",") if not (p.isdigit() and 1 <= int(p) <= 65535))
    assert f"--ports: {bad!r} is not a port number (1-65535)" in proc.stderr.splitlines()[-1]


def test_ports_are_read_as_numbers():
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert parser.parse_args(["x.pcap", "--ports", "9092, 9093"]).ports == [9092, 9093]
    assert parser.parse_args(["x.pcap"]).ports is None


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
    hist = LatencyHistogram()
    values = [i * 1000 for i in range(1, 10001)]
    for v in values:
        hist.add(v)
    for q in (0.5, 0.9, 0.99):
        exact = values[int(q * len(values)) - 1]
        assert abs(hist.percentile(q) - exact) <= 0.02 * exact
    assert hist.percentile(1.0) <= hist.max == values[-1]


def test_records_stamped_beyond_the_calendar_are_written(tmp_path):
    """A record may carry a timestamp up to 2**63-1 ms: one past the year 9999 is written as the number of
    milliseconds, the others as ISO 8601 (and -1, none, as null), in JSON lines and CSV alike."""
    from kafkaproto import encode_request, encode_response
    from kafkaproto.messages import ApiKey, ProduceRequest, ProduceResponse, RequestHeader, ResponseHeader
    from kafkaproto.records import RecordBatchBuilder
    from test_capture import Tcp, pcap_bytes

    stamps = [2**63 - 1, 1_700_000_000_123, -1]
    builder = RecordBatchBuilder()
    for i, stamp in enumerate(stamps):
        builder.append(b"k%d" % i, b"v", timestamp=stamp)
    request = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=builder.build())])])
    header = RequestHeader(request_api_key=ApiKey.PRODUCE, request_api_version=9, correlation_id=1, client_id="p")
    tcp = Tcp()
    segs = tcp.handshake() + tcp.send(True, encode_request(header, request, 9))
    segs += tcp.send(False, encode_response(ResponseHeader(correlation_id=1), ProduceResponse(), 9)) + tcp.close()
    path = tmp_path / "far.pcap"
    path.write_bytes(pcap_bytes(segs))
    expected = [2**63 - 1, "2023-11-14T22:13:20.123000", None]
    lines = kafkaproto(path, "--records", "--format", "jsonl", cwd=tmp_path)
    assert lines.returncode == 0, lines.stderr
    assert [json.loads(line)["timestamp"] for line in lines.stdout.splitlines()] == expected
    table = kafkaproto(path, "--records", "--format", "csv", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    import csv
    assert [row["timestamp"] for row in csv.DictReader(io.StringIO(table.stdout))] == [
        str(2**63 - 1), "2023-11-14T22:13:20.123000", ""]
