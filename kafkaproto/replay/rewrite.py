"""What a target broker made up where the capture holds its own broker's values, and the capture's requests
rewritten to use them.

Each value is learned from the answer that introduced it, by setting the captured answer beside the target's answer
to the same request:

- producer ids and epochs: InitProducerId, and EndTxn from v5 (which bumps the epoch every transaction);
- topic IDs: any answer that pairs a topic's name with its ID (Metadata, CreateTopics, DescribeTopicPartitions,
  DeleteTopics, ...); an ID no answer has paired yet falls back to the target's ID for the same name;
- member ids and generations: JoinGroup, and the KIP-848 heartbeats' member ids and epochs (generations and member
  epochs are kept per group);
- fetch session ids: Fetch;
- node ids, their hosts and ports, and cluster ids: Metadata, DescribeCluster, FindCoordinator;
- offsets: when the target's log holds another history, the first Produce or ListOffsets answer for a partition
  sets how far its offsets lie from the capture's (a shift) from that position on; every offset an answer gave
  (a produce's base offset, a ListOffsets result such as the log's start) stands for its own counterpart. Fetch
  offsets and commits are moved accordingly, and the target's answers moved back before they are compared; an
  offset before the shifted range that no answer paired (older history) is left as it is, and shows as a
  divergence where it matters.

Record batches in Produce requests carry the producer id and epoch in their headers: those are rewritten too, and
the batch's CRC computed again. Nothing here does I/O.
"""

from ..messages import ApiKey
from ..records.header import (HEADER_SIZE, MAGIC_OFFSET, base_offset, batch_spans, read_header, set_base_offset,
                              set_producer)
from ..uuid import Uuid
from .. import fields
from ..fields import (GENERATION, MEMBER, NODE, OFFSET, PRODUCER_EPOCH, PRODUCER_ID, RECORDS,
                     SESSION, TOPIC_ID)

_HEARTBEATS = (ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_HEARTBEAT)
_POSITIONS = (ApiKey.PRODUCE, ApiKey.LIST_OFFSETS)
_NODE_LABELS = ("node_id", "leader_id", "controller_id", "broker_id", "replica_nodes", "isr_nodes")


class Values:
    """One target's values for the capture's (see the module's doc)."""

    def __init__(self, plan):
        self.plan = plan
        self.producers = {}  # (producer id, epoch) -> the target's (producer id, epoch)
        self.producer_ids = {}
        self.topic_ids = {}  # captured topic id -> the target's
        self.target_ids = {}  # topic name -> the target's latest id for it
        self.target_names = {}  # the target's topic id -> name
        self.members = {}
        self.generations = {}  # (group id, generation or member epoch) -> the target's
        self.sessions = {}
        self.nodes = {}  # captured node id -> the target's
        self.endpoints = {}  # the target's node id -> (host, port)
        self.clusters = {}
        self.shifts = {}  # (topic name, partition) -> (captured offset from which it holds, target - captured)
        self.offsets = {}  # (topic name, partition) -> {captured offset: the target's}, as answers paired them

    # ---- learning from answers ----

    def learn(self, step, answer):
        """Set the captured answer to step beside the target's answer, and keep what the target made up."""
        captured = step.answer
        if captured is None or answer is None:
            return
        self._topic_ids(answer, self.target_ids, self.target_names)
        pairs = {}
        self._topic_ids(captured, pairs, {})
        for name, captured_id in pairs.items():
            if name in self.target_ids:
                self.topic_ids[captured_id] = self.target_ids[name]
        key = step.exchange.api_key
        group = getattr(step.request, "group_id", None)
        if key in (ApiKey.INIT_PRODUCER_ID, ApiKey.END_TXN):
            if captured.producer_id >= 0 and answer.producer_id >= 0:
                self.producers[(captured.producer_id, captured.producer_epoch)] = (answer.producer_id,
                                                                                   answer.producer_epoch)
                self.producer_ids[captured.producer_id] = answer.producer_id
        elif key == ApiKey.JOIN_GROUP:
            self._member(captured.member_id, answer.member_id)
            if captured.generation_id >= 0 and answer.generation_id >= 0:
                self.generations[(group, captured.generation_id)] = answer.generation_id
            statics = {m.group_instance_id: m.member_id for m in answer.members if m.group_instance_id}
            for member in captured.members:
                if member.group_instance_id in statics:
                    self._member(member.member_id, statics[member.group_instance_id])
        elif key in _HEARTBEATS:
            self._member(captured.member_id, answer.member_id)
            if captured.member_epoch > 0 and answer.member_epoch > 0:
                self.generations[(group, captured.member_epoch)] = answer.member_epoch
        elif key == ApiKey.FETCH:
            if captured.session_id and answer.session_id:
                self.sessions[captured.session_id] = answer.session_id
        elif key in (ApiKey.METADATA, ApiKey.DESCRIBE_CLUSTER):
            if captured.cluster_id and answer.cluster_id:
                self.clusters[captured.cluster_id] = answer.cluster_id
            self._brokers(captured.brokers, answer.brokers)
        elif key == ApiKey.FIND_COORDINATOR:
            if step.exchange.api_version >= 4:
                theirs = {c.key: c for c in answer.coordinators}
                self._brokers([c for c in captured.coordinators if c.key in theirs and c.error_code == 0],
                              [theirs[c.key] for c in captured.coordinators if c.key in theirs and c.error_code == 0])
            elif captured.error_code == 0 and answer.error_code == 0:
                self._brokers([captured], [answer])
        if key in _POSITIONS:
            mine, theirs = self._positions(captured, True), self._positions(answer, False)
            ends = None if key == ApiKey.PRODUCE else _asked_latest(step.request)
            for place, offset in mine.items():
                if place in theirs:
                    self.offsets.setdefault(place, {})[offset] = theirs[place]
                    # Only the log's end (a produce, ListOffsets of the latest) says where the histories part; the
                    # earliest offset, or one found by a time, pairs with its counterpart alone.
                    if place not in self.shifts and (ends is None or place in ends):
                        self.shifts[place] = (offset, theirs[place] - offset)

    def _member(self, captured, target):
        if captured and target:
            self.members[captured] = target

    def _brokers(self, captured, target):
        """Node ids paired by their order (brokers list them by id); each target node's endpoint kept."""
        for node in target:
            self.endpoints[fields.node_id(node)] = (node.host, node.port)
        if len(captured) == len(target):
            for mine, theirs in zip(sorted(captured, key=fields.node_id), sorted(target, key=fields.node_id)):
                self.nodes[fields.node_id(mine)] = fields.node_id(theirs)

    @staticmethod
    def _topic_ids(body, ids, names):
        def see(role, value, where, obj):
            if role == TOPIC_ID and value != Uuid.ZERO and where.topic:
                ids[where.topic] = value
                names[value] = where.topic

        fields.visit(body, see)

    def _positions(self, body, captured):
        """{(topic name, partition): offset} of the partitions an answer reports a position for."""
        found = {}

        def see(role, value, where, obj):
            if role == OFFSET and value >= 0 and getattr(obj, "error_code", 0) == 0 and where.partition is not None:
                name = self._topic_of(where, captured)
                if name is not None:
                    found.setdefault((name, where.partition), value)

        fields.visit(body, see)
        return found

    def _topic_of(self, where, captured):
        if where.topic:
            return where.topic
        if where.topic_id is None:
            return None
        return (self.plan.topic_names if captured else self.target_names).get(where.topic_id)

    # ---- rewriting requests ----

    def request(self, step):
        """The captured request of step, with the target's values where it has them."""
        return fields.edit(step.request, self._to_target)

    def _to_target(self, role, value, where, obj):
        if role == PRODUCER_ID:
            pair = self.producers.get((value, fields.sibling(obj, PRODUCER_EPOCH)))
            return pair[0] if pair else self.producer_ids.get(value, value)
        if role == PRODUCER_EPOCH:
            pair = self.producers.get((fields.sibling(obj, PRODUCER_ID), value))
            return pair[1] if pair else value
        if role == TOPIC_ID:
            found = self.topic_ids.get(value)
            if found is None:
                found = self.target_ids.get(self.plan.topic_names.get(value), value)
            return found
        if role == MEMBER:
            return self.members.get(value, value)
        if role == GENERATION:
            return self.generations.get((where.group, value), value)
        if role == SESSION:
            return self.sessions.get(value, value)
        if role == NODE:
            if isinstance(value, list):
                return [self.nodes.get(v, v) for v in value]
            return self.nodes.get(value, value)
        if role == OFFSET:
            return self._offset(where, value, True)
        if role == RECORDS and (self.producers or self.producer_ids):
            return _patch_batches(value, producer=self._producer_of)
        return value

    def _producer_of(self, producer_id, epoch):
        return self.producers.get((producer_id, epoch)) or (self.producer_ids.get(producer_id, producer_id), epoch)

    def _offset(self, where, value, to_target):
        """An offset of the capture in the target's terms (to_target), or the target's in the capture's."""
        if value < 0 or not self.shifts or where.partition is None:
            return value
        place = (self._topic_of(where, to_target), where.partition)
        pairs = self.offsets.get(place, {})
        if not to_target:
            pairs = {theirs: mine for mine, theirs in pairs.items()}
        if value in pairs:
            return pairs[value]
        start, delta = self.shifts.get(place, (0, 0))
        if to_target:
            return value + delta if value >= start else value
        return value - delta if value >= start + delta else value

    def _batches_back(self, where, data):
        """Record batches of the target's with their base offsets in the capture's terms."""
        if not self.shifts or where.partition is None:
            return data
        out, moved = bytearray(data), False
        for position, _ in batch_spans(out):
            base = base_offset(out, position)
            back = self._offset(where, base, False)
            if back != base:
                set_base_offset(out, position, back)
                moved = True
        return bytes(out) if moved else data

    # ---- the target's answers in the capture's terms ----

    def answer(self, step, answer):
        """The target's answer with its offsets in the capture's terms (identifiers are compared by labels)."""
        if not any(delta for _, delta in self.shifts.values()) or answer is None:
            return answer

        def back(role, value, where, obj):
            if role == OFFSET:
                return self._offset(where, value, False)
            if role == RECORDS and value is not None:
                return self._batches_back(where, value)
            return value

        return fields.edit(answer, back)

    def learn_setup(self, setup):
        """What setting up learned of the target: its brokers, and the IDs of the topics it has."""
        for node in setup.brokers:
            self.endpoints[fields.node_id(node)] = (node.host, node.port)
        for name, topic_id in setup.topic_ids.items():
            if topic_id != Uuid.ZERO:
                self.target_ids[name] = topic_id
                self.target_names[topic_id] = name

    def endpoint(self, address, port):
        """(host, port) of the target's broker for the capture's broker at address:port, or None when the capture
        does not say which node that was, or the target's node for it is not known (use the bootstrap server)."""
        node = self.plan.node_of(address, port)
        return None if node is None else self.endpoints.get(self.nodes.get(node))

    def name_labels(self, captured, target):
        """Give the target's identifiers the labels (compare.Labels) of the captured ones they stand for, so that
        the two sides' answers are compared by who is who whatever order they list them in."""
        topic_ids = {mine: self.target_ids[name] for mine, name in self.plan.topic_names.items()
                     if name in self.target_ids}
        topic_ids.update(self.topic_ids)
        pairs = [("producer_id", self.producer_ids), ("topic_id", topic_ids), ("member_id", self.members),
                 ("session_id", self.sessions), ("cluster_id", self.clusters)]
        pairs += [(field, self.nodes) for field in _NODE_LABELS]
        for field, mapping in pairs:
            for mine, theirs in mapping.items():
                label = captured(field, mine)
                if label != mine:
                    target.name(field, theirs, label)


LATEST = -1  # ListOffsets' timestamp asking for the log's end


def _asked_latest(request):
    """{(topic name, partition)} a ListOffsets request asks the log's end of."""
    return {(t.name, p.partition_index) for t in request.topics for p in t.partitions if p.timestamp == LATEST}


def _patch_batches(data, producer=None, offset_delta=0):
    """Record batches with each v2 batch's producer (id, epoch) replaced by producer(id, epoch) (and its CRC
    computed again), and every batch's base offset moved by offset_delta. Bytes that do not read as whole batches
    are kept as they are."""
    out = bytearray(data)
    for position, size in batch_spans(out):
        if offset_delta:
            set_base_offset(out, position, base_offset(out, position) + offset_delta)
        if producer is not None and size >= HEADER_SIZE and out[position + MAGIC_OFFSET] == 2:
            header = read_header(out, position)
            old = header.producer_id, header.producer_epoch
            new = producer(*old) if old[0] >= 0 else old
            if new != old:
                set_producer(out, position, size, *new)
    return bytes(out)
