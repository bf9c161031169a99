"""Idempotent producers: ids, epochs, and the sequence checks each partition makes on append.

As Kafka does: a batch whose sequence range matches one of the producer's last
five on that partition is a retry, acknowledged with its first append's
offset and not written again; a batch that does not follow the last one is
OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is INVALID_PRODUCER_EPOCH; a new
epoch starts again at sequence 0. The state is rebuilt from the log's batch
headers on start (BrokerState), so it survives a restart.

Every batch a partition takes passes through its PartitionProducers (control
batches too), so this is also where the partition says it was appended to:
``on_append``, when set, is called with the PartitionProducers after each
batch, and the server wakes the fetches waiting on that partition (and only
those). A producer is found by its id in a dict, however many there are.
"""

from collections import deque

from ... import errors
from .log import CONTROL

KEEP_BATCHES = 5  # Kafka's max.in.flight.requests.per.connection limit for idempotence
INT32 = 1 << 31
_TAKEN = (errors.NONE, None)
_OLD_EPOCH = (errors.INVALID_PRODUCER_EPOCH, None)
_OUT_OF_ORDER = (errors.OUT_OF_ORDER_SEQUENCE_NUMBER, None)


def _next_sequence(sequence, count):
    return (sequence + count) % INT32


class ProducerEntry:
    __slots__ = ("epoch", "batches", "last_timestamp", "coordinator_epoch")

    def __init__(self, epoch):
        self.epoch = epoch
        # (first sequence, last sequence, first offset, max timestamp) of the last few batches
        self.batches = deque(maxlen=KEEP_BATCHES)
        self.last_timestamp = -1  # of its last batch, a transaction marker's too (DescribeProducers)
        self.coordinator_epoch = -1  # of the transaction coordinator that wrote its last marker

    @property
    def last_sequence(self):
        return self.batches[-1][1] if self.batches else -1


class PartitionProducers:
    """The producers that wrote to one partition."""

    __slots__ = ("entries", "on_append")

    def __init__(self):
        self.entries = {}  # producer id -> ProducerEntry
        self.on_append = None  # called with self after each batch appended (the server's fetch wake-up)

    def check(self, batch):
        """(error, None) for a batch about to be appended, or (NONE, (first offset, max timestamp)) of the
        batch it repeats."""
        producer_id = batch.producer_id
        if producer_id < 0 or batch.attributes & CONTROL:
            return _TAKEN
        entry = self.entries.get(producer_id)
        if entry is None:
            return _TAKEN  # unknown producer: its first sequence is taken as given, as Kafka does
        base_sequence = batch.base_sequence
        if batch.producer_epoch != entry.epoch:
            if batch.producer_epoch < entry.epoch:
                return _OLD_EPOCH
            return _TAKEN if base_sequence == 0 else _OUT_OF_ORDER
        kept = entry.batches
        if not kept:
            return _TAKEN
        if base_sequence == _next_sequence(kept[-1][1], 1):
            # The next batch, as nearly every one is. It cannot repeat a kept one: their sequences end before it
            # (wrapping round takes 2^31 records, far more than five batches hold).
            return _TAKEN
        last_sequence = _next_sequence(base_sequence, batch.record_count - 1)
        for first, last, first_offset, max_timestamp in kept:
            if first == base_sequence and last == last_sequence:
                return errors.NONE, (first_offset, max_timestamp)
        return _OUT_OF_ORDER

    def appended(self, batch, coordinator_epoch=-1):
        """Remember a batch just written (or read back on start); coordinator_epoch: a marker's."""
        if self.on_append is not None:
            self.on_append(self)
        if batch.producer_id < 0:
            return
        entry = self.entries.get(batch.producer_id)
        if entry is None or batch.producer_epoch > entry.epoch:
            entry = self.entries[batch.producer_id] = ProducerEntry(batch.producer_epoch)
        entry.last_timestamp = batch.max_timestamp
        if batch.attributes & CONTROL:
            entry.coordinator_epoch = coordinator_epoch
            return
        entry.batches.append((batch.base_sequence, _next_sequence(batch.base_sequence, batch.record_count - 1),
                              batch.base_offset, batch.max_timestamp))

