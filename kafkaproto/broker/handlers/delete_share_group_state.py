"""DeleteShareGroupState: forget share partitions' state (one without state is deleted already); a partition that
does not exist is UNKNOWN_TOPIC_OR_PARTITION."""

from ... import errors
from ...messages import ApiKey, DeleteShareGroupStateResponse
from ..dispatch import handles
from ..state.features import share_groups_enabled
from ._share_state import NOT_HOSTED, answer, hosted

R = DeleteShareGroupStateResponse


@handles(ApiKey.DELETE_SHARE_GROUP_STATE, versions=range(0, 1), enabled=share_groups_enabled)
def delete_share_group_state(ctx, request):
    def one(topic_id, p):
        if not hosted(ctx.state, topic_id, p.partition):
            return {"error_code": errors.UNKNOWN_TOPIC_OR_PARTITION.code, "error_message": NOT_HOSTED}
        ctx.state.shares.delete(request.group_id, topic_id, {p.partition})
        return {"error_code": 0, "error_message": None}

    return answer(ctx, request, R, R.DeleteStateResult, one)
