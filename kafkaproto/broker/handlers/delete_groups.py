"""DeleteGroups: forget groups that are Empty, with their committed offsets (NON_EMPTY_GROUP otherwise)."""

from ... import errors
from ...messages import ApiKey, DeleteGroupsResponse
from ..dispatch import handles
from ._groups import advance


@handles(ApiKey.DELETE_GROUPS, versions=range(0, 3))
def delete_groups(ctx, request):
    advance(ctx.state)
    groups = ctx.state.groups
    results = []
    for group_id in request.groups_names:
        group = groups.group(group_id)
        error = errors.GROUP_ID_NOT_FOUND if group is None else group.deletable()
        if error is errors.NONE:
            groups.delete(group_id)
        results.append(DeleteGroupsResponse.DeletableGroupResult(group_id=group_id, error_code=error.code))
    return DeleteGroupsResponse(throttle_time_ms=0, results=results)
