"""Classic members in KIP-848 consumer groups, and groups moving between the two protocols (KIP-848's online
migration), as Kafka 4.3's group coordinator does it.

A classic group whose members speak the consumer protocol becomes a consumer group when a KIP-848 member joins
it (if group.consumer.migration.policy allows an upgrade); a consumer group whose only members left use the
classic protocol becomes a classic group again (if it allows a downgrade). Meanwhile a consumer group answers
its classic members' JoinGroup, SyncGroup, Heartbeat and LeaveGroup itself: each takes part in the broker's
assignment, with its member epoch as its generation, and gets its partitions in the consumer protocol's bytes.
"""

from .... import errors
from ....uuid import Uuid
from .classic import ClassicGroup, JoinResult, SyncResult
from .classic import Member as ClassicMember
from .consumer_group import (UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS, ConsumerGroup, ConsumerMember,
                             GroupError)
from .embedded import MalformedProtocol, read_assignment, read_subscription, write_assignment
from .reconcile import Owned


class ClassicMembers:
    """The part of ConsumerCoordinator that serves classic members and converts groups."""

    def _may(self, direction):
        policy = self.config["group.consumer.migration.policy"].lower()
        return policy in ("bidirectional", direction)

    def upgrade(self, classic, now):
        """A classic group whose members speak the consumer protocol becomes a consumer group when a KIP-848
        member joins it: its generation is the group's epoch, each member keeps what it was assigned."""
        group_id = classic.group_id

        def refuse(why):
            return GroupError(errors.GROUP_ID_NOT_FOUND,
                              f"Cannot upgrade classic group {group_id} to consumer group because {why}.")

        if not self._may("upgrade"):
            raise refuse("online upgrade is disabled")
        if classic.protocol_type != "consumer":
            raise refuse("the group does not use the consumer embedded protocol")
        if len(classic.members) > self.config["group.consumer.max.size"]:
            raise refuse("the group size exceeds the consumer group maximum size")
        group = ConsumerGroup(group_id)
        group.group_epoch = group.assignment_epoch = classic.generation  # the next assignment is made at once
        for old in classic.members.values():
            try:
                subscription = read_subscription(old.metadata(classic.protocol_name))
                assigned, user_data = read_assignment(old.assignment)
            except MalformedProtocol:
                raise refuse("the embedded consumer protocol is malformed") from None
            if user_data:
                raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer "
                                 "group because an unsupported custom assignor is in use. Please refer to the "
                                 "documentation or switch to a default assignor before re-attempting the upgrade.")
            member = ConsumerMember(old.member_id)
            member.instance_id, member.rack_id = old.instance_id, subscription.rack_id
            member.member_epoch = member.previous_epoch = classic.generation
            member.rebalance_timeout_ms = old.rebalance_timeout_ms
            member.client_id, member.client_host = old.client_id, old.client_host
            member.subscribed_names = tuple(dict.fromkeys(subscription.topics))
            member.assigned = self._by_topic_id(assigned, classic.generation)
            member.classic = (old.session_timeout_ms, list(old.protocols), subscription.version)
            member.session_deadline = now + old.session_timeout_ms
            group.put(member)
            group.target[member.member_id] = {t: set(p) for t, p in member.assigned.items()}
        group.metadata_hash = self._metadata_hash(group, group.members.values())
        classic.abandon()
        return group

    def _by_topic_id(self, by_name, epoch):
        out = {}
        for name, parts in by_name.items():
            topic = self.cluster.topics.get(name)
            if topic is not None and parts:
                out[topic.topic_id] = {p: epoch for p in parts}
        return out

    def _downgrade(self, group, now):
        """The classic group that takes over the classic-protocol members a consumer group has left."""
        members = []
        for m in group.members.values():
            session_ms, protocols, version = m.classic
            members.append(ClassicMember(m.member_id, m.instance_id, m.client_id, m.client_host, session_ms,
                                         m.rebalance_timeout_ms, "consumer", protocols,
                                         write_assignment(version, self._by_name(m.assigned))))
        return ClassicGroup.adopt(group.group_id, self.config, now, group.group_epoch, members)

    def _by_name(self, assigned):
        out = {}
        for topic_id, parts in assigned.items():
            topic = self.cluster.by_id.get(topic_id)
            if topic is not None:
                out[topic.name] = sorted(parts)
        return out

    def classic_join(self, group, now, request):
        """A JoinGroup (classic protocol) to a consumer group with members: the member takes part in KIP-848's
        assignment, and is answered at once with its epoch as the generation (it leads nothing; SyncGroup
        brings the broker's assignment)."""
        names = [name for name, _ in request.protocols]
        if request.protocol_type != "consumer" or not names or not any(
                all(n in {p for p, _ in m.classic[1]} for m in group.members.values() if m.uses_classic_protocol)
                for n in names):
            return JoinResult(errors.INCONSISTENT_GROUP_PROTOCOL, member_id=request.member_id)
        limit = self.config["group.consumer.max.size"]
        if len(group.members) >= limit and request.member_id not in group.members:
            return JoinResult(errors.GROUP_MAX_SIZE_REACHED, member_id=request.member_id)
        member_id = request.member_id or str(Uuid.random())
        if request.require_known_member_id and not request.member_id:
            return JoinResult(errors.MEMBER_ID_REQUIRED, member_id=member_id)
        if request.instance_id is not None and request.member_id:
            # A static member that names itself must be the one of its instance id, as Kafka checks.
            existing_id = group.static.get(request.instance_id)
            if existing_id is None:
                return JoinResult(errors.UNKNOWN_MEMBER_ID, member_id=request.member_id)
            if existing_id != request.member_id:
                return JoinResult(errors.FENCED_INSTANCE_ID, member_id=request.member_id)
        if request.instance_id is not None:
            existing_id = group.static.get(request.instance_id)
            if existing_id is not None and existing_id != member_id:
                replaced = group.members[existing_id].copy()
                replaced.member_id = member_id
                target = group.target.pop(existing_id, None)
                group.drop(existing_id)
                if target is not None:
                    group.target[member_id] = target
                group.put(replaced)
        member = group.members.get(member_id)
        if member is None:
            if request.member_id and request.instance_id is None:
                return JoinResult(errors.UNKNOWN_MEMBER_ID, member_id=request.member_id)
            member = ConsumerMember(member_id)
        try:
            subscription = read_subscription(request.protocols[0][1])
        except MalformedProtocol:
            return JoinResult(errors.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
        updated = member.copy()
        if request.instance_id is not None:  # as Kafka's maybeUpdateInstanceId: a join without one keeps it
            updated.instance_id = request.instance_id
        if subscription.rack_id is not None:
            updated.rack_id = subscription.rack_id
        updated.rebalance_timeout_ms = request.rebalance_timeout_ms
        updated.client_id, updated.client_host = request.client_id, request.client_host
        updated.subscribed_names = tuple(dict.fromkeys(subscription.topics))
        updated.regex = ""
        updated.classic = (request.session_timeout_ms, list(request.protocols), subscription.version)
        names_changed = set(updated.subscribed_names) != set(member.subscribed_names)
        others = [m for m in group.members.values() if m.member_id != member_id]
        metadata_hash = self._metadata_hash(group, others + [updated])
        if names_changed or metadata_hash != group.metadata_hash:
            group.group_epoch += 1
            group.metadata_hash = metadata_hash
        if group.assignment_epoch < group.group_epoch and self._may_assign(group, now):
            self._assign(group, {**group.members, member_id: updated}, now)
        owned = [Owned(self.cluster.topics[name].topic_id, parts) for name, parts in subscription.owned
                 if name in self.cluster.topics]
        updated = self._reconcile(group, updated, group.assignment_epoch, group.target.get(member_id, {}),
                                  names_changed, owned)
        updated.session_deadline = now + request.session_timeout_ms
        group.put(updated)
        return JoinResult(errors.NONE, member_id=member_id, generation=updated.member_epoch,
                          protocol_type="consumer", protocol_name=names[0], leader="")

    def _classic_member(self, group, member_id, instance_id):
        if instance_id is not None:
            known = group.static.get(instance_id)
            if known is None:
                raise GroupError(errors.UNKNOWN_MEMBER_ID)
            if known != member_id:
                raise GroupError(errors.FENCED_INSTANCE_ID)
        member = group.members.get(member_id)
        if member is None or not member.uses_classic_protocol:
            raise GroupError(errors.UNKNOWN_MEMBER_ID)
        return member

    def classic_sync(self, group, now, member_id, instance_id, generation, protocol_type, protocol_name):
        """SyncGroup from a classic member of a consumer group: the broker's assignment, in the consumer
        protocol's bytes."""
        try:
            member = self._classic_member(group, member_id, instance_id)
        except GroupError as e:
            return SyncResult(e.error)
        if generation != member.member_epoch:
            return SyncResult(errors.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != "consumer") or (
                protocol_name is not None and protocol_name not in {n for n, _ in member.classic[1]}):
            return SyncResult(errors.INCONSISTENT_GROUP_PROTOCOL)
        if group.group_epoch > member.member_epoch and member.state != UNREVOKED_PARTITIONS:
            return SyncResult(errors.REBALANCE_IN_PROGRESS)
        member.session_deadline = now + member.classic[0]
        return SyncResult(errors.NONE, protocol_type="consumer", protocol_name=protocol_name or member.classic[1][0][0],
                          assignment=write_assignment(member.classic[2], self._by_name(member.assigned)))

    def classic_heartbeat(self, group, now, member_id, instance_id, generation):
        """Heartbeat from a classic member of a consumer group: REBALANCE_IN_PROGRESS when it must join again to
        move toward its target."""
        try:
            member = self._classic_member(group, member_id, instance_id)
        except GroupError as e:
            return e.error
        if generation != member.member_epoch:
            return errors.ILLEGAL_GENERATION
        member.session_deadline = now + member.classic[0]
        target = group.target.get(member_id, {})
        released = any(group.owner_epoch(t, p) == -1 for t, parts in target.items() for p in parts
                       if p not in member.assigned.get(t, {}))
        if member.member_epoch < group.group_epoch or member.state == UNREVOKED_PARTITIONS or (
                member.state == UNRELEASED_PARTITIONS and released):
            return errors.REBALANCE_IN_PROGRESS
        return errors.NONE

    def classic_leave(self, group, now, leaving):
        """LeaveGroup to a consumer group, from classic members or an admin (by instance id): [error] in order."""
        results, gone = [], []
        for member_id, instance_id in leaving:
            if instance_id is None:
                error = errors.NONE if member_id in group.members else errors.UNKNOWN_MEMBER_ID
                found = member_id
            else:
                found = group.static.get(instance_id)
                error = errors.UNKNOWN_MEMBER_ID if found is None else (
                    errors.FENCED_INSTANCE_ID if member_id and member_id != found else errors.NONE)
            if error is errors.NONE:
                gone.append(found)
            results.append(error)
        if gone:
            self.fence(group, gone, now)
        return results
