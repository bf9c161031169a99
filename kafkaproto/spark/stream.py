"""``spark.readStream.format("kafka-pcap")``: a folder a capture tool writes a ring into, read as a stream.

    (spark.readStream.format("kafka-pcap").option("ports", "9092").load("/var/capture/ring/")
         .writeStream.option("checkpointLocation", "/var/capture/checkpoint").toTable("exchanges"))

A file is read once it is finished: once a newer file is there (a capture tool starts the next file after closing
the last). Each micro-batch reads the files finished since the last one, each in a task of its own, as the batch
reader's option ``ring`` does: a file's exchanges are those ending in it, paired with requests from the
``lookback`` files before it (kafkaproto.capture.ring). A micro-batch's rows therefore depend only on the files it
names, so that a query restarted from its checkpoint gives every exchange exactly once, whether or not its
connection goes on into the next file.

Topic names: the pairs the traffic carries (Metadata answers and the like) name topic IDs in every later row. When
a micro-batch is planned the driver reads its files for pairs (a quick pass, as the batch reader's option namesPass
does), and the pairs learned so far go into its end offset: the micro-batch's own rows and every later one's are
named by them, and a query restarted from its checkpoint knows them again. A topic ID none names is said once (a
warning of the logger kafkaproto.spark). Option topicNames adds pairs; when it is a file (JSON, CSV, a KRaft
metadata log) the driver reads it again for every micro-batch, so that a map kept up to date, or the metadata log a
controller appends to, names topics created after the query began.

Offsets name the last file read, with its modification time and its size, where it ended, and the pairs learned up
to it: {"file", "mtime_ns", "size", "files", "names"} ("files" counts the files read since the query began, "names"
is {"<topic id>": "<name>"}). Files are ordered as they were written (modification time, then name); a file a ring
writes anew has a new time and is read again as a new file.
"""

from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles, SupportsTriggerAvailableNow

from .. import registry
from ..capture import TopicNames, ring
from . import naming
from . import schema as _schema
from .planning import expand, in_ring_order, plan_ring
from .reading import read_split

BEGINNING = {"file": "", "mtime_ns": 0, "size": 0, "files": 0}


def _key(offset):
    return ring.order_key(offset["file"], offset["mtime_ns"])


def _offset(file, count):
    return {"file": file.name, "mtime_ns": file.mtime_ns or 0, "size": file.size or 0, "files": count}


class KafkaPcapStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options, struct):
        self.options = options
        self.struct = struct
        self._target = None  # with Trigger.AvailableNow: the last file finished when the query started
        self.unnamed = set()  # the topic ids said to be named by no pair (each said once)

    # ---- what is there ----

    def _listing(self):
        """The files there, in ring order. A path that cannot be listed stops the query, with why; a glob that
        matches nothing yet is a ring not begun."""
        files = []
        for file in expand(self.options.paths):
            if file.error is None:
                files.append(file)
            elif not file.unmatched:
                raise OSError(f"kafka-pcap stream: {file.error}")
        return in_ring_order(files)

    def _finished(self, files):
        """The files no longer written: all but the newest."""
        return files[:-1]

    # ---- offsets ----

    def initialOffset(self):
        if self.options.starting == "latest":
            finished = self._finished(self._listing())
            if finished:
                return _offset(finished[-1], 0)
        return dict(BEGINNING)

    def getDefaultReadLimit(self):
        return ReadMaxFiles(self.options.max_files) if self.options.max_files else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self):
        finished = self._finished(self._listing())
        self._target = ring.order_key(finished[-1].name, finished[-1].mtime_ns) if finished else None

    def latestOffset(self, start, limit):
        start_key = _key(start)
        finished = self._finished(self._listing())
        first = next((k for k, f in enumerate(finished) if ring.order_key(f.name, f.mtime_ns) > start_key), None)
        new = finished[first:] if first is not None else []
        if self._target is not None:
            new = [f for f in new if ring.order_key(f.name, f.mtime_ns) <= self._target]
        if isinstance(limit, ReadMaxFiles):
            new = new[:limit.max_files]
        if not new:
            return start
        end = _offset(new[-1], start.get("files", 0) + len(new))
        end["names"] = self._names(start, finished[max(0, first - self.options.lookback):first + len(new)])
        return end

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

    def partitions(self, start, end):
        if start == end:
            return []
        files = self._finished(self._listing())
        low, high = _key(start), _key(end)
        chosen = {k for k, f in enumerate(files) if low < ring.order_key(f.name, f.mtime_ns) <= high}
        splits = plan_ring(files, self.options.lookback, self.options.splits, chosen, last_is_final=False)
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
