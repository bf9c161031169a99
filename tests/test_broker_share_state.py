"""A share partition's records (kafkaproto/broker/state/shares.py) without a broker: acquiring, acknowledging,
locks, the delivery limit, and what is kept."""

import pytest

from kafkaproto import errors
from kafkaproto.broker.state.shares import (ACCEPT, ACKNOWLEDGED, ACQUIRED, ARCHIVED, AVAILABLE, GAP, RELEASE, REJECT,
                                            RENEW, SharePartition, ShareError, duration_ms)

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


def test_what_is_kept_and_read_again():
    p = started(3)
    take(p, "a", batches=[(3, 7, False)])
    p.acknowledge("a", [(4, 4, [ACCEPT]), (5, 5, [RELEASE])], 5, 1000, 0)
    kept = p.stored()
    assert kept["start"] == 3 and kept["batches"] == [[4, 4, ACKNOWLEDGED, 1], [5, 5, AVAILABLE, 1]]
    again = SharePartition.loaded(kept)
    # acquired records come back available, as often delivered as before they were acquired; those past the
    # last kept one are read from the log again
    assert take(again, "b", batches=[(3, 7, False)]) == [(3, 3, 1), (5, 5, 2), (6, 7, 1)]
    assert (again.start, again.end) == (3, 8)


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
    from kafkaproto.broker.state.shares import ShareStates
    from kafkaproto.uuid import Uuid
    states = ShareStates(str(tmp_path))
    topic = Uuid.random()
    states.initialize("g", {topic: [0, 1]}, 1, start=5)
    for _ in range(6000):  # past 4 × 2 partitions + 10,000 records written
        states.save(("g", topic, 0), ("g", topic, 1))
    assert len(states.log.segments) == 1 and states.written < 12_000  # written afresh once on the way
    states._rewrite()
    assert len(states.log.segments) == 1 and states.log.segments[0].size < 1000
    states.close()
    again = ShareStates(str(tmp_path))
    assert {k[2]: p.start for k, p in again.partitions.items()} == {0: 5, 1: 5}
    again.close()
