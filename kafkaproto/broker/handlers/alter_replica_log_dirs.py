"""AlterReplicaLogDirs (kafka-reassign-partitions --reassignment-json-file with log_dirs): move replicas to another
log directory. This broker has one (its log.dirs), so a partition asked to move there stays and is answered NONE;
another path is LOG_DIR_NOT_FOUND for each partition, and a partition that does not exist
UNKNOWN_TOPIC_OR_PARTITION. Kafka answers in the order of a Scala hash map; here topics come in the order asked,
each with its partitions in order."""

import os

from ... import errors
from ...messages import ApiKey, AlterReplicaLogDirsResponse
from ..dispatch import handles
from ..state.acls import ALTER, CLUSTER, CLUSTER_NAME

R = AlterReplicaLogDirsResponse


@handles(ApiKey.ALTER_REPLICA_LOG_DIRS, versions=range(1, 3))
def alter_replica_log_dirs(ctx, request):
    state = ctx.state
    here = os.path.abspath(state.config.log_dir)
    allowed = ctx.allowed(ALTER, CLUSTER, CLUSTER_NAME)
    answers = {}
    for directory in request.dirs:
        for item in directory.topics:
            topic = state.cluster.topics.get(item.name)
            for index in item.partitions:
                if not allowed:
                    error = errors.CLUSTER_AUTHORIZATION_FAILED
                elif os.path.abspath(directory.path) != here:
                    error = errors.LOG_DIR_NOT_FOUND
                elif topic is None or not 0 <= index < len(topic.partitions):
                    error = errors.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    error = errors.NONE
                answers[(item.name, index)] = error
    topics = {}
    order = {t: i for i, t in enumerate(dict.fromkeys(t for t, _ in answers))}
    for key in sorted(answers, key=lambda k: (order[k[0]], k[1])):
        topics.setdefault(key[0], []).append(R.AlterReplicaLogDirPartitionResult(partition_index=key[1],
                                                                                 error_code=answers[key].code))
    return R(throttle_time_ms=0, results=[R.AlterReplicaLogDirTopicResult(topic_name=name, partitions=parts)
                                          for name, parts in topics.items()])
