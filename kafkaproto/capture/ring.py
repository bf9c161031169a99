"""A ring's files read one at a time, so that many readers (Spark tasks, micro-batches of a stream) can share a
ring and still give every exchange once, including those whose connection goes on from one file into the next.

    for ex in ring.RingReader(["ring_00041.pcap", "ring_00042.pcap"]):   # the exchanges ending in ring_00042
        ...
    for file, ex in ring.read_ring(files):                                  # a whole ring, file by file

A file's exchanges are those whose last packet is in it. To pair an answer with a request sent in an earlier file,
the files just before it (its *lookback*) are read first, and what ends in them is left to the readers of those
files. What is still open when the file ends is left to the next file's reader, except what no later reader will
see begin: requests sent in the oldest file of the lookback, never answered. The last file of a ring (``final``)
reports everything still open, as the end of a single capture does.

Every reader of the same files makes the same decisions, so a file's exchanges do not depend on who reads it or
when. Two limits follow from reading a bounded lookback: a request answered more than ``lookback`` files after the
one it was sent in is not paired (its answer reads as an answer to a request the capture did not hold; the same
holds where finding the first frame of a connection already under way takes longer than the lookback), and a
connection's number and ``joined`` flag count from the first file read. Each file is read 1 + lookback times. Packet
numbers count within the file each packet is in, as Wireshark numbers them when it opens that file.

A file still being written can be read in pieces (a stream that does not wait for the next file): ``upto`` reads its
first bytes only and reports nothing still open at their end; a later reader of the same window with ``after`` set
to those bytes gives what ends after them, and what was still open. The pieces give what one read of the whole
file gives, each exchange once.
"""

import io
import os

from .exchanges import CAPTURE_ERROR, GAP
from .reader import CaptureReader
from .pcap import CaptureFormatError, read_packets

# Two files: a reader that begins inside a connection must find a frame start again, and where the capture lost
# packets that can take more than a small file (measured on a tcpdump -C 1 ring of librdkafka at full speed: one
# file of lookback left 19 of 546 exchanges unpaired or misread, two none). Rings of large files need only one.
DEFAULT_LOOKBACK = 2


def order_key(name, mtime_ns):
    """The order files of a ring were written in: modification time, then name, numbers in names compared as
    numbers (``ring9`` before ``ring10``)."""
    base = os.path.basename(name.rstrip("/"))
    parts, digits, text = [], "", ""
    for ch in base:
        if ch.isdigit():
            if text:
                parts.append((1, text, 0))
                text = ""
            digits += ch
        else:
            if digits:
                parts.append((0, "", int(digits)))
                digits = ""
            text += ch
    if digits:
        parts.append((0, "", int(digits)))
    if text:
        parts.append((1, text, 0))
    return (mtime_ns or 0, tuple(parts), name)


def windows(files, lookback=DEFAULT_LOOKBACK):
    """For each of the files (in ring order), what RingReader takes to read it: (files, final, oldest_leaves,
    starts_ring). With lookback 0 each file is read alone, as a capture of its own."""
    if lookback < 0:
        raise ValueError(f"lookback must be 0 or more, not {lookback}")
    out = []
    last = len(files) - 1
    for k in range(len(files)):
        window = files[max(0, k - lookback):k + 1]
        out.append((window, lookback == 0 or k == last, k >= lookback, lookback == 0 or k <= lookback))
    return out


class _Upto(io.RawIOBase):
    """The first ``limit`` bytes of a file: the part of a file still being written that one piece reads."""

    def __init__(self, stream, limit):
        super().__init__()
        self._stream = stream
        self._left = limit

    @property
    def reached(self):
        return self._left <= 0

    def readable(self):
        return True

    def readinto(self, buffer):
        if self._left <= 0:
            return 0
        view = memoryview(buffer)[:self._left]
        n = self._stream.readinto(view) if hasattr(self._stream, "readinto") else None
        if n is None:
            data = self._stream.read(len(view))
            n = len(data)
            view[:n] = data
        self._left -= n
        return n

    def close(self):
        try:
            self._stream.close()
        finally:
            super().close()


def _cut_by_limit(error, upto):
    """Whether a read of a file's first bytes stopped because a packet runs on past them (not damage)."""
    return upto is not None and upto.reached and isinstance(error, CaptureFormatError) \
        and error.reason.startswith("truncated")


def _reported_before(error, after):
    """Damage within the bytes an earlier piece read: that piece reported it (a packet cut short there was not
    damage to it, only the end of its bytes)."""
    return isinstance(error, CaptureFormatError) and error.offset is not None and error.offset < after \
        and not error.reason.startswith("truncated")


def whole_packets(opener, name, size):
    """How many packets a read of the first ``size`` bytes of a file gives: those whole in them, up to any damage
    (which the read of the file itself meets and reports)."""
    count = 0
    stream = io.BufferedReader(_Upto(opener(name), size))
    try:
        for _ in read_packets(stream, name):
            count += 1
    except CaptureFormatError:
        pass
    finally:
        stream.close()
    return count


class RingReader:
    """The exchanges ending in the last of ``files``; the ones before it are its lookback, oldest first.

    final: no file comes after this one, so everything still open at its end is reported. oldest_leaves: the
    first file of the window is in no later file's window, so requests sent there and still unanswered at the
    end are reported here (the window holds ``lookback`` files before this one). starts_ring: the window begins
    with the ring's first file, so a connection found under way there began before the capture (elsewhere it
    began in a file before the window, and the bytes skipped to find its first frame are not news). opener: opens
    a file's name as a binary file object (default: open). The other arguments are read_capture's.
    ``notes``: lookback files that could not be read (to their end), and why.

    A piece of a file still being written: ``upto``, read only the last file's first ``upto`` bytes (a packet
    cut there is the next piece's) and report nothing still open at their end, since the file goes on; ``after``,
    the bytes of the last file earlier pieces read: what ended within them was theirs to report (the window is
    read from its start all the same, so that every connection is where it was).
    """

    def __init__(self, files, *, final=False, oldest_leaves=True, starts_ring=False, opener=None, ports=None,
                 partition=None, decode=True, names=None, after=0, upto=None, **limits):
        if not files:
            raise ValueError("RingReader needs at least the file to read")
        if upto is not None and (final or upto < after):
            raise ValueError(f"a piece up to byte {upto} cannot be final or end before byte {after}")
        self.files = list(files)
        self.final = final
        self.oldest_leaves = oldest_leaves
        self.starts_ring = starts_ring
        self.opener = opener or (lambda name: open(name, "rb"))
        self.after = after
        self.upto = upto
        self._delivered = 0  # packets of the last file that earlier pieces read (whole within ``after`` bytes)
        self.notes = []
        self.counts = []  # packets in each file of the window, as far as read
        self._boundary = None  # packets before the file itself, once it is reached
        self._under_way = 0  # connections first seen in the window's first file: under way when the read began
        self._ended = False
        self.reader = CaptureReader(self.files[-1], ports=ports, name=self.files[-1], partition=partition,
                                    decode=decode, names=names, packets=self._packets(), **limits)

    @property
    def stats(self):
        return self.reader.stats

    def _packets(self):
        last = len(self.files) - 1
        try:
            for i, name in enumerate(self.files):
                if i == 1:
                    self._under_way = self.reader.exchanges.count
                limited = None
                if i == last:
                    if self.after:
                        self._delivered = whole_packets(self.opener, name, self.after)
                    self._boundary = sum(self.counts)
                count = 0
                try:
                    stream = self.opener(name)
                    if i == last and self.upto is not None:
                        stream = io.BufferedReader(limited := _Upto(stream, self.upto))
                except OSError as e:
                    if i == last:
                        raise
                    self.notes.append(f"{name}: {e}")
                    self.counts.append(0)
                    continue
                try:
                    for packet in read_packets(stream, name):
                        count += 1
                        yield packet
                except (CaptureFormatError, OSError) as e:
                    if i != last:
                        self.notes.append(str(e))
                    elif _cut_by_limit(e, limited):
                        pass  # the rest of the packet is the next piece's
                    elif not _reported_before(e, self.after):
                        raise  # the reader reports the file's own damage as a capture error exchange
                finally:
                    stream.close()
                    self.counts.append(count)
        finally:
            self._ended = True

    def __iter__(self):
        reader = self.reader
        for ex in reader:
            if ex.status == CAPTURE_ERROR and ex.connection is None:
                yield ex  # the file's own damage (a lookback file's is its own reader's to report)
                continue
            if not self.starts_ring and ex.status == GAP and ex.joined and ex.error_offset == 0 \
                    and ex.request_packet is None and ex.response_packet is None \
                    and ex.connection < self._under_way:
                continue  # the window began inside the connection: its first frame boundary was looked for
            if not self._ended:
                if self._boundary is None or reader.stats.packets <= self._boundary + self._delivered:
                    continue  # ended in the lookback (that file's reader gives it) or in an earlier piece
            elif self.upto is not None:
                continue  # open at the end of a piece: the file goes on, and a later piece sees how
            elif not self.final:
                # Open at the end of the file: the next file's reader sees how it goes on, unless it began in
                # the window's oldest file, which no later window holds.
                if not (self.oldest_leaves and ex.request_packet is not None
                        and ex.request_packet <= (self.counts[0] if self.counts else 0)):
                    continue
            self._renumber(ex)
            yield ex

    def _renumber(self, ex):
        """Packet numbers from the count over the window to the count within each packet's own file."""
        counts = self.counts
        for attr in ("request_packet", "response_packet"):
            number = getattr(ex, attr)
            if number is None:
                continue
            for count in counts:
                if number <= count:
                    break
                number -= count
            setattr(ex, attr, number)


def read_ring(files, lookback=DEFAULT_LOOKBACK, **options):
    """(file, exchange) for every exchange of a whole ring, file by file: what a stream over the ring gives,
    in one process. files: names in ring order (see order_key)."""
    for window, final, oldest_leaves, starts_ring in windows(list(files), lookback):
        for ex in RingReader(window, final=final, oldest_leaves=oldest_leaves, starts_ring=starts_ring, **options):
            yield window[-1], ex
