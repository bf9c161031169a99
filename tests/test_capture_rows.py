"""Rows that say what happened: a record row's ``aborted`` (was its transaction aborted?) and a gap row's count of
the bytes the capture never had, on captures built here whose truth is known.

- A Fetch answer to a read_committed request: each record judged as Kafka's Java consumer judges its batch
  (the partition's aborted transactions, each producer's ABORT marker ending its run), in every row output:
  capture.records, tables.records_table, and the command line's JSON lines and Parquet.
- The same records fetched read_uncommitted (no list): the markers in the records decide, and a transaction
  still open at the end of them is unknown (null).
- A Produce request: a batch is decided by its producer's marker in the same records, else unknown, even where a
  later exchange shows the outcome (outcomes are not carried between exchanges); non-transactional batches are
  never aborted.
- TCP holes of known sizes, inside a frame and across frame boundaries: the bytes never captured, and those
  dropped with them, each counted as what they are.
- Real traffic (tests/data/transactions): the rows of both a read_committed and a read_uncommitted Java
  consumer's Fetch answers leave exactly what the read_committed consumer delivered.
"""

import io
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from kafkaproto import encode_request, encode_response
from kafkaproto.capture import GAP, OK, read_capture, records, tables
from kafkaproto.capture.transactions import outcomes
from kafkaproto.messages import (ApiKey, FetchRequest, FetchResponse, ProduceRequest, ProduceResponse, RequestHeader,
                                 ResponseHeader)
from kafkaproto.records import RecordBatchBuilder, iter_batches, read_committed
from test_capture import Tcp, pcap_bytes

FETCH_VERSION, PRODUCE_VERSION = 12, 9
TOPIC = "orders"


def data_batch(offset, producer_id, values, transactional=True):
    builder = RecordBatchBuilder(base_offset=offset, producer_id=producer_id, producer_epoch=0 if producer_id >= 0
                                 else -1, base_sequence=0 if producer_id >= 0 else -1, transactional=transactional)
    for value in values:
        builder.append(b"k", value, timestamp=1_700_000_000_000)
    return builder.build()


def marker(offset, producer_id, commit):
    builder = RecordBatchBuilder(base_offset=offset, producer_id=producer_id, producer_epoch=0, transactional=True,
                                 control=True)
    builder.append_end_txn_marker(commit, timestamp=1_700_000_000_000)
    return builder.build()


COMMIT, ABORT = "COMMIT", "ABORT"

# One partition's log from offset 100, and what became of each record: values starting with "a" were in aborted
# transactions, "c" in committed ones, "p" in none. Producer 5's transaction began at offset 90, before the
# fetched range; producer 1 aborts one transaction and then commits another; producer 4 commits one and then
# aborts the next, which the list shows starting at 113 (so the batch at 111 is not caught by it).
LOG = [  # (offset, producer id, values or a marker, transactional)
    (100, 1, [b"a100", b"a101"], True),
    (102, 2, [b"c102"], True),
    (103, 5, [b"a103"], True),
    (104, -1, [b"p104"], False),
    (105, 1, ABORT, True),
    (106, 1, [b"c106"], True),
    (107, 2, COMMIT, True),
    (108, 3, [b"p108"], False),  # an idempotent producer's batch: a producer id, no transaction
    (109, 1, COMMIT, True),
    (110, 5, ABORT, True),
    (111, 4, [b"c111"], True),
    (112, 4, COMMIT, True),
    (113, 4, [b"a113", b"a114"], True),
    (115, 4, ABORT, True),
]
ABORTED_TRANSACTIONS = [(4, 113), (1, 100), (5, 90)]  # (producer id, first offset), in no particular order
# What each record row's "aborted" must be, in log order (markers: ABORT true, COMMIT false).
EXPECTED = [True, True, False, True, False, True, False, False, False, False, True, False, False, True, True,
            True]


def log_bytes(log):
    return b"".join(marker(offset, pid, what == COMMIT) if isinstance(what, str) else
                    data_batch(offset, pid, what, transactional) for offset, pid, what, transactional in log)


def fetch_exchange(tcp, correlation_id, data, isolation_level, aborted):
    header = RequestHeader(request_api_key=ApiKey.FETCH, request_api_version=FETCH_VERSION,
                           correlation_id=correlation_id, client_id="consumer")
    request = FetchRequest(max_wait_ms=500, isolation_level=isolation_level, topics=[FetchRequest.FetchTopic(
        topic=TOPIC, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=100)])])
    listed = None if aborted is None else [FetchResponse.AbortedTransaction(producer_id=p, first_offset=o)
                                           for p, o in aborted]
    response = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic=TOPIC, partitions=[
        FetchResponse.PartitionData(partition_index=0, high_watermark=200, last_stable_offset=116,
                                    aborted_transactions=listed, records=data)])])
    return tcp.send(True, encode_request(header, request, FETCH_VERSION)) + tcp.send(
        False, encode_response(ResponseHeader(correlation_id=correlation_id), response, FETCH_VERSION))


def capture_of(*conversations):
    """A pcap of connections, each given as a function of its Tcp returning its exchanges' segments."""
    segs = []
    for i, conversation in enumerate(conversations):
        tcp = Tcp(client=("10.0.0.2", 40000 + i))
        segs += tcp.handshake() + conversation(tcp) + tcp.close()
    return pcap_bytes(segs)


def rows_of(data):
    """(capture.records' rows, the records table's rows) of a capture, after checking that both agree."""
    exchanges = list(read_capture(io.BytesIO(data)))
    assert exchanges and all(ex.status == OK for ex in exchanges), exchanges
    plain = list(records(exchanges))
    table = tables.records_table(exchanges).to_pylist()
    assert [(r["value"], r["aborted"]) for r in plain] == [(r["value"], r["aborted"]) for r in table]
    return plain, table


def test_a_read_committed_fetch_is_judged_as_the_java_consumer_judges_it():
    data = log_bytes(LOG)
    pcap = capture_of(lambda tcp: fetch_exchange(tcp, 1, data, 1, ABORTED_TRANSACTIONS))
    plain, table = rows_of(pcap)
    assert [r["aborted"] for r in table] == EXPECTED
    # Values name their fate; markers are rows too (control), with their own outcome.
    for row in table:
        if not row["control"]:
            assert row["aborted"] == row["value"].startswith(b"a"), row["value"]
    # kafkaproto.records.read_committed, batch by batch, skips exactly the data rows found aborted here.
    skipped = set()
    for batch, skip in read_committed(iter_batches(data), [FetchResponse.AbortedTransaction(
            producer_id=p, first_offset=o) for p, o in ABORTED_TRANSACTIONS]):
        if skip == "aborted":
            skipped.update(range(batch.base_offset, batch.last_offset + 1))
    assert skipped == {r["offset"] for r in table if r["aborted"] and not r["control"]}
    # What a read_committed consumer delivers: the records in no transaction or in a committed one.
    assert [r["value"] for r in table if not r["control"] and not r["aborted"]] == \
        [b"c102", b"p104", b"c106", b"p108", b"c111"]


def test_without_the_list_the_markers_in_the_records_decide():
    """read_uncommitted: the broker lists nothing, and sends what lies past the last stable offset too."""
    open_transaction = [(116, 6, [b"x116"], True)]  # producer 6's transaction has not ended
    data = log_bytes(LOG + open_transaction)
    plain, table = rows_of(capture_of(lambda tcp: fetch_exchange(tcp, 1, data, 0, None)))
    assert [r["aborted"] for r in table] == EXPECTED + [None]
    # A list the broker sent to a read_uncommitted request would not be a read_committed answer: markers still
    # decide (here they agree), and the open transaction stays unknown.
    plain, table = rows_of(capture_of(lambda tcp: fetch_exchange(tcp, 1, data, 0, ABORTED_TRANSACTIONS)))
    assert [r["aborted"] for r in table] == EXPECTED + [None]


def produce_exchange(tcp, correlation_id, partitions):
    header = RequestHeader(request_api_key=ApiKey.PRODUCE, request_api_version=PRODUCE_VERSION,
                           correlation_id=correlation_id, client_id="producer")
    request = ProduceRequest(acks=-1, timeout_ms=1000, transactional_id="tx", topic_data=[
        ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
            ProduceRequest.PartitionProduceData(index=i, records=data) for i, data in enumerate(partitions)])])
    response = ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name=TOPIC, partition_responses=[
        ProduceResponse.PartitionProduceResponse(index=i) for i in range(len(partitions))])])
    return tcp.send(True, encode_request(header, request, PRODUCE_VERSION)) + tcp.send(
        False, encode_response(ResponseHeader(correlation_id=correlation_id), response, PRODUCE_VERSION))


def produce_capture():
    """A producer's stream: producer 7's batch then its COMMIT marker, producer 8's then its ABORT marker (Kafka's
    producers write no markers, but a records field that holds them is read the same wherever it is), producer
    9's batch whose COMMIT marker only a consumer's later Fetch shows, and batches in no transaction."""
    partitions = [
        data_batch(0, 7, [b"seven"]) + marker(1, 7, True),
        data_batch(0, 8, [b"eight"]) + marker(1, 8, False),
        data_batch(0, 9, [b"nine"]),
        data_batch(0, -1, [b"plain"], transactional=False) + data_batch(1, 10, [b"idempotent"], transactional=False),
    ]
    fetched = data_batch(0, 9, [b"nine"]) + marker(1, 9, True)
    return capture_of(lambda tcp: produce_exchange(tcp, 1, partitions[:2]) + produce_exchange(tcp, 2, partitions[2:]),
                      lambda tcp: fetch_exchange(tcp, 1, fetched, 0, None))


PRODUCED = [("request", b"seven", False), ("request", b"\x00\x00\x00\x00\x00\x00", False),  # the COMMIT marker
            ("request", b"eight", True), ("request", b"\x00\x00\x00\x00\x00\x00", True),  # the ABORT marker
            ("request", b"nine", None), ("request", b"plain", False), ("request", b"idempotent", False),
            ("response", b"nine", False), ("response", b"\x00\x00\x00\x00\x00\x00", False)]


def test_a_produced_batch_is_decided_only_by_markers_in_its_own_records():
    plain, table = rows_of(produce_capture())
    assert [(r["side"], r["value"], r["aborted"]) for r in table] == PRODUCED
    assert [(r["control"], r["transactional"]) for r in table[:4]] == [(False, True), (True, True)] * 2


def test_the_command_line_rows_carry_aborted(tmp_path):
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    fetch = tmp_path / "fetch.pcap"
    fetch.write_bytes(capture_of(lambda tcp: fetch_exchange(tcp, 1, log_bytes(LOG), 1, ABORTED_TRANSACTIONS)))
    produce = tmp_path / "produce.pcap"
    produce.write_bytes(produce_capture())

    def command(*args):
        proc = subprocess.run([sys.executable, "-m", "kafkaproto", "capture", *map(str, args)], capture_output=True,
                              text=True, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    lines = [json.loads(line) for line in command(fetch, produce, "--records", "--format", "jsonl").splitlines()]
    assert [row["aborted"] for row in lines] == EXPECTED + [want for _, _, want in PRODUCED]
    command(fetch, produce, "--records", "--format", "parquet", "--output", tmp_path / "rows.parquet")
    table = pq.read_table(tmp_path / "rows.parquet")
    assert table.schema.field("aborted").type == "bool"
    assert table.column("aborted").to_pylist() == EXPECTED + [want for _, _, want in PRODUCED]


def test_outcomes_per_record_and_per_batch_agree():
    """The rule works on batches (capture.records) and on records (the tables, one row each): a record's own
    offset as its last gives the same answers as its batch's last offset."""
    per_batch, per_record = [], []
    for offset, pid, what, transactional in LOG:
        if isinstance(what, str):
            item = (pid, True, True, 0 if what == ABORT else 1, offset)
            per_batch.append(item)
            per_record.append(item)
        else:
            per_batch.append((pid, transactional, False, None, offset + len(what) - 1))
            per_record += [(pid, transactional, False, None, offset + i) for i in range(len(what))]
    lists = [None, [type("T", (), {"producer_id": p, "first_offset": o})() for p, o in ABORTED_TRANSACTIONS]]
    for aborted in lists:
        spread = []
        for item, outcome in zip(LOG, outcomes(per_batch, aborted)):
            spread += [outcome] * (1 if isinstance(item[2], str) else len(item[2]))
        assert spread == outcomes(per_record, aborted) == EXPECTED


# ---- gaps ------------------------------------------------------------------------------------------------------

MSS = 1448


def send_with_hole(tcp, from_client, data, *holes):
    """data from one side in segments of at most MSS bytes, without the bytes in each hole (start, end): they
    were sent (later segments' sequence numbers, and the peer's acknowledgements, go past them) but never
    captured."""
    edges = [0] + [edge for hole in holes for edge in hole] + [len(data)]
    out = []
    base = tcp.next[from_client]
    for lo, hi in zip(edges[::2], edges[1::2]):
        for at in range(lo, hi, MSS):
            piece = data[at:min(at + MSS, hi)]
            out.append(tcp.segment(from_client, base + at, 0x18, piece))  # ACK | PSH
    tcp.next[from_client] = base + len(data)
    return out


def big_fetch(correlation_id, size):
    """A Fetch request and its response frame, whose records hold size bytes of value."""
    header = RequestHeader(request_api_key=ApiKey.FETCH, request_api_version=FETCH_VERSION,
                           correlation_id=correlation_id, client_id="consumer")
    request = FetchRequest(max_wait_ms=500, topics=[FetchRequest.FetchTopic(
        topic=TOPIC, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0)])])
    value = bytes((i * 131 + correlation_id) % 251 for i in range(size))
    response = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic=TOPIC, partitions=[
        FetchResponse.PartitionData(partition_index=0, high_watermark=1, records=data_batch(0, -1, [value], False))])])
    return (encode_request(header, request, FETCH_VERSION),
            encode_response(ResponseHeader(correlation_id=correlation_id), response, FETCH_VERSION))


def read_segments(segs):
    reader = read_capture(io.BytesIO(pcap_bytes(segs)))
    exchanges = list(reader)
    return exchanges, reader.stats


def test_a_hole_inside_a_frame_counts_the_bytes_never_captured():
    """A 7,240-byte hole 10,000 bytes into a 60 KB response: the frame lost 7,240 bytes, and the bytes after the
    hole, captured but unread with the frame, are told apart."""
    first_request, first_response = big_fetch(1, 2_000)
    request, response = big_fetch(2, 60_000)
    tcp = Tcp()
    segs = tcp.handshake() + tcp.send(True, first_request + request)
    frame_at = len(first_response)  # the broker's stream offset of the cut response
    hole = (frame_at + 10_000, frame_at + 10_000 + 7_240)
    segs += send_with_hole(tcp, False, first_response + response, hole) + tcp.close()
    exchanges, stats = read_segments(segs)
    assert [ex.status for ex in exchanges] == [OK, GAP]
    cut = exchanges[1]
    size = len(response) - 4
    kept = hole[0] - frame_at - 4  # the payload bytes before the hole
    assert cut.error == (f"response frame at stream offset {frame_at} lost 7240 of its {size} bytes (never "
                         f"captured); the {size - kept} bytes from the first lost one on go unread")
    assert cut.error_offset == hole[0]
    assert stats.gap_bytes == 7_240
    assert tables.exchange_row(cut)["error"] == cut.error


def test_two_holes_in_a_frame_are_counted_together():
    request, response = big_fetch(1, 30_000)
    tcp = Tcp()
    segs = tcp.handshake() + tcp.send(True, request)
    segs += send_with_hole(tcp, False, response, (5_000, 6_000), (20_000, 20_500)) + tcp.close()
    (cut,), stats = read_segments(segs)
    size = len(response) - 4
    assert cut.status == GAP and stats.gap_bytes == 1_500
    assert cut.error == (f"response frame at stream offset 0 lost 1500 of its {size} bytes (never captured); "
                         f"the {size - 4_996} bytes from the first lost one on go unread")


def test_a_hole_at_the_end_of_a_frame_is_all_that_was_lost():
    request, response = big_fetch(1, 20_000)
    tcp = Tcp()
    segs = tcp.handshake() + tcp.send(True, request)
    segs += send_with_hole(tcp, False, response, (len(response) - 3_000, len(response))) + tcp.close()
    (cut,), stats = read_segments(segs)
    assert cut.status == GAP and stats.gap_bytes == 3_000
    assert cut.error == f"response frame at stream offset 0 lost 3000 of its {len(response) - 4} bytes (never captured)"


def test_a_hole_across_frames_counts_what_it_cut_and_what_was_skipped():
    """A hole from inside the first of three pipelined responses into the second: the first lost its tail; the
    stream then lost its footing until the third response's start, and says how much of what it skipped the
    capture never had; the second request's answer is reported lost."""
    pairs = [big_fetch(c, 4_000) for c in (1, 2, 3)]
    tcp = Tcp()
    segs = tcp.handshake() + tcp.send(True, b"".join(r for r, _ in pairs))
    responses = [r for _, r in pairs]
    first_end = len(responses[0])
    third_at = first_end + len(responses[1])
    hole = (first_end - 1_000, first_end + 2_500)
    segs += send_with_hole(tcp, False, b"".join(responses), hole) + tcp.close()
    exchanges, stats = read_segments(segs)
    assert stats.gap_bytes == 3_500
    by_id = {ex.correlation_id: ex for ex in exchanges if ex.correlation_id is not None}
    first = by_id[1]
    assert first.status == GAP and first.error == (f"response frame at stream offset 0 lost 1000 of its "
                                                   f"{len(responses[0]) - 4} bytes (never captured)")
    assert by_id[2].status == GAP and by_id[2].error.startswith("no response")
    assert by_id[3].status == OK
    (skip,) = [ex for ex in exchanges if ex.correlation_id is None]
    assert skip.status == GAP and skip.error_offset == first_end
    assert skip.error == (f"broker stream: {third_at - first_end} bytes skipped from offset {first_end} (2500 of "
                          f"them never captured): bytes missing from the capture across a frame boundary")


def test_a_records_table_is_judged_as_its_records_one_by_one():
    """aborted_array judges a table run by run (a producer's records in a row, or one marker); on logs made at
    random, from few producers so that runs span batches, it answers as the rule applied to each record does."""
    pa = pytest.importorskip("pyarrow")
    from kafkaproto.capture.transactions import aborted_array, marker_type
    from kafkaproto.records import to_arrow

    rng = random.Random(5)
    for _ in range(60):
        log, offset, listed, open_ = [], 0, [], {}
        for _ in range(rng.randint(1, 30)):
            pid = rng.choice([-1, 1, 2, 3])
            if pid >= 0 and pid in open_ and rng.random() < 0.3:
                commit = rng.random() < 0.5
                if not commit:
                    listed.append((pid, open_[pid]))
                log.append(marker(offset, pid, commit))
                del open_[pid]
                offset += 1
                continue
            transactional = pid >= 0 and rng.random() < 0.8
            if transactional:
                open_.setdefault(pid, offset)
            count = rng.randint(1, 3)
            log.append(data_batch(offset, pid, [b"v"] * count, transactional))
            offset += count
        if rng.random() < 0.5:  # transactions still open aborted later: the list shows them
            listed += [(pid, first) for pid, first in open_.items() if rng.random() < 0.5]
        table = to_arrow(b"".join(log))
        rows = table.to_pylist()
        per_row = [(r["producer_id"], r["transactional"], r["control"],
                    marker_type(r["key"]) if r["control"] else None, r["offset"]) for r in rows]
        lists = [None, [FetchResponse.AbortedTransaction(producer_id=p, first_offset=o) for p, o in listed]]
        for aborted in lists:
            judged = aborted_array(table, aborted)
            assert judged.type == pa.bool_()
            assert judged.to_pylist() == outcomes(per_row, aborted)


# ---- real traffic ------------------------------------------------------------------------------------------------

TRANSACTIONS = Path(__file__).parent / "data" / "transactions"


def test_real_fetches_leave_what_the_java_consumer_delivered():
    """tests/data/transactions: Kafka 4.3.1, a transactional producer committing and aborting in turn, and Kafka's
    Java console consumer reading read_committed and then read_uncommitted. In each consumer's Fetch answers (one
    judged by the partition's aborted transactions, the other by the markers alone) the records not aborted are
    what the read_committed consumer printed, and all of them what the read_uncommitted one printed; a Produce
    request's transactional records are not known, and the plain producer's are not aborted."""
    delivered = json.loads((TRANSACTIONS / "delivered.json").read_text())
    exchanges = list(read_capture(TRANSACTIONS / "transactions.pcap"))
    assert {ex.status for ex in exchanges} == {OK}
    levels = {ex.client_id: ex.request.isolation_level for ex in exchanges if ex.api_name == "Fetch"}
    assert levels == {"java-read_committed": 1, "java-read_uncommitted": 0}
    rows = list(records(exchanges))
    assert [r["aborted"] for r in rows] == tables.records_table(exchanges).column("aborted").to_pylist()
    client_of = {ex.connection: ex.client_id for ex in exchanges}
    for client in levels:
        fetched = [r for r in rows if r["side"] == "response" and client_of[r["connection"]] == client]
        data = [r for r in fetched if not r["control"]]
        assert [r["value"].decode() for r in data] == delivered["read_uncommitted"]
        assert [r["value"].decode() for r in data if r["aborted"] is False] == delivered["read_committed"]
        assert all(r["aborted"] is not None for r in fetched)
        assert sum(r["aborted"] is True for r in fetched if r["control"]) == 2  # the two ABORT markers
    produced = [r for r in rows if r["side"] == "request"]
    assert {(r["value"], r["aborted"]) for r in produced if not r["transactional"]} == {(b"p-plain", False)}
    assert all(r["aborted"] is None for r in produced if r["transactional"])
