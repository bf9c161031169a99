"""kafkaproto.spark: the kafka-pcap data source and the UDFs give what kafkaproto gives directly.

One local Spark session (local[2]) serves the whole module; each test runs as few Spark jobs as it can, since a
job costs seconds here. Expected rows come from kafkaproto.capture (read_capture, tables) and kafkaproto.records,
cast to the types Spark holds (timestamps in microseconds) with pyarrow's own cast.
"""

import json
import os
import random
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.types import BinaryType, IntegerType, StringType, StructField, StructType  # noqa: E402

from kafkaproto import decode_request, decode_response, records, split_frames  # noqa: E402
from kafkaproto import spark as kspark  # noqa: E402
from kafkaproto.capture import CAPTURE_ERROR, TopicNames, read_capture, tables, walk  # noqa: E402
from kafkaproto.jsonview import to_json  # noqa: E402
from kafkaproto.registry import api  # noqa: E402
from kafkaproto.spark import planning, reading, schema, udfs  # noqa: E402
from pcap_streams import tcp_streams  # noqa: E402

# Under pytest -n these tests share one worker, so that one Spark session serves them; the Spark layer is the same
# code over either codec implementation (conftest.py: the pure-Python pass).
pytestmark = [pytest.mark.xdist_group("spark"), pytest.mark.above_the_codecs]

CAPTURES = sorted((Path(__file__).parent / "data" / "captures").glob("*.pcap"))
JAVA_431, JAVA_431_PORT = CAPTURES[[p.name for p in CAPTURES].index("java-4.3.1.pcap")], 59341


# For the whole session: under pytest -n a worker may run other modules' tests between these, and a module-scoped
# session would be stopped and started again each time.
@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    if os.environ.get("KAFKAPROTO_PURE") == "1":
        pytest.skip("the Spark layer does not depend on the codecs in use; the compiled pass checks it")
    # Spark's Python workers start in the JVM's working directory and put it first on sys.path: started in the
    # source checkout, they would import its kafkaproto instead of the installed one.
    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("spark"))
    try:
        session = kspark.session("local[2]", "kafkaproto-tests", config={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.memory": "1g",
        })
    finally:
        os.chdir(here)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# ---- what the rows should be ------------------------------------------------------------------------------------

def spark_rows(df):
    return df.toArrow().to_pylist()


def expected_rows(paths, level="exchanges", ports=None, bodies=True):
    """read_capture + tables for each file, cast to the data source's types by pyarrow; topic ids named by every
    pair the files carry, as kafkaproto capture names them."""
    struct = schema.struct_for(level)
    target = schema.arrow_schema_of(struct)
    names = TopicNames()
    for path in paths:
        with open(path, "rb") as source:
            for _ in read_capture(source, ports=ports, names=names):
                pass
    rows = []
    for path in paths:
        # opened here, as the data source opens its files: a path that is no capture raises, a file object gives
        # a status row
        with open(path, "rb") as source:
            exchanges = read_capture(source, ports=ports, name=str(path), names=names)
            if level == "records":
                batches = list(tables.record_batches(exchanges, file=str(path)))
                arrow = tables.record_schema()
            else:
                batches = list(tables.exchange_batches(exchanges, file=str(path), bodies=bodies))
                arrow = tables.exchange_schema()
        table = pa.Table.from_batches(batches, schema=arrow)
        rows.extend(table.cast(target, safe=False).to_pylist())  # unsafe: ns -> us truncates
    return rows


def key(row):
    return repr(sorted(row.items()))


def same_rows(actual, expected):
    assert len(actual) == len(expected)
    assert sorted(map(key, actual)) == sorted(map(key, expected))


# ---- the data source ------------------------------------------------------------------------------------------

def test_schema_is_the_documented_one():
    struct = schema.exchange_struct()
    assert struct.fieldNames() == [name for name, _, _ in tables.EXCHANGE_FIELDS]
    assert {f.name: f.metadata["comment"] for f in struct} == {n: doc for n, _, doc in tables.EXCHANGE_FIELDS}
    types = {f.name: f.dataType.simpleString() for f in struct}
    assert types["request_time"] == "timestamp" and types["api_key"] == "smallint"
    assert types["partition_errors"] == "array<struct<topic:string,partition:int,error_code:smallint>>"
    assert schema.record_struct().fieldNames() == tables.record_schema().names
    aborted = schema.record_struct()["aborted"]
    assert aborted.dataType.simpleString() == "boolean" and aborted.nullable
    assert aborted.metadata["comment"] == tables.RECORD_OUTCOME[0][2]
    assert {f.dataType.simpleString() for f in schema.record_struct() if f.name in ("time", "timestamp")} == \
        {"timestamp"}


def test_exchanges_are_those_read_capture_gives(spark):
    df = spark.read.format("kafka-pcap").load(str(CAPTURES[0].parent / "*.pcap"))
    assert df.schema == schema.exchange_struct()
    actual = spark_rows(df)
    same_rows(actual, expected_rows(CAPTURES))
    assert {r["file"] for r in actual} == {str(p) for p in CAPTURES}
    assert any(r["status"] == "ok" and r["api_name"] == "Fetch" and json.loads(r["response"])["responses"]
               for r in actual)


def test_records_are_those_record_batches_give(spark):
    df = spark.read.format("kafka-pcap").option("level", "records").load([str(p) for p in CAPTURES])
    actual = spark_rows(df)
    same_rows(actual, expected_rows(CAPTURES, "records"))
    assert len(actual) >= 40 * len(CAPTURES) and all(r["error"] is None for r in actual)
    # The Java captures' transactions, as their read_committed consumer's Fetch answers tell them apart.
    fetched = {(r["value"], r["aborted"]) for r in actual
               if r["side"] == "response" and r["transactional"] and not r["control"]}
    assert {(b"aborted", True), (b"committed", False)} <= fetched


def test_splits_read_every_exchange_once(spark):
    paths = CAPTURES[:3]
    plan = planning.plan(planning.expand([str(p) for p in paths]), 3)
    assert [(s.file.name, s.index, s.count) for s in plan] == [(str(p), i, 3) for p in paths for i in range(3)]
    df = spark.read.format("kafka-pcap").option("splits", "3").load(",".join(str(p) for p in paths))
    assert df.rdd.getNumPartitions() == 9
    # Every exchange once, with the connection number a whole read of its file gives.
    same_rows(spark_rows(df), expected_rows(paths))


def test_ports_bodies_and_a_list_of_paths(spark):
    paths = [JAVA_431, CAPTURES[0]]
    df = (spark.read.format("kafka-pcap").option("ports", str(JAVA_431_PORT)).option("bodies", "false")
          .load([str(p) for p in paths]))
    actual = spark_rows(df)
    same_rows(actual, expected_rows(paths, ports=[JAVA_431_PORT], bodies=False))
    assert {r["file"] for r in actual} == {str(JAVA_431)}  # nothing of the other file is on that port
    assert {r["broker_port"] for r in actual} == {JAVA_431_PORT}
    assert all(r["request"] is None and r["response"] is None for r in actual)


def damaged_captures(tmp_path):
    """A good capture, a truncated one, one of random bytes: (good, truncated, random) paths."""
    good = tmp_path / "good.pcap"
    shutil.copy(CAPTURES[0], good)
    data = JAVA_431.read_bytes()
    truncated = tmp_path / "truncated.pcap"
    truncated.write_bytes(data[:len(data) // 2 + 7])
    noise = tmp_path / "noise.pcap"
    noise.write_bytes(random.Random(7).randbytes(5000))
    return good, truncated, noise


def test_damaged_files_give_status_rows(spark, tmp_path):
    good, truncated, noise = damaged_captures(tmp_path)
    pattern = str(tmp_path / "*.pcap")
    actual = spark_rows(spark.read.format("kafka-pcap").load(pattern))
    same_rows(actual, expected_rows([good, truncated, noise]))
    errors = {r["file"]: r["error"] for r in actual if r["status"] == CAPTURE_ERROR}
    assert set(errors) == {str(truncated), str(noise)}
    assert "truncated" in errors[str(truncated)] and "not a pcap" in errors[str(noise)]
    assert sum(r["file"] == str(truncated) and r["status"] == "ok" for r in actual) > 10

    # At the records level, split in two: each damaged file still says so, once.
    rows = spark_rows(spark.read.format("kafka-pcap").option("level", "records").option("splits", 2).load(pattern))
    errors = sorted((r["file"], r["error"]) for r in rows if r["error"])
    assert [f for f, _ in errors] == sorted([str(noise), str(truncated)])
    assert all(e.startswith("capture error: ") for _, e in errors)
    assert sum(r["file"] == str(good) for r in rows) == len(expected_rows([good], "records"))


def test_unreadable_paths_are_rows_not_failures(spark, tmp_path):
    missing, nothing, folder = tmp_path / "missing.pcap", tmp_path / "none*.pcap", tmp_path / "folder"
    folder.mkdir()
    (folder / "dangling.pcap").symlink_to(tmp_path / "gone")
    locked = folder / "locked.pcap"
    if os.geteuid() != 0:  # root reads whatever the mode says
        shutil.copy(CAPTURES[0], locked)
        locked.chmod(0)
    rows = spark_rows(spark.read.format("kafka-pcap").load([str(missing), str(nothing), str(folder)]))
    assert all(r["status"] == CAPTURE_ERROR for r in rows)
    errors = {r["file"]: r["error"] for r in rows}
    assert "No such file" in errors[str(missing)] and "no file matches" in errors[str(nothing)]
    assert "No such file" in errors[str(folder / "dangling.pcap")]
    if os.geteuid() != 0:
        assert "Permission denied" in errors[str(locked)]
    assert len(rows) == len(errors) == (3 if os.geteuid() == 0 else 4)


def test_a_file_gone_after_planning_is_a_row():
    file = planning.CaptureFile("gone.pcap", ("local", "/nonexistent/gone.pcap"), size=100)
    options = planning.ReadOptions({"path": "gone.pcap"})
    for level in ("exchanges", "records"):
        options.level = level
        target = schema.arrow_schema_of(schema.struct_for(level))
        rows = [r for b in reading.read_split(planning.CaptureSplit(file, 0, 1), options, target)
                for r in b.to_pylist()]
        assert len(rows) == 1 and rows[0]["file"] == "gone.pcap" and "cannot read gone.pcap" in rows[0]["error"]


# ---- planning and options, without Spark --------------------------------------------------------------------

def test_split_count_follows_size():
    file = planning.CaptureFile("x", ("local", "x"), size=200 << 20)
    assert planning.split_count(file) == 4
    assert planning.split_count(planning.CaptureFile("x", ("local", "x"), size=1)) == 1
    assert planning.split_count(planning.CaptureFile("x", ("local", "x"), size=1 << 40)) == 32
    assert planning.split_count(file, splits=7) == 7
    assert planning.split_count(planning.CaptureFile("x", error="gone"), splits=7) == 1


def test_exact_bodies_read_back_into_the_capture_and_replay(spark):
    """bodies=exact keeps records fields as bytes: the rows read back into the very messages captured, so the
    exchanges a job selected can be replayed (kafkaproto.replay.Plan.of_rows) as the file itself is."""
    from kafkaproto.replay import Plan

    path = next(p for p in CAPTURES if p.stem == "java-4.3.1")
    rows = spark.read.format("kafka-pcap").option("bodies", "exact").load(str(path)).collect()
    from_rows, from_file = Plan.of_rows(rows), Plan.of(read_capture(str(path)))

    def steps(plan):
        return [(s.connection, s.skip, s.after, s.rank, s.header, s.request, s.answer) for s in plan.steps]

    assert len(from_file.steps) > 50 and steps(from_rows) == steps(from_file)
    assert from_rows.not_replayable == from_file.not_replayable


def test_topics_are_named_whichever_task_reads_them(spark, tmp_path):
    """A capture whose answers name no topic, beside one whose answers do: a plain read names the first's topic IDs
    from the second (another file, another task), as read_named does and kafkaproto capture does."""
    from test_capture_names import unnamed_capture

    bare = tmp_path / "bare.pcap"
    bare.write_bytes(unnamed_capture(JAVA_431))
    paths = [str(JAVA_431), str(bare)]
    alone = spark_rows(spark.read.format("kafka-pcap").option("level", "records").load(str(bare)))
    assert alone and {row["topic"] for row in alone} == {None}
    plain = spark_rows(spark.read.format("kafka-pcap").option("level", "records").load(paths))
    from_bare = [row for row in plain if row["file"] == str(bare)]
    assert len(from_bare) == len(alone) and {row["topic"] for row in plain} == {"java-topic"}
    names = kspark.topic_names(spark, paths)
    assert list(names.values()) == ["java-topic"]
    produces = spark_rows(kspark.read_named(spark, paths).where(f"file = '{bare}' AND api_name = 'Produce'"))
    assert produces and all("java-topic" in row["topics"] for row in produces)


def tcp_connection(client_port, exchanges, start_ns):
    """Ethernet packets of one connection from 10.0.0.1:client_port to 10.0.0.2:9092 carrying
    (api version, request, response) exchanges."""
    from capture_files import ethernet, ipv4, tcp
    from kafkaproto import encode_request, encode_response
    from kafkaproto.capture.link import ACK, SYN
    from kafkaproto.messages import RequestHeader, ResponseHeader

    ends = {True: ("10.0.0.1", "10.0.0.2", client_port, 9092), False: ("10.0.0.2", "10.0.0.1", 9092, client_port)}
    packets = [(start_ns, ethernet(ipv4("10.0.0.1", "10.0.0.2", tcp(client_port, 9092, 0, flags=SYN)))),
               (start_ns, ethernet(ipv4("10.0.0.2", "10.0.0.1", tcp(9092, client_port, 0, ack=1, flags=SYN | ACK))))]
    seq = {True: 1, False: 1}
    for correlation_id, (version, request, response) in enumerate(exchanges):
        header = RequestHeader(request_api_key=request.api_key, request_api_version=version,
                               correlation_id=correlation_id, client_id="tests")
        for from_client, frame in ((True, encode_request(header, request, version)),
                                   (False, encode_response(ResponseHeader(correlation_id=correlation_id), response,
                                                           version))):
            src, dst, sport, dport = ends[from_client]
            packets.append((start_ns + len(packets) * 1_000_000,
                            ethernet(ipv4(src, dst, tcp(sport, dport, seq[from_client], frame)))))
            seq[from_client] += len(frame)
    return packets


def naming_elsewhere(named_id, unnamed_id):
    """A capture of three connections: one whose Metadata answer names named_id "orders", one producing to
    named_id, one producing to unnamed_id, which nothing names."""
    from capture_files import pcap
    from kafkaproto.messages import MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse

    def produce(topic_id):
        batch = records.RecordBatchBuilder()
        batch.append(b"k", b"v", timestamp=1_700_000_000_000)
        request = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            topic_id=topic_id, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch.build())])])
        response = ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(
            topic_id=topic_id, partition_responses=[ProduceResponse.PartitionProduceResponse(index=0)])])
        return 13, request, response

    metadata = (12, MetadataRequest(topics=None), MetadataResponse(topics=[MetadataResponse.MetadataResponseTopic(
        name="orders", topic_id=named_id, partitions=[MetadataResponse.MetadataResponsePartition(partition_index=0)])]))
    start = 1_700_000_000_000_000_000
    packets = tcp_connection(50001, [metadata], start) + tcp_connection(50002, [produce(named_id)], start + 10**9) \
        + tcp_connection(50003, [produce(unnamed_id)], start + 2 * 10**9)
    return pcap(sorted(packets, key=lambda p: p[0]))


def test_a_name_from_another_connection_and_another_task(spark, tmp_path, caplog):
    """The Metadata answer on one connection, the Produce using its ID on another that hashes to another split:
    every row is named, whichever split reads it; an ID nothing names is counted and said once, on the driver."""
    import io
    import logging

    from kafkaproto.spark.datasource import KafkaPcapReader
    from kafkaproto.uuid import Uuid

    named_id, unnamed_id = Uuid.random(), Uuid.random()
    path = tmp_path / "elsewhere.pcap"
    path.write_bytes(naming_elsewhere(named_id, unnamed_id))

    def split_of(api_name, n):
        return {i for i in range(n) for ex in read_capture(io.BytesIO(path.read_bytes()), partition=(i, n))
                if ex.api_name == api_name}

    # Some split count puts the Metadata connection and a Produce connection in different tasks.
    splits = next(n for n in range(2, 9) if split_of("Metadata", n) != split_of("Produce", n))
    options = {"path": str(path), "level": "records", "splits": str(splits)}

    def task_rows(**more):
        opts = planning.ReadOptions({**options, **more})
        source = KafkaPcapReader(opts, schema.struct_for("records"))
        parts = source.partitions()
        assert len(parts) == splits
        return source, [row for part in parts for batch in source.read(part) for row in batch.to_pylist()]

    _, split_alone = task_rows(namesPass="false")  # each task names only what its own connections name
    assert {(row["topic_id"], row["topic"]) for row in split_alone} == {(str(named_id), None), (str(unnamed_id), None)}
    caplog.set_level(logging.WARNING, logger="kafkaproto.spark")
    source, rows = task_rows()
    assert {(row["topic_id"], row["topic"]) for row in rows} == {(str(named_id), "orders"), (str(unnamed_id), None)}
    assert source.unnamed == [str(unnamed_id)]
    said = [r.getMessage() for r in caplog.records if r.name == "kafkaproto.spark"]
    assert len(said) == 1 and "1 topic id named by no Metadata answer" in said[0] and str(unnamed_id) in said[0]
    # A pair given (option topicNames) names what the traffic does not.
    given = spark.read.format("kafka-pcap").options(**options).option(
        "topicNames", json.dumps({str(unnamed_id): "given"})).load()
    assert {(row.topic_id, row.topic) for row in given.select("topic_id", "topic").distinct().collect()} == \
        {(str(named_id), "orders"), (str(unnamed_id), "given")}


def test_a_live_cluster_names_what_the_traffic_does_not(tmp_path):
    """Option bootstrapServers: the driver asks the cluster's Metadata for the IDs the traffic leaves unnamed (the
    traffic's own pairs first); a cluster that cannot be asked fails the read, naming the option."""
    from kafkaproto.broker import Broker
    from kafkaproto.messages import CreateTopicsRequest
    from kafkaproto.spark.datasource import KafkaPcapReader
    from kafkaproto.uuid import Uuid
    from test_kafka_broker import RawClient

    with Broker() as broker:
        client = RawClient(broker.port)
        try:
            made = client.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
                name="from-the-cluster", num_partitions=1, replication_factor=1)], timeout_ms=5000), 7).body
        finally:
            client.close()
        cluster_id = made.topics[0].topic_id
        named_id = Uuid.random()
        path = tmp_path / "elsewhere.pcap"
        path.write_bytes(naming_elsewhere(named_id, cluster_id))
        options = {"path": str(path), "level": "records", "bootstrapServers": broker.bootstrap_servers}
        source = KafkaPcapReader(planning.ReadOptions(options), schema.struct_for("records"))
        rows = [row for part in source.partitions() for batch in source.read(part) for row in batch.to_pylist()]
        assert {(row["topic_id"], row["topic"]) for row in rows} == {
            (str(named_id), "orders"), (str(cluster_id), "from-the-cluster")}
        assert source.unnamed == []
        port = broker.port
    gone = KafkaPcapReader(planning.ReadOptions({**options, "bootstrapServers": f"127.0.0.1:{port}"}),
                           schema.struct_for("records"))
    with pytest.raises(ValueError, match="option bootstrapServers: cannot connect"):
        gone.partitions()


@pytest.mark.parametrize("options, message", [
    ({"path": "x", "level": "packets"}, "level must be one of"),
    ({"path": "x", "ports": "9092,kafka"}, "port numbers"),
    ({"path": "x", "ports": "70000"}, "outside 1..65535"),
    ({"path": "x", "bodies": "maybe"}, "true, false or exact"),
    ({"path": "x", "splits": "0"}, "at least 1"),
    ({}, "needs a path"),
])
def test_bad_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        planning.ReadOptions(options)


def test_uris_and_remote_globs_are_listed(tmp_path):
    for p in CAPTURES[:2]:
        shutil.copy(p, tmp_path / p.name)
    (tmp_path / "_SUCCESS").write_bytes(b"")
    files = planning.expand([tmp_path.as_uri()])  # a directory through pyarrow.fs
    assert [f.name for f in files] == [str(tmp_path / p.name) for p in CAPTURES[:2]]
    assert [f.size for f in files] == [p.stat().st_size for p in CAPTURES[:2]]
    assert all(f.location[0] == "local" for f in files)  # file:// is read as a local path
    remote = planning._expand_remote(tmp_path.as_uri())  # the way s3:// and hdfs:// directories are listed
    assert [(f.name, f.size) for f in remote] == [((tmp_path / p.name).as_uri(), p.stat().st_size)
                                                  for p in CAPTURES[:2]]
    with planning.open_capture(remote[0].location) as stream:
        assert stream.read() == CAPTURES[0].read_bytes()
    pytest.importorskip("fsspec")
    listed = planning._expand_fsspec(tmp_path.as_uri() + "/*.pcap")
    assert [f.name for f in listed] == [(tmp_path / p.name).as_uri() for p in CAPTURES[:2]]
    options = planning.ReadOptions({"path": "x"})
    struct = schema.arrow_schema_of(schema.exchange_struct())
    for file in listed:  # read back through fsspec, as a task would
        batches = reading.read_split(planning.CaptureSplit(file, 0, 1), options, struct)
        assert sum(b.num_rows for b in batches) == sum(1 for _ in read_capture(file.location[1][len("file://"):]))


def test_remote_globs_without_fsspec_say_what_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "fsspec", None)
    with pytest.raises(ImportError, match="globs on remote filesystems are expanded with fsspec"):
        planning.expand(["s3://bucket/captures/*.pcap"])


# ---- UDFs -----------------------------------------------------------------------------------------------------

def frames(path, limit=40):
    """(request frame, response frame or None, api key, version) of a capture, from tests/pcap_streams.py."""
    streams = tcp_streams(path.read_bytes())
    out = []
    for (src, dst), upstream in streams.items():
        if dst[1] != JAVA_431_PORT:
            continue
        requests = {}
        for frame in split_frames(upstream):
            header = decode_request(frame).header
            requests[header.correlation_id] = [frame, None, header.request_api_key, header.request_api_version]
        for frame in split_frames(streams.get((dst, src), b"")):
            requests[int.from_bytes(frame[:4], "big", signed=True)][1] = frame
        out.extend(requests.values())
    return out[:limit]


FRAMES = StructType([StructField("frame", BinaryType()), StructField("response", BinaryType()),
                     StructField("api_key", IntegerType()), StructField("api_version", IntegerType())])


def compact(message):
    return json.dumps(to_json(message), separators=(",", ":"))


@pytest.mark.parametrize("kind", ["arrow_udf", "python_udf"])
def test_decode_udfs_match_decoding_directly(spark, monkeypatch, kind):
    if kind == "python_udf":  # what Spark 4.0, without arrow_udf, gets
        monkeypatch.setattr(udfs, "ARROW_UDF", None)
    elif udfs.ARROW_UDF is None:
        pytest.skip("this pyspark has no arrow_udf")
    rows = [(bytes(f), bytes(r) if r else None, k, v) for f, r, k, v in frames(JAVA_431)]
    sized = rows[0][0]
    rows.append((len(sized).to_bytes(4, "big") + sized, None, None, None))  # with its size prefix
    longest = max(rows, key=lambda r: len(r[0]))
    answered = next(r for r in rows if r[1])
    rows.append((longest[0][:len(longest[0]) // 2], answered[1][:5], answered[2], answered[3]))  # cut short
    rows.append((b"\xff\xff", b"\x00", 999, 0))                            # neither reads
    rows.append((None, None, None, None))
    df = spark.createDataFrame(rows, FRAMES).select(
        udfs.decode_request("frame").alias("request"),
        udfs.decode_response("response", "api_key", F.col("api_version")).alias("response"))
    got = [(r["request"], r["response"]) for r in spark_rows(df)]
    assert len(got) == len(rows)
    for (frame, response, api_key, version), (req, resp) in zip(rows[:-4], got):
        decoded = decode_request(frame)
        assert req == {"api_key": api_key, "api_name": api(api_key).name, "api_version": version,
                       "correlation_id": decoded.header.correlation_id, "client_id": decoded.header.client_id,
                       "request": compact(decoded.body), "error": None}
        if response is None:
            assert resp is None
        else:
            answer = decode_response(response, api_key, version)
            assert resp == {"correlation_id": decoded.header.correlation_id, "api_version": answer.version,
                            "response": compact(answer.body), "error": None}
    prefixed, cut, garbage, null = got[-4:]
    assert prefixed[0] == got[0][0]
    assert cut[0]["error"] and cut[0]["request"] is None and cut[0]["api_key"] == longest[2]
    assert cut[1]["error"] and cut[1]["response"] is None and cut[1]["correlation_id"] is not None
    assert garbage[0]["error"] and garbage[0]["api_key"] is None and garbage[1]["error"]
    assert null == (None, None)


def test_sql_functions(spark):
    frame, response, api_key, version = frames(JAVA_431, limit=1)[0]
    spark.createDataFrame([(bytes(frame), bytes(response), api_key, version)], FRAMES).createOrReplaceTempView("f")
    row = spark.sql("SELECT kafka_decode_request(frame).request AS req, "
                    "variant_get(parse_json(kafka_decode_response(response, api_key, api_version).response), "
                    "'$.throttle_time_ms', 'int') AS throttle FROM f").collect()[0]
    assert row.req == compact(decode_request(frame).body)
    assert row.throttle == decode_response(response, api_key, version).body.throttle_time_ms


def records_fields(path):
    """(topic, partition, records bytes) of every records field in a capture's decoded bodies."""
    out = []
    for ex in read_capture(str(path)):
        for body in (ex.request, ex.response):
            if body is not None:
                found = []
                walk(body, {}, [], records=found)
                out.extend((topic, partition, bytes(data)) for topic, _, partition, data in found)
    return out


def test_explode_records_matches_to_arrow(spark):
    fields = records_fields(JAVA_431) + records_fields(CAPTURES[0])
    corrupt = bytearray(fields[0][2])
    corrupt[-1] ^= 0xFF  # the CRC no longer holds
    fields += [("bad", 0, bytes(corrupt)), ("empty", 1, None)]
    df = spark.createDataFrame(fields, StructType([StructField("topic", StringType()),
                                                   StructField("partition", IntegerType()),
                                                   StructField("records", BinaryType())]))
    exploded = udfs.explode_records(df, "records")
    assert exploded.columns == ["topic", "partition"] + records.arrow_schema().names + ["error"]
    actual = spark_rows(exploded)
    target = schema.arrow_schema_of(udfs.records_struct())
    expected = []
    for topic, partition, data in fields[:-2]:
        table = records.to_arrow(data, allow_partial=True)
        table = table.append_column("error", pa.nulls(table.num_rows, pa.string())).cast(target)
        expected.extend(dict(row, topic=topic, partition=partition) for row in table.to_pylist())
    bad = [r for r in actual if r["topic"] == "bad"]
    assert len(bad) == 1 and "CRC" in bad[0]["error"] and bad[0]["offset"] is None
    same_rows([r for r in actual if r["topic"] != "bad"], expected)
    assert len(expected) > 60 and not any(r["topic"] == "empty" for r in actual)


def test_importing_without_pyspark_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)
    for name in [m for m in sys.modules if m.startswith("kafkaproto.spark")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError, match=r"kafkaproto\[spark\]"):
        __import__("kafkaproto.spark")


def test_the_readme_spark_example_runs(spark, monkeypatch):
    """The README's Spark block, as written, on the test session (kspark.session() returns the active one)."""
    import re
    readme = Path(__file__).resolve().parents[1] / "README.md"
    (block,) = re.findall(r"```python spark\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
    monkeypatch.chdir(readme.parent)
    exec(compile(block, str(readme), "exec"), {})


def test_an_extension_decodes_in_every_task(spark, extension, built_example, tmp_path):
    """option("extensions"): every task loads the extension, which must be installed where tasks run (here: into
    this environment, for the test's length); without the option, its API is unreadable and its tags unknown."""
    import subprocess

    from capture_files import ethernet, ipv4, pcap, tcp
    from kafkaproto import encode_request, encode_response, registry
    from kafkaproto.messages import RequestHeader, ResponseHeader

    delete, metadata, versions = registry.api("DeletePartitions"), registry.api("Metadata"), registry.api(18)
    frames = []
    for correlation_id, (info, version, request, response) in enumerate([
            (versions, 3, versions.request(client_software_name="t", client_software_version="1"),
             versions.response(api_keys=[versions.response.ApiVersion(api_key=10000, min_version=0, max_version=0)])),
            (delete, 0, delete.request(topics=[delete.request.DeletePartitionsTopic(name="t", partitions=[1])]),
             delete.response(responses=[delete.response.DeletePartitionsTopicResult(name="t", partitions=[
                 delete.response.DeletePartitionsPartitionResult(partition_index=1, status_code=1)])])),
            (metadata, 12, metadata.request(topics=None, include_partition_modes=True),
             metadata.response(topics=[metadata.response.MetadataResponseTopic(name="t", partitions=[
                 metadata.response.MetadataResponsePartition(partition_index=1, mode=1)])]))]):
        header = RequestHeader(request_api_key=info.api_key, request_api_version=version,
                               correlation_id=correlation_id, client_id="tests")
        frames.append((True, encode_request(header, request, version)))
        frames.append((False, encode_response(ResponseHeader(correlation_id=correlation_id), response, version)))
    from kafkaproto.capture.link import ACK, SYN

    start = 1_700_000_000_000_000_000
    packets = [(start, ethernet(ipv4("10.0.0.1", "10.0.0.2", tcp(50000, 9092, 0, flags=SYN)))),
               (start, ethernet(ipv4("10.0.0.2", "10.0.0.1", tcp(9092, 50000, 0, ack=1, flags=SYN | ACK))))]
    seq = {True: 1, False: 1}
    for i, (from_client, frame) in enumerate(frames):
        ports = (50000, 9092) if from_client else (9092, 50000)
        hosts = ("10.0.0.1", "10.0.0.2") if from_client else ("10.0.0.2", "10.0.0.1")
        packets.append((start + (i + 1) * 1_000_000,
                        ethernet(ipv4(*hosts, tcp(*ports, seq[from_client], frame)))))
        seq[from_client] += len(frame)
    path = tmp_path / "extended.pcap"
    path.write_bytes(pcap(packets))

    installed = subprocess.run([sys.executable, "-c", "import partition_deletion"], cwd=tmp_path,
                               capture_output=True).returncode == 0
    if not installed:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", str(built_example.wheel)],
                       check=True)
    try:
        reader = spark.read.format("kafka-pcap").option("ports", "9092")
        plain = spark_rows(reader.load(str(path)))  # first, while no task has loaded the extension
        extended = spark_rows(reader.option("extensions", "partition_deletion").load(str(path)))
        # The workers that loaded it run the next query's tasks too: a query that does not name it reads as before.
        after = spark_rows(spark.read.format("kafka-pcap").option("ports", "9092").load(str(path)))
    finally:
        if not installed:
            subprocess.run([sys.executable, "-m", "pip", "uninstall", "--quiet", "--yes", "partition-deletion"],
                           check=True)
    assert [(r["api_name"], r["status"]) for r in extended] == [
        ("ApiVersions", "ok"), ("DeletePartitions", "ok"), ("Metadata", "ok")]
    assert json.loads(extended[1]["request"])["topics"] == [{"name": "t", "partitions": [1]}]
    assert json.loads(extended[2]["response"])["topics"][0]["partitions"][0]["mode"] == 1
    if "partition_deletion" in os.environ.get("KAFKAPROTO_EXTENSIONS", ""):
        return  # the suite runs with the extension loaded everywhere, Spark's workers included
    assert after == plain
    assert [r["status"] == "ok" for r in plain] == [True, False, True]
    assert plain[1]["api_key"] == 10000 and plain[1]["request"] is None and "10000" in plain[1]["error"]
    partition = json.loads(plain[2]["response"])["topics"][0]["partitions"][0]
    assert "mode" not in partition and partition["unknown_tagged_fields"] == {"0": "AQ=="}
