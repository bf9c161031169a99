"""TxnOffsetCommit: offsets a transaction commits for a group, applied only when the transaction commits.

Up to v4 the group must have been added with AddOffsetsToTxn; from v5 (transactions version 2)
it joins the transaction here. From v3 the member and
generation are checked as for OffsetCommit when given, whatever the group's
state (ClassicGroup.validate_commit); a generation named to a group that does
not exist is ILLEGAL_GENERATION.
"""


from ... import errors
from ...messages import ApiKey, TxnOffsetCommitResponse
from ...uuid import Uuid
from ..dispatch import handles
from ..state.transactions import ONGOING, PREPARE_ABORT, PREPARE_COMMIT
from ..state.clock import clock_ms
from ._groups import advance
from ._transactions import transaction

R = TxnOffsetCommitResponse
IMPLICIT_ADD = 5  # the first version whose group joins the transaction without AddOffsetsToTxn (KIP-890)


def _member_error(ctx, request):
    if ctx.version < 3:
        return errors.NONE
    return ctx.state.groups.commit_error(advance(ctx.state), request.group_id, request, ctx.version,
                                         request.generation_id_or_member_epoch, request.member_id,
                                         request.group_instance_id, transactional=True)


@handles(ApiKey.TXN_OFFSET_COMMIT, versions=range(0, 6))
def txn_offset_commit(ctx, request):
    state = ctx.state
    txn, error = transaction(state, request.transactional_id, request.producer_id, request.producer_epoch,
                             ctx.version, fenced_since=3)
    if txn is not None and ctx.version >= IMPLICIT_ADD and txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
        error = errors.CONCURRENT_TRANSACTIONS
    elif txn is not None and ctx.version < IMPLICIT_ADD and (txn.state != ONGOING
                                                            or request.group_id not in txn.groups):
        error = errors.INVALID_TXN_STATE
    if error is errors.NONE:
        error = _member_error(ctx, request)
    topics = []
    pending = {}
    for item in request.topics:
        topic = state.cluster.topics.get(item.name)
        rows = []
        for p in item.partitions:
            code = error
            if code is errors.NONE:
                if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                    code = errors.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    epoch = p.committed_leader_epoch if ctx.version >= 2 else -1
                    pending[(item.name, p.partition_index)] = (p.committed_offset, epoch, p.committed_metadata)
            rows.append(R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code.code))
        topics.append(R.TxnOffsetCommitResponseTopic(name=item.name, topic_id=Uuid.ZERO, partitions=rows))
    if pending:
        txn.begin(clock_ms())  # v5: the group joins the transaction here
        txn.groups.add(request.group_id)
        txn.offsets.setdefault(request.group_id, {}).update(pending)
        state.transactions.save(txn)
    return R(throttle_time_ms=0, topics=topics)
