"""Building messages: generated classes against hand-written __slots__ classes, kio and kafka-python.

    pip install '.[bench]' && python benchmarks/construction.py [--json PATH] [--quick]

Scenarios (same values everywhere; medians of interleaved repeats, as benchmarks/run.py times them):
  E1  one MetadataResponsePartition from 5 keywords
  E2  scenario A's MetadataResponse v12 built from plain values (1,000 partitions, 100 topics, 6 brokers)
  E3  RequestHeader + ApiVersionsRequest built and framed, against the framing alone
  E4  to_dict() and from_dict() of scenario A's MetadataResponse
Targets: E1 and E2 at most the hand-written classes' time (1.0x; 0.5x is the stretch), and the existing
targets of run.py, which this script does not repeat.
"""

import argparse
import json
import sys

from run import KIO, KP, KPY, Bench, kafka, kio, kio_metadata, kp_metadata, kpy_metadata, measure, metadata_values

from kafkaproto import encode_request
from kafkaproto.messages import ApiVersionsRequest, MetadataResponse, RequestHeader


class Partition:
    """What a person would write by hand for MetadataResponsePartition."""

    __slots__ = ("error_code", "partition_index", "leader_id", "leader_epoch", "replica_nodes", "isr_nodes",
                 "offline_replicas", "unknown_tagged_fields")

    def __init__(self, *, error_code=0, partition_index=0, leader_id=0, leader_epoch=-1, replica_nodes=None,
                 isr_nodes=None, offline_replicas=None, unknown_tagged_fields=None):
        self.error_code = error_code
        self.partition_index = partition_index
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.replica_nodes = [] if replica_nodes is None else replica_nodes
        self.isr_nodes = [] if isr_nodes is None else isr_nodes
        self.offline_replicas = [] if offline_replicas is None else offline_replicas
        self.unknown_tagged_fields = unknown_tagged_fields


class Topic:
    __slots__ = ("error_code", "name", "topic_id", "is_internal", "partitions", "topic_authorized_operations",
                 "unknown_tagged_fields")

    def __init__(self, *, error_code=0, name=None, topic_id=None, is_internal=False, partitions=None,
                 topic_authorized_operations=-2147483648, unknown_tagged_fields=None):
        self.error_code = error_code
        self.name = name
        self.topic_id = topic_id
        self.is_internal = is_internal
        self.partitions = [] if partitions is None else partitions
        self.topic_authorized_operations = topic_authorized_operations
        self.unknown_tagged_fields = unknown_tagged_fields


class Broker:
    __slots__ = ("node_id", "host", "port", "rack", "unknown_tagged_fields")

    def __init__(self, *, node_id=0, host="", port=0, rack=None, unknown_tagged_fields=None):
        self.node_id = node_id
        self.host = host
        self.port = port
        self.rack = rack
        self.unknown_tagged_fields = unknown_tagged_fields


class Metadata:
    __slots__ = ("throttle_time_ms", "brokers", "cluster_id", "controller_id", "topics",
                 "cluster_authorized_operations", "error_code", "unknown_tagged_fields")

    def __init__(self, *, throttle_time_ms=0, brokers=None, cluster_id=None, controller_id=-1, topics=None,
                 cluster_authorized_operations=-2147483648, error_code=0, unknown_tagged_fields=None):
        self.throttle_time_ms = throttle_time_ms
        self.brokers = [] if brokers is None else brokers
        self.cluster_id = cluster_id
        self.controller_id = controller_id
        self.topics = [] if topics is None else topics
        self.cluster_authorized_operations = cluster_authorized_operations
        self.error_code = error_code
        self.unknown_tagged_fields = unknown_tagged_fields


def hand_metadata(d):
    from kafkaproto import Uuid
    return Metadata(
        throttle_time_ms=d["throttle_time_ms"], brokers=[Broker(**b) for b in d["brokers"]],
        cluster_id=d["cluster_id"], controller_id=d["controller_id"],
        topics=[Topic(error_code=t["error_code"], name=t["name"], topic_id=Uuid.from_bytes(t["topic_id"]),
                      is_internal=t["is_internal"], partitions=[Partition(**p) for p in t["partitions"]],
                      topic_authorized_operations=t["topic_authorized_operations"]) for t in d["topics"]])


HAND = "hand-written"


def scenarios():
    out = {}
    replicas = [1, 2, 3]
    p = MetadataResponse.MetadataResponsePartition
    e1 = [Bench(KP, "P(partition_index=1, leader_id=2, leader_epoch=3, replica_nodes=r, isr_nodes=r)",
                {"P": p, "r": replicas}),
          Bench(HAND, "P(partition_index=1, leader_id=2, leader_epoch=3, replica_nodes=r, isr_nodes=r)",
                {"P": Partition, "r": replicas})]
    if kio is not None:
        from run import kio_cls, kio_module_of
        kio_p = kio_module_of(kio_cls("metadata", 12, "response")).MetadataResponsePartition
        from kio.schema.errors import ErrorCode
        e1.append(Bench(KIO, "P(error_code=E, partition_index=1, leader_id=2, leader_epoch=3, replica_nodes=r, "
                        "isr_nodes=r, offline_replicas=())", {"P": kio_p, "r": tuple(replicas),
                                                             "E": ErrorCode(0)}))
    out["E1"] = ("one MetadataResponsePartition from 5 keywords", e1)

    values = metadata_values()
    e2 = [Bench(KP, "build(d)", {"build": kp_metadata, "d": values}),
          Bench(HAND, "build(d)", {"build": hand_metadata, "d": values})]
    if kio is not None:
        e2.append(Bench(KIO, "build(d, 12)", {"build": kio_metadata, "d": values}))
    if kafka is not None:
        e2.append(Bench(KPY, "build(d, 12)", {"build": kpy_metadata, "d": values}))
    out["E2"] = ("MetadataResponse v12 of scenario A built from plain values", e2)

    header = RequestHeader(request_api_key=18, request_api_version=3, correlation_id=1, client_id="bench")
    body = ApiVersionsRequest(client_software_name="kafkaproto-bench", client_software_version="1.2.3")
    ns = {"H": RequestHeader, "B": ApiVersionsRequest, "enc": encode_request, "h": header, "b": body}
    out["E3"] = ("RequestHeader + ApiVersionsRequest v3: built and framed, and framed alone", [
        Bench(KP, "enc(H(request_api_key=18, request_api_version=3, correlation_id=1, client_id='bench'), "
                  "B(client_software_name='kafkaproto-bench', client_software_version='1.2.3'), 3)", ns),
        Bench("frame only", "enc(h, b, 3)", ns)])

    msg = kp_metadata(values)
    as_dict = msg.to_dict()
    out["E4"] = ("to_dict() and from_dict() of scenario A's MetadataResponse", [
        Bench("to_dict", "m.to_dict()", {"m": msg}),
        Bench("from_dict", "M.from_dict(d)", {"M": MetadataResponse, "d": as_dict})])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    import kafkaproto
    print(f"kafkaproto {kafkaproto.__version__} ({'compiled' if kafkaproto.compiled() else 'PURE PYTHON'}) "
          f"from {kafkaproto.__file__}")
    repeats, min_time = (3, 0.1) if args.quick else (7, 0.25)
    results, targets = {}, []
    for key, (title, benches) in scenarios().items():
        measure(benches, repeats, min_time)
        base = benches[0].median
        print(f"\n{key}: {title}")
        results[key] = {"title": title, "impls": {}}
        for b in benches:
            results[key]["impls"][b.impl] = {"us": b.median * 1e6, "ratio_vs_first": b.median / base,
                                             "samples_us": [s * 1e6 for s in b.samples]}
            print(f"  {b.impl:<14} {b.median * 1e6:>11.3f} µs   {b.median / base:>6.2f}x {benches[0].impl}")
        if key in ("E1", "E2"):
            ratio = base / benches[1].median
            targets.append({"target": f"{key}: generated classes build no slower than hand-written ones",
                            "pass": ratio <= 1.0, "detail": f"{ratio:.2f}x the hand-written time "
                                                            f"(stretch: 0.5x {'met' if ratio <= 0.5 else 'not met'})"})
        if key == "E3":
            results[key]["build_and_frame_over_frame"] = base / benches[1].median
            print(f"  building adds {base / benches[1].median:.1f}x the framing alone")
    print()
    for t in targets:
        print(f"{'PASS' if t['pass'] else 'FAIL'}  {t['target']}: {t['detail']}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"results": results, "targets": targets}, fh, indent=1)
    return 0 if all(t["pass"] for t in targets) else 1


if __name__ == "__main__":
    sys.exit(main())
