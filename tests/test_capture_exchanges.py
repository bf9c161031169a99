"""Exchanges from damaged traffic whose truth is known: every exchange the capture holds is recovered exactly,
and every one it does not hold whole is reported with the status that says so."""

import os
import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from capture_traffic import Damage, captured_bytes, conversation, holds, segments
from kafkaproto.capture import GAP, OK, UNMATCHED_REQUEST, Exchanges
from kafkaproto.capture.tcp import Direction


def run(sent, **options):
    reader = Exchanges(**options)
    out = []
    for number, s in enumerate(sent, 1):
        out += reader.packet(s.segment, number * 1000, number)
    return out + reader.finish()


def check(conns, sent, out):
    """The three promises, for any damage."""
    truths = {(t.connection, t.correlation_id): t for c in conns for t in c.exchanges}
    captured = captured_bytes(sent)
    ok = {}
    for ex in out:
        key = (ex.client_port - 40000 if ex.client_port else None, ex.correlation_id)
        if ex.correlation_id is not None and ex.status in (OK, GAP):
            assert key in truths, f"an exchange the traffic never had: {ex}"
        if ex.status != OK:
            continue
        assert key not in ok, f"reported twice: {ex}"
        ok[key] = ex
        t = truths[key]
        assert ex.request_header == t.header and ex.request == t.request and ex.response == t.response
        assert ex.api_key == t.header.request_api_key and ex.api_version == t.header.request_api_version
        assert ex.request_size == t.request_span[1] - t.request_span[0] - 4
    for key, t in truths.items():
        request_held = holds(captured.get((t.connection, True), []), t.request_span)
        response_held = t.response is None or holds(captured.get((t.connection, False), []), t.response_span)
        if request_held and response_held:
            assert key in ok, f"held whole but not recovered: {t.header}"
        elif request_held:
            mine = [ex for ex in out if (ex.client_port - 40000 if ex.client_port else None,
                                         ex.correlation_id) == key]
            assert [ex.status for ex in mine] == [GAP], f"response lost, reported as {mine}"
    return ok


@pytest.mark.parametrize("ipv6", [False, True])
def test_clean_traffic_gives_exactly_the_truth(ipv6):
    rng = random.Random(7)
    conns = conversation(rng, connections=4, ipv6=ipv6)
    sent = segments(rng, conns)
    out = run(sent)
    assert all(ex.status == OK for ex in out), [ex for ex in out if ex.status != OK]
    assert len(out) == sum(len(c.exchanges) for c in conns)
    check(conns, sent, out)


# Each example is a few connections' worth of traffic, about half a second: KAFKAPROTO_DAMAGE_EXAMPLES sets more
# for a long run.
DAMAGE_EXAMPLES = int(os.environ.get("KAFKAPROTO_DAMAGE_EXAMPLES", "50"))

damage = st.builds(
    Damage,
    reorder=st.sampled_from([0.0, 0.3]),
    duplicate=st.sampled_from([0.0, 0.2]),
    overlap=st.sampled_from([0.0, 0.2]),
    loss=st.sampled_from([0.0, 0.0, 0.05, 0.2]),
    snaplen=st.sampled_from([0, 0, 0, 60, 134, 1500]),
    late_start=st.booleans(),
    wrap=st.booleans(),
    tiny=st.booleans(),
    jumbo=st.booleans(),
)


@settings(max_examples=DAMAGE_EXAMPLES, deadline=None)
@given(seed=st.integers(0, 2**32), damage=damage)
# A response start found after a hole by its correlation id alone (0, in other bytes), with a size that swallowed
# the rest of the broker's stream: a cut response is now trusted only where its captured start reads.
@example(seed=446, damage=Damage(reorder=0.3, duplicate=0.0, overlap=0.0, loss=0.2, snaplen=0, late_start=False,
                                 wrap=True, tiny=True, jumbo=False))
def test_damaged_traffic_keeps_every_promise(seed, damage):
    rng = random.Random(seed)
    conns = conversation(rng, connections=rng.randint(1, 4))
    sent = segments(rng, conns, damage)
    check(conns, sent, run(sent))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), damage=damage.filter(lambda d: not d.loss and not d.snaplen and not d.late_start))
def test_reordered_duplicated_and_overlapping_segments_lose_nothing(seed, damage):
    rng = random.Random(seed)
    conns = conversation(rng, connections=rng.randint(1, 4))
    sent = segments(rng, conns, damage)
    out = run(sent)
    assert sorted((ex.client_port, ex.correlation_id, ex.status) for ex in out) == sorted(
        (c.client[1], t.correlation_id, OK) for c in conns for t in c.exchanges)
    check(conns, sent, out)


def test_the_ports_say_which_side_is_the_broker():
    rng = random.Random(3)
    conns = conversation(rng, connections=2)
    sent = [s for s in segments(rng, conns, Damage(late_start=True))]
    assert all(ex.status == OK for ex in run(sent, ports={9092}) if ex.correlation_id is not None
               and ex.request_packet and ex.response_packet)
    assert run(sent, ports={9093}) == []


def test_a_lost_response_is_a_gap_and_an_unanswered_request_is_unmatched():
    rng = random.Random(11)
    conns = conversation(rng, connections=1, exchanges=(3, 3))
    sent = segments(rng, conns)
    truths = conns[0].exchanges
    answered = [t for t in truths if t.response is not None]
    lost = answered[-1]
    # Drop the last response's segments: the broker's stream has a hole after it was asked.
    kept = [s for s in sent if s.from_client or not (s.span[0] < lost.response_span[1]
                                                     and s.span[1] > lost.response_span[0])]
    out = run(kept)
    (mine,) = [ex for ex in out if ex.correlation_id == lost.correlation_id]
    assert mine.status == GAP  # the FIN's sequence number shows bytes were missed
    # A broker that never answered, its stream whole: the request is unmatched.
    conns = conversation(random.Random(12), connections=1, exchanges=(3, 3))
    silent = conns[0].exchanges[-1]
    silent.response = None
    statuses = {ex.correlation_id: ex.status for ex in run(segments(random.Random(12), conns))}
    expected = OK if silent.request.api_key == 0 and silent.request.acks == 0 else UNMATCHED_REQUEST
    assert statuses[silent.correlation_id] == expected
    assert all(statuses[t.correlation_id] == OK for t in conns[0].exchanges[:-1])


def test_sequence_numbers_wrap():
    d = Direction()
    d.syn(2**32 - 3)
    assert d.segment(2**32 - 2, b"ab") == [b"ab"]
    assert d.segment(0, b"cd") == [b"cd"]
    assert d.segment(2**32 - 2, b"abcdef") == [b"ef"]  # a retransmission that overlaps and goes further
    assert d.segment(10, b"x") == []  # ahead of a hole
    assert d.flush() == [6, b"x"]
    assert d.gaps == 6


def test_a_hole_is_given_up_when_too_much_waits_behind_it():
    d = Direction(max_pending=10)
    d.syn(0)
    assert d.segment(1, b"abc") == [b"abc"]
    assert d.segment(10, b"0123456") == []
    assert d.segment(17, b"789abc") == [6, b"0123456", b"789abc"]


def test_a_hole_is_given_up_when_the_peer_acknowledges_past_it():
    d = Direction()
    d.syn(99)
    assert d.segment(100, b"abc") == [b"abc"]  # a packet cut by the snap length: 5 more bytes were sent
    assert d.segment(108, b"z") == []
    assert d.acked(104) == [1]  # the peer has byte 103: it will not be sent again
    assert d.acked(109) == [4, b"z"]
    assert d.acked(110) == []  # one past the end, with nothing held: the FIN's own sequence number
    assert d.gaps == 5


def test_a_late_retransmission_fills_a_hole_the_snap_length_made():
    d = Direction()
    d.syn(0)
    assert d.segment(1, b"ab") == [b"ab"]  # cut: "cd" was not captured
    assert d.segment(5, b"ef") == []
    assert d.segment(1, b"abcd") == [b"cd", b"ef"]  # the retransmission carries it whole
    assert d.gaps == 0


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32), parts=st.integers(2, 4))
def test_partitions_share_a_capture_exactly(seed, parts):
    """n readers, each keeping the connections that hash to it, give the whole read's exchanges between them,
    each once and with the same connection numbers."""
    rng = random.Random(seed)
    conns = conversation(rng, connections=rng.randint(2, 6), exchanges=(1, 3))
    sent = segments(rng, conns, Damage(late_start=rng.random() < 0.3))

    def rows(out):
        return sorted(repr((ex.connection, ex.client_port, ex.correlation_id, ex.status, ex.error)) for ex in out)

    whole = rows(run(sent))
    split = rows([ex for i in range(parts) for ex in run(sent, partition=(i, parts))])
    assert split == whole
