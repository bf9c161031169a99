#!/usr/bin/env python
"""Where kafkaproto's decode time goes, next to kio's native reader (a diagnostic, not the benchmark).

    python benchmarks/diagnose_decode.py

For the scenarios of benchmarks/run.py it prints, per decode:

* the time with the collector enabled and disabled (same process, median of 7);
* how many collections of each generation the decodes set off, and their cost;
* whether a decoded message keeps an extra reference (the leak run.py reports).
  If it does, the time is also measured with that reference released right after
  the call (ctypes ``Py_DecRef``, its own cost subtracted): an estimate of the time
  once the leak is fixed. The release is only done when the extra reference is
  detected, so this stays safe after the fix.
"""

import ctypes
import gc
import os
import statistics
import sys
import time
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (the scenarios, and the kafkaproto import fallback)

from kafkaproto import decode_request, encode_request  # noqa: E402
from kafkaproto.messages import (  # noqa: E402
    ApiVersionsRequest, FetchResponse, MetadataRequest, MetadataResponse, ProduceRequest)
from kio.serial import entity_reader  # noqa: E402

Py_DecRef = ctypes.pythonapi.Py_DecRef
Py_DecRef.argtypes = [ctypes.py_object]
Py_DecRef.restype = None
Py_IncRef = ctypes.pythonapi.Py_IncRef
Py_IncRef.argtypes = [ctypes.py_object]
Py_IncRef.restype = None


def per_call_us(stmt, ns, gc_on, n):
    setup = "gc.enable()" if gc_on else "pass"
    return statistics.median(timeit.repeat(stmt, setup, globals=dict(ns, gc=gc), number=n, repeat=7)) / n * 1e6


def collections(stmt, ns, n):
    """Collections per call by generation, and their total time per call (µs)."""
    counts, cost, started = [0, 0, 0], [0.0], [0.0]

    def cb(phase, info):
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            counts[info["generation"]] += 1
            cost[0] += time.perf_counter() - started[0]
    gc.callbacks.append(cb)
    try:
        timeit.Timer(stmt, "gc.enable()", globals=dict(ns, gc=gc)).timeit(n)
    finally:
        gc.callbacks.remove(cb)
    return [c / n for c in counts], cost[0] / n * 1e6


def main():
    keep = object()
    for _ in range(3_000_000):
        Py_IncRef(keep)  # so that timing Py_DecRef(keep) below never frees it
    ctypes_us = per_call_us("dec(keep)", dict(dec=Py_DecRef, keep=keep), True, 200_000)
    print(f"kafkaproto {run.kafkaproto.__file__} compiled={run.kafkaproto.compiled()}; "
          f"one ctypes call = {ctypes_us:.3f} µs (subtracted)")
    print(f"heap: {len(gc.get_objects()):,} tracked objects, gc thresholds {gc.get_threshold()}\n")

    cases = []
    for key, cls, msg, v, kmsg in (
            ("A", MetadataResponse, run.kp_metadata(run.metadata_values()), 12,
             run.kio_metadata(run.metadata_values(), 12)),
            ("B", FetchResponse, run.kp_fetch(run.fetch_values()), 13, run.kio_fetch(run.fetch_values(), 13)),
            ("C", ProduceRequest, run.kp_produce(run.produce_values(), 13), 13,
             run.kio_produce(run.produce_values(), 13))):
        data = msg.encode(v)
        leaked = sys.getrefcount(cls.decode(data, v)) - 1  # 0 for a fresh temporary
        ns = dict(cls=cls, data=data, v=v, dec=Py_DecRef, r=entity_reader(type(kmsg)))
        cases.append((key, "cls.decode(data, v)", "dec(cls.decode(data, v))", leaked, ns, "r(data, 0)"))
    for key, vals, body_cls, name in (("D1", run.d1_values(), ApiVersionsRequest, "api_versions"),
                                      ("D2", run.d2_values(), MetadataRequest, "metadata")):
        h, b = run.kp_request(vals, body_cls)
        payload = encode_request(h, b, vals["version"])[4:]
        q = decode_request(payload)
        leaked = min(sys.getrefcount(q.header), sys.getrefcount(q.body)) - 2  # the attribute and the argument
        kh, kb = run.kio_request(vals, name)
        ns = dict(d=decode_request, p=payload, dec=Py_DecRef, hr=entity_reader(type(kh)),
                  readers={(kb.__api_key__, kb.__version__): entity_reader(type(kb))})
        cases.append((key, "d(p)", "q = d(p); dec(q[0]); dec(q[1])", leaked, ns,
                      "h, n = hr(p, 0); readers[h.request_api_key, h.request_api_version](p, n)"))

    print(f"{'':3} {'impl':<10} {'gc on µs':>10} {'gc off µs':>10} {'gen0/call':>10} {'gen1/call':>10} "
          f"{'gen2/call':>10} {'gc µs/call':>10}")
    for key, stmt, comp_stmt, leaked, ns, kio_stmt in cases:
        n = max(1, int(0.2 / (per_call_us(kio_stmt, ns, False, 5) * 1e-6)))
        rows = [("kio", kio_stmt, 0)]
        if leaked == 0:
            rows.insert(0, ("kafkaproto", stmt, 0))
        else:
            refs = comp_stmt.count("dec(")
            rows.insert(0, ("kp+fix", comp_stmt, refs * ctypes_us))
        for impl, s, minus in rows:
            on = per_call_us(s, ns, True, n) - minus
            off = per_call_us(s, ns, False, n) - minus
            per_gen, gc_us = collections(s, ns, n)
            print(f"{key:3} {impl:<10} {on:10.3f} {off:10.3f} {per_gen[0]:10.3f} {per_gen[1]:10.3f} "
                  f"{per_gen[2]:10.4f} {gc_us:10.3f}")
        if leaked:
            print(f"    (kafkaproto's decoded message keeps {leaked} extra reference(s): 'kp+fix' releases it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
