"""A partition's log on disk: segment files of record batches, each with a sparse offset index.

Layout (Kafka's): ``<topic>-<partition>/`` holds ``partition.metadata`` and, per
segment, ``<base offset, 20 digits>.log`` with the batches as they arrived
(base offsets filled in) and ``.index`` with an 8-byte entry (offset relative
to the segment, byte position) every ``index_interval`` bytes.

Appends are written straight to the file before they are acknowledged, so a
killed process loses nothing that was acknowledged. A write the file system
refuses (a full disk, a quota, an I/O error) is cut off again and raised as
StorageError, for Produce to answer KAFKA_STORAGE_ERROR as Kafka does: the
file only ever holds whole batches, and the log goes on once there is room.
An append can also be made durable (fsync) before it returns; the metadata log's
are, so that nothing answered is lost with the machine.

After an unclean stop the last segment is read back batch by batch and cut at
the first batch whose length or CRC is wrong (a torn write), keeping every
whole batch before it; a last segment that does not end on a whole batch is
cut the same way after any stop. On every start the indexes are rebuilt from
the batch headers (the files are written for tools that read them).

Segment files are opened when first read or written and stay open in a
broker-wide set of bounded size (OpenFiles), the least recently used closed
first: a partition at rest holds no file descriptor, so the number of
partitions is not bounded by the process's descriptor limit. A read may give
its bytes as a FileRegion of the segment's file instead (for sendfile); the
file then stays open, whatever happens to the segment, until the region is
released.
"""

import bisect
import errno
from array import array
import logging
import os
import resource
import struct
import time
from collections import OrderedDict

from ...protocol import FileRegion
from ...records import RecordsError, iter_batches, produced_batches
from ...records.header import HEADER_SIZE, assign, read_header

log = logging.getLogger("kafkaproto.broker")

OVERHEAD = 12  # base offset and length precede the length's bytes
INDEX_ENTRY = struct.Struct(">ii")
# Reads this large are given as FileRegions when asked: below it, copying costs less than a sendfile call.
REGION_MIN = 64 * 1024
TRANSACTIONAL, CONTROL = 0x10, 0x20  # batch attribute bits


class LogError(Exception):
    """A log cannot be opened or appended to (names the file)."""


class StorageError(LogError):
    """The file system refused a log write (ENOSPC, EDQUOT, EIO...; the OSError is the cause). Nothing of the
    append is kept: the log is as it was, and may be appended to again. Kafka answers KAFKA_STORAGE_ERROR."""


class Batch:
    """What the log keeps of a batch: where it is and the header fields appends and reads need."""

    __slots__ = ("base_offset", "last_offset", "position", "size", "max_timestamp", "producer_id",
                 "producer_epoch", "base_sequence", "record_count", "attributes", "leader_epoch")

    def __init__(self, header, position):
        (self.base_offset, length, self.leader_epoch, _magic, _crc, self.attributes, last_delta, _base_ts,
         self.max_timestamp, self.producer_id, self.producer_epoch, self.base_sequence,
         self.record_count) = header
        self.last_offset = self.base_offset + last_delta
        self.position = position
        self.size = length + OVERHEAD

    @property
    def is_transactional(self):
        return bool(self.attributes & TRANSACTIONAL)

    @property
    def is_control(self):
        return bool(self.attributes & CONTROL)


def headers(data):
    """[Batch] of the whole batches in data read from a log (trusted: written after parse_batches checked them)."""
    out = []
    position = 0
    while position + HEADER_SIZE <= len(data):
        batch = Batch(read_header(data, position), position)
        if batch.size < HEADER_SIZE or position + batch.size > len(data):
            break
        out.append(batch)
        position += batch.size
    return out


def parse_batches(data, max_batch_bytes=None):
    """[Batch] of produced record data, each checked in place (records.produced_batches: magic 2, CRC, counts,
    size); raises RecordsError naming the byte."""
    return [Batch(header, position) for header, position in produced_batches(data, max_batch_bytes)]


def default_open_files():
    """Half the soft RLIMIT_NOFILE (the other half is left for sockets and everything else), at least 16."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(16, soft // 2)


# What open(2) fails with when the process or the system has no descriptor to give.
OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)


class OpenFiles:
    """The segment files a broker holds open: at most limit, the least recently used closed to make room."""

    def __init__(self, limit=None):
        self.limit = max(1, limit if limit is not None and limit > 0 else default_open_files())
        self._open = OrderedDict()  # Segment -> None, least recently used first
        self.used = self._open.move_to_end  # a segment was just used
        self.held = 0  # descriptors of other files held open for good, within the limit (the directory's lock)

    def __len__(self):
        return len(self._open)

    def open(self, segment, flags=os.O_RDWR):
        """Open segment's file and keep it among the open ones; its descriptor."""
        while len(self._open) + self.held >= self.limit and self._close_oldest():
            pass
        while True:
            try:
                fd = os.open(segment.path, flags, 0o644)
                break
            except OSError as e:
                # Sockets may have taken what was left: give back a segment's descriptor and try again.
                if e.errno not in OUT_OF_DESCRIPTORS or not self._close_oldest():
                    raise
        segment._fd = fd
        self._open[segment] = None
        return fd

    def forget(self, segment):
        self._open.pop(segment, None)

    def _close_oldest(self):
        """Close the least recently used file no FileRegion holds; False if every open one is held."""
        for segment in self._open:
            if not segment.regions:
                break
        else:
            return False
        del self._open[segment]
        fd, segment._fd = segment._fd, -1
        os.close(fd)
        return True

    def close_all(self):
        for segment in list(self._open):
            segment.regions = 0
            segment.close()


def _reason(e):
    return f"{e.strerror} ({errno.errorcode.get(e.errno, e.errno)})" if e.errno else str(e)


def sync_directory(directory):
    """Make a directory's entries (new files, renames) durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Segment:
    """One .log file and its index; the file is opened on first use, through the broker's OpenFiles."""

    def __init__(self, directory, base_offset, index_interval, files):
        self.base_offset = base_offset
        self.path = os.path.join(directory, f"{base_offset:020d}.log")
        self.index_path = self.path[:-4] + ".index"
        self.index_interval = index_interval
        self.files = files
        self._used = files.used  # bound once: the hot path calls it on every read and write
        self._fd = -1
        self.regions = 0  # FileRegions of this file not yet released: the file stays open while there are any
        self._close_when_released = False
        try:
            self.size = os.stat(self.path).st_size
        except FileNotFoundError:
            files.open(self, os.O_RDWR | os.O_CREAT)  # a new segment, about to be written to
            self.size = 0
        self.index_offsets = []  # relative offsets of the indexed batches' first offsets
        self.index_positions = []
        self.since_index = 0
        # Every batch's first and last offsets and where it ends, so that a read finds its bytes without
        # reading batch headers from the file (24 bytes a batch).
        self.bases, self.lasts, self.ends = array("q"), array("q"), array("q")
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.opened = time.time()  # segment.ms counts from here (from the start, for a segment found on disk)

    @property
    def fd(self):
        """The open file's descriptor; only for the one call it is fetched for (it may be closed after)."""
        fd = self._fd
        if fd < 0:
            return self.files.open(self)
        self._used(self)
        return fd

    @property
    def is_open(self):
        return self._fd >= 0

    def close(self):
        if self.regions:
            self._close_when_released = True
            return
        if self._fd >= 0:
            self.files.forget(self)
            fd, self._fd = self._fd, -1
            os.close(fd)

    def read(self, position, size):
        return os.pread(self.fd, size, position)

    def region(self, position, size):
        """size bytes from position as a FileRegion, which keeps this file open until it is released."""
        region = FileRegion(self.fd, position, size, self._released)
        self.regions += 1
        return region

    def _released(self):
        self.regions -= 1
        if not self.regions and self._close_when_released:
            self._close_when_released = False
            self.close()

    def write(self, data, position):
        """Write data at position, all of it or nothing: a failed write is cut off again, and a refusal of the
        file system raised as StorageError."""
        try:
            fd = self.fd
        except OSError as e:
            raise StorageError(f"{self.path}: cannot be opened for writing: {_reason(e)}") from e
        try:
            done = os.pwrite(fd, data, position)
            if done < len(data):
                # A regular file takes fewer bytes than given only when it runs out of room; the rest is tried
                # again, so the file system says why.
                view = memoryview(data).cast("B")
                while done < len(view):
                    written = os.pwrite(fd, view[done:], position + done)
                    if written <= 0:
                        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                    done += written
        except OSError as e:
            self.cut(position)
            raise StorageError(f"{self.path}: {len(data)} bytes not written at position {position}: "
                               f"{_reason(e)}") from e
        except BaseException:
            self.cut(position)
            raise

    def cut(self, position):
        """Cut what a failed write left after position."""
        try:
            os.ftruncate(self.fd, position)
        except OSError as e:
            log.error("%s: a failed write could not be cut off (%s); the log is recovered on the next start",
                      self.path, e)

    def truncate(self, size):
        os.ftruncate(self.fd, size)
        self.size = size

    def sync(self):
        os.fsync(self.fd)


    def batches(self, position=0, stop=None):
        """The batch headers from position on, read from the file in large chunks."""
        stop = self.size if stop is None else stop
        chunk = b""
        chunk_at = position
        while position + OVERHEAD <= stop:
            if position + HEADER_SIZE > chunk_at + len(chunk):
                chunk = self.read(position, max(1 << 20, HEADER_SIZE))
                chunk_at = position
            if position + HEADER_SIZE > chunk_at + len(chunk):
                return
            batch = Batch(read_header(chunk, position - chunk_at), position)
            if batch.size < HEADER_SIZE or position + batch.size > stop:
                return
            yield batch
            position += batch.size

    def add(self, batch):
        """Index a batch just written (or found on load), and note where it ends."""
        if self.since_index >= self.index_interval or not self.index_positions:
            self.index_offsets.append(batch.base_offset - self.base_offset)
            self.index_positions.append(batch.position)
            self.since_index = 0
        self.since_index += batch.size
        self.bases.append(batch.base_offset)
        self.lasts.append(batch.last_offset)
        self.ends.append(batch.position + batch.size)
        self.next_offset = batch.last_offset + 1
        if batch.max_timestamp > self.max_timestamp:
            self.max_timestamp = batch.max_timestamp

    def position_of(self, offset):
        """The position of an indexed batch at or before offset (the scan for it starts there)."""
        i = bisect.bisect_right(self.index_offsets, offset - self.base_offset) - 1
        return self.index_positions[i] if i >= 0 else 0

    def write_index(self):
        data = b"".join(INDEX_ENTRY.pack(o, p) for o, p in zip(self.index_offsets, self.index_positions))
        tmp = self.index_path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, self.index_path)


START_FILE = "log-start-offset"
EPOCHS_FILE = "leader-epoch-checkpoint"  # Kafka's name and layout: 0, the count, then "epoch start-offset" lines
UNDEFINED = -1


class LeaderEpochs:
    """Which leader epoch began at which offset (Kafka's LeaderEpochFileCache): what OffsetForLeaderEpoch answers,
    so that a follower or a consumer whose log diverged finds where. An epoch starts when a leader takes the
    partition (assign) or, rebuilt from the batches at start, where its first batch is; the file keeps those
    whose start no batch shows."""

    def __init__(self, path):
        self.path = path
        self.entries = []  # [(epoch, start offset)], both increasing
        try:
            with open(path) as f:
                lines = f.read().split("\n")
            count = int(lines[1])
            self.entries = [(int(e), int(o)) for e, o in (line.split() for line in lines[2:2 + count])]
        except (FileNotFoundError, ValueError, IndexError):
            self.entries = []  # none kept, or a file that does not read: the batches tell

    @property
    def latest(self):
        return self.entries[-1][0] if self.entries else UNDEFINED

    def saw(self, epoch, offset):
        """A batch of epoch at offset, found on load or appended: a later epoch begins there."""
        if epoch > self.latest:
            self.entries.append((epoch, offset))

    def assign(self, epoch, offset):
        """A leader takes the partition at epoch, its log ending at offset; kept in the file at once."""
        if epoch > self.latest:
            self.entries.append((epoch, offset))
            self.save()

    def end_offset_for(self, epoch, log_end_offset):
        """(the epoch, the offset it ended at) as Kafka answers OffsetForLeaderEpoch: the latest epoch ends at the
        log end; an earlier one where the next began (an epoch the log never had answers for the one before it);
        an unknown later one, or a negative one, is (UNDEFINED, UNDEFINED)."""
        if epoch < 0 or not self.entries:
            return UNDEFINED, UNDEFINED
        if epoch == self.latest:
            return epoch, log_end_offset
        later = next((i for i, (e, _) in enumerate(self.entries) if e > epoch), None)
        if later is None:
            return UNDEFINED, UNDEFINED
        return (self.entries[later - 1][0] if later else epoch), self.entries[later][1]

    def truncate_end(self, end_offset):
        """The log was cut at end_offset: epochs that began after it are gone."""
        kept = [(e, o) for e, o in self.entries if o <= end_offset]
        if kept != self.entries:
            self.entries = kept
            self.save()

    def truncate_start(self, start_offset):
        """The log now starts at start_offset: the epoch in force there starts there."""
        before = [i for i, (_, o) in enumerate(self.entries) if o < start_offset]
        if before:
            last = before[-1]
            self.entries = [(self.entries[last][0], start_offset)] + self.entries[last + 1:]
            self.save()

    def save(self):
        text = "0\n%d\n" % len(self.entries) + "".join(f"{e} {o}\n" for e, o in self.entries)
        try:
            with open(self.path + ".tmp", "w") as f:
                f.write(text)
            os.replace(self.path + ".tmp", self.path)
        except OSError as e:  # the batches still tell every epoch a batch began, at the next start
            log.warning("%s cannot be written: %s", self.path, _reason(e))


def _read_start(path):
    """The log start offset DeleteRecords saved, or None (none saved, or a file that does not read: the first
    segment's base is then the start, as before any deletion)."""
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (FileNotFoundError, ValueError):
        return None


class PartitionLog:
    """The batches of one partition, in segments; offsets are assigned here."""

    def __init__(self, directory, *, segment_bytes=1 << 30, index_interval=4096, recover=False,
                 segment_ms=7 * 24 * 3600 * 1000, files=None):
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.segment_ms = segment_ms
        self.index_interval = index_interval
        self.files = files if files is not None else OpenFiles()
        os.makedirs(directory, exist_ok=True)
        bases = sorted(int(name[:-4]) for name in os.listdir(directory)
                       if name.endswith(".log") and name[:-4].isdigit())
        self.segments = [Segment(directory, base, index_interval, self.files) for base in bases or [0]]
        self.epochs = LeaderEpochs(os.path.join(directory, EPOCHS_FILE))
        for i, segment in enumerate(self.segments):
            self._load(segment, recover=recover and i == len(self.segments) - 1)
        self.epochs.truncate_end(self.log_end_offset)
        # Where DeleteRecords moved the start, inside the first segment (Kafka's log-start-offset-checkpoint).
        self.log_start_offset = self.segments[0].base_offset
        saved = _read_start(os.path.join(directory, START_FILE))
        if saved is not None:
            self.log_start_offset = max(self.log_start_offset, min(saved, self.log_end_offset))
        self.epochs.truncate_start(self.log_start_offset)

    def _load(self, segment, recover):
        """Index the segment and find its end offset; on recovery, first cut a torn or corrupt tail. The last
        segment is recovered after any stop when it does not end on a whole batch (a write that failed and
        could not be cut off, say); an earlier one that does not is an error."""
        if recover:
            self._cut_torn_tail(segment)
        end = self._index(segment)
        if end < segment.size:
            if segment is not self.segments[-1]:
                raise LogError(f"{segment.path}: {segment.size - end} bytes after the last whole batch, in a "
                               "segment that is not the last")
            self._cut_torn_tail(segment)  # which may cut before end (a batch whose CRC is wrong)
            self._index(segment)

    def _index(self, segment):
        """Index the segment's batches from its start, and note the leader epochs they begin; where the last
        whole one ends."""
        segment.index_offsets, segment.index_positions, segment.since_index = [], [], 0
        segment.bases, segment.lasts, segment.ends = array("q"), array("q"), array("q")
        segment.next_offset, segment.max_timestamp = segment.base_offset, -1
        end = 0
        saw = self.epochs.saw
        for batch in segment.batches():
            segment.add(batch)
            saw(batch.leader_epoch, batch.base_offset)
            end = batch.position + batch.size
        return end

    def _cut_torn_tail(self, segment):
        good = self._valid_prefix(segment)
        if good < segment.size:
            log.warning("%s: %d bytes after position %d are not whole, valid batches; truncated",
                        segment.path, segment.size - good, good)
            segment.truncate(good)

    @staticmethod
    def _valid_prefix(segment, chunk_bytes=4 << 20):
        """The length of the segment's longest prefix of whole batches whose lengths and CRCs hold."""
        position = 0
        chunk, chunk_at = b"", 0
        while position + HEADER_SIZE <= segment.size:
            if position + HEADER_SIZE > chunk_at + len(chunk):
                chunk, chunk_at = segment.read(position, chunk_bytes), position
                if len(chunk) < HEADER_SIZE:
                    break
            size = read_header(chunk, position - chunk_at).length + OVERHEAD
            if size < HEADER_SIZE or position + size > segment.size:
                break
            if position + size > chunk_at + len(chunk):
                chunk, chunk_at = segment.read(position, max(chunk_bytes, size)), position
                if len(chunk) < size:
                    break
            try:
                for _ in iter_batches(memoryview(chunk)[position - chunk_at:position - chunk_at + size]):
                    pass
            except RecordsError:
                break
            position += size
        return position

    @property
    def log_end_offset(self):
        return self.segments[-1].next_offset

    @property
    def size_bytes(self):
        return sum(s.size for s in self.segments)

    def append(self, data, batches, leader_epoch=0, sync=False):
        """Write produced batches (as parse_batches read them), giving them offsets and the leader epoch
        (neither is under the CRC, as in Kafka); the first offset. Writable data (a request the server
        received into a bytearray of its own) is given them in place, as Kafka does. sync: the batches are
        on stable storage (fsync) before this returns. Raises StorageError when the file system refuses the
        write (or the sync), with nothing of the append kept."""
        if not (type(data) is memoryview and not data.readonly or type(data) is bytearray):
            data = bytearray(data)
        first = offset = self.log_end_offset
        for batch in batches:
            assign(data, batch.position, offset, leader_epoch)
            batch.last_offset = offset + (batch.last_offset - batch.base_offset)
            batch.base_offset = offset
            offset = batch.last_offset + 1
        segment = self.segments[-1]
        if segment.size and (segment.size + len(data) > self.segment_bytes
                             or time.time() - segment.opened >= self.segment_ms / 1000):
            try:
                segment = self.roll(sync)
            except OSError as e:
                raise StorageError(f"{self.directory}: a new segment cannot be made: {_reason(e)}") from e
        start = segment.size
        segment.write(data, start)
        if sync:
            try:
                segment.sync()
            except OSError as e:
                # What the file holds after a failed fsync is not known: the append is taken back.
                segment.cut(start)
                raise StorageError(f"{segment.path}: {len(data)} bytes written at position {start} cannot be "
                                   f"synced: {_reason(e)}") from e
        segment.size += len(data)
        for batch in batches:
            batch.position += start
            segment.add(batch)
        self.epochs.saw(leader_epoch, first)
        return first

    def roll(self, sync=False):
        """Start a new segment at the log end offset (sync: its directory entry made durable too)."""
        old = self.segments[-1]
        old.write_index()
        segment = Segment(self.directory, self.log_end_offset, self.index_interval, self.files)
        segment.next_offset = segment.base_offset
        self.segments.append(segment)
        if sync:
            sync_directory(self.directory)
        return segment

    def _segment_for(self, offset):
        i = bisect.bisect_right([s.base_offset for s in self.segments], offset) - 1
        return self.segments[max(i, 0)]

    def read(self, offset, max_bytes, upto=None, regions=None):
        """Whole batches from the one holding offset, up to max_bytes, but at least that first batch;
        none that starts at or after upto (the last stable offset, for read_committed). Given a list
        regions, a read of REGION_MIN bytes or more is a FileRegion, also added to that list."""
        upto = self.log_end_offset if upto is None else upto
        if offset < self.log_start_offset or offset >= upto:
            return b""
        index = self.segments.index(self._segment_for(offset))
        # A compacted segment may end before the offset asked for; the batches then start in a later one.
        for segment in self.segments[index:]:
            lasts = segment.lasts
            first = bisect.bisect_left(lasts, offset)
            if first == len(lasts):
                continue
            if segment.bases[first] >= upto:
                return b""
            start = segment.ends[first - 1] if first else 0
            stop = min(bisect.bisect_left(segment.bases, upto, first),
                       max(bisect.bisect_right(segment.ends, start + max_bytes, first), first + 1))
            size = segment.ends[stop - 1] - start
            if regions is not None and size >= REGION_MIN:
                regions.append(segment.region(start, size))
                return regions[-1]
            return segment.read(start, size)
        return b""

    def offset_for_timestamp(self, timestamp):
        """(offset, timestamp) of the first record with a timestamp at or after timestamp; None if none."""
        for segment in self.segments:
            if segment.max_timestamp < timestamp:
                continue
            for batch in segment.batches():
                if batch.max_timestamp >= timestamp:
                    for record in self._records(segment, batch):
                        if record.timestamp >= timestamp and record.offset >= self.log_start_offset:
                            return record.offset, record.timestamp
        return None

    def max_timestamp(self):
        """(offset, timestamp) of the first record with the largest timestamp; None when empty."""
        best = None
        for segment in self.segments:
            for batch in segment.batches():
                if best is None or batch.max_timestamp > best[1].max_timestamp:
                    best = (segment, batch)
        if best is None:
            return None
        segment, batch = best
        for record in self._records(segment, batch):
            if record.timestamp == batch.max_timestamp:
                return record.offset, record.timestamp
        return batch.last_offset, batch.max_timestamp

    @staticmethod
    def _records(segment, batch):
        for read in iter_batches(segment.read(batch.position, batch.size)):
            yield from read

    def replace_segment(self, segment, data):
        """Put data (whole batches, offsets kept) in place of a closed segment's file, atomically."""
        tmp = segment.path + ".cleaned"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, segment.path)
        segment.close()
        fresh = Segment(self.directory, segment.base_offset, self.index_interval, self.files)
        for batch in fresh.batches():
            fresh.add(batch)
        if fresh.next_offset == fresh.base_offset:
            fresh.next_offset = segment.next_offset  # emptied: it still covers its offsets
        fresh.write_index()
        self.segments[self.segments.index(segment)] = fresh
        return fresh

    def delete_segments_before(self, keep):
        """Drop whole segments before segments[keep] (retention); the new log start offset."""
        for segment in self.segments[:keep]:
            segment.close()
            for path in (segment.path, segment.index_path):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
        del self.segments[:keep]
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        self.epochs.truncate_start(self.log_start_offset)
        return self.log_start_offset

    def delete_records_before(self, offset):
        """Move the log start offset up to offset (DeleteRecords; at most the log end), kept across restarts;
        the segments wholly below it go. The new log start offset."""
        offset = min(offset, self.log_end_offset)
        if offset <= self.log_start_offset:
            return self.log_start_offset
        path = os.path.join(self.directory, START_FILE)
        with open(path + ".tmp", "w") as f:
            f.write(f"{offset}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(path + ".tmp", path)
        sync_directory(self.directory)
        self.log_start_offset = offset
        self.epochs.truncate_start(offset)
        keep = 0
        while keep < len(self.segments) - 1 and self.segments[keep + 1].base_offset <= offset:
            keep += 1
        if keep:
            self.delete_segments_before(keep)
        return self.log_start_offset

    def flush(self):
        for segment in self.segments:
            segment.sync()

    def close(self, write_index=True):
        if self.segments and write_index:
            self.segments[-1].write_index()
        for segment in self.segments:
            segment.close()
