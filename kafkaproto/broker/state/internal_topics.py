"""The coordinators' logs, served as Kafka's internal topics.

``__consumer_offsets-N`` hold Kafka's own group coordinator records, each
group's in the partition Kafka's hashing picks (coordinator_logs.py), and are
served as Kafka's internal topic ``__consumer_offsets`` once it exists: made,
as Kafka's coordinator makes it, when a group is first found (or written to),
with the configs Kafka gives it; the leader of a group's partition is its
coordinator. It is kept out of the metadata log (its id is in its
directories' partition.metadata, as Kafka keeps a partition's), clients may
read it but not write, delete, grow or reconfigure it, and neither retention
nor compaction touches it. ``__transaction_state-N`` hold Kafka's own
transaction log records and are served as ``__transaction_state`` the same
way, made when a transactional id is first found (or written to);
``__share_group_state-N`` hold Kafka's share coordinator records and are
served as ``__share_group_state``, made when a share partition's coordinator
is first found or its state first written.

Why apart from cluster.py: these topics are not the metadata log's. Their logs
belong to the coordinators (groups/offsets.py, transactions.py, shares.py),
their ids to their directories, and their configs and replication to what
Kafka's coordinators give them; the cluster only holds them among its topics.
"""

import logging

from ...uuid import Uuid
from ..topic_configs import segment_size
from .cluster import OFFSETS_TOPIC, SHARE_STATE_TOPIC, TRANSACTIONS_TOPIC, Partition, Topic
from .data_dir import read_partition_metadata, write_partition_metadata
from .replicas import apply_change

log = logging.getLogger("kafkaproto.broker")

# The configs Kafka's group coordinator gives __consumer_offsets when it creates it (groupMetadataTopicConfigs,
# with offsets.topic.segment.bytes' default).
OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}
# The configs Kafka's transaction coordinator gives __transaction_state (transactionTopicConfigs, with
# transaction.state.log.segment.bytes' default; its min.insync.replicas is transaction.state.log.min.isr, which a
# one-node cluster sets to 1).
TRANSACTIONS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "compression.type": "uncompressed",
                              "min.insync.replicas": "1", "segment.bytes": "104857600",
                              "unclean.leader.election.enable": "false"}
# The configs Kafka's share coordinator gives __share_group_state (with share.coordinator.state.topic.segment.bytes'
# default, and its min.insync.replicas from share.coordinator.state.topic.min.isr, which a one-node cluster sets to 1).
SHARE_STATE_TOPIC_CONFIGS = {"cleanup.policy": "delete", "compression.type": "producer", "min.insync.replicas": "1",
                             "retention.ms": "-1", "segment.bytes": "104857600"}
INTERNAL_TOPIC_CONFIGS = {OFFSETS_TOPIC: (OFFSETS_TOPIC_CONFIGS, "the group coordinator's log"),
                          TRANSACTIONS_TOPIC: (TRANSACTIONS_TOPIC_CONFIGS, "the transaction coordinator's log"),
                          SHARE_STATE_TOPIC: (SHARE_STATE_TOPIC_CONFIGS, "the share coordinator's log")}
INTERNAL_REPLICATION = {OFFSETS_TOPIC: "offsets.topic.replication.factor",
                        TRANSACTIONS_TOPIC: "transaction.state.log.replication.factor",
                        SHARE_STATE_TOPIC: "share.coordinator.state.topic.replication.factor"}


def attach_internal_log(cluster, name, logs):
    """A coordinator's logs (CoordinatorLogs of groups/offsets.py, transactions.py, shares.py), served as Kafka's
    internal topic of that name once the topic exists: made by serve_internal, or now when a log holds records or
    was served before (its directory keeps the topic's id in partition.metadata, as Kafka's partition directories
    do)."""
    cluster.internal_logs[name] = logs
    if logs.served:
        serve_internal(cluster, name)


def serve_internal(cluster, name):
    """The internal topic, made now if it is not yet, as Kafka's coordinators make theirs for the first group,
    transactional id or share partition they are asked to find: a partition for each of the coordinator's logs
    (offsets.topic.num.partitions and its like), with the configs Kafka gives it. Kept out of the metadata log:
    its id is in the log directory's partition.metadata, and a topic of that name an older version let a
    client record there stays unserved. None before attach_internal_log."""
    topic = cluster.internal_topics.get(name)
    if topic is None and name in cluster.internal_logs:
        configs, what = INTERNAL_TOPIC_CONFIGS[name]
        topic = cluster.internal_topics[name] = _serve_internal(cluster, name, cluster.internal_logs[name],
                                                                dict(configs), what)
    return topic


def _serve_internal(cluster, name, logs, configs, what):
    try:
        topic_id = read_partition_metadata(logs.logs[0].directory)
    except ValueError as e:
        log.error("%s; %s gets a new topic id", e, name)
        topic_id = None
    if topic_id is None or topic_id in cluster.by_id or topic_id in cluster.refused_ids or \
            topic_id in cluster.removed_ids:
        topic_id = Uuid.random()
        while topic_id in cluster.by_id or topic_id in cluster.refused_ids or topic_id in cluster.removed_ids:
            topic_id = Uuid.random()
    topic = Topic(name, topic_id)
    topic.configs = configs
    alive = cluster.nodes.alive or [cluster.node_id]
    factor = min(cluster.config[INTERNAL_REPLICATION[name]], len(alive))
    changes = cluster.internal_changes.pop(topic_id, ())
    for index in range(len(logs)):
        # striped over the running brokers, so that the leaders, and the coordinators with them, spread
        replicas = [alive[(index + i) % len(alive)] for i in range(factor)]
        partition = Partition(topic, index, replicas)
        own = [change for change in changes if change.partition_id == index]
        if own:  # led where it was before a restart, unless by no broker, or one no longer in the cluster
            for change in own:
                apply_change(partition, change)
            if partition.leader not in cluster.nodes.ids or not set(partition.replicas) <= set(cluster.nodes.ids):
                partition = Partition(topic, index, replicas)
        topic.partitions.append(partition)
    cluster.topics[name] = cluster.by_id[topic_id] = topic
    segment_bytes = segment_size(cluster.topic_config(topic))
    for partition, partition_log in zip(topic.partitions, logs):
        if _topic_id_of(partition_log) != topic_id:
            write_partition_metadata(partition_log.directory, topic_id)
        partition_log.segment_bytes = segment_bytes
        cluster.attach_log(partition, partition_log)
    log.info("%s (id %s) is served: %s, %d partition(s)", name, topic_id, what, len(logs))
    return topic


def _topic_id_of(partition_log):
    try:
        return read_partition_metadata(partition_log.directory)
    except ValueError:
        return None
