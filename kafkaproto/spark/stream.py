"""``spark.readStream.format("kafka-pcap")``: a folder a capture tool writes a ring into, read as a stream.

    (spark.readStream.format("kafka-pcap").option("ports", "9092").load("/var/capture/ring/")
         .writeStream.option("checkpointLocation", "/var/capture/checkpoint").toTable("exchanges"))

A file is read once it is finished: once a newer file is there (a capture tool starts the next file after closing
the last), or once it has not grown for ``idle`` seconds (default 60: its modification time against the driver's
clock), so that the last file of a capture that stopped is read too. Under ``Trigger.AvailableNow`` the files
finished when the query starts are read, the newest among them if it was idle then. Each micro-batch reads the files
finished since the last one, each in a task of its own, as the batch reader's option ``ring`` does: a file's
exchanges are those ending in it, paired with requests from the ``lookback`` files before it
(kafkaproto.capture.ring). A micro-batch's rows therefore depend only on the files it names, so that a query
restarted from its checkpoint gives every exchange exactly once, whether or not its connection goes on into the
next file.

A file read because it was idle may grow again (the capture was quiet, not over). It is then read again once it is
finished anew, giving only what ends in the bytes it gained: a piece of the file (RingReader's ``after``), so that
nothing is given twice and nothing after the first read is lost. What is still open at the end of a file read that
way (a request not answered yet) is left to the next piece or the next file; requests still unanswered at the end
of the newest file are therefore reported only once the ring goes on.

Files that go before they are read are reported, never passed over in silence: one the stream saw (listed, not yet
read) and the ring then wrote anew or deleted, one a micro-batch planned and lost before its task read it, or the
rest of a file read while idle that was written anew before the stream saw how it ended; each gives one "capture
error" row naming it (at the records level a row whose ``error`` says so), in the micro-batch that finds it
gone, running or after a restart. A file written and written over while the stream was not looking (stopped, or
busy with a long micro-batch) left no trace to report: a ring must hold more files than come while it is away.

Topic names: the pairs the traffic carries (Metadata answers and the like) name topic IDs in every later row. When
a micro-batch is planned the driver reads its files for pairs (a quick pass, as the batch reader's option namesPass
does), and the pairs learned so far go into its end offset: the micro-batch's own rows and every later one's are
named by them, and a query restarted from its checkpoint knows them again. A query started at the latest position
reads the files already there for their pairs alone (not their rows), so that its rows are named by them too. A
topic ID none names is said once (a warning of the logger kafkaproto.spark). Option topicNames adds pairs; when it
is a file (JSON, CSV, a KRaft metadata log) the driver reads it again for every micro-batch, so that a map kept up
to date, or the metadata log a controller appends to, names topics created after the query began.

Offsets name the last file read, with its modification time and its size (how far it was read), where it ended, and
the pairs learned up to it: {"file", "mtime_ns", "size", "files", "names"} ("files" counts the files and pieces
read since the query began, "names" is {"<topic id>": "<name>"}); with "head" (its first bytes' digest, to know it
again once it has grown), "open" (read while it might still grow), "batch" (the micro-batch's files: [name,
mtime_ns, size]), "after" (bytes of the batch's first file read before), "pending" (files there but not read yet,
to notice a ring writing over them) and "lost" (files reported lost in the micro-batch). Files are ordered as they
were written (modification time, then name); a file a ring writes anew has a new time and is read again as a new
file.
"""

import time

from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles, SupportsTriggerAvailableNow

from .. import registry
from ..capture import TopicNames, ring
from ..capture.names import NAMING
from . import naming
from . import schema as _schema
from .planning import CaptureFile, CaptureSplit, expand, head_of, in_ring_order, plan_ring, same_head
from .reading import read_split

BEGINNING = {"file": "", "mtime_ns": 0, "size": 0, "files": 0}


def _key(offset):
    return ring.order_key(offset["file"], offset["mtime_ns"])


def _file_key(file):
    return ring.order_key(file.name, file.mtime_ns)


def _unchanged(file, mtime_ns, size):
    return file is not None and (file.mtime_ns or 0) == mtime_ns and (file.size or 0) == size


def _grown(file, size, head):
    """Whether a file is one seen (or read) at ``size`` bytes with that head, gone on since."""
    return file is not None and (file.size or 0) >= size and same_head(file, head)


def _when(mtime_ns):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(mtime_ns / 1e9))


class KafkaPcapStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options, struct):
        self.options = options
        self.struct = struct
        self._available_now = False
        self._target = None  # with Trigger.AvailableNow: the ring order of the last file finished at the start
        self._seen = {}  # files seen and not read yet, as "pending" entries: the last look's, to notice losses
        self.unnamed = set()  # the topic ids said to be named by no pair (each said once)
        self.now = time.time_ns  # the driver's clock, which files' modification times are compared with

    # ---- what is there ----

    def _listing(self):
        """The files there, in ring order. A path that cannot be listed stops the query, with why; a glob that
        matches nothing yet is a ring not begun, and a file deleted as it was listed is not there."""
        files = []
        for file in expand(self.options.paths):
            if file.error is None:
                files.append(file)
            elif not (file.unmatched or file.gone):
                raise OSError(f"kafka-pcap stream: {file.error}")
        return in_ring_order(files)

    def _finished(self, files):
        """The files no longer written: all but the newest, and the newest too once it has not grown for the
        option idle's seconds (and holds something: a capture tool writes a file's header as it opens it)."""
        if not files:
            return []
        newest = files[-1]
        idle = newest.mtime_ns is not None and bool(newest.size) \
            and self.now() - newest.mtime_ns >= self.options.idle * 1e9
        return files if idle else files[:-1]

    def _pending(self, files, after_key):
        """The "pending" entries of the files after after_key: [name, mtime_ns, size, head]; the head only of the
        newest, the one file that may still grow (a change to any other is the ring writing it anew)."""
        return [[f.name, f.mtime_ns or 0, f.size or 0, head_of(f) if f is files[-1] else None]
                for f in files if _file_key(f) > after_key]

    # ---- offsets ----

    def initialOffset(self):
        if self.options.starting != "latest":
            return dict(BEGINNING)
        files = self._listing()
        finished = self._finished(files)
        if not finished:
            return dict(BEGINNING)
        last = finished[-1]
        offset = {"file": last.name, "mtime_ns": last.mtime_ns or 0, "size": last.size or 0, "files": 0,
                  "head": head_of(last), "open": last is files[-1]}
        if self.options.names_pass:
            # The files skipped still name topics: their pairs (not their rows) name the rows to come.
            learned = naming.gather(finished, self.options, in_ring=True, decode=NAMING)
            offset["names"] = learned.names.to_json()
        offset["pending"] = self._pending(files, _key(offset))
        return offset

    def getDefaultReadLimit(self):
        return ReadMaxFiles(self.options.max_files) if self.options.max_files else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self):
        finished = self._finished(self._listing())
        self._available_now = True
        self._target = _file_key(finished[-1]) if finished else None

    def latestOffset(self, start, limit):
        files = self._listing()
        current = {f.name: f for f in files}
        finished = self._finished(files)
        start_key = _key(start)
        lost = self._lost(start, current)
        pieces = [f for f in finished if _file_key(f) > start_key]
        went_on = self._went_on(start, current, files, lost)
        if went_on is not None:  # the start's file, to read on from where the start left it
            pieces = [went_on] + [f for f in pieces if f.name != went_on.name] \
                if went_on.name in {f.name for f in finished} else []
        if self._available_now:
            pieces = [f for f in pieces if self._target is not None and _file_key(f) <= self._target]
        if isinstance(limit, ReadMaxFiles):
            pieces = pieces[:limit.max_files]
        if not pieces and not lost:
            self._seen = {entry[0]: entry for entry in self._pending(files, start_key)}
            return start
        if pieces:
            last = pieces[-1]
            end = {"file": last.name, "mtime_ns": last.mtime_ns or 0, "size": last.size or 0,
                   "files": start.get("files", 0) + len(pieces), "head": head_of(last),
                   "open": last.name == files[-1].name, "batch": [[f.name, f.mtime_ns or 0, f.size or 0]
                                                                   for f in pieces]}
            if pieces[0].after:
                end["after"] = pieces[0].after
            before, _ = self._sequence(files, pieces)
            end["names"] = self._names(start, before[max(0, len(before) - self.options.lookback):] + pieces)
        else:  # only losses to report: the start's file stays the last read
            end = {k: start[k] for k in ("file", "mtime_ns", "size", "files", "head", "names") if k in start}
            end["open"] = bool(start.get("open")) and not any(name == start["file"] for name, _ in lost)
            end["batch"] = []
        end["pending"] = self._pending(files, _key(end))
        end["lost"] = lost
        self._seen = {entry[0]: entry for entry in end["pending"]}
        return end

    def _went_on(self, start, current, files, lost):
        """The start's file when the stream is to read on in it: it grew since (the same head, more bytes), or it
        was read while idle and is now finished by a newer file (a piece with no new bytes, which reports what was
        still open at its end). A file read while idle and written anew (or deleted) before the stream saw it end
        is a loss (added to lost): what it gained after the read is gone."""
        name = start["file"]
        if not name:
            return None
        file = current.get(name)
        size = start.get("size", 0)
        if _unchanged(file, start["mtime_ns"], size):
            if not start.get("open") or file is files[-1]:
                return None  # read to its end, or still the newest and idle
        elif not _grown(file, size, start.get("head")):
            if start.get("open"):
                how = "deleted" if file is None else "written anew"
                lost.append([name, f"{name}: {how} before the stream read it to its end (it read the first "
                                   f"{size} bytes, written up to {_when(start['mtime_ns'])}, while the file was "
                                   f"idle): whatever the file gained after those bytes is lost"])
            return None
        piece = CaptureFile(file.name, file.location, file.size, mtime_ns=file.mtime_ns)
        piece.after = size
        return piece

    def _lost(self, start, current):
        """Losses: files seen after the start's (in its "pending", or at the last look) that are gone, or are
        other files now (a ring wrote them anew), and so can never be read."""
        start_key = _key(start)
        seen = {}
        for entry in list(start.get("pending") or []) + list(self._seen.values()):
            if ring.order_key(entry[0], entry[1]) > start_key:
                seen[entry[0]] = entry
        lost = []
        for name, (_, mtime_ns, size, head) in sorted(seen.items(), key=lambda item: ring.order_key(*item[1][:2])):
            file = current.get(name)
            if file is not None and (file.mtime_ns or 0) == mtime_ns or head is not None and _grown(file, size, head):
                continue  # still there (the newest may have grown)
            how = "deleted" if file is None else "written anew"
            lost.append([name, f"{name}: {how} by the ring before the stream read it ({size} bytes written up to "
                               f"{_when(mtime_ns)}): its exchanges are lost"])
        return lost

    def _sequence(self, files, pieces):
        """The files before a micro-batch's (in ring order, those that are not its own), and them with its."""
        first = _file_key(pieces[0])
        own = {f.name for f in pieces}
        before = [f for f in files if f.name not in own and _file_key(f) < first]
        return before, before + list(pieces)

    def _names(self, start, files):
        """The pairs of the micro-batch's end offset: those learned before it (its start's) and those its files
        (with their lookback) carry. Topic IDs its files use that none names are said once."""
        if not self.options.names_pass:
            return dict(start.get("names") or {})
        learned = naming.ask_cluster(naming.gather(files, self.options, TopicNames(start.get("names") or {}),
                                                   in_ring=True), self.options.bootstrap)
        named = learned.names
        if self.options.topic_names is not None:
            named = TopicNames(self.options.topic_names.known)  # given first, as the tasks take them
            named.update(learned.names)
        unnamed = [topic_id for topic_id in learned.unnamed() if named.name(topic_id) is None
                   and topic_id not in self.unnamed]
        self.unnamed.update(unnamed)
        naming.say_unnamed(unnamed, "the stream so far")
        return learned.names.to_json()

    # ---- micro-batches ----

    def _planned(self, start, end, files):
        """The micro-batch's files as its end offset names them (CaptureFiles of the versions planned), each with
        an error when the ring wrote it anew or deleted it since."""
        current = {f.name: f for f in files}
        low = _key(start)
        batch = end.get("batch")
        if batch is None:  # an offset of a version that did not name its files: those between start and end
            high = _key(end)
            batch = [[f.name, f.mtime_ns or 0, f.size or 0] for f in files[:-1] if low < _file_key(f) <= high]
        planned = []
        for k, (name, mtime_ns, size) in enumerate(batch):
            if ring.order_key(name, mtime_ns) <= low and not (k == 0 and end.get("after")):
                continue  # read before the start (the end was not planned from this start)
            file = current.get(name)
            last = k == len(batch) - 1
            piece = CaptureFile(name, file.location if file is not None else None, size, mtime_ns=mtime_ns)
            piece.after = end.get("after", 0) if k == 0 else 0
            piece.open = last and bool(end.get("open"))
            piece.head = end.get("head") if last else None
            if not (_unchanged(file, mtime_ns, size) or piece.open and _grown(file, size, piece.head)):
                how = "deleted" if file is None else "written anew"
                piece.error = (f"{name}: {how} by the ring before the stream read it ({size} bytes written up to "
                               f"{_when(mtime_ns)}): its exchanges are lost")
            planned.append(piece)
        return planned

    def partitions(self, start, end):
        if start == end:
            return []
        files = self._listing()
        planned = self._planned(start, end, files)
        readable = [f for f in planned if f.error is None]
        splits = []
        if readable:
            before, sequence = self._sequence(files, readable)
            chosen = set(range(len(before), len(sequence)))
            splits = plan_ring(sequence, self.options.lookback, self.options.splits, chosen, last_is_final=False)
        splits += [CaptureSplit(f, 0, 1) for f in planned if f.error is not None]
        splits += [CaptureSplit(CaptureFile(name, error=why), 0, 1) for name, why in end.get("lost") or ()]
        if self.options.topic_names_file:
            # Read again for every micro-batch: a metadata log or a map kept up to date names new topics too.
            names = TopicNames.load(self.options.topic_names_file)
        else:
            names = TopicNames(self.options.topic_names.known if self.options.topic_names is not None else None)
        names.update(TopicNames(end.get("names") or {}))  # learned up to the end of this micro-batch
        pairs = dict(names.known)
        for split in splits:
            split.topic_names = pairs
        return splits

    def read(self, partition):
        registry.use_extensions(self.options.extensions)
        return read_split(partition, self.options, _schema.arrow_schema_of(self.struct))

    def commit(self, end):
        pass  # the files are the capture tool's: it rotates them away
