"""DeleteGroups: forget groups that are Empty, with their committed offsets (NON_EMPTY_GROUP otherwise)."""

from ...messages import ApiKey, DeleteGroupsResponse
from ..dispatch import handles
from ..state.acls import DELETE
from ._groups import advance, group_refused


@handles(ApiKey.DELETE_GROUPS, versions=range(0, 3))
def delete_groups(ctx, request):
    advance(ctx.state)
    results = [DeleteGroupsResponse.DeletableGroupResult(group_id=group_id,
                                                         error_code=(group_refused(ctx, group_id, DELETE)
                                                                     or ctx.state.groups.delete(group_id)).code)
               for group_id in request.groups_names]
    return DeleteGroupsResponse(throttle_time_ms=0, results=results)
