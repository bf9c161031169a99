"""WriteShareGroupState: what a share partition's leader changed (its start offset, -1 for unchanged, and batches
of records' state and delivery count) merged into the kept state. A partition without state is INVALID_REQUEST,
an older state epoch FENCED_STATE_EPOCH, as from Kafka; so are batches that run backwards, or reach further past
the start than any partition keeps records in flight (state/shares.py's MAX_WRITTEN_SPAN)."""

from ... import errors
from ...messages import ApiKey, WriteShareGroupStateResponse
from ..dispatch import handles
from ..state.features import share_groups_enabled
from ..state.shares import ShareError
from ._share_state import answer

R = WriteShareGroupStateResponse
FENCED = "The share coordinator rejected the request because the share-group state epoch did not match."


@handles(ApiKey.WRITE_SHARE_GROUP_STATE, versions=range(0, 2), enabled=share_groups_enabled)
def write_share_group_state(ctx, request):
    shares = ctx.state.shares

    def one(topic_id, p):
        kept = shares.get(request.group_id, topic_id, p.partition)
        if kept is None:
            return {"error_code": errors.INVALID_REQUEST.code,
                    "error_message": "Write operation on uninitialized share partition not allowed."}
        if p.state_epoch < kept.state_epoch:
            return {"error_code": errors.FENCED_STATE_EPOCH.code, "error_message": FENCED}
        try:
            kept.merge(p.start_offset, [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                                        for b in p.state_batches])
        except ShareError as e:
            return {"error_code": e.error.code, "error_message": "The state batches cannot be written."}
        shares.save((request.group_id, topic_id, p.partition), leader_epoch=p.leader_epoch)
        return {"error_code": 0, "error_message": None}

    response = answer(ctx, request, R, R.WriteStateResult, one)
    ctx.state.changed()
    return response
