"""InitializeShareGroupState: start a group's share partitions over at a state epoch and start offset (-1: where
share.auto.offset.reset says, at the first fetch). An older state epoch than the one kept is FENCED_STATE_EPOCH."""

from ... import errors
from ...messages import ApiKey, InitializeShareGroupStateResponse
from ..dispatch import handles
from ..state.features import share_groups_enabled
from ._share_state import NOT_HOSTED, answer, hosted

R = InitializeShareGroupStateResponse
FENCED = "The share coordinator rejected the request because the share-group state epoch did not match."


@handles(ApiKey.INITIALIZE_SHARE_GROUP_STATE, versions=range(0, 1), enabled=share_groups_enabled)
def initialize_share_group_state(ctx, request):
    shares = ctx.state.shares

    def one(topic_id, p):
        if not hosted(ctx.state, topic_id, p.partition) or p.partition < 0:
            return {"error_code": errors.UNKNOWN_TOPIC_OR_PARTITION.code, "error_message": NOT_HOSTED}
        kept = shares.get(request.group_id, topic_id, p.partition)
        if kept is not None and kept.state_epoch > p.state_epoch:
            return {"error_code": errors.FENCED_STATE_EPOCH.code, "error_message": FENCED}
        shares.initialize(request.group_id, {topic_id: [p.partition]}, p.state_epoch, start=p.start_offset,
                          again=True)
        return {"error_code": 0, "error_message": None}

    return answer(ctx, request, R, R.InitializeStateResult, one)
