"""What ShareFetch and ShareAcknowledge share: the share session a request continues, and acknowledging the
records a member was given (state/shares.py), with Kafka's checks and codes."""

from ... import errors
from ..state.acls import GROUP, READ, TOPIC
from ..state.groups.consumer_group import GroupError
from ..state.shares import RENEW, ShareError

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
NOT_HOSTED = "This server does not host this topic-partition."


class Refused(Exception):
    """A whole request refused: the top-level error."""

    def __init__(self, error, message=None):
        super().__init__(message or error.name)
        self.error = error
        self.message = message


def empty_share_group(ctx, group_id, create=False):
    """The share group whose offsets AlterShareGroupOffsets or DeleteShareGroupOffsets change (made, with
    create, where there is none), or Refused as Kafka words it: an invalid id, the client may not READ it, a group
    of another kind or none, one with members."""
    if not group_id:
        raise Refused(errors.INVALID_GROUP_ID, "The group id is invalid.")
    if not ctx.allowed(READ, GROUP, group_id):
        raise Refused(errors.GROUP_AUTHORIZATION_FAILED)
    coordinator = ctx.state.groups
    try:
        group = coordinator.share.group(group_id, create=True) if create else coordinator.share_group(group_id)
    except GroupError as e:
        raise Refused(e.error, e.message) from None
    if group.members:
        raise Refused(errors.NON_EMPTY_GROUP, "The group is not empty.")
    return group


def continued_session(state, request, node):
    """The share session a request at epoch > 0 or -1 continues on broker node (its epoch moved on, unless it
    closes), or Refused: SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH."""
    session = state.share_sessions.get(request.group_id, request.member_id, node)
    if session is None:
        raise Refused(errors.SHARE_SESSION_NOT_FOUND)
    if request.share_session_epoch != FINAL_EPOCH:
        if session.epoch != request.share_session_epoch:
            raise Refused(errors.INVALID_SHARE_SESSION_EPOCH)
        session.next_epoch()
    return session


def _batches_error(batches, version):
    """INVALID_REQUEST for acknowledgement batches Kafka refuses as written, else None."""
    last_seen = None
    highest = RENEW if version >= 2 else RENEW - 1
    for batch in batches:
        types = batch.acknowledge_types
        if batch.first_offset > batch.last_offset or not types or \
                (len(types) > 1 and len(types) != batch.last_offset - batch.first_offset + 1) or \
                any(not 0 <= t <= highest for t in types) or \
                (last_seen is not None and batch.first_offset < last_seen):
            return errors.INVALID_REQUEST
        last_seen = batch.last_offset
    return None


def acknowledge(ctx, request, topics, now):
    """Apply the acknowledgements of topics (ShareFetch's or ShareAcknowledge's, each partition with its
    acknowledgement_batches): {(topic id, partition): error}, for every partition that carried some. Each
    partition's batches take effect all together or not at all."""
    state = ctx.state
    group_id, member_id = request.group_id, request.member_id
    lock_ms = state.cluster.group_setting(group_id, "share.record.lock.duration.ms")
    limit = state.delivery_limit(group_id)
    renew = state.cluster.group_setting(group_id, "share.renew.acknowledge.enable") if group_id else True
    out = {}
    for item in topics:
        topic = state.cluster.by_id.get(item.topic_id)
        for p in item.partitions:
            batches = p.acknowledgement_batches
            if not batches:
                continue
            key = (item.topic_id, p.partition_index)
            if topic is None:
                out[key] = errors.UNKNOWN_TOPIC_ID
            elif not ctx.allowed(READ, TOPIC, topic.name):
                out[key] = errors.TOPIC_AUTHORIZATION_FAILED
            elif not 0 <= p.partition_index < len(topic.partitions):
                out[key] = errors.UNKNOWN_TOPIC_OR_PARTITION
            elif (error := _batches_error(batches, ctx.version)) is not None:
                out[key] = error
            else:
                share = state.shares.get(group_id, item.topic_id, p.partition_index)
                if share is None:
                    out[key] = errors.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                try:
                    if share.acknowledge(member_id, [(b.first_offset, b.last_offset, b.acknowledge_types)
                                                     for b in batches], limit, lock_ms, now, renew):
                        state.shares.save((group_id, item.topic_id, p.partition_index))
                    out[key] = errors.NONE
                except ShareError as e:
                    out[key] = e.error
    if any(error is errors.NONE for error in out.values()):
        state.changed()  # released records may be fetched by a member waiting for some
    return out
