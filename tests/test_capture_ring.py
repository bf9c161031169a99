"""A ring's files read one at a time (kafkaproto.capture.ring): file by file, with a lookback, the exchanges are the
whole capture's, each once, paired across the cuts; packet numbers count within each file."""

from collections import Counter

import pytest

from kafkaproto.capture import read_capture
from kafkaproto.capture.pcap import read_packets
from kafkaproto.capture.ring import RingReader, order_key, read_ring, windows

from test_capture_follow import CAPTURES, pieces


def content(ex):
    """What an exchange is, apart from how the read that found it counted connections and packets."""
    return (ex.client_address, ex.client_port, ex.correlation_id, ex.status, ex.api_name, ex.api_version,
            ex.request_time_ns, ex.response_time_ns, ex.request_size, ex.response_size, ex.error,
            None if ex.request is None else repr(ex.request), None if ex.response is None else repr(ex.response))


def ring_of(tmp_path, path, parts):
    files = []
    for i, data in enumerate(pieces(path, parts)):
        f = tmp_path / f"ring{i}.pcap"
        f.write_bytes(data)
        files.append(str(f))
    return files


@pytest.mark.parametrize("name", sorted(CAPTURES))
@pytest.mark.parametrize("parts, lookback, idle_ns", [(2, 1, None), (5, 1, None), (7, 2, None), (17, 2, None),
                                                      (7, 2, 20_000_000)])
def test_file_by_file_gives_the_whole_capture(tmp_path, name, parts, lookback, idle_ns):
    """Cut anywhere, inside frames too, and read one file at a time: the same exchanges as one read of the whole,
    requests paired with answers in later files, unanswered ones reported once; idle connections (idle_ns) closed
    at the same packets whichever file a read began with."""
    limits = {} if idle_ns is None else {"idle_ns": idle_ns}
    whole = Counter(map(content, read_capture(CAPTURES[name], **limits)))
    files = ring_of(tmp_path, CAPTURES[name], parts)
    got = Counter(content(ex) for _, ex in read_ring(files, lookback, **limits))
    assert got == whole, (got - whole, whole - got)
    if parts == 17:  # so many cuts split exchanges: the lookback is what pairs them
        assert Counter(content(ex) for f in files for ex in read_capture(f, **limits)) != whole


def test_the_unanswered_are_reported_once(tmp_path):
    """Requests a connection closed for idleness never saw answered: reported by one file's reader only."""
    files = ring_of(tmp_path, CAPTURES["java-3.9.2"], 7)
    statuses = Counter(ex.status for _, ex in read_ring(files, 1, idle_ns=20_000_000))
    assert statuses == Counter(ex.status for ex in read_capture(CAPTURES["java-3.9.2"], idle_ns=20_000_000))
    assert statuses["unmatched request"] == 2


def test_packet_numbers_count_within_each_file(tmp_path):
    files = ring_of(tmp_path, CAPTURES["java-4.3.1"], 6)
    times = {f: [p.timestamp_ns for p in read_packets(f)] for f in files}
    checked = 0
    for file, ex in read_ring(files, 1):
        if ex.status != "ok":
            continue
        assert times[file][ex.response_packet - 1] == ex.response_time_ns  # the answer ends in the row's file
        k = files.index(file)
        request_file = file if ex.request_time_ns >= times[file][0] else files[k - 1]
        assert times[request_file][ex.request_packet - 1] == ex.request_time_ns
        checked += request_file != file
    assert checked  # some requests were in the file before their answer's


def test_lookback_zero_reads_each_file_alone(tmp_path):
    files = ring_of(tmp_path, CAPTURES["librdkafka"], 3)
    alone = [(f, content(ex), ex.connection, ex.request_packet, ex.response_packet)
             for f in files for ex in read_capture(f)]
    got = [(f, content(ex), ex.connection, ex.request_packet, ex.response_packet) for f, ex in read_ring(files, 0)]
    assert got == alone


def test_a_lookback_file_that_will_not_read_is_noted(tmp_path):
    files = ring_of(tmp_path, CAPTURES["kafkajs"], 3)
    (tmp_path / "ring1.pcap").write_bytes(b"not a capture at all")
    reader = RingReader(files, final=True)
    got = list(reader)
    assert got and reader.notes and "ring1.pcap" in reader.notes[0]
    assert all(ex.status != "capture error" for ex in got)  # that file's own reader reports its damage


def test_ring_order_and_windows():
    names = ["ring10.pcap", "ring9.pcap", "ring1.pcap"]
    assert sorted(names, key=lambda n: order_key(n, 0)) == ["ring1.pcap", "ring9.pcap", "ring10.pcap"]
    assert sorted(names, key=lambda n: order_key(n, {"ring10.pcap": 1}.get(n, 2)))[0] == "ring10.pcap"
    assert windows(list("abcd"), 1) == [(["a"], False, False, True), (["a", "b"], False, True, True),
                                         (["b", "c"], False, True, False), (["c", "d"], True, True, False)]
    with pytest.raises(ValueError, match="lookback"):
        windows(["a"], -1)


@pytest.mark.parametrize("silent_from", [0, 2, 4])
def test_a_request_never_answered_is_reported_once(tmp_path, silent_from):
    """A client asks and falls silent while the capture goes on: one read of the whole reports the request at its
    end; file by file, the reader of the last window that holds the request does (or the last file's)."""
    from test_capture import Tcp, wire_frame
    import capture_files as cf
    from kafkaproto.messages import ApiKey, MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader
    from kafkaproto.protocol import encode_request, encode_response

    def ask(tcp, correlation_id, answer=True):
        header = RequestHeader(request_api_key=ApiKey.METADATA, request_api_version=12,
                               correlation_id=correlation_id, client_id="ring")
        segs = tcp.send(True, encode_request(header, MetadataRequest(topics=None), 12))
        if answer:
            segs += tcp.send(False, encode_response(ResponseHeader(correlation_id=correlation_id),
                                                    MetadataResponse(topics=[]), 12))
        return segs

    busy, silent = Tcp(client=("10.0.0.2", 40001)), Tcp(client=("10.0.0.3", 40002))
    t0 = 1_700_000_000 * 10**9
    files = []
    for k in range(5):
        segs = busy.handshake() if k == 0 else []
        if k == silent_from:
            segs += silent.handshake() + ask(silent, 7, answer=False)
        for n in range(3):
            segs += ask(busy, k * 10 + n)
        f = tmp_path / f"ring{k}.pcap"
        f.write_bytes(cf.pcap([(t0 + (k * 100 + i) * 10**6, *wire_frame(s)) for i, s in enumerate(segs)], nanos=True))
        files.append(str(f))
    assert Counter(ex.status for ex in read_capture(_joined(tmp_path, files))) == {"ok": 15, "unmatched request": 1}
    for lookback in (1, 2):
        got = Counter(content(ex) for _, ex in read_ring(files, lookback))
        assert got == Counter(content(ex) for ex in read_capture(_joined(tmp_path, files))), lookback


def _joined(folder, files):
    """The files' packets as one capture."""
    import capture_files as cf

    packets = [(p.timestamp_ns, p.data, p.original_length) for f in files for p in read_packets(f)]
    whole = folder / "whole.pcap"
    whole.write_bytes(cf.pcap(packets, nanos=True))
    return whole
