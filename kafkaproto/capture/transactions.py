"""Whether a captured record's transaction was aborted, told from the message that carries it.

A Fetch answer to a ``read_committed`` request (isolation level 1) lists, per partition, the aborted
transactions its records overlap, and reaches only up to the last stable offset, where every transaction
before has ended: its batches are judged as Kafka's Java consumer judges them. A batch of a producer
(id >= 0) first adds to the aborted producers every listed transaction that starts at or before the batch's
last offset; a transactional data batch of an aborted producer is aborted; an ABORT marker of the producer
takes it out of the set again (its next transaction starts clean).

Anywhere else (a Produce request, a ``read_uncommitted`` fetch, a ShareFetch answer) a transactional batch
is decided by the first COMMIT or ABORT marker of its producer that follows it in the same records field, and
is unknown (None) without one. That is what a Produce request gets in practice: producers write no markers (the
transaction coordinator does, with WriteTxnMarkers, once the producer's EndTxn asked), so a produced batch's
outcome is in other exchanges, often on other connections. Outcomes are not carried between exchanges: rows
would wait without bound for transactions that stay open, and would differ between readers that share a
file's connections (Spark's splits).

Records outside transactions are not aborted (False); a marker tells its own outcome (ABORT True, COMMIT
False); another control record of a transactional batch (none that Kafka writes) is None.
"""

from collections import deque

from ..messages import ApiKey
from .exchanges import records_fields

# records.ControlType's ABORT and COMMIT, written out: importing the record codec takes tens of ms, and the
# capture summary, which imports this module, reads no records.
ABORT, COMMIT = 0, 1
READ_COMMITTED = 1  # a FetchRequest's isolation_level


def marker_type(key):
    """The control type a control record's key holds (its second int16), or None when the key is too short."""
    if key is None or len(key) < 4:
        return None
    return int.from_bytes(key[2:4], "big", signed=True)


def outcomes(items, aborted_transactions=None):
    """Whether each item's transaction was aborted: True, False, or None (not known).

    items: a sequence of (producer_id, transactional, control, marker, last_offset) in log order, one per batch or
    one per record (a record's last offset is its own offset: a transaction starts at a batch's base offset, so
    both give the same answers), marker being the control type of a control record (marker_type) or None.
    aborted_transactions: a read_committed Fetch partition's list (objects with producer_id and first_offset),
    or None when the records' own markers are all there is to go by.
    """
    if aborted_transactions is None:
        return _by_markers(items)
    return _as_read_committed(items, aborted_transactions)


def _marker_outcome(transactional, marker):
    if not transactional:
        return False
    return True if marker == ABORT else False if marker == COMMIT else None


def _by_markers(items):
    out = [None] * len(items)
    ends = {}  # producer id -> the outcome of its next COMMIT or ABORT marker, walking backwards
    for i in range(len(items) - 1, -1, -1):
        producer_id, transactional, control, marker, _ = items[i]
        if not transactional:
            out[i] = False
        elif control:
            outcome = out[i] = _marker_outcome(True, marker)
            if outcome is not None:
                ends[producer_id] = outcome
        else:
            out[i] = ends.get(producer_id)
    return out


def _as_read_committed(items, aborted_transactions):
    # Listed transactions by first offset, the earliest last (popped first).
    waiting = sorted(((t.first_offset, t.producer_id) for t in aborted_transactions), reverse=True)
    aborted = set()
    out = []
    for producer_id, transactional, control, marker, last_offset in items:
        if producer_id >= 0:
            while waiting and waiting[-1][0] <= last_offset:
                aborted.add(waiting.pop()[1])
            if control and marker == ABORT:
                aborted.discard(producer_id)
        if control:
            out.append(_marker_outcome(transactional, marker))
        else:
            out.append(bool(transactional) and producer_id in aborted)
    return out


def _read_committed_lists(ex):
    """{id of a records field: deque of its partitions' aborted transaction lists} for a Fetch answer to a
    read_committed request; None for anything else. Without the request (not captured, or not read), only a
    list with entries shows that it answered one."""
    response = ex.response
    if ex.api_key != ApiKey.FETCH or response is None:
        return None
    request = ex.request
    asked = getattr(request, "isolation_level", None) if request is not None else None
    if asked is not None and asked != READ_COMMITTED:
        return None
    lists = {}
    for topic in getattr(response, "responses", None) or ():
        for partition in topic.partitions or ():
            data, aborted = partition.records, partition.aborted_transactions
            if data is None or not len(data) or (asked is None and not aborted):
                continue
            lists.setdefault(id(data), deque()).append(aborted or [])
    return lists or None


def records_fields_with_aborted(ex):
    """records_fields(ex), each with the aborted transaction list that decides its batches (for a Fetch answer to
    a read_committed request), or None (their markers decide): ((side, time_ns, topic, topic_id, partition,
    data), aborted_transactions)."""
    lists = _read_committed_lists(ex)
    for field in records_fields(ex):
        aborted = None
        if lists is not None and field[0] == "response":
            queue = lists.get(id(field[5]))
            if queue:
                aborted = queue.popleft()
        yield field, aborted


def aborted_array(table, aborted_transactions=None):
    """A pyarrow boolean array, the outcome of each row of a records table (kafkaproto.records.to_arrow's)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    transactional = table.column("transactional").combine_chunks()
    rows = table.num_rows
    if not rows or not pc.any(transactional).as_py():
        return transactional  # nothing in a transaction: all False
    # Judged run by run, not row by row: a run is the rows of one producer's data records in a row (a batch, or
    # batches of one transaction: only a marker ends one), or one control record. The run's last offset stands
    # for its batches' last offsets, which gives the same answers.
    producer = table.column("producer_id").combine_chunks()
    control = table.column("control").combine_chunks()
    starts = pa.array([True])
    if rows > 1:
        def earlier(array):
            return array.slice(0, rows - 1)

        def later(array):
            return array.slice(1)

        changes = pc.or_(pc.not_equal(later(producer), earlier(producer)),
                         pc.not_equal(later(transactional), earlier(transactional)))
        changes = pc.or_(changes, pc.or_(later(control), earlier(control)))
        starts = pa.concat_arrays([starts, changes])
    firsts = pc.indices_nonzero(starts).cast(pa.int64())
    lasts = pa.concat_arrays([pc.subtract(firsts.slice(1), 1), pa.array([rows - 1], type=pa.int64())])
    controls = control.take(firsts).to_pylist()
    keys = iter(table.column("key").take(pc.filter(firsts, control.take(firsts))).to_pylist())
    markers = [marker_type(next(keys)) if is_control else None for is_control in controls]
    items = list(zip(producer.take(firsts).to_pylist(), transactional.take(firsts).to_pylist(), controls, markers,
                     table.column("offset").take(lasts).to_pylist()))
    judged = pa.array(outcomes(items, aborted_transactions), type=pa.bool_())
    run_of_row = pc.subtract(pc.cumulative_sum(starts.cast(pa.int32())), 1)
    return judged.take(run_of_row)
