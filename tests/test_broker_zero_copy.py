"""Zero-copy fetch: FileRegions as record values (both codec implementations), segment files held open while a
region of them is out, and the broker's plain-text Fetch answered with sendfile(2), byte for byte what reading
the log gives. The produce side: pipelined requests received in place, answered in order, and read ahead no
further than the server's bound while a client does not read its answers."""

import os
import threading
import time

import pytest

from kafkaproto import records
from kafkaproto.broker import Broker
from kafkaproto.broker import stream as broker_stream
from kafkaproto.broker.state import log as segment_log
from kafkaproto.messages import CreateTopicsRequest, FetchRequest, MetadataRequest, ProduceRequest, RequestHeader
from kafkaproto.protocol import FileRegion, FrameBuffer, decode_response, encode_request, frame_functions

from impls import IMPLS, classes, impl_param
from test_kafka_broker import RawClient, _recv_exact, eventually

pytestmark = pytest.mark.above_the_codecs


def region_file(tmp_path, data):
    path = tmp_path / "segment.log"
    path.write_bytes(b"x" * 100 + data + b"y" * 100)
    return os.open(path, os.O_RDONLY)


def fetch_response(cls, payloads):
    """A FetchResponse of one topic whose partitions hold payloads (bytes or FileRegions)."""
    return cls(throttle_time_ms=0, error_code=0, session_id=0, responses=[cls.FetchableTopicResponse(
        topic="t", partitions=[cls.PartitionData(partition_index=i, high_watermark=5, last_stable_offset=5,
                                                 log_start_offset=0, records=payload)
                               for i, payload in enumerate(payloads)])])


@impl_param
@pytest.mark.parametrize("version", [4, 11, 12, 16])
@pytest.mark.parametrize("size", [0, 10, 5000, 300_000])
def test_a_file_region_encodes_as_its_bytes(impl, version, size, tmp_path):
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    fd = region_file(tmp_path, data)
    try:
        released = []
        region = FileRegion(fd, 100, size, lambda: released.append(1))
        cls = classes(impl)["FetchResponse"]
        frames = frame_functions(impl)
        header = classes(impl)["ResponseHeader"](correlation_id=7)
        want = frames.encode_response(header, fetch_response(cls, [b"small", data, b"z" * 5000]), version)
        body = fetch_response(cls, [b"small", region, b"z" * 5000])
        assert frames.encode_response(header, body, version) == want
        parts = frames.encode_response_parts(header, body, version)
        # bytes, the region as it was given (left in its file), bytes: joined, the frame
        assert [type(p) for p in parts] == [bytes, FileRegion, bytes] and parts[1] is region
        assert b"".join(p.read() if isinstance(p, FileRegion) else p for p in parts) == want
        assert released == []  # encoding lends the region; the sender releases it
        if impl == "compiled" and "python" in IMPLS:  # the same parts from the pure-Python twin
            twin = frame_functions("python").encode_response_parts(
                classes("python")["ResponseHeader"](correlation_id=7),
                fetch_response(classes("python")["FetchResponse"], [b"small", region, b"z" * 5000]), version)
            assert [p if isinstance(p, bytes) else p.size for p in twin] == \
                [p if isinstance(p, bytes) else p.size for p in parts]
        region.release()
        region.release()
        assert released == [1]
    finally:
        os.close(fd)


@impl_param
def test_a_region_the_file_cannot_fill_is_an_error_not_short_bytes(impl, tmp_path):
    fd = region_file(tmp_path, b"abc")
    try:
        cls = classes(impl)["FetchResponse"]
        header = classes(impl)["ResponseHeader"](correlation_id=1)
        body = fetch_response(cls, [FileRegion(fd, 100, 5000)])
        with pytest.raises(OSError, match="5000 bytes at 100: the file ends"):
            frame_functions(impl).encode_response(header, body, 12)
        with pytest.raises(ValueError, match="at least 0"):
            FileRegion(fd, -1, 3)
    finally:
        os.close(fd)


def test_a_region_keeps_its_segment_file_open_until_released(tmp_path):
    files = segment_log.OpenFiles(1)
    plog = segment_log.PartitionLog(str(tmp_path / "p-0"), files=files)
    data = b"".join(_batch([b"v" * 1000]) for _ in range(100))
    plog.append(data, segment_log.parse_batches(data))
    want = bytearray(data)  # as the log holds them: offsets and the leader epoch filled in
    for i, batch in enumerate(segment_log.parse_batches(data)):
        want[batch.position:batch.position + 8] = i.to_bytes(8, "big")
        want[batch.position + 12:batch.position + 16] = bytes(4)
    regions = []
    region = plog.read(0, 1 << 20, regions=regions)
    assert regions == [region] and isinstance(region, FileRegion) and region.size == len(data)
    assert plog.read(0, 100, regions=regions) == want[:len(data) // 100]  # one small batch: plain bytes
    segment = plog.segments[0]
    # Another file needs the one slot: the held one stays open (over the bound, for as long as it is held).
    other = segment_log.PartitionLog(str(tmp_path / "p-1"), files=files)
    assert segment.is_open and other.segments[0].is_open
    segment.close()  # as retention or a topic's deletion does
    assert segment.is_open
    assert region.read() == want
    region.release()
    assert not segment.is_open
    other.close()
    plog.close()


def test_fetch_over_sendfile_equals_the_log_bytes(tmp_path, monkeypatch):
    """A Fetch of large batches from a plain-text listener: the record bytes go out with sendfile(2) and are
    those the log holds, partition after partition, and a fetch that asks for little gets one whole batch."""
    sent = []
    real = os.sendfile

    def counting(out_fd, in_fd, offset, count, *args, **kwargs):
        done = real(out_fd, in_fd, offset, count, *args, **kwargs)
        sent.append(done)
        return done

    monkeypatch.setattr(os, "sendfile", counting)  # asyncio's loop.sendfile calls it too
    with Broker(log_dir=str(tmp_path / "data")) as broker:
        client = RawClient(broker.port)
        created = client.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="big", num_partitions=2, replication_factor=1)], timeout_ms=10000), 7).body
        assert created.topics[0].error_code == 0
        values = {p: [os.urandom(40_000) for _ in range(12)] for p in range(2)}
        for i in range(0, 12, 3):  # batches of three 40 kB records
            body = ProduceRequest(acks=-1, timeout_ms=10000, topic_data=[ProduceRequest.TopicProduceData(
                name="big", partition_data=[ProduceRequest.PartitionProduceData(
                    index=p, records=_batch(values[p][i:i + 3])) for p in range(2)])])
            assert {r.error_code for t in client.call(body, 9).body.responses for r in t.partition_responses} \
                == {0}

        def fetch(offset, partition_max, version=12):
            body = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=50 << 20, isolation_level=0,
                                session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                                    topic="big", topic_id=created.topics[0].topic_id, partitions=[
                                        FetchRequest.FetchPartition(partition=p, fetch_offset=offset,
                                                                    partition_max_bytes=partition_max)
                                        for p in range(2)])])
            return {p.partition_index: p.records for p in client.call(body, version).body.responses[0].partitions}

        for version in (12, 13):
            got = fetch(0, 1 << 20, version)
            for p in range(2):
                assert [r.value for b in records.iter_batches(got[p]) for r in b] == values[p]
                assert bytes(got[p]) == (tmp_path / "data" / f"big-{p}" / f"{0:020d}.log").read_bytes()
        assert sum(sent) == 2 * sum(len((tmp_path / "data" / f"big-{p}" / f"{0:020d}.log").read_bytes())
                                    for p in range(2))  # every record byte of both fetches, none copied
        one = fetch(3, 1)  # less than a batch: the whole batch holding offset 3
        assert [[r.value for b in records.iter_batches(one[p]) for r in b] for p in range(2)] == \
            [values[p][3:6] for p in range(2)]
        client.close()


def test_pipelined_requests_are_answered_in_order_and_read_ahead_is_bounded(tmp_path, monkeypatch):
    waiting = []  # bytes of whole requests the connection held, after each read
    received = broker_stream.Stream.buffer_updated

    def spy(stream, nbytes):
        received(stream, nbytes)
        waiting.append(stream._waiting)

    monkeypatch.setattr(broker_stream.Stream, "buffer_updated", spy)
    with Broker(log_dir=str(tmp_path / "data")) as broker:
        client = RawClient(broker.port)
        created = client.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="piped", num_partitions=1, replication_factor=1)], timeout_ms=10000), 7).body
        assert created.topics[0].error_code == 0

        def frame(body, version, correlation_id):
            return encode_request(RequestHeader(request_api_key=body.api_key, request_api_version=version,
                                                correlation_id=correlation_id, client_id="piped"), body, version)

        # 40 Produce requests of 10 and 100 kB sent at once (the larger ones received into buffers of their
        # own), then read: answered in order, at consecutive offsets, and the log holds each record as sent.
        values = [[os.urandom(1000) for _ in range(100 if i % 2 else 10)] for i in range(40)]
        wire = b"".join(frame(ProduceRequest(acks=1, timeout_ms=10000, topic_data=[ProduceRequest.TopicProduceData(
            name="piped", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=_batch(batch))])]),
            9, 1000 + i) for i, batch in enumerate(values))
        sender = threading.Thread(target=client.sock.sendall, args=(wire,))
        sender.start()
        answers = [decode_response(_recv_exact(client.sock, int.from_bytes(_recv_exact(client.sock, 4), "big")),
                                   0, 9) for _ in values]
        sender.join()
        assert [a.header.correlation_id for a in answers] == list(range(1000, 1040))
        starts = [sum(map(len, values[:i])) for i in range(len(values))]
        assert [a.body.responses[0].partition_responses[0].base_offset for a in answers] == starts
        def fetch(partition_max):
            return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=50 << 20, isolation_level=0,
                                session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                                    topic="piped", partitions=[FetchRequest.FetchPartition(
                                        partition=0, fetch_offset=0, partition_max_bytes=partition_max)])])

        got = client.call(fetch(10 << 20), 12).body.responses[0].partitions[0].records
        batches = list(records.iter_batches(got))
        assert [b.base_offset for b in batches] == starts
        assert [[r.value for r in b] for b in batches] == values

        # A client that sends Fetch after Fetch and reads no answer (each of 60 kB, written from memory): the
        # broker handles one request of a connection at a time (Kafka's muting), so once the socket takes no more
        # answers it holds at most the request behind the one in hand, plus what one read brings.
        small = fetch(60_000)
        greedy = RawClient(broker.port)
        requests = [frame(small, 12, i) for i in range(40)]
        threading.Thread(target=greedy.sock.sendall, args=(b"".join(requests),), daemon=True).start()
        eventually(lambda: len(waiting), lambda n: n > 0)
        time.sleep(1)
        assert max(waiting) < 2 * len(requests[0]) + FrameBuffer.SCRATCH_SIZE
        greedy.close()
        assert client.call(MetadataRequest(topics=None), 12).body.topics[0].name == "piped"
        client.close()


def _batch(values):
    builder = records.RecordBatchBuilder()
    for value in values:
        builder.append(None, value, timestamp=1_700_000_000_000)
    return builder.build()
