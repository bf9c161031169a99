"""Streams groups (KIP-1071, ``group.protocol=streams``): Kafka Streams applications whose tasks the broker
assigns, as Kafka 4.3's group coordinator runs them (GroupMetadataManager's streams paths, InternalTopicManager,
the sticky task assignor, the streams CurrentAssignmentBuilder).

A member joins (epoch 0) with its application's topology: subtopologies, each reading source topics and
repartition topics, writing repartition topics and keeping state in changelog topics. The broker checks the
topology against the cluster: source topics that are missing are a status (MISSING_SOURCE_TOPICS), repartition
topics get as many partitions as the topics feeding them, changelog topics as many as their subtopology has tasks,
and the internal topics that do not exist are created (the status MISSING_INTERNAL_TOPICS says so meanwhile). A
subtopology has one task per partition of its input; tasks are what members are given: active tasks, and standby
replicas of the stateful ones (``streams.num.standby.replicas``).

Epochs as in KIP-848: a change of members, of their metadata, or of the topology's readiness bumps the group epoch
(a new group's first epoch is 2); a new target assignment is computed at the next heartbeat, at most once every
``streams.assignment.interval.ms``, and for a group that was empty not before ``streams.initial.rebalance.delay.ms``
(meanwhile members are at epoch 1 with no tasks, told ASSIGNMENT_DELAYED). A member gives up the active tasks it
must lose before another member is given them (UNREVOKED_TASKS until it stops reporting them), and is given tasks
another member still holds only once released (UNRELEASED_TASKS). Sessions end ``streams.session.timeout.ms``
after the last heartbeat; a member that does not give up tasks within its rebalance timeout is removed.

    Empty --(a member joins)--> NotReady (topology not ready) / Assigning --> Reconciling --> Stable
"""

import heapq
from math import ceil

from .... import errors
from .assignors import java_order, string_hash
from .consumer_group import GroupError

EMPTY, NOT_READY, ASSIGNING, RECONCILING, STABLE = "Empty", "NotReady", "Assigning", "Reconciling", "Stable"
MEMBER_STABLE, UNREVOKED_TASKS, UNRELEASED_TASKS = 1, 2, 3
LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2
ROLES = ("active", "standby", "warmup")
# The largest topology taken (Kafka sets none; a client's must not make a heartbeat cost without bound)
MAX_SUBTOPOLOGIES, MAX_TOPOLOGY_TOPICS = 1000, 2000
# Heartbeat statuses (StreamsGroupHeartbeatResponse.Status)
STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS, \
    SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED = range(6)


def no_tasks():
    return {role: {} for role in ROLES}


def _copy(tasks):
    return {role: {s: set(ps) for s, ps in tasks[role].items()} for role in ROLES}


def _pairs(tasks, role):
    return {(s, p) for s, ps in tasks[role].items() for p in ps}


def _from_pairs(pairs):
    out = {}
    for s, p in pairs:
        out.setdefault(s, set()).add(p)
    return out


class StreamsMember:
    __slots__ = ("member_id", "instance_id", "rack_id", "client_id", "client_host", "rebalance_timeout_ms",
                 "topology_epoch", "process_id", "user_endpoint", "client_tags", "member_epoch", "previous_epoch",
                 "state", "assigned", "pending", "session_deadline", "revocation_deadline")

    def __init__(self, member_id):
        self.member_id = member_id
        self.instance_id = None
        self.rack_id = None
        self.client_id = ""
        self.client_host = ""
        self.rebalance_timeout_ms = -1
        self.topology_epoch = -1
        self.process_id = ""
        self.user_endpoint = None  # (host, port)
        self.client_tags = {}
        self.member_epoch = 0
        self.previous_epoch = -1
        self.state = MEMBER_STABLE
        self.assigned = no_tasks()
        self.pending = no_tasks()  # active tasks to give up (pending revocation)
        self.session_deadline = 0
        self.revocation_deadline = None

    def metadata(self):
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.rebalance_timeout_ms,
                self.topology_epoch, self.process_id, self.user_endpoint, tuple(sorted(self.client_tags.items())))


class Configured:
    """A topology checked against the cluster: tasks per subtopology, the partitions of every internal topic,
    whether it is ready, the status that says why not, and the internal topics to create
    [(name, partitions, replication factor, {config: value})]."""

    def __init__(self, tasks=None, internal=None, status=None, missing=(), ready=False):
        self.tasks = tasks or {}
        self.internal = internal or {}
        self.status = status
        self.missing = list(missing)
        self.ready = ready


class StreamsGroup:
    kind = "streams"
    protocol_type = "streams"
    pending_join = frozenset()

    def __init__(self, group_id):
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.assignment_time_ms = None
        self.topology = None  # the request's Topology, as a plain dict
        self.validated_epoch = -1
        self.configured = None  # a Configured, worked out again after a restart
        self.shape = None  # what the required topics looked like when configured
        self.members = {}
        self.target = {}  # member id -> tasks
        self.delay_until = None  # the first assignment waits until then (streams.initial.rebalance.delay.ms)
        self.endpoint_epoch = 0
        self.shutdown_by = None
        self.assignment_configs = None

    @property
    def state(self):
        if not self.members:
            return EMPTY
        if self.topology is None or self.validated_epoch != self.topology["epoch"]:
            return NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        if any(m.state != MEMBER_STABLE or m.member_epoch != self.assignment_epoch for m in self.members.values()):
            return RECONCILING
        return STABLE

    def next_deadline(self):
        deadlines = [m.session_deadline for m in self.members.values()]
        deadlines += [m.revocation_deadline for m in self.members.values() if m.revocation_deadline is not None]
        return min(deadlines, default=None)

    def deletable(self):
        return errors.NONE if not self.members else errors.NON_EMPTY_GROUP

    def topics_of(self, member):
        """The topics a member reads (for offsets' expiry): the topology's source and repartition topics."""
        if self.topology is None:
            return frozenset()
        return frozenset(t for s in self.topology["subtopologies"] for t in
                         [*s["source_topics"], *(r["name"] for r in s["repartition_source_topics"])])

    def owners(self, exclude):
        """(task -> process id) of the active tasks other members hold or are giving up, and the (process, role,
        task) pairs every member's process holds."""
        active, held = {}, set()
        for m in self.members.values():
            for role in ROLES:
                for task in _pairs(m.assigned, role) | (_pairs(m.pending, role) if role == "active" else set()):
                    held.add((m.process_id, task))
                    if role == "active" and m.member_id != exclude:
                        active[task] = m.process_id
        return active, held


class Beat:
    def __init__(self, member, interval_ms, tasks, statuses, endpoints, endpoint_epoch, create=()):
        self.member_id, self.member_epoch = member.member_id, member.member_epoch
        self.interval_ms, self.tasks, self.statuses = interval_ms, tasks, statuses
        self.endpoints, self.endpoint_epoch, self.create = endpoints, endpoint_epoch, list(create)


def _invalid(message):
    return GroupError(errors.INVALID_REQUEST, message)


def topology_data(topology):
    """A topology as plain data (kept, compared, described): from a heartbeat's request or from its stored record,
    whose fields are named alike."""
    def info(t):
        return {"name": t.name, "partitions": t.partitions, "replication_factor": t.replication_factor,
                "configs": [[c.key, c.value] for c in t.topic_configs]}
    return {"epoch": topology.epoch, "subtopologies": [{
        "id": s.subtopology_id, "source_topics": list(s.source_topics),
        "source_topic_regex": list(s.source_topic_regex),
        "changelog_topics": [info(t) for t in s.state_changelog_topics],
        "repartition_sink_topics": list(s.repartition_sink_topics),
        "repartition_source_topics": [info(t) for t in s.repartition_source_topics],
        "copartition_groups": [[list(g.source_topics), list(g.source_topic_regex), list(g.repartition_source_topics)]
                               for g in s.copartition_groups]} for s in topology.subtopologies]}


def _owned(request):
    """The tasks the member says it holds, or None when it did not say (all three lists needed)."""
    lists = (request.active_tasks, request.standby_tasks, request.warmup_tasks)
    if any(x is None for x in lists):
        return None
    return {role: {t.subtopology_id: set(t.partitions) for t in tasks} for role, tasks in zip(ROLES, lists)}


class StreamsRules:
    """The streams-group paths of the group coordinator."""

    def __init__(self, groups, cluster, config):
        self.groups = groups
        self.cluster = cluster
        self.config = config

    def setting(self, group_id, name):
        return self.cluster.group_setting(group_id, name)

    def group(self, group_id):
        group = self.groups.get(group_id)
        if group is None:
            raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        if group.kind != "streams":
            raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group.")
        return group

    # ---- checks ---------------------------------------------------------------------------------------------

    @staticmethod
    def validate(request):
        """INVALID_REQUEST (or STREAMS_INVALID_TOPOLOGY) as Kafka words it, for what no heartbeat may carry."""
        if request.topology is not None and any(s.source_topic_regex for s in request.topology.subtopologies):
            raise _invalid("Regular expressions for source topics are not supported yet.")
        if request.topology is not None:
            subs = request.topology.subtopologies
            topics = sum(len(s.source_topics) + len(s.repartition_sink_topics) + len(s.repartition_source_topics)
                         + len(s.state_changelog_topics) for s in subs)
            if len(subs) > MAX_SUBTOPOLOGIES or topics > MAX_TOPOLOGY_TOPICS:
                raise GroupError(errors.STREAMS_INVALID_TOPOLOGY, f"The topology has {len(subs)} subtopologies and "
                                 f"names {topics} topics; this broker takes at most {MAX_SUBTOPOLOGIES} and "
                                 f"{MAX_TOPOLOGY_TOPICS}.")
        for name, value in (("MemberId", request.member_id), ("GroupId", request.group_id),
                            ("InstanceId", request.instance_id), ("RackId", request.rack_id)):
            if value is not None and not value.strip():
                raise _invalid(f"{name} can't be empty.")
        epoch = request.member_epoch
        if epoch == 0:
            if request.rebalance_timeout_ms == -1:
                raise _invalid("RebalanceTimeoutMs must be provided in first request.")
            for name, tasks in (("ActiveTasks", request.active_tasks), ("StandbyTasks", request.standby_tasks),
                                ("WarmupTasks", request.warmup_tasks)):
                if tasks is None or tasks:  # as from Kafka, null is not empty
                    raise _invalid(f"{name} must be empty when (re-)joining.")
            if request.topology is None:
                raise _invalid("Topology must be non-null when (re-)joining.")
            for s in request.topology.subtopologies:
                for t in s.state_changelog_topics:
                    if t.partitions != 0:
                        raise GroupError(errors.STREAMS_INVALID_TOPOLOGY, f"Changelog topic {t.name} must have an "
                                         f"undefined partition count, but it is set to {t.partitions}.")
        elif epoch == STATIC_LEAVE_EPOCH and request.instance_id is None:
            raise _invalid("InstanceId can't be null.")
        elif epoch < STATIC_LEAVE_EPOCH:
            raise _invalid(f"MemberEpoch is {epoch}, but must be greater than or equal to -2.")
        lists = (request.active_tasks, request.standby_tasks, request.warmup_tasks)
        if any(x is not None for x in lists) and any(x is None for x in lists):
            raise _invalid("If one task-type is non-null, all must be non-null.")
        if epoch != 0 and request.topology is not None:
            raise _invalid("Topology can only be provided when (re-)joining.")

    # ---- heartbeats ------------------------------------------------------------------------------------------

    def heartbeat(self, request, client_id, client_host, now):
        """A StreamsGroupHeartbeat: a Beat, or GroupError."""
        self.validate(request)
        epoch = request.member_epoch
        if epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self.leave(request, now)
        if request.instance_id is not None:
            raise GroupError(errors.UNKNOWN_SERVER_ERROR)  # Kafka 4.3: static members are not supported yet
        group = self.groups.get(request.group_id)
        if group is None or (group.kind == "classic" and not group.members and epoch == 0):
            if epoch != 0:
                raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Streams group {request.group_id} not found.")
            group = self.groups[request.group_id] = StreamsGroup(request.group_id)
        elif group.kind != "streams":
            raise GroupError(errors.GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a streams group.")
        was_empty = not group.members
        member = group.members.get(request.member_id)
        if member is None:
            if epoch != 0:
                raise GroupError(errors.UNKNOWN_MEMBER_ID,
                                 f"Member {request.member_id} is not a member of group {group.group_id}.")
            limit = self.config["group.streams.max.size"]
            if len(group.members) >= limit:
                raise GroupError(errors.GROUP_MAX_SIZE_REACHED,
                                 f"The streams group has reached its maximum capacity of {limit} members.")
            member = StreamsMember(request.member_id)
        owned = _owned(request)
        self._check_epoch(member, epoch, owned)
        before = member.metadata()
        if request.rack_id is not None:
            member.rack_id = request.rack_id
        if request.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = request.rebalance_timeout_ms
        if request.topology is not None:
            member.topology_epoch = request.topology.epoch
        member.client_id, member.client_host = client_id, client_host
        if request.process_id is not None:
            member.process_id = request.process_id
        if request.client_tags is not None:
            member.client_tags = {kv.key: kv.value for kv in request.client_tags}
        if request.user_endpoint is not None:
            member.user_endpoint = (request.user_endpoint.host, request.user_endpoint.port)
        bump = member.member_id not in group.members or member.metadata() != before
        group.members[member.member_id] = member
        statuses = []
        had_topology = group.topology is not None
        if request.topology is not None:
            offered = topology_data(request.topology)
            if group.topology is None:
                group.topology = offered
            elif group.topology["epoch"] <= offered["epoch"] and offered != group.topology:
                raise _invalid("Topology updates are not supported yet.")
        if group.topology is None:
            raise GroupError(errors.UNKNOWN_SERVER_ERROR)
        if had_topology and member.topology_epoch < group.topology["epoch"]:
            statuses.append((STALE_TOPOLOGY, f"The member's topology epoch {member.topology_epoch} is behind the "
                                             f"group's topology epoch {group.topology['epoch']}."))
        shape = self._shape(group.topology)
        if group.configured is None or shape != group.shape:  # worked out again after a restart, too
            group.configured = self.configure(group.topology)
            bump |= shape != group.shape
            group.shape = shape
        validated = group.topology["epoch"] if group.configured.ready else -1
        if validated != group.validated_epoch:
            group.validated_epoch = validated
            bump = True
        configs = {"num.standby.replicas": str(self.setting(group.group_id, "streams.num.standby.replicas"))}
        if configs != group.assignment_configs:
            group.assignment_configs = configs
            bump = True
        if bump:
            group.group_epoch = 2 if group.group_epoch == 0 else group.group_epoch + 1
            delay = self.setting(group.group_id, "streams.initial.rebalance.delay.ms")
            if was_empty and delay > 0 and group.delay_until is None:
                group.delay_until = now + delay
        target_epoch = group.assignment_epoch
        if group.group_epoch > group.assignment_epoch:
            interval = self.setting(group.group_id, "streams.assignment.interval.ms")
            if group.delay_until is not None and now < group.delay_until:
                # members wait at epoch 1 with no tasks, the empty assignment Kafka makes for a new group
                target_epoch = group.assignment_epoch = max(1, group.assignment_epoch)
                statuses.append((ASSIGNMENT_DELAYED,
                                 "Assignment delayed due to the configured initial rebalance delay."))
            elif group.assignment_time_ms is not None and interval and now < group.assignment_time_ms + interval:
                statuses.append((ASSIGNMENT_DELAYED, "Assignment delayed due to the configured assignment interval."))
            else:
                self.assign(group, now)
                target_epoch = group.assignment_epoch
        target = group.target.get(member.member_id, no_tasks()) if target_epoch == group.assignment_epoch \
            else no_tasks()
        old = _copy(member.assigned)
        self._reconcile(group, member, target_epoch, target, owned, now)
        member.session_deadline = now + self.setting(group.group_id, "streams.session.timeout.ms")
        if request.shutdown_application and group.shutdown_by is None:
            group.shutdown_by = member.member_id
        tell = epoch == 0 or member.assigned != old
        if tell and member.user_endpoint is not None:
            group.endpoint_epoch += 1
        endpoints = None
        if group.endpoint_epoch != request.endpoint_information_epoch:
            endpoints = self._endpoints(group, member)
        if group.configured.status is not None:
            statuses.append(group.configured.status)
        if group.shutdown_by is not None:
            statuses.append((SHUTDOWN_APPLICATION, f"Streams group member {group.shutdown_by} encountered a fatal "
                                                   "error and requested a shutdown for the entire application."))
        return Beat(member, self.setting(group.group_id, "streams.heartbeat.interval.ms"),
                    _copy(member.assigned) if tell else None, statuses, endpoints,
                    group.endpoint_epoch if not was_empty or epoch != 0 else 0, group.configured.missing)

    def _check_epoch(self, member, epoch, owned):
        if epoch > member.member_epoch:
            raise GroupError(errors.FENCED_MEMBER_EPOCH, f"The streams group member has a greater member epoch "
                             f"({epoch}) than the one known by the group coordinator ({member.member_epoch}). The "
                             "member must abandon all its partitions and rejoin.")
        if epoch < member.member_epoch:
            held = owned is not None and all(_pairs(owned, r) <= _pairs(member.assigned, r) for r in ROLES)
            if epoch != member.previous_epoch or not held:
                raise GroupError(errors.FENCED_MEMBER_EPOCH, f"The streams group member has a smaller member epoch "
                                 f"({epoch}) than the one known by the group coordinator ({member.member_epoch}). "
                                 "The member must abandon all its partitions and rejoin.")

    def leave(self, request, now):
        group = self.group(request.group_id)
        if request.shutdown_application and group.shutdown_by is None:
            group.shutdown_by = request.member_id
        if request.instance_id is not None:
            raise GroupError(errors.UNKNOWN_SERVER_ERROR)  # Kafka 4.3: static members are not supported yet
        if request.member_id not in group.members:
            raise GroupError(errors.UNKNOWN_MEMBER_ID,
                             f"Member {request.member_id} is not a member of group {group.group_id}.")
        self._remove(group, request.member_id)
        member = StreamsMember(request.member_id)
        member.member_epoch = request.member_epoch
        return Beat(member, 0, None, [], None, group.endpoint_epoch)

    def _remove(self, group, member_id):
        del group.members[member_id]
        group.target.pop(member_id, None)
        group.group_epoch += 1
        if not group.members:
            group.shutdown_by = None

    def expire(self, group, now):
        """Remove members whose session ended, or who held tasks to give up past their rebalance timeout."""
        gone = [m for m, member in group.members.items() if member.session_deadline <= now or (
            member.revocation_deadline is not None and member.revocation_deadline <= now)]
        for member_id in gone:
            self._remove(group, member_id)
        return bool(gone)

    # ---- the topology against the cluster -------------------------------------------------------------------

    def _shape(self, topology):
        names = {t for s in topology["subtopologies"] for t in
                 [*s["source_topics"], *(r["name"] for r in s["repartition_source_topics"]),
                  *(c["name"] for c in s["changelog_topics"])]}
        return tuple(sorted((n, len(self.cluster.topics[n].partitions)) for n in names if n in self.cluster.topics))

    def configure(self, topology):
        """Configured: Kafka's InternalTopicManager.configureTopics over this broker's topics."""
        topics = self.cluster.topics
        subs = topology["subtopologies"]
        missing = sorted({t for s in subs for t in s["source_topics"] if t not in topics})
        if missing:
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} additional topics" if len(missing) > 3
                                              else "")
            return Configured(status=(MISSING_SOURCE_TOPICS, f"Source topics {shown} are missing."))
        counts = {}  # repartition topic -> partitions
        fixed = {}
        for s in subs:
            for r in s["repartition_source_topics"]:
                if r["partitions"]:
                    counts[r["name"]] = fixed[r["name"]] = r["partitions"]
        wanted = {r["name"] for s in subs for r in s["repartition_source_topics"]}
        feeders = {}  # repartition topic -> the subtopologies writing to it
        for s in subs:
            for name in s["repartition_sink_topics"]:
                feeders.setdefault(name, []).append(s)
        unresolved = wanted - set(counts)
        while unresolved:  # each pass decides at least one topic, or none can be
            decided = {}
            for name in unresolved:
                writers = feeders.get(name, ())
                feeding = [len(topics[t].partitions) for s in writers for t in s["source_topics"]]
                feeding += [counts.get(r["name"]) for s in writers for r in s["repartition_source_topics"]]
                if feeding and all(feeding):
                    decided[name] = max(feeding)
            if not decided:
                break
            counts.update(decided)
            unresolved -= set(decided)
        if wanted - set(counts):
            return Configured(status=(MISSING_SOURCE_TOPICS, "Failed to compute number of partitions for all "
                                      "repartition topics, make sure all user input topics are created and all "
                                      "pattern subscriptions match at least one topic in the cluster"))
        for s in subs:  # copartitioned topics share a partition count
            for source_idx, _, repartition_idx in s["copartition_groups"]:
                external = [s["source_topics"][i] for i in source_idx]
                internal = [s["repartition_source_topics"][i]["name"] for i in repartition_idx]
                sizes = {len(topics[t].partitions) for t in external}
                if len(sizes) > 1:
                    return Configured(status=(INCORRECTLY_PARTITIONED_TOPICS, "Following topics do not have the "
                                              f"same number of partitions: [{', '.join(sorted(external))}]"))
                size = sizes.pop() if sizes else max((counts[n] for n in internal), default=0)
                for name in internal:
                    if name in fixed and fixed[name] != size:
                        return Configured(status=(INCORRECTLY_PARTITIONED_TOPICS,
                                                  f"Number of partitions [{fixed[name]}] of repartition topic "
                                                  f"[{name}] doesn't match number of partitions [{size}] of the "
                                                  "source topic."))
                    counts[name] = size
        tasks, internal, create = {}, {}, []
        for s in subs:
            inputs = [len(topics[t].partitions) for t in s["source_topics"]]
            inputs += [counts[r["name"]] for r in s["repartition_source_topics"]]
            if not inputs:
                raise GroupError(errors.STREAMS_INVALID_TOPOLOGY, f"No source topics found for subtopology {s['id']}")
            tasks[s["id"]] = max(inputs)
            for info, partitions in [(r, counts[r["name"]]) for r in s["repartition_source_topics"]] + \
                    [(c, tasks[s["id"]]) for c in s["changelog_topics"]]:
                internal[info["name"]] = partitions
                existing = topics.get(info["name"])
                if existing is None:
                    create.append((info["name"], partitions, info["replication_factor"] or -1,
                                   dict(info["configs"])))
                elif len(existing.partitions) != partitions:
                    return Configured(status=(INCORRECTLY_PARTITIONED_TOPICS, f"Existing topic {info['name']} has "
                                              f"different number of partitions: expected {partitions}, found "
                                              f"{len(existing.partitions)}"))
        if create:
            names = ", ".join(java_order([name for name, _, _, _ in create], string_hash))  # Kafka's HashMap order
            return Configured(tasks, internal, (MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {names}"),
                              create)
        return Configured(tasks, internal, ready=True)

    # ---- assigning -------------------------------------------------------------------------------------------

    def assign(self, group, now):
        """A new target for every member at the group epoch: Kafka's sticky task assignor (tasks kept where they
        were, spread over processes by load, standbys of stateful tasks never on a process with the task)."""
        group.assignment_epoch = group.group_epoch
        group.assignment_time_ms = now
        members = java_order(group.members, string_hash)
        targets = {m: no_tasks() for m in members}
        if not group.configured.ready or not members:
            group.target = targets
            return
        tasks = [(s["id"], p) for s in group.topology["subtopologies"] for p in range(group.configured.tasks[s["id"]])]
        stateful = {s["id"] for s in group.topology["subtopologies"] if s["changelog_topics"]}
        process = {m: group.members[m].process_id for m in members}
        on_process = {}
        for m in members:
            on_process.setdefault(process[m], []).append(m)
        was_active, was_standby = {}, {}
        for m in members:
            previous = group.target.get(m, no_tasks())
            for task in _pairs(previous, "active"):
                was_active.setdefault(task, m)
            for task in _pairs(previous, "standby"):
                was_standby.setdefault(task, []).append(m)
        quota = ceil(len(tasks) / len(members))
        count = {m: 0 for m in members}
        given = {}
        for task in sorted(tasks, key=lambda t: (t[1], t[0])):  # those held before stay, within the quota
            m = was_active.get(task)
            if m is not None and count[m] < quota:
                given[task] = m
                count[m] += 1
        loads = {p: sum(count[m] for m in ms) for p, ms in on_process.items()}
        heap = [(loads[p] / len(ms), p) for p, ms in on_process.items()]
        heapq.heapify(heap)
        for task in sorted(t for t in tasks if t not in given):  # the rest to the least loaded process
            while True:
                load, p = heapq.heappop(heap)
                if load == loads[p] / len(on_process[p]):
                    break
            m = min(on_process[p], key=count.__getitem__)
            given[task] = m
            count[m] += 1
            loads[p] += 1
            heapq.heappush(heap, (loads[p] / len(on_process[p]), p))
        for task, m in given.items():
            targets[m]["active"].setdefault(task[0], set()).add(task[1])
        standbys = self.setting(group.group_id, "streams.num.standby.replicas")
        if standbys:
            self._standbys(members, tasks, stateful, given, process, count, was_standby, standbys, targets)
        group.target = targets

    @staticmethod
    def _standbys(members, tasks, stateful, given, process, count, was_standby, standbys, targets):
        """Standby replicas of each stateful task on processes without it: where one was before, else on the
        member with the fewest tasks."""
        heap = [(count[m], i, m) for i, m in enumerate(members)]
        heapq.heapify(heap)
        order = {m: i for i, m in enumerate(members)}
        for task in sorted((t for t in tasks if t[0] in stateful), key=lambda t: (t[1], t[0]), reverse=True):
            holding = {process[given[task]]}
            for _ in range(standbys):
                before = [m for m in was_standby.get(task, ()) if process[m] not in holding]
                if before:
                    m = min(before, key=count.__getitem__)
                else:
                    skipped, m = [], None
                    while heap:
                        c, i, candidate = heapq.heappop(heap)
                        if c != count[candidate]:
                            continue  # stale
                        if process[candidate] in holding:
                            skipped.append((c, i, candidate))
                            continue
                        m = candidate
                        break
                    for item in skipped:
                        heapq.heappush(heap, item)
                    if m is None:
                        break
                targets[m]["standby"].setdefault(task[0], set()).add(task[1])
                count[m] += 1
                heapq.heappush(heap, (count[m], order[m], m))
                holding.add(process[m])

    def _reconcile(self, group, member, target_epoch, target, owned, now):
        """The member's next step toward its target (Kafka's streams CurrentAssignmentBuilder)."""
        if member.state == MEMBER_STABLE and member.member_epoch == target_epoch:
            return
        if member.state == UNREVOKED_TASKS:
            if owned is None or any(_pairs(owned, r) & _pairs(member.pending, r) for r in ROLES):
                return
        active_owners, held = group.owners(member.member_id)
        keep, revoke, give = no_tasks(), no_tasks(), no_tasks()
        unreleased = False
        for role in ROLES:
            current, wanted = _pairs(member.assigned, role), _pairs(target, role)
            kept = current & wanted
            new = set()
            for task in wanted - current:
                # another member's active task (or one it is giving up), or one this process holds already
                busy = (role == "active" and task in active_owners) or (member.process_id, task) in held
                if busy:
                    unreleased = True
                else:
                    new.add(task)
            keep[role], revoke[role], give[role] = _from_pairs(kept), _from_pairs(current - wanted), \
                _from_pairs(new)
        if any(revoke[role] for role in ROLES):
            member.state = UNREVOKED_TASKS
            member.assigned, member.pending = keep, revoke
            member.revocation_deadline = now + max(member.rebalance_timeout_ms, 0)
            return
        for role in ROLES:
            for s, ps in give[role].items():
                keep[role].setdefault(s, set()).update(ps)
        member.previous_epoch, member.member_epoch = member.member_epoch, target_epoch
        member.assigned, member.pending = keep, no_tasks()
        member.state = UNRELEASED_TASKS if unreleased else MEMBER_STABLE
        member.revocation_deadline = None

    def _endpoints(self, group, member):
        """[(endpoint, {topic: active partitions}, {topic: standby partitions})] of every member with an endpoint,
        this one last."""
        out = []
        by_sub = {}
        for s in group.topology["subtopologies"]:
            by_sub[s["id"]] = [*s["source_topics"], *(r["name"] for r in s["repartition_source_topics"])]
        for m in [*(m for m in group.members.values() if m is not member), member]:
            if m.user_endpoint is None:
                continue
            parts = []
            for role in ("active", "standby"):
                topics = {}
                for s, ps in m.assigned[role].items():
                    for topic in by_sub.get(s, ()):
                        size = len(self.cluster.topics[topic].partitions) if topic in self.cluster.topics else 0
                        topics.setdefault(topic, set()).update(p for p in ps if p < size)
                parts.append(topics)
            out.append((m.user_endpoint, parts[0], parts[1]))
        return out

    # ---- offsets ---------------------------------------------------------------------------------------------

    def commit_error(self, group, request, version, transactional=False):
        """Whether a streams group member may commit (Kafka's StreamsGroup.validateOffsetCommit): at its epoch, or
        at the one before while it still held the tasks; from OffsetCommit v9. Anyone may commit to an empty
        group without an epoch."""
        epoch, member_id = request.generation_id_or_member_epoch, request.member_id
        if epoch < 0 and not group.members:
            return errors.NONE
        if transactional and epoch == -1 and member_id == "":
            return errors.NONE
        member = group.members.get(member_id)
        if member is None:
            return errors.UNKNOWN_MEMBER_ID
        if not transactional and version < 9:
            return errors.UNSUPPORTED_VERSION
        if epoch > member.member_epoch:
            return errors.STALE_MEMBER_EPOCH
        if epoch < member.member_epoch and epoch < member.previous_epoch:
            return errors.STALE_MEMBER_EPOCH
        return errors.NONE

    @staticmethod
    def fetch_error(group, member_id, epoch):
        """OffsetFetch from a member: it must be known and at its epoch."""
        if member_id is None and epoch < 0:
            return errors.NONE
        member = group.members.get(member_id)
        if member is None:
            return errors.UNKNOWN_MEMBER_ID
        return errors.NONE if epoch == member.member_epoch else errors.STALE_MEMBER_EPOCH

    def forget_topic(self, group, name):
        group.configured = None  # worked out again at the next heartbeat
