"""A share partition's records (kafkaproto/broker/state/shares.py) without a broker: acquiring, acknowledging,
locks, the delivery limit, and what is kept."""

import pytest

from kafkaproto import errors
from kafkaproto.broker.state.shares import (ACCEPT, ACKNOWLEDGED, ACQUIRED, ARCHIVED, AVAILABLE, GAP, RELEASE, REJECT,
                                            RENEW, SharePartition, ShareError, ShareStates, duration_ms)
from kafkaproto.coordinator_records import SHARE_SNAPSHOT, SHARE_UPDATE
from kafkaproto.uuid import Uuid

pytestmark = pytest.mark.above_the_codecs

BATCHES = [(0, 4, False), (5, 9, False)]  # two log batches of five records


def started(start=0):
    partition = SharePartition()
    partition.start = partition.end = start
    return partition


def take(partition, member, budget=100, batches=BATCHES, now=0, limit=5, batch_size=500, upto=None):
    return partition.acquire(member, budget, 2000, batches, now, 1000, limit, batch_size, upto)


def test_whole_batches_past_the_budget_and_the_batch_size_cut():
    p = started()
    assert take(p, "a", budget=3) == [(0, 4, 1)]  # a batch is never split
    assert take(p, "b", budget=100, batch_size=2) == [(5, 9, 1)]
    q = started()
    assert take(q, "a", budget=100, batch_size=5) == [(0, 4, 1), (5, 9, 1)]  # cut where a batch starts


def test_release_reject_accept_and_the_start():
    p = started()
    take(p, "a")
    p.acknowledge("a", [(0, 1, [ACCEPT]), (2, 2, [RELEASE]), (3, 3, [REJECT]), (4, 4, [GAP])], 5, 1000, 0)
    assert p.start == 2 and p.records[2][:2] == [AVAILABLE, 1] and p.records[3][0] == ARCHIVED
    assert take(p, "b", budget=1) == [(2, 2, 2)]  # released records first
    with pytest.raises(ShareError) as refused:
        p.acknowledge("a", [(2, 2, [ACCEPT])], 5, 1000, 0)  # b holds it now
    assert refused.value.error is errors.INVALID_RECORD_STATE
    with pytest.raises(ShareError) as refused:
        p.acknowledge("a", [(5, 12, [ACCEPT])], 5, 1000, 0)  # past what was handed out
    assert refused.value.error is errors.INVALID_REQUEST
    with pytest.raises(ShareError):  # all or nothing: 5-9 are a's, 2 is not
        p.acknowledge("a", [(5, 9, [ACCEPT]), (2, 2, [ACCEPT])], 5, 1000, 0)
    assert p.records[5][0] == ACQUIRED
    p.acknowledge("a", [(5, 9, [ACCEPT])], 5, 1000, 0)
    p.acknowledge("b", [(2, 2, [ACCEPT])], 5, 1000, 0)
    assert (p.start, p.end, p.records) == (10, 10, {})


def test_the_delivery_limit_archives():
    p = started()
    for delivery in range(1, 4):
        assert take(p, "a", batches=[(0, 0, False)]) == [(0, 0, delivery)]
        p.acknowledge("a", [(0, 0, [RELEASE])], 3, 1000, 0)
    assert p.start == 1 and take(p, "a", batches=[]) == []  # delivered three times: archived, done with


def test_locks_run_out_and_renew_starts_them_again():
    p = started()
    take(p, "a", now=0)  # locked until 1000
    p.acknowledge("a", [(5, 9, [RENEW])], 5, 1000, 800)  # 5-9 locked until 1800
    assert p.next_lock() == 1000
    assert p.release(None, 5, now=1000)
    assert [p.records[o][0] for o in (0, 5)] == [AVAILABLE, ACQUIRED]
    assert p.next_lock() == 1800
    assert take(p, "b") == [(0, 4, 2)]


def share_log(states):
    """[(record type, key, value or None)] of the share coordinator's log, in order (older JSON records left out)."""
    from kafkaproto.coordinator_records import decode_share_key, decode_share_value
    from kafkaproto.records import iter_batches
    out = []
    for segment in states.logs.logs[0].segments:
        for batch in iter_batches(segment.read(0, segment.size)):
            for record in batch:
                if bytes(record.key).startswith(b"["):
                    continue
                kind, key = decode_share_key(record.key)
                out.append((kind, key, None if record.value is None else decode_share_value(record.value, kind)[0]))
    return out


def runs(value):
    return [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in value.state_batches]


def test_what_is_kept_and_read_again(tmp_path):
    """A share partition's first write is a snapshot of it, the next ones updates holding what changed, with the
    start as it was before the change (what Kafka's share coordinator is told); read again, the partition is as
    it was, but for what was acquired and not yet finished."""
    states = ShareStates(str(tmp_path))
    topic = Uuid.random()
    key = ("g", topic, 0)
    states.initialize("g", {topic: [0]}, 1, start=3)
    p = states.get(*key)
    take(p, "a", batches=[(3, 7, False)])
    states.save(key)  # an acquisition alone: nothing the share coordinator is told
    p.acknowledge("a", [(4, 4, [ACCEPT]), (5, 5, [RELEASE])], 5, 1000, 0)
    states.save(key, leader_epoch=2)
    p.acknowledge("a", [(3, 3, [ACCEPT])], 5, 1000, 0)  # the start moves past 3 and 4
    states.save(key)
    assert p.start == 5
    kinds = [(kind, k, v.start_offset, runs(v), v.delivery_complete_count) for kind, k, v in share_log(states)]
    assert kinds == [(SHARE_SNAPSHOT, key, 3, [], 0),
                     (SHARE_UPDATE, key, 3, [(4, 4, ACKNOWLEDGED, 1), (5, 5, AVAILABLE, 1)], 1),
                     (SHARE_UPDATE, key, 3, [(3, 3, ACKNOWLEDGED, 1)], 2)]
    assert share_log(states)[1][2].leader_epoch == 2
    states.close()
    again = ShareStates(str(tmp_path))
    q = again.get(*key)
    assert (q.start, q.shown_start, q.shown_complete, q.state_epoch) == (5, 3, 2, 1)
    # 5 was released once; 6 and 7, acquired and never finished, are sent again as if never sent
    assert take(q, "b", batches=[(3, 7, False)]) == [(5, 5, 2), (6, 7, 1)]
    again.close()


def test_a_snapshot_every_so_many_updates_and_a_tombstone_for_a_deleted_partition(tmp_path):
    states = ShareStates(str(tmp_path), snapshot_every=3)
    topic = Uuid.random()
    key = ("g", topic, 0)
    states.initialize("g", {topic: [0]}, 0, start=0)
    for offset in range(5):
        states.get(*key).merge(-1, [(offset, offset, ARCHIVED, 1)])
        states.save(key)
    assert [(kind, v.snapshot_epoch) for kind, _, v in share_log(states)] == [
        (SHARE_SNAPSHOT, 0), (SHARE_UPDATE, 0), (SHARE_UPDATE, 0), (SHARE_SNAPSHOT, 1), (SHARE_UPDATE, 1),
        (SHARE_UPDATE, 1)]
    snapshot = share_log(states)[3][2]
    assert runs(snapshot) == [(2, 2, ARCHIVED, 1)] and snapshot.start_offset == 2
    states.delete("g", topic)
    assert share_log(states)[-1][0::2] == (SHARE_SNAPSHOT, None)
    states.initialize("g", {topic: [1]}, 0, start=7)
    states.close()
    again = ShareStates(str(tmp_path))
    assert list(again.partitions) == [("g", topic, 1)] and again.get("g", topic, 1).start == 7
    again.close()


def test_a_log_in_the_older_json_layout_loads_and_is_written_again(tmp_path):
    import json
    import os

    from kafkaproto.records import RecordBatchBuilder
    from kafkaproto.broker.state.log import PartitionLog, parse_batches
    topic = Uuid.random()
    old = PartitionLog(os.path.join(str(tmp_path), "__share_group_state-0"))
    builder = RecordBatchBuilder()
    builder.append(json.dumps(["g", str(topic), 0]).encode(), json.dumps(
        {"start": 8, "state_epoch": 2, "batches": [[9, 9, ACKNOWLEDGED, 1], [10, 11, AVAILABLE, 3]],
         "shown": [-1, -1, []]}).encode())
    builder.append(json.dumps(["g", str(topic), 1]).encode(), json.dumps({"start": 0, "batches": []}).encode())
    builder.append(json.dumps(["g", str(topic), 1]).encode(), None)
    data = builder.build()
    old.append(data, parse_batches(data))
    old.close()
    states = ShareStates(str(tmp_path))
    p = states.get("g", topic, 0)
    assert list(states.partitions) == [("g", topic, 0)] and (p.start, p.state_epoch) == (8, 2)
    written = share_log(states)[-1]
    assert written[0] == SHARE_SNAPSHOT and written[2].start_offset == 8 and \
        runs(written[2]) == [(9, 9, ACKNOWLEDGED, 1), (10, 11, AVAILABLE, 3)]
    states.close()
    again = ShareStates(str(tmp_path))  # Kafka's records win now
    assert take(again.get("g", topic, 0), "a", batches=[(8, 12, False)]) == [(8, 8, 1), (10, 11, 4), (12, 12, 1)]
    again.close()


def test_read_committed_archives_aborted_batches():
    p = started()
    assert take(p, "a", batches=[(0, 1, True), (2, 3, False)]) == [(2, 3, 1)]
    assert p.start == 2  # the aborted transaction's records are done with at once
    p.acknowledge("a", [(2, 3, [ACCEPT])], 5, 1000, 0)
    assert p.start == 4


def test_by_duration():
    assert duration_ms("PT1H") == 3600000
    assert duration_ms("P1DT2M3.5S") == 86400000 + 120000 + 3500


def test_a_state_write_is_bounded_and_whole():
    p = started(10)
    with pytest.raises(ShareError) as refused:  # a write reaching 2**62 offsets on would be that many records
        p.merge(-1, [(10, 10, ACKNOWLEDGED, 1), (11, 2**62, ARCHIVED, 1)])
    assert refused.value.error is errors.INVALID_REQUEST and (p.start, p.end, p.records) == (10, 10, {})
    for bad in ([(12, 11, ARCHIVED, 1)], [(10, 10, ACQUIRED, 1)], [(10, 10, ARCHIVED, -1)]):
        with pytest.raises(ShareError):
            p.merge(-1, bad)
    p.merge(12, [(12, 12, ACKNOWLEDGED, 1), (14, 15, AVAILABLE, 2)])
    assert (p.start, p.end) == (13, 16) and p.records[14] == [AVAILABLE, 2, None, 0]
    # written past the log's end (15 here): handed out only once the log has them
    assert take(p, "a", batches=[], upto=15) == [(13, 13, 1), (14, 14, 3)]


def test_an_offset_acknowledged_twice_counts_once_and_a_moved_log_start_forgets_what_it_passed():
    p = started()
    take(p, "a")  # 0-9 held
    p.acknowledge("a", [(5, 5, [ACCEPT]), (5, 5, [ACCEPT])], 5, 1000, 0)
    assert p.acquired == 9
    p.follow_log_start(3)  # DeleteRecords: 0-2 are gone, held or not
    assert p.start == 3 and p.acquired == 6 and 0 not in p.records
    p.acknowledge("a", [(0, 4, [ACCEPT])], 5, 1000, 0)  # below the start: taken, changes nothing there
    assert p.start == 6 and p.acquired == 4
    with pytest.raises(ShareError):
        p.acknowledge("a", [(6, 6, [RENEW])], 5, 1000, 0, renew=False)


def test_the_state_log_is_written_afresh(tmp_path):
    states = ShareStates(str(tmp_path))
    topic = Uuid.random()
    states.initialize("g", {topic: [0, 1]}, 1, start=5)
    for offset in range(5, 6005):  # past 4 × 2 partitions + 10,000 records written
        for index in (0, 1):
            states.get("g", topic, index).merge(-1, [(offset, offset, ARCHIVED, 1)])
        states.save(("g", topic, 0), ("g", topic, 1))
    assert len(states.logs.logs[0].segments) == 1 and states.written < 12_000  # written afresh once on the way
    states._rewrite()
    assert len(states.logs.logs[0].segments) == 1 and [kind for kind, _, _ in share_log(states)] == [SHARE_SNAPSHOT] * 2
    states.close()
    again = ShareStates(str(tmp_path))
    assert {k[2]: p.start for k, p in again.partitions.items()} == {0: 6005, 1: 6005}
    again.close()
