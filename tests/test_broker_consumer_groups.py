"""KIP-848 consumer groups on the broker, without sockets: joining, epochs, revocation before reassignment,
fencing, static members, regular expressions, the assignors and offset commits with member epochs."""


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaproto import errors
from kafkaproto.broker.state.groups import clock_ms
from kafkaproto.broker.state.groups.assignors import (MemberSpec, java_order, range_assignor, string_hash,
                                                     uniform)
from kafkaproto.messages import (ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, DeleteGroupsRequest,
                                 FindCoordinatorRequest, ListGroupsRequest, OffsetCommitRequest, OffsetFetchRequest)
from kafkaproto.uuid import Uuid

from test_broker_handlers import call, create, make_state

# The broker is the same code over either codec implementation (conftest.py: the pure-Python pass).
pytestmark = pytest.mark.above_the_codecs

HB = ConsumerGroupHeartbeatRequest


@pytest.fixture
def state(tmp_path):
    state = make_state(tmp_path, **{"group.consumer.assignment.interval.ms": "0",
                                     "group.initial.rebalance.delay.ms": "0"})
    yield state
    state.close()


def owned(assignment):
    """The TopicPartitions a member reports, from a response's assignment ({topic id: [partitions]})."""
    return [HB.TopicPartitions(topic_id=t, partitions=sorted(p)) for t, p in assignment.items()]


class Member:
    """One consumer: it heartbeats, takes what it is given and gives up what it is no longer given at once."""

    def __init__(self, state, member_id, group="g", topics=("t",), regex=None, instance_id=None, assignor=None,
                 version=1):
        self.state, self.member_id, self.group, self.version = state, member_id, group, version
        self.topics, self.regex, self.instance_id, self.assignor = topics, regex, instance_id, assignor
        self.epoch = 0
        self.assignment = {}

    def beat(self, full=False, **fields):
        joining = self.epoch == 0
        request = HB(group_id=self.group, member_id=self.member_id, member_epoch=self.epoch,
                     instance_id=self.instance_id, rebalance_timeout_ms=30000 if joining or full else -1,
                     subscribed_topic_names=list(self.topics) if (joining or full) and self.topics is not None
                     else None,
                     subscribed_topic_regex=self.regex if joining or full else None,
                     server_assignor=self.assignor if joining else None,
                     topic_partitions=[] if joining else owned(self.assignment))
        for key, value in fields.items():
            setattr(request, key, value)
        response = call(self.state, request, self.version)
        if response.error_code == 0:
            self.epoch = response.member_epoch
            if response.assignment is not None:
                self.assignment = {tp.topic_id: set(tp.partitions) for tp in response.assignment.topic_partitions}
        return response

    def partitions(self):
        return {(t, p) for t, parts in self.assignment.items() for p in parts}


def topic_id(state, name):
    return state.cluster.topics[name].topic_id


def describe(state, group="g", version=1):
    return call(state, ConsumerGroupDescribeRequest(group_ids=[group], include_authorized_operations=False),
                version).groups[0]


def test_a_heartbeat_is_checked_as_kafka_checks_it(state):
    cases = [
        (dict(member_id="", member_epoch=0), 1, "MemberId can't be empty."),
        (dict(member_id="m", member_epoch=5, group_id=""), 1, "GroupId can't be empty."),
        (dict(member_id="m", member_epoch=0, rebalance_timeout_ms=-1), 1,
         "RebalanceTimeoutMs must be provided in first request."),
        (dict(member_id="m", member_epoch=0, topic_partitions=None), 1,
         "TopicPartitions must be empty when (re-)joining."),
        (dict(member_id="m", member_epoch=0, subscribed_topic_names=None), 1,
         "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
        (dict(member_id="m", member_epoch=-2), 1, "InstanceId can't be null."),
        (dict(member_id="m", member_epoch=-3), 1, "MemberEpoch is invalid."),
        (dict(member_id="m", member_epoch=0, instance_id="  "), 1, "InstanceId can't be empty."),
    ]
    for fields, version, message in cases:
        request = HB(group_id="g", rebalance_timeout_ms=1000, subscribed_topic_names=["t"], topic_partitions=[])
        for key, value in fields.items():
            setattr(request, key, value)
        response = call(state, request, version)
        assert (response.error_code, response.error_message) == (errors.INVALID_REQUEST.code, message), fields
    bad = HB(group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=1000, subscribed_topic_names=["t"],
             topic_partitions=[], server_assignor="sticky")
    response = call(state, bad, 1)
    assert response.error_code == errors.UNSUPPORTED_ASSIGNOR.code and "uniform, range" in response.error_message
    bad.server_assignor, bad.subscribed_topic_regex = None, "a(?=b)"
    assert call(state, bad, 1).error_code == errors.INVALID_REGULAR_EXPRESSION.code
    # v0 lets the coordinator make the member id up
    v0 = HB(group_id="g0", member_id="", member_epoch=0, rebalance_timeout_ms=1000, subscribed_topic_names=[],
            topic_partitions=[])
    response = call(state, v0, 0)
    assert response.error_code == 0 and len(response.member_id) == 22  # a Kafka Uuid, as Kafka makes them


def test_one_member_gets_every_partition_at_epoch_2(state):
    create(state, "t", partitions=3)
    a = Member(state, "a")
    response = a.beat()
    assert (response.member_epoch, response.heartbeat_interval_ms) == (2, 5000)
    assert a.assignment == {topic_id(state, "t"): {0, 1, 2}}
    assert a.beat().assignment is None  # nothing changed: a keep-alive answer carries no assignment
    group = describe(state)
    assert (group.group_state, group.group_epoch, group.assignment_epoch, group.assignor_name) == (
        "Stable", 2, 2, "uniform")
    member = group.members[0]
    assert (member.member_id, member.client_id, member.member_epoch, member.member_type) == ("a", "tests", 2, 1)


@pytest.mark.parametrize("version", [0, 1])
def test_a_life_at_each_version(state, version):
    """Join, share, leave, at each version of both APIs (v1 adds regexes, client-made member ids and the member
    type)."""
    create(state, "t", partitions=2)
    a, b = Member(state, "a", version=version), Member(state, "b", version=version)
    a.beat(), b.beat(), a.beat(), a.beat(), b.beat()
    assert len(a.partitions()) == len(b.partitions()) == 1
    group = describe(state, version=version)
    assert group.group_state == "Stable" and len(group.members) == 2
    assert {m.member_type for m in group.members} == ({1} if version >= 1 else {-1})
    assert a.beat(member_epoch=-1).error_code == 0 and b.beat(member_epoch=-1).error_code == 0
    assert describe(state, version=version).group_state == "Empty"


def test_partitions_are_revoked_before_they_are_reassigned(state):
    create(state, "t", partitions=4)
    t = topic_id(state, "t")
    a, b = Member(state, "a"), Member(state, "b")
    a.beat()
    assert a.partitions() == {(t, p) for p in range(4)}
    b.beat()  # the group moves to epoch 3; b's target partitions are still a's
    assert b.epoch == 3 and b.assignment == {} and describe(state).group_state == "Reconciling"
    given_to_b = describe(state).members[1].target_assignment.topic_partitions
    assert sum(len(tp.partitions) for tp in given_to_b) == 2
    kept = a.beat()  # a is told to give up two partitions and stays at epoch 2 until it has
    assert kept.member_epoch == 2 and len(a.partitions()) == 2
    assert b.beat().assignment is None and b.assignment == {}  # still not released: a reported them as owned
    a.beat()  # a reports it no longer owns them: it reaches epoch 3
    assert a.epoch == 3
    b.beat()
    assert len(b.partitions()) == 2 and not (a.partitions() & b.partitions())
    assert a.partitions() | b.partitions() == {(t, p) for p in range(4)}
    assert describe(state).group_state == "Stable"


def test_fencing_by_epoch_and_membership(state):
    create(state, "t", partitions=2)
    a = Member(state, "a")
    a.beat()
    ahead = a.beat(member_epoch=a.epoch + 1)
    assert ahead.error_code == errors.FENCED_MEMBER_EPOCH.code and "greater member epoch (3)" in ahead.error_message
    assert Member(state, "nobody").beat(member_epoch=4).error_code == errors.UNKNOWN_MEMBER_ID.code
    b = Member(state, "b")
    b.beat()
    a.beat()
    a.beat()
    assert a.epoch == 3
    # one epoch back, owning what it has: tolerated (the answer that moved it on may have been lost)
    assert a.beat(member_epoch=2).error_code == 0
    behind = a.beat(member_epoch=1)
    assert behind.error_code == errors.FENCED_MEMBER_EPOCH.code and "smaller member epoch (1)" in behind.error_message
    assert call(state, HB(group_id="none", member_id="x", member_epoch=1), 1).error_code == \
        errors.GROUP_ID_NOT_FOUND.code


def test_a_member_leaving_hands_its_partitions_to_the_rest(state):
    create(state, "t", partitions=2)
    a, b = Member(state, "a"), Member(state, "b")
    a.beat(), b.beat(), a.beat(), a.beat(), b.beat()
    assert len(a.partitions()) == len(b.partitions()) == 1
    left = a.beat(member_epoch=-1)
    assert (left.member_id, left.member_epoch) == ("a", -1)
    b.beat()
    assert len(b.partitions()) == 2 and describe(state).group_epoch == 4
    refused = call(state, DeleteGroupsRequest(groups_names=["g"]), 2).results[0]
    assert refused.error_code == errors.NON_EMPTY_GROUP.code
    assert b.beat(member_epoch=-1).error_code == 0
    assert describe(state).group_state == "Empty"
    assert call(state, DeleteGroupsRequest(groups_names=["g"]), 2).results[0].error_code == 0
    assert describe(state).error_code == errors.GROUP_ID_NOT_FOUND.code


def test_a_session_that_expires_fences_the_member(state):
    create(state, "t", partitions=2)
    a, b = Member(state, "a"), Member(state, "b")
    a.beat(), b.beat()
    group = state.groups.consumer_group("g")
    group.members["a"].session_deadline = 0  # a heartbeat long ago
    state.groups.group("g")  # looked up: its timers are looked at again
    assert state.groups.tick(clock_ms())
    assert "a" not in group.members
    b.beat()
    assert len(b.partitions()) == 2


def test_static_members_leave_for_a_while_and_come_back(state):
    create(state, "t", partitions=2)
    a = Member(state, "a1", instance_id="A")
    a.beat()
    before = a.partitions()
    twin = Member(state, "a2", instance_id="A")
    response = twin.beat()
    assert response.error_code == errors.UNRELEASED_INSTANCE_ID.code
    epoch = a.epoch
    away = a.beat(member_epoch=-2)
    assert (away.error_code, away.member_epoch) == (0, -2)
    assert describe(state).members[0].member_epoch == -2
    back = twin.beat()
    assert back.error_code == 0 and twin.partitions() == before and back.member_epoch == epoch
    a.epoch = epoch
    fenced = a.beat()
    assert fenced.error_code == errors.FENCED_INSTANCE_ID.code and "was fenced by member a2" in fenced.error_message


def test_a_regex_is_resolved_by_the_broker_after_the_heartbeat(state):
    create(state, "orders-eu", partitions=1)
    create(state, "orders-us", partitions=1)
    create(state, "payments", partitions=1)
    a = Member(state, "a", topics=None, regex="orders-.*")
    first = a.beat()
    assert first.error_code == 0 and a.assignment == {}  # resolved in the background, as in Kafka
    a.beat()
    assert {t for t, _ in a.partitions()} == {topic_id(state, "orders-eu"), topic_id(state, "orders-us")}
    assert describe(state).members[0].subscribed_topic_regex == "orders-.*"


def test_a_regex_matches_kafkas_internal_topic_as_any_other(state):
    """Kafka's resolver matches a pattern against every topic its metadata holds, __consumer_offsets among them
    once its coordinator made it (franz-go's Test848RegexBrokerResolves counts on it): here the coordinator's
    log, one partition."""
    create(state, "orders-eu", partitions=1)
    assert call(state, FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4).coordinators[0].error_code == 0
    a = Member(state, "a", topics=None, regex="__consumer.*|orders-.*")
    a.beat()
    a.beat()
    assert a.partitions() == {(topic_id(state, "orders-eu"), 0), (topic_id(state, "__consumer_offsets"), 0)}


def test_regexes_are_re2_and_cannot_stall_the_broker(state):
    """Kafka's RE2J syntax (\\p classes yes, lookaround no), matched in linear time: a pattern that makes a
    backtracking matcher take exponential time against a long topic name resolves at once."""
    create(state, "a" * 200 + "b")
    create(state, "Zurich")
    hostile = Member(state, "h", topics=None, regex="(a+)+")
    assert hostile.beat().error_code == 0
    hostile.beat()
    assert hostile.assignment == {}  # matched nothing, and came back
    letters = Member(state, "l", group="g2", topics=None, regex=r"\p{Lu}\pL+")
    assert letters.beat().error_code == 0
    letters.beat()
    assert {t for t, _ in letters.partitions()} == {topic_id(state, "Zurich")}
    refused = Member(state, "x", group="g3", topics=None, regex="(?<=a)b").beat()
    assert refused.error_code == errors.INVALID_REGULAR_EXPRESSION.code
    assert refused.error_message.startswith("SubscribedTopicRegex `(?<=a)b` is not a valid regular expression: ")


def test_range_gives_co_partitioned_ranges(state):
    create(state, "x", partitions=4)
    create(state, "y", partitions=4)
    a = Member(state, "a", topics=("x", "y"), assignor="range")
    b = Member(state, "b", topics=("x", "y"), assignor="range")
    a.beat(), b.beat()
    for _ in range(3):
        a.beat(), b.beat()
    x, y = topic_id(state, "x"), topic_id(state, "y")
    assert a.assignment == {x: {0, 1}, y: {0, 1}} and b.assignment == {x: {2, 3}, y: {2, 3}}
    assert describe(state).assignor_name == "range"


def test_offset_commits_carry_member_epochs(state):
    create(state, "t", partitions=2)
    a = Member(state, "a")
    a.beat()

    def commit(epoch, version=9, member_id="a"):
        request = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=epoch, member_id=member_id,
                                      topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
                                          OffsetCommitRequest.OffsetCommitRequestPartition(
                                              partition_index=0, committed_offset=5)])])
        return call(state, request, version).topics[0].partitions[0].error_code

    assert commit(a.epoch) == 0
    assert commit(a.epoch + 1) == errors.STALE_MEMBER_EPOCH.code
    assert commit(1) == errors.STALE_MEMBER_EPOCH.code  # older than the partition's assignment epoch
    assert commit(a.epoch, version=8) == errors.UNSUPPORTED_VERSION.code
    assert commit(-1, member_id="") == errors.UNKNOWN_MEMBER_ID.code  # an admin commit while members are in
    fetch = OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
        group_id="g", member_id="a", member_epoch=a.epoch, topics=None)])
    group = call(state, fetch, 9).groups[0]
    assert group.error_code == 0 and group.topics[0].partitions[0].committed_offset == 5
    fetch.groups[0].member_epoch = 1
    assert call(state, fetch, 9).groups[0].error_code == errors.STALE_MEMBER_EPOCH.code


def test_list_groups_shows_consumer_groups(state):
    create(state, "t")
    Member(state, "a").beat()
    listed = call(state, ListGroupsRequest(states_filter=[], types_filter=["consumer"]), 5).groups
    assert [(g.group_id, g.group_type, g.protocol_type, g.group_state) for g in listed] == [
        ("g", "consumer", "consumer", "Stable")]


# --- the assignors, against what Kafka's give ---------------------------------------------------------------------

def test_java_hash_order():
    assert string_hash("a") == 97 and string_hash("hello") == 99162322 and string_hash("polygenelubricants") == \
        -2147483648
    assert java_order(["b", "a", "c"], string_hash) == ["a", "b", "c"]
    assert java_order([1, 33, 16], lambda i: i) == [16, 1, 33]  # buckets 0 and 1 of 16; 1 was put in before 33


def test_uniform_spreads_and_keeps_what_members_have():
    t = Uuid.random()
    count = {t: 5}.get
    fresh = uniform({"a": MemberSpec(None, frozenset({t}), {}), "b": MemberSpec(None, frozenset({t}), {})}, count)
    assert sorted(len(fresh[m][t]) for m in "ab") == [2, 3]
    assert fresh["a"][t] | fresh["b"][t] == set(range(5))
    # a third member takes from the others only what balance needs
    current = {m: {t: set(p[t])} for m, p in fresh.items()}
    after = uniform({**{m: MemberSpec(None, frozenset({t}), current[m]) for m in "ab"},
                     "c": MemberSpec(None, frozenset({t}), {})}, count)
    assert sorted(len(after[m].get(t, ())) for m in "abc") == [1, 2, 2]
    for m in "ab":
        assert after[m][t] <= current[m][t]


def test_uniform_with_different_subscriptions():
    x, y = Uuid.random(), Uuid.random()
    counts = {x: 3, y: 3}.get
    got = uniform({"a": MemberSpec(None, frozenset({x}), {}), "b": MemberSpec(None, frozenset({x, y}), {})}, counts)
    assert got["a"].keys() <= {x} and got["b"].get(y) == {0, 1, 2}
    assert got["a"][x] | got["b"].get(x, set()) == {0, 1, 2}


def test_range_orders_static_members_first():
    x = Uuid.random()
    got = range_assignor({"z": MemberSpec(None, frozenset({x}), {}), "m": MemberSpec("i", frozenset({x}), {})},
                         {x: 3}.get)
    assert got == {"m": {x: {0, 1}}, "z": {x: {2}}}


# --- members moving between the classic protocol and KIP-848's -------------------------------------------------

def subscription(*topics, owned=()):
    """ConsumerProtocolSubscription v1: topics, no user data, and the partitions owned [(topic, [partitions])]."""
    def string(text):
        return len(text).to_bytes(2, "big") + text.encode()
    out = b"\x00\x01" + len(topics).to_bytes(4, "big") + b"".join(string(t) for t in topics) + b"\xff\xff\xff\xff"
    out += len(owned).to_bytes(4, "big")
    for topic, parts in owned:
        out += string(topic) + len(parts).to_bytes(4, "big") + b"".join(p.to_bytes(4, "big") for p in parts)
    return out


def test_a_classic_group_moves_to_the_consumer_protocol_and_back(state):
    from kafkaproto.broker.state.groups.embedded import read_assignment, write_assignment
    from kafkaproto.messages import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest
    from test_broker_groups import Pending

    create(state, "t", partitions=2)
    t = topic_id(state, "t")

    def join(member_id, owned=()):
        request = JoinGroupRequest(group_id="g", session_timeout_ms=30000, rebalance_timeout_ms=30000,
                                   member_id=member_id, protocol_type="consumer", protocols=[
                                       JoinGroupRequest.JoinGroupRequestProtocol(
                                           name="range", metadata=subscription("t", owned=owned))])
        pending = Pending(state, request, 3)
        for _ in range(50):
            response = pending.poll(final=True)
            if not hasattr(response, "ms"):
                return response
            state.groups.tick(clock_ms())
        raise AssertionError("JoinGroup never answered")

    def sync(member_id, generation, assignments=()):
        request = SyncGroupRequest(group_id="g", generation_id=generation, member_id=member_id, assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments])
        return Pending(state, request, 3).poll(final=True)

    def heartbeat(member_id, generation):
        return call(state, HeartbeatRequest(group_id="g", generation_id=generation, member_id=member_id), 3).error_code

    # A classic group of one consumer that owns both partitions.
    joined = join("")
    a = joined.member_id
    assert joined.leader == a
    assert sync(a, joined.generation_id, [(a, write_assignment(0, {"t": [0, 1]}))]).error_code == 0
    assert state.groups.group("g").kind == "classic"

    # A KIP-848 member joins: the group becomes a consumer group, and the classic member is told to rejoin.
    k = Member(state, "k")
    assert k.beat().error_code == 0
    group = state.groups.group("g")
    assert group.kind == "consumer" and group.members[a].uses_classic_protocol
    assert heartbeat(a, joined.generation_id) == errors.REBALANCE_IN_PROGRESS.code
    rejoined = join(a, owned=[("t", [0, 1])])
    assert rejoined.error_code == 0 and rejoined.leader == "" and rejoined.generation_id == joined.generation_id
    kept, _ = read_assignment(sync(a, rejoined.generation_id).assignment)
    assert len(kept["t"]) == 1  # one partition to give up, before the new epoch
    again = join(a, owned=[("t", kept["t"])])
    assert again.generation_id == group.assignment_epoch
    assert read_assignment(sync(a, again.generation_id).assignment)[0] == kept
    k.beat()
    assert k.assignment == {t: {1 - kept["t"][0]}} and describe(state).group_state == "Stable"
    assert {m.member_type for m in describe(state).members} == {0, 1}

    # The KIP-848 member leaves: only a classic member is left, so the group is a classic group again.
    assert k.beat(member_epoch=-1).error_code == 0
    classic = state.groups.group("g")
    assert classic.kind == "classic" and classic.state == "PreparingRebalance" and list(classic.members) == [a]
    assert heartbeat(a, again.generation_id) == errors.REBALANCE_IN_PROGRESS.code
    last = join(a, owned=[("t", kept["t"])])
    assert last.error_code == 0 and last.leader == a and last.generation_id == again.generation_id + 1


def test_an_upgrade_the_policy_forbids(tmp_path):
    from kafkaproto.broker.state.groups.embedded import write_assignment
    from kafkaproto.messages import JoinGroupRequest, SyncGroupRequest
    from test_broker_groups import Pending

    state = make_state(tmp_path, **{"group.consumer.migration.policy": "downgrade",
                                     "group.initial.rebalance.delay.ms": "0"})
    try:
        create(state, "t")
        request = JoinGroupRequest(group_id="g", session_timeout_ms=30000, rebalance_timeout_ms=30000, member_id="",
                                   protocol_type="consumer", protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                                       name="range", metadata=subscription("t"))])
        pending = Pending(state, request, 3)
        joined = pending.poll(final=True)
        while hasattr(joined, "ms"):
            state.groups.tick(clock_ms())
            joined = pending.poll(final=True)
        Pending(state, SyncGroupRequest(group_id="g", generation_id=joined.generation_id, member_id=joined.member_id,
                                        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(
                                            member_id=joined.member_id, assignment=write_assignment(0, {"t": [0]}))]),
                3).poll(final=True)
        refused = Member(state, "k").beat()
        assert refused.error_code == errors.GROUP_ID_NOT_FOUND.code
        assert refused.error_message == "Cannot upgrade classic group g to consumer group because online upgrade " \
                                        "is disabled."
        assert state.groups.group("g").kind == "classic"
    finally:
        state.close()


# --- requests in any order, with any values ------------------------------------------------------------------------

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_any_sequence_of_group_requests_keeps_the_group_sound(tmp_path_factory, data):
    """Heartbeats, classic joins and leaves, commits and describes from a few members, with epochs, owned
    partitions, subscriptions, regexes and instance ids drawn at random: every answer is one Kafka could give (no
    UNKNOWN_SERVER_ERROR, which would mean the coordinator failed), and no partition is ever held by two members."""
    from kafkaproto.messages import JoinGroupRequest, LeaveGroupRequest

    state = make_state(tmp_path_factory.mktemp("any"), **{"group.consumer.assignment.interval.ms": "0",
                                                          "group.initial.rebalance.delay.ms": "0"})
    try:
        create(state, "t", partitions=3)
        create(state, "u", partitions=2)
        ids = [topic_id(state, "t"), topic_id(state, "u"), Uuid.random()]
        members = st.sampled_from(["m1", "m2", "m3", ""])
        for _ in range(data.draw(st.integers(1, 25))):
            kind = data.draw(st.sampled_from(["beat", "beat", "beat", "join", "leave", "commit", "describe"]))
            if kind == "beat":
                owned = data.draw(st.none() | st.lists(st.builds(
                    lambda t, ps: HB.TopicPartitions(topic_id=t, partitions=ps), st.sampled_from(ids),
                    st.lists(st.integers(-1, 4), max_size=3)), max_size=3))
                version = data.draw(st.sampled_from([0, 1]))
                request = HB(group_id="g", member_id=data.draw(members),
                             member_epoch=data.draw(st.integers(-3, 6)),
                             instance_id=data.draw(st.none() | st.sampled_from(["i1", "i2"])),
                             rebalance_timeout_ms=data.draw(st.sampled_from([-1, 0, 5000])),
                             subscribed_topic_names=data.draw(st.none() | st.lists(
                                 st.sampled_from(["t", "u", "nope"]), max_size=3)),
                             subscribed_topic_regex=data.draw(st.none() | st.sampled_from(["t|u", "", "(", "u.*"]))
                             if version >= 1 else None,
                             server_assignor=data.draw(st.none() | st.sampled_from(["uniform", "range", "x"])),
                             topic_partitions=owned)
                response = call(state, request, version)
            elif kind == "join":
                response = call(state, JoinGroupRequest(
                    group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                    member_id=data.draw(members), protocol_type="consumer", protocols=[
                        JoinGroupRequest.JoinGroupRequestProtocol(
                            name="range", metadata=data.draw(st.sampled_from(
                                [subscription("t"), subscription("t", owned=[("t", [0])]), b"\x00\x01junk"])))]),
                                5, final=True)
            elif kind == "leave":
                response = call(state, LeaveGroupRequest(group_id="g", members=[LeaveGroupRequest.MemberIdentity(
                    member_id=data.draw(members), group_instance_id=data.draw(st.none() | st.just("i1")))]), 5)
            elif kind == "commit":
                response = call(state, OffsetCommitRequest(
                    group_id="g", generation_id_or_member_epoch=data.draw(st.integers(-1, 6)),
                    member_id=data.draw(members), topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
                        name="t", partitions=[OffsetCommitRequest.OffsetCommitRequestPartition(
                            partition_index=data.draw(st.integers(0, 2)), committed_offset=1)])]), 9)
            else:
                response = describe(state)
            if hasattr(response, "ms"):
                continue  # a classic JoinGroup parked in a classic group
            assert errors.UNKNOWN_SERVER_ERROR.code not in _error_codes(response.to_dict()), response
            group = state.groups.group("g")
            if group is not None and group.kind == "consumer":
                held = [(t, p) for m in group.members.values() for held in (m.assigned, m.pending)
                        for t, parts in held.items() for p in parts]
                assert len(held) == len(set(held)), f"a partition held twice: {held}"
    finally:
        state.close()


def _error_codes(value):
    if isinstance(value, dict):
        return {v for k, v in value.items() if k == "error_code"} | {
            c for v in value.values() for c in _error_codes(v)}
    if isinstance(value, list):
        return {c for v in value for c in _error_codes(v)}
    return set()


def test_a_group_s_own_configs_set_its_heartbeat_and_session(tmp_path):
    """consumer.heartbeat.interval.ms and consumer.session.timeout.ms set on a group (kafka-configs --entity-type
    groups) are the ones its members are told and held to, as Kafka's GroupConfig makes them."""
    from kafkaproto.broker.state.cluster import GROUP_RESOURCE
    state = make_state(tmp_path)
    try:
        create(state, "t")
        state.cluster.set_configs(GROUP_RESOURCE, "g", {"consumer.heartbeat.interval.ms": "7000",
                                                        "consumer.session.timeout.ms": "50000"})
        member = Member(state, "m-1")
        before = clock_ms()
        response = member.beat()
        assert response.error_code == 0 and response.heartbeat_interval_ms == 7000
        deadline = state.groups.consumer_group("g").members["m-1"].session_deadline
        assert before + 50000 <= deadline <= clock_ms() + 50000
        other = Member(state, "m-2", group="h")
        assert other.beat().heartbeat_interval_ms == 5000  # the broker's, for a group without its own
    finally:
        state.close()
