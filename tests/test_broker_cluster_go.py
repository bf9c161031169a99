"""franz-go and Sarama (tests/go) on a cluster of three brokers in one process: an idempotent producer and a consumer
group carry on while the partition's leader moves, the broker leading it stops and starts again, and the group's
coordinator moves, each at a known point of the run; and errors the broker is made to answer
(kafkaproto/broker/faults.py) are retried or handed to the caller as each client's own source says they are.

The programs are tests/go/cmd/franz and tests/go/cmd/sarama, scenarios "moves" and "fault"; test_broker_go_clients.py
builds them."""

import json
import subprocess

import pytest

from kafkaproto import errors
from kafkaproto.messages import ApiKey
from cluster_runs import Program, coordinator_of, create_topic, log_of, nodes_asked, other_node
from cluster_runs import cluster, three  # noqa: F401 - fixtures
from test_broker_go_clients import go_clients  # noqa: F401 - a fixture

pytestmark = [pytest.mark.above_the_codecs, pytest.mark.xdist_group("go-clients")]

# How a moves run goes (scenario.Moves in tests/go/internal/scenario/driven.go): 300 records; after 60, 130 and 200
# of them were acknowledged the test moves the partition's leader, stops the broker leading it, and starts that
# broker again; after 100 were read back it moves the group's coordinator. At each gate the client may send (or
# read) 40 records more, then waits for the test's word: so each change comes at a known count, while the client
# has records in flight and more to go.
SETTINGS = {"records": 300, "window": 40, "producer_gates": [60, 130, 200], "consumer_gate": 100}
LINE_TIMEOUT = 60  # seconds for a program's next line; its own waits give up after 30 and say why


class Moves:
    """What the test did at the gates of a run, and the requests the cluster saw around each change: leaders
    [(node, epoch)] of the partition, first before any change; marks: how many Produce requests had come just
    before each change of the partition, and (last) how many OffsetCommit requests before the coordinator moved;
    coordinators: the group's before and after its move."""

    def __init__(self, broker, topic, topic_id, group):
        self.broker, self.topic, self.group = broker, topic, group
        self.produced_at = nodes_asked(broker, ApiKey.PRODUCE, lambda body: any(
            t.name == topic or t.topic_id == topic_id for t in body.topic_data))
        self.committed_at = nodes_asked(broker, ApiKey.OFFSET_COMMIT, lambda body: body.group_id == group)
        self.leaders = [broker.leader(topic)]
        self.marks = []
        self.stopped = None
        self.coordinators = []

    def after_acknowledged(self, gate):
        """The producer's gates: move the leader to another broker; stop the broker leading; start it again."""
        leader, _ = self.broker.leader(self.topic)
        self.marks.append(len(self.produced_at))
        if gate == 0:
            self.broker.move_leader(self.topic, 0, other_node(leader))
        elif gate == 1:
            self.broker.stop_node(leader)
            self.stopped = leader
        else:
            self.broker.start_node(self.stopped)
        self.leaders.append(self.broker.leader(self.topic))

    def after_read(self):
        self.coordinators.append(coordinator_of(self.broker, self.group))
        self.marks.append(len(self.committed_at))
        self.broker.move_coordinator("group", other_node(self.coordinators[0]), self.group)
        self.coordinators.append(coordinator_of(self.broker, self.group))


def run_moves(go_clients, client, cluster, tmp_path):  # noqa: F811 - the imported fixture's name
    """One moves run of client ("franz" or "sarama"), driven through its gates: (what it acknowledged and read as
    [(offset, value)], its JSON result, the Moves)."""
    topic, topic_id = create_topic(cluster, f"{client}-moves")
    moves = Moves(cluster, topic, topic_id, f"{topic}-group")
    program = Program([go_clients / client, cluster.bootstrap_servers, "moves", topic, json.dumps(SETTINGS)],
                      tmp_path / f"{client}.log", LINE_TIMEOUT)
    acknowledged, read = [], []
    try:
        while not (line := program.next_line()).startswith("{"):
            kind, first, rest = line.split(" ", 2)
            assert kind != "fail", f"{client} could not write record {first}: {rest}"
            (acknowledged if kind == "ack" else read).append((int(first), rest))
            if kind == "ack" and len(acknowledged) in SETTINGS["producer_gates"]:
                moves.after_acknowledged(SETTINGS["producer_gates"].index(len(acknowledged)))
                program.go()
            elif kind == "read" and len(read) == SETTINGS["consumer_gate"]:
                moves.after_read()
                program.go()
        result = json.loads(line)
        assert program.process.wait(30) == 0, program.stderr()
    finally:
        program.close()
    return acknowledged, read, result, moves


def check_moves(cluster, acknowledged, read, result, moves):
    """What a moves run of either client must show (see the tests)."""
    in_order = [(i, str(i)) for i in range(SETTINGS["records"])]
    assert acknowledged == in_order, "each record acknowledged once, at the offset of its turn"
    assert log_of(cluster, moves.topic) == in_order, "the log holds each record once"
    assert read == in_order, "the group read each record once"
    assert result["committed"] == SETTINGS["records"], "the last commit holds"

    # The changes: a new leader (epoch + 1), the broker leading stopped (another leads, epoch + 1), started again
    # (the leader stays).
    (first, epoch), (moved, _), (after_stop, _), (after_start, _) = moves.leaders
    assert [e for _, e in moves.leaders] == [epoch, epoch + 1, epoch + 2, epoch + 2]
    assert moved == moves.stopped != after_stop == after_start
    # The producer followed the leader. The records past a gate's window were sent only after the change, and
    # acknowledged before the next gate: so each leader wrote some.
    at_move, at_stop, at_start, at_coordinator_move = moves.marks
    asked = moves.produced_at
    assert set(asked[:at_move]) == {first}
    assert moved in asked[at_move:at_stop] and set(asked[at_move:at_stop]) <= {first, moved}
    assert after_stop in asked[at_stop:at_start] and set(asked[at_stop:at_start]) <= {moved, after_stop}
    assert set(asked[at_start:]) == {after_stop}, "the producer stays with the leader when the stopped broker is back"
    # The group's commits went to the first coordinator until it moved, then on to the new one, the last there.
    before, after = moves.coordinators
    assert before != after
    committed_at = moves.committed_at
    assert set(committed_at[:at_coordinator_move]) == {before}
    assert committed_at[-1] == after and set(committed_at[at_coordinator_move:]) <= {before, after}


def test_franz_go_through_leader_and_coordinator_moves(cluster, go_clients, tmp_path):  # noqa: F811
    """franz-go's idempotent producer (acks=all) writes 300 records, one every 10 ms, while the partition's leader
    moves, the broker then leading it stops and starts again; then a consumer group reads them back, committing
    after each poll, while the group's coordinator moves. Every acknowledged record is in the log once, in order,
    and read once; the producer went to each new leader, and the records read back were written in each of the
    three leader epochs; the commits went to the new coordinator and the last one holds."""
    acknowledged, read, result, moves = run_moves(go_clients, "franz", cluster, tmp_path)
    check_moves(cluster, acknowledged, read, result, moves)
    assert not result["commit_errors"]
    epoch = moves.leaders[0][1]
    written_in = {int(e): n for e, n in result["epochs"].items()}
    assert sorted(written_in) == [epoch, epoch + 1, epoch + 2], written_in


def test_sarama_through_leader_and_coordinator_moves(cluster, go_clients, tmp_path):  # noqa: F811
    """The same with Sarama: its idempotent AsyncProducer (acks=all, one request in flight), then a consumer group
    member marking each record read, its marks committed every 100 ms and after the last record."""
    acknowledged, read, result, moves = run_moves(go_clients, "sarama", cluster, tmp_path)
    check_moves(cluster, acknowledged, read, result, moves)
    assert not result["errors"]


# ---- faults ----------------------------------------------------------------------------------------------------

RETRIED = "retried"

# What each client does with an error answered for the partition of a Produce request, and where its source says
# so. franz-go: kgo's sink.go (handleReqRespBatch's switch) retries an error that kerr marks retriable, except
# CORRUPT_MESSAGE, as many times as RecordRetries allows (unlimited by default, config.go); any other fails the
# batch, and ProduceSync hands back the *kerr.Error (kerr.TopicAuthorizationFailed, kerr.CorruptMessage).
# Sarama: async_producer.go (brokerProducer.handleSuccess) retries the errors it lists (ErrInvalidMessage, which
# is CORRUPT_MESSAGE, ErrNotLeaderForPartition, ErrNotEnoughReplicas among them) up to Producer.Retry.Max times
# (3 by default, config.go); any other goes back to the caller, and SyncProducer.SendMessage returns the KError
# (sarama.ErrTopicAuthorizationFailed).
FAULTS = {
    "franz": {errors.NOT_LEADER_OR_FOLLOWER: RETRIED, errors.NOT_ENOUGH_REPLICAS: RETRIED,
              errors.TOPIC_AUTHORIZATION_FAILED: "TOPIC_AUTHORIZATION_FAILED", errors.CORRUPT_MESSAGE:
              "CORRUPT_MESSAGE"},
    "sarama": {errors.NOT_LEADER_OR_FOLLOWER: RETRIED, errors.NOT_ENOUGH_REPLICAS: RETRIED,
               errors.TOPIC_AUTHORIZATION_FAILED: errors.TOPIC_AUTHORIZATION_FAILED.code,
               errors.CORRUPT_MESSAGE: RETRIED},
}


@pytest.mark.parametrize(("client", "error"), [(client, error) for client, cases in FAULTS.items()
                                               for error in cases], ids=lambda p: getattr(p, "name", p))
def test_a_faulted_produce(cluster, go_clients, client, error):  # noqa: F811
    """The first two Produce requests for the topic's partition are answered with error instead of being carried
    out. An error the client retries: it sends the record again after each, and the third request writes it, once.
    One it does not: the caller gets it at once, under the client's name for it, and nothing is written."""
    topic, _ = create_topic(cluster, f"{client}-fault")
    fault = cluster.add_fault(error, api_keys=[ApiKey.PRODUCE], topic=topic, budget=2)
    run = subprocess.run([str(go_clients / client), cluster.bootstrap_servers, "fault", topic], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, f"{client} fault failed (exit {run.returncode}):\n{run.stderr[-3000:]}"
    result = json.loads(run.stdout.splitlines()[-1])
    expected = FAULTS[client][error]
    if expected == RETRIED:
        assert (result["error"], result["offset"]) == ("", 0)
        assert fault.fired == 2
        assert log_of(cluster, topic) == [(0, "faulted")]
    else:
        assert result["kafka_error"] == expected, result
        assert fault.fired == 1, "the client asked again"
        assert log_of(cluster, topic) == []
