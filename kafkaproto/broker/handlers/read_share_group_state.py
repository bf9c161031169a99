"""ReadShareGroupState: a share partition's state as the share coordinator holds it (state epoch, start offset,
and its records in flight as batches of state and delivery count: state/shares.py's shown state). A partition
without state is INVALID_REQUEST, as from Kafka."""

from ... import errors
from ...messages import ApiKey, ReadShareGroupStateResponse
from ..dispatch import handles
from ..state.features import share_groups_enabled
from ._share_state import answer

R = ReadShareGroupStateResponse


@handles(ApiKey.READ_SHARE_GROUP_STATE, versions=range(0, 1), enabled=share_groups_enabled)
def read_share_group_state(ctx, request):
    def one(topic_id, p):
        kept = ctx.state.shares.get(request.group_id, topic_id, p.partition)
        if kept is None:
            return {"error_code": errors.INVALID_REQUEST.code,
                    "error_message": "Read operation on uninitialized share partition not allowed.",
                    "state_epoch": 0, "start_offset": 0, "state_batches": []}
        return {"error_code": 0, "error_message": None, "state_epoch": kept.state_epoch,
                "start_offset": kept.shown_start, "state_batches": [
                    R.StateBatch(first_offset=a, last_offset=b, delivery_state=s, delivery_count=c)
                    for a, b, s, c in kept.shown_batches]}

    return answer(ctx, request, R, R.ReadStateResult, one)
