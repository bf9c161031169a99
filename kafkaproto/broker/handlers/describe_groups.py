"""DescribeGroups: state, protocol and members of each group.

While a group is Stable its protocol name and each member's metadata for it
are shown; in other states neither (the assignments of the last generation
are). A group that does not exist is described as Dead; from v6 it is also
GROUP_ID_NOT_FOUND, as Kafka answers.
"""

from ... import errors
from ...messages import ApiKey, DescribeGroupsResponse
from ..dispatch import handles
from ..state.acls import DESCRIBE
from ..state.groups import DEAD
from ._groups import advance, group_refused

R = DescribeGroupsResponse
UNKNOWN_OPERATIONS = -2147483648


@handles(ApiKey.DESCRIBE_GROUPS, versions=range(0, 7))
def describe_groups(ctx, request):
    advance(ctx.state)
    described = []
    for group_id in request.groups:
        if group_refused(ctx, group_id, DESCRIBE):
            described.append(R.DescribedGroup(
                error_code=errors.GROUP_AUTHORIZATION_FAILED.code, group_id=group_id, group_state="",
                error_message=None, protocol_type="", protocol_data="", members=[],
                authorized_operations=UNKNOWN_OPERATIONS))
            continue
        group = ctx.state.groups.group(group_id)
        if group is None or group.kind != "classic":
            error = errors.GROUP_ID_NOT_FOUND if ctx.version >= 6 else errors.NONE
            message = f"Group {group_id} not found." if group is None else \
                f"Group {group_id} is not a classic group."  # a consumer group is Dead to this API, as in Kafka
            described.append(R.DescribedGroup(error_code=error.code, group_id=group_id, group_state=DEAD,
                                              error_message=message if ctx.version >= 6 else None,
                                              protocol_type="", protocol_data="", members=[],
                                              authorized_operations=UNKNOWN_OPERATIONS))
            continue
        state, protocol_type, protocol_name, members = group.describe()
        described.append(R.DescribedGroup(
            error_code=errors.NONE.code, group_id=group_id, group_state=state, protocol_type=protocol_type,
            protocol_data=protocol_name, authorized_operations=UNKNOWN_OPERATIONS, members=[
                R.DescribedGroupMember(member_id=m.member_id,
                                       group_instance_id=m.instance_id if ctx.version >= 4 else None,
                                       client_id=m.client_id, client_host=m.client_host, member_metadata=metadata,
                                       member_assignment=m.assignment)
                for m, metadata in members]))
    return R(throttle_time_ms=0, groups=described)
