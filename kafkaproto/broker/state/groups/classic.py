"""The classic group protocol's coordinator (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), as Kafka 4.3 runs it.

A group moves between five states:

    Empty --join--> PreparingRebalance --every member joined, or time up--> CompletingRebalance
    CompletingRebalance --the leader's SyncGroup--> Stable
    Stable or CompletingRebalance --a join with news, a leave, a member lost--> PreparingRebalance
    PreparingRebalance --nobody left--> Empty            (Dead: a group that no longer exists)

Requests that must wait (a JoinGroup until the rebalance completes, a
follower's SyncGroup until the leader's arrives) leave a Waiter with the
group; the group fills in its result when it moves on, and the handler,
asked again, answers with it. Time only passes through the ``now`` each
call is given (milliseconds of the coordinator's clock): ``tick(now)`` fires what fell due
(session timeouts, rebalance timeouts, the initial rebalance delay, members
that never sent SyncGroup), in order. Nothing here does I/O.

What Kafka writes of a group to its offsets log, this group keeps in ``kept`` (a
KeptGeneration): the generation, protocol, leader and members with their
assignments, as of the moment a generation became stable (or the group
emptied, or a static member took its old self's place in a stable group).
stored.py writes it and builds the group again from it at start-up
(``loaded``); in between, a rebalance under way is not kept, as in Kafka.

Where Kafka leaves a choice to its hash maps' order (which member leads when
the leader is gone, the order members are listed in), this group takes the
longest-standing member; a tie between protocols is broken as Java's HashMap
of protocol names would order them, since that decides what every client sees.
"""

import uuid
from typing import NamedTuple

from .... import errors
from .assignors import java_order, string_hash

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"
# Kafka's classicGroupNewMemberJoinTimeoutMs: how long a new member's first JoinGroup may wait.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


class JoinResult(NamedTuple):
    error: errors.ErrorCode
    member_id: str = ""
    generation: int = -1
    protocol_type: str = None
    protocol_name: str = None
    leader: str = ""
    members: tuple = ()  # (member id, group instance id, metadata): the leader's, else empty
    skip_assignment: bool = False


class SyncResult(NamedTuple):
    error: errors.ErrorCode
    protocol_type: str = None
    protocol_name: str = None
    assignment: bytes = b""


class Waiter:
    """A JoinGroup or SyncGroup request parked with the group; the group sets result once."""

    __slots__ = ("result",)

    def __init__(self):
        self.result = None

    def complete(self, result):
        if self.result is None:
            self.result = result


class KeptMember(NamedTuple):
    """A member as a stable generation keeps it (Kafka's GroupMetadataValue member)."""
    member_id: str
    instance_id: str  # None for a dynamic member
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple  # ((name, metadata)) in the member's order of preference
    assignment: bytes


class KeptGeneration(NamedTuple):
    """What a group keeps across a restart: its last stable (or empty) generation."""
    generation: int
    protocol_type: str
    protocol_name: str
    leader: str
    members: tuple  # (KeptMember), oldest first


class JoinRequest(NamedTuple):
    member_id: str
    instance_id: str  # None for a dynamic member
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list  # [(name, metadata)] in the member's order of preference
    require_known_member_id: bool  # JoinGroup v4+ (KIP-394)
    can_skip_assignment: bool  # JoinGroup v9+ (KIP-814)


class Member:
    __slots__ = ("member_id", "instance_id", "client_id", "client_host", "session_timeout_ms",
                 "rebalance_timeout_ms", "protocol_type", "protocols", "assignment", "join_waiter", "sync_waiter",
                 "is_new")

    def __init__(self, member_id, instance_id, client_id, client_host, session_timeout_ms, rebalance_timeout_ms,
                 protocol_type, protocols, assignment=b""):
        self.member_id = member_id
        self.instance_id = instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment = assignment
        self.join_waiter = None  # set while its JoinGroup waits for the rebalance
        self.sync_waiter = None  # set while its SyncGroup waits for the leader's
        self.is_new = False  # joined for the first time in the rebalance under way

    def metadata(self, protocol_name):
        return next((meta for name, meta in self.protocols if name == protocol_name), b"")

    def vote(self, candidates):
        return next(name for name, _ in self.protocols if name in candidates)

    def satisfied_heartbeat(self):
        """A member waiting in JoinGroup or SyncGroup needs no heartbeat, unless it is new."""
        return not self.is_new and (self.join_waiter is not None or self.sync_waiter is not None)


class ClassicGroup:
    kind = "classic"

    def __init__(self, group_id, config):
        self.group_id = group_id
        self.config = config
        self.state = EMPTY
        self.previous_state = DEAD
        self.generation = 0
        self.protocol_type = None
        self.protocol_name = None
        self.leader = None
        self.members = {}  # member id -> Member, oldest first
        self.static = {}  # group instance id -> member id
        self.pending_join = set()  # ids given with MEMBER_ID_REQUIRED that have not joined with them yet
        self.pending_sync = set()  # members of this generation that have not sent SyncGroup yet
        self.new_member_added = False  # during the initial rebalance: extend the delay
        self.timers = {}  # name -> (deadline, action(now)); see tick
        self.kept = None  # the KeptGeneration written to the log (stored.py); None: nothing to keep yet

    # ---- time ----------------------------------------------------------------------------------------------

    def _schedule(self, name, at, action):
        self.timers[name] = (at, action)

    def _cancel(self, name):
        self.timers.pop(name, None)

    def next_deadline(self):
        return min((at for at, _ in self.timers.values()), default=None)

    def fire_next(self, now):
        """Run the earliest timer due by now, at its own time; False when none is due."""
        due = min(((at, name) for name, (at, _) in self.timers.items() if at <= now), key=lambda d: d[0],
                  default=None)
        if due is None:
            return False
        at, action = self.timers.pop(due[1])
        action(at)
        return True

    def _heartbeat_due(self, member_id, at):
        self._schedule(("heartbeat", member_id), at, lambda now: self._heartbeat_expired(now, member_id))

    def _reschedule_heartbeat(self, member, now, timeout_ms=None):
        self._heartbeat_due(member.member_id, now + (member.session_timeout_ms if timeout_ms is None
                                                     else timeout_ms))

    # ---- membership ---------------------------------------------------------------------------------------

    def rebalance_timeout_ms(self):
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def all_joined(self):
        return not self.pending_join and all(m.join_waiter is not None for m in self.members.values())

    def supports(self, protocol_type, names):
        """Whether a member with these protocols may join: an empty group takes any; otherwise the protocol type
        must match and one of the names be supported by every member."""
        if self.state == EMPTY:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and any(
            all(name in {n for n, _ in m.protocols} for m in self.members.values()) for name in names)

    def validate_member(self, member_id, instance_id):
        """NONE, or why a request naming this member (and static instance) is refused."""
        if instance_id is not None:
            known = self.static.get(instance_id)
            if known is None:
                return errors.UNKNOWN_MEMBER_ID
            if known != member_id:
                return errors.FENCED_INSTANCE_ID
        return errors.NONE if member_id in self.members else errors.UNKNOWN_MEMBER_ID

    def _add(self, member, waiter):
        if member.instance_id is not None:
            self.static[member.instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader is None:
            self.leader = member.member_id
        self.members[member.member_id] = member
        member.join_waiter = waiter
        self.pending_join.discard(member.member_id)

    def _remove(self, member_id):
        """Forget a member (or a pending id). A request of its still waiting gets UNKNOWN_MEMBER_ID."""
        member = self.members.pop(member_id, None)
        self._cancel(("heartbeat", member_id))
        if member is not None:
            if member.instance_id is not None and self.static.get(member.instance_id) == member_id:
                del self.static[member.instance_id]
            for waiter in (member.join_waiter, member.sync_waiter):
                if waiter is not None:
                    waiter.complete(JoinResult(errors.UNKNOWN_MEMBER_ID) if waiter is member.join_waiter
                                    else SyncResult(errors.UNKNOWN_MEMBER_ID))
            member.join_waiter = member.sync_waiter = None
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        self.pending_join.discard(member_id)
        self.pending_sync.discard(member_id)

    def _update(self, member, request, waiter):
        member.protocols = request.protocols
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.session_timeout_ms = request.session_timeout_ms
        if member.join_waiter is not None and member.join_waiter is not waiter:
            # Kafka drops a JoinGroup a newer one from the same member replaces; it is answered here instead.
            member.join_waiter.complete(JoinResult(errors.REBALANCE_IN_PROGRESS, member_id=member.member_id))
        member.join_waiter = waiter

    def _current_join(self, member, members=None):
        """The answer of a JoinGroup that completes in the current generation."""
        if members is None:
            members = self._member_list() if member.member_id == self.leader else ()
        return JoinResult(errors.NONE, member_id=member.member_id, generation=self.generation,
                          protocol_type=self.protocol_type, protocol_name=self.protocol_name, leader=self.leader or "",
                          members=members)

    def _member_list(self):
        return tuple((m.member_id, m.instance_id, m.metadata(self.protocol_name)) for m in self.members.values())

    def select_protocol(self):
        """Every member votes for its first choice among the protocols all support; the most votes win."""
        candidates = set.intersection(*({n for n, _ in m.protocols} for m in self.members.values()))
        votes = {}
        for member in self.members.values():
            name = member.vote(candidates)
            votes[name] = votes.get(name, 0) + 1
        best = max(votes.values())
        return next(name for name in java_order(votes, string_hash) if votes[name] == best)

    def _transition(self, state):
        self.previous_state, self.state = self.state, state
        if state in (STABLE, EMPTY):
            self._keep()

    def _keep(self):
        """What Kafka writes when a generation is stable or the group empties: this generation, as it stands."""
        self.kept = KeptGeneration(self.generation, self.protocol_type, self.protocol_name, self.leader, tuple(
            KeptMember(m.member_id, m.instance_id, m.client_id, m.client_host, m.session_timeout_ms,
                       m.rebalance_timeout_ms, m.protocol_type, tuple(m.protocols), m.assignment)
            for m in self.members.values()))

    # ---- JoinGroup ----------------------------------------------------------------------------------------

    def join(self, now, request, waiter):
        """A JoinGroup: waiter.result is set now, or when the rebalance completes."""
        if not self._accepts(request.member_id):
            self._remove(request.member_id)
            waiter.complete(JoinResult(errors.GROUP_MAX_SIZE_REACHED))
        elif request.member_id == "":
            self._join_new(now, request, waiter)
        else:
            self._join_known(now, request, waiter)

    def _accepts(self, member_id):
        """group.max.size: existing members stay; new ones come in while there is room."""
        limit = self.config["group.max.size"]
        member = self.members.get(member_id)
        if self.state == PREPARING:
            awaiting = sum(1 for m in self.members.values() if m.join_waiter is not None)
            return (member is not None and member.join_waiter is not None) or awaiting < limit
        if self.state in (COMPLETING, STABLE):
            return member is not None or len(self.members) < limit
        return True

    def _join_new(self, now, request, waiter):
        if not self.supports(request.protocol_type, [n for n, _ in request.protocols]):
            return waiter.complete(JoinResult(errors.INCONSISTENT_GROUP_PROTOCOL))
        member_id = f"{request.instance_id if request.instance_id is not None else request.client_id}-{uuid.uuid4()}"
        if request.instance_id is not None:
            old = self.static.get(request.instance_id)
            if old is not None:
                return self._replace_static(now, request, old, member_id, waiter)
        elif request.require_known_member_id:
            self.pending_join.add(member_id)
            self._heartbeat_due(member_id, now + request.session_timeout_ms)
            return waiter.complete(JoinResult(errors.MEMBER_ID_REQUIRED, member_id=member_id))
        self._add_member(now, request, member_id, waiter)

    def _join_known(self, now, request, waiter):
        member_id = request.member_id
        if not self.supports(request.protocol_type, [n for n, _ in request.protocols]):
            return waiter.complete(JoinResult(errors.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id))
        if member_id in self.pending_join:
            if request.instance_id is not None:  # pending ids are given to dynamic members only
                return waiter.complete(JoinResult(errors.UNKNOWN_SERVER_ERROR))
            return self._add_member(now, request, member_id, waiter)
        error = self.validate_member(member_id, request.instance_id)
        if error is not errors.NONE:
            return waiter.complete(JoinResult(error, member_id=member_id))
        member = self.members[member_id]
        unchanged = member.protocols == request.protocols
        if self.state == COMPLETING and unchanged or self.state == STABLE and unchanged and member_id != self.leader:
            # It lost the answer (or rejoins for nothing): the current generation again, no rebalance. A leader
            # rejoining a stable group rebalances it: that is how it asks for a new assignment.
            return waiter.complete(self._current_join(member, None if self.state == COMPLETING else ()))
        self._update(member, request, waiter)
        self._rebalance_or_complete(now)

    def _add_member(self, now, request, member_id, waiter):
        member = Member(member_id, request.instance_id, request.client_id, request.client_host,
                        request.session_timeout_ms, request.rebalance_timeout_ms, request.protocol_type,
                        request.protocols)
        member.is_new = True
        if self.state == PREPARING and self.previous_state == EMPTY:
            self.new_member_added = True
        self._add(member, waiter)
        # A new member cannot heartbeat while it waits; if it went away, it is dropped after this long.
        self._reschedule_heartbeat(member, now, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._rebalance_or_complete(now)

    def _replace_static(self, now, request, old_id, new_id, waiter):
        """A static member back under a new member id takes its old self's place; the old id is fenced."""
        leader_before = self.leader
        old = self.members.pop(old_id)
        self._cancel(("heartbeat", old_id))
        if old.join_waiter is not None:
            old.join_waiter.complete(JoinResult(errors.FENCED_INSTANCE_ID, member_id=old_id))
        if old.sync_waiter is not None:
            old.sync_waiter.complete(SyncResult(errors.FENCED_INSTANCE_ID))
        member = Member(new_id, old.instance_id, old.client_id, old.client_host, old.session_timeout_ms,
                        old.rebalance_timeout_ms, old.protocol_type, old.protocols, old.assignment)
        self.members[new_id] = member
        if self.leader == old_id:
            self.leader = new_id
        self.static[request.instance_id] = new_id
        self._reschedule_heartbeat(member, now)
        self._update(member, request, waiter)
        if self.state == STABLE:
            if self.protocol_name == self.select_protocol():
                # Nothing the assignment depends on changed: the group stays stable and the member keeps its
                # assignment (kept under its new id, as Kafka writes it). From v9 a leader is told to skip
                # assigning; before, the old leader id stands.
                member.join_waiter = None
                self._keep()
                if request.can_skip_assignment:
                    leads = self.leader == new_id
                    result = self._current_join(member)._replace(skip_assignment=leads)
                else:
                    result = self._current_join(member, ())._replace(leader=leader_before or "")
                return waiter.complete(result)
            return self._rebalance_or_complete(now)
        if self.state == COMPLETING:
            # The leader may have been told about the old id: assign again.
            return self._prepare_rebalance(now)
        self._maybe_complete_join(now)

    # ---- rebalancing --------------------------------------------------------------------------------------

    def _rebalance_or_complete(self, now):
        if self.state in (EMPTY, COMPLETING, STABLE):
            self._prepare_rebalance(now)
        else:
            self._maybe_complete_join(now)

    def _prepare_rebalance(self, now):
        if self.state == COMPLETING:
            # The members waiting for their assignment rejoin instead.
            for member in self.members.values():
                member.assignment = b""
            self._answer_syncs(errors.REBALANCE_IN_PROGRESS, now)
        self.pending_sync.clear()
        self._cancel("sync")
        initial = self.state == EMPTY
        if initial:
            # A new group waits group.initial.rebalance.delay.ms for more members, longer while they come,
            # up to the rebalance timeout.
            delay = self.config["group.initial.rebalance.delay.ms"]
            remaining = max(self.rebalance_timeout_ms() - delay, 0)
            self._schedule("join", now + delay,
                           lambda at: self._initial_delay_over(at, delay, remaining))
        self._transition(PREPARING)
        if not initial:
            if self.all_joined():
                self._complete_join(now)
            else:
                self._schedule("join", now + self.rebalance_timeout_ms(), self._complete_join)

    def _initial_delay_over(self, now, delay, remaining):
        if self.new_member_added and remaining:
            self.new_member_added = False
            next_delay = min(self.config["group.initial.rebalance.delay.ms"], remaining)
            next_remaining = max(remaining - delay, 0)
            self._schedule("join", now + next_delay,
                           lambda at: self._initial_delay_over(at, next_delay, next_remaining))
        else:
            self._complete_join(now)

    def _maybe_complete_join(self, now):
        """Complete the join phase when everyone has joined, except in a new group's first one (its delay
        decides)."""
        if self.state == PREPARING and self.previous_state != EMPTY and self.all_joined():
            self._complete_join(now)

    def _elect_joined_leader(self):
        """Keep the leader if it rejoined, else take a member that did; False when none did."""
        if self.leader is None:
            return False
        if self.members[self.leader].join_waiter is not None:
            return True
        joined = next((m.member_id for m in self.members.values() if m.join_waiter is not None), None)
        if joined is None:
            return False
        self.leader = joined
        return True

    def _complete_join(self, now):
        """The next generation: dynamic members that did not rejoin are dropped, every waiting JoinGroup is
        answered, and the members have the rebalance timeout to send SyncGroup."""
        self._cancel("join")
        for member in [m for m in self.members.values() if m.join_waiter is None and m.instance_id is None]:
            self._remove(member.member_id)
        if self.members and not self._elect_joined_leader():
            # Nobody rejoined (static members only): wait for their session timeouts to drop them.
            self._schedule("join", now + self.rebalance_timeout_ms(), self._complete_join)
            return
        self.generation += 1
        self.pending_sync.clear()
        if not self.members:
            self.protocol_name = None
            self._transition(EMPTY)
            return
        self.protocol_name = self.select_protocol()
        self._transition(COMPLETING)
        members = self._member_list()
        for member in self.members.values():
            if member.join_waiter is not None:
                member.join_waiter.complete(self._current_join(member, members if member.member_id == self.leader
                                                               else ()))
                member.join_waiter = None
            self._reschedule_heartbeat(member, now)
            member.is_new = False
            self.pending_sync.add(member.member_id)
        generation = self.generation
        self._schedule("sync", now + self.rebalance_timeout_ms(),
                       lambda at: self._sync_expired(at, generation))

    def _sync_expired(self, now, generation):
        """Members that never sent SyncGroup for this generation are dropped, and the rest rebalance."""
        if generation == self.generation and self.state in (COMPLETING, STABLE) and self.pending_sync:
            for member_id in list(self.pending_sync):
                self._remove(member_id)
            self._prepare_rebalance(now)

    def _heartbeat_expired(self, now, member_id):
        if member_id in self.pending_join:
            self.pending_join.discard(member_id)
            if self.state == PREPARING and self.all_joined():
                self._complete_join(now)
            return
        member = self.members.get(member_id)
        if member is None or member.satisfied_heartbeat():
            return
        self._remove(member_id)
        if self.state in (STABLE, COMPLETING):
            self._rebalance_or_complete(now)
        elif self.state == PREPARING and self.all_joined():
            self._complete_join(now)

    # ---- SyncGroup, Heartbeat, LeaveGroup, commits --------------------------------------------------------

    def sync(self, now, member_id, instance_id, generation, protocol_type, protocol_name, assignments, waiter):
        """A SyncGroup: the leader's brings every member's assignment; the others wait for it."""
        if self.state == EMPTY:
            return waiter.complete(SyncResult(errors.UNKNOWN_MEMBER_ID))
        error = self.validate_member(member_id, instance_id)
        if error is errors.NONE and generation != self.generation:
            error = errors.ILLEGAL_GENERATION
        if error is errors.NONE and (_differs(protocol_type, self.protocol_type)
                                     or _differs(protocol_name, self.protocol_name)):
            error = errors.INCONSISTENT_GROUP_PROTOCOL
        if error is errors.NONE and self.state == PREPARING:
            error = errors.REBALANCE_IN_PROGRESS
        if error is not errors.NONE:
            return waiter.complete(SyncResult(error))
        member = self.members[member_id]
        self._synced(member_id)
        if self.state == STABLE:
            return waiter.complete(SyncResult(errors.NONE, self.protocol_type, self.protocol_name,
                                              member.assignment))
        if member.sync_waiter is not None and member.sync_waiter is not waiter:
            member.sync_waiter.complete(SyncResult(errors.REBALANCE_IN_PROGRESS))  # replaced by this one
        member.sync_waiter = waiter
        if member_id == self.leader:
            for m in self.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            self._answer_syncs(errors.NONE, now)
            self._transition(STABLE)

    def _synced(self, member_id):
        self.pending_sync.discard(member_id)
        if not self.pending_sync:
            self._cancel("sync")

    def _answer_syncs(self, error, now):
        ok = error is errors.NONE
        for member in self.members.values():
            if member.sync_waiter is not None:
                member.sync_waiter.complete(SyncResult(error, self.protocol_type if ok else None,
                                                       self.protocol_name if ok else None, member.assignment))
                member.sync_waiter = None
                self._reschedule_heartbeat(member, now)

    def heartbeat(self, now, member_id, instance_id, generation):
        error = self.validate_member(member_id, instance_id)
        if error is not errors.NONE:
            return error
        if generation != self.generation:
            return errors.ILLEGAL_GENERATION
        if self.state == EMPTY:
            return errors.UNKNOWN_MEMBER_ID
        self._reschedule_heartbeat(self.members[member_id], now)
        # A heartbeat in CompletingRebalance is fine: the member got its JoinGroup answer and will sync.
        return errors.REBALANCE_IN_PROGRESS if self.state == PREPARING else errors.NONE

    def leave(self, now, leaving):
        """LeaveGroup for [(member id, group instance id)]: [error] in the same order. A static member may be
        removed by its instance id alone (member id ""); a pending id just goes."""
        results = []
        for member_id, instance_id in leaving:
            if member_id == "":
                known = self.static.get(instance_id) if instance_id is not None else None
                if known is None:
                    results.append(errors.UNKNOWN_MEMBER_ID)
                    continue
                self._remove(known)
            elif member_id in self.pending_join:
                self._remove(member_id)
            else:
                error = self.validate_member(member_id, instance_id)
                if error is not errors.NONE:
                    results.append(error)
                    continue
                self._remove(member_id)
            results.append(errors.NONE)
        if errors.NONE in results:
            if self.state in (STABLE, COMPLETING):
                self._rebalance_or_complete(now)
            elif self.state == PREPARING:
                self._maybe_complete_join(now)
        return results

    def validate_commit(self, now, member_id, instance_id, generation, transactional=False):
        """NONE, or why an OffsetCommit (or TxnOffsetCommit) is refused. Generation -1 without a member is a
        consumer outside group management: taken while the group is empty."""
        if generation < 0 and self.state == EMPTY:
            return errors.NONE
        if generation >= 0 or member_id or instance_id is not None:
            error = self.validate_member(member_id, instance_id)
            if error is not errors.NONE:
                return error
            if generation != self.generation:
                return errors.ILLEGAL_GENERATION
        elif not transactional:
            return errors.UNKNOWN_MEMBER_ID
        if not transactional:
            if self.state == COMPLETING:
                # It has the new generation but not its assignment yet. In PreparingRebalance a member of the
                # generation commits what it consumed before it rejoins (cooperative consumers do).
                return errors.REBALANCE_IN_PROGRESS
            if self.state in (STABLE, PREPARING):
                self._reschedule_heartbeat(self.members[member_id], now)
        return errors.NONE

    def describe(self):
        """(state, protocol type, protocol name, [(member, metadata)]): metadata and the protocol only while
        Stable, as Kafka shows them."""
        stable = self.state == STABLE
        return (self.state, self.protocol_type or "", self.protocol_name if stable else "",
                [(m, m.metadata(self.protocol_name) if stable else b"") for m in self.members.values()])

    def deletable(self):
        return errors.NONE if self.state == EMPTY else errors.NON_EMPTY_GROUP

    # ---- across a restart ----------------------------------------------------------------------------------

    @classmethod
    def created(cls, group_id, config):
        """A group a JoinGroup makes: it keeps an empty generation 0 with no protocol, which Kafka writes as the
        new group's first record, whatever the join then does."""
        group = cls(group_id, config)
        group.kept = KeptGeneration(0, "", None, None, ())
        return group

    @classmethod
    def loaded(cls, group_id, config, kept, now):
        """The group as it was kept (a KeptGeneration): Stable with its members, or Empty. As Kafka does with a
        group it loads, every member's session starts now, and a group over group.max.size rebalances."""
        group = cls(group_id, config)
        group.generation, group.protocol_type = kept.generation, kept.protocol_type
        group.protocol_name, group.leader = kept.protocol_name, kept.leader
        for m in kept.members:
            member = Member(m.member_id, m.instance_id, m.client_id, m.client_host, m.session_timeout_ms,
                            m.rebalance_timeout_ms, m.protocol_type, list(m.protocols), m.assignment)
            group.members[member.member_id] = member
            if member.instance_id is not None:
                group.static[member.instance_id] = member.member_id
            group._reschedule_heartbeat(member, now)
        if group.leader not in group.members:
            group.leader = next(iter(group.members), None)
        if group.members:
            group._transition(STABLE)
        group.kept = kept
        if len(group.members) > config["group.max.size"]:
            group._prepare_rebalance(now)
        return group

    # ---- the other kind of group (KIP-848) ----------------------------------------------------------------

    @classmethod
    def adopt(cls, group_id, config, now, generation, members):
        """The classic group that takes the members left in a consumer group once none of them speaks KIP-848's
        protocol: Stable at that generation, then rebalancing, so that each joins again. members: [Member]."""
        group = cls(group_id, config)
        group.generation = generation
        group.protocol_type = "consumer"
        for member in members:
            group._add(member, None)
            group._reschedule_heartbeat(member, now)
        group.protocol_name = group.select_protocol()
        group._transition(STABLE)
        group._prepare_rebalance(now)
        return group

    def abandon(self):
        """The group becomes a consumer group: what its members wait for is answered REBALANCE_IN_PROGRESS."""
        for member in self.members.values():
            if member.join_waiter is not None:
                member.join_waiter.complete(JoinResult(errors.REBALANCE_IN_PROGRESS, member_id=member.member_id))
            if member.sync_waiter is not None:
                member.sync_waiter.complete(SyncResult(errors.REBALANCE_IN_PROGRESS))
            member.join_waiter = member.sync_waiter = None
        self.timers.clear()


def _differs(asked, actual):
    return asked is not None and actual is not None and asked != actual

