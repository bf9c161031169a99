"""ReadShareGroupStateSummary: a share partition's state epoch and start offset, and (v1) how many records after
it are done with. A partition without state starts at -1; one that does not exist is UNKNOWN_TOPIC_OR_PARTITION."""

from ... import errors
from ...messages import ApiKey, ReadShareGroupStateSummaryResponse
from ..dispatch import handles
from ..state.features import share_groups_enabled
from ._share_state import NOT_HOSTED, answer, hosted

R = ReadShareGroupStateSummaryResponse


@handles(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, versions=range(0, 2), enabled=share_groups_enabled)
def read_share_group_state_summary(ctx, request):
    def one(topic_id, p):
        if not hosted(ctx.state, topic_id, p.partition):
            return {"error_code": errors.UNKNOWN_TOPIC_OR_PARTITION.code, "error_message": NOT_HOSTED,
                    "state_epoch": 0, "leader_epoch": 0, "start_offset": 0, "delivery_complete_count": -1}
        kept = ctx.state.shares.get(request.group_id, topic_id, p.partition)
        if kept is None:
            return {"error_code": 0, "error_message": None, "state_epoch": 0, "leader_epoch": 0,
                    "start_offset": -1, "delivery_complete_count": -1}
        return {"error_code": 0, "error_message": None, "state_epoch": kept.state_epoch, "leader_epoch": 0,
                "start_offset": kept.shown_start, "delivery_complete_count": kept.shown_complete}

    return answer(ctx, request, R, R.ReadStateSummaryResult, one)
