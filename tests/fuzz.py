"""A mutation fuzzer for every decoder: messages at every version, request and response frames, record data,
and the capture reader on whole pcap/pcapng files.

    python tests/fuzz.py --inputs 1000000 --jobs 2 --out .fuzz     # a long run; findings and summary in .fuzz/
    python tests/fuzz.py --inputs 4000 --seed 7                    # a short deterministic slice (tests/test_fuzz.py)

Inputs are mutations of valid encodings: a default and a random instance of every class at every version,
request frames with their responses, record batches of every magic and codec (and batches whose records were
damaged before compression), every frame of the real traffic in tests/data/captures/, and those captures as
files (pcap, pcapng and gzip), read by kafkaproto.capture to exchanges and records. Each input runs in a
worker process, on the compiled and the pure-Python codecs. A worker that crashes or hangs is replaced and the
input kept. A finding is one of:

- crash: the worker died (a segfault, an abort);
- hang: one input ran longer than --timeout seconds;
- foreign: an exception other than the decoder's own (DecodeError, UnsupportedVersionError, RecordsError,
  FrameError);
- disagree: compiled and pure gave different results (values, re-encoded bytes, errors or error offsets);
- memory: the worker's peak memory rose by more than --memory-factor times the input plus twice the records'
  decompression cap (CAP) plus 16 MiB while the input ran.

Each finding is written to OUT/findings/ (the input and what happened); OUT/summary.json has the counts.
The run is deterministic for a given --seed, --inputs and --jobs.
"""

import argparse
import contextlib
import itertools
import json
import multiprocessing
import os
import random
import resource
import struct
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
CAP = 1 << 20  # max_decompressed for record data in the fuzzer
BATCH = 64  # inputs sent to a worker at once
KINDS = (("message", 50), ("request", 14), ("response", 14), ("records", 17), ("frames", 5), ("capture", 2))
INTERESTING = (0, 1, 2, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
               0xFFFFFFFE, 0x10000, 0x7FFFFFFE, 61, 12)


# ---- seeds ------------------------------------------------------------------------------------------------

def random_value(rng, f, version, depth):
    from kafkaproto import Uuid
    from kafkaproto._generic import INT_RANGES

    def item():
        if f.struct is not None:
            return random_message(rng, f.struct, version, depth + 1)
        if f.kind in INT_RANGES:
            lo, hi = INT_RANGES[f.kind]
            return rng.choice([lo, hi, 0, -1 if lo < 0 else 1, rng.randint(lo, hi), rng.randint(0, 300)])
        if f.kind == "bool":
            return rng.random() < 0.5
        if f.kind == "float64":
            return rng.choice([0.0, -1.5, 1e300, float("inf")])
        if f.kind == "string":
            return rng.choice(["", "topic", "é\u4e2d", "x" * rng.randint(0, 40)])
        if f.kind == "uuid":
            return Uuid.from_bytes(rng.randbytes(16))
        if f.kind == "records":
            return rng.choice(RECORD_SEEDS) if RECORD_SEEDS else b""
        return rng.randbytes(rng.randint(0, 24))
    if version in f.nullable_versions and rng.random() < 0.2:
        return None
    if f.array:
        return [item() for _ in range(rng.randint(0, 3 if depth < 3 else 1))]
    return item()


def random_message(rng, cls, version, depth=0):
    values = {f.attr: random_value(rng, f, version, depth) for f in cls._fields if version in f.versions}
    return cls(**values)


RECORD_SEEDS = []


def record_seeds(rng):
    from kafkaproto.records import _pyrecords
    out = []
    for magic, codecs in ((0, "none gzip snappy lz4"), (1, "none gzip snappy lz4"), (2, "none gzip snappy lz4 zstd")):
        for codec in codecs.split():
            for count in (1, 3, 40):
                options = {"transactional": True, "producer_id": 9} if magic == 2 and count == 3 else {}
                b = _pyrecords.RecordBatchBuilder(magic=magic, compression=codec, base_offset=rng.randint(0, 1000),
                                                  **options)
                for i in range(count):
                    headers = [("h", b"v" * i)] if magic == 2 and i % 2 else ()
                    b.append(rng.choice([None, b"key"]), rng.randbytes(rng.randint(0, 30)), headers=headers,
                             timestamp=1700000000000 + i)
                out.append(b.build())
    control = _pyrecords.RecordBatchBuilder(transactional=True, control=True, producer_id=3)
    control.append_end_txn_marker(True, 5)
    out.append(control.build())
    return out


def capture_frames():
    """(requests, responses) from the real captures: request payloads, and (payload, api key, version)."""
    sys.path.insert(0, str(HERE))
    from kafkaproto import split_frames
    from pcap_streams import tcp_streams
    requests, responses = [], []
    for path in sorted((HERE / "data" / "captures").glob("*.pcap")):
        streams = tcp_streams(path.read_bytes())
        (broker,) = set.intersection(*({a[1], b[1]} for a, b in streams))
        for (src, dst), data in streams.items():
            if dst[1] != broker:
                continue
            pending = {}
            for frame in split_frames(data):
                key, version, cid = struct.unpack_from(">hhi", frame)
                pending[cid] = (key, version)
                requests.append(frame)
            for frame in split_frames(streams.get((dst, src), b"")):
                (cid,) = struct.unpack_from(">i", frame)
                if cid in pending:
                    responses.append((frame, *pending.pop(cid)))
    return requests, responses


def capture_seeds():
    """The real captures as files: classic pcap as recorded, the same packets as pcapng, and gzip-compressed."""
    import gzip
    import io

    import capture_files
    from kafkaproto.capture.pcap import read_packets
    out = []
    for path in sorted((HERE / "data" / "captures").glob("*.pcap")):
        data = path.read_bytes()
        packets = list(read_packets(io.BytesIO(data)))
        ng = capture_files.pcapng([(0, p.timestamp_ns, p.data, p.original_length) for p in packets],
                                  interfaces=((packets[0].link_type, 9),))
        out += [data, ng, gzip.compress(data)]
    return out


def records_fields(msg):
    """Every non-empty records field in a decoded message, at any depth."""
    for f in type(msg)._fields:
        value = getattr(msg, f.attr)
        if value is None:
            continue
        if f.kind == "records" and len(value):
            yield bytes(value)
        elif f.struct is not None:
            for item in value if f.array else [value]:
                yield from records_fields(item)


def build_seeds(seed):
    """{kind: [(target, bytes), ...]}: the valid inputs that mutations start from."""
    import kafkaproto
    from kafkaproto import _generated, encode_request, encode_response
    from kafkaproto.messages import RequestHeader, ResponseHeader, apis, load_implementation
    rng = random.Random(seed)
    RECORD_SEEDS[:] = record_seeds(rng)
    classes = load_implementation("python")
    seeds = {kind: [] for kind, _ in KINDS}
    for name in sorted(_generated.SPECS):
        cls = classes[name]
        for version in cls.valid_versions:
            for msg in (cls(), random_message(rng, cls, version)):
                try:
                    seeds["message"].append((("message", name, version), msg.encode(version)))
                except kafkaproto.KafkaProtoError:
                    pass
    for info in apis():
        for version in info.valid_versions:
            body = random_message(rng, info.request, version)
            header = RequestHeader(request_api_key=info.api_key, request_api_version=version,
                                   correlation_id=rng.randint(0, 99), client_id=rng.choice([None, "fuzz"]))
            try:
                seeds["request"].append((("request",), encode_request(header, body, version)[4:]))
                reply = random_message(rng, info.response, version)
                frame = encode_response(ResponseHeader(correlation_id=7), reply, version)[4:]
                seeds["response"].append((("response", info.api_key, version), frame))
            except kafkaproto.KafkaProtoError:
                pass
    requests, responses = capture_frames()
    seeds["request"] += [(("request",), f) for f in requests]
    seeds["response"] += [(("response", k, v), f) for f, k, v in responses]
    seeds["records"] = [(("records",), r) for r in RECORD_SEEDS]
    for frame in requests:
        try:
            body = kafkaproto.decode_request(frame).body
        except kafkaproto.KafkaProtoError:
            continue
        seeds["records"] += [(("records",), r) for r in records_fields(body)]
    seeds["frames"] = [(("frames",), b"".join(struct.pack(">i", len(f)) + f for f in requests[i:i + 5]))
                       for i in range(0, len(requests), 5)]
    seeds["capture"] = [(("capture",), data) for data in capture_seeds()]
    return seeds


# ---- mutations -----------------------------------------------------------------------------------------------

def mutate(rng, data, donors):
    data = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3, 4))):
        n = len(data)
        op = rng.randrange(10)
        at = rng.randrange(n + 1)
        if op == 0 and n:
            data[min(at, n - 1)] ^= 1 << rng.randrange(8)
        elif op == 1 and n:
            data[min(at, n - 1)] = rng.choice((0, 0xFF, 0x7F, 0x80, 1, rng.randrange(256)))
        elif op == 2:
            data[at:at] = rng.randbytes(rng.randint(1, 4))
        elif op == 3 and n:
            del data[at:at + rng.randint(1, 8)]
        elif op == 4:
            del data[at:]
        elif op in (5, 6):
            width = 2 if op == 5 else 4
            value = rng.choice(INTERESTING + (n, n - at, n + 1, rng.randrange(1 << (8 * width))))
            data[at:at + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "big")
        elif op == 7 and n:
            end = min(n, at + rng.randint(1, 32))
            data[at:at] = data[at:end] * rng.randint(1, 8)
        elif op == 8 and donors:
            donor = rng.choice(donors)
            cut = rng.randrange(len(donor) + 1)
            data[at:] = donor[cut:]
        else:
            data[at:at] = rng.choice((b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x80", b"\x00", b"\xff\xff"))
    return bytes(data)


def damaged_inside(rng, batch):
    """A magic-2 batch whose records are damaged and then compressed, so record parsing sees the damage."""
    from kafkaproto.records import _compression
    from crc32c import crc32c
    if len(batch) < 61 or batch[16] != 2 or batch[22] & 7:
        return None
    inner = mutate(rng, batch[61:], ())
    codec = rng.randint(1, 4)
    payload = _compression.compress(codec, inner)
    head = bytearray(batch[:61])
    struct.pack_into(">i", head, 8, 49 + len(payload))
    head[22] = (head[22] & ~7) | codec
    out = head + payload
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def inputs(seed, count, seeds, kinds=None):
    """count (target, data) pairs, the same for the same seed; kinds: only these (default all, weighted)."""
    rng = random.Random(seed)
    names = [kind for kind, _ in KINDS if kinds is None or kind in kinds]
    weights = [w for kind, w in KINDS if kinds is None or kind in kinds]
    donors = {kind: [d for _, d in items] for kind, items in seeds.items()}
    for _ in range(count):
        kind = rng.choices(names, weights)[0]
        target, data = rng.choice(seeds[kind])
        if kind == "records" and rng.random() < 0.3:
            damaged = damaged_inside(rng, data)
            if damaged is not None:
                yield (kind, rng.random() < 0.3), damaged
                continue
        if kind == "records":
            target = (kind, rng.random() < 0.3)  # (kind, validate): mostly past the CRC check
        elif kind == "frames":
            target = (kind, rng.randrange(1 << 16))  # the chunking of the stream
        yield target, mutate(rng, data, donors[kind])


# ---- running one input ----------------------------------------------------------------------------------------

class Decoders:
    """Both implementations of every decoder, loaded once per worker."""

    def __init__(self):
        import kafkaproto
        from kafkaproto.messages import load_implementation
        from kafkaproto.protocol import frame_functions
        from kafkaproto.records import _crecords, _pyrecords
        self.impls = {impl: (load_implementation(impl), frame_functions(impl).decode_request,
                             frame_functions(impl).decode_response, recs)
                      for impl, recs in (("compiled", _crecords), ("python", _pyrecords))}
        self.expected = (kafkaproto.DecodeError, kafkaproto.UnsupportedVersionError, kafkaproto.RecordsError,
                         kafkaproto.FrameError)
        try:
            import pyarrow  # noqa: F401
            self.arrow = True
        except ImportError:
            self.arrow = False
        if self.arrow:
            # The first table each implementation builds loads pyarrow's lazy parts (about 50 MB, once per
            # process): warm them up here so that no input is blamed for it.
            builder = _pyrecords.RecordBatchBuilder()
            builder.append(b"k", b"v", timestamp=1)
            for recs in (_crecords, _pyrecords):
                recs.to_arrow(builder.build())

    def outcome(self, impl, target, data):
        try:
            return ("ok",) + self.decode(impl, target, data)
        except self.expected as e:
            return ("error", type(e).__name__, str(e))

    def decode(self, impl, target, data):
        classes, decode_request, decode_response, recs = self.impls[impl]
        kind = target[0]
        if kind == "message":
            msg = classes[target[1]].decode(data, target[2])
            return plain(msg, target[2])
        if kind == "request":
            req = decode_request(data)
            return plain(req.header, req.header.request_api_version) + plain(req.body, req.header.request_api_version)
        if kind == "response":
            resp = decode_response(data, target[1], target[2])
            return plain(resp.header, 0) + plain(resp.body, resp.version) + (resp.version,)
        if kind == "records":
            return read_records(recs, data, target[1], self.arrow and data[-1:] in (b"\0", b"\1"))
        if kind == "frames":
            from kafkaproto import FrameBuffer
            buf, out, rng = FrameBuffer(max_frame=1 << 20), [], random.Random(target[1])
            at = 0
            while at < len(data):
                step = rng.randint(1, 64)
                out += buf.feed(data[at:at + step])
                at += step
            return (tuple(out), buf.pending)
        if kind == "capture":  # the decoders in use, with the compiled capture path or its Python twin
            import io

            from kafkaproto import capture
            with capture_path(impl):
                reader = capture.read_capture(io.BytesIO(data), name="fuzz")
                out = tuple((ex.status, ex.api_key, ex.api_version, ex.correlation_id, ex.request_size,
                             ex.response_size, ex.error, ex.error_offset, ex.topics, tuple(ex.partition_errors))
                            for ex in reader)
                rows = tuple(tuple(sorted(row)) for row in capture.records(capture.read_capture(io.BytesIO(data))))
                return (out, len(rows), reader.stats.to_dict())
        raise AssertionError(kind)


@contextlib.contextmanager
def capture_path(impl):
    """The capture reader's compiled parts (pcap records, the packet loop, walk) off for impl "python"."""
    from kafkaproto import fields
    from kafkaproto.capture import exchanges, pcap, reader
    saved = reader.compiled_loop, pcap.compiled_pcap, pcap.compiled_pcapng, exchanges.walk
    if impl == "python":
        reader.compiled_loop, pcap.compiled_pcap, pcap.compiled_pcapng, exchanges.walk = \
            None, None, None, fields.python_walk
    try:
        yield
    finally:
        reader.compiled_loop, pcap.compiled_pcap, pcap.compiled_pcapng, exchanges.walk = saved


def plain(msg, version):
    """A comparable form of a decoded message: its values, and its bytes (or error) when written back."""
    try:
        again = msg.encode(version)
    except Exception as e:  # noqa: BLE001 - compared, not judged: both implementations must agree
        again = f"{type(e).__name__}: {e}"
    return (repr(msg.to_dict()), again)


def read_records(recs, data, validate, arrow):
    out = []
    for batch in recs.iter_batches(data, validate=validate, max_decompressed=CAP):
        head = (type(batch).__name__, batch.base_offset, batch.last_offset, batch.magic, int(batch.compression),
                batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.is_control)
        rows = [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers), r.attributes) for r in batch.records()]
        lazy = [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers), r.attributes) for r in batch]
        assert rows == lazy, "lazy iteration differs from records()"
        out.append((head, tuple(rows)))
    if arrow:
        out.append(recs.to_arrow(data, validate=validate, max_decompressed=CAP))  # compared with Table.equals
    return tuple(out)


def run_one(decoders, target, data):
    """"ok" or "error" when both implementations agree on an expected result; otherwise (kind, detail)."""
    try:
        results = {impl: decoders.outcome(impl, target, data) for impl in decoders.impls}
    except Exception as e:  # noqa: BLE001 - the point of the fuzzer
        return ("foreign", "".join(traceback.format_exception_only(type(e), e)).strip()
                + "\n" + "".join(traceback.format_tb(e.__traceback__)[-3:]))
    a, b = results.values()
    if a != b:
        return ("disagree", f"compiled: {str(a)[:600]}\npython: {str(b)[:600]}")
    return a[0]  # "ok" or "error"


def worker(conn, progress, limit_bytes, selftest):
    """Run batches of inputs from conn; progress[0] is the index of the input now running."""
    if limit_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    decoders = Decoders()
    peak = PeakMemory()
    while True:
        job = conn.recv()
        if job is None:
            return
        results = []
        for i, (target, data) in enumerate(job):
            progress[0], progress[1] = i, time.monotonic()
            before = peak.reset()
            start = time.perf_counter()
            if selftest and target[0] == "selftest":
                selftest_input(data)
            finding = run_one(decoders, target, data)
            elapsed = time.perf_counter() - start
            grew = peak.read() - before
            results.append((finding, elapsed, grew))
        progress[0] = -1
        conn.send(results)


class PeakMemory:
    """The process's peak resident memory since the last reset (Linux: VmHWM, which clear_refs resets;
    elsewhere ru_maxrss, which never resets, so only new highs of the whole process show)."""

    def __init__(self):
        self.proc = Path("/proc/self/status").is_file() and os.access("/proc/self/clear_refs", os.W_OK)

    def reset(self):
        """Start a new peak here; returns the memory in use now (bytes)."""
        if not self.proc:
            return self.read()
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return self._status("VmRSS")

    def read(self):
        if not self.proc:
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return self._status("VmHWM")

    @staticmethod
    def _status(key):
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
        return 0


def selftest_input(data):
    """Inputs that misbehave on purpose, so the harness can be tested (only with selftest on)."""
    if data == b"crash":
        os.abort()
    if data == b"hang":
        time.sleep(3600)
    if data == b"memory":
        hog = bytearray(256 << 20)
        hog[::4096] = b"\1" * len(hog[::4096])


# ---- the parent -----------------------------------------------------------------------------------------------

class Worker:
    def __init__(self, ctx, limit_bytes, selftest):
        self.conn, child = ctx.Pipe()
        self.progress = ctx.Array("d", [-1.0, 0.0], lock=False)
        self.proc = ctx.Process(target=worker, args=(child, self.progress, limit_bytes, selftest), daemon=True)
        self.proc.start()
        self.job = None

    def stop(self):
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()


def run(count, seed=1, jobs=2, timeout=10.0, memory_factor=256, out=None, extra=(), selftest=False,
        log=lambda line: None, kinds=None):
    """Fuzz count inputs (plus extra (target, data) pairs first); returns the summary dict."""
    started = time.monotonic()
    ctx = multiprocessing.get_context("spawn")
    limit = 8 << 30
    workers = [Worker(ctx, limit, selftest) for _ in range(jobs)]  # before the parent grows
    seeds = build_seeds(seed)
    stream = itertools.chain(extra, inputs(seed, count, seeds, kinds))
    summary = {"inputs": 0, "decoded": 0, "refused": 0, "seed": seed,
               "seeds": {k: len(v) for k, v in seeds.items()}, "findings": Counter(),
               "by_kind": Counter(), "slowest": [], "most_memory": [], "cap": CAP, "memory_factor": memory_factor}
    findings = []
    slowest, hungriest = [], []

    def record(target, data, kind, detail):
        findings.append({"kind": kind, "target": list(target), "input": data.hex(), "detail": detail})
        summary["findings"][kind] += 1
        log(f"finding: {kind} {target} {detail.splitlines()[0] if detail else ''}")

    def account(target, data, result):
        finding, elapsed, grew = result
        summary["inputs"] += 1
        summary["by_kind"][target[0]] += 1
        slowest.append((elapsed, target, len(data)))
        hungriest.append((grew, target, len(data)))
        if isinstance(finding, str):
            summary["decoded" if finding == "ok" else "refused"] += 1
            finding = None
        if finding:
            record(target, data, *finding)
        if grew > memory_factor * len(data) + 2 * CAP + (16 << 20):
            record(target, data, "memory", f"peak memory rose by {grew} bytes for {len(data)} input bytes")
        if len(slowest) > 1000:
            slowest.sort(reverse=True, key=lambda x: x[0])
            del slowest[10:]
            hungriest.sort(reverse=True, key=lambda x: x[0])
            del hungriest[10:]

    last_log = time.monotonic()
    exhausted = False
    try:
        while True:
            for i, w in enumerate(workers):
                if w.job is None and not exhausted:
                    job = [x for _, x in zip(range(BATCH), stream)]
                    exhausted = len(job) < BATCH
                    if job:
                        w.job = job
                        w.conn.send(job)
                if w.job is None:
                    continue
                if w.conn.poll(0.01):
                    try:
                        results = w.conn.recv()
                    except EOFError:
                        results = None
                    if results is not None:
                        for (target, data), result in zip(w.job, results):
                            account(target, data, result)
                        w.job = None
                        continue
                index, since = int(w.progress[0]), w.progress[1]
                dead = not w.proc.is_alive()
                hung = index >= 0 and time.monotonic() - since > timeout
                if dead or hung:
                    w.stop()
                    at = max(index, 0)
                    target, data = w.job[at]
                    record(target, data, "crash" if dead else "hang",
                           f"exit code {w.proc.exitcode}" if dead else f"over {timeout} s")
                    summary["inputs"] += 1
                    rest = w.job[at + 1:]
                    workers[i] = Worker(ctx, limit, selftest)
                    if rest:
                        workers[i].job = rest
                        workers[i].conn.send(rest)
            if exhausted and all(w.job is None for w in workers):
                break
            if time.monotonic() - last_log > 30:
                last_log = time.monotonic()
                log(f"{summary['inputs']} inputs, {sum(summary['findings'].values())} findings, "
                    f"{summary['inputs'] / (last_log - started):.0f}/s")
    finally:
        for w in workers:
            if w.proc.is_alive():
                try:
                    w.conn.send(None)
                except (BrokenPipeError, OSError):
                    pass
            w.proc.join(timeout=5)
            w.stop()
    slowest.sort(reverse=True, key=lambda x: x[0])
    hungriest.sort(reverse=True, key=lambda x: x[0])
    summary["seconds"] = round(time.monotonic() - started, 1)
    summary["slowest"] = [{"seconds": round(t, 4), "target": list(g), "bytes": n} for t, g, n in slowest[:5]]
    summary["most_memory"] = [{"bytes_grown": m, "target": list(g), "bytes": n} for m, g, n in hungriest[:5]]
    summary["findings"] = dict(summary["findings"])
    summary["by_kind"] = dict(summary["by_kind"])
    summary["finding_list"] = findings
    if out:
        out = Path(out)
        (out / "findings").mkdir(parents=True, exist_ok=True)
        for n, f in enumerate(findings):
            (out / "findings" / f"{n:04d}-{f['kind']}.json").write_text(json.dumps(f, indent=1))
        brief = {k: v for k, v in summary.items() if k != "finding_list"}
        (out / "summary.json").write_text(json.dumps(brief, indent=1))
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds one input may take")
    parser.add_argument("--memory-factor", type=int, default=256)
    parser.add_argument("--out", default=".fuzz")
    parser.add_argument("--kinds", help="comma-separated kinds to fuzz: " + ", ".join(k for k, _ in KINDS))
    parser.add_argument("--replay", metavar="FINDING.json", help="run one finding's input here and show the result")
    args = parser.parse_args(argv)
    if args.replay:
        finding = json.loads(Path(args.replay).read_text())
        target, data = tuple(finding["target"]), bytes.fromhex(finding["input"])
        decoders = Decoders()
        for impl in decoders.impls:
            print(impl, str(decoders.outcome(impl, target, data))[:2000])
        return 0
    kinds = set(args.kinds.split(",")) if args.kinds else None
    if kinds and not kinds <= {k for k, _ in KINDS}:
        parser.error(f"--kinds: unknown {sorted(kinds - {k for k, _ in KINDS})}")
    summary = run(args.inputs, args.seed, args.jobs, args.timeout, args.memory_factor, args.out,
                  log=lambda line: print(line, flush=True), kinds=kinds)
    brief = {k: v for k, v in summary.items() if k != "finding_list"}
    print(json.dumps(brief, indent=1))
    return 1 if summary["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
