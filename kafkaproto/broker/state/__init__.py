"""Everything the broker knows, split by domain: cluster metadata, partition logs, producers, groups,
transactions.

Handlers read and change it; nothing here touches a socket. Time moves on through ``tick(now)``, which runs
the housekeeping due (the server calls it once a second and does what it returns).
"""

import logging
import re
import time
from typing import NamedTuple

from ... import errors, registry
from ..config import ConfigError
from ..faults import Faults
from ..security import load_credentials
from .cluster import OFFSETS_TOPIC, SHARE_STATE_TOPIC, TRANSACTIONS_TOPIC, Cluster
from .compaction import compact
from .fetch_sessions import FetchSessions
from .groups import GroupCoordinator
from .internal_topics import attach_internal_log, serve_internal
from .log import LogError, OpenFiles, parse_batches
from .producers import PartitionProducers
from .shares import ShareSessions, ShareStates
from .telemetry import ClientTelemetry
from .transactions import (ABORT, COMMIT, COORDINATOR_EPOCH, PartitionTransactions, TransactionCoordinator,
                           control_marker, marker_batch)

logger = logging.getLogger("kafkaproto.broker")  # not "log": that is the submodule
WAKE_ALL, CHANGED = "wake all", "changed"


class Tick(NamedTuple):
    """What a housekeeping tick asks of the server: wake, a set of WAKE_ALL (every waiting request looks again)
    and CHANGED (those waiting on changes do); remove, directories to remove (on a thread: a deleted topic's
    files take the file system a while)."""
    wake: set
    remove: list
LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_LENGTH = 249


def topic_name_error(name):
    """Why name cannot be a topic's (Kafka's rules), or None."""
    if not name:
        return "the topic name is empty"
    if name in (".", ".."):
        return f"{name!r} is not a legal topic name"
    if len(name) > MAX_TOPIC_LENGTH:
        return f"the topic name is {len(name)} characters long; at most {MAX_TOPIC_LENGTH} are allowed"
    if not LEGAL_TOPIC.fullmatch(name):
        return f"{name!r} holds characters other than ASCII letters and digits, '.', '_' and '-'"
    return None


class BrokerState:
    """The cluster (topics, partitions, configs), the partition logs, groups, producers and transactions."""

    def __init__(self, config):
        try:
            registry.load_extensions([n.strip() for n in config["kafkaproto.extensions"].split(",") if n.strip()])
        except (registry.RegistryError, ImportError) as e:
            raise ConfigError(f"kafkaproto.extensions: {e}") from None
        if config["delete.topic.partition.enable"] and "DeletePartitionsRequest" not in registry.classes():
            raise ConfigError("delete.topic.partition.enable=true needs the partition_deletion extension "
                              "(examples/partition-deletion): build it with kafkaproto-codegen extend and load it "
                              "(kafkaproto.extensions=partition_deletion)")
        self.config = config
        self.faults = Faults()  # a test's faults and controls (faults.py), read by dispatch
        self.routed = config["kafkaproto.nodes"] > 1  # several brokers: dispatch routes requests (routing.py)
        self.advertised = []  # Listener objects clients are told about, once bound
        self.advertised_by_node = {}  # node id -> its Listeners, for the cluster's other brokers (state/replicas.py)
        self.on_change = None  # called when waiting requests may be answerable now (the server wakes them)
        # The server, while it serves: the listeners it runs (running) and what applies a change of this broker's
        # dynamic configs once made (reconfigure); see listeners.py
        self.network = None
        self._uncleanable = set()  # partitions whose compaction failed: left as they are until a restart
        # Every log's segment files share one bounded set of open descriptors.
        self.files = OpenFiles(config["kafkaproto.open.segment.files.max"])
        logger.info("segment files kept open: at most %d (kafkaproto.open.segment.files.max)", self.files.limit)
        self.cluster = Cluster(config, self.files)
        self.credentials = load_credentials(config)  # from configuration; the metadata log's SCRAM ones win
        self.credentials.scram.update(self.cluster.scram)
        self.cluster.scram = self.credentials.scram
        self.groups = GroupCoordinator(config, self.cluster, config.log_dir, self.files)
        self.fetch_sessions = FetchSessions(config["max.incremental.fetch.session.cache.slots"])
        self.shares = self.groups.share_states = ShareStates(
            config.log_dir, self.files, config["share.coordinator.snapshot.update.records.per.snapshot"],
            config["share.coordinator.state.topic.num.partitions"])
        self.share_sessions = ShareSessions(lambda: config["group.share.max.share.sessions"])
        self.telemetry = ClientTelemetry(self.cluster, lambda: config["telemetry.max.bytes"],
                                         lambda: config["kafkaproto.client.telemetry.enable"])
        self.transactions = TransactionCoordinator(config, config.log_dir, self.files, markers=self._write_markers,
                                                   commit_offsets=self._commit_transaction_offsets,
                                                   allocate_producer_id=self.cluster.allocate_producer_id)
        for topic in self.cluster.topics.values():
            for partition in topic.partitions:
                if partition.log is not None:
                    self._replay(partition)
        self.cluster.on_partition_log = self._log_opened
        self.groups.offsets.on_append = self._offsets_appended
        attach_internal_log(self.cluster, OFFSETS_TOPIC, self.groups.offsets.logs)
        attach_internal_log(self.cluster, TRANSACTIONS_TOPIC, self.transactions.logs)
        attach_internal_log(self.cluster, SHARE_STATE_TOPIC, self.shares.logs)
        self.shares.on_append = self._share_states_appended
        self.transactions.on_append = self._transactions_appended
        self.transactions.finish_interrupted()
        self._steps = self._housekeeping_steps()
        self._due = {}  # housekeeping step -> when it is due next (state/clock.py)

    def _log_opened(self, partition):
        partition.producers = PartitionProducers()
        partition.transactions = PartitionTransactions()

    def _offsets_appended(self, index, batches):
        """The group coordinator wrote to its log: __consumer_offsets exists from its first record on (in Kafka
        it exists before any), and the fetches waiting on it wake."""
        partition = serve_internal(self.cluster, OFFSETS_TOPIC).partitions[index]
        for batch in batches:
            partition.producers.appended(batch, -1)
            partition.transactions.observe(batch, None)

    def _transactions_appended(self, index, batches):
        """The transaction coordinator wrote to its log: __transaction_state exists from its first record on, as
        __consumer_offsets does (_offsets_appended)."""
        partition = serve_internal(self.cluster, TRANSACTIONS_TOPIC).partitions[index]
        for batch in batches:
            partition.producers.appended(batch, -1)

    def _share_states_appended(self, index, batches):
        """The share coordinator wrote to its log: __share_group_state exists from its first record on."""
        partition = serve_internal(self.cluster, SHARE_STATE_TOPIC).partitions[index]
        for batch in batches:
            partition.producers.appended(batch, -1)

    def _replay(self, partition):
        """Producer state and transactions of a partition, from its batch headers (and control records)."""
        producers = partition.producers = PartitionProducers()
        txns = partition.transactions = PartitionTransactions()
        for segment in partition.log.segments:
            for batch in segment.batches():
                marker = control_marker(segment.read(batch.position, batch.size)) if batch.is_control else None
                producers.appended(batch, -1 if marker is None else marker.coordinator_epoch)
                txns.observe(batch, None if marker is None else int(marker.type))

    @property
    def node_id(self):
        return self.cluster.node_id

    @property
    def endpoint(self):
        """(host, port) clients are told to use (the first listener's)."""
        return self.endpoint_for(None)

    def endpoint_for(self, listener_name, node=None):
        """(host, port) advertised for a listener of node (this broker by default): clients are told about the
        listener they came in on."""
        advertised = self.advertised if node is None or node == self.node_id else self.advertised_by_node[node]
        for listener in advertised:
            if listener.name == listener_name:
                return listener.host, listener.port
        listener = advertised[0]
        return listener.host, listener.port

    def brokers(self, listener_name):
        """[(node id, host, port)] of the running brokers on a listener, as Metadata lists them."""
        return [(node, *self.endpoint_for(listener_name, node)) for node in self.cluster.nodes.alive
                if node == self.node_id or node in self.advertised_by_node]

    def now_ms(self):
        return int(time.time() * 1000)

    def topic(self, name=None, topic_id=None):
        """(Topic or None, error): by id when one is given (UNKNOWN_TOPIC_ID), else by name."""
        if topic_id is not None and topic_id.int:
            topic = self.cluster.by_id.get(topic_id)
            if topic is None or (name and topic.name != name):
                return None, errors.UNKNOWN_TOPIC_ID
            return topic, errors.NONE
        topic = self.cluster.topics.get(name) if name is not None else None
        return topic, (errors.NONE if topic is not None else errors.UNKNOWN_TOPIC_OR_PARTITION)

    def partition(self, topic, index):
        """(Partition or None, error) of a partition to read or write."""
        if topic is None or not 0 <= index < len(topic.partitions):
            return None, errors.UNKNOWN_TOPIC_OR_PARTITION
        partition = topic.partitions[index]
        if partition.error is not errors.NONE:
            return None, partition.error
        return partition, errors.NONE

    def auto_create(self, names):
        """Create the unknown topics a request asked for, when auto.create.topics.enable allows; {name: Topic} of
        those made. The names are checked together against the topics there were before, as Kafka's controller
        checks a request's: names of the broker's own logs, and names that collide with an existing topic's once
        '.' and '_' are alike, are not made (Kafka's Metadata answers those UNKNOWN_TOPIC_OR_PARTITION)."""
        if not self.config["auto.create.topics.enable"]:
            return {}
        names = [n for n in dict.fromkeys(names) if not topic_name_error(n) and not self.cluster.creation_refused(n)]
        made = {}
        for name in names:
            try:
                made[name] = self.cluster.create_topic(name, self.config["num.partitions"])
            except (OSError, LogError) as e:
                logger.error("topic %s not created on first use: %s", name, e)
        return made

    def append(self, partition, data, batches, marker=None, coordinator_epoch=-1):
        """Append batches that passed the checks (marker: COMMIT or ABORT for a control batch, written by the
        transaction coordinator at coordinator_epoch); the first offset."""
        offset = partition.log.append(data, batches, partition.leader_epoch)
        producers, txns = partition.producers, partition.transactions
        for batch in batches:
            producers.appended(batch, coordinator_epoch)
            txns.observe(batch, marker)
        self.changed()
        return offset

    def delete_records(self, partition, offset):
        """DeleteRecords on one partition: its log starts at offset from now on; the new log start offset. The
        requests waiting on the broker look again (a fetch below the start is now out of range)."""
        start = partition.log.delete_records_before(offset)
        self.changed()
        return start

    def last_stable_offset(self, partition):
        return partition.transactions.last_stable_offset(partition.log.log_end_offset)

    def _write_markers(self, txn, commit):
        """A transaction's end: a commit or abort marker at its epoch in each of its partitions."""
        for name, index in sorted(txn.partitions):
            partition, _ = self.partition(self.cluster.topics.get(name), index)
            if partition is None:
                continue  # deleted meanwhile
            self.write_marker(partition, txn.producer_id, txn.epoch, commit)

    def write_marker(self, partition, producer_id, epoch, commit, coordinator_epoch=COORDINATOR_EPOCH):
        """Append a transaction's commit or abort marker to a partition."""
        data = marker_batch(producer_id, epoch, commit, coordinator_epoch)
        self.append(partition, data, parse_batches(data), marker=COMMIT if commit else ABORT,
                    coordinator_epoch=coordinator_epoch)

    def _commit_transaction_offsets(self, group_id, offsets):
        self.groups.commit(group_id, [(key, (*value, self.now_ms())) for key, value in offsets.items()])

    def enforce_retention(self, now_ms=None):
        """Delete whole old segments past retention.ms or beyond retention.bytes (never the active one), as
        Kafka's delete cleanup policy does; the number of segments deleted."""
        now_ms = self.now_ms() if now_ms is None else now_ms
        deleted = 0
        for topic in self.cluster.topics.values():
            config = self.cluster.topic_config(topic)
            if "delete" not in config["cleanup.policy"] or topic.is_internal:  # the coordinator's log keeps all
                continue
            retention_ms, retention_bytes = int(config["retention.ms"]), int(config["retention.bytes"])
            for partition in topic.partitions:
                plog = partition.log
                if plog is None or len(plog.segments) < 2:
                    continue
                keep = 0
                size = plog.size_bytes
                for segment in plog.segments[:-1]:
                    too_old = retention_ms >= 0 and (segment.size == 0  # emptied by compaction
                                                     or 0 <= segment.max_timestamp < now_ms - retention_ms)
                    too_big = retention_bytes >= 0 and size - segment.size >= retention_bytes
                    if not (too_old or too_big):
                        break
                    size -= segment.size
                    keep += 1
                if keep:
                    plog.delete_segments_before(keep)
                    deleted += keep
        return deleted

    def compact(self, now_ms=None):
        """Compact the closed segments of topics with cleanup.policy=compact, each partition on its own; the
        records removed. A partition whose compaction fails (a batch that cannot be read, say) is logged with the
        cause once and left as it is until a restart, as Kafka's log cleaner marks a partition uncleanable; the
        others are compacted all the same."""
        now_ms = self.now_ms() if now_ms is None else now_ms
        removed = 0
        for topic in list(self.cluster.topics.values()):
            config = self.cluster.topic_config(topic)
            # __consumer_offsets is not compacted here: its groups' members are listed again in the order their
            # records first come, which compaction would lose (nor is __transaction_state, read whole at start)
            if "compact" not in config["cleanup.policy"] or topic.is_internal:
                continue
            for partition in topic.partitions:
                if partition.log is None or partition in self._uncleanable:
                    continue
                try:
                    removed += compact(partition.log, now_ms, int(config["delete.retention.ms"]))
                except Exception as e:
                    self._uncleanable.add(partition)
                    logger.error("compaction of %s-%d failed (%s: %s); the partition is left uncompacted until "
                                 "the broker restarts, and the others are compacted", topic.name, partition.index,
                                 type(e).__name__, e, exc_info=True)
        return removed

    # ---- housekeeping ----------------------------------------------------------------------------------------

    def _housekeeping_steps(self):
        """(what it does, how often in ms or None for every tick, the step, what its truthy result asks) in
        order: WAKE_ALL when every waiting request must look again (log starts moved), CHANGED when those that
        wait on changes may be answerable."""
        config = self.config
        return (
            # retention, offsets and deletions count in wall-clock time, as the records' timestamps do
            ("retention", lambda: config["log.retention.check.interval.ms"], lambda now: self.enforce_retention(),
             WAKE_ALL),
            ("expiring committed offsets", lambda: config["offsets.retention.check.interval.ms"],
             lambda now: self.groups.expire_offsets(self.now_ms(), config["offsets.retention.minutes"] * 60000),
             None),
            ("deleting partitions", lambda: config["delete.topic.partition.check.interval.ms"],
             lambda now: config["delete.topic.partition.enable"] and
             self.cluster.finish_partition_deletions(self.now_ms()), WAKE_ALL),
            ("compaction", lambda: config["log.cleaner.backoff.ms"], lambda now: self.compact(), None),
            ("group timers", None, self.groups.tick, CHANGED),
            ("transaction timeouts", None, self.transactions.expire, CHANGED),
            ("share record locks", None, lambda now: self.shares.expire_locks(now, self.delivery_limit), CHANGED),
            # telemetry instances count in wall-clock time, as Kafka's do
            ("forgetting client telemetry instances", lambda: 1000, lambda now: self.telemetry.expire(self.now_ms()),
             None),
        )

    def tick(self, now):
        """Run the housekeeping due by now (state/clock.py), each step at its own interval: retention, offsets'
        expiry, partition deletions, compaction, group timers and transaction timeouts. A step that fails is
        logged with its traceback and tried again at its next turn; the steps after it run all the same.
        Returns a Tick: what the server must do (wake waiting requests, remove directories on a thread)."""
        done = Tick(set(), self.cluster.take_due_deletes(now))
        for name, every, step, asks in self._steps:
            if every is not None:
                if now < self._due.get(name, now):
                    continue
                try:
                    self._due[name] = now + every()
                except Exception:  # a setting that cannot be read: the step runs at every tick
                    logger.exception("housekeeping: when %s is due cannot be told", name)
            try:
                if step(now) and asks is not None:
                    done.wake.add(asks)
            except Exception as e:
                logger.error("housekeeping: %s failed (%s: %s); the other steps go on, and this one is tried "
                             "again at its next turn", name, type(e).__name__, e, exc_info=True)
        return done

    def delivery_limit(self, group_id):
        """How often a share group delivers a record before archiving it."""
        return self.cluster.group_setting(group_id, "share.delivery.count.limit")

    def release_share_session(self, session):
        """A share session ended (closed, replaced or its connection gone): what its member holds goes back."""
        if self.shares.release(session.group_id, session.member_id, list(session.partitions), self.delivery_limit):
            self.changed()

    def connection_closed(self, connection):
        """A client's connection closed: the share sessions it opened end, and the client telemetry instance made
        on it is forgotten, as Kafka's are."""
        self.telemetry.connection_closed(connection)
        for session in self.share_sessions.of_connection(connection):
            self.share_sessions.close(session)
            self.release_share_session(session)

    def changed(self):
        if self.on_change is not None:
            self.on_change()

    def delete_topic(self, topic):
        self.cluster.delete_topic(topic)
        self.groups.forget_topic(topic.name, topic.topic_id)
        self.shares.forget_topic(topic.topic_id)

    def close(self):
        self.transactions.close()
        self.groups.close()
        self.shares.close()
        self.cluster.close()
        self.files.close_all()
