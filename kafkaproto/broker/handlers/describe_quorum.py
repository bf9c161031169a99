"""DescribeQuorum (kafka-metadata-quorum describe): the metadata log's quorum, which is this broker alone: the
leader and only voter, its log end the high watermark. Asked of any other partition than __cluster_metadata-0,
the partition is UNKNOWN_TOPIC_OR_PARTITION. v2 names the voters' listeners: this broker's own (it has no
separate controller listener)."""

from ... import errors
from ...messages import ApiKey, DescribeQuorumResponse
from ...uuid import Uuid
from ..dispatch import handles
from ..state.acls import CLUSTER, CLUSTER_NAME, DESCRIBE
from ..state.cluster import METADATA_TOPIC

R = DescribeQuorumResponse
LEADER_EPOCH = 1  # the one election the quorum of a single voter ever holds


def _partition(ctx, name, index):
    state = ctx.state
    if (name, index) != (METADATA_TOPIC, 0):
        return R.PartitionData(partition_index=index, error_code=errors.UNKNOWN_TOPIC_OR_PARTITION.code,
                               error_message=errors.UNKNOWN_TOPIC_OR_PARTITION.message, leader_id=0,
                               leader_epoch=0, high_watermark=0, current_voters=[], observers=[])
    end = state.cluster.metadata.log_end_offset
    now = state.now_ms() if ctx.version >= 1 else -1
    return R.PartitionData(partition_index=index, error_code=errors.NONE.code, error_message=None,
                           leader_id=state.node_id, leader_epoch=LEADER_EPOCH, high_watermark=end,
                           current_voters=[R.ReplicaState(replica_id=state.node_id, replica_directory_id=Uuid.ZERO,
                                                          log_end_offset=end, last_fetch_timestamp=now,
                                                          last_caught_up_timestamp=now)],
                           observers=[])


@handles(ApiKey.DESCRIBE_QUORUM, versions=range(0, 3))
def describe_quorum(ctx, request):
    if not ctx.allowed(DESCRIBE, CLUSTER, CLUSTER_NAME):
        return R(error_code=errors.CLUSTER_AUTHORIZATION_FAILED.code, error_message=None, topics=[], nodes=[])
    topics = [R.TopicData(topic_name=t.topic_name, partitions=[_partition(ctx, t.topic_name, p.partition_index)
                                                               for p in t.partitions]) for t in request.topics]
    nodes = []
    described = any(p.error_code == errors.NONE.code for t in topics for p in t.partitions)
    if ctx.version >= 2 and described:  # the voters' listeners, when a voter was described
        listener = ctx.state.advertised[0]
        nodes = [R.Node(node_id=ctx.state.node_id, listeners=[
            R.Listener(name=listener.name, host=listener.host, port=listener.port)])]
    return R(error_code=errors.NONE.code, error_message=None, topics=topics, nodes=nodes)
