"""kafkaproto cluster: move leaders and coordinators, stop and start brokers, and install faults in a running
kafkaproto broker, through its control channel (kafkaproto.control.channel; kafkaproto/broker/control_channel.py).

    kafkaproto broker --nodes 3 --control-channel 127.0.0.1:9999 &
    kafkaproto cluster --channel 127.0.0.1:9999 move-leader orders 0 2
    kafkaproto cluster --channel 127.0.0.1:9999 add-fault NOT_LEADER_OR_FOLLOWER --api-key Produce --budget 2

Each command prints the broker's answer as one line of JSON (add-fault: the fault, with the id that fault and
remove-fault take). Exit status 1 when the broker refuses (a partition that is not there, a broker not running),
2 when the channel cannot be reached.
"""

import json
import sys

from ..broker.control_channel import ChannelClient, Refused

DESCRIPTION = __doc__.split("\n\n")[0].replace("\n", " ")
KINDS = ("group", "transaction", "share")


def _topic(p):
    p.add_argument("topic", help="the topic's name (or its id, with --topic-id)")
    p.add_argument("--topic-id", action="store_true", help="topic is a topic id (Kafka's base64 form)")


def add_arguments(parser):
    parser.add_argument("--channel", required=True, metavar="HOST:PORT",
                        help="the broker's control channel (kafkaproto.control.channel)")
    sub = parser.add_subparsers(dest="cluster_command", required=True)
    sub.add_parser("nodes", help="the brokers, their addresses, and which run")
    for name, what in (("leader", "a partition's leader, leader epoch, replicas and ISR"),
                       ("move-leader", "make a broker lead a partition (a new leader epoch)")):
        p = sub.add_parser(name, help=what)
        _topic(p)
        p.add_argument("partition", type=int)
        if name == "move-leader":
            p.add_argument("node", type=int)
    key_help = ("the group id, transactional id or share partition (group:topic id:partition) whose coordinator "
                "is meant; needed when the internal topic has several partitions")
    p = sub.add_parser("coordinator", help="the broker coordinating a group, transactional id or share partition")
    p.add_argument("kind", choices=KINDS)
    p.add_argument("--key", help=key_help)
    p = sub.add_parser("move-coordinator", help="move the coordinator of a group, transactional id or share "
                                                "partition (and of the others in its internal topic's partition) to "
                                                "a broker")
    p.add_argument("kind", choices=KINDS)
    p.add_argument("node", type=int)
    p.add_argument("--key", help=key_help)
    for name, what in (("stop-node", "stop a broker as if its process died"),
                       ("start-node", "start a stopped broker again")):
        sub.add_parser(name, help=what).add_argument("node", type=int)
    p = sub.add_parser("add-fault", help="answer an error to matching requests")
    p.add_argument("error", help="an error code's name (NOT_LEADER_OR_FOLLOWER) or number")
    p.add_argument("--api-key", action="append", dest="api_keys", metavar="API",
                   help="only requests of this API, by name (Produce) or key (repeatable; default: all)")
    p.add_argument("--node", type=int, help="only requests sent to this broker")
    p.add_argument("--topic", help="only this topic's partitions (by name)")
    p.add_argument("--topic-id", help="only this topic's partitions (by id)")
    p.add_argument("--partition", type=int, help="only this partition")
    p.add_argument("--budget", type=int, help="removed after answering this many requests")
    p.add_argument("--delay-ms", type=int, help="wait this long before answering")
    sub.add_parser("faults", help="the faults in force, with how often each fired")
    for name, what in (("fault", "one fault, with how often it fired"), ("remove-fault", "remove a fault")):
        sub.add_parser(name, help=what).add_argument("id", type=int)
    sub.add_parser("clear-faults", help="remove every fault")


def _fields(args):
    command = args.cluster_command
    fields = {}
    if command in ("leader", "move-leader"):
        fields["topic_id" if args.topic_id else "topic"] = args.topic
        fields["partition"] = args.partition
    if command == "add-fault":
        error = args.error
        fields = {"error": int(error) if error.lstrip("-").isdigit() else error, "node": args.node,
                  "topic": args.topic, "topic_id": args.topic_id, "partition": args.partition,
                  "budget": args.budget, "delay_ms": args.delay_ms}
        if args.api_keys:
            fields["api_keys"] = [int(k) if k.isdigit() else k for k in args.api_keys]
    for name in ("node", "kind", "id", "key"):
        if command != "add-fault" and getattr(args, name, None) is not None:
            fields[name] = getattr(args, name)
    return fields


def run(args):
    try:
        client = ChannelClient(args.channel)
    except (OSError, ValueError) as e:
        print(f"kafkaproto: error: cannot reach the control channel at {args.channel}: {e}", file=sys.stderr)
        return 2
    try:
        answer = client.ask(args.cluster_command, **_fields(args))
    except Refused as e:
        print(f"kafkaproto: the broker refused: {e}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as e:
        print(f"kafkaproto: error: the control channel at {args.channel}: {e}", file=sys.stderr)
        return 2
    finally:
        client.close()
    print(json.dumps(answer))
    return 0
