"""DeleteGroups: forget groups that have no members, with their committed offsets."""

from ... import errors
from ...messages import ApiKey, DeleteGroupsResponse
from ..dispatch import handles


@handles(ApiKey.DELETE_GROUPS, versions=range(0, 3))
def delete_groups(ctx, request):
    groups = ctx.state.groups
    results = []
    for group_id in request.groups_names:
        group = groups.group(group_id)
        if group is None and group_id not in groups.offsets:
            error = errors.GROUP_ID_NOT_FOUND
        elif group is not None and group.members:
            error = errors.NON_EMPTY_GROUP
        else:
            error = errors.NONE
            groups.delete(group_id)
        results.append(DeleteGroupsResponse.DeletableGroupResult(group_id=group_id, error_code=error.code))
    return DeleteGroupsResponse(throttle_time_ms=0, results=results)
