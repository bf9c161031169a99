#!/usr/bin/env python
"""kafkaproto vs kio vs kafka-python: decode and encode speed, one command, one run.

    python benchmarks/run.py [--quick] [--json PATH] [--no-gc]

Scenarios (the same field values for every implementation):

  A   MetadataResponse v12: 6 brokers, 100 topics x 10 partitions, 3 replicas, 3 ISR, topic ids
  B   FetchResponse v13: 10 topics x 10 partitions x 16 KiB records (opaque bytes)
  C   ProduceRequest v13: 1 topic x 10 partitions x 1 KiB records
  D1  RequestHeader v2 + ApiVersionsRequest v3 (a whole request frame)
  D2  RequestHeader v2 + MetadataRequest v12 with one topic (a whole request frame)

Before anything is timed, every peer's encoding is checked against kafkaproto's
(byte for byte; where bytes differ, by decoding both with kafkaproto and comparing
the values), and every implementation decodes the same input, kafkaproto's bytes.

Each implementation is called through the fastest path it offers:

* kafkaproto: ``Cls.decode(data, v)`` / ``msg.encode(v)``; D1/D2 ``decode_request(payload)``
  and ``encode_request(header, body, v)``.
* kio: the Rust ``kio._kio_native`` reader from ``kio.serial.entity_reader(cls)`` (fetched
  once), and ``kio.serial.entity_writer(cls)`` (pure Python, the only writer kio has)
  into an ``io.BytesIO``. D1/D2: header reader then the body reader looked up by
  (api key, version); encode writes size, header and body into one BytesIO.
* kafka-python: decode calls the exec-compiled decoder that ``ApiMessage.decode`` uses
  (``cls._struct.compiled_decode_from(...)``, fetched once) on a memoryview, which skips
  only ``decode``'s argument checks; encode is the public ``msg.encode()`` (its compiled
  encoder into a pooled buffer). D1/D2: the compiled RequestHeader decoder then the body
  decoder looked up by api key; encode ``msg.encode(header=True, framed=True)`` after
  ``with_header(...)``.

Times are the median over several repeats of a loop that runs for at least
--min-time seconds; repeats of the implementations are interleaved (one repeat of
each in turn), so the same-run ratios (peer time / kafkaproto time) are robust to
a noisy machine. The garbage collector stays enabled (``--no-gc`` disables it
during timing, as ``timeit`` does); before each repeat everything alive is moved
to the permanent generation with ``gc.freeze()``, so collections only walk what
the repeat allocates (benchmarks/diagnose_decode.py shows decode over a live heap).

Each operation is first checked for leaks (memory still allocated after
gc.collect()); a leak is reported, and the leaking operation's loop is capped so
the run's memory stays bounded.
"""

import argparse
import gc
import io
import json
import os
import platform
import random
import statistics
import sys
import time
import timeit
import tracemalloc
import uuid as std_uuid
from datetime import timedelta

try:
    import kafkaproto
except ImportError:  # not installed: use the source tree this script lives in
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import kafkaproto

from kafkaproto import Uuid, decode_request, encode_request
from kafkaproto.messages import (
    ApiVersionsRequest,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    RequestHeader,
)

KP = "kafkaproto"
KIO = "kio"
KPY = "kafka-python"

# ---------------------------------------------------------------------------
# Peers
# ---------------------------------------------------------------------------

try:
    import kio
    from kio.serial import entity_reader as kio_entity_reader
    from kio.serial import entity_writer as kio_entity_writer
    from kio.schema.errors import ErrorCode as KioErrorCode
    from kio.index import load_entity_schema as kio_load
    from kio.static.constants import EntityType as KioEntityType
    import kio._kio_native  # noqa: F401  (the native reader must be there)
    KIO_VERSION = getattr(kio, "__version__", "?")
    KIO_ERROR = None
except ImportError as e:  # pragma: no cover
    kio = None
    KIO_VERSION = None
    KIO_ERROR = str(e)

try:
    import kafka
    from kafka.protocol.api_header import RequestHeader as KpyRequestHeader
    from kafka.protocol.consumer.fetch import FetchResponse as KpyFetchResponse
    from kafka.protocol.metadata.api_versions import ApiVersionsRequest as KpyApiVersionsRequest
    from kafka.protocol.metadata.metadata import MetadataRequest as KpyMetadataRequest
    from kafka.protocol.metadata.metadata import MetadataResponse as KpyMetadataResponse
    from kafka.protocol.producer.produce import ProduceRequest as KpyProduceRequest
    KPY_VERSION = kafka.__version__
    KPY_ERROR = None
except ImportError as e:  # pragma: no cover
    kafka = None
    KPY_VERSION = None
    KPY_ERROR = str(e)

PEERS = [p for p, ok in ((KIO, kio is not None), (KPY, kafka is not None)) if ok]
IMPLS = [KP] + PEERS


def kio_cls(name, version, kind):
    return kio_load(name, version, {"request": KioEntityType.request, "response": KioEntityType.response,
                                    "header": KioEntityType.header}[kind])


def kio_max_version(name, kind):
    from kio.schema.index import schema_name_map
    et = {"request": KioEntityType.request, "response": KioEntityType.response}[kind]
    return max(v for v, types in schema_name_map[name].items() if et in types)


def kio_module_of(cls):
    return sys.modules[cls.__module__]


def kio_encoder(cls):
    write = kio_entity_writer(cls)

    def encode(obj):
        buf = io.BytesIO()
        write(buf, obj)
        return buf.getvalue()
    return encode


def kio_decoder(cls):
    read = kio_entity_reader(cls)

    def decode(data):
        return read(data, 0)[0]
    return decode, read


def kpy_decoder(cls, version):
    flexible = cls.flexible_version_q(version)
    fn = cls._struct.compiled_decode_from(version, compact=flexible, tagged=flexible, data_class=cls[None])
    return fn


# ---------------------------------------------------------------------------
# Scenario values (plain data, shared by every implementation)
# ---------------------------------------------------------------------------

INT32_MIN = -(2**31)


def uuid_bytes(rng):
    return rng.randbytes(16)


def metadata_values():
    rng = random.Random(12)
    brokers = [dict(node_id=i, host=f"broker-{i}.kafka.bench.example.internal", port=9092,
                    rack=f"rack-{i % 3}") for i in range(6)]
    topics = []
    for t in range(100):
        parts = []
        for p in range(10):
            replicas = [(t + p + k) % 6 for k in range(3)]
            parts.append(dict(error_code=0, partition_index=p, leader_id=replicas[0], leader_epoch=7 + p,
                              replica_nodes=replicas, isr_nodes=list(replicas), offline_replicas=[]))
        topics.append(dict(error_code=0, name=f"bench.topic-{t:03d}.events", topic_id=uuid_bytes(rng),
                           is_internal=False, partitions=parts, topic_authorized_operations=INT32_MIN))
    return dict(throttle_time_ms=0, brokers=brokers, cluster_id="kafkaproto-bench-cluster-01",
                controller_id=1, topics=topics)


def fetch_values():
    rng = random.Random(13)
    responses = []
    for t in range(10):
        parts = []
        for p in range(10):
            parts.append(dict(partition_index=p, error_code=0, high_watermark=1_000_000 + 1000 * t + p,
                              last_stable_offset=1_000_000 + 1000 * t + p, log_start_offset=0,
                              aborted_transactions=None, preferred_read_replica=-1,
                              records=rng.randbytes(16 * 1024)))
        responses.append(dict(topic_id=uuid_bytes(rng), partitions=parts))
    return dict(throttle_time_ms=0, error_code=0, session_id=123456789, responses=responses)


def produce_values():
    rng = random.Random(14)
    parts = [dict(index=p, records=rng.randbytes(1024)) for p in range(10)]
    return dict(transactional_id=None, acks=-1, timeout_ms=30000,
                topic_data=[dict(topic_id=uuid_bytes(rng), name="bench.produce-topic", partition_data=parts)])


CLIENT_ID = "kafkaproto-bench-client"


def d1_values():
    return dict(header=dict(request_api_key=18, request_api_version=3, correlation_id=1001, client_id=CLIENT_ID),
                body=dict(client_software_name="kafkaproto-bench", client_software_version="1.2.3"), version=3)


def d2_values():
    return dict(header=dict(request_api_key=3, request_api_version=12, correlation_id=1002, client_id=CLIENT_ID),
                body=dict(topics=[dict(topic_id=bytes(16), name="bench.orders")], allow_auto_topic_creation=True,
                          include_topic_authorized_operations=False), version=12)


# ---------------------------------------------------------------------------
# Builders: one message per implementation from the shared values
# ---------------------------------------------------------------------------

def kp_uuid(b):
    return Uuid.from_bytes(b)


def std_or_none(b):
    """Peers use uuid.UUID, with None for the all-zero uuid."""
    return None if b == bytes(16) else std_uuid.UUID(bytes=b)


# --- A: MetadataResponse v12

def kp_metadata(d):
    M = MetadataResponse
    return M(
        throttle_time_ms=d["throttle_time_ms"],
        brokers=[M.MetadataResponseBroker(**b) for b in d["brokers"]],
        cluster_id=d["cluster_id"], controller_id=d["controller_id"],
        topics=[M.MetadataResponseTopic(
            error_code=t["error_code"], name=t["name"], topic_id=kp_uuid(t["topic_id"]),
            is_internal=t["is_internal"],
            partitions=[M.MetadataResponsePartition(**p) for p in t["partitions"]],
            topic_authorized_operations=t["topic_authorized_operations"]) for t in d["topics"]])


def kio_metadata(d, version):
    cls = kio_cls("metadata", version, "response")
    m = kio_module_of(cls)
    return cls(
        throttle_time=timedelta(milliseconds=d["throttle_time_ms"]),
        brokers=tuple(m.MetadataResponseBroker(**b) for b in d["brokers"]),
        cluster_id=d["cluster_id"], controller_id=d["controller_id"],
        topics=tuple(m.MetadataResponseTopic(
            error_code=KioErrorCode(t["error_code"]), name=t["name"], topic_id=std_or_none(t["topic_id"]),
            is_internal=t["is_internal"],
            partitions=tuple(m.MetadataResponsePartition(
                error_code=KioErrorCode(p["error_code"]), partition_index=p["partition_index"],
                leader_id=p["leader_id"], leader_epoch=p["leader_epoch"],
                replica_nodes=tuple(p["replica_nodes"]), isr_nodes=tuple(p["isr_nodes"]),
                offline_replicas=tuple(p["offline_replicas"])) for p in t["partitions"]),
            topic_authorized_operations=t["topic_authorized_operations"]) for t in d["topics"]))


def kpy_bitfield(v):
    # kafka-python turns the int32 *AuthorizedOperations into a set of bit numbers; None is INT32_MIN.
    return None if v == INT32_MIN else {b for b in range(32) if (v & 0xFFFFFFFF) >> b & 1}


def kpy_metadata(d, version):
    M = KpyMetadataResponse
    return M(
        version=version,
        throttle_time_ms=d["throttle_time_ms"],
        brokers=[M.MetadataResponseBroker(version=version, **b) for b in d["brokers"]],
        cluster_id=d["cluster_id"], controller_id=d["controller_id"],
        topics=[M.MetadataResponseTopic(
            version=version, error_code=t["error_code"], name=t["name"], topic_id=std_or_none(t["topic_id"]),
            is_internal=t["is_internal"],
            partitions=[M.MetadataResponseTopic.MetadataResponsePartition(version=version, **p)
                        for p in t["partitions"]],
            authorized_operations=kpy_bitfield(t["topic_authorized_operations"])) for t in d["topics"]])


# --- B: FetchResponse v13

def kp_fetch(d):
    F = FetchResponse
    return F(
        throttle_time_ms=d["throttle_time_ms"], error_code=d["error_code"], session_id=d["session_id"],
        responses=[F.FetchableTopicResponse(
            topic_id=kp_uuid(t["topic_id"]),
            partitions=[F.PartitionData(**p) for p in t["partitions"]]) for t in d["responses"]])


def kio_fetch(d, version):
    cls = kio_cls("fetch", version, "response")
    m = kio_module_of(cls)
    return cls(
        throttle_time=timedelta(milliseconds=d["throttle_time_ms"]), error_code=KioErrorCode(d["error_code"]),
        session_id=d["session_id"],
        responses=tuple(m.FetchableTopicResponse(
            topic_id=std_or_none(t["topic_id"]),
            partitions=tuple(m.PartitionData(
                partition_index=p["partition_index"], error_code=KioErrorCode(p["error_code"]),
                high_watermark=p["high_watermark"], last_stable_offset=p["last_stable_offset"],
                log_start_offset=p["log_start_offset"], aborted_transactions=p["aborted_transactions"],
                preferred_read_replica=p["preferred_read_replica"], records=p["records"])
                for p in t["partitions"])) for t in d["responses"]))


def kpy_fetch(d, version):
    F = KpyFetchResponse
    T = F.FetchableTopicResponse
    return F(
        version=version, throttle_time_ms=d["throttle_time_ms"], error_code=d["error_code"],
        session_id=d["session_id"],
        responses=[T(version=version, topic_id=std_or_none(t["topic_id"]),
                     partitions=[T.PartitionData(version=version, **p) for p in t["partitions"]])
                   for t in d["responses"]])


# --- C: ProduceRequest (v13 names topics by id; older versions by name)

def _produce_topic_key(t, version, to_uuid):
    return dict(topic_id=to_uuid(t["topic_id"])) if version >= 13 else dict(name=t["name"])


def kp_produce(d, version):
    P = ProduceRequest
    return P(
        transactional_id=d["transactional_id"], acks=d["acks"], timeout_ms=d["timeout_ms"],
        topic_data=[P.TopicProduceData(
            **_produce_topic_key(t, version, kp_uuid),
            partition_data=[P.PartitionProduceData(**p) for p in t["partition_data"]]) for t in d["topic_data"]])


def kio_produce(d, version):
    cls = kio_cls("produce", version, "request")
    m = kio_module_of(cls)
    return cls(
        transactional_id=d["transactional_id"], acks=d["acks"], timeout=timedelta(milliseconds=d["timeout_ms"]),
        topic_data=tuple(m.TopicProduceData(
            **_produce_topic_key(t, version, std_or_none),
            partition_data=tuple(m.PartitionProduceData(**p) for p in t["partition_data"]))
            for t in d["topic_data"]))


def kpy_produce(d, version):
    P = KpyProduceRequest
    T = P.TopicProduceData
    return P(
        version=version, transactional_id=d["transactional_id"], acks=d["acks"], timeout_ms=d["timeout_ms"],
        topic_data=[T(version=version, **_produce_topic_key(t, version, std_or_none),
                      partition_data=[T.PartitionProduceData(version=version, **p) for p in t["partition_data"]])
                    for t in d["topic_data"]])


# --- D1/D2: request header v2 + body

def kp_request(d, body_cls):
    body = d["body"]
    if body_cls is MetadataRequest:
        body = dict(body, topics=[MetadataRequest.MetadataRequestTopic(topic_id=kp_uuid(t["topic_id"]), name=t["name"])
                                  for t in body["topics"]])
    return RequestHeader(**d["header"]), body_cls(**body)


def kio_request(d, name):
    v = d["version"]
    hcls = kio_load("request_header", 2, KioEntityType.header)
    cls = kio_cls(name, v, "request")
    body = d["body"]
    if name == "metadata":
        m = kio_module_of(cls)
        body = dict(body, topics=tuple(m.MetadataRequestTopic(topic_id=std_or_none(t["topic_id"]), name=t["name"])
                                       for t in body["topics"]))
    return hcls(**d["header"]), cls(**body)


def kpy_request(d, cls):
    v = d["version"]
    body = d["body"]
    if cls is KpyMetadataRequest:
        body = dict(body, topics=[cls.MetadataRequestTopic(version=v, topic_id=std_or_none(t["topic_id"]),
                                                            name=t["name"]) for t in body["topics"]])
    msg = cls(version=v, **body)
    h = d["header"]
    assert h["request_api_key"] == cls.API_KEY and h["request_api_version"] == v
    msg.with_header(correlation_id=h["correlation_id"], client_id=h["client_id"])
    return msg


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------

class Bench:
    """One timed operation: stmt evaluated in namespace ns (inlined into timeit's loop)."""

    def __init__(self, impl, stmt, ns):
        self.impl = impl
        self.stmt = stmt
        self.timer = timeit.Timer(stmt, setup=SETUP, globals=dict(ns, gc=gc))
        self.loops = 0
        self.samples = []  # seconds per call, one per repeat
        self.leak_bytes = 0.0  # memory still held after a call returned and gc ran, per call
        self.leak_blocks = 0.0
        self.capped = False

    def leak_check(self, calls=20):
        """Does one call leave memory behind (objects still alive after gc.collect())?"""
        self.timer.timeit(2)  # warm up caches (compiled decoders, buffer pools)
        gc.collect()
        b0 = sys.getallocatedblocks()
        self.timer.timeit(calls)
        gc.collect()
        blocks = (sys.getallocatedblocks() - b0) / calls
        if blocks < 0.9:
            return
        calls = 5  # tracemalloc is slow; only measure the size of a leak already seen
        tracemalloc.start()
        m0 = tracemalloc.get_traced_memory()[0]
        self.timer.timeit(calls)
        gc.collect()
        nbytes = (tracemalloc.get_traced_memory()[0] - m0) / calls
        tracemalloc.stop()
        if blocks >= 0.9 and nbytes > 0:
            self.leak_blocks, self.leak_bytes = blocks, nbytes

    def calibrate(self, min_time, repeats):
        n = 1
        while True:
            t = self.timer.timeit(n)
            if t >= min_time / 5:
                break
            n *= 5 if t < min_time / 50 else 2
        self.loops = max(1, int(n * min_time * 1.05 / t))
        if self.leak_bytes:  # bound what a leaking operation may pile up over the whole measurement
            cap = max(1, int(LEAK_BUDGET / self.leak_bytes / repeats))
            if cap < self.loops:
                self.loops, self.capped = cap, True

    def run_once(self):
        # Everything alive now (setup objects, and whatever earlier runs leaked) is moved to the
        # permanent generation, so collections during this repeat only walk what it allocates.
        gc.collect()
        gc.freeze()
        self.samples.append(self.timer.timeit(self.loops) / self.loops)

    @property
    def median(self):
        return statistics.median(self.samples)


SETUP = "pass"
LEAK_BUDGET = 768 * 2**20  # bytes a leaking operation may leak over all its repeats


def measure(benches, repeats, min_time):
    """Calibrate each, then interleave the repeats (one of each implementation in turn)."""
    for b in benches:
        b.leak_check()
        b.calibrate(min_time, repeats)
    for _ in range(repeats):
        for b in benches:
            b.run_once()
    return benches


# ---------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------

def check_encoding(name, impl, peer_bytes, kp_bytes, kp_cls, version, notes):
    """A peer's bytes must be kafkaproto's, or decode (with kafkaproto) to the same values."""
    peer_bytes = bytes(peer_bytes)
    if peer_bytes == kp_bytes:
        notes.append(f"{name}: {impl} bytes identical to kafkaproto's ({len(kp_bytes)} B)")
        return "identical bytes"
    a = kp_cls.decode(peer_bytes, version).to_dict()
    b = kp_cls.decode(kp_bytes, version).to_dict()
    if a != b:
        raise AssertionError(f"{name}: {impl}'s encoding does not decode to kafkaproto's values")
    notes.append(f"{name}: {impl} bytes differ ({len(peer_bytes)} vs {len(kp_bytes)} B) but decode to the same values")
    return "same values"


def check_frame(name, impl, peer_frame, kp_frame, notes):
    peer_frame = bytes(peer_frame)
    if peer_frame == kp_frame:
        notes.append(f"{name}: {impl} frame identical to kafkaproto's ({len(kp_frame)} B)")
        return "identical bytes"
    a = decode_request(peer_frame[4:])
    b = decode_request(kp_frame[4:])
    if (a.header.to_dict(), a.body.to_dict()) != (b.header.to_dict(), b.body.to_dict()) or \
            int.from_bytes(peer_frame[:4], "big") != len(peer_frame) - 4:
        raise AssertionError(f"{name}: {impl}'s frame does not decode to kafkaproto's values")
    notes.append(f"{name}: {impl} frame differs but decodes to the same values")
    return "same values"


class Scenario:
    def __init__(self, key, title, version):
        self.key = key
        self.title = title
        self.version = version  # kafkaproto's version
        self.peer_versions = {}  # impl -> version used (when not self.version)
        self.size = None
        self.equivalence = {}
        self.decode = []  # Bench list
        self.encode = []
        self.extra = {}  # name -> Bench (e.g. b"".join lower bound, kafkaproto at a peer's version)


def message_scenario(key, title, kp_cls, version, values, kp_build, peer_builds, notes):
    """A body-only scenario (A, B, C). peer_builds: impl -> (build(values, v), peer class getter)."""
    sc = Scenario(key, title, version)
    kp_msg = kp_build(values, version)
    kp_bytes = kp_msg.encode(version)
    sc.size = len(kp_bytes)
    assert kp_cls.decode(kp_bytes, version) == kp_msg, f"{key}: kafkaproto does not round-trip"
    kp_dec = kp_cls.decode
    sc.decode.append(Bench(KP, "dec(data, v)", dict(dec=kp_dec, data=kp_bytes, v=version)))
    sc.encode.append(Bench(KP, "msg.encode(v)", dict(msg=kp_msg, v=version)))
    sc.equivalence[KP] = "reference"

    for impl, (build, max_v) in peer_builds.items():
        pv = min(version, max_v)
        ref_bytes, ref_msg = kp_bytes, kp_msg
        if pv != version:
            sc.peer_versions[impl] = pv
            notes.append(f"{key}: {impl} supports {kp_cls.__name__} up to v{max_v}; it runs at v{pv}, "
                         f"kafkaproto also runs at v{pv} for a same-version ratio")
            ref_msg = kp_build(values, pv)
            ref_bytes = ref_msg.encode(pv)
            name = f"{KP}@v{pv}"
            if name not in sc.extra:
                sc.extra[f"{name} decode"] = Bench(name, "dec(data, v)", dict(dec=kp_dec, data=ref_bytes, v=pv))
                sc.extra[f"{name} encode"] = Bench(name, "msg.encode(v)", dict(msg=ref_msg, v=pv))
        peer_msg, enc_stmt, enc_ns, dec_stmt, dec_ns, peer_decode, peer_encode = build(values, pv)
        peer_bytes = peer_encode(peer_msg)
        sc.equivalence[impl] = check_encoding(key, impl, peer_bytes, ref_bytes, kp_cls, pv, notes)
        # The peer decodes kafkaproto's bytes and re-encodes them to the same bytes.
        again = bytes(peer_encode(peer_decode(ref_bytes)))
        assert kp_cls.decode(again, pv).to_dict() == ref_msg.to_dict(), f"{key}: {impl} decode of kafkaproto's bytes"
        dec_ns = dict(dec_ns, data=ref_bytes)
        sc.decode.append(Bench(impl, dec_stmt, dec_ns))
        sc.encode.append(Bench(impl, enc_stmt, enc_ns))
    return sc


def kio_body_build(make_kio):
    def build(values, v):
        msg = make_kio(values, v)
        cls = type(msg)
        encode = kio_encoder(cls)
        decode, read = kio_decoder(cls)
        write = kio_entity_writer(cls)
        return (msg,
                "buf = BytesIO(); write(buf, msg); buf.getvalue()", dict(BytesIO=io.BytesIO, write=write, msg=msg),
                "read(data, 0)", dict(read=read),
                decode, encode)
    return build


def kpy_body_build(make_kpy, kpy_cls):
    def build(values, v):
        msg = make_kpy(values, v)
        fn = kpy_decoder(kpy_cls, v)

        def decode(data):
            obj, pos = fn(memoryview(data), 0)
            assert pos == len(data)
            return obj
        return (msg,
                "msg.encode()", dict(msg=msg),
                "fn(memoryview(data), 0)", dict(fn=fn, memoryview=memoryview),
                decode, lambda m: bytes(m.encode()))
    return build


def join_parts(encoded, blobs):
    """encoded split into the pieces around each records blob; the blobs are the original objects."""
    parts = []
    pos = 0
    for blob in blobs:
        at = encoded.find(blob, pos)
        assert at >= 0
        parts.append(encoded[pos:at])
        parts.append(blob)
        pos = at + len(blob)
    parts.append(encoded[pos:])
    assert b"".join(parts) == encoded
    return parts


def request_scenario(key, title, values, kp_body_cls, kio_name, kpy_cls, notes):
    sc = Scenario(key, title, values["version"])
    v = values["version"]
    header, body = kp_request(values, kp_body_cls)
    frame = encode_request(header, body, v)
    payload = frame[4:]
    sc.size = len(frame)
    req = decode_request(payload)
    assert req.header == header and req.body == body, f"{key}: kafkaproto does not round-trip"
    sc.decode.append(Bench(KP, "dec(payload)", dict(dec=decode_request, payload=payload)))
    sc.encode.append(Bench(KP, "enc(h, b, v)", dict(enc=encode_request, h=header, b=body, v=v)))
    sc.equivalence[KP] = "reference"

    if kio is not None:
        kh, kb = kio_request(values, kio_name)
        hw, bw = kio_entity_writer(type(kh)), kio_entity_writer(type(kb))
        hr = kio_entity_reader(type(kh))
        # What a server does: read the header, look the body's reader up by (api key, version).
        readers = {(kb.__api_key__, kb.__version__): kio_entity_reader(type(kb))}

        def kio_frame(h, b):
            buf = io.BytesIO()
            buf.write(b"\0\0\0\0")
            hw(buf, h)
            bw(buf, b)
            n = buf.tell() - 4
            buf.seek(0)
            buf.write(n.to_bytes(4, "big"))
            return buf.getvalue()

        def kio_parse(payload):
            h, n = hr(payload, 0)
            b, m = readers[h.request_api_key, h.request_api_version](payload, n)
            assert n + m == len(payload)
            return h, b

        sc.equivalence[KIO] = check_frame(key, KIO, kio_frame(kh, kb), frame, notes)
        assert kio_frame(*kio_parse(payload)) == frame, f"{key}: kio decode of kafkaproto's frame"
        sc.decode.append(Bench(KIO, "h, n = hr(payload, 0); "
                                    "readers[h.request_api_key, h.request_api_version](payload, n)",
                               dict(hr=hr, readers=readers, payload=payload)))
        sc.encode.append(Bench(KIO, "f(h, b)", dict(f=kio_frame, h=kh, b=kb)))

    if kafka is not None:
        msg = kpy_request(values, kpy_cls)
        hdec = KpyRequestHeader._struct.compiled_decode_from(2, compact=False, tagged=True, data_class=KpyRequestHeader)
        bodies = {kpy_cls.API_KEY: kpy_cls}
        decoders = {}

        def body_decoder(api_key, version):
            # Cached like kafka-python's own compiled_decode_from; the lookup is part of the timed path.
            try:
                return decoders[api_key, version]
            except KeyError:
                fn = decoders[api_key, version] = kpy_decoder(bodies[api_key], version)
                return fn

        def kpy_parse(payload):
            mv = memoryview(payload)
            h, pos = hdec(mv, 0)
            b, end = body_decoder(h.request_api_key, h.request_api_version)(mv, pos)
            assert end == len(payload)
            return h, b

        sc.equivalence[KPY] = check_frame(key, KPY, msg.encode(header=True, framed=True), frame, notes)
        h2, b2 = kpy_parse(payload)
        assert h2.to_dict() == msg.header.to_dict() and b2.to_dict() == msg.to_dict(), f"{key}: kafka-python decode"
        sc.decode.append(Bench(KPY, "mv = memoryview(payload); h, pos = hdec(mv, 0); "
                                    "bd(h.request_api_key, h.request_api_version)(mv, pos)",
                               dict(hdec=hdec, bd=body_decoder, payload=payload, memoryview=memoryview)))
        sc.encode.append(Bench(KPY, "msg.encode(header=True, framed=True)", dict(msg=msg)))
    return sc


def build_scenarios(notes):
    max_v = {}
    if kio is not None:
        max_v[KIO] = {n: kio_max_version(n, k) for n, k in
                      (("metadata", "response"), ("fetch", "response"), ("produce", "request"))}
    if kafka is not None:
        max_v[KPY] = {"metadata": KpyMetadataResponse.max_version, "fetch": KpyFetchResponse.max_version,
                      "produce": KpyProduceRequest.max_version}

    def peers(kio_make, kpy_make, kpy_cls, name):
        out = {}
        if kio is not None:
            out[KIO] = (kio_body_build(kio_make), max_v[KIO][name])
        if kafka is not None:
            out[KPY] = (kpy_body_build(kpy_make, kpy_cls), max_v[KPY][name])
        return out

    scenarios = []
    a = message_scenario("A", "MetadataResponse v12: 6 brokers, 100 topics x 10 partitions", MetadataResponse, 12,
                         metadata_values(), lambda d, v: kp_metadata(d),
                         peers(kio_metadata, kpy_metadata, KpyMetadataResponse if kafka else None, "metadata"),
                         notes)
    scenarios.append(a)

    fv = fetch_values()
    b = message_scenario("B", "FetchResponse v13: 10 topics x 10 partitions x 16 KiB records", FetchResponse, 13,
                         fv, lambda d, v: kp_fetch(d),
                         peers(kio_fetch, kpy_fetch, KpyFetchResponse if kafka else None, "fetch"), notes)
    kp_b = kp_fetch(fv).encode(13)
    blobs = [p["records"] for t in fv["responses"] for p in t["partitions"]]
    parts = join_parts(kp_b, blobs)
    b.extra["join"] = Bench('b"".join', "join(parts)", dict(join=b"".join, parts=parts))
    b.join_parts = len(parts)
    scenarios.append(b)

    c = message_scenario("C", "ProduceRequest v13: 1 topic x 10 partitions x 1 KiB records", ProduceRequest, 13,
                         produce_values(), kp_produce,
                         peers(kio_produce, kpy_produce, KpyProduceRequest if kafka else None, "produce"),
                         notes)
    scenarios.append(c)

    scenarios.append(request_scenario("D1", "RequestHeader v2 + ApiVersionsRequest v3 (frame)", d1_values(),
                                      ApiVersionsRequest, "api_versions", KpyApiVersionsRequest if kafka else None,
                                      notes))
    scenarios.append(request_scenario("D2", "RequestHeader v2 + MetadataRequest v12, 1 topic (frame)", d2_values(),
                                      MetadataRequest, "metadata", KpyMetadataRequest if kafka else None, notes))
    return scenarios


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------

def us(seconds):
    return seconds * 1e6


def fmt_us(x):
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:.1f}"
    if x >= 10:
        return f"{x:.2f}"
    return f"{x:.3f}"


def results_of(sc):
    out = {"title": sc.title, "version": sc.version, "peer_versions": sc.peer_versions, "bytes": sc.size,
           "equivalence": sc.equivalence, "decode": {}, "encode": {}, "extra": {}}
    for op in ("decode", "encode"):
        benches = getattr(sc, op)
        kp = benches[0].median
        for b in benches:
            pv = sc.peer_versions.get(b.impl)
            same = sc.extra[f"{KP}@v{pv} {op}"].median if pv is not None else kp
            out[op][b.impl] = {"us": us(b.median), "ratio_vs_kafkaproto": b.median / kp,
                               "ratio_vs_kafkaproto_same_version": b.median / same, "loops": b.loops,
                               "samples_us": [us(s) for s in b.samples],
                               "version": sc.peer_versions.get(b.impl, sc.version),
                               "leak_bytes_per_call": b.leak_bytes, "leak_blocks_per_call": b.leak_blocks,
                               "loops_capped_by_leak": b.capped}
    for name, b in sc.extra.items():
        out["extra"][name] = {"us": us(b.median), "loops": b.loops, "samples_us": [us(s) for s in b.samples],
                              "leak_bytes_per_call": b.leak_bytes, "loops_capped_by_leak": b.capped}
    return out


def print_table(scenarios, res):
    print()
    head = f"{'scenario':<4} {'op':<7} {'impl':<13} {'ver':>4} {'µs/msg':>11} {'× kafkaproto':>13}  spread (half range)"
    print(head)
    print("-" * len(head))
    for sc in scenarios:
        r = res[sc.key]
        for op in ("decode", "encode"):
            for impl, m in r[op].items():
                spread = (max(m["samples_us"]) - min(m["samples_us"])) / m["us"] * 100
                ratio = "1.00" if impl == KP else f"{m['ratio_vs_kafkaproto']:.2f}"
                if m["version"] != r["version"]:
                    ratio += f" ({m['ratio_vs_kafkaproto_same_version']:.2f} vs v{m['version']})"
                leak = f"  LEAKS {m['leak_bytes_per_call'] / 1024:,.1f} KiB/call" if m["leak_bytes_per_call"] else ""
                print(f"{sc.key:<4} {op:<7} {impl:<13} {'v' + str(m['version']):>4} {fmt_us(m['us']):>11} "
                      f"{ratio:>13}  ±{spread / 2:.0f}%{leak}")
            for name, m in r["extra"].items():
                if name.endswith(op) or (op == "encode" and name == "join"):
                    label = 'b"".join' if name == "join" else name.rsplit(" ", 1)[0]
                    print(f"{sc.key:<4} {op:<7} {label:<13} {'':>4} {fmt_us(m['us']):>11} {'':>13}")
        print()


def evaluate_targets(res):
    targets = []

    def add(name, ok, detail):
        targets.append({"target": name, "pass": bool(ok), "detail": detail})

    for key, r in res.items():
        if KIO in r["decode"]:
            kio_v = r["decode"][KIO]["version"]
            kp_us = r["decode"][KP]["us"]
            if kio_v != r["version"]:  # compare at the same version
                kp_us = r["extra"][f"{KP}@v{kio_v} decode"]["us"]
            ratio = r["decode"][KIO]["us"] / kp_us
            leak = " (kafkaproto's decode leaks memory)" if r["decode"][KP]["leak_bytes_per_call"] else ""
            add(f"{key} decode: kafkaproto at least as fast as kio's native decoder", ratio >= 1.0,
                f"kio {fmt_us(r['decode'][KIO]['us'])} µs / kafkaproto {fmt_us(kp_us)} µs = {ratio:.2f}x{leak}")
    for key in ("A", "D1"):
        r = res.get(key)
        if r and KPY in r["encode"]:
            ratio = r["encode"][KPY]["us"] / r["encode"][KP]["us"]
            add(f"{key} encode: kafkaproto at least 10x faster than kafka-python", ratio >= 10.0,
                f"kafka-python {fmt_us(r['encode'][KPY]['us'])} µs / kafkaproto "
                f"{fmt_us(r['encode'][KP]['us'])} µs = {ratio:.1f}x")
    r = res.get("B")
    if r:
        j = r["extra"]["join"]["us"]
        ratio = r["encode"][KP]["us"] / j
        add('B encode: kafkaproto within 2x of b"".join over the same parts', ratio <= 2.0,
            f"kafkaproto {fmt_us(r['encode'][KP]['us'])} µs / join {fmt_us(j)} µs = {ratio:.2f}x")
    return targets


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter repeats (under a minute)")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    ap.add_argument("--repeats", type=int, help="repeats per measurement (default 7, --quick 3)")
    ap.add_argument("--min-time", type=float, help="seconds per repeat (default 0.25, --quick 0.1)")
    ap.add_argument("--no-gc", action="store_true", help="disable the garbage collector while timing")
    ap.add_argument("--only", help="comma-separated scenario keys (A,B,C,D1,D2)")
    args = ap.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 7)
    min_time = args.min_time or (0.1 if args.quick else 0.25)
    global SETUP
    SETUP = "pass" if args.no_gc else "gc.enable()"

    t0 = time.perf_counter()
    print(f"kafkaproto {kafkaproto.__version__}  compiled={kafkaproto.compiled()}  {kafkaproto.__file__}")
    if not kafkaproto.compiled():
        print("WARNING: kafkaproto is running its pure-Python fallback; these numbers do not measure the "
              "compiled codecs")
    print(f"kio {KIO_VERSION or 'missing: ' + KIO_ERROR}   kafka-python {KPY_VERSION or 'missing: ' + KPY_ERROR}")
    print(f"Python {platform.python_version()} ({platform.python_implementation()}) on {platform.machine()}, "
          f"{os.cpu_count()} CPUs, {platform.platform()}")
    print(f"repeats={repeats}  min time per repeat={min_time}s  gc={'off' if args.no_gc else 'on'}  "
          f"statistic=median, ratio = peer / kafkaproto (same run, interleaved repeats)")

    notes = []
    scenarios = build_scenarios(notes)
    if args.only:
        keep = set(args.only.split(","))
        scenarios = [s for s in scenarios if s.key in keep]
    print("\nEquivalence (checked before timing):", flush=True)
    for n in notes:
        print("  " + n)
    for sc in scenarios:
        print(f"  {sc.key}: {sc.title}: {sc.size:,} bytes")

    gc.collect()
    gc.freeze()
    for sc in scenarios:
        sys.stdout.flush()
        t1 = time.perf_counter()
        print(f"timing {sc.key} ...", end="", file=sys.stderr, flush=True)
        measure(sc.decode + [b for n, b in sc.extra.items() if n.endswith("decode")], repeats, min_time)
        measure(sc.encode + [b for n, b in sc.extra.items() if not n.endswith("decode")], repeats, min_time)
        print(f" {time.perf_counter() - t1:.1f} s", file=sys.stderr, flush=True)
    gc.unfreeze()

    res = {sc.key: results_of(sc) for sc in scenarios}
    print_table(scenarios, res)
    if "B" in res:
        b = res["B"]
        print(f'B encode: kafkaproto / b"".join over the same {next(s.join_parts for s in scenarios if s.key == "B")} '
              f'parts = {b["encode"][KP]["us"] / b["extra"]["join"]["us"]:.2f}x')
    leaks = [(key, op, impl, m) for key, r in res.items() for op in ("decode", "encode")
             for impl, m in r[op].items() if m["leak_bytes_per_call"]]
    if leaks:
        print("\nWARNING: memory left behind after each call (still allocated after gc.collect()):")
        for key, op, impl, m in leaks:
            cap = "; loops per repeat capped to bound the leak" if m["loops_capped_by_leak"] else ""
            print(f"  {key} {op} {impl}: {m['leak_bytes_per_call'] / 1024:,.1f} KiB and "
                  f"{m['leak_blocks_per_call']:,.0f} blocks per call{cap}")
        print("  A leaking decode's time includes allocating fresh memory and the collector walking the "
              "leaked objects; compare with --no-gc.")
    targets = evaluate_targets(res)
    print("\nTargets:")
    for t in targets:
        print(f"  {'PASS' if t['pass'] else 'FAIL'}  {t['target']}: {t['detail']}")
    elapsed = time.perf_counter() - t0
    print(f"\n{sum(t['pass'] for t in targets)}/{len(targets)} targets pass; run took {elapsed:.0f} s")

    if args.json:
        doc = {
            "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
            "kafkaproto": {"version": kafkaproto.__version__, "compiled": kafkaproto.compiled(),
                           "file": kafkaproto.__file__},
            "peers": {KIO: KIO_VERSION, KPY: KPY_VERSION},
            "python": sys.version, "platform": platform.platform(), "cpus": os.cpu_count(),
            "repeats": repeats, "min_time_s": min_time, "gc": not args.no_gc,
            "notes": notes, "scenarios": res, "targets": targets, "elapsed_s": elapsed,
        }
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
