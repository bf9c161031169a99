"""kafkaproto replay: a captured Kafka session replayed against a live broker, every answer compared with the capture's.

    kafkaproto replay session.pcap --bootstrap-server localhost:9092
    kafkaproto replay session.pcap --bootstrap-server new:9092 --against old:9092   # two brokers, side by side
    kafkaproto replay session.pcap --bootstrap-server localhost:9092 --speed max --format jsonl
    kafkaproto replay session.pcap --bootstrap-server kafka:9093 --tls-ca ca.pem                # a TLS listener

The exit status is 0 when no answer diverged, 1 when one did, 2 when the replay could not run (a file that is not
a capture, a broker that cannot be reached, a bad option).
"""

import argparse
import asyncio
import json
import os
import ssl
import sys
import time
from collections import Counter

from ..capture import read_capture
from ..replay import Plan, network
from ..replay.report import compare_targets, compare_with_capture
from .capture import port_list


def add_arguments(parser):
    parser.add_argument("capture", metavar="CAPTURE", help="a pcap or pcapng file (gzip-compressed too)")
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT", help="the broker to replay against")
    parser.add_argument("--against", metavar="HOST:PORT",
                        help="a second broker: replay against both at once and compare them with each other")
    parser.add_argument("--speed", default="1",
                        help="the capture's pace times this (default 1), or max: as fast as the order allows")
    parser.add_argument("--tls", action="store_true", help="reach the broker(s) over TLS, trusting the system's CAs")
    parser.add_argument("--tls-ca", metavar="FILE",
                        help="over TLS, trusting this CA (PEM) for the brokers' certificates")
    parser.add_argument("--no-setup", action="store_true",
                        help="do not create the topics the capture uses (and does not create itself) first")
    parser.add_argument("--ports", type=port_list,
                        help="the captured brokers' ports, comma-separated (default: detected)")
    parser.add_argument("--answer-timeout", type=float, default=30.0, metavar="SECONDS",
                        help="how much longer than in the capture an answer may take (default 30)")
    parser.add_argument("--format", choices=("table", "jsonl"), default="table",
                        help="a readable report (default), or one JSON object per line")
    parser.add_argument("--output", "-o", help="where the report goes (default: standard output)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="a progress line on standard error: requests sent and answered, time taken (default: "
                             "when standard error is a terminal)")


def _speed(text):
    if text == "max":
        return None
    try:
        speed = float(text)
    except ValueError:
        speed = 0
    if not speed > 0:
        raise ValueError(f"--speed takes a number above 0 or max, not {text!r}")
    return speed


def run(args):
    speed = _speed(args.speed)
    if not os.path.isfile(args.capture):
        raise ValueError(f"{args.capture}: no such file")
    for address in filter(None, (args.bootstrap_server, args.against)):
        network.parse_address(address)
    plan = Plan.of(read_capture(args.capture, ports=args.ports))  # a file that is not a capture raises here
    options = {"speed": speed, "answer_timeout": args.answer_timeout, "setup": not args.no_setup,
               "ssl": ssl.create_default_context(cafile=args.tls_ca) if args.tls or args.tls_ca else None}
    terminal = sys.stderr.isatty()
    shown = terminal if args.progress is None else args.progress
    progress = Progress(sys.stderr, len(plan.steps), terminal=terminal) if shown else None
    if args.against:
        first, second = asyncio.run(_with_progress(
            network.replay_both(plan, args.bootstrap_server, args.against, watch=_watch(progress), **options),
            progress))
        report = compare_targets(plan, first, second, (args.bootstrap_server, args.against))
    else:
        replayer = asyncio.run(_with_progress(
            network.replay(plan, args.bootstrap_server, watch=_watch(progress), **options), progress))
        report = compare_with_capture(plan, replayer, args.bootstrap_server)
    out = sys.stdout if not args.output or args.output == "-" else open(args.output, "w", encoding="utf-8")
    try:
        if args.format == "jsonl":
            for line in report.json_lines():
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        else:
            print_table(report, args.capture, speed, out)
    finally:
        if out is not sys.stdout:
            out.close()
    return 0 if report.ok else 1


def print_table(report, capture, speed, out):
    plan = report.plan
    left, right = report.sides
    pace = "as fast as the order allows" if speed is None else \
        "at the capture's pace" if speed == 1 else f"at {speed:g} times the capture's pace"
    write = out.write
    write(f"{capture} replayed against {right}" + (f" and {left}" if left != "capture" else "") + f", {pace}\n")
    sent = Counter(step.exchange.api_name for step in plan.steps)
    connections = len({step.connection for step in plan.steps})
    write(f"  {len(plan.steps)} requests on {connections} connections; {sum(report.compared.values())} answers "
          f"compared, {sum(report.diverged.values())} diverged ({len(report.divergences)} differences)\n\n")
    write(f"  {'api':<28} {'requests':>8} {'compared':>8} {'diverged':>8}\n")
    for name in sorted(sent, key=lambda n: (-sent[n], n)):
        write(f"  {name:<28} {sent[name]:>8} {report.compared[name]:>8} {report.diverged[name]:>8}\n")
    if plan.not_replayable:
        write("\nnot replayed:\n")
        for connection, client, reason in plan.not_replayable:
            who = f" ({client[0]}:{client[1]})" if client and client[0] else ""
            write(f"  connection {connection}{who}: {reason}\n")
    if report.uncompared:
        write("\nanswers not compared:\n")
        for why, count in report.uncompared.most_common():
            write(f"  {count:>5}  {why}\n")
    if report.excused:
        write("\ndifferences the rules account for: "
              + ", ".join(f"{rule} {count}" for rule, count in sorted(report.excused.items())) + "\n")
    for (topic, partition), (start, delta) in sorted(report.shifts.items()):
        write(f"  offsets of {topic}-{partition} from the capture's {start} on lie {delta:+d} from the capture's\n")
    for note in report.notes:
        write(f"note: {note}\n")
    if report.divergences:
        write(f"\ndivergences ({left} | {right}):\n")
        for d in report.divergences:
            left_text, right_text = shown_pair(d.left, d.right)
            write(f"  connection {d.connection}, request {d.step} ({d.api} v{d.version}, correlation id "
                  f"{d.correlation_id}) {d.path}: {left_text} | {right_text}\n")
    write(f"\n{'no divergence' if report.ok else f'{len(report.divergences)} divergences'}\n")


# ---- values shown side by side ----------------------------------------------------------------------------------

_BINARY = (bytes, bytearray, memoryview)


def shown_pair(left, right, limit=160):
    """Two differing values as text for the table, each of about ``limit`` characters at most. A value too long
    for that is cut around the first place where the two differ, so the difference is in sight on both sides:
    "[from byte 4072 of 5120, first difference at 4088] …b'...'…" for bytes (the repr of a stretch beginning a
    little before that byte), "[from character 294 of 2048, first difference at 310] …...…" of the repr of anything
    else. A value short enough is shown whole."""
    if isinstance(left, _BINARY) and isinstance(right, _BINARY):
        left, right = bytes(left), bytes(right)
        at = _first_difference(left, right)
        return tuple(repr(v) if len(repr(v)) <= limit else _bytes_around(v, at, limit) for v in (left, right))
    texts = repr(left), repr(right)
    at = _first_difference(*texts)
    return tuple(t if len(t) <= limit else _text_around(t, at, limit) for t in texts)


def _first_difference(a, b):
    """The first index where a and b differ (the shorter one's length when it begins the other)."""
    n = min(len(a), len(b))
    lo, hi = 0, n  # a binary search on equal prefixes: long values compare in C, not item by item
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


_BEFORE = 16  # bytes or characters shown before the first difference


def _bytes_around(data, at, limit):
    start = max(0, min(at, len(data)) - _BEFORE)
    label = f"[from byte {start} of {len(data)}, first difference at {at}] "
    budget = max(16, limit - len(label) - 2)
    end, used = start, 3  # b'' around them; each byte takes 1 to 4 characters: as many as fit
    while end < len(data):
        used += len(repr(data[end:end + 1])) - 3
        if used > budget:
            break
        end += 1
    return label + ("…" if start else "") + repr(data[start:end]) + ("…" if end < len(data) else "")


def _text_around(text, at, limit):
    start = max(0, min(at, len(text)) - _BEFORE)
    label = f"[from character {start} of {len(text)}, first difference at {at}] "
    end = min(len(text), start + max(16, limit - len(label) - 2))
    return label + ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


# ---- progress ------------------------------------------------------------------------------------------------------

class Progress:
    """A line on standard error while the replay runs: per target, requests sent and answered and the capture's
    requests done (sent and over, or not to be sent), and the time taken. On a terminal it is rewritten in place
    every ``interval`` seconds (1); elsewhere (--progress into a file) a line is added every ``interval`` seconds
    (10). The last line, once the replay is over, stays."""

    def __init__(self, out, total, *, terminal, interval=None):
        self.out = out
        self.total = total
        self.terminal = terminal
        self.interval = interval if interval is not None else 1.0 if terminal else 10.0
        self.replayers = []  # [(target, Replayer)]
        self.started = time.monotonic()
        self.width = 0  # of the line on the terminal
        self.shown = False

    def line(self, now=None):
        elapsed = (time.monotonic() if now is None else now) - self.started
        minutes, seconds = divmod(int(elapsed), 60)
        parts = []
        for target, replayer in sorted(self.replayers, key=lambda pair: pair[0]):
            part = "creating the capture's topics" if replayer.setting_up else \
                f"{replayer.requests_sent:,} requests sent and {replayer.answers:,} answered, " \
                f"{replayer.steps_over:,} of {self.total:,} done"
            parts.append(f"{target} {part}" if len(self.replayers) > 1 else part)
        what = "; ".join(parts) or "connecting"
        return f"replay: {what}, {minutes}:{seconds:02d} elapsed"

    def show(self, now=None):
        line = self.line(now)
        if self.terminal:
            self.out.write("\r" + line.ljust(self.width))
            self.width = len(line)
        else:
            self.out.write(line + "\n")
        self.out.flush()
        self.shown = True

    def done(self, finished=True):
        """The last line: where the replay ended (finished=False: it failed, and a line shown is ended)."""
        if finished:
            self.show()
        if self.terminal and self.shown:
            self.out.write("\n")
            self.out.flush()

    async def run(self):
        while True:
            await asyncio.sleep(self.interval)
            self.show()


def _watch(progress):
    return None if progress is None else lambda replayer, target: progress.replayers.append((target, replayer))


async def _with_progress(work, progress):
    """The result of the coroutine ``work``, with ``progress`` shown while it runs (None: none)."""
    if progress is None:
        return await work
    ticker = asyncio.ensure_future(progress.run())
    finished = False
    try:
        result = await work
        finished = True
    finally:
        ticker.cancel()
        progress.done(finished)
    return result
