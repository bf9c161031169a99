"""Record batch benchmark: kafkaproto.records against aiokafka's compiled records and kafka-python.

One 1000-record batch (keys of 10 bytes, values of 100, one header each; about
131 KB uncompressed) in each codec. For each: decode to record objects, Arrow
table, and build. Every timing is the median of interleaved repeats in this
one run; ratios are peer time / kafkaproto time.

    pip install '.[bench]' && python benchmarks/records.py [--quick] [--json PATH]
"""

import argparse
import gc
import json
import os
import platform
import random
import statistics
import sys
import time

import pyarrow as pa

import kafkaproto
from kafkaproto import records as kp

from aiokafka.record import default_records as aio_default  # noqa: E402
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords  # noqa: E402
from kafka.record import MemoryRecords as KpyMemoryRecords  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder as KpyBuilder  # noqa: E402

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
N = 1000


def make_rows():
    rng = random.Random(42)
    words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz ") for _ in range(20)) for _ in range(50)]
    rows = []
    for i in range(N):
        value = b"".join(rng.choice(words) for _ in range(5))
        rows.append((b"key-%06d" % i, value, [("trace-id", b"%016x" % rng.getrandbits(64))],
                     1_700_000_000_000 + i))
    return rows


def kp_build(rows, codec):
    b = kp.RecordBatchBuilder(compression=codec)
    for key, value, headers, ts in rows:
        b.append(key, value, headers=headers, timestamp=ts)
    return b.build()


def aio_build(rows, codec):
    b = aio_default.DefaultRecordBatchBuilder(2, CODECS.index(codec), 0, -1, -1, -1, 10**8)
    for i, (key, value, headers, ts) in enumerate(rows):
        b.append(i, ts, key, value, headers)
    return bytes(b.build())


def kpy_build(rows, codec):
    b = KpyBuilder(2, CODECS.index(codec), 0, -1, -1, -1, 10**8)
    for i, (key, value, headers, ts) in enumerate(rows):
        b.append(i, ts, key, value, headers)
    return bytes(b.build())


def kp_decode(data):
    return kp.read_records(data)


def aio_decode(data):
    out = []
    mr = AioMemoryRecords(data)
    while (batch := mr.next_batch()) is not None:
        out.extend(batch)
    return out


def kpy_decode(data):
    out = []
    for batch in KpyMemoryRecords(data):
        out.extend(batch)
    return out


def kpy_to_arrow(data):
    """The same table as kafkaproto.records.to_arrow, built from kafka-python's decoded records."""
    cols = {name: [] for name in kp.arrow_schema().names}
    for batch in KpyMemoryRecords(data):
        codec = CODECS[batch.compression_type]
        ts_type = "LogAppendTime" if batch.timestamp_type else "CreateTime"
        for r in batch:
            cols["offset"].append(r.offset)
            cols["timestamp"].append(r.timestamp)
            cols["timestamp_type"].append(ts_type)
            cols["key"].append(r.key)
            cols["value"].append(r.value)
            cols["headers"].append([{"key": k, "value": v} for k, v in r.headers])
            cols["partition_leader_epoch"].append(batch.leader_epoch)
            cols["producer_id"].append(batch.producer_id)
            cols["producer_epoch"].append(batch.producer_epoch)
            cols["sequence"].append(batch.base_sequence if batch.base_sequence < 0
                                    else batch.base_sequence + r.offset - batch.base_offset)
            cols["transactional"].append(batch.is_transactional)
            cols["control"].append(batch.is_control_batch)
            cols["compression"].append(codec)
    return pa.table(cols, schema=kp.arrow_schema())


def time_once(fn, arg, loops):
    t = time.perf_counter()
    for _ in range(loops):
        fn(arg)
    return (time.perf_counter() - t) / loops


def measure(cases, repeats, min_time):
    """cases: {name: (fn, arg)}; medians of interleaved repeats, in seconds per call."""
    loops = {}
    for name, (fn, arg) in cases.items():
        fn(arg)
        n, elapsed = 1, 0.0
        while elapsed < min_time / 4:
            elapsed = time_once(fn, arg, n) * n
            n *= 2
        loops[name] = max(1, int(n * min_time / 4 / max(elapsed, 1e-9)))
    samples = {name: [] for name in cases}
    for _ in range(repeats):
        for name, (fn, arg) in cases.items():
            samples[name].append(time_once(fn, arg, loops[name]))
    return {name: statistics.median(s) for name, s in samples.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = ap.parse_args(argv)
    repeats, min_time = (3, 0.1) if args.quick else (9, 0.3)
    t0 = time.perf_counter()
    print(f"kafkaproto {kafkaproto.__version__} compiled={kafkaproto.compiled()}; "
          f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    if not kafkaproto.compiled():
        print("WARNING: pure-Python fallback in use; these numbers do not measure the compiled codec")
    rows = make_rows()
    results = {}
    targets = []
    print(f"repeats={repeats}, median; ratio = peer / kafkaproto\n")
    print(f"{'codec':7} {'bytes':>7}  {'op':9} {'kafkaproto':>11} {'aiokafka':>10} {'kafka-py':>10}"
          f" {'vs aio':>7} {'vs kpy':>7}")
    for codec in CODECS:
        data = kp_build(rows, codec)
        # Everyone reads everyone's bytes, and the decoded records agree, before anything is timed.
        want = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in kp_decode(data)]
        for reader in (aio_decode, kpy_decode):
            got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in reader(data)]
            assert got == want, f"{reader.__name__} disagrees on {codec}"
        assert kp.to_arrow(data).equals(kpy_to_arrow(data)), f"tables differ for {codec}"
        gc.collect()
        decode = measure({"kafkaproto": (kp_decode, data), "aiokafka": (aio_decode, data),
                          "kafka-python": (kpy_decode, data)}, repeats, min_time)
        arrow = measure({"kafkaproto": (lambda d: kp.to_arrow(d), data),
                         "kafka-python": (kpy_to_arrow, data)}, repeats, min_time)
        build = measure({"kafkaproto": (lambda c: kp_build(rows, c), codec),
                         "aiokafka": (lambda c: aio_build(rows, c), codec),
                         "kafka-python": (lambda c: kpy_build(rows, c), codec)}, repeats, min_time)
        results[codec] = {"bytes": len(data), "decode": decode, "to_arrow": arrow, "build": build}
        for op, m in (("decode", decode), ("to_arrow", arrow), ("build", build)):
            aio = m.get("aiokafka")
            ours = m["kafkaproto"]
            aio_ms = f"{aio * 1e3:.3f}ms" if aio else "-"
            aio_ratio = f"{aio / ours:.2f}x" if aio else "-"
            print(f"{codec:7} {len(data):>7,}  {op:9} {ours * 1e3:>9.3f}ms {aio_ms:>10} "
                  f"{m['kafka-python'] * 1e3:>8.3f}ms {aio_ratio:>7} {m['kafka-python'] / ours:>6.2f}x")
        ratio = decode["aiokafka"] / decode["kafkaproto"]
        targets.append({"target": f"{codec}: decode >= 2x faster than aiokafka", "ratio": ratio,
                        "pass": ratio >= 2})
        ratio = arrow["kafka-python"] / arrow["kafkaproto"]
        targets.append({"target": f"{codec}: to_arrow >= 5x faster than a table from kafka-python's records",
                        "ratio": ratio, "pass": ratio >= 5})
    print("\nTargets:")
    for t in targets:
        print(f"  {'PASS' if t['pass'] else 'FAIL'}  {t['target']}: {t['ratio']:.2f}x")
    elapsed = time.perf_counter() - t0
    print(f"\n{sum(t['pass'] for t in targets)}/{len(targets)} targets pass; run took {elapsed:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join([os.path.basename(sys.executable)] + sys.argv),
                       "python": sys.version, "cpus": os.cpu_count(), "repeats": repeats,
                       "results": results, "targets": targets, "elapsed_s": elapsed}, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
