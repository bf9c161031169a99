"""The ``kafka-pcap`` data source: pcap/pcapng captures read as exchange or record rows.

    spark.read.format("kafka-pcap").option("ports", "9092").load("captures/*.pcap")
    spark.read.format("kafka-pcap").option("level", "records").load(["s3://bucket/a.pcap", "s3://bucket/b.pcap"])

Options:
    ports   the brokers' ports, comma-separated; without it each connection's client is detected
    level   exchanges (default: one row per request/response), records (one row per record), or topic_names
            (the topic id/name pairs the answers carry: a first pass, see kafkaproto.spark.read_named)
    bodies  true (default) or false: whether exchange rows carry the request and response as JSON; exact keeps
            records fields as base64 bytes, so that the rows read back into the messages captured
            (kafkaproto.capture.tables.exchange_of, and so kafkaproto.replay.Plan.of_rows)
    splits  how many tasks each file is split into (default: one per 64 MiB, at most 32)
    topicNames  topic id/name pairs to name topics by, beside those the traffic carries (they come first): a
            JSON object {"<topic id>": "<name>"}, or a file (JSON, CSV id,name, a KRaft metadata log) the driver
            reads
    namesPass  true (default): before any task starts, the driver reads every file once for the pairs the
            traffic carries (only the answers that pair topic IDs with names, and Produce and Fetch bodies, are
            decoded: a small part of a full read) and gives them to every task, so that every topic ID any file
            or connection names is named in every row, as ``kafkaproto capture`` names them; the IDs no pair
            names are counted and said once (a warning of the logger kafkaproto.spark). false: no such pass,
            each task names what its own split's answers and topicNames name (for reads too large to pass
            through the driver: kafkaproto.spark.read_named gathers the pairs with a Spark job instead)
    extensions  kafkaproto extensions to load in every task, comma-separated (see registry.load_extensions);
            each must be installed where the tasks run, as any Python package a job uses
    ring    true: the files are a ring a capture tool rotated (tcpdump -C/-G/-W, dumpcap -b), whose connections
            go on from file to file: each file's exchanges are those ending in it, paired with requests from the
            files before it (see kafkaproto.capture.ring); what a stream over the same files gives
    lookback  with ring and in a stream: how many files before each file are read to pair its answers with
            their requests (default 2; 0 reads every file alone)
    maxFilesPerTrigger, startingPosition  in a stream: files per micro-batch at most (default: all there are);
            earliest (default: the files already there, then new ones) or latest (only files finished after
            the query starts; those already there are read for their topic names alone)
    idle    in a stream: seconds a file must go without growing to be read though no newer file has come
            (default 60), so that the last file of a capture that stopped is read; a file read so that grows
            again has the rest read later, each exchange once (see kafkaproto.spark.stream)

``spark.readStream.format("kafka-pcap").load("ring/")`` reads a folder a capture tool writes a ring into, as a
stream: see kafkaproto.spark.stream.

Paths are local paths, globs and directories, or URIs of any filesystem pyarrow reaches (s3://, gs://, hdfs://,
file://). Several paths: ``load([...])``, or one string with commas between them. A glob on a remote filesystem is
expanded with fsspec (with the filesystem's own package, e.g. s3fs), which must then be installed.

Planning: every file is one task or more. A file of n splits is read by n tasks, each reading the whole file and
decoding only the TCP connections whose stable hash is its index (``read_capture(partition=(i, n))``), so every
exchange comes out once, with the connection number a whole read gives it.

Nothing about a file fails the job: a damaged or truncated capture ends with a "capture error" row carrying the
message (after the rows that could be read), and so does a path that cannot be opened or listed (permission, no such
file, a glob matching nothing). At the records level these are rows whose ``error`` says "capture error: ...".
Bad option values do fail, at planning, before any task runs.
"""

from pyspark.sql.datasource import DataSource, DataSourceReader

from .. import registry
from . import naming
from . import schema as _schema
from .planning import NAME, ReadOptions, expand, in_ring_order, plan, plan_ring
from .reading import read_split


class KafkaPcapReader(DataSourceReader):
    def __init__(self, options, struct):
        self.options = options
        self.struct = struct
        self.unnamed = None  # the topic ids no pair names, once planned with the first pass

    def partitions(self):
        files = expand(self.options.paths)
        if self.options.ring:
            files = in_ring_order(files)
            splits = plan_ring(files, self.options.lookback, self.options.splits)
        else:
            splits = plan(files, self.options.splits)
        if self.options.level != _schema.TOPIC_NAMES and self.options.names_pass:
            given = self.options.topic_names.known if self.options.topic_names is not None else None
            learned = naming.ask_cluster(naming.gather(files, self.options, given, in_ring=self.options.ring),
                                         self.options.bootstrap)
            pairs = dict(learned.names.items())
            for split in splits:
                split.topic_names = pairs
            self.unnamed = learned.unnamed()
            naming.say_unnamed(self.unnamed)
        return splits

    def read(self, partition):
        registry.use_extensions(self.options.extensions)  # a worker may run other queries' tasks too
        return read_split(partition, self.options, _schema.arrow_schema_of(self.struct))


class KafkaPcapDataSource(DataSource):
    """``spark.read.format("kafka-pcap")``: see the module docstring for options and columns."""

    @classmethod
    def name(cls):
        return NAME

    def schema(self):
        return _schema.struct_for(ReadOptions(self.options).level)

    def reader(self, schema):
        return KafkaPcapReader(ReadOptions(self.options), schema)

    def streamReader(self, schema):
        from .stream import KafkaPcapStreamReader

        return KafkaPcapStreamReader(ReadOptions(self.options), schema)
