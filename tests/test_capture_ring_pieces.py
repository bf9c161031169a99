"""A ring file still being written, read in pieces (kafkaproto.capture.ring.RingReader's ``upto`` and ``after``): the
file read as it grows, cut anywhere (inside packet records too), gives what one read of the finished file gives,
each exchange once, with the same packet numbers."""

import os
from collections import Counter

import pytest

from kafkaproto.capture.pcap import read_packets
from kafkaproto.capture.ring import RingReader, whole_packets, windows

from test_capture_follow import CAPTURES
from test_capture_ring import content, ring_of


def rows(reader):
    return Counter((content(ex), ex.request_packet, ex.response_packet) for ex in reader)


def cuts_of(path, count):
    """``count`` byte offsets inside a file, none on a record boundary: each cuts a packet record in two."""
    offsets = [p.offset for p in read_packets(path)]
    size = os.path.getsize(path)
    chosen = [offsets[len(offsets) * (k + 1) // (count + 1)] + 5 for k in range(count)]
    assert all(0 < c < size for c in chosen)
    return chosen


@pytest.mark.parametrize("name", ["java-4.3.1", "librdkafka", "franz-go"])
@pytest.mark.parametrize("lookback", [0, 1, 2])
def test_a_file_read_in_pieces_as_it_grows_gives_the_whole_file(tmp_path, name, lookback):
    (tmp_path / "whole").mkdir()
    files = ring_of(tmp_path / "whole", CAPTURES[name], 5)
    k = 3  # a file with files before it and after it
    window, final, oldest_leaves, starts_ring = windows(files, lookback)[k]
    whole = rows(RingReader(window, final=final, oldest_leaves=oldest_leaves, starts_ring=starts_ring))
    assert whole
    # The same window, the file written as a capture tool writes it: a piece read at every cut, then the rest.
    data = open(files[k], "rb").read()
    growing = tmp_path / "growing.pcap"
    opener = {f: f for f in window[:-1]} | {window[-1]: str(growing)}
    cuts = [24] + cuts_of(files[k], 3)  # the first piece holds the file's header alone
    got, after = Counter(), 0
    for cut in cuts:
        growing.write_bytes(data[:cut])  # all the file holds when this piece is read
        piece = RingReader(window, final=False, oldest_leaves=oldest_leaves, starts_ring=starts_ring,
                           opener=lambda n: open(opener[n], "rb"), after=after, upto=cut)
        got += rows(piece)
        after = cut
    growing.write_bytes(data)
    rest = RingReader(window, final=final, oldest_leaves=oldest_leaves, starts_ring=starts_ring,
                      opener=lambda n: open(opener[n], "rb"), after=after)
    got += rows(rest)
    assert got == whole, (got - whole, whole - got)
    assert max(got.values()) == 1


def test_a_piece_stops_at_its_bytes_though_the_file_has_grown(tmp_path):
    """A piece planned at some size reads that many bytes even once the file holds more; what it leaves open, and
    the packet its bytes cut, are the next piece's; the packets whole in a prefix are counted as the next piece
    counts them."""
    (tmp_path / "r").mkdir()
    files = ring_of(tmp_path / "r", CAPTURES["java-4.3.1"], 3)
    cut = cuts_of(files[2], 1)[0]
    window = files
    first = list(RingReader(window, upto=cut))
    whole = list(RingReader(window, final=True))
    packets_before = [p for p in read_packets(files[2]) if p.offset < cut]
    assert whole_packets(lambda n: open(n, "rb"), files[2], cut) == len(packets_before) - 1  # the cut one is not
    assert first and all(ex.status == "ok" for ex in first)
    assert all(ex.response_packet < len(packets_before) for ex in first)
    assert len(first) < len(whole)
    with pytest.raises(ValueError, match="cannot be final"):
        RingReader(window, final=True, upto=cut)


def test_damage_is_reported_by_the_piece_that_reads_it(tmp_path):
    """A file damaged inside the first piece's bytes: that piece reports it, the next does not again; a record cut
    short at the end of a finished file is damage, at the end of a piece only where the piece stops."""
    (tmp_path / "r").mkdir()
    files = ring_of(tmp_path / "r", CAPTURES["librdkafka"], 2)
    data = bytearray(open(files[1], "rb").read())
    offsets = [p.offset for p in read_packets(files[1])]
    bad = offsets[len(offsets) // 2]
    data[bad + 8:bad + 16] = b"\xff" * 8  # a record declaring a length no record has
    open(files[1], "wb").write(bytes(data))

    def errors(reader):
        return [ex.error for ex in reader if ex.status == "capture error"]

    first = errors(RingReader(files, upto=offsets[-1]))
    assert len(first) == 1 and str(bad) in first[0]
    assert errors(RingReader(files, final=True, after=offsets[-1])) == []
    # Cut short: a piece ending inside a record is no damage; the file ending there, finished, is.
    cut = offsets[len(offsets) // 4] + 7
    open(files[1], "wb").write(bytes(data[:cut]))
    assert errors(RingReader(files, upto=cut)) == []
    assert len(errors(RingReader(files, final=True, after=cut))) == 1
