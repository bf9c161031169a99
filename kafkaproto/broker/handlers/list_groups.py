"""ListGroups: every group, filtered by state (v4+) and type (v5+: "classic" or "consumer")."""

from ... import errors
from ...messages import ApiKey, ListGroupsResponse
from ..dispatch import handles


@handles(ApiKey.LIST_GROUPS, versions=range(0, 6))
def list_groups(ctx, request):
    states = {s.lower() for s in request.states_filter} if ctx.version >= 4 else set()
    types = {t.lower() for t in request.types_filter} if ctx.version >= 5 else set()
    listed = []
    group_ids = set(ctx.state.groups.groups) | set(ctx.state.groups.offsets)
    for group_id in sorted(group_ids):
        group = ctx.state.groups.group(group_id)
        state = group.state if group is not None else "Empty"
        kind = group.kind if group is not None else "classic"
        if states and state.lower() not in states or types and kind not in types:
            continue
        listed.append(ListGroupsResponse.ListedGroup(
            group_id=group_id, protocol_type=(group.protocol_type or "") if group is not None else "",
            group_state=state if ctx.version >= 4 else "", group_type=kind if ctx.version >= 5 else ""))
    return ListGroupsResponse(throttle_time_ms=0, error_code=errors.NONE.code, groups=listed)
