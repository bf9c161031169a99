"""Topic names behind topic IDs: every pair the traffic carries, so that what Kafka 4's clients send by ID only
(Produce v13, Fetch v13 and later; KIP-516) can be shown by name.

    names = TopicNames()
    for ex in read_capture("traffic.pcap", names=names):   # learns as it reads
        ex.topics                                          # carried names and IDs, and the names of those IDs
    names.name(topic_id)                                   # "orders", or None
    names.update(TopicNames.load("names.json"))            # {"<id>": "<name>"}, CSV id,name, or a metadata log

Pairs come from the answers that carry a topic's name beside its ID (Metadata, DescribeTopicPartitions, CreateTopics,
DeleteTopics, ConsumerGroupDescribe) and from KRaft's TopicRecords wherever they are read: in the Fetch answers
that replicate ``__cluster_metadata`` (a controller's traffic), or in a metadata log's segment files. A topic ID
names one topic for ever (a re-created topic gets a new ID), so pairs from any connection, file or task merge
(``update``). Nothing here does I/O but ``load``.
"""

import csv
import io
import json
import os
from collections import deque

from ..exceptions import KafkaProtoError
from ..fields import topic_pairs, unnamed_in
from ..messages import ApiKey
from ..metadata import decode_record
from ..uuid import Uuid

# Answers that may pair names with IDs.
NAMING = frozenset({ApiKey.METADATA, ApiKey.DESCRIBE_TOPIC_PARTITIONS, ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS,
                    ApiKey.CONSUMER_GROUP_DESCRIBE})
METADATA_TOPIC = "__cluster_metadata"
_TOPIC_RECORD = 2  # KRaft's TopicRecord type


class TopicNames:
    """Topic ID -> name pairs (see the module's doc). ``conflicts`` counts pairs that named a known ID otherwise
    (the first is kept: an ID never changes its name)."""

    def __init__(self, pairs=None):
        self._by_id = self.known = {}  # topic id -> name; ``known`` for unnamed_in(message, names.known)
        self.conflicts = 0
        for topic_id, name in (pairs or {}).items():
            self.add(topic_id, name)

    def __len__(self):
        return len(self._by_id)

    def __contains__(self, topic_id):
        return topic_id in self._by_id

    def items(self):
        return self._by_id.items()

    def name(self, topic_id):
        """The name of a topic ID (a Uuid or its text), or None."""
        if isinstance(topic_id, str):
            try:
                topic_id = Uuid.from_string(topic_id)
            except ValueError:
                return None
        return self._by_id.get(topic_id)

    def add(self, topic_id, name):
        if isinstance(topic_id, str):
            topic_id = Uuid.from_string(topic_id)
        if not name or topic_id is None or topic_id == Uuid.ZERO:
            return
        known = self._by_id.setdefault(topic_id, name)
        if known != name:
            self.conflicts += 1

    def update(self, other):
        """Take in the pairs of another TopicNames (or a {topic id: name} mapping)."""
        for topic_id, name in (other.items() if hasattr(other, "items") else other):
            self.add(topic_id, name)

    # ---- learning from traffic ----

    def learn(self, ex):
        """Take in the pairs an exchange carries; True when it taught anything new."""
        key, answer = ex.api_key, ex.response
        if answer is None:
            return False
        before = len(self._by_id)
        if key in NAMING:
            self._pairs(answer)
        elif key == ApiKey.FETCH:
            self._metadata_log(answer)
        return len(self._by_id) != before

    def _pairs(self, obj):
        topic_pairs(obj, self.add)

    def _metadata_log(self, answer):
        """TopicRecords in the batches of __cluster_metadata a Fetch answer replicates."""
        for topic in answer.responses:
            if topic.topic != METADATA_TOPIC and getattr(topic, "topic_id", None) != Uuid.METADATA_TOPIC_ID:
                continue
            for partition in topic.partitions:
                self.read_metadata_records(partition.records)

    def read_metadata_records(self, data):
        """Take in the TopicRecords of KRaft metadata record batches (bytes); what does not read is skipped."""
        from .. import records as _records  # here: the codec's import (tens of ms) is not every command's

        try:
            for batch in _records.iter_batches(data or b"", allow_partial=True):
                if batch.is_control:
                    continue
                for record in batch:
                    value = record.value
                    if value is None or len(value) < 3 or value[1] != _TOPIC_RECORD:
                        continue  # the frame version, then the record type: only TopicRecords name topics
                    try:
                        topic, _ = decode_record(value)
                    except KafkaProtoError:
                        continue
                    self.add(topic.topic_id, topic.name)
        except KafkaProtoError:
            pass

    # ---- from files ----

    @classmethod
    def load(cls, path):
        """Pairs from a file: JSON ({"<topic id>": "<name>"}), CSV (topic id, name on each line; a header line is
        skipped), or KRaft metadata: a segment file (``.log``) or a ``__cluster_metadata-0`` folder. ValueError
        says what in the file does not fit."""
        names = cls()
        if os.path.isdir(path):
            segments = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".log"))
            if not segments:
                raise ValueError(f"{path}: no .log segment files (a metadata log folder holds them)")
            for segment in segments:
                with open(segment, "rb") as f:
                    names.read_metadata_records(f.read())
            return names
        with open(path, "rb") as f:
            data = f.read()
        if path.endswith(".log"):
            names.read_metadata_records(data)
            return names
        text = data.decode("utf-8")
        if text.lstrip().startswith("{"):
            try:
                pairs = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: not JSON: {e}") from None
            for topic_id, name in pairs.items():
                names._add_text(path, topic_id, name)
            return names
        for number, row in enumerate(csv.reader(io.StringIO(text)), 1):
            if not row or (number == 1 and row[0].strip().lower() in ("topic_id", "id", "topic id")):
                continue
            if len(row) != 2:
                raise ValueError(f"{path}, line {number}: expected topic id,name, got {len(row)} fields")
            names._add_text(f"{path}, line {number}", row[0].strip(), row[1].strip())
        return names

    def _add_text(self, where, topic_id, name):
        try:
            self.add(Uuid.from_string(topic_id), name)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{where}: {topic_id!r} is not a topic id: {e}") from None

    def to_json(self):
        return {str(topic_id): name for topic_id, name in self._by_id.items()}

    def unnamed_in(self, body):
        """Whether a message names a topic by an id these names do not know: its topic ids are read from the
        structs that hold them, not from the partitions below them."""
        return unnamed_in(body, self._by_id)


HOLD = 10_000  # exchanges held at most behind one whose topic id has no name yet


def held(items, limit=HOLD, exchange=None):
    """The items (exchanges, or what exchange(item) gives one of) in their order, each let go once every topic id
    its exchange names has a name, or once ``limit`` items wait behind the first that does not (a name the
    traffic gives later then comes too late for it). A capture that starts after its clients learned their
    topics' IDs names them only at the next Metadata answer: this is how a request seen before that answer still
    gets its topic's name."""
    waiting = deque()
    for item in items:
        if waiting or (item if exchange is None else exchange(item)).unnamed:
            waiting.append(item)
            while waiting and (len(waiting) > limit or
                               not (waiting[0] if exchange is None else exchange(waiting[0])).unnamed):
                yield waiting.popleft()
        else:
            yield item
    yield from waiting
