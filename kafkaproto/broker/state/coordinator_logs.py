"""The logs a coordinator keeps its records in: one per partition of its internal topic, each key's records in the
partition Kafka's hashing picks for it, so that the partitions' leaders spread the keys over the brokers.

Kafka picks ``Utils.abs(key.hashCode()) % partitions``: a group's id for ``__consumer_offsets``, a transactional
id for ``__transaction_state``, ``group:topic id:partition`` for ``__share_group_state``. The number of partitions
is the setting's (offsets.topic.num.partitions and its peers) until the topic is first served; from then on it is
the topic's own, as Kafka reads it from the topic once it exists, so a changed setting moves no key.
"""

import functools
import os
import re

from ...uuid import Uuid
from .data_dir import read_partition_metadata
from .java_hashes import string_hash
from .log import PartitionLog

# The coordinators' internal topics
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTIONS_TOPIC = "__transaction_state"
SHARE_STATE_TOPIC = "__share_group_state"
# A directory of one of their partitions, which the start-up scan never takes for a topic's
PARTITION_DIR = re.compile(r"(__consumer_offsets|__transaction_state|__share_group_state)-[0-9]+")


def partition_for(key, partitions):
    """The partition Kafka's coordinators keep key in: Utils.abs (0 for Integer.MIN_VALUE) of its hash, modulo."""
    if partitions == 1:  # a broker alone: no hash to work out for each commit and request
        return 0
    return _partition_for(key, partitions)


@functools.lru_cache(maxsize=4096)  # the hash is a Python loop over the key; the same keys come again and again
def _partition_for(key, partitions):
    h = string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def share_key(group_id, topic_id, partition):
    """The key a share partition's state is found by: ``group:topic id:partition`` (SharePartitionKey's)."""
    return f"{group_id}:{topic_id}:{partition}"


_INT32 = re.compile(r"[+-]?[0-9]+")  # as Java's Integer.parseInt reads a number


def parse_share_key(text):
    """``group:topic id:partition`` (the group may hold colons) as Kafka reads it (SharePartitionKey, the partition
    by Integer.parseInt) and writes it again to hash it; ValueError when it is not of that form."""
    group_id, _, partition = text.rpartition(":")
    group_id, _, topic_id = group_id.rpartition(":")
    if not group_id or not _INT32.fullmatch(partition) or not -2**31 <= int(partition) < 2**31:
        raise ValueError(f"{text!r} is not a share partition's key (group:topic id:partition)")
    return share_key(group_id, Uuid.from_string(topic_id), int(partition))


class CoordinatorLogs:
    """The partition logs of one internal topic, under log_dir as ``topic-0`` .. ``topic-(n-1)``."""

    def __init__(self, log_dir, topic, partitions, files):
        self.topic = topic
        count = partitions
        pattern = re.compile(re.escape(topic) + r"-([0-9]+)")
        names = os.listdir(log_dir) if os.path.isdir(log_dir) else ()
        found = sorted(int(m.group(1)) for m in map(pattern.fullmatch, names)
                       if m and os.path.isdir(os.path.join(log_dir, m.group(0))))
        served = [i for i in found if _was_served(os.path.join(log_dir, f"{topic}-{i}"))]
        self.served = bool(served)  # whether the topic was served before: it is again, from the start
        if served:  # the topic's own count (each of its partitions' directories keeps its id once it is served)
            count = served[-1] + 1
        # Recovered at every start (a torn last batch is cut off), whatever the metadata log's clean-stop marker
        # says: these logs are small beside the partitions, and read whole anyway.
        self.logs = [PartitionLog(os.path.join(log_dir, f"{topic}-{i}"), files=files, recover=True)
                     for i in range(count)]

    def __len__(self):
        return len(self.logs)

    def __iter__(self):
        return iter(self.logs)

    def index_of(self, key):
        return partition_for(key, len(self.logs))

    def log_for(self, key):
        return self.logs[self.index_of(key)]

    def close(self):
        for partition_log in self.logs:
            partition_log.close()


def _was_served(directory):
    """Whether a partition directory belongs to a topic that was served: it keeps the topic's id or holds
    records."""
    try:
        if read_partition_metadata(directory) is not None:
            return True
    except ValueError:
        return True
    return any(name.endswith(".log") and os.path.getsize(os.path.join(directory, name)) > 0
               for name in os.listdir(directory))
