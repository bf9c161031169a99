"""kafkaproto.compare: two answers to one request, compared under named rules."""

from kafkaproto import errors
from kafkaproto.compare import RULES, Labels, differences, is_loading, normalise
from kafkaproto.messages import ConsumerGroupDescribeResponse, MetadataResponse
from kafkaproto.records import RecordBatchBuilder
from kafkaproto.uuid import Uuid


def metadata(cluster_id, topic_id, partitions, throttle):
    return MetadataResponse(throttle_time_ms=throttle, cluster_id=cluster_id, controller_id=1, brokers=[], topics=[
        MetadataResponse.MetadataResponseTopic(error_code=0, name="t", topic_id=topic_id, partitions=[
            MetadataResponse.MetadataResponsePartition(error_code=0, partition_index=p, leader_id=1,
                                                       replica_nodes=[1], isr_nodes=[1]) for p in partitions])])


def test_made_up_ids_free_text_and_hash_order_do_not_count():
    a = normalise(metadata("cluster-a", Uuid.random(), [0, 1, 2], 0).to_dict(), Labels())
    b = normalise(metadata("cluster-b", Uuid.random(), [2, 0, 1], 50).to_dict(), Labels())
    assert differences(a, b) == []
    c = normalise(metadata("cluster-c", Uuid.random(), [0, 1], 0).to_dict(), Labels())
    assert differences(a, c) and all(path.startswith("response.topics[0].partitions") for path, _, _ in
                                     differences(a, c))


def test_ids_are_compared_by_who_is_who():
    """Two members on one side and one member twice on the other differ, whatever the ids are."""
    def described(first, second):
        return ConsumerGroupDescribeResponse(throttle_time_ms=0, groups=[ConsumerGroupDescribeResponse.DescribedGroup(
            group_id="g", members=[ConsumerGroupDescribeResponse.Member(member_id=m, member_epoch=1)
                                   for m in (first, second)])]).to_dict()

    same = normalise(described("x", "x"), Labels())
    two = normalise(described("p", "q"), Labels())
    found = differences(same, two)
    assert found and found[0][0].endswith("member_id") and ("member#1", "member#2") in {f[1:] for f in found}


def test_batches_are_compared_by_their_fields():
    def batch(timestamp):
        builder = RecordBatchBuilder()
        builder.append(b"k", b"v", timestamp=timestamp)
        return builder.build()

    labels = Labels(), Labels()
    same = [normalise({"records": batch(5)}, labels[0]), normalise({"records": batch(5)}, labels[1])]
    assert differences(*same) == []
    later = normalise({"records": batch(6)}, Labels())
    assert [path for path, _, _ in differences(same[0], later)] == ["response.records[0].timestamps"]


def test_loading_answers_are_asked_again_and_excuses_apply_where_given():
    assert is_loading({"topics": [{"error_code": errors.NOT_LEADER_OR_FOLLOWER.code}]})
    assert not is_loading({"error_code": errors.UNKNOWN_TOPIC_OR_PARTITION.code})
    assert differences({"a": 1}, {"a": 2}, allowed=lambda path, left, right: path == "response.a") == []
    assert set(RULES) == {"identifiers", "free-text", "hash-order", "batches", "loading"}


def test_configs_are_compared_where_set_on_the_resource():
    """Each broker lists its own defaults and files' values; what was set on the topic must agree."""
    from kafkaproto.messages import DescribeConfigsResponse as R

    def described(*entries):
        return R(results=[R.DescribeConfigsResult(resource_type=2, resource_name="t", configs=[
            R.DescribeConfigsResourceResult(name=n, value=v, config_source=s) for n, v, s in entries])]).to_dict()

    a = normalise(described(("retention.ms", "1", 1), ("segment.bytes", "9", 5), ("min.insync.replicas", "1", 3)),
                  Labels())
    b = normalise(described(("flush.ms", "7", 4), ("retention.ms", "1", 1)), Labels())
    assert differences(a, b) == []
    c = normalise(described(("retention.ms", "2", 1)), Labels())
    assert [path for path, _, _ in differences(a, c)] == ["response.results[0].configs[0].value"]
