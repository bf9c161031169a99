"""Topics and partitions, kept as a log of KRaft metadata records and replayed on start.

Every change (a topic created, deleted or grown, a config set, producer ids
handed out) is one batch of metadata records appended to
``__cluster_metadata-0`` before it takes effect, framed as Kafka frames them;
the state in memory is what replaying that log gives. Each batch is synced to
stable storage before the change is answered: a topic whose creation was
answered is never lost, with the process or with the machine.

New partitions are made on disk first (directory, partition.metadata, an empty
segment) and recorded after: a topic, or a topic's growth, that cannot be made
whole is removed from disk again and never reaches the metadata log. At
start-up, a partition directory no known topic owns is what such a creation
left when the broker was killed: an empty one is removed; one that holds
records is moved aside (``-stray``), kept and logged as an error; one whose
topic the metadata log deleted is deleted, as the deletion would have.

The broker's own logs live beside the partitions, where Kafka keeps them and its
tools look for them: ``__cluster_metadata-0`` (the metadata log, real KRaft
records that Kafka's dump tools read), and the coordinators' logs,
``__consumer_offsets-N``, ``__transaction_state-N`` and ``__share_group_state-N``
(coordinator_logs.py). A topic of one of those names would have that log as
its partition directory, so no topic may have one: they are refused as Kafka
refuses them (``__cluster_metadata`` is INVALID_REQUEST; the other two exist
already, TOPIC_ALREADY_EXISTS, and names that differ from them only by ``.``
and ``_`` collide with them), and beyond that partition_dir_name, the one place
a partition's directory name is made, raises for them, the start-up scan never
takes their directories for partitions, and a topic of such a name found in a
metadata log (an older version let clients create one) is not served. Moving
the broker's logs to names no topic can produce would have spared that guard,
but moved the metadata log from where Kafka's tools expect it. The
coordinators' logs are served as Kafka's internal topics by internal_topics.py.

The data directory is locked (an exclusive flock(2) on its ``.lock`` file, as
Kafka locks each log directory) before anything in it is read, and until the
metadata log is closed: a second broker on the same directory, in another
process or in this one, is refused (DirectoryLocked, an OSError), naming it.
"""

import logging
import os
import shutil
import time
import uuid as _uuid

from ... import errors, registry
from ...exceptions import DecodeError
from ...metadata import (AccessControlEntryRecord, ClientQuotaRecord, ConfigRecord, FeatureLevelRecord, PartitionRecord,
                         ProducerIdsRecord, RemoveAccessControlEntryRecord, RemoveTopicRecord, TopicRecord,
                         decode_record, encode_record)
from ...records import RecordBatchBuilder, iter_batches
from ...uuid import Uuid
from ..config import SETTINGS, ConfigError
from ..topic_configs import segment_size, topic_defaults
from ..group_config import typed
from ..security import SCRAM_NAMES, ScramCredential
from .acls import Acl, Acls
from .clock import clock_ms
from .features import FEATURES
from .quotas import Quotas
from .data_dir import (DirectoryLock, MetadataLog, holds_no_records, looks_like_partition, read_partition_metadata,
                       records_size, write_partition_metadata, write_synced)
from .coordinator_logs import OFFSETS_TOPIC, PARTITION_DIR, SHARE_STATE_TOPIC, TRANSACTIONS_TOPIC
from .replicas import NO_CHANGE, Nodes, apply_change, change_record
from .log import LogError, OpenFiles, PartitionLog, parse_batches, sync_directory

log = logging.getLogger("kafkaproto.broker")

# The broker's own logs, which no topic may be named after (their directories are these topics' partition 0).
METADATA_TOPIC = "__cluster_metadata"
# Kafka's internal topics: to clients they always exist
INTERNAL_TOPICS = (OFFSETS_TOPIC, SHARE_STATE_TOPIC, TRANSACTIONS_TOPIC)
RESERVED_TOPICS = (METADATA_TOPIC,) + INTERNAL_TOPICS
METADATA_DIR = f"{METADATA_TOPIC}-0"
TOPIC_RESOURCE = 2  # ConfigRecord resource types (Kafka's ConfigResource.Type)
GROUP_RESOURCE = 32
CLIENT_METRICS_RESOURCE = 16
BROKER_RESOURCE = 4
PRODUCER_ID_BLOCK = 1000


# A partition's mode (partition deletion, examples/partition-deletion): readable and writable; being deleted,
# readable only; deleted.
READ_WRITE, READ_ONLY, NONE_MODE = 0, 1, -1


class Partition:
    """One partition: its replicas, ISR and leader (state/replicas.py), its log (or why it cannot be served), and
    with the log its producers' state (producers.PartitionProducers) and its open and aborted transactions
    (transactions.PartitionTransactions), which BrokerState sets when the log opens."""

    __slots__ = ("topic", "index", "log", "error", "leader_epoch", "mode", "delete_at_ms", "producers",
                 "transactions", "replicas", "isr", "leader", "partition_epoch")

    def __init__(self, topic, index, replicas=()):
        self.topic = topic
        self.index = index
        self.log = None
        self.error = errors.NONE  # INCONSISTENT_TOPIC_ID when the directory holds another topic's data
        self.replicas = list(replicas)  # the brokers that hold it (state/replicas.py), in preference order
        self.isr = list(replicas)
        self.leader = self.replicas[0] if self.replicas else -1
        self.leader_epoch = 0
        self.partition_epoch = 0
        self.mode = READ_WRITE
        self.delete_at_ms = None  # when a ReadOnly partition turns None and its data goes
        self.producers = None
        self.transactions = None


class Topic:
    __slots__ = ("name", "topic_id", "partitions", "configs")

    def __init__(self, name, topic_id):
        self.name = name
        self.topic_id = topic_id
        self.partitions = []
        self.configs = {}

    @property
    def is_internal(self):
        return self.name in INTERNAL_TOPICS


class TopicNameRefused(LogError):
    """A topic was about to be made, or its directory named, under a name it may not have: one of the broker's own
    logs', or (to be made) an existing topic's."""


def partition_dir_name(name, index):
    """The directory name of a topic's partition; raises TopicNameRefused for the names of the broker's own logs,
    whose directories these would be."""
    if name in RESERVED_TOPICS:
        raise TopicNameRefused(f"{name!r} is the name of one of the broker's own logs, not of a topic")
    return f"{name}-{index}"


def unified(name):
    """A topic name with '.' and '_' made alike: Kafka refuses a topic whose unified name is another's (in its
    metrics the two would be one)."""
    return name.replace(".", "_")


def creation_refused(name, existing, colliding):
    """(error, message) for a new topic named name, as Kafka's controller refuses it, or None. existing: the
    names of the topics there are; colliding(unified name): those of them with that unified name. The
    characters and length are topic_name_error's."""
    if name == METADATA_TOPIC:
        return errors.INVALID_REQUEST, f"Creation of internal topic {METADATA_TOPIC} is prohibited."
    if name in existing or name in INTERNAL_TOPICS:
        return errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
    if "." in name or "_" in name:
        others = colliding(unified(name))
        if others:
            return errors.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topic: {others[0]}"
    return None


class Cluster:
    """The brokers, topics, partitions, configs and producer-id blocks of the cluster, on disk in log_dir."""

    def __init__(self, config, files=None):
        self.config = config
        self.log_dir = config.log_dir
        self.files = files if files is not None else OpenFiles()  # the broker's open segment files
        os.makedirs(self.log_dir, exist_ok=True)
        self.lock = DirectoryLock(self.log_dir, self.files)
        try:
            self._start(config)
        except BaseException:
            self.lock.release()
            raise

    def _start(self, config):
        self.node_id = config.node_id
        self.nodes = Nodes(config.node_id, config["kafkaproto.nodes"])
        self.cluster_id = self._meta_properties()
        self.topics = {}  # name -> Topic
        self.by_id = {}  # Uuid -> Topic
        # unified name -> the names with it, oldest first, of the topics with '.' or '_' in their names (and of the
        # broker's own logs that are Kafka's internal topics): a new topic may not collide with them
        self.collision_names = {unified(name): [name] for name in INTERNAL_TOPICS}
        self.removed_ids = set()  # topic ids the metadata log deleted (their directories may still be there)
        self.refused_ids = set()  # ids of topics of the broker's own logs' names an older version recorded
        self.internal_logs = {}  # internal topic name -> the coordinator's log served as it once it exists
        self.internal_topics = {}  # internal topic name -> that topic, once it exists
        # topic id -> the PartitionChangeRecords the metadata log holds for an internal topic (which has no
        # TopicRecord): replayed when it is served again (internal_topics.py)
        self.internal_changes = {}
        self.next_producer_id = 0  # the first id of the next block to hand out
        self.producer_id_block = (0, 0)  # [first, end) ids this broker may give out without a new record
        self.broker_configs = {}  # dynamic configs of this broker (resource name: its id)
        self.node_configs = {}  # node id -> the dynamic configs of another broker of the cluster (kafkaproto.nodes)
        self.default_broker_configs = {}  # dynamic defaults of every broker (resource name: "")
        self.group_configs = {}  # group id -> {name: value}: its own configs (group_config.py)
        self.client_metrics = {}  # subscription name -> {name: value} (client_metrics.py)
        self.client_metrics_version = 0  # counts the changes to client_metrics (telemetry reads them again)
        self._effective = {}  # Topic -> its effective configs, until a config changes (Produce reads them)
        self._derived = {}  # (Topic, derive) -> derive(its effective configs), as long as _effective
        self.pending_deletes = []  # (when due, on state/clock.py, path) of renamed-away partition directories
        self.scram = {}  # (mechanism, user) -> ScramCredential, from AlterUserScramCredentials
        # finalized feature levels, {name: level}: FEATURES' highest until UpdateFeatures records others
        self.features = {name: high for name, (_, high) in FEATURES.items()}
        self.quotas = Quotas()  # client quotas, from AlterClientQuotas
        self.acls = Acls(enabled=bool(config["authorizer.class.name"]),
                         super_users=[u.strip() for u in config["super.users"].split(";") if u.strip()],
                         allow_if_none=config["allow.everyone.if.no.acl.found"])
        clean = os.path.exists(self._clean_marker)
        if clean:
            os.unlink(self._clean_marker)
        self.metadata = MetadataLog(os.path.join(self.log_dir, METADATA_DIR), self.lock, recover=not clean,
                                    files=self.files)
        try:
            self._replay()
            self.on_partition_log = None  # called with each partition whose log is opened after start-up
            self._open_partitions(recover=not clean)
        except BaseException:
            for topic in self.topics.values():
                for partition in topic.partitions:
                    if partition.log is not None:
                        partition.log.close(write_index=False)
            self.metadata.close(write_index=False)
            raise

    # --- start-up

    @property
    def _clean_marker(self):
        return os.path.join(self.log_dir, ".kafka_cleanshutdown")

    def _meta_properties(self):
        path = os.path.join(self.log_dir, "meta.properties")
        if os.path.exists(path):
            with open(path) as f:
                props = dict(line.split("=", 1) for line in f.read().splitlines() if "=" in line and line[0] != "#")
            if props.get("node.id") and int(props["node.id"]) != self.node_id:
                raise LogError(f"{path}: node.id {props['node.id']} is not the configured {self.node_id}")
            return props["cluster.id"]
        cluster_id = self.config.cluster_id or str(Uuid.random())
        write_synced(path, f"version=1\ncluster.id={cluster_id}\nnode.id={self.node_id}\n")
        return cluster_id

    def _replay(self):
        for segment in self.metadata.segments:
            data = segment.read(0, segment.size)
            for batch in iter_batches(data):
                for record in batch:
                    try:
                        decoded = decode_record(record.value)[0]
                    except DecodeError as e:
                        raise LogError(f"{self.metadata.directory}: the record at offset {record.offset} cannot "
                                       f"be read ({e}); if an extension wrote it, load that extension") from None
                    self._apply(decoded)
        for topic in [t for t in self.topics.values() if t.name in RESERVED_TOPICS]:
            # Made by a client through an older version, whose partition directory was one of the broker's own
            # logs: it is left out, so that nothing reaches that log through it again.
            log.error("the metadata log holds a topic named %s (id %s), the name of one of the broker's own logs; "
                      "it is not served (an older version let clients create it; its records stay in the log)",
                      topic.name, topic.topic_id)
            self._forget(topic)
            self.refused_ids.add(topic.topic_id)

    def _forget(self, topic):
        del self.topics[topic.name]
        del self.by_id[topic.topic_id]
        self._effective.pop(topic, None)
        self._derived.clear()
        names = self.collision_names.get(unified(topic.name))
        if names and topic.name in names:
            names.remove(topic.name)
            if not names:
                del self.collision_names[unified(topic.name)]

    def _apply(self, record):
        kind = type(record).__name__
        if kind == "TopicRecord":
            topic = Topic(record.name, record.topic_id)
            self.topics[topic.name] = topic
            self.by_id[topic.topic_id] = topic
            if "." in topic.name or "_" in topic.name:
                self.collision_names.setdefault(unified(topic.name), []).append(topic.name)
        elif kind == "PartitionRecord":
            topic = self.by_id[record.topic_id]
            while len(topic.partitions) <= record.partition_id:
                topic.partitions.append(Partition(topic, len(topic.partitions)))
            partition = topic.partitions[record.partition_id]
            partition.replicas, partition.isr, partition.leader = list(record.replicas), list(record.isr), \
                record.leader
            partition.leader_epoch, partition.partition_epoch = record.leader_epoch, record.partition_epoch
            partition.mode = getattr(record, "mode", READ_WRITE)  # the field of the partition_deletion extension
            while topic.partitions and topic.partitions[-1].mode == NONE_MODE:
                topic.partitions.pop()  # deleted partitions are gone, so the count shrinks
        elif kind == "PartitionChangeRecord":
            if record.topic_id not in self.by_id:  # an internal topic's, not served yet
                self.internal_changes.setdefault(record.topic_id, []).append(record)
                return
            partition = self.by_id[record.topic_id].partitions[record.partition_id]
            if apply_change(partition, record) and partition.log is not None:
                partition.log.epochs.assign(partition.leader_epoch, partition.log.log_end_offset)
        elif kind == "DeleteTopicPartitionsRecord":
            for partition in self.by_id[record.topic_id].partitions[record.delete_partitions:]:
                if partition.delete_at_ms is None:  # those already going keep their time
                    partition.delete_at_ms = record.delete_partitions_delay_timestamp
        elif kind == "RemoveTopicRecord":
            self._forget(self.by_id[record.topic_id])
            self.removed_ids.add(record.topic_id)
        elif kind == "ConfigRecord":
            self._effective.clear()
            self._derived.clear()
            if record.resource_type == TOPIC_RESOURCE:
                target = self.topics[record.resource_name].configs
            elif record.resource_type == GROUP_RESOURCE:
                target = self.group_configs.setdefault(record.resource_name, {})
            elif record.resource_type == CLIENT_METRICS_RESOURCE:
                self._apply_client_metrics(record)
                return
            elif record.resource_name == "":
                target = self.default_broker_configs
            elif record.resource_name == str(self.node_id):
                target = self.broker_configs
            elif record.resource_name in {str(node) for node in self.nodes.ids}:
                target = self.node_configs.setdefault(int(record.resource_name), {})
            else:
                return  # a broker's not served here
            if record.value is None:
                target.pop(record.name, None)
                if not target and record.resource_type == GROUP_RESOURCE:
                    del self.group_configs[record.resource_name]
            else:
                target[record.name] = record.value
            if record.resource_type == BROKER_RESOURCE and record.name in SETTINGS and \
                    record.resource_name in ("", str(self.node_id)):
                try:
                    self.config.set_dynamic(record.name, self.configs.get(record.name))
                except ConfigError as e:  # checked when it was altered: a log written by another version
                    log.error("the metadata log's dynamic %s is not used: %s", record.name, e)
        elif kind == "ProducerIdsRecord":
            self.next_producer_id = record.next_producer_id
        elif kind == "UserScramCredentialRecord":
            self.scram[(SCRAM_NAMES.get(record.mechanism), record.name)] = ScramCredential(
                bytes(record.salt), bytes(record.stored_key), bytes(record.server_key), record.iterations)
        elif kind == "RemoveUserScramCredentialRecord":
            self.scram.pop((SCRAM_NAMES.get(record.mechanism), record.name), None)
        elif kind == "ClientQuotaRecord":
            self.quotas.apply([(e.entity_type, e.entity_name) for e in record.entity], record.key, record.value,
                              record.remove)
        elif kind == "FeatureLevelRecord":
            self.features[record.name] = record.feature_level
        elif kind == "AccessControlEntryRecord":
            self.acls.add(record.id, Acl(record.resource_type, record.resource_name, record.pattern_type,
                                         record.principal, record.host, record.operation, record.permission_type))
        elif kind == "RemoveAccessControlEntryRecord":
            self.acls.remove(record.id)

    def _apply_client_metrics(self, record):
        """A client-metrics subscription's config set or deleted; one with none left is gone, as in Kafka."""
        configs = self.client_metrics.setdefault(record.resource_name, {})
        if record.value is None:
            configs.pop(record.name, None)
            if not configs:
                del self.client_metrics[record.resource_name]
        else:
            configs[record.name] = record.value
        self.client_metrics_version += 1

    def _open_partitions(self, recover):
        """Open each known partition's log; remove, delete or set aside the directories no known topic owns."""
        known = {}
        for topic in self.topics.values():
            for partition in topic.partitions:
                known[partition_dir_name(topic.name, partition.index)] = partition
        for name in sorted(os.listdir(self.log_dir)):
            path = os.path.join(self.log_dir, name)
            if not os.path.isdir(path) or name == METADATA_DIR or PARTITION_DIR.fullmatch(name):
                continue  # the broker's own logs are never partitions
            if name.endswith("-delete"):
                self.pending_deletes.append((clock_ms() + self.config.segment_delete_delay_ms, path))
                continue
            if name.endswith("-stray"):
                if holds_no_records(path):  # what a killed creation left, set aside by an older version
                    log.info("%s: set aside and holds no records; removed", path)
                    shutil.rmtree(path, ignore_errors=True)
                continue
            partition = known.pop(name, None)
            try:
                on_disk = read_partition_metadata(path)
            except ValueError as e:
                log.error("%s", e)
                on_disk = None
            if partition is None:
                self._unowned(path, on_disk)
                continue
            if on_disk is not None and on_disk != partition.topic.topic_id:
                log.error("%s holds topic id %s, but the metadata log gives %s %s: INCONSISTENT_TOPIC_ID, "
                          "the partition is not served", path, on_disk, partition.topic.name,
                          partition.topic.topic_id)
                partition.error = errors.INCONSISTENT_TOPIC_ID
                continue
            if on_disk is None:
                write_partition_metadata(path, partition.topic.topic_id)
            self._open_log(partition, path, recover)
        for partition in known.values():  # created in the metadata log, directory not made yet
            self._create_log(partition)

    def _unowned(self, path, topic_id):
        """A directory no topic of the metadata log owns (topic_id: its partition.metadata's, or None)."""
        if topic_id is not None and topic_id in self.removed_ids:
            # The topic's deletion was recorded, and the broker stopped before the directory was renamed.
            gone = f"{path}.{_uuid.uuid4().hex}-delete"
            log.info("%s: its topic (id %s) was deleted; renamed to %s, to be deleted", path, topic_id,
                     os.path.basename(gone))
            os.rename(path, gone)
            self.pending_deletes.append((clock_ms() + self.config.segment_delete_delay_ms, gone))
        elif looks_like_partition(os.path.basename(path)) and holds_no_records(path):
            # A topic's creation makes its directories before it is recorded: the broker stopped in between, and
            # the creation was never answered.
            log.info("%s: no topic in the metadata log owns it, and it holds no records (a creation that did "
                     "not finish); removed", path)
            shutil.rmtree(path, ignore_errors=True)
        else:
            size = records_size(path)
            if size:
                log.error("%s: %d bytes of records (topic id %s) that no topic in the metadata log owns; they are "
                          "not served, and kept", path, size, topic_id)
            self._set_aside(path, "no topic in the metadata log owns it")

    def _set_aside(self, path, why):
        stray = f"{path}.{_uuid.uuid4().hex}-stray"
        log.warning("%s: %s; moved aside to %s (not served, not deleted)", path, why, os.path.basename(stray))
        os.rename(path, stray)

    def _new_log(self, path, config, recover=False):
        return PartitionLog(path, segment_bytes=segment_size(config),
                            index_interval=int(config["index.interval.bytes"]), recover=recover,
                            segment_ms=int(config["segment.ms"]), files=self.files)

    def _open_log(self, partition, path, recover=False):
        self.attach_log(partition, self._new_log(path, self.topic_config(partition.topic), recover))

    def attach_log(self, partition, partition_log):
        """Give a partition its log: one opened or made here, or a coordinator's (internal_topics.py)."""
        partition.log = partition_log
        # its leader took it at its epoch: that epoch begins at the log's end, if no batch began it before
        partition_log.epochs.assign(partition.leader_epoch, partition_log.log_end_offset)
        if self.on_partition_log is not None:
            self.on_partition_log(partition)

    def _create_log(self, partition):
        path = os.path.join(self.log_dir, partition_dir_name(partition.topic.name, partition.index))
        os.makedirs(path, exist_ok=True)
        write_partition_metadata(path, partition.topic.topic_id)
        self._open_log(partition, path)

    def _make_logs(self, name, topic_id, indexes, config):
        """{index: PartitionLog} of new partitions, directories and empty logs made before any record names
        them; when one cannot be made, those already made are removed and the error raised."""
        made = {}
        try:
            for index in indexes:
                path = os.path.join(self.log_dir, partition_dir_name(name, index))
                if os.path.lexists(path):
                    if os.path.isdir(path) and holds_no_records(path):
                        shutil.rmtree(path)
                    else:
                        self._set_aside(path, "left over under the name of a new partition")
                os.mkdir(path)
                made[index] = None
                write_partition_metadata(path, topic_id)
                made[index] = self._new_log(path, config)
            if made:
                sync_directory(self.log_dir)  # the directories last as long as the record that names them
        except BaseException:
            self._unmake(name, made)
            raise
        return made

    def _unmake(self, name, made):
        """Remove what _make_logs made (a creation that failed): the logs' files are closed, the directories go."""
        for index, partition_log in made.items():
            if partition_log is not None:
                partition_log.close(write_index=False)
            path = os.path.join(self.log_dir, partition_dir_name(name, index))
            try:
                shutil.rmtree(path)
            except OSError as e:
                # Renaming needs no descriptor: the directory then goes with the other deleted ones.
                log.error("%s: not removed after a failed creation (%s); renamed away to be deleted", path, e)
                try:
                    gone = f"{path}.{_uuid.uuid4().hex}-delete"
                    os.rename(path, gone)
                    self.pending_deletes.append((clock_ms(), gone))
                except OSError as e:
                    log.error("%s: not renamed either (%s); set aside at the next start", path, e)

    # --- changes, each a batch in the metadata log first

    def _commit(self, records):
        builder = RecordBatchBuilder()
        now = int(time.time() * 1000)
        for record in records:
            builder.append(None, encode_record(record), timestamp=now)
        data = builder.build()
        # On stable storage before it takes effect, so before it is answered (Kafka's controller, too, answers
        # only records its log has flushed).
        self.metadata.append(data, parse_batches(data), sync=True)
        for record in records:
            self._apply(record)

    def creation_refused(self, name):
        """(error, message) for a topic that may not be created under name (beyond topic_name_error's rules),
        as Kafka's controller refuses it, or None: the names of the broker's own logs, a topic that exists, and
        a name that collides with a topic's once '.' and '_' are alike."""
        return creation_refused(name, self.topics, lambda key: self.collision_names.get(key, ()))

    def create_topic(self, name, partitions, configs=None, replication_factor=1, assignments=None):
        """The new Topic, its partitions placed on replication_factor brokers each (or on assignments: a list of
        replica ids per partition); raises ValueError when fewer brokers run (Nodes.place), OSError (or LogError)
        when it cannot be made, leaving nothing of it behind, and
        TopicNameRefused (a LogError) for a name of the broker's own logs or of a topic that exists. Names that
        collide once '.' and '_' are alike are the caller's to refuse (creation_refused): Kafka checks the topics
        of one request against those before it, so two of one request may collide."""
        if name in RESERVED_TOPICS or name in self.topics:
            raise TopicNameRefused(creation_refused(name, self.topics, lambda key: ())[1])
        topic_id = Uuid.random()
        while topic_id in self.by_id:
            topic_id = Uuid.random()
        placed = assignments or self.nodes.place(partitions, replication_factor)
        records = [TopicRecord(name=name, topic_id=topic_id)]
        records += [PartitionRecord(partition_id=i, topic_id=topic_id, replicas=replicas, isr=self._in_sync(replicas),
                                    leader=self._in_sync(replicas)[0], leader_epoch=0, partition_epoch=0)
                    for i, replicas in enumerate(placed)]
        records += [ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=name, name=k, value=v)
                    for k, v in (configs or {}).items()]
        logs = self._make_logs(name, topic_id, range(partitions), {**self.topic_defaults(), **(configs or {})})
        try:
            self._commit(records)
        except BaseException:
            self._unmake(name, logs)
            raise
        topic = self.by_id[topic_id]
        for partition in topic.partitions:
            self.attach_log(partition, logs[partition.index])
        return topic

    def create_partitions(self, topic, count, assignments=None):
        """Grow topic to count partitions, placed as many times as its first partition is (or on assignments);
        raises ValueError when fewer brokers run, OSError (or LogError) when they cannot all be made, leaving the
        topic as it was."""
        start = len(topic.partitions)
        placed = assignments or self.nodes.place(count - start, len(topic.partitions[0].replicas), start)
        logs = self._make_logs(topic.name, topic.topic_id, range(start, count), self.topic_config(topic))
        try:
            self._commit([PartitionRecord(partition_id=i, topic_id=topic.topic_id, replicas=replicas,
                                          isr=self._in_sync(replicas), leader=self._in_sync(replicas)[0],
                                          leader_epoch=0, partition_epoch=0)
                          for i, replicas in zip(range(start, count), placed)])
        except BaseException:
            self._unmake(topic.name, logs)
            raise
        for partition in topic.partitions[start:]:
            self.attach_log(partition, logs[partition.index])

    def _in_sync(self, replicas):
        """The running ones of a new partition's replicas (all of them, placed on running brokers), or [-1]."""
        return [node for node in replicas if self.nodes.is_alive(node)] or [-1]

    def change_partition(self, partition, leader=NO_CHANGE, isr=None, replicas=None):
        """Change a partition's leader, ISR or replicas (state/replicas.py): a PartitionChangeRecord in the metadata
        log (an internal topic's too, though its TopicRecord is not there). True when anything changed."""
        record = change_record(partition, leader, isr, replicas)
        if record is None:
            return False
        self._commit([record])
        return True

    def delete_topic(self, topic):
        """Remove the topic, and rename its directories away, to be deleted after log.segment.delete.delay.ms."""
        self._commit([RemoveTopicRecord(topic_id=topic.topic_id)])
        for partition in topic.partitions:
            self._remove_directory(partition)

    def delete_partitions(self, topic, first, delay_ms, now_ms):
        """Partition deletion: partitions first.. turn ReadOnly now and None after delay_ms (at the next check
        after it), when their data goes."""
        deletion = registry.message_class("DeleteTopicPartitionsRecord")
        partition_record = registry.message_class("PartitionRecord")
        records = [deletion(topic_id=topic.topic_id, delete_partitions=first,
                            delete_partitions_delay_timestamp=now_ms + delay_ms, create_timestamp=now_ms)]
        records += [partition_record(partition_id=p.index, topic_id=topic.topic_id, replicas=p.replicas, isr=p.isr,
                                     leader=p.leader, leader_epoch=p.leader_epoch,
                                     partition_epoch=p.partition_epoch, mode=READ_ONLY)
                    for p in topic.partitions[first:] if p.mode == READ_WRITE]
        self._commit(records)

    def finish_partition_deletions(self, now_ms):
        """Turn the ReadOnly partitions whose delay has passed None, highest first, and rename their directories
        away to be deleted after log.segment.delete.delay.ms; True when any did."""
        partition_record = registry.message_class("PartitionRecord")  # the extension's: ReadOnly came from it
        done = False
        for topic in list(self.topics.values()):
            # From the top down, so that the count shrinks: a partition whose delay is over waits for those
            # above it.
            due = []
            for p in reversed(topic.partitions):
                if p.mode != READ_ONLY or p.delete_at_ms is None or p.delete_at_ms > now_ms:
                    break
                due.append(p)
            if not due:
                continue
            self._commit([partition_record(partition_id=p.index, topic_id=topic.topic_id, replicas=p.replicas,
                                           isr=p.isr, leader=p.leader, leader_epoch=p.leader_epoch,
                                           partition_epoch=p.partition_epoch, mode=NONE_MODE) for p in due])
            for partition in due:
                self._remove_directory(partition)
            log.info("partitions %s of %s deleted", ", ".join(str(p.index) for p in reversed(due)), topic.name)
            done = True
        return done

    def _remove_directory(self, partition):
        if partition.log is not None:
            partition.log.close()
        path = os.path.join(self.log_dir, partition_dir_name(partition.topic.name, partition.index))
        if os.path.isdir(path):
            gone = f"{path}.{_uuid.uuid4().hex}-delete"
            os.rename(path, gone)
            self.pending_deletes.append((clock_ms() + self.config.segment_delete_delay_ms, gone))
        partition.log = None
        partition.error = errors.UNKNOWN_TOPIC_OR_PARTITION

    def set_quotas(self, changes):
        """Client quota changes [(entity [(type, name)], key, value, remove)] into the metadata log."""
        self._commit([ClientQuotaRecord(entity=[ClientQuotaRecord.EntityData(entity_type=t, entity_name=n)
                                                for t, n in entity], key=key, value=value, remove=remove)
                      for entity, key, value, remove in changes])

    def set_features(self, levels):
        """Finalize feature levels, {name: level} (0: the feature is off), in the metadata log."""
        self._commit([FeatureLevelRecord(name=name, feature_level=level) for name, level in levels.items()])

    def add_acls(self, acls):
        """New ACLs into the metadata log; their ids."""
        ids = [Uuid.random() for _ in acls]
        self._commit([AccessControlEntryRecord(id=acl_id, **acl._asdict()) for acl_id, acl in zip(ids, acls)])
        return ids

    def remove_acls(self, ids):
        self._commit([RemoveAccessControlEntryRecord(id=acl_id) for acl_id in ids])

    def set_scram(self, records):
        """UserScramCredentialRecords and RemoveUserScramCredentialRecords, into the metadata log."""
        self._commit(records)

    def set_configs(self, resource_type, resource_name, changes):
        """changes: {name: value or None (back to the default)}; open logs take the new segment settings."""
        self._commit([ConfigRecord(resource_type=resource_type, resource_name=resource_name, name=k, value=v)
                      for k, v in changes.items()])
        for topic in self.topics.values():
            config = self.topic_config(topic)
            for partition in topic.partitions:
                if partition.log is not None:
                    partition.log.segment_bytes = segment_size(config)
                    partition.log.segment_ms = int(config["segment.ms"])
                    partition.log.index_interval = int(config["index.interval.bytes"])

    def allocate_producer_id(self):
        first, end = self.producer_id_block
        if first >= end:
            first = self.next_producer_id
            self._commit([ProducerIdsRecord(broker_id=self.node_id, broker_epoch=0,
                                            next_producer_id=first + PRODUCER_ID_BLOCK)])
            end = first + PRODUCER_ID_BLOCK
        self.producer_id_block = (first + 1, end)
        return first

    def take_due_deletes(self, now=None):
        """The renamed-away directories whose delay is over, no longer pending; remove_directories removes them
        (the server does so on a thread: a large topic's files take the file system a while)."""
        now = clock_ms() if now is None else now
        due = [path for when, path in self.pending_deletes if when <= now]
        self.pending_deletes = [(when, path) for when, path in self.pending_deletes if when > now]
        return due

    # --- lookups

    def dynamic_configs(self, node):
        """The dynamic configs of a broker of the cluster (by its id), without every broker's defaults."""
        return self.broker_configs if node == self.node_id else self.node_configs.get(node, {})

    @property
    def configs(self):
        """This broker's dynamic configs in effect: its own over every broker's defaults."""
        return {**self.default_broker_configs, **self.broker_configs}

    def topic_defaults(self):
        """Topic configs' defaults: the broker's settings, with dynamic broker configs over them."""
        out = topic_defaults(self.config)
        for key, value in self.configs.items():
            setting = SETTINGS.get(key)
            if setting is not None and setting.topic_key:
                out[setting.topic_key] = value
        return out

    def group_setting(self, group_id, name):
        """A group config's value for a group, as its type: the group's own, else the broker's (group_config.py)."""
        return typed(self.group_configs.get(group_id, {}), name, self.config.__getitem__)

    def topic_config(self, topic):
        """The topic's effective configs: its own, else the defaults."""
        effective = self._effective.get(topic)
        if effective is None:
            effective = self._effective[topic] = {**self.topic_defaults(), **topic.configs}
        return dict(effective)

    def derived_config(self, topic, derive):
        """derive(the topic's effective configs), computed again only when a config changes: what each Produce
        reads, parsed once."""
        key = (topic, derive)
        value = self._derived.get(key)
        if value is None:
            value = self._derived[key] = derive(self.topic_config(topic))
        return value

    def close(self):
        for topic in self.topics.values():
            for partition in topic.partitions:
                if partition.log is not None and topic.name not in self.internal_logs:  # the coordinators'
                    partition.log.close()
        with open(self._clean_marker, "w"):
            pass
        self.metadata.close()  # the last: the directory's lock goes with it
