"""StreamsGroupDescribe (KIP-1071, kafka-streams-groups --describe): a streams group's state, epochs, topology (with
the partitions decided for its internal topics, once ready) and members, each with its current and target tasks.
A group of another kind, or none, is GROUP_ID_NOT_FOUND."""

from ... import errors
from ...messages import ApiKey, StreamsGroupDescribeResponse
from ..dispatch import handles
from ..state.acls import DESCRIBE
from ..state.features import streams_groups_enabled
from ..state.groups.consumer import GroupError
from ._groups import advance, group_refused

R = StreamsGroupDescribeResponse
UNKNOWN_OPERATIONS = -2147483648


def _tasks(tasks):
    return [R.TaskIds(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items()) if ps]


def _assignment(tasks):
    return R.Assignment(active_tasks=_tasks(tasks["active"]), standby_tasks=_tasks(tasks["standby"]),
                        warmup_tasks=_tasks(tasks["warmup"]))


def _info(info, partitions):
    return R.TopicInfo(name=info["name"], partitions=partitions, replication_factor=info["replication_factor"],
                       topic_configs=[R.KeyValue(key=k, value=v) for k, v in sorted(info["configs"])])


def _topology(group):
    topology = group.topology
    if topology is None:
        return None
    decided = group.configured.internal if group.configured is not None and group.configured.ready else {}
    return R.Topology(epoch=topology["epoch"], subtopologies=[R.Subtopology(
        subtopology_id=s["id"], source_topics=sorted(s["source_topics"]),
        repartition_sink_topics=sorted(s["repartition_sink_topics"]),
        state_changelog_topics=[_info(c, decided.get(c["name"], c["partitions"]))
                                for c in sorted(s["changelog_topics"], key=lambda c: c["name"])],
        repartition_source_topics=[_info(r, decided.get(r["name"], r["partitions"]))
                                   for r in sorted(s["repartition_source_topics"], key=lambda r: r["name"])])
        for s in sorted(topology["subtopologies"], key=lambda s: s["id"])])


def _failed(group_id, error, message=None):
    return R.DescribedGroup(group_id=group_id, error_code=error.code, error_message=message, group_state="",
                            group_epoch=0, assignment_epoch=0, topology=None, members=[],
                            authorized_operations=UNKNOWN_OPERATIONS)


@handles(ApiKey.STREAMS_GROUP_DESCRIBE, versions=range(0, 1), enabled=streams_groups_enabled)
def streams_group_describe(ctx, request):
    advance(ctx.state)
    described = [_failed("", errors.INVALID_GROUP_ID) for group_id in request.group_ids if not group_id]
    for group_id in filter(None, request.group_ids):
        if group_refused(ctx, group_id, DESCRIBE):
            described.append(_failed(group_id, errors.GROUP_AUTHORIZATION_FAILED))
            continue
        try:
            group = ctx.state.groups.streams_group(group_id)
        except GroupError as e:
            described.append(_failed(group_id, e.error, e.message))
            continue
        members = [R.Member(
            member_id=m.member_id, member_epoch=m.member_epoch, instance_id=m.instance_id, rack_id=m.rack_id,
            client_id=m.client_id, client_host=m.client_host, topology_epoch=m.topology_epoch,
            process_id=m.process_id,
            user_endpoint=R.Endpoint(host=m.user_endpoint[0], port=m.user_endpoint[1]) if m.user_endpoint else None,
            client_tags=[R.KeyValue(key=k, value=v) for k, v in sorted(m.client_tags.items())], task_offsets=[],
            task_end_offsets=[], assignment=_assignment(m.assigned),
            target_assignment=_assignment(group.target.get(m.member_id, m.assigned)), is_classic=False)
            for m in group.members.values()]
        described.append(R.DescribedGroup(
            group_id=group_id, error_code=0, error_message=None, group_state=group.state,
            group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch, topology=_topology(group),
            members=members, authorized_operations=UNKNOWN_OPERATIONS))
    return R(throttle_time_ms=0, groups=described)
