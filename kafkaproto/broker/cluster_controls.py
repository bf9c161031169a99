"""What a test does to a running cluster: move a partition's leader or a coordinator, stop and start a broker,
install faults. Broker (embedded.py) calls these from Python, the control channel (control_channel.py) for tests
in other languages; both run them on the broker's event loop, which owns its state."""

import itertools

from ..uuid import Uuid
from .faults import Fault
from .state.coordinator_logs import (OFFSETS_TOPIC, SHARE_STATE_TOPIC, TRANSACTIONS_TOPIC, parse_share_key,
                                     partition_for)
from .state.internal_topics import serve_internal
from .state.replicas import move_leader

COORDINATOR_TOPICS = {"group": OFFSETS_TOPIC, "transaction": TRANSACTIONS_TOPIC, "share": SHARE_STATE_TOPIC}
KEYS = {"group": "a group id", "transaction": "a transactional id",
        "share": "a share partition's group:topic id:partition"}


class ClusterControls:
    def __init__(self, server):
        self.server = server
        self.state = server.state
        self.installed = {}  # fault id -> Fault, of the faults installed here (ids for tests outside Python)
        self._ids = itertools.count(1)

    def partition(self, topic, index):
        """A partition of a topic named by name or Uuid; KeyError naming what is not there."""
        cluster = self.state.cluster
        found = cluster.by_id.get(topic) if isinstance(topic, Uuid) else cluster.topics.get(topic)
        if found is None:
            raise KeyError(f"no topic {topic!r}")
        if not 0 <= index < len(found.partitions):
            raise KeyError(f"no partition {index} of topic {topic!r} (it has {len(found.partitions)})")
        return found.partitions[index]

    def describe(self, topic, index):
        partition = self.partition(topic, index)
        return {"leader": partition.leader, "leader_epoch": partition.leader_epoch,
                "replicas": list(partition.replicas), "isr": list(partition.isr)}

    def nodes(self):
        """Each broker of the cluster: its id, first listener's address, and whether it runs."""
        nodes = self.state.cluster.nodes
        return [{"id": node, "host": host, "port": port, "running": nodes.is_alive(node)}
                for node, (host, port) in self.server.node_endpoints.items()]

    def coordinator(self, kind, key=None):
        """The broker coordinating a group ("group"), transactional id ("transaction") or share partition ("share",
        key ``group:topic id:partition``): the leader of the partition of the internal topic Kafka's hashing picks
        for key. Without a key, the topic's only partition's."""
        return self.coordinator_partition(kind, key).leader

    def move_leader(self, topic, index, node):
        move_leader(self.state.cluster, self.partition(topic, index), self._node(node))
        self.server._wake_all()

    def move_coordinator(self, kind, node, key=None):
        """Move key's coordinator to node: the leader of its internal topic's partition moves, and with it the
        coordinator of every other key in that partition."""
        move_leader(self.state.cluster, self.coordinator_partition(kind, key), self._node(node))
        self.server._wake_all()

    def coordinator_partition(self, kind, key):
        topic = serve_internal(self.state.cluster, _coordinator_topic(kind))
        if key is None:
            if len(topic.partitions) > 1:
                raise ValueError(f"{topic.name} has {len(topic.partitions)} partitions, each coordinating its own "
                                 f"keys: name the key ({KEYS[kind]})")
            return topic.partitions[0]
        if kind == "share":
            key = parse_share_key(key)
        return topic.partitions[partition_for(key, len(topic.partitions))]

    async def stop_node(self, node):
        await self.server.stop_node(self._node(node))

    async def start_node(self, node):
        await self.server.start_node(self._node(node))

    def add_fault(self, fault):
        fault.id = next(self._ids)
        self.installed[fault.id] = fault
        return self.state.faults.add(fault)

    def fault(self, fault_id):
        fault = self.installed.get(fault_id)
        if fault is None:
            raise KeyError(f"no fault {fault_id} was installed")
        return fault

    def faults(self):
        """The faults still in force (a fault whose budget ran out is gone), oldest first."""
        return [fault for fault in self.state.faults.faults if isinstance(fault, Fault)]

    def _node(self, node):
        if node not in self.state.cluster.nodes.ids:
            raise ValueError(f"broker {node} is not one of the cluster's {self.state.cluster.nodes.ids}")
        return node


def _coordinator_topic(kind):
    try:
        return COORDINATOR_TOPICS[kind]
    except KeyError:
        raise ValueError(f"no coordinator {kind!r} (one of {', '.join(COORDINATOR_TOPICS)})") from None
