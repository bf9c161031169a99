"""kafkaproto replay: a captured Kafka session replayed against a live broker, every answer compared with the capture's.

    kafkaproto replay session.pcap --bootstrap-server localhost:9092
    kafkaproto replay session.pcap --bootstrap-server new:9092 --against old:9092   # two brokers, side by side
    kafkaproto replay session.pcap --bootstrap-server localhost:9092 --speed max --format jsonl
    kafkaproto replay session.pcap --bootstrap-server kafka:9093 --tls-ca ca.pem                # a TLS listener

The exit status is 0 when no answer diverged, 1 when one did, 2 when the replay could not run (a file that is not
a capture, a broker that cannot be reached, a bad option).

At the capture's pace, a gap between two requests longer than --max-gap seconds (10) is shortened to it, and a
line on standard error says what each wait of a second or more is for. The text report shows the capture's strings
(topic names in notes, reasons, paths) through escape_controls; JSON lines keep them exactly.
"""

import argparse
import asyncio
import json
import math
import os
import ssl
import sys
import time
from collections import Counter

from ..capture import read_capture
from ..capture.summary import escape_controls
from ..replay import Plan, network
from ..replay.session import MAX_GAP
from ..replay.report import compare_targets, compare_with_capture
from .capture import port_list


def add_arguments(parser):
    parser.add_argument("capture", metavar="CAPTURE", help="a pcap or pcapng file (gzip-compressed too)")
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT", help="the broker to replay against")
    parser.add_argument("--against", metavar="HOST:PORT",
                        help="a second broker: replay against both at once and compare them with each other")
    parser.add_argument("--speed", default="1",
                        help="the capture's pace times this (default 1), or max: as fast as the order allows")
    parser.add_argument("--max-gap", type=_max_gap, default=MAX_GAP, metavar="SECONDS",
                        help=f"at the capture's pace, a longer gap between two requests in the capture (or a longer "
                             f"captured wait for an answer) is shortened to this (default {MAX_GAP:g}); each wait of "
                             f"a second or more is said on standard error")
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


def _max_gap(text):
    """The argparse type of --max-gap: seconds, 0 or more."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 or more)")
    return seconds


def run(args):
    speed = _speed(args.speed)
    if not os.path.isfile(args.capture):
        raise ValueError(f"{args.capture}: no such file")
    for address in filter(None, (args.bootstrap_server, args.against)):
        network.parse_address(address)
    plan = Plan.of(read_capture(args.capture, ports=args.ports))  # a file that is not a capture raises here
    options = {"speed": speed, "max_gap": args.max_gap, "answer_timeout": args.answer_timeout,
               "setup": not args.no_setup,
               "ssl": ssl.create_default_context(cafile=args.tls_ca) if args.tls or args.tls_ca else None}
    terminal = sys.stderr.isatty()
    shown = terminal if args.progress is None else args.progress
    progress = Progress(sys.stderr, len(plan.steps), terminal=terminal) if shown else None
    waits = _Waits(sys.stderr, progress, speed, args.max_gap, both=bool(args.against))
    if args.against:
        first, second = asyncio.run(_with_progress(
            network.replay_both(plan, args.bootstrap_server, args.against, watch=_watch(progress),
                                on_wait=waits.say, **options), progress))
        report = compare_targets(plan, first, second, (args.bootstrap_server, args.against))
    else:
        replayer = asyncio.run(_with_progress(
            network.replay(plan, args.bootstrap_server, watch=_watch(progress), on_wait=waits.say, **options),
            progress))
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
    """The report as text: what comes from the capture or a target (names, reasons, notes, paths, values) through
    escape_controls."""
    shown = escape_controls
    plan = report.plan
    left, right = report.sides
    pace = "as fast as the order allows" if speed is None else \
        "at the capture's pace" if speed == 1 else f"at {speed:g} times the capture's pace"
    write = out.write
    write(f"{shown(capture)} replayed against {shown(right)}" + (f" and {shown(left)}" if left != "capture" else "")
          + f", {pace}\n")
    sent = Counter(step.exchange.api_name for step in plan.steps)
    connections = len({step.connection for step in plan.steps})
    write(f"  {len(plan.steps)} requests on {connections} connections; {sum(report.compared.values())} answers "
          f"compared, {sum(report.diverged.values())} diverged ({len(report.divergences)} differences)\n\n")
    write(f"  {'api':<28} {'requests':>8} {'compared':>8} {'diverged':>8}\n")
    for name in sorted(sent, key=lambda n: (-sent[n], n)):
        write(f"  {shown(name):<28} {sent[name]:>8} {report.compared[name]:>8} {report.diverged[name]:>8}\n")
    if plan.not_replayable:
        write("\nnot replayed:\n")
        for connection, client, reason in plan.not_replayable:
            who = f" ({client[0]}:{client[1]})" if client and client[0] else ""
            write(f"  connection {connection}{shown(who)}: {shown(reason)}\n")
    if report.uncompared:
        write("\nanswers not compared:\n")
        for why, count in report.uncompared.most_common():
            write(f"  {count:>5}  {shown(why)}\n")
    if report.excused:
        write("\ndifferences the rules account for: "
              + ", ".join(f"{shown(rule)} {count}" for rule, count in sorted(report.excused.items())) + "\n")
    for (topic, partition), (start, delta) in sorted(report.shifts.items()):
        write(f"  offsets of {shown(topic)}-{partition} from the capture's {start} on lie {delta:+d} from the "
              "capture's\n")
    for note in report.notes:
        write(f"note: {shown(note)}\n")
    if report.divergences:
        write(f"\ndivergences ({shown(left)} | {shown(right)}):\n")
        for d in report.divergences:
            left_text, right_text = shown_pair(d.left, d.right)
            write(f"  connection {d.connection}, request {d.step} ({shown(d.api)} v{d.version}, correlation id "
                  f"{d.correlation_id}) {shown(d.path)}: {shown(left_text)} | {shown(right_text)}\n")
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

    def say(self, line):
        """A line of its own on standard error, the progress line (on a terminal) shown again below it."""
        if self.terminal and self.shown:
            self.out.write("\r" + line.ljust(self.width) + "\n")
            self.show()
        else:
            self.out.write(line + "\n")
            self.out.flush()

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


class _Waits:
    """Says on standard error what each long wait for the capture's pace is for (a session.Pause), and how long."""

    def __init__(self, out, progress, speed, max_gap, both):
        self.out, self.progress, self.speed, self.max_gap, self.both = out, progress, speed, max_gap, both

    def line(self, target, pause):
        step = pause.step
        ex = step.exchange
        client = f", client id \"{escape_controls(ex.client_id)}\"" if ex.client_id else ""
        what = f"request {step.index} ({ex.api_name} v{ex.api_version} on connection {step.connection}{client})"
        pace = "" if self.speed == 1 else f" at {self.speed:g} times the capture's pace"
        why = f"the capture sent it {_duration(pause.gap)} after the request before"
        if pause.shortened:
            why += f", shortened to {self.max_gap:g} s (--max-gap)"
        where = f"{target}: " if self.both else ""
        return f"replay: {where}waiting {pause.seconds:.1f} s to send {what}{pace}: {why}"

    def say(self, target, pause):
        line = self.line(target, pause)
        if self.progress is not None:
            self.progress.say(line)
        else:
            self.out.write(line + "\n")
            self.out.flush()


def _duration(seconds):
    """A captured gap for a person: "4.2 s", "86,400 s (1 day)", "4,294,967,296 s (136 years)"."""
    text = f"{seconds:,.1f} s" if seconds < 100 else f"{seconds:,.0f} s"
    days = seconds / 86400
    count, unit = (days / 365.25, "year") if days >= 365.25 else (days, "day")
    if count >= 1:
        text += f" ({count:,.0f} {unit}{'s' if round(count) != 1 else ''})"
    return text


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
