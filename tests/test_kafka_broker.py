"""kafkaproto against a live Apache Kafka broker (each pinned version, KRaft, single node).

A minimal client: a socket, ``encode_request`` and ``decode_response``. Every
response must decode, and re-encode to the very bytes the broker sent.
"""

import socket
import time

import pytest

from kafka_jvm import _recv_exact
from kafkaproto import Uuid, decode_response, encode_request, encode_response, errors
from kafkaproto.records import RecordBatchBuilder, read_records
from kafkaproto.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
    RequestHeader,
    api,
)

# Under pytest -n these tests share one worker, so that its two Kafka brokers start once.
pytestmark = pytest.mark.xdist_group("kafka-broker")


class RawClient:
    def __init__(self, port, client_id="kafkaproto-tests"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.correlation_id = 0
        self.client_id = client_id

    def send_frame(self, frame):
        self.sock.sendall(frame)
        size = int.from_bytes(_recv_exact(self.sock, 4), "big")
        return _recv_exact(self.sock, size)

    def call(self, body, version):
        """Send one request; returns the decoded Response, checked to re-encode byte for byte."""
        self.correlation_id += 1
        header = RequestHeader(request_api_key=body.api_key, request_api_version=version,
                               correlation_id=self.correlation_id, client_id=self.client_id)
        raw = self.send_frame(encode_request(header, body, version))
        return check_response(raw, body.api_key, version, self.correlation_id)

    def close(self):
        self.sock.close()


def check_response(raw, api_key, version, correlation_id):
    response = decode_response(raw, api_key, version)
    assert response.header.correlation_id == correlation_id
    again = encode_response(response.header, response.body, response.version)
    assert again[4:] == raw, f"{api(api_key).name} v{response.version} does not re-encode to the broker's bytes"
    return response


@pytest.fixture
def client(kafka_broker):
    c = RawClient(kafka_broker.port)
    yield c
    c.close()


def eventually(get, done, timeout=20.0):
    """get() until done(result) holds or timeout seconds pass; returns the last result."""
    deadline = time.monotonic() + timeout
    while True:
        result = get()
        if done(result) or time.monotonic() > deadline:
            return result
        time.sleep(0.2)


def broker_versions(client):
    body = client.call(ApiVersionsRequest(), 0).body
    return {k.api_key: range(k.min_version, k.max_version + 1) for k in body.api_keys}


def test_api_versions_at_every_version(client, kafka_broker):
    ours = api("ApiVersions").valid_versions
    theirs = broker_versions(client)[18]
    for version in ours:
        body = ApiVersionsRequest(client_software_name="kafkaproto", client_software_version="1.0")
        response = client.call(body, version)
        if version in theirs:
            assert response.version == version and response.body.error_code == 0
            assert {k.api_key for k in response.body.api_keys} >= {0, 1, 3, 18, 19, 20}
        else:
            # Above the broker's maximum: it answers at v0 with UNSUPPORTED_VERSION and its own range.
            assert response.version == 0
            assert response.body.error_code == errors.UNSUPPORTED_VERSION.code
            (entry,) = [k for k in response.body.api_keys if k.api_key == 18]
            assert range(entry.min_version, entry.max_version + 1) == theirs


def test_api_versions_above_every_known_version(client):
    """A version nobody defines yet: the request header is patched, the broker still answers at v0."""
    top = api("ApiVersions").valid_versions[-1]
    frame = bytearray(encode_request(
        RequestHeader(request_api_key=18, request_api_version=top, correlation_id=77, client_id="x"),
        ApiVersionsRequest(client_software_name="kafkaproto", client_software_version="1.0"), top))
    frame[6:8] = (top + 1).to_bytes(2, "big")
    response = check_response(client.send_frame(bytes(frame)), 18, top + 1, 77)
    assert response.version == 0 and response.body.error_code == errors.UNSUPPORTED_VERSION.code


def test_topic_ids_delete_and_recreate(client, kafka_broker):
    """KIP-516: a topic's ID names that topic only; after delete and re-create, the old ID is unknown."""
    versions = broker_versions(client)
    old_id = create_topic(client, versions, "kip516", version=7)  # v7: the first to return the topic ID
    assert old_id != Uuid.ZERO

    meta_v = versions[3][-1]
    assert meta_v >= 12
    by_id = client.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=old_id, name=None)]),
                        meta_v).body
    (found,) = by_id.topics
    assert found.error_code == 0 and found.name == "kip516" and found.topic_id == old_id

    delete_v = 6  # the first DeleteTopics version that names topics by ID
    assert delete_v in versions[20]
    deleted = client.call(DeleteTopicsRequest(
        topics=[DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=old_id)], timeout_ms=30000), delete_v).body
    assert [r.error_code for r in deleted.responses] == [0]

    new_id = create_topic(client, versions, "kip516", version=7)
    assert new_id not in (old_id, Uuid.ZERO)

    # The broker applies metadata asynchronously: its cache may briefly still hold the old topic.
    by_old_id = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=old_id, name=None)])
    gone = eventually(lambda: client.call(by_old_id, meta_v).body,
                      lambda body: body.topics[0].error_code != 0)
    assert [(t.error_code, t.topic_id) for t in gone.topics] == [(errors.UNKNOWN_TOPIC_ID.code, old_id)]

    fetch_v = versions[1][-1]
    assert fetch_v >= 13
    fetch_old = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[FetchRequest.FetchTopic(
        topic_id=old_id, partitions=[FetchRequest.FetchPartition(partition=0, partition_max_bytes=1 << 20)])])
    refused = client.call(fetch_old, fetch_v).body
    assert refused.error_code == 0
    assert [(t.topic_id, [p.error_code for p in t.partitions]) for t in refused.responses] == [
        (old_id, [errors.UNKNOWN_TOPIC_ID.code])]


def create_topic(client, versions, name, version=None):
    """Create a one-partition topic and wait until the broker's metadata shows it with a leader."""
    topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)
    request = CreateTopicsRequest(topics=[topic], timeout_ms=30000)
    version = versions[19][-1] if version is None else version
    # Just after a delete, the old topic may still be on its way out.
    (result,) = eventually(lambda: client.call(request, version).body.topics,
                           lambda topics: topics[0].error_code != errors.TOPIC_ALREADY_EXISTS.code)
    assert result.error_code == 0, result
    wait_for_leader(client, versions, name)
    return result.topic_id


def wait_for_leader(client, versions, name):
    # The broker applies metadata asynchronously: a topic just created may not be served yet.
    by_name = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)])

    def ready(body):
        return [(t.error_code, [(p.error_code, p.leader_id >= 0) for p in t.partitions]) for t in body.topics] == [
            (0, [(0, True)])]
    assert ready(eventually(lambda: client.call(by_name, versions[3][-1]).body, ready)), f"{name} has no leader"
    # Kafka's metadata cache can name a leader a moment before that leader's replica manager serves the
    # partition (a Produce then answers NOT_LEADER_OR_FOLLOWER), so wait until the leader itself answers.
    partition = ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)
    request = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=name, partitions=[partition])])

    def served(body):
        return [p.error_code for t in body.topics for p in t.partitions] == [0]
    assert served(eventually(lambda: client.call(request, versions[2][-1]).body, served)), f"{name} is not served"


def test_metadata_at_every_version(client):
    versions = broker_versions(client)
    create_topic(client, versions, "meta")
    for version in versions[3]:
        topics = [MetadataRequest.MetadataRequestTopic(name="meta")] if version else []  # v0: [] means all
        body = client.call(MetadataRequest(topics=topics), version).body
        assert [b.port for b in body.brokers] == [client.sock.getpeername()[1]]
        assert "meta" in [t.name for t in body.topics]


def test_produce_fetch_and_list_offsets_at_every_version(client):
    """Produce at every version from 3 up, fetch them all back at every version from 4 up."""
    versions = broker_versions(client)
    topic_id = create_topic(client, versions, "pf")
    produced = []
    for version in range(3, versions[0][-1] + 1):
        builder = RecordBatchBuilder(compression="zstd" if version >= 7 else "gzip")
        for i in range(3):
            value = f"v{version}-{i}".encode()
            builder.append(b"k", value, headers=[("h", value)], timestamp=1_700_000_000_000 + i)
            produced.append(value)
        by_id = version >= 13
        request = ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[ProduceRequest.TopicProduceData(
            name="" if by_id else "pf", topic_id=topic_id if by_id else Uuid.ZERO,
            partition_data=[ProduceRequest.PartitionProduceData(index=0, records=builder.build())])])
        (topic,) = client.call(request, version).body.responses
        (part,) = topic.partition_responses
        assert part.error_code == 0 and part.base_offset == len(produced) - 3, (version, part)
        assert (topic.topic_id == topic_id) if by_id else (topic.name == "pf")

    fetch_versions = range(4, versions[1][-1] + 1)
    assert len(fetch_versions) > 8
    for version in fetch_versions:
        by_id = version >= 13
        request = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[FetchRequest.FetchTopic(
            topic="" if by_id else "pf", topic_id=topic_id if by_id else Uuid.ZERO,
            partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
        (topic,) = client.call(request, version).body.responses
        (part,) = topic.partitions
        assert part.error_code == 0 and part.high_watermark == len(produced), (version, part)
        got = [(r.value, r.headers) for r in read_records(part.records)]
        assert got == [(v, (("h", v),)) for v in produced], version

    for version in versions[2]:
        partition = ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)  # -1: the log end
        request = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name="pf", partitions=[partition])])
        (topic,) = client.call(request, version).body.topics
        (part,) = topic.partitions
        assert part.error_code == 0
        assert (part.old_style_offsets if version == 0 else [part.offset]) == [len(produced)], version
