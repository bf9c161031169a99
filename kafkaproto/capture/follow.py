"""Captures still being written: a file that grows, or a ring of files a capture tool rotates
(``tcpdump -C 100 -W 10``, ``tcpdump -G 60``, ``dumpcap -b filesize:...``), read as one stream of packets.

    for ex in capture.follow("ring/"):           # the ring's files oldest first, then each new one as it comes
        ...
    capture.follow("traffic.pcap", idle=30)      # a growing file, until nothing new has come for 30 s

Files are read in the order they were written (``ring.order_key``: modification time, then name). The file
being written is read as it grows; it is finished once a newer file has appeared and it has not grown since it was
last read to its end. The packets of every file go to one reader, so a TCP connection goes on from one file into
the next: a request at the end of one file is paired with its answer in the next. A file that cannot be read, or
stops being a capture, ends with a note in ``stats.notes``; the next file is read all the same. The only I/O here
is reading files.
"""

import io
import os
import time

from .pcap import CaptureFormatError, read_packets
from .reader import CaptureReader
from .ring import order_key

POLL_SECONDS = 0.25
DONE, GREW, WAIT = "done", "grew", "wait"  # what a file being read says at the end of its bytes


class _Growing(io.RawIOBase):
    """A file read as it grows: a read with nothing new waits, looking every ``poll`` seconds, until ``finished``
    says no more will come."""

    def __init__(self, path, finished, poll):
        super().__init__()
        self._file = open(path, "rb")
        self._finished = finished
        self._poll = poll

    def readable(self):
        return True

    def readinto(self, buffer):
        while True:
            n = self._file.readinto(buffer)
            if n:
                return n
            state = self._finished()
            if state is DONE:
                return 0
            if state is WAIT:
                time.sleep(self._poll)

    def close(self):
        try:
            self._file.close()
        finally:
            super().close()


class Follower:
    """The packets of a growing file or a rotating ring (see the module's doc), as an iterator of pcap.Packet.

    ``idle``: stop once nothing new has arrived for this many seconds (None: never; a KeyboardInterrupt, or
    ``stop()``, ends it). ``poll``: how often to look for more.
    """

    def __init__(self, path, *, idle=None, poll=POLL_SECONDS):
        self.path = path
        self.idle = idle
        self.poll = poll
        self.notes = []  # files that could not be read to their end, and why
        self.files = []  # the files read, in order
        self._stopped = False
        self._last_growth = time.monotonic()

    def stop(self):
        self._stopped = True

    def __iter__(self):
        if os.path.isdir(self.path):
            return self._ring()
        return self._file(self.path, lambda: False)

    # ---- one file ----

    def _file(self, path, newer_exists):
        """The packets of one file, read as it grows until it is finished; True when it was written anew (cut
        short and started again) meanwhile, so that it is to be read again."""
        size = [_size(path)]
        rewritten = [False]

        def finished():
            """DONE, GREW (read again at once) or WAIT (look again after a poll), at the end of what was read."""
            if self._stopped:
                return DONE
            now = time.monotonic()
            current = _size(path)
            if current < size[0]:  # cut short: the tool is writing this file anew (a ring going round)
                rewritten[0] = True
                return DONE
            if current != size[0]:
                size[0] = current
                self._last_growth = now
                return GREW
            if newer_exists() or self.idle is not None and now - self._last_growth >= self.idle:
                return DONE
            return WAIT

        self.files.append(path)
        try:
            stream = _Growing(path, finished, self.poll)
        except OSError as e:
            self.notes.append(f"{path}: {e}")
            return False
        try:
            yield from read_packets(stream, name=path)
        except (CaptureFormatError, OSError) as e:
            if not rewritten[0]:
                self.notes.append(str(e))
        finally:
            stream.close()
        return rewritten[0]

    # ---- a ring ----

    def _ring(self):
        done = {}  # path -> its modification time when it was finished (a later one: written again)
        while not self._stopped:
            waiting = self._unread(done)
            if not waiting:
                if self.idle is not None and time.monotonic() - self._last_growth >= self.idle:
                    return
                time.sleep(self.poll)
                continue
            path = waiting[0]
            self._last_growth = time.monotonic()
            again = yield from self._file(path, lambda current=path: len(self._unread(done, current)) > 1)
            if not again:
                done[path] = _mtime(path)

    def _unread(self, done, current=None):
        """The ring's files not read yet (and the one being read), oldest first."""
        found = []
        try:
            names = os.listdir(self.path)
        except OSError as e:
            self.notes.append(f"{self.path}: {e}")
            self._stopped = True
            return []
        for name in names:
            path = os.path.join(self.path, name)
            if name.startswith(".") or not os.path.isfile(path):
                continue
            mtime = _mtime(path)
            if mtime is not None and (path == current or path not in done or mtime > done[path]):
                found.append((order_key(name, mtime), path))
        return [path for _, path in sorted(found)]


def follow(path, *, ports=None, names=None, idle=None, poll=None, **limits):
    """The exchanges of a capture still being written: a growing file, or a folder a capture tool rotates files
    into (see follow.Follower), read as one stream so that connections go on from file to file. idle: stop once
    nothing new has come for this many seconds (None: go on until interrupted). ``reader.packets`` is the
    Follower: its ``files`` and ``notes``, and ``stop()``."""
    follower = Follower(path, idle=idle, poll=POLL_SECONDS if poll is None else poll)
    return CaptureReader(path, ports=ports, name=path, names=names, packets=follower, **limits)


def _mtime(path):
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _size(path):
    try:
        return os.stat(path).st_size
    except OSError:
        return -1
