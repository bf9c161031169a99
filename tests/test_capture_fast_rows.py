"""The row outputs' fast paths give what the general ones give.

- jsonview.to_json_text and records_text write exactly json.dumps of to_json and records_json, with and without
  ensure_ascii, on every message of the test captures and on records fields of every kind: each codec, null keys,
  values and header values, header keys that JSON escapes, LogAppendTime, sequences that wrap, transactions and
  their markers, legacy message sets, a last batch cut short, a bad CRC, a malformed record.
- Compiled, those fields that read cleanly are written by capture._crecordrows (its records_json answers None
  for exactly the others), and its RecordRows gives kafkaproto.records.to_arrow's columns and
  transactions.aborted_array's outcomes, field by field and gathered over many fields; a field it leaves to the
  general path adds nothing, even after some of its batches read; its context columns repeat each field's
  values over the field's rows.
- tables.record_batches gives the same rows with the compiled gathering as with the general one, on captures
  that mix fields of both kinds and a field whose records do not read.
- The command line's JSON line of an exchange is json.dumps of its row, and so are its --records lines (written
  in compiled code but for batches with error rows or times outside the years 1000-9999); Arrow columns built
  from Python values
  (capture._arrowcols) equal pyarrow's own from the same rows; writing Parquet imports neither pandas nor
  pyarrow.compute; exchange bodies are written without a dictionary, the other columns with one; and the summary
  imports neither the record codec nor pyarrow.
"""

import argparse
import collections
import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from kafkaproto import jsonview, records
from kafkaproto._impl import COMPILED
from kafkaproto.capture import read_capture, tables, transactions
from kafkaproto.capture import _arrowcols
from kafkaproto.capture.transactions import aborted_array, outcomes
from kafkaproto.cli import capture as capture_cli
from kafkaproto.jsonview import records_json, records_text, to_json, to_json_text
from kafkaproto.messages import DescribeClientQuotasResponse, MetadataRequest
from kafkaproto.records import RecordBatchBuilder
from test_capture_rows import ABORTED_TRANSACTIONS, LOG, capture_of, fetch_exchange, log_bytes, produce_exchange

if COMPILED:
    from kafkaproto.capture import _carrowcols, _crecordrows

DATA = Path(__file__).parent / "data"
CAPTURES = sorted((DATA / "captures").glob("*.pcap")) + [DATA / "transactions" / "transactions.pcap"]
compiled_only = pytest.mark.skipif(not COMPILED, reason="the compiled row paths are not in use")


def batch(*rows, **options):
    """A batch of (key, value, headers) rows."""
    builder = RecordBatchBuilder(**options)
    for key, value, headers in rows:
        builder.append(key, value, headers=headers, timestamp=1_700_000_000_000)
    return builder.build()


def with_crc(data):
    """A magic-2 batch's bytes with its CRC computed again (after they were changed)."""
    data = bytearray(data)
    data[17:21] = crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


PLAIN = batch((b"k", b"value", [("trace", b"1")]), (None, b"", []), (b"", None, [("h", None), ("h2", b"")]))
ESCAPED = batch((b"k", b"v", [('quote"back\\slash', b"x"), ("line\nfeed\ttab\r\b\f", b"y"),
                              ("\x01\x1f\x7f", None)]))
# Fields the compiled paths read (name -> bytes), then those they leave to the general path.
CLEAN = {
    "plain": PLAIN,
    "empty": b"",
    "escaped header keys": ESCAPED,
    **{f"{codec}": batch(*[(b"key%d" % i, b"value %d" % i * 3, [("n", b"%d" % i)]) for i in range(20)],
                         compression=codec) for codec in ("gzip", "snappy", "lz4", "zstd")},
    "log append time": batch((b"a", b"b", []), (b"c", b"d", []), timestamp_type=1, log_append_time=1_700_000_555_000),
    "wrapping sequence": batch(*[(None, b"x", [])] * 4, producer_id=3, producer_epoch=1, base_sequence=2**31 - 2),
    "two batches": PLAIN + batch((b"x", b"y", []), base_offset=3),
    "last batch cut short": PLAIN + batch((b"x", b"y", []), base_offset=3)[:-5],
    "only a piece of a header": PLAIN[:10],
    "transactions": log_bytes(LOG),
}
GENERAL = {
    "non-ASCII header key": batch((b"k", b"v", [("clé", b"1")])),
    "magic 0": batch((b"k", b"v", []), magic=0),
    "magic 1": batch((b"k", b"v", []), (None, b"w", []), magic=1, compression="gzip"),
    "bad CRC": PLAIN[:17] + bytes(b ^ 0xFF for b in PLAIN[17:21]) + PLAIN[21:],
    "malformed record": with_crc(PLAIN[:61] + b"\x7f" + PLAIN[62:]),
    "good batch then a bad one": PLAIN + batch((b"x", b"y", []), base_offset=3)[:-1] + b"!",
    "good batch then a legacy one": PLAIN + batch((b"k", b"v", []), magic=1, base_offset=3),
}
FIELDS = {**CLEAN, **GENERAL}


def dumps(value, ensure_ascii):
    return json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":"))


@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("name", list(FIELDS))
def test_records_text_is_the_json_of_records_json(name, ensure_ascii):
    data = FIELDS[name]
    want = dumps(records_json(data), ensure_ascii)
    assert records_text(data, ensure_ascii) == want
    if COMPILED:  # the compiled writer takes exactly the clean fields
        fast = _crecordrows.records_json(data, ensure_ascii)
        assert (fast is None) == (name in GENERAL)
        assert fast in (None, want)


@given(st.lists(st.tuples(st.none() | st.binary(max_size=40), st.none() | st.binary(max_size=300),
                          st.lists(st.tuples(st.text(st.characters(max_codepoint=0x7F), max_size=8),
                                             st.none() | st.binary(max_size=8)), max_size=3)),
                min_size=1, max_size=12),
       st.sampled_from(["none", "gzip", "lz4", "zstd", "snappy"]), st.integers(-1, 2**40))
def test_random_fields_give_the_same_text_and_columns(rows, compression, base_offset):
    data = batch(*rows, compression=compression, base_offset=max(base_offset, 0))
    assert records_text(data) == dumps(records_json(data), True)
    assert records_text(data, False) == dumps(records_json(data), False)
    if COMPILED:
        assert _crecordrows.records_json(data) is not None
        assert_rows_match([data], [None])


def reference(fields, aborted):
    """(to_arrow's table, aborted_array's column) of the fields' rows, concatenated."""
    tables_ = [records.to_arrow(data, allow_partial=True) for data in fields]
    outcomes_ = [aborted_array(t, a) for t, a in zip(tables_, aborted)]
    return pa.concat_tables(tables_), pa.concat_arrays(outcomes_) if outcomes_ else None


def assert_rows_match(fields, aborted):
    rows = _crecordrows.RecordRows(pa, records.arrow_schema(), outcomes)
    counts = [rows.add(data, True, a) for data, a in zip(fields, aborted)]
    columns, field_rows, got_aborted = rows.build()
    want, want_aborted = reference(fields, aborted)
    assert counts == [len(records.to_arrow(data, allow_partial=True)) for data in fields]
    assert pa.Table.from_arrays(columns, schema=records.arrow_schema()).equals(want)
    assert got_aborted.equals(want_aborted)
    assert field_rows == [n for n in counts if n]
    assert rows.rows == 0  # build let them go


@compiled_only
@pytest.mark.parametrize("aborted", [None, [], ABORTED_TRANSACTIONS], ids=["no list", "empty list", "listed"])
@pytest.mark.parametrize("name", list(CLEAN))
def test_record_rows_are_to_arrow_and_aborted_array(name, aborted):
    listed = None if aborted is None else [FetchAborted(p, o) for p, o in aborted]
    assert_rows_match([CLEAN[name]], [listed])


class FetchAborted:
    def __init__(self, producer_id, first_offset):
        self.producer_id, self.first_offset = producer_id, first_offset


@compiled_only
def test_fields_gather_and_a_field_left_to_the_general_path_adds_nothing():
    rows = _crecordrows.RecordRows(pa, records.arrow_schema(), outcomes)
    assert rows.add(PLAIN) == 3
    for name, data in GENERAL.items():
        assert rows.add(data) == -1, name
        assert rows.rows == 3, name  # "good batch then ...": the good batch's rows went again
    fields = [CLEAN["lz4"], CLEAN["empty"], CLEAN["escaped header keys"], CLEAN["transactions"]]
    for data in fields:
        rows.add(data, True, None)
    columns, field_rows, aborted = rows.build()
    want, want_aborted = reference([PLAIN] + fields, [None] * 5)
    assert pa.Table.from_arrays(columns, schema=records.arrow_schema()).equals(want)
    assert aborted.equals(want_aborted)
    assert field_rows == [3, 20, 1, len(records.to_arrow(CLEAN["transactions"]))]
    assert_rows_match(list(CLEAN.values()), [None] * len(CLEAN))


@compiled_only
def test_unvalidated_fields_take_a_bad_crc():
    rows = _crecordrows.RecordRows(pa, records.arrow_schema(), outcomes)
    assert rows.add(GENERAL["bad CRC"], False) == 3
    columns, _, _ = rows.build()
    want = records.to_arrow(GENERAL["bad CRC"], validate=False)
    assert pa.Table.from_arrays(columns, schema=records.arrow_schema()).equals(want)


@compiled_only
@pytest.mark.parametrize("typ", [pa.string(), pa.int16(), pa.int32(), pa.int64(), pa.timestamp("ns", tz="UTC")],
                         ids=str)
def test_context_columns_repeat_each_fields_values(typ):
    values = ["f.pcap", None, "zoë", ""] if typ == pa.string() else [1, None, -2**15, 2**15 - 1]
    counts = [3, 2, 0, 4]
    want = _arrowcols.column(pa, typ, values).take(pa.array([i for i, n in enumerate(counts) for _ in range(n)]))
    got = _carrowcols.repeated(pa, typ, values, counts)
    assert got.equals(want) and got.null_count == 2
    assert _carrowcols.repeated(pa, typ, [values[0]], [5]).null_count == 0


def mixed_capture():
    """Fetch answers whose records are clean, legacy, malformed and transactional, and a producer's stream."""
    fields = [PLAIN, GENERAL["magic 1"], CLEAN["lz4"], GENERAL["malformed record"], log_bytes(LOG),
              GENERAL["good batch then a legacy one"], CLEAN["empty"], CLEAN["escaped header keys"]]
    return capture_of(
        lambda tcp: [seg for i, data in enumerate(fields) for seg in fetch_exchange(tcp, i, data, 1,
                                                                                    ABORTED_TRANSACTIONS)],
        lambda tcp: produce_exchange(tcp, 1, [log_bytes(LOG), PLAIN, GENERAL["magic 0"]]))


@compiled_only
@pytest.mark.parametrize("rows", [65536, 2], ids=["one batch", "small batches"])
def test_record_batches_are_the_same_gathered_either_way(monkeypatch, rows):
    exchanges = list(read_capture(io.BytesIO(mixed_capture())))
    compiled = pa.Table.from_batches(list(tables.record_batches(exchanges, "f", rows=rows)))
    monkeypatch.setattr(tables, "COMPILED", False)
    general = pa.Table.from_batches(list(tables.record_batches(exchanges, "f", rows=rows)))
    assert compiled.num_rows == general.num_rows > 60
    assert compiled.equals(general)
    assert compiled.column("error").null_count == compiled.num_rows - 1  # the malformed record's field


def stamped(*timestamps):
    """Batches of a record each, at these times (ms; -1: none): written at one time, then their base and max
    timestamps set, as no producer's builder would (times before 1970, or past the year 9999)."""
    out = b""
    for timestamp in timestamps:
        data = bytearray(batch((b"k", None, [("h", None), ('q"\n', b"v")])))
        data[27:43] = timestamp.to_bytes(8, "big", signed=True) * 2
        out += with_crc(bytes(data))
    return out


def lines_capture():
    """Fetch answers whose rows hold every kind of value the JSON lines write, and times at the edges."""
    fields = [stamped(0, 1, 999, 1000, -1, -2, -1500, 1_700_000_000_123, 253_402_300_799_999, -30_610_224_000_000),
              stamped(-30_610_224_000_001, -62_135_596_800_000),  # the years 999 and 1: before 1000
              PLAIN, GENERAL["non-ASCII header key"], GENERAL["magic 0"], CLEAN["transactions"],
              GENERAL["malformed record"]]
    return capture_of(
        lambda tcp: [seg for i, data in enumerate(fields) for seg in fetch_exchange(tcp, i, data, 1,
                                                                                    ABORTED_TRANSACTIONS)])


@pytest.mark.parametrize("path", [None] + CAPTURES, ids=lambda p: "built here" if p is None else p.name)
def test_record_lines_are_json_dumps_of_the_rows(path):
    exchanges = list(read_capture(io.BytesIO(lines_capture()) if path is None else str(path)))
    written = skipped = 0
    for ex in exchanges:
        for batch in tables.record_batches([ex], file='a "zoë"\\.pcap'):
            want = "".join(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"
                           for row in capture_cli._record_rows(ex, batch))
            assert capture_cli.record_lines(ex, batch) == want
            if COMPILED:
                fast = _carrowcols.record_lines(pa, batch)
                assert fast in (None, want)
                written += fast is not None
                skipped += fast is None
    if COMPILED:  # what it leaves: the error row, and the batch with times outside 1000-9999
        assert written > 0 and skipped == (2 if path is None else 0)


def messages_of(path):
    for ex in read_capture(str(path)):
        yield from (m for m in (ex.request, ex.response) if m is not None)


def python_text(message, decode, ensure_ascii):
    """to_json_text, by jsonview's Python writer whatever is built."""
    parts = []
    jsonview.python_struct_text(message, decode, jsonview._TEXT[ensure_ascii], parts)
    return "".join(parts)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_to_json_text_is_json_dumps_of_to_json(path):
    count = 0
    for message in messages_of(path):
        for decode in (True, False):
            for ensure_ascii in (True, False):
                text = to_json_text(message, decode, ensure_ascii)
                assert text == dumps(to_json(message, decode), ensure_ascii)
                assert python_text(message, decode, ensure_ascii) == text
        count += 1
    assert count > 10


def test_to_json_text_of_floats_unknown_tags_and_text_json_escapes():
    entry = DescribeClientQuotasResponse.EntryData(
        entity=[DescribeClientQuotasResponse.EntityData(entity_type="user", entity_name="zoë \"q\" \x00\u2028")],
        values=[DescribeClientQuotasResponse.ValueData(key="rate", value=v) for v in (0.1, 1e300, -0.0, 5.0)])
    message = DescribeClientQuotasResponse(throttle_time_ms=1, error_message="naïve 🙂", entries=[entry, entry])
    message.unknown_tagged_fields = {7: b"\x01\x02"}
    for ensure_ascii in (True, False):
        assert to_json_text(message, True, ensure_ascii) == dumps(to_json(message), ensure_ascii)
        assert python_text(message, True, ensure_ascii) == dumps(to_json(message), ensure_ascii)


def test_a_struct_nested_in_itself_raises_recursion_error_from_both_writers():
    message = MetadataRequest(topics=None)
    message.topics = [message]  # only a program can build this; no bytes decode to it
    with pytest.raises(RecursionError):
        to_json_text(message)
    with pytest.raises(RecursionError):
        python_text(message, True, True)
    parts = collections.deque()  # any object with append takes the text
    jsonview.json_parts(MetadataRequest(topics=None), parts)
    assert "".join(parts) == to_json_text(MetadataRequest(topics=None))


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_an_exchange_line_is_its_row_as_json(path):
    rows = capture_cli._Rows(records=False, json_bodies=True)
    exchanges = list(read_capture(str(path)))
    for ex in exchanges:
        [row] = rows.rows(str(path), ex)
        assert capture_cli.exchange_line(ex, str(path)) == json.dumps(row, ensure_ascii=False, separators=(",", ":"))
    assert len(exchanges) > 5


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_arrow_columns_from_python_values_equal_pyarrows(path):
    schema = tables.exchange_schema()
    rows = [tables.exchange_row(ex, str(path)) for ex in read_capture(str(path))]
    rows[0].update(partition_errors=[{"topic": "t", "partition": 3, "error_code": 6}, {"topic": None}],
                   topics=None, topic_ids=[], client_id="ünïcode", latency_ns=None, joined=None)
    assert _arrowcols.batch(pa, rows, schema).equals(pa.RecordBatch.from_pylist(rows, schema=schema))
    error_row = [{"file": "f", "error": "capture error: truncated", "api_key": 1, "time": 5}]
    assert _arrowcols.batch(pa, error_row, tables.record_schema()).equals(
        pa.RecordBatch.from_pylist(error_row, schema=tables.record_schema()))


def test_writing_parquet_imports_neither_pandas_nor_pyarrow_compute(tmp_path):
    """pyarrow imports pandas (about 0.3 s) the first time pyarrow.array() is given Python objects, and
    pyarrow.compute (tens of ms) for Array.take."""
    outputs = [["--format", "parquet"]] + ([["--records"]] if COMPILED else [])  # pure records.to_arrow does
    script = ("import sys; from kafkaproto.__main__ import run; code = run(); "
              "print(sorted(m for m in ('pandas', 'pyarrow.compute', 'pyarrow') if m in sys.modules)); "
              "sys.exit(code)")
    for extra in outputs:
        out = tmp_path / "rows.parquet"
        done = subprocess.run([sys.executable, "-c", script, "capture", str(CAPTURES[-1]), *extra, "-o", str(out)],
                              capture_output=True, text=True, check=True)
        assert done.stdout.strip() == "['pyarrow']", extra
        assert pq.read_table(out).num_rows > 10


def test_exchange_bodies_are_written_without_a_dictionary(tmp_path):
    """Every body differs: trying a dictionary for them only holds their pages in memory. The other columns keep
    theirs (nested ones by their Parquet paths)."""
    out = tmp_path / "rows.parquet"
    capture_cli.run(capture_args(str(CAPTURES[-1]), "--format", "parquet", "-o", str(out)))
    group = pq.ParquetFile(out).metadata.row_group(0)
    encodings = {group.column(i).path_in_schema: group.column(i).encodings for i in range(group.num_columns)}
    assert "partition_errors.list.element.topic" in encodings and "topics.list.element" in encodings
    for column, used in encodings.items():
        assert ("RLE_DICTIONARY" in used) == (column not in ("request", "response", "joined")), column
    assert pq.read_table(out).column("response").null_count < group.num_rows > 10


def capture_args(*argv):
    parser = argparse.ArgumentParser()
    capture_cli.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_the_summary_imports_neither_the_record_codec_nor_pyarrow():
    """Importing kafkaproto.records (and crc32c with it) takes tens of ms of the summary's start, for nothing."""
    script = ("import sys; from kafkaproto.__main__ import run; code = run(); print(sorted(m for m in "
              "('kafkaproto.records', 'crc32c', 'pyarrow', 'kafkaproto.capture.tables') if m in sys.modules)); "
              "sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", script, "capture", str(CAPTURES[-1])], capture_output=True,
                          text=True, check=True)
    assert "exchanges in 1 file(s)" in done.stdout
    assert done.stdout.splitlines()[-1] == "[]"
    assert (transactions.ABORT, transactions.COMMIT) == (records.ControlType.ABORT, records.ControlType.COMMIT)
