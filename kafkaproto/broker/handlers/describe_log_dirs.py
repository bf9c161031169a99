"""DescribeLogDirs (kafka-log-dirs --describe): the broker's one log directory, each partition's bytes in it.

Null topics means every partition; otherwise those asked that exist (others are left out, as Kafka leaves out
what its directories do not hold). The offset lag of a current log is 0. v4+ adds the directory's file system
sizes; v5 says whether it is cordoned (never, here). In a cluster of several brokers each lists the partitions
it holds a replica of (their one shared log: replication is virtual).
"""

import os

from ... import errors
from ...messages import ApiKey, DescribeLogDirsResponse
from ..dispatch import handles
from ..state.acls import CLUSTER, CLUSTER_NAME, DESCRIBE

Result = DescribeLogDirsResponse.DescribeLogDirsResult
Topic, Partition = DescribeLogDirsResponse.DescribeLogDirsTopic, DescribeLogDirsResponse.DescribeLogDirsPartition


@handles(ApiKey.DESCRIBE_LOG_DIRS, versions=range(1, 6))
def describe_log_dirs(ctx, request):
    cluster = ctx.state.cluster
    if not ctx.allowed(DESCRIBE, CLUSTER, CLUSTER_NAME):
        return DescribeLogDirsResponse(throttle_time_ms=0, error_code=errors.CLUSTER_AUTHORIZATION_FAILED.code,
                                       results=[])
    if request.topics is None:
        asked = {name: None for name in cluster.topics}
    else:
        asked = {}
        for item in request.topics:
            asked.setdefault(item.topic, set()).update(item.partitions)
    topics = []
    routed = ctx.state.routed
    for name, indexes in asked.items():
        topic = cluster.topics.get(name)
        if topic is None:
            continue
        partitions = [Partition(partition_index=p.index, partition_size=p.log.size_bytes, offset_lag=0,
                                is_future_key=False)
                      for p in topic.partitions if p.log is not None and (indexes is None or p.index in indexes)
                      and (not routed or ctx.node_id in p.replicas)]
        if partitions:
            topics.append(Topic(name=name, partitions=partitions))
    log_dir = os.path.abspath(ctx.state.config.log_dir)
    try:
        space = os.statvfs(log_dir)
        total, usable = space.f_blocks * space.f_frsize, space.f_bavail * space.f_frsize
    except OSError:
        total = usable = -1
    return DescribeLogDirsResponse(throttle_time_ms=0, error_code=0, results=[
        Result(error_code=0, log_dir=log_dir, topics=topics, total_bytes=total, usable_bytes=usable,
               is_cordoned=False)])
