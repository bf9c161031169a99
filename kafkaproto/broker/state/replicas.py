"""The brokers of a cluster served by one process, and where each partition lives on them.

A cluster of ``kafkaproto.nodes`` brokers has the ids node.id .. node.id + count - 1; each may be stopped and
started again while the process runs (a test's failure). Every partition has replicas (the brokers that hold it),
an in-sync set (ISR) and a leader, kept in the metadata log as Kafka's controller keeps them: PartitionRecord when
the partition is made, PartitionChangeRecord when its leader or ISR changes. A change of leader starts a new leader
epoch; every change a new partition epoch.

Replication is virtual: a partition has one log, which every replica reads, so a replica in the ISR is always
caught up and a new leader has every record the old one acknowledged. What is real is what clients see: which
broker leads, which answer NOT_LEADER_OR_FOLLOWER, the epochs, the ISR that acks=all and min.insync.replicas count.
"""

NO_LEADER = -1  # a partition none of whose in-sync replicas runs
NO_CHANGE = -2  # PartitionChangeRecord's leader when the leader stays


class Nodes:
    """The cluster's brokers: their ids, in order, and which are stopped."""

    def __init__(self, first, count):
        self.ids = list(range(first, first + count))
        self.stopped = set()
        self._next_start = 0  # where the next topic's first replica goes (placement goes round the brokers)

    def __len__(self):
        return len(self.ids)

    @property
    def alive(self):
        return [node for node in self.ids if node not in self.stopped]

    def is_alive(self, node):
        return node in self.ids and node not in self.stopped

    @property
    def controller(self):
        """The broker clients are told is the controller: the lowest-numbered one running (Kafka's brokers name one
        of themselves too, as clients cannot reach a KRaft controller)."""
        alive = self.alive
        return alive[0] if alive else NO_LEADER

    def place(self, partitions, replication_factor, first_index=0):
        """[[replica ids]] for partitions first_index.. of a topic: the first replica of each goes round the running
        brokers from a start that moves on with every topic, the others follow it, so that leaders spread (Kafka's
        striped placement, without racks). ValueError when fewer brokers run than replication_factor."""
        alive = self.alive
        if replication_factor > len(alive):
            raise ValueError(f"Unable to replicate the partition {replication_factor} time(s): The target "
                             f"replication factor of {replication_factor} cannot be reached because only "
                             f"{len(alive)} broker(s) are registered.")
        start = self._next_start
        self._next_start += 1
        return [[alive[(start + index + i) % len(alive)] for i in range(replication_factor)]
                for index in range(first_index, first_index + partitions)]


def change_record(partition, leader=NO_CHANGE, isr=None, replicas=None):
    """The PartitionChangeRecord of a change of partition's leader, ISR or replicas (None: unchanged), or None when
    nothing would change."""
    from ...metadata import PartitionChangeRecord
    if leader == partition.leader:
        leader = NO_CHANGE
    if isr is not None and list(isr) == partition.isr:
        isr = None
    if replicas is not None and list(replicas) == partition.replicas:
        replicas = None
    if leader == NO_CHANGE and isr is None and replicas is None:
        return None
    return PartitionChangeRecord(partition_id=partition.index, topic_id=partition.topic.topic_id, leader=leader,
                                 isr=None if isr is None else list(isr),
                                 replicas=None if replicas is None else list(replicas))


def apply_change(partition, record):
    """Replay a PartitionChangeRecord on partition; True when its leader changed (a new leader epoch)."""
    if record.replicas is not None:
        partition.replicas = list(record.replicas)
    if record.isr is not None:
        partition.isr = list(record.isr)
    partition.partition_epoch += 1
    if record.leader != NO_CHANGE:
        partition.leader = record.leader
        partition.leader_epoch += 1
        return True
    return False


def leader_after(partition, nodes, leaving=None):
    """Who leads partition once leaving stops (or now, when its leader is gone): its leader if that runs, else the
    first running replica of its ISR, else no one."""
    if partition.leader != leaving and nodes.is_alive(partition.leader):
        return partition.leader
    for node in partition.isr:
        if node != leaving and nodes.is_alive(node):
            return node
    return NO_LEADER


def partitions_of(cluster):
    """Every partition of the cluster, internal topics' included."""
    for topic in list(cluster.topics.values()):
        yield from topic.partitions


def move_leader(cluster, partition, node):
    """Make node lead partition (a new leader epoch): a replica of it joins its ISR first; another running broker
    becomes a replica first (a reassignment done at once). ValueError for a broker not running."""
    if not cluster.nodes.is_alive(node):
        raise ValueError(f"broker {node} is not running")
    replicas = partition.replicas if node in partition.replicas else [*partition.replicas, node]
    isr = partition.isr if node in partition.isr else [*(n for n in partition.isr if n >= 0), node]
    cluster.change_partition(partition, leader=node, isr=isr, replicas=replicas)


def stop_node(cluster, node):
    """Take node out of the cluster: out of every ISR, its partitions led by the next running replica of their ISR
    (a new leader epoch), or by no one. The partitions that changed."""
    if not cluster.nodes.is_alive(node):
        raise ValueError(f"broker {node} is not running")
    cluster.nodes.stopped.add(node)
    changed = []
    for partition in partitions_of(cluster):
        if node not in partition.isr and partition.leader != node:
            continue
        leader = leader_after(partition, cluster.nodes, leaving=node)
        isr = [n for n in partition.isr if n != node] or ([partition.leader] if leader == NO_LEADER else [])
        # Kafka keeps the last leader in the ISR of a partition that lost every replica: it may come back
        if cluster.change_partition(partition, leader=leader, isr=isr):
            changed.append(partition)
    return changed


def start_node(cluster, node):
    """Bring node back: it rejoins the ISR of the partitions it holds (caught up at once: replication is virtual),
    and leads those that had no running leader. The partitions that changed."""
    if node not in cluster.nodes.ids:
        raise ValueError(f"broker {node} is not one of the cluster's {cluster.nodes.ids}")
    cluster.nodes.stopped.discard(node)
    changed = []
    for partition in partitions_of(cluster):
        if node not in partition.replicas:
            continue
        leader = partition.leader if cluster.nodes.is_alive(partition.leader) else node
        isr = partition.isr if node in partition.isr else [*partition.isr, node]
        if cluster.change_partition(partition, leader=leader, isr=isr):
            changed.append(partition)
    return changed
