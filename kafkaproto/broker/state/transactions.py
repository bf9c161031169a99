"""Transactions: the coordinator's state per transactional id, and each partition's open and aborted ones.

The coordinator keeps, per transactional id, the producer id and epoch, the
partitions and groups the transaction has touched, and the offsets it will
commit; every change is a record in its own log, replayed at start-up. Ending
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
import os
import time

from ...records import RecordBatchBuilder, iter_batches
from .clock import clock_ms
from .log import PartitionLog, parse_batches

log = logging.getLogger("kafkaproto.broker")
EMPTY, ONGOING = "Empty", "Ongoing"
MAX_EPOCH = 32766  # the last epoch a producer id is used with; then it gets a new id
PREPARE_COMMIT, PREPARE_ABORT = "PrepareCommit", "PrepareAbort"
COMPLETE_COMMIT, COMPLETE_ABORT = "CompleteCommit", "CompleteAbort"
STATE_DIR = "__transaction_state-0"
ABORT, COMMIT = 0, 1  # control record types


class PartitionTransactions:
    """Open transactions (producer id -> first offset) and aborted ones [(producer id, first, last offset)]."""

    __slots__ = ("open", "aborted")

    def __init__(self):
        self.open = {}
        self.aborted = []

    def observe(self, batch, marker=None):
        """Account for a batch appended (or read back); marker is COMMIT or ABORT for control batches."""
        if batch.is_control:
            first = self.open.pop(batch.producer_id, None)
            if marker == ABORT and first is not None:
                self.aborted.append((batch.producer_id, first, batch.last_offset))
        elif batch.is_transactional:
            self.open.setdefault(batch.producer_id, batch.base_offset)

    def last_stable_offset(self, high_watermark):
        return min(self.open.values(), default=high_watermark)

    def aborted_between(self, start, end):
        """(producer id, first offset) of aborted transactions overlapping offsets [start, end)."""
        return [(pid, first) for pid, first, last in self.aborted if last >= start and first < end]


def control_marker(data):
    """COMMIT or ABORT from a control batch's bytes (its first record's key)."""
    for batch in iter_batches(data):
        for record in batch:
            return int.from_bytes(record.key[2:4], "big")
    return None


def marker_batch(producer_id, epoch, commit):
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=epoch, transactional=True, control=True)
    builder.append_end_txn_marker(commit, coordinator_epoch=0)
    return builder.build()


class Transaction:
    __slots__ = ("transactional_id", "producer_id", "epoch", "timeout_ms", "state", "partitions", "groups",
                 "offsets", "started", "last_producer")

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
        # (producer id, epoch) before the last bump at an end (transactions version 2): an EndTxn retried with it
        # is answered as the first one was
        self.last_producer = None

    def begin(self, now):
        """Ongoing from now, unless it is already: its timeout counts from the first partition or group it
        took."""
        if self.state != ONGOING:
            self.state = ONGOING
            self.started = now

    def timed_out(self, now):
        return self.state == ONGOING and now - self.started > self.timeout_ms

    def to_json(self):
        return {"pid": self.producer_id, "epoch": self.epoch, "timeout": self.timeout_ms, "state": self.state,
                "partitions": sorted(self.partitions), "groups": sorted(self.groups),
                "offsets": {g: [[t, p, *v] for (t, p), v in o.items()] for g, o in self.offsets.items()},
                "last": self.last_producer}

    @classmethod
    def from_json(cls, transactional_id, value):
        txn = cls(transactional_id, value["pid"], value["epoch"], value["timeout"])
        txn.state = value["state"]
        txn.partitions = {tuple(p) for p in value["partitions"]}
        txn.groups = set(value["groups"])
        txn.offsets = {g: {(t, p): tuple(v) for t, p, *v in rows} for g, rows in value["offsets"].items()}
        txn.started = clock_ms()  # a transaction loaded at start-up has its whole timeout again
        last = value.get("last")
        txn.last_producer = tuple(last) if last else None
        return txn


class Transactions:
    """Every transactional id's state, kept in log_dir."""

    def __init__(self, log_dir, files=None):
        self.by_id = {}
        # Recovered at every start (a torn last batch is cut off), whatever the metadata log's clean-stop marker
        # says: this log is small beside the partitions, and read whole here anyway.
        self.log = PartitionLog(os.path.join(log_dir, STATE_DIR), files=files, recover=True)
        for segment in self.log.segments:
            for batch in iter_batches(segment.read(0, segment.size)):
                for record in batch:
                    try:
                        tid = record.key.decode()
                        if record.value is None:
                            self.by_id.pop(tid, None)
                        else:
                            self.by_id[tid] = Transaction.from_json(tid, json.loads(record.value))
                    except (AttributeError, TypeError, ValueError, KeyError) as e:  # not written by this broker
                        log.error("%s: the record at offset %d is not a transaction's state (%s); skipped",
                                  self.log.directory, record.offset, e)

    def save(self, txn):
        builder = RecordBatchBuilder()
        builder.append(txn.transactional_id.encode(), json.dumps(txn.to_json()).encode(),
                       timestamp=int(time.time() * 1000))
        data = builder.build()
        self.log.append(data, parse_batches(data))

    def with_producer(self, producer_id):
        for txn in self.by_id.values():
            if txn.producer_id == producer_id:
                return txn
        return None

    def close(self):
        self.log.close()
