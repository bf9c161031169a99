"""TxnOffsetCommit: offsets a transaction commits for a group, applied only when the transaction commits.

Up to v4 the group must have been added with AddOffsetsToTxn; from v5 (transactions version 2)
it joins the transaction here (TransactionCoordinator.offsets_error). From v3 the member and
generation are checked as for OffsetCommit when given, whatever the group's
state (ClassicGroup.validate_commit); a generation named to a group that does
not exist is ILLEGAL_GENERATION.
"""

from ... import errors
from ...messages import ApiKey, TxnOffsetCommitResponse
from ...uuid import Uuid
from ..dispatch import handles
from ..state.acls import GROUP, READ, TOPIC, TRANSACTIONAL_ID, WRITE
from ..state.clock import clock_ms
from ._groups import advance

R = TxnOffsetCommitResponse


def _member_error(ctx, request):
    if ctx.version < 3:
        return errors.NONE
    return ctx.state.groups.commit_error(advance(ctx.state), request.group_id, request, ctx.version,
                                         request.generation_id_or_member_epoch, request.member_id,
                                         request.group_instance_id, transactional=True)


@handles(ApiKey.TXN_OFFSET_COMMIT, versions=range(0, 6))
def txn_offset_commit(ctx, request):
    state = ctx.state
    if not ctx.allowed(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        txn, error = None, errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not ctx.allowed(READ, GROUP, request.group_id):
        txn, error = None, errors.GROUP_AUTHORIZATION_FAILED
    else:
        txn, error = state.transactions.offsets_error(request.transactional_id, request.producer_id,
                                                      request.producer_epoch, ctx.version, request.group_id)
    if error is errors.NONE:
        error = _member_error(ctx, request)
    topics = []
    pending = {}
    for item in request.topics:
        topic = state.cluster.topics.get(item.name)
        rows = []
        for p in item.partitions:
            code = error
            if code is errors.NONE and not ctx.allowed(READ, TOPIC, item.name):
                code = errors.TOPIC_AUTHORIZATION_FAILED
            if code is errors.NONE:
                if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                    code = errors.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    epoch = p.committed_leader_epoch if ctx.version >= 2 else -1
                    pending[(item.name, p.partition_index)] = (p.committed_offset, epoch, p.committed_metadata)
            rows.append(R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code.code))
        topics.append(R.TxnOffsetCommitResponseTopic(name=item.name, topic_id=Uuid.ZERO, partitions=rows))
    if pending:
        state.transactions.add_offsets_committed(clock_ms(), txn, request.group_id, pending)
    return R(throttle_time_ms=0, topics=topics)
