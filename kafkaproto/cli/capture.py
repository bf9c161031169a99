"""kafkaproto capture: what Kafka traffic in pcap/pcapng files did, as a summary or as exchange and record rows.

    kafkaproto capture traffic.pcapng                         a readable summary
    kafkaproto capture *.pcap --api Fetch,Produce --errors-only
    kafkaproto capture big.pcap --format parquet --output exchanges.parquet
    kafkaproto capture big.pcap --records --format jsonl      one line per record
    tcpdump -i eth0 -U -w - port 9092 | kafkaproto capture -  a capture read as it is made
    kafkaproto capture --interface eth0 --ports 9092 --live   capture here, and watch rates, latency, errors
    kafkaproto capture --follow /var/captures/ring/           a ring of files a capture tool rotates

Everything streams: a capture larger than memory is fine, and so is the summary
(latency percentiles come from a fixed-size histogram). A capture that does not end
(a pipe, an interface, a followed ring) is summarised when it is interrupted.

Text meant for a terminal (the summary, the live table, progress, notes and errors) shows what a capture says
through escape_controls, so a client id holding an escape sequence is read, never acted on; rows (JSON lines, CSV,
Parquet) keep every string exactly.
"""

import argparse
import base64
import csv
import datetime
import itertools
import json
import operator
import os
import sys
import time
from collections import deque

from .. import errors
from ..capture import CAPTURE_ERROR, OK, TopicNames, follow, held, keep_freed_memory, read_capture
from ..capture.summary import Summary, escape_controls
from ..jsonview import json_parts, to_json
from ..registry import api
from ..uuid import Uuid


def add_arguments(parser):
    parser.add_argument("files", nargs="*", metavar="FILE",
                        help="pcap or pcapng files (gzip-compressed ones too); - reads a capture from standard input")
    parser.add_argument("--follow", metavar="PATH",
                        help="a capture still being written: a growing file, or a folder a capture tool rotates "
                             "files into, read in order as one stream")
    parser.add_argument("--interface", metavar="IF",
                        help="capture on this network interface (with dumpcap or tcpdump, which must be installed)")
    parser.add_argument("--idle", type=float, metavar="SECONDS",
                        help="with --follow: stop once nothing new has come for this long (default: go on)")
    parser.add_argument("--duration", type=float, metavar="SECONDS",
                        help="with --interface: stop capturing after this long (default: go on)")
    parser.add_argument("--live", action="store_true",
                        help="on standard output, a table of rates, latency percentiles and errors per API over the "
                             "last 10 s of traffic, redrawn every second on a terminal (elsewhere a plain table every "
                             "10 s, without escape codes); the summary follows at the end")
    parser.add_argument("--ports", type=port_list,
                        help="the brokers' ports, comma-separated (default: detected per connection)")
    parser.add_argument("--api", help="only these APIs, by name or key, comma-separated (e.g. Fetch,Produce)")
    parser.add_argument("--topic", action="append", help="only exchanges naming this topic (name or topic id)")
    parser.add_argument("--client-id", action="append", help="only requests with this client id")
    parser.add_argument("--errors-only", action="store_true",
                        help="only exchanges that are not ok or whose response carries an error code")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when an exchange is not ok or its response carries an error code (those "
                             "--errors-only keeps), after the usual output")
    parser.add_argument("--format", choices=("summary", "jsonl", "csv", "parquet"), default=None,
                        help="summary (the default without --output), or rows as JSON lines, CSV or Parquet")
    parser.add_argument("--output", "-o", help="where the rows go (default: standard output; Parquet needs a file)")
    parser.add_argument("--records", action="store_true",
                        help="rows of the records in Produce requests and Fetch responses instead of exchanges")
    parser.add_argument("--topic-names", action="append", metavar="FILE",
                        help="topic id/name pairs for captures that hold no Metadata answers: JSON "
                             "{\"<id>\": \"<name>\"}, CSV id,name, or a KRaft metadata log (.log file or folder)")
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT",
                        help="ask this cluster (Metadata) for the names of its topics' IDs first")
    parser.add_argument("--report", metavar="HTML",
                        help="also write the traffic as one HTML page that opens offline: rates, latency and errors "
                             "over time, latency per API, busiest topics and clients, gaps (needs plotly)")
    parser.add_argument("--top", type=int, default=10, help="how many topics and clients the summary lists")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on a terminal")


def port_list(text):
    """The argparse type of --ports: "9092,9093" -> [9092, 9093], each a TCP port number."""
    ports = []
    for part in text.split(","):
        part = part.strip()
        if not (part.isascii() and part.isdigit() and 1 <= int(part) <= 65535):
            raise argparse.ArgumentTypeError(f"{part!r} is not a port number (1-65535)")
        ports.append(int(part))
    return ports


def run(args):
    fmt = args.format or ("summary" if not args.output else _format_of(args.output))
    if fmt == "parquet" and not args.output:
        raise ValueError("--format parquet needs --output FILE")
    if args.records and fmt == "summary":
        raise ValueError("--records gives rows: choose --format jsonl, csv or parquet")
    if sum(map(bool, (args.files, args.follow, args.interface))) != 1:
        raise ValueError("give capture files (- for standard input), or --follow PATH, or --interface IF")
    if args.live and fmt != "summary":
        raise ValueError("--live draws on standard output: it goes with the summary, not with rows")
    from .._optional import require  # a missing optional package is named with its extra, before any work
    if args.records or fmt in ("csv", "parquet"):  # rows built with pyarrow (kafkaproto.capture.tables)
        require("pyarrow", "arrow", "--records" if args.records else f"--format {fmt}")
    if args.report:
        require("plotly", "report", "--report")
    for path in args.files:
        if path != "-" and not os.path.isfile(path):
            raise ValueError(f"{path}: no such file")
    if args.follow and not os.path.exists(args.follow):
        raise ValueError(f"{args.follow}: no such file or folder")
    keep = _filter(args)
    keep_freed_memory()  # reading captures is this process's work
    ports = args.ports
    progress = _Progress(enabled=not args.no_progress and sys.stderr.isatty() and not args.live)
    names = topic_names(args.topic_names, args.bootstrap_server)
    sources = _sources(args, ports, names)  # a file that is not a capture raises here, before anything is drawn
    live = None
    if args.live:
        from .live import LiveView
        live = LiveView(sys.stdout, title=_what(args)).start()
    failures = []  # what went wrong with a capture tool that ran for a while (said after the summary)

    def read():
        for path, reader in sources:
            progress.start(path, reader)
            stream = path == "-" or getattr(reader, "tool", None) is not None
            if progress.enabled or live is not None or stream:
                for ex in reader:
                    if stream and ex.status == CAPTURE_ERROR and not reader.stats.packets:
                        # Nothing came but what is not a capture (a pipe of something else, a tool that failed).
                        if live is not None:
                            live.stop(draw=False)
                        raise ValueError(escape_controls(_tool_failure(reader) or ex.error))
                    progress.tick()
                    if live is not None:
                        live.add(ex)
                    yield path, ex
            else:  # the common case, kept lean: this loop runs once per exchange
                for ex in reader:
                    yield path, ex
            progress.done()
            failure = _tool_failure(reader)
            if failure:
                failures.append(failure)

    problems = _Problems() if args.check else None
    report = None
    if args.report:  # plotly is there: checked above
        from .report import Report
        report = Report(Summary(names))

    def exchanges():
        # Rows and filters need each exchange's topic names when it is let go: one the traffic names later is held
        # back until then (the summary looks names up when it prints).
        items = read() if fmt == "summary" and keep is None else held(read(), exchange=operator.itemgetter(1))
        if keep is not None:
            items = ((path, ex) for path, ex in items if keep(ex))
        if problems is not None:
            items = problems.tap(items)
        return items if report is None else _tap(items, report)

    if fmt == "summary":
        summary = Summary(names)
        try:
            for path, ex in exchanges():
                summary.add(path, ex)
        except KeyboardInterrupt:  # a capture that does not end: what came so far
            pass
        finally:
            _end(sources, live)
        summary.files.extend(_files_read(sources))
        print_summary(summary, sys.stdout, args.top)
        _write_report(report, args, sources)
        _fail_on(failures, sources)
        return problems.exit_status() if problems is not None else 0
    out = sys.stdout if not args.output or args.output == "-" else None
    writer = _WRITERS[fmt](args.output, out, args.records)
    try:
        writer.write_all(exchanges())
    except KeyboardInterrupt:
        pass
    finally:
        _end(sources, live)
        writer.close()
    _write_report(report, args, sources)
    _fail_on(failures, sources)
    return problems.exit_status() if problems is not None else 0


def _fail_on(failures, sources=()):
    """Raise what went wrong with a capture tool; say what a followed file or ring could not read (an error when
    nothing could be read at all)."""
    for _, reader in sources:
        notes = getattr(reader.packets, "notes", None)
        if notes and not reader.stats.packets:
            failures.extend(notes)
        elif notes:
            for note in notes:
                print(f"kafkaproto capture: not read to its end: {escape_controls(note)}", file=sys.stderr)
    if failures:
        raise ValueError(escape_controls("; ".join(failures)))


def _files_read(sources):
    """The files the sources read: a followed ring's each (a file the ring writes anew counts again)."""
    out = []
    for path, reader in sources:
        follower = reader.packets
        out.extend(follower.files if follower is not None and hasattr(follower, "files") else [path])
    return out


def _tap(items, report):
    for path, ex in items:
        report.add(path, ex)
        yield path, ex


def _write_report(report, args, sources):
    if report is not None:
        report.summary.files.extend(_files_read(sources))
        report.write(args.report, title=f"Kafka traffic {_what(args)}", top=args.top)


def _what(args):
    return f"on {args.interface}" if args.interface else f"of {args.follow}" if args.follow else \
        ", ".join(args.files)


def _sources(args, ports, names):
    """[(the name to report, a CaptureReader)] of what the command line asks to read."""
    if args.follow:
        return [(args.follow, follow(args.follow, ports=ports, names=names, idle=args.idle))]
    if args.interface:
        tool = _capture_tool(args.interface, ports, args.duration)
        reader = read_capture(tool.stdout, ports=ports, name=f"interface {args.interface}", names=names)
        reader.tool = tool
        return [(f"interface {args.interface}", reader)]
    return [(path, read_capture(sys.stdin.buffer if path == "-" else path, ports=ports,
                                name="standard input" if path == "-" else path, names=names))
            for path in args.files]


def _capture_tool(interface, ports, duration):
    """dumpcap (Wireshark's) or tcpdump, capturing TCP (on the ports given) on an interface into a pipe."""
    import shutil
    import signal
    import subprocess
    import threading

    rule = " or ".join(f"tcp port {p}" for p in ports) if ports else "tcp"
    dumpcap, tcpdump = shutil.which("dumpcap"), shutil.which("tcpdump")
    if dumpcap:
        command = [dumpcap, "-q", "-i", interface, "-f", rule, "-w", "-"]
    elif tcpdump:
        command = [tcpdump, "-i", interface, "-U", "-s", "0", "-w", "-", rule]
    else:
        raise ValueError("--interface needs dumpcap (Wireshark's) or tcpdump installed to capture with")
    # What the tool says goes into tool.said (its last lines), to name what went wrong should it fail.
    tool = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tool.name = os.path.basename(command[0])
    tool.said = deque(maxlen=20)
    tool.listener = threading.Thread(target=lambda: tool.said.extend(
        line.decode(errors="replace").strip() for line in tool.stderr), name="kafkaproto-capture-tool", daemon=True)
    tool.listener.start()
    if duration is not None:  # SIGINT: the tool writes what it holds and ends, and so does its pipe
        timer = threading.Timer(duration, lambda: tool.poll() is None and tool.send_signal(signal.SIGINT))
        timer.daemon = True
        timer.start()
    return tool


def _tool_failure(reader):
    """What went wrong with the capture tool behind reader, when it ended by itself with an error: None if it did
    not (no tool, still running, done, or stopped by a signal: --duration, Ctrl-C, or _end)."""
    tool = getattr(reader, "tool", None)
    if tool is None:
        return None
    import subprocess  # here, not above: every run asks, and most read files

    try:
        code = tool.wait(5)
    except subprocess.TimeoutExpired:
        return None
    if code <= 0:
        return None
    tool.listener.join(1)
    said = [line for line in tool.said if line]
    own = [line for line in said if line.startswith(f"{tool.name}:")]  # its error lines, not its notices
    line = (own or said or [""])[0].removeprefix(f"{tool.name}:").strip()
    return f"{reader.name}: {tool.name} failed (exit status {code})" + (f": {line}" if line else "")


def _end(sources, live):
    """Stop what still runs: the capture tool, the live view."""
    for _, reader in sources:
        tool = getattr(reader, "tool", None)
        if tool is not None and tool.poll() is None:
            tool.terminate()
            tool.wait(10)
    if live is not None:
        live.stop()


def topic_names(files, bootstrap):
    """The TopicNames a run starts with: those of --topic-names files, and those a live cluster's Metadata gives."""
    names = TopicNames()
    for path in files or ():
        names.update(TopicNames.load(path))
    if bootstrap:
        from ..capture.cluster import ClusterError, topic_names_of
        try:
            names.update(topic_names_of(bootstrap))
        except ClusterError as e:
            raise ValueError(f"--bootstrap-server: {e}") from None
    return names


def _format_of(path):
    ext = os.path.splitext(path)[1].lower()
    return {".parquet": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl"}.get(ext, "jsonl")


def has_errors(ex):
    """Whether an exchange is not ok or its response carries an error code."""
    return ex.status != OK or bool(ex.error_code) or bool(ex.partition_errors)


class _Problems:
    """Counts the exchanges that have errors, for --check, as they pass."""

    def __init__(self):
        self.count = 0

    def tap(self, items):
        for path, ex in items:
            if has_errors(ex):
                self.count += 1
            yield path, ex

    def exit_status(self):
        if self.count:
            print(f"kafkaproto capture: {self.count} exchange(s) with errors (--check)", file=sys.stderr)
            return 1
        return 0


def _filter(args):
    """A test of which exchanges to keep, or None to keep all."""
    if not (args.api or args.topic or args.client_id or args.errors_only):
        return None
    apis = None
    if args.api:
        apis = set()
        for name in args.api.split(","):
            name = name.strip()
            apis.add(api(int(name) if name.lstrip("-").isdigit() else name).api_key)
    topics = set(args.topic or ())
    clients = set(args.client_id or ())

    def keep(ex):
        if apis is not None and ex.api_key not in apis:
            return False
        if clients and ex.client_id not in clients:
            return False
        if topics and not any((str(t) if isinstance(t, Uuid) else t) in topics for t in ex.topics):
            return False
        if args.errors_only and not has_errors(ex):
            return False
        return True
    return keep


# ---- the summary ------------------------------------------------------------------------------------------

def print_summary(summary, out, top=10):
    """The summary as text."""
    w = out.write
    escaped = escape_controls  # every string the capture (or a file's name) brings
    total = sum(summary.by_status.values())
    w(f"{total} exchanges in {len(summary.files)} file(s): "
      + ", ".join(f"{n} {status}" for status, n in summary.by_status.most_common()) + "\n")
    if summary.by_api:
        w("\nexchanges by API and version\n")
        for (name, version), n in sorted(summary.by_api.items(), key=lambda kv: (-kv[1], str(kv[0]))):
            w(f"  {escaped(name):<32} v{version if version is not None else '?':<4} {n:>10}\n")
    if summary.latency:
        w("\nlatency in ms (p50 / p90 / p99 / max)\n")
        for name, hist in sorted(summary.latency.items(), key=lambda kv: -kv[1].total):
            p = [hist.percentile(q) / 1e6 for q in (0.5, 0.9, 0.99)] + [hist.max / 1e6]
            w(f"  {escaped(name):<32} {' / '.join(f'{v:.3f}' for v in p)}  ({hist.total} exchanges)\n")
    if summary.error_codes:
        w("\nerror codes in responses (top level and per partition)\n")
        for (name, code), n in summary.error_codes.most_common():
            w(f"  {escaped(name or '-'):<32} {code:>4} {errors.by_code(code).name:<40} {n:>8}\n")
    unnamed = set()
    for title, counter in (("topics by bytes produced", summary.produced),
                           ("topics by bytes fetched", summary.fetched)):
        if counter:
            w(f"\n{title}\n")
            for topic, n in summary.named(counter, unnamed).most_common(top):
                w(f"  {escaped(topic or '-'):<48} {n:>14,}\n")
    if unnamed:
        w(f"  ({len(unnamed)} topic id{'s' if len(unnamed) > 1 else ''} named by no Metadata answer in the "
          "capture, and no --topic-names or --bootstrap-server: shown as ids)\n")
    if summary.clients:
        w("\nclients (client id, requests, software from ApiVersions)\n")
        for client_id, info in sorted(summary.clients.items(), key=lambda kv: -kv[1]["requests"])[:top]:
            w(f"  {escaped(client_id) if client_id is not None else '-':<40} {info['requests']:>8}  "
              f"{', '.join(escaped(software) for software in sorted(info['software']))}\n")
    if summary.problem_count:
        shown = "" if summary.problem_count <= len(summary.problems) else f", the first {len(summary.problems)} shown"
        w(f"\nnot ok ({summary.problem_count}{shown})\n")
        for path, ex in summary.problems:
            where = (f"{ex.client_address}:{ex.client_port} -> {ex.broker_address}:{ex.broker_port}"
                     if ex.connection is not None else "the file itself")
            packet = ex.response_packet or ex.request_packet
            what = f"{ex.api_name or ex.api_key} v{ex.api_version}" if ex.api_key is not None else ""
            w(f"  {escaped(path)}: {ex.status}: {where}{f' packet {packet}' if packet else ''} {what} "
              f"{f'correlation id {ex.correlation_id}' if ex.correlation_id is not None else ''}\n")
            if ex.error:
                w(f"      {escaped(ex.error)}\n")


# ---- rows ---------------------------------------------------------------------------------------------------

def _iso(ns):
    if ns is None:
        return None
    seconds, rest = divmod(ns, 10**9)
    stamp = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{rest:09d}Z"


def _json_value(value):
    """An Arrow row's value as JSON: bytes in base64, times in ISO 8601."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


class _Rows:
    """Rows of exchanges, or of the records they carry, as plain dicts."""

    def __init__(self, records, json_bodies):
        self.records = records
        self.json_bodies = json_bodies

    def write_all(self, items):
        for path, ex in items:
            self.write(path, ex)

    def rows(self, path, ex):
        # The row modules are imported where rows are made: the summary needs neither them nor the record codec.
        from ..capture import tables

        if self.records:
            for batch in tables.record_batches([ex], file=path):
                yield from _record_rows(ex, batch)
            return
        row = tables.exchange_row(ex, path, bodies=not self.json_bodies)
        row["request_time"], row["response_time"] = _iso(ex.request_time_ns), _iso(ex.response_time_ns)
        if self.json_bodies:
            row["request"] = None if ex.request is None else to_json(ex.request)
            row["response"] = None if ex.response is None else to_json(ex.response)
        yield row


def exchange_line(ex, path):
    """An exchange's JSON line: json.dumps of the row _Rows gives (bodies as JSON), without building the bodies'
    dicts (jsonview.to_json_text writes them)."""
    from ..capture import tables

    row = tables.exchange_row(ex, path, bodies=False)
    row["request_time"], row["response_time"] = _iso(ex.request_time_ns), _iso(ex.response_time_ns)
    del row["request"], row["response"]  # the row's last two columns: written after the others
    parts = [json.dumps(row, ensure_ascii=False, separators=(",", ":"))[:-1]]
    for key, body in ((',"request":', ex.request), (',"response":', ex.response)):
        parts.append(key)
        if body is None:
            parts.append("null")
        else:
            json_parts(body, parts, ensure_ascii=False)
    parts.append("}")
    return "".join(parts)


_EPOCH = datetime.datetime(1970, 1, 1)


def _record_time(ms):
    """A record's timestamp (ms since the epoch) in ISO 8601, or the number itself outside the years Python's
    datetime holds (1 to 9999): a record may carry any 64-bit timestamp."""
    if ms is None:
        return None
    try:
        return (_EPOCH + datetime.timedelta(milliseconds=ms)).isoformat()
    except OverflowError:
        return ms


def _record_rows(ex, batch):
    """The rows of a batch of the record schema as plain dicts (times in ISO 8601, bytes in base64)."""
    import pyarrow as pa

    at = batch.schema.get_field_index("timestamp")
    stamps = batch.column(at).cast(pa.int64()).to_pylist()  # as numbers: to_pylist's datetimes end at year 9999
    # "time" is the exchange's, in nanoseconds, which to_pylist gives as datetimes only with pandas installed
    for row, stamp in zip(batch.drop_columns(["timestamp", "time"]).to_pylist(), stamps):
        row["time"] = _iso(ex.request_time_ns if row["side"] == "request" else ex.response_time_ns)
        row = {k: _json_value(v) for k, v in row.items()}
        row["timestamp"] = _record_time(stamp)
        yield {name: row[name] for name in batch.schema.names}


def record_lines(ex, batch):
    """The JSON lines of a batch of the record schema: json.dumps of each of its _record_rows, written in compiled
    code where it is built, for the batches it takes (tables.compiled_record_lines)."""
    from ..capture import tables

    text = tables.compiled_record_lines(batch)
    if text is not None:
        return text
    return "".join(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"
                   for row in _record_rows(ex, batch))


class _JsonLines(_Rows):
    def __init__(self, path, out, records):
        super().__init__(records, json_bodies=True)
        self.out = out or open(path, "w", encoding="utf-8")
        self.owned = out is None

    def write(self, path, ex):
        if not self.records:
            self.out.write(exchange_line(ex, path))
            self.out.write("\n")
            return
        from ..capture import tables

        for batch in tables.record_batches([ex], file=path):
            self.out.write(record_lines(ex, batch))

    def close(self):
        if self.owned:
            self.out.close()


class _Csv(_Rows):
    def __init__(self, path, out, records):
        from ..capture import tables

        super().__init__(records, json_bodies=False)
        self.out = out or open(path, "w", encoding="utf-8", newline="")
        self.owned = out is None
        names = [f.name for f in (tables.record_schema() if records else tables.exchange_schema())]
        self.writer = csv.DictWriter(self.out, fieldnames=names)
        self.writer.writeheader()

    def write(self, path, ex):
        for row in self.rows(path, ex):
            self.writer.writerow({k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in row.items()})

    def close(self):
        if self.owned:
            self.out.close()


class _Parquet:
    """Rows gathered into row groups of about ROWS rows, or fewer holding about BYTES: one small row group per
    records field would make the file's metadata, and the writer's memory, grow with every batch; rows holding
    large bodies would make the memory grow with every row (the pages the kernel hands out for them cost more than
    writing them)."""

    ROWS = 65536
    BYTES = 8 << 20

    # Columns whose every value differs: a dictionary of them never pays, and trying one keeps the column's pages
    # in memory until it gives up (about twice the bodies' size, on a capture of large Fetch answers).
    UNIQUE = ("request", "response")

    def __init__(self, path, out, records):
        import pyarrow.parquet as pq

        from ..capture import tables

        self.records = records
        self.schema = tables.record_schema() if records else tables.exchange_schema()
        dictionary = True if records else [column for field in self.schema if field.name not in self.UNIQUE
                                           for column in _leaf_columns(field.name, field.type)]
        self.writer = pq.ParquetWriter(path, self.schema, use_dictionary=dictionary)
        self.batches, self.rows, self.bytes = [], 0, 0  # rows not yet written

    def write_all(self, items):
        """Streams: each exchange is let go once its rows are built (holding thousands of decoded bodies would
        only give the cyclic garbage collector more to walk)."""
        from ..capture import tables

        for path, group in itertools.groupby(items, key=operator.itemgetter(0)):
            exs = (ex for _, ex in group)
            batches = tables.record_batches(exs, file=path) if self.records else tables.exchange_batches(exs, path)
            for batch in batches:
                self.batches.append(batch)
                self.rows += batch.num_rows
                self.bytes += batch.nbytes
                if self.rows >= self.ROWS or self.bytes >= self.BYTES:
                    self._write()

    def _write(self):
        import pyarrow as pa
        if self.batches:
            self.writer.write_table(pa.Table.from_batches(self.batches, schema=self.schema))
        self.batches, self.rows, self.bytes = [], 0, 0

    def close(self):
        self._write()
        self.writer.close()


def _leaf_columns(name, typ):
    """The Parquet columns (their paths) an Arrow field of that name and type is written to."""
    import pyarrow as pa
    if pa.types.is_list(typ):
        return _leaf_columns(f"{name}.list.element", typ.value_type)
    if pa.types.is_struct(typ):
        return [column for field in typ for column in _leaf_columns(f"{name}.{field.name}", field.type)]
    return [name]


_WRITERS = {"jsonl": _JsonLines, "csv": _Csv, "parquet": _Parquet}


class _Progress:
    """One line on standard error for files that take more than a moment: bytes read and packets per second."""

    def __init__(self, enabled):
        self.enabled = enabled
        self.reader = None

    def start(self, path, reader):
        self.path, self.reader = path, reader
        self.started = self.shown = time.monotonic()
        self.count = 0
        try:
            self.size = os.path.getsize(path)
        except OSError:
            self.size = None
        self.visible = False

    def tick(self):
        if not self.enabled:
            return
        self.count += 1
        if self.count & 63:
            return
        now = time.monotonic()
        if now - self.shown < 0.5 or now - self.started < 1.0:
            return
        self.shown = now
        self.visible = True
        stats = self.reader.stats
        rate = stats.packets / (now - self.started)
        done = f" {min(100, 100 * stats.bytes // self.size)}%" if self.size else ""
        sys.stderr.write(f"\r{escape_controls(self.path)}:{done} {stats.bytes / 1e6:,.0f} MB, "
                         f"{stats.packets:,} packets, {rate:,.0f} packets/s ")
        sys.stderr.flush()

    def done(self):
        if self.visible:
            sys.stderr.write("\n")
            self.visible = False
