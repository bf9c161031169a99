"""kafkaproto replay: a captured Kafka session replayed against a live broker, every answer compared with the capture's.

    kafkaproto replay session.pcap --bootstrap-server localhost:9092
    kafkaproto replay session.pcap --bootstrap-server new:9092 --against old:9092   # two brokers, side by side
    kafkaproto replay session.pcap --bootstrap-server localhost:9092 --speed max --format jsonl
    kafkaproto replay session.pcap --bootstrap-server kafka:9093 --tls-ca ca.pem                # a TLS listener

The exit status is 0 when no answer diverged, 1 when one did, 2 when the replay could not run.
"""

import asyncio
import json
import os
import ssl
import sys
from collections import Counter

from ..capture import read_capture
from ..replay import Plan, network
from ..replay.report import compare_targets, compare_with_capture


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
    parser.add_argument("--ports", help="the captured brokers' ports, comma-separated (default: detected)")
    parser.add_argument("--answer-timeout", type=float, default=30.0, metavar="SECONDS",
                        help="how much longer than in the capture an answer may take (default 30)")
    parser.add_argument("--format", choices=("table", "jsonl"), default="table",
                        help="a readable report (default), or one JSON object per line")
    parser.add_argument("--output", "-o", help="where the report goes (default: standard output)")


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
    ports = [int(p) for p in args.ports.split(",")] if args.ports else None
    plan = Plan.of(read_capture(args.capture, ports=ports))
    options = {"speed": speed, "answer_timeout": args.answer_timeout, "setup": not args.no_setup,
               "ssl": ssl.create_default_context(cafile=args.tls_ca) if args.tls or args.tls_ca else None}
    if args.against:
        first, second = asyncio.run(network.replay_both(plan, args.bootstrap_server, args.against, **options))
        report = compare_targets(plan, first, second, (args.bootstrap_server, args.against))
    else:
        replayer = asyncio.run(network.replay(plan, args.bootstrap_server, **options))
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
            write(f"  connection {d.connection}, request {d.step} ({d.api} v{d.version}, correlation id "
                  f"{d.correlation_id}) {d.path}: {_short(d.left)} | {_short(d.right)}\n")
    write(f"\n{'no divergence' if report.ok else f'{len(report.divergences)} divergences'}\n")


def _short(value, limit=160):
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
