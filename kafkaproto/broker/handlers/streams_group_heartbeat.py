"""StreamsGroupHeartbeat (KIP-1071): a Kafka Streams instance joins its application's group with the topology,
stays in it, and is given tasks (state/groups/streams.py decides, with Kafka's errors, messages and statuses).

As Kafka's broker does before its coordinator: a topology naming Kafka's internal topics, or names no topic may
have, is STREAMS_INVALID_TOPOLOGY; one naming topics the client may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED.
After the answer, the internal topics the topology needs and the cluster lacks (repartition and changelog topics)
are created, with the configs and partitions the topology says, as the client itself may (CREATE); meanwhile the
answer says MISSING_INTERNAL_TOPICS. What the heartbeat changed of the group is written before the answer.
"""

import logging

from ... import errors
from ...messages import ApiKey, StreamsGroupHeartbeatResponse
from ..topic_configs import topic_config_error
from ..dispatch import handles
from ..state import LogError, topic_name_error
from ..state.acls import CLUSTER, CLUSTER_NAME, CREATE, DESCRIBE, TOPIC
from ..state.cluster import INTERNAL_TOPICS
from ..state.features import streams_groups_enabled
from ..state.groups.consumer import GroupError
from ..state.groups.streams import MISSING_INTERNAL_TOPICS
from ._groups import advance, group_refused

log = logging.getLogger("kafkaproto.broker")
R = StreamsGroupHeartbeatResponse


def _refused(error, message=None):
    return R(throttle_time_ms=0, error_code=error.code, error_message=message, member_id="", member_epoch=0,
             heartbeat_interval_ms=0, status=[])


def _topology_topics(topology):
    names = []
    for s in topology.subtopologies:
        names += [*s.source_topics, *s.repartition_sink_topics, *(t.name for t in s.repartition_source_topics),
                  *(t.name for t in s.state_changelog_topics)]
    return list(dict.fromkeys(names))


def _tasks(tasks):
    return [R.TaskIds(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items()) if ps]


def _create(ctx, wanted):
    """Create the internal topics a topology needs, as far as the client may: names of those not created, with
    why."""
    state = ctx.state
    everywhere = ctx.allowed(CREATE, CLUSTER, CLUSTER_NAME)
    failed = []
    for name, partitions, _, configs in wanted:
        if not everywhere and not ctx.allowed(CREATE, TOPIC, name):
            failed.append(f"{name} (not authorized to CREATE)")
            continue
        kept = {k: v for k, v in configs.items() if not topic_config_error(k, v)}
        if len(kept) != len(configs):
            log.info("streams internal topic %s: configs this broker does not take are left out: %s", name,
                     sorted(set(configs) - set(kept)))
        try:
            state.cluster.create_topic(name, partitions, kept)
        except (OSError, LogError) as e:
            failed.append(f"{name} ({e})")
    if len(failed) < len(wanted):
        state.changed()
    return failed


@handles(ApiKey.STREAMS_GROUP_HEARTBEAT, versions=range(0, 1), enabled=streams_groups_enabled)
def streams_group_heartbeat(ctx, request):
    refused = group_refused(ctx, request.group_id)
    if refused:
        return _refused(refused)
    if request.topology is not None:
        names = _topology_topics(request.topology)
        internal = [n for n in names if n in INTERNAL_TOPICS]
        if internal:
            return _refused(errors.STREAMS_INVALID_TOPOLOGY, "Use of Kafka internal topics "
                            f"{', '.join(internal)} in a Kafka Streams topology is prohibited.")
        invalid = [n for n in names if topic_name_error(n)]
        if invalid:
            return _refused(errors.STREAMS_INVALID_TOPOLOGY,
                            f"Topic names {', '.join(invalid)} are not valid topic names.")
        if any(not ctx.allowed(DESCRIBE, TOPIC, n) for n in names):
            return _refused(errors.TOPIC_AUTHORIZATION_FAILED)
    try:
        beat = ctx.state.groups.streams_heartbeat(advance(ctx.state), request, ctx.header.client_id or "",
                                                  ctx.client_host)
    except GroupError as e:
        return _refused(e.error, e.message)
    statuses = beat.statuses
    if beat.create:
        failed = _create(ctx, beat.create)
        if failed:
            statuses = [(code, detail + "; Creation failed: " + ", ".join(failed))
                        if code == MISSING_INTERNAL_TOPICS else (code, detail) for code, detail in statuses]
    ctx.state.changed()
    tasks = beat.tasks
    endpoints = None
    if beat.endpoints is not None:
        endpoints = [R.EndpointToPartitions(
            user_endpoint=R.Endpoint(host=host, port=port),
            active_partitions=[R.TopicPartition(topic=t, partitions=sorted(ps)) for t, ps in sorted(active.items())],
            standby_partitions=[R.TopicPartition(topic=t, partitions=sorted(ps)) for t, ps in sorted(standby.items())])
            for (host, port), active, standby in beat.endpoints]
    return R(throttle_time_ms=0, error_code=0, error_message=None, member_id=beat.member_id,
             member_epoch=beat.member_epoch, heartbeat_interval_ms=beat.interval_ms,
             status=[R.Status(status_code=code, status_detail=detail) for code, detail in statuses],
             active_tasks=_tasks(tasks["active"]) if tasks is not None else None,
             standby_tasks=_tasks(tasks["standby"]) if tasks is not None else None,
             warmup_tasks=_tasks(tasks["warmup"]) if tasks is not None else None,
             endpoint_information_epoch=beat.endpoint_epoch, partitions_by_user_endpoint=endpoints)
