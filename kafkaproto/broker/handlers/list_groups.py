"""ListGroups: every group, filtered by state (v4+) and by type (v5+: "classic" or "consumer"), without regard
to case. With an authorizer, DESCRIBE on the cluster lists every group, else those the client may DESCRIBE."""

from ... import errors
from ...messages import ApiKey, ListGroupsResponse
from ..dispatch import handles
from ..state.acls import CLUSTER, CLUSTER_NAME, DESCRIBE, GROUP
from ._groups import advance


@handles(ApiKey.LIST_GROUPS, versions=range(0, 6))
def list_groups(ctx, request):
    advance(ctx.state)
    states = {s.strip().lower() for s in request.states_filter} if ctx.version >= 4 else set()
    types = {t.strip().lower() for t in request.types_filter} if ctx.version >= 5 else set()
    listed = []
    everything = ctx.allowed(DESCRIBE, CLUSTER, CLUSTER_NAME)
    for group_id, group in ctx.state.groups.listed():
        if not everything and not ctx.allowed(DESCRIBE, GROUP, group_id):
            continue
        if states and group.state.lower() not in states or types and group.kind not in types:
            continue
        listed.append(ListGroupsResponse.ListedGroup(
            group_id=group_id, protocol_type=group.protocol_type or "",
            group_state=group.state if ctx.version >= 4 else "", group_type=group.kind if ctx.version >= 5 else ""))
    return ListGroupsResponse(throttle_time_ms=0, error_code=errors.NONE.code, groups=listed)
