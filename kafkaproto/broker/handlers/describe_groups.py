"""DescribeGroups: state, protocol and members (with their metadata and assignments) of each group.

An unknown group is described as Dead; from v6 it is also GROUP_ID_NOT_FOUND, as Kafka answers.
"""

from ... import errors
from ...messages import ApiKey, DescribeGroupsResponse
from ..dispatch import handles
from ..state.groups import STABLE

UNKNOWN_OPERATIONS = -2147483648


@handles(ApiKey.DESCRIBE_GROUPS, versions=range(0, 7))
def describe_groups(ctx, request):
    described = []
    for group_id in request.groups:
        group = ctx.state.groups.group(group_id)
        if group is not None and group.kind != "classic":  # Kafka describes another kind of group as Dead
            error = errors.GROUP_ID_NOT_FOUND if ctx.version >= 6 else errors.NONE
            described.append(DescribeGroupsResponse.DescribedGroup(
                error_code=error.code, group_id=group_id,
                error_message=f"Group {group_id} is not a classic group." if ctx.version >= 6 else None,
                group_state="Dead", protocol_type="", protocol_data="", members=[],
                authorized_operations=UNKNOWN_OPERATIONS))
            continue
        if group is None and group_id not in ctx.state.groups.offsets:
            error = errors.GROUP_ID_NOT_FOUND if ctx.version >= 6 else errors.NONE
            described.append(DescribeGroupsResponse.DescribedGroup(
                error_code=error.code, group_id=group_id, group_state="Dead", protocol_type="", protocol_data="",
                members=[], authorized_operations=UNKNOWN_OPERATIONS))
            continue
        members = []
        if group is not None:
            for m in sorted(group.members.values(), key=lambda m: m.join_order):
                members.append(DescribeGroupsResponse.DescribedGroupMember(
                    member_id=m.member_id, group_instance_id=m.instance_id if ctx.version >= 4 else None,
                    client_id=m.client_id, client_host=m.client_host, member_metadata=group.metadata_of(m),
                    member_assignment=m.assignment if group.state == STABLE else b""))
        described.append(DescribeGroupsResponse.DescribedGroup(
            error_code=errors.NONE.code, group_id=group_id, group_state=group.state if group else "Empty",
            protocol_type=(group.protocol_type or "") if group else "",
            protocol_data=(group.protocol_name or "") if group else "", members=members,
            authorized_operations=UNKNOWN_OPERATIONS))
    return DescribeGroupsResponse(throttle_time_ms=0, groups=described)
