"""Transactions: the coordinator (TransactionCoordinator, one method per transaction API), its state per
transactional id, and each partition's open and aborted transactions.

The coordinator keeps, per transactional id, the producer id and epoch, the
partitions and groups the transaction has touched, and the offsets it will
commit; every change is a record in its own log (``__transaction_state-0``, in
Kafka's record format: a TransactionLogKey and a TransactionLogValue at the
version Kafka writes with transactions version 2 finalized, see
kafkaproto.coordinator_records), replayed at start-up. Kafka keeps a
transaction's pending offsets in the groups' log; here they ride in one more
tagged field of the value (PendingOffsets) that Kafka's readers skip. A log
written before in JSON loads and is written again once in Kafka's format. Ending
a transaction first records PrepareCommit or PrepareAbort, then writes a
commit or abort marker (a control batch) to each partition, then records the
end, so a restart finishes what a crash interrupted, in the same direction;
a transaction still open at a restart is aborted. Under transactions version 2
(KIP-890, EndTxn v5) every end bumps the epoch first: the markers carry the
new epoch, and past MAX_EPOCH the producer continues under a new id at 0.

Each partition tracks the first offset of every open transaction (the last
stable offset is the smallest of them) and the aborted transactions that
read_committed fetches must be told about.
"""

import json
import logging
import time

from ... import errors
from ...coordinator_records import (TransactionLogValue, decode_transaction_key, decode_transaction_value,
                                    encode_transaction_key, encode_transaction_value)
from ...exceptions import DecodeError
from ...records import RecordBatchBuilder, iter_batches
from .clock import clock_ms
from .coordinator_logs import TRANSACTIONS_TOPIC, CoordinatorLogs
from .log import CONTROL, TRANSACTIONAL, parse_batches

log = logging.getLogger("kafkaproto.broker")
EMPTY, ONGOING = "Empty", "Ongoing"
MAX_EPOCH = 32766  # the last epoch a producer id is used with; then it gets a new id
PREPARE_COMMIT, PREPARE_ABORT = "PrepareCommit", "PrepareAbort"
COMPLETE_COMMIT, COMPLETE_ABORT = "CompleteCommit", "CompleteAbort"
# Every state Kafka's coordinator names (ListTransactions filters on them); the last two are never reached here:
# this broker keeps every transactional id, and a timed-out transaction is aborted without fencing first.
STATES = (EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT, "Dead",
          "PrepareEpochFence")
# Kafka's TransactionState ids, the TransactionStatus of the log's values.
STATE_IDS = {name: code for code, name in enumerate(STATES)}
STATE_DIR = "__transaction_state-0"  # the one partition of a single broker's (transaction.state.log.num.partitions)
# The partition of __consumer_offsets (it has one) that Kafka lists among a transaction's partitions once a group
# has joined it.
OFFSETS_PARTITION = ("__consumer_offsets", 0)
ABORT, COMMIT = 0, 1  # control record types
# The epoch of this broker's transaction coordinator, written in its markers: its one partition of
# __transaction_state never changes leader, so it stays at the first, as on a one-node Kafka.
COORDINATOR_EPOCH = 0
# The first versions of each request under transactions version 2 (KIP-890): a partition joins the
# transaction with its first Produce, a group with its first TxnOffsetCommit, and EndTxn bumps the epoch.
IMPLICIT_ADD_PARTITIONS, IMPLICIT_ADD_OFFSETS, END_BUMPS_EPOCH = 12, 5, 5


class PartitionTransactions:
    """Open transactions (producer id -> first offset) and aborted ones [(producer id, first, last offset)]."""

    __slots__ = ("open", "aborted")

    def __init__(self):
        self.open = {}
        self.aborted = []

    def observe(self, batch, marker=None):
        """Account for a batch appended (or read back); marker is COMMIT or ABORT for control batches."""
        attributes = batch.attributes
        if not attributes & (TRANSACTIONAL | CONTROL):
            return
        if attributes & CONTROL:
            first = self.open.pop(batch.producer_id, None)
            if marker == ABORT and first is not None:
                self.aborted.append((batch.producer_id, first, batch.last_offset))
        else:
            self.open.setdefault(batch.producer_id, batch.base_offset)

    def last_stable_offset(self, high_watermark):
        return min(self.open.values(), default=high_watermark)

    def aborted_between(self, start, end):
        """(producer id, first offset) of aborted transactions overlapping offsets [start, end)."""
        return [(pid, first) for pid, first, last in self.aborted if last >= start and first < end]


def control_marker(data):
    """The ControlMarker (type COMMIT or ABORT, coordinator epoch) of a control batch's bytes, as records reads
    its first record, or None."""
    for batch in iter_batches(data):
        return batch.control_marker
    return None


def marker_batch(producer_id, epoch, commit, coordinator_epoch=COORDINATOR_EPOCH):
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=epoch, transactional=True, control=True)
    builder.append_end_txn_marker(commit, coordinator_epoch=coordinator_epoch)
    return builder.build()


class Transaction:
    __slots__ = ("transactional_id", "producer_id", "epoch", "timeout_ms", "state", "partitions", "groups",
                 "offsets", "started", "start_time_ms", "last_producer", "client_version")

    def __init__(self, transactional_id, producer_id, epoch, timeout_ms):
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.epoch = epoch
        self.timeout_ms = timeout_ms
        self.state = EMPTY
        self.partitions = set()  # (topic, partition)
        self.groups = set()
        self.offsets = {}  # group -> {(topic, partition): (offset, leader epoch, metadata)}
        self.started = 0.0  # when it began (state/clock.py): its timeout counts from then
        # when it began in wall-clock ms, -1 before the first (DescribeTransactions, ListTransactions' duration)
        self.start_time_ms = -1
        # (producer id, epoch) before the last bump at an end (transactions version 2): an EndTxn retried with it
        # is answered as the first one was
        self.last_producer = None
        # the transactions version the producer's requests speak (0, or 2 from EndTxn v5, AddPartitionsToTxn v4,
        # Produce v12 and TxnOffsetCommit v5), recorded in the log as Kafka records it
        self.client_version = 0

    def begin(self, now):
        """Ongoing from now, unless it is already: its timeout counts from the first partition or group it
        took."""
        if self.state != ONGOING:
            self.state = ONGOING
            self.started = now
            self.start_time_ms = int(time.time() * 1000)

    def timed_out(self, now):
        return self.state == ONGOING and now - self.started > self.timeout_ms

    def log_value(self, now_ms):
        """The TransactionLogValue Kafka writes for this state (partitions null when Empty, by topic otherwise;
        __consumer_offsets' partition among them once a group has joined), plus this broker's pending offsets."""
        partitions = None
        if self.state != EMPTY:
            by_topic = {}
            for topic, index in sorted(self.partitions | ({OFFSETS_PARTITION} if self.groups else set())):
                by_topic.setdefault(topic, []).append(index)
            partitions = [TransactionLogValue.PartitionsSchema(topic=t, partition_ids=ids)
                          for t, ids in by_topic.items()]
        # Kafka records the producer id itself here, and the one before once an end moved on to a new id
        previous = self.last_producer[0] if self.last_producer else self.producer_id
        pending = [TransactionLogValue.PendingGroup(group_id=group, offsets=[
            TransactionLogValue.PendingOffset(topic=t, partition=p, offset=o, leader_epoch=e, metadata=m)
            for (t, p), (o, e, m) in sorted(self.offsets.get(group, {}).items())]) for group in sorted(self.groups)]
        return TransactionLogValue(
            producer_id=self.producer_id, previous_producer_id=previous, producer_epoch=self.epoch,
            transaction_timeout_ms=self.timeout_ms, transaction_status=STATE_IDS[self.state],
            transaction_partitions=partitions, transaction_last_update_timestamp_ms=now_ms,
            transaction_start_timestamp_ms=self.start_time_ms, client_transaction_version=self.client_version,
            pending_offsets=pending)

    @classmethod
    def from_log_value(cls, transactional_id, value):
        if not 0 <= value.transaction_status < len(STATES):
            raise ValueError(f"unknown transaction state {value.transaction_status}")
        txn = cls(transactional_id, value.producer_id, value.producer_epoch, value.transaction_timeout_ms)
        txn.state = STATES[value.transaction_status]
        txn.partitions = {(p.topic, index) for p in value.transaction_partitions or ()
                          for index in p.partition_ids} - {OFFSETS_PARTITION}
        txn.groups = {g.group_id for g in value.pending_offsets}
        txn.offsets = {g.group_id: {(o.topic, o.partition): (o.offset, o.leader_epoch, o.metadata)
                                    for o in g.offsets} for g in value.pending_offsets if g.offsets}
        txn.started = clock_ms()  # a transaction loaded at start-up has its whole timeout again
        txn.start_time_ms = value.transaction_start_timestamp_ms
        txn.client_version = value.client_transaction_version
        # Under transactions version 2 an end bumped the epoch (past MAX_EPOCH onto a new producer id): the
        # producer it bumped from is what a retried EndTxn carries.
        if txn.client_version >= 2 and txn.state not in (EMPTY, ONGOING):
            if value.previous_producer_id not in (-1, txn.producer_id):
                txn.last_producer = (value.previous_producer_id, MAX_EPOCH)
            elif txn.epoch > 0:
                txn.last_producer = (txn.producer_id, txn.epoch - 1)
        return txn

    @classmethod
    def from_json(cls, transactional_id, value):
        """A transaction as this broker's logs held it in JSON before they were in Kafka's format."""
        txn = cls(transactional_id, value["pid"], value["epoch"], value["timeout"])
        txn.state = value["state"]
        if txn.state not in STATE_IDS:
            raise ValueError(f"unknown transaction state {txn.state!r}")
        txn.partitions = {tuple(p) for p in value["partitions"]}
        txn.groups = set(value["groups"])
        txn.offsets = {g: {(t, p): tuple(v) for t, p, *v in rows} for g, rows in value["offsets"].items()}
        txn.started = clock_ms()  # a transaction loaded at start-up has its whole timeout again
        last = value.get("last")
        txn.last_producer = tuple(last) if last else None
        txn.client_version = 2 if last else 0
        txn.start_time_ms = value.get("start", -1)
        return txn


def _is_json(key, value):
    """Whether a record is in the JSON layout of before: its key the bare transactional id and its value a JSON
    object, where Kafka's keys start with their int16 record type (0)."""
    if value is not None:
        return bytes(value[:1]) == b"{"
    return bytes(key[:2]) != b"\x00\x00"


def fenced(version, since):
    """PRODUCER_FENCED for request versions that know it (KIP-588), INVALID_PRODUCER_EPOCH before."""
    return errors.PRODUCER_FENCED if version >= since else errors.INVALID_PRODUCER_EPOCH


class TransactionCoordinator:
    """Every transactional id's transaction, kept in its own log and replayed at start-up; one method per
    transaction API, answering with Kafka's errors. Handlers read a request's fields, call one method and build
    the answer.

    What ending a transaction writes elsewhere goes through the broker's state, given at construction:
    markers(txn, commit) appends a marker to each of the transaction's partitions, commit_offsets(group id,
    offsets) applies the offsets it commits, and allocate_producer_id() gives an id never given before."""

    def __init__(self, config, log_dir, files, *, markers, commit_offsets, allocate_producer_id):
        self.config = config
        self.by_id = {}
        self._markers, self._commit_offsets = markers, commit_offsets
        self._allocate_producer_id = allocate_producer_id
        # called with (partition index, the batches of each record written to it): the broker serves the logs
        self.on_append = None
        # each transactional id's records in the partition Kafka's hashing picks (coordinator_logs.py)
        self.logs = CoordinatorLogs(log_dir, TRANSACTIONS_TOPIC, config["transaction.state.log.num.partitions"],
                                    files)
        in_json = set()  # transactional ids whose latest record is in the older JSON layout
        segments = [(partition_log.directory, segment) for partition_log in self.logs
                    for segment in partition_log.segments]
        for directory, segment in segments:
            for batch in iter_batches(segment.read(0, segment.size)):
                for record in batch:
                    try:
                        if _is_json(record.key, record.value):
                            tid = bytes(record.key).decode()
                            in_json.add(tid)
                            txn = None if record.value is None else Transaction.from_json(
                                tid, json.loads(bytes(record.value)))
                        else:
                            tid = decode_transaction_key(record.key)
                            in_json.discard(tid)
                            txn = None if record.value is None else Transaction.from_log_value(
                                tid, decode_transaction_value(record.value)[0])
                        if txn is None:
                            self.by_id.pop(tid, None)
                        else:
                            self.by_id[tid] = txn
                    except (DecodeError, AttributeError, TypeError, ValueError, KeyError, IndexError) as e:
                        log.error("%s: the record at offset %d is not a transaction's state (%s); skipped",
                                  directory, record.offset, e)
        for tid in sorted(in_json & self.by_id.keys()):  # written again in Kafka's format, which wins from here on
            self.save(self.by_id[tid])

    def finish_interrupted(self):
        """End what a crash left half done, in the direction it was going: a transaction that was preparing to
        commit commits; one open or preparing to abort aborts. Called once the partitions' logs are open."""
        for txn in list(self.by_id.values()):
            if txn.state in (ONGOING, PREPARE_ABORT, PREPARE_COMMIT):
                self.end_transaction(txn, commit=txn.state == PREPARE_COMMIT)

    def save(self, txn):
        now_ms = int(time.time() * 1000)
        builder = RecordBatchBuilder()
        builder.append(encode_transaction_key(txn.transactional_id),
                       encode_transaction_value(txn.log_value(now_ms)), timestamp=now_ms)
        data = builder.build()
        batches = parse_batches(data)
        index = self.logs.index_of(txn.transactional_id)
        self.logs.logs[index].append(data, batches)
        if self.on_append is not None:
            self.on_append(index, batches)

    # ---- the requests ------------------------------------------------------------------------------------------

    def current(self, transactional_id, producer_id, epoch, version, fenced_since):
        """(Transaction, NONE) for a request from the transactional id's current producer, else (None, error);
        fenced_since: the first version of the request that knows PRODUCER_FENCED."""
        txn = self.by_id.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return None, errors.INVALID_PRODUCER_ID_MAPPING
        if epoch != txn.epoch:
            return None, fenced(version, fenced_since)
        return txn, errors.NONE

    def init_producer_id(self, transactional_id, timeout_ms, producer_id, epoch, version):
        """InitProducerId with a transactional id: (error, producer id, epoch). The first call gets a new id;
        each later one ends what the previous instance left open and bumps the epoch, fencing that instance;
        past MAX_EPOCH a new id starts at epoch 0, as in Kafka."""
        if not 0 < timeout_ms <= self.config["transaction.max.timeout.ms"]:
            return errors.INVALID_TRANSACTION_TIMEOUT, -1, -1
        txn = self.by_id.get(transactional_id)
        if txn is None:
            txn = self.by_id[transactional_id] = Transaction(transactional_id, self._allocate_producer_id(), 0,
                                                             timeout_ms)
        else:
            if producer_id >= 0 and (producer_id, epoch) != (txn.producer_id, txn.epoch):
                return fenced(version, 4), -1, -1
            if txn.state in (ONGOING, PREPARE_ABORT, PREPARE_COMMIT):
                self.end_transaction(txn, commit=txn.state == PREPARE_COMMIT)
            if txn.epoch >= MAX_EPOCH:
                txn.producer_id, txn.epoch = self._allocate_producer_id(), 0
            else:
                txn.epoch += 1
            txn.timeout_ms = timeout_ms
            txn.start_time_ms = -1  # a new producer session begins with no transaction, as Kafka's Empty
        self.save(txn)
        return errors.NONE, txn.producer_id, txn.epoch

    def add_partitions(self, now, transactional_id, producer_id, epoch, version, wanted, missing,
                       verify_only=False):
        """AddPartitionsToTxn of wanted [(topic, partition)], of which missing do not exist: (error,
        {(topic, partition): error}). A partition that does not exist fails the whole request: it gets
        UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, as in Kafka. verify_only checks
        that the partitions already belong to the open transaction."""
        txn, error = self.current(transactional_id, producer_id, epoch, version, fenced_since=2)
        if txn is not None and txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
            error = errors.CONCURRENT_TRANSACTIONS
        if error is not errors.NONE:
            return error, {key: error for key in wanted}
        if verify_only:
            ok = txn.state == ONGOING
            return errors.NONE, {key: errors.NONE if ok and key in txn.partitions else errors.INVALID_TXN_STATE
                                 for key in wanted}
        if missing:
            return errors.NONE, {key: errors.UNKNOWN_TOPIC_OR_PARTITION if key in missing
                                 else errors.OPERATION_NOT_ATTEMPTED for key in wanted}
        client_version = 2 if version > 3 else 0  # as Kafka reads the client's transactions version off it
        if txn.state != ONGOING or not txn.partitions.issuperset(wanted) or txn.client_version != client_version:
            txn.begin(now)
            txn.partitions.update(wanted)
            txn.client_version = client_version
            self.save(txn)
        return errors.NONE, {key: errors.NONE for key in wanted}

    def add_offsets(self, now, transactional_id, producer_id, epoch, version, group_id):
        """AddOffsetsToTxn: the transaction will commit offsets for group_id."""
        txn, error = self.current(transactional_id, producer_id, epoch, version, fenced_since=2)
        if txn is not None and txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
            error = errors.CONCURRENT_TRANSACTIONS
        elif txn is not None and not group_id:
            error = errors.INVALID_GROUP_ID
        if error is errors.NONE:
            txn.begin(now)
            txn.groups.add(group_id)
            txn.client_version = 0  # Kafka's AddOffsetsToTxn always speaks for a transactions version 0 client
            self.save(txn)
        return error

    def offsets_error(self, transactional_id, producer_id, epoch, version, group_id):
        """TxnOffsetCommit: (the transaction, NONE), or (None or it, the error for all its partitions). Up to v4
        the group must have been added with AddOffsetsToTxn; from v5 it joins here (add_offsets_committed)."""
        txn, error = self.current(transactional_id, producer_id, epoch, version, fenced_since=3)
        if txn is not None and version >= IMPLICIT_ADD_OFFSETS and txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
            error = errors.CONCURRENT_TRANSACTIONS
        elif txn is not None and version < IMPLICIT_ADD_OFFSETS and (txn.state != ONGOING
                                                                    or group_id not in txn.groups):
            error = errors.INVALID_TXN_STATE
        return txn, error

    def add_offsets_committed(self, now, txn, group_id, pending):
        """The offsets a TxnOffsetCommit carries, {(topic, partition): (offset, leader epoch, metadata)},
        applied when the transaction commits."""
        if group_id not in txn.groups:  # v5: the group joins the transaction here, as a version 2 client's
            txn.client_version = 2
        txn.begin(now)
        txn.groups.add(group_id)
        txn.offsets.setdefault(group_id, {}).update(pending)
        self.save(txn)

    def produce_error(self, now, transactional_id, topic, index, batches, version):
        """Transactional batches must come from the transaction's producer at its epoch. From Produce v12
        (transactions version 2) the partition joins the transaction here, as Kafka's broker adds it with the
        coordinator; before, it must have been added with AddPartitionsToTxn (TRANSACTION_ABORTABLE at v11,
        INVALID_TXN_STATE before)."""
        txn = self.by_id.get(transactional_id) if transactional_id is not None else None
        for batch in batches:
            if txn is None or not batch.is_transactional or batch.producer_id != txn.producer_id:
                return errors.INVALID_TXN_STATE if txn is not None else errors.INVALID_PRODUCER_ID_MAPPING
            if batch.producer_epoch != txn.epoch and (batch.producer_epoch < txn.epoch
                                                      or version >= IMPLICIT_ADD_PARTITIONS):
                return errors.INVALID_PRODUCER_EPOCH
        if (topic, index) in txn.partitions and txn.state == ONGOING:
            return errors.NONE
        if version < IMPLICIT_ADD_PARTITIONS:
            return errors.TRANSACTION_ABORTABLE if version == IMPLICIT_ADD_PARTITIONS - 1 else errors.INVALID_TXN_STATE
        if txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return errors.CONCURRENT_TRANSACTIONS
        txn.begin(now)
        txn.partitions.add((topic, index))
        txn.client_version = 2  # the partition joins as Kafka's broker adds it: at a version 2 client's
        self.save(txn)
        return errors.NONE

    def end(self, transactional_id, producer_id, epoch, commit, version):
        """EndTxn: (error, the transaction whose producer id and epoch the answer carries, or None).

        Up to v4 (transactions version 1) the request must carry the producer's current epoch; repeating the
        same end (a retry) succeeds, the other end is INVALID_TXN_STATE. v5 (transactions version 2, KIP-890)
        bumps the epoch at every end, commit or abort, and answers with the producer id and epoch to go on with.
        A retry (the epoch before the bump, after the end went through) gets the same answer again; an abort
        with nothing in the transaction still bumps the epoch; anything else from another epoch is
        PRODUCER_FENCED. This follows Kafka 4.3's coordinator."""
        if version < END_BUMPS_EPOCH:
            txn, error = self.current(transactional_id, producer_id, epoch, version, fenced_since=2)
            if txn is not None:
                if txn.state == ONGOING:
                    txn.client_version = 0
                    self.end_transaction(txn, commit)
                elif txn.state != (COMPLETE_COMMIT if commit else COMPLETE_ABORT):
                    error = errors.INVALID_TXN_STATE
            return error, None
        txn = self.by_id.get(transactional_id)
        producer = (producer_id, epoch)
        if txn is None or producer_id not in (txn.producer_id, (txn.last_producer or (None,))[0]):
            return errors.INVALID_PRODUCER_ID_MAPPING, None
        current = producer == (txn.producer_id, txn.epoch)
        retry = producer == txn.last_producer
        if txn.state == ONGOING:
            if not current:
                return errors.PRODUCER_FENCED, None
            txn.client_version = 2
            self.end_transaction(txn, commit, bump=True)
            return errors.NONE, txn
        if txn.state in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT) and (current or retry and txn.state != EMPTY):
            if current and not commit:  # an abort with nothing to abort: the epoch still goes up
                txn.client_version = 2
                self.end_transaction(txn, False, bump=True)
                return errors.NONE, txn
            if retry and txn.state == (COMPLETE_COMMIT if commit else COMPLETE_ABORT):
                return errors.NONE, txn
            return errors.INVALID_TXN_STATE, None
        return errors.PRODUCER_FENCED, None

    # ---- ending --------------------------------------------------------------------------------------------

    def end_transaction(self, txn, commit, bump=False):
        """Record the prepare, write the markers, commit the offsets (or not), and record the end. bump
        (transactions version 2): the epoch goes up by one first and the markers carry the new one; past
        MAX_EPOCH the producer then gets a new id at epoch 0, as in Kafka."""
        if bump:
            txn.last_producer = (txn.producer_id, txn.epoch)
            txn.epoch += 1
        txn.state = PREPARE_COMMIT if commit else PREPARE_ABORT
        self.save(txn)
        self._markers(txn, commit)
        if commit:
            for group_id, offsets in txn.offsets.items():
                self._commit_offsets(group_id, offsets)
        if txn.epoch > MAX_EPOCH:
            txn.producer_id, txn.epoch = self._allocate_producer_id(), 0
        txn.state = COMPLETE_COMMIT if commit else COMPLETE_ABORT
        txn.partitions, txn.groups, txn.offsets = set(), set(), {}
        self.save(txn)

    def expire(self, now):
        """Abort transactions open longer than their timeout; True when any was. The producer is fenced, as
        Kafka fences a timed-out one: one bump, the markers at the new epoch (what transactions version 2, the
        version this broker finalizes, does for an abort it starts itself)."""
        expired = [t for t in self.by_id.values() if t.timed_out(now)]
        for txn in expired:
            self.end_transaction(txn, commit=False, bump=True)
        return bool(expired)

    def close(self):
        self.logs.close()
