"""Partition deletion (examples/partition-deletion) in the broker: the proposal's semantics through the codecs
and handlers, the metadata log, restarts; with the extension built by tests/extension_build.py."""

import os

import pytest

from kafkaproto import errors, registry
from kafkaproto.broker import BrokerConfig
from kafkaproto.broker.config import ConfigError
from kafkaproto.broker.state.cluster import METADATA_DIR
from kafkaproto.broker.state.log import LogError
from kafkaproto.messages import ApiVersionsRequest, MetadataRequest, MetadataResponse
from kafkaproto.metadata import decode_record
from kafkaproto.records import iter_batches

from test_broker_handlers import batch, call, create, fetch, make_state, produce

DELAY_MS = 60_000


@pytest.fixture
def state(extension, tmp_path):
    state = make_state(tmp_path, **{"delete.topic.partition.enable": "true"})
    yield state
    state.close()


def delete(state, topic, partitions, delay_ms=DELAY_MS):
    request = registry.api("DeletePartitions").request
    body = request(delete_partitions_delay_ms=delay_ms,
                   topics=[request.DeletePartitionsTopic(name=topic, partitions=partitions)])
    return call(state, body, 0)


def result(response):
    (topic,) = response.responses
    return [(p.partition_index, p.status_code, errors.by_code(p.error_code).name) for p in topic.partitions]


def modes(state, topic, ask=True, version=12):
    request = registry.api("Metadata").request
    body = request(topics=[request.MetadataRequestTopic(name=topic)], include_partition_modes=ask)
    response = call(state, body, version)
    return [(p.partition_index, p.mode) for p in response.topics[0].partitions]


def metadata_records(state):
    path = os.path.join(state.config.log_dir, METADATA_DIR)
    out = []
    for name in sorted(os.listdir(path)):
        if name.endswith(".log"):
            with open(os.path.join(path, name), "rb") as f:
                for b in iter_batches(f.read()):
                    out += [decode_record(r.value)[0] for r in b]
    return out


def test_delete_the_highest_partitions_read_only_then_gone(state, tmp_path):
    create(state, "orders", partitions=4)
    assert produce(state, batch(b"kept"), topic="orders", partition=3).error_code == 0
    assert result(delete(state, "orders", [2, 3])) == [(2, 1, "NONE"), (3, 1, "NONE")]
    # ReadOnly: no more produce (the proposal's LEADER_NOT_AVAILABLE), fetch still works.
    refused = produce(state, batch(b"late"), topic="orders", partition=3)
    assert errors.by_code(refused.error_code) is errors.LEADER_NOT_AVAILABLE
    assert produce(state, batch(b"fine"), topic="orders", partition=1).error_code == 0
    read = fetch(state, topic="orders", partition=3).responses[0].partitions[0]
    assert read.error_code == 0 and [r.value for b in iter_batches(read.records) for r in b] == [b"kept"]
    assert modes(state, "orders") == [(0, 0), (1, 0), (2, 1), (3, 1)]
    # The delay passes: None, data renamed away, the count shrinks.
    assert not state.cluster.finish_partition_deletions(state.now_ms())  # not yet
    assert state.cluster.finish_partition_deletions(state.now_ms() + DELAY_MS + 1)
    assert modes(state, "orders") == [(0, 0), (1, 0)]
    assert {"orders-0", "orders-1"} <= set(os.listdir(tmp_path)) and "orders-3" not in os.listdir(tmp_path)
    assert len([d for d in os.listdir(tmp_path) if d.startswith("orders-") and d.endswith("-delete")]) == 2
    gone = fetch(state, topic="orders", partition=3).responses[0].partitions[0]
    assert errors.by_code(gone.error_code) is errors.UNKNOWN_TOPIC_OR_PARTITION
    # The metadata log holds the transitions as the extension's records.
    kinds = [(type(r).__name__, getattr(r, "mode", None)) for r in metadata_records(state)]
    assert ("DeleteTopicPartitionsRecord", None) in kinds
    assert kinds.count(("PartitionRecord", 1)) == 2 and kinds.count(("PartitionRecord", -1)) == 2
    deletion = next(r for r in metadata_records(state) if type(r).__name__ == "DeleteTopicPartitionsRecord")
    assert deletion.delete_partitions == 2
    assert deletion.delete_partitions_delay_timestamp - deletion.create_timestamp == DELAY_MS


def test_a_delay_of_zero_deletes_at_once(state):
    create(state, "now", partitions=3)
    assert result(delete(state, "now", [2], delay_ms=0)) == [(2, -1, "NONE")]
    assert modes(state, "now") == [(0, 0), (1, 0)]


@pytest.mark.parametrize("partitions, error", [
    ([1], "INVALID_PARTITIONS"),  # not the highest
    ([0, 1, 2, 3], "INVALID_PARTITIONS"),  # none would stay
    ([3, 3], "INVALID_REQUEST"),
    ([4], "UNKNOWN_TOPIC_OR_PARTITION"),
])
def test_requests_the_proposal_does_not_allow(state, partitions, error):
    create(state, "t4", partitions=4)
    answers = result(delete(state, "t4", partitions))
    assert {e for _, _, e in answers} == {error}
    assert modes(state, "t4") == [(i, 0) for i in range(4)]  # nothing changed


def test_more_partitions_join_those_being_deleted(state):
    create(state, "t", partitions=4)
    delete(state, "t", [3])
    assert result(delete(state, "t", [2])) == [(2, 1, "NONE")]  # with 3 already going, 2 is the highest left
    assert result(delete(state, "t", [3])) == [(3, 1, "NONE")]  # asked again: already ReadOnly
    assert modes(state, "t") == [(0, 0), (1, 0), (2, 1), (3, 1)]


def test_clients_that_do_not_ask_see_exactly_what_they_saw_before(state):
    create(state, "t", partitions=3)
    delete(state, "t", [2])
    for version in (1, 9, 12, 13):
        body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")])
        response = call(state, body, version)
        wire = response.encode(version)
        plain = MetadataResponse.decode(wire, version)  # kafkaproto's own class: no unknown tags in it
        assert all(not p.unknown_tagged_fields for t in plain.topics for p in t.partitions)
        assert [p.partition_index for p in plain.topics[0].partitions] == [0, 1, 2]
    assert modes(state, "t", ask=False) == [(0, 0), (1, 0), (2, 0)]  # mode left at its default: not written


def test_the_state_survives_a_restart(extension, tmp_path):
    config = {"delete.topic.partition.enable": "true"}
    state = make_state(tmp_path, **config)
    create(state, "t", partitions=4)
    delete(state, "t", [3])
    delete(state, "t", [2], delay_ms=10 * DELAY_MS)
    state.cluster.finish_partition_deletions(state.now_ms() + DELAY_MS + 1)  # 3 goes, 2 stays ReadOnly
    state.close()
    state = make_state(tmp_path, **config)
    try:
        assert modes(state, "t") == [(0, 0), (1, 0), (2, 1)]
        assert errors.by_code(produce(state, batch(b"x"), topic="t", partition=2).error_code) \
            is errors.LEADER_NOT_AVAILABLE
        assert state.cluster.finish_partition_deletions(state.now_ms() + 10 * DELAY_MS + 1)
        assert modes(state, "t") == [(0, 0), (1, 0)]
    finally:
        state.close()


def test_only_a_broker_that_enables_it_serves_it(extension, tmp_path):
    plain = make_state(tmp_path / "plain")
    enabled = make_state(tmp_path / "enabled", **{"delete.topic.partition.enable": "true"})
    try:
        tables = [{k.api_key for k in call(s, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3).api_keys} for s in (plain, enabled)]
        assert 10000 not in tables[0] and 10000 in tables[1]
        create(plain, "t", partitions=2)
        from kafkaproto.broker.dispatch import NotHandled
        with pytest.raises(NotHandled):
            delete(plain, "t", [1])
    finally:
        plain.close()
        enabled.close()


def test_without_the_extension_the_broker_says_what_is_missing(without_extensions, tmp_path):
    with pytest.raises(ConfigError, match="needs the partition_deletion extension"):
        make_state(tmp_path, **{"delete.topic.partition.enable": "true"})


def test_a_log_written_with_the_extension_needs_it_to_start(built_example, extension, tmp_path):
    state = make_state(tmp_path, **{"delete.topic.partition.enable": "true"})
    create(state, "t", partitions=2)
    delete(state, "t", [1])
    state.close()
    registry.unregister(extension)
    try:
        with pytest.raises(LogError, match="unknown metadata record type 10000.*load that extension"):
            make_state(tmp_path)
    finally:
        registry.register(extension)
    assert BrokerConfig({"log.dirs": str(tmp_path)})  # the configuration itself was fine
