"""The coordinators' logs, served as Kafka's internal topics.

``__consumer_offsets-0`` holds Kafka's own group coordinator records, and is
served as Kafka's internal topic ``__consumer_offsets`` once it exists: made,
as Kafka's coordinator makes it, when a group is first found (or written to),
with one partition, the coordinator's log, and the configs Kafka gives it. It
is kept out of the metadata log (its id is in its directory's
partition.metadata, as Kafka keeps a partition's), clients may read it but not
write, delete, grow or reconfigure it, and neither retention nor compaction
touches it. ``__transaction_state-0`` holds Kafka's own transaction log records
and is served as ``__transaction_state`` the same way, made when a
transactional id is first found (or written to); ``__share_group_state-0``
holds Kafka's share coordinator records and is served as
``__share_group_state``, made when a share partition's coordinator is first
found or its state first written.

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


def attach_internal_log(cluster, name, partition_log):
    """A coordinator's log (groups/offsets.py, transactions.py, shares.py), served as Kafka's internal topic of
    that name once the topic exists: made by serve_internal, or now when the log holds records or was served
    before (its directory keeps the topic's id in partition.metadata, as Kafka's partition directories do)."""
    cluster.internal_logs[name] = partition_log
    if _was_served(partition_log):
        serve_internal(cluster, name)


def serve_internal(cluster, name):
    """The internal topic, made now if it is not yet, as Kafka's coordinators make theirs for the first group,
    transactional id or share partition they are asked to find: one partition, the coordinator's log
    (offsets.topic.num.partitions and its like), with the configs Kafka gives it. Kept out of the metadata log:
    its id is in the log directory's partition.metadata, and a topic of that name an older version let a
    client record there stays unserved. None before attach_internal_log."""
    topic = cluster.internal_topics.get(name)
    if topic is None and name in cluster.internal_logs:
        configs, what = INTERNAL_TOPIC_CONFIGS[name]
        topic = cluster.internal_topics[name] = _serve_internal(cluster, name, cluster.internal_logs[name],
                                                                dict(configs), what)
    return topic


def _serve_internal(cluster, name, partition_log, configs, what):
    directory = partition_log.directory
    try:
        topic_id = read_partition_metadata(directory)
    except ValueError as e:
        log.error("%s; %s gets a new topic id", e, name)
        topic_id = None
    if topic_id is None or topic_id in cluster.by_id or topic_id in cluster.refused_ids or \
            topic_id in cluster.removed_ids:
        topic_id = Uuid.random()
        while topic_id in cluster.by_id or topic_id in cluster.refused_ids or topic_id in cluster.removed_ids:
            topic_id = Uuid.random()
        write_partition_metadata(directory, topic_id)
    topic = Topic(name, topic_id)
    topic.configs = configs
    factor = min(cluster.config[INTERNAL_REPLICATION[name]], len(cluster.nodes.alive)) or 1
    partition = Partition(topic, 0, cluster.nodes.alive[:factor] or [cluster.node_id])
    topic.partitions.append(partition)
    changes = cluster.internal_changes.pop(topic_id, ())
    if changes:  # led where it was before a restart, unless by no broker, or one no longer in the cluster
        for change in changes:
            apply_change(partition, change)
        if partition.leader not in cluster.nodes.ids or not set(partition.replicas) <= set(cluster.nodes.ids):
            partition = topic.partitions[0] = Partition(topic, 0, cluster.nodes.alive[:factor] or [cluster.node_id])
    cluster.topics[name] = cluster.by_id[topic_id] = topic
    partition_log.segment_bytes = segment_size(cluster.topic_config(topic))
    cluster.attach_log(partition, partition_log)
    log.info("%s (id %s) is served: %s, one partition", name, topic_id, what)
    return topic


def _was_served(partition_log):
    """Whether a coordinator's log is to be served at start: it holds records, or was served before (its
    directory keeps the topic's id)."""
    try:
        served = read_partition_metadata(partition_log.directory) is not None
    except ValueError:
        served = True  # unreadable: made again, with a new id
    return served or partition_log.log_end_offset > 0
