"""kafkaproto admin: ask a broker (over PLAINTEXT) what its topics' partitions are, and delete some.

    kafkaproto admin partitions --bootstrap-server HOST:PORT --topic T
    kafkaproto --extension partition_deletion admin delete-partitions --bootstrap-server HOST:PORT --topic T --count N

delete-partitions speaks DeletePartitions, the API of the partition_deletion
extension (examples/partition-deletion), to a broker that serves it (kafkaproto's,
with delete.topic.partition.enable=true); partitions shows their modes when the
extension is loaded here and the broker gives them.
"""

import socket
import sys

from .. import errors
from ..connection import ClientConnection
from ..messages import ApiVersionsRequest, RequestHeader, api

MODES = {0: "ReadWrite", 1: "ReadOnly", -1: "None"}


class AdminError(Exception):
    """What went wrong, for the command line."""


def add_arguments(parser):
    sub = parser.add_subparsers(dest="admin_command", required=True)
    for name, what in (("partitions", "list a topic's partitions, with their modes when the broker gives them"),
                       ("delete-partitions", "delete a topic's highest partitions (partition deletion)")):
        p = sub.add_parser(name, help=what, description=what)
        p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
        p.add_argument("--topic", required=True)
        if name == "delete-partitions":
            p.add_argument("--count", type=int, required=True,
                           help="how many of the highest partitions still writable to delete")
            p.add_argument("--delay-ms", type=int, default=0,
                           help="how long they stay readable before their data goes (default 0: at once)")


def run(args):
    try:
        with Client(args.bootstrap_server) as client:
            if args.admin_command == "partitions":
                for index, leader, mode in client.partitions(args.topic):
                    print(f"{args.topic} {index}: leader {leader}" + (f", {MODES.get(mode, mode)}"
                                                                       if mode is not None else ""))
                return 0
            return delete_partitions(client, args.topic, args.count, args.delay_ms)
    except AdminError as e:  # no answer to act on (unreachable, refused as a whole): could not run
        print(f"kafkaproto: error: {e}", file=sys.stderr)
        return 2


def delete_partitions(client, topic, count, delay_ms):
    try:
        request_class = api("DeletePartitions").request
    except KeyError:
        raise AdminError("DeletePartitions is not known here: load the partition_deletion extension "
                         "(kafkaproto --extension partition_deletion admin ..., or KAFKAPROTO_EXTENSIONS)") from None
    writable = [index for index, _, mode in client.partitions(topic) if mode in (0, None)]
    if count < 1 or count >= len(writable):
        raise AdminError(f"{topic} has {len(writable)} writable partitions; --count must be 1 to "
                         f"{len(writable) - 1}, so that one stays")
    body = request_class(delete_partitions_delay_ms=delay_ms, topics=[request_class.DeletePartitionsTopic(
        name=topic, partitions=writable[-count:])])
    response = client.call(body)
    if response.error_code:
        raise AdminError(f"{errors.by_code(response.error_code).name}: {response.error_message}")
    failed = 0
    for result in response.responses:
        for p in result.partitions:
            if p.error_code:
                failed += 1
                print(f"{result.name} {p.partition_index}: {errors.by_code(p.error_code).name}: {p.error_message}")
            else:
                print(f"{result.name} {p.partition_index}: {MODES.get(p.status_code, p.status_code)}")
    return 1 if failed else 0  # the broker said no to some partitions


class Client:
    """One blocking PLAINTEXT connection that asks at the highest version both sides know."""

    def __init__(self, bootstrap):
        host, _, port = bootstrap.rpartition(":")
        try:
            self.sock = socket.create_connection((host or "127.0.0.1", int(port)), timeout=30)
        except (OSError, ValueError) as e:
            raise AdminError(f"cannot connect to {bootstrap}: {e}") from None
        self.bootstrap = bootstrap
        self.connection = ClientConnection()
        self.correlation_id = 0
        self.versions = {}
        table = self.call(ApiVersionsRequest(client_software_name="kafkaproto", client_software_version="admin"),
                          version=3)
        self.versions = {k.api_key: range(k.min_version, k.max_version + 1) for k in table.api_keys}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()

    def version(self, api_key):
        ours, theirs = api(api_key).valid_versions, self.versions.get(api_key, range(0))
        both = range(max(ours.start, theirs.start), min(ours.stop, theirs.stop))
        if not both:
            raise AdminError(f"the broker at {self.bootstrap} does not serve {api(api_key).name}"
                             + (" (for DeletePartitions: is delete.topic.partition.enable set?)"
                                if api(api_key).name == "DeletePartitions" else ""))
        return both.stop - 1

    def call(self, body, version=None):
        version = self.version(body.api_key) if version is None else version
        self.correlation_id += 1
        header = RequestHeader(request_api_key=body.api_key, request_api_version=version,
                               correlation_id=self.correlation_id, client_id="kafkaproto-admin")
        try:
            self.sock.sendall(self.connection.send_request(header, body))
            while True:
                data = self.sock.recv(1 << 16)
                if not data:
                    raise AdminError(f"the broker at {self.bootstrap} closed the connection")
                for event in self.connection.receive_data(data):
                    return event.body
        except OSError as e:
            raise AdminError(f"{self.bootstrap}: {e}") from None

    def partitions(self, topic):
        """[(index, leader, mode or None)] of the topic's partitions."""
        metadata = api("Metadata").request
        body = metadata(topics=[metadata.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False)
        asks = hasattr(body, "include_partition_modes")
        if asks:
            body.include_partition_modes = True
        response = self.call(body)
        (found,) = response.topics
        if found.error_code:
            raise AdminError(f"{topic}: {errors.by_code(found.error_code).name}")
        return sorted((p.partition_index, p.leader_id, getattr(p, "mode", None) if asks else None)
                      for p in found.partitions)
