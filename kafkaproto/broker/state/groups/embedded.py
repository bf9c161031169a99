"""The consumer protocol embedded in classic group messages: a member's subscription (JoinGroup metadata) and its
assignment (SyncGroup), as Kafka's ConsumerProtocolSubscription and ConsumerProtocolAssignment write them.

The broker reads them only where a classic group and a KIP-848 consumer group meet (members moving from one
protocol to the other). Like Kafka's reader, it takes the fields of the versions it knows and ignores bytes a
newer version adds; anything short or negative is MalformedProtocol.
"""

from typing import NamedTuple


class MalformedProtocol(ValueError):
    pass


class Subscription(NamedTuple):
    version: int
    topics: list
    user_data: object  # bytes or None
    owned: list  # [(topic name, [partitions])], v1+
    generation: int  # v2+, else -1
    rack_id: object  # v3+, else None


class _Reader:
    def __init__(self, data):
        self.data = memoryview(bytes(data))
        self.at = 0

    def take(self, n):
        if n < 0 or self.at + n > len(self.data):
            raise MalformedProtocol(f"{n} bytes wanted at byte {self.at} of {len(self.data)}")
        chunk = self.data[self.at:self.at + n]
        self.at += n
        return chunk

    def int(self, size):
        return int.from_bytes(self.take(size), "big", signed=True)

    def string(self, nullable=False):
        n = self.int(2)
        if n == -1 and nullable:
            return None
        return bytes(self.take(n)).decode("utf-8", "replace")

    def bytes_(self):
        n = self.int(4)
        return None if n == -1 else bytes(self.take(n))

    def array(self, read):
        n = self.int(4)
        if n < 0 or n > len(self.data):  # a count no bytes could hold: refused before anything is made
            raise MalformedProtocol(f"an array of {n} at byte {self.at - 4}")
        return [read() for _ in range(n)]

    def topic_partitions(self):
        return self.string(), self.array(lambda: self.int(4))


def read_subscription(data):
    reader = _Reader(data)
    version = reader.int(2)
    if version < 0:
        raise MalformedProtocol(f"version {version}")
    topics = reader.array(reader.string)
    user_data = reader.bytes_()
    owned = reader.array(reader.topic_partitions) if version >= 1 else []
    generation = reader.int(4) if version >= 2 else -1
    rack_id = reader.string(nullable=True) if version >= 3 else None
    return Subscription(version, topics, user_data, owned, generation, rack_id)


def read_assignment(data):
    """({topic name: [partitions]}, user data) of a SyncGroup assignment (empty bytes: nothing assigned)."""
    if not data:
        return {}, None
    reader = _Reader(data)
    if reader.int(2) < 0:
        raise MalformedProtocol("negative version")
    partitions = dict(reader.array(reader.topic_partitions))
    return partitions, reader.bytes_()


def write_assignment(version, partitions):
    """A ConsumerProtocolAssignment at version (0-3; they share one layout) of {topic name: partitions}."""
    out = [min(max(version, 0), 3).to_bytes(2, "big"), len(partitions).to_bytes(4, "big")]
    for name in sorted(partitions):
        encoded = name.encode()
        parts = sorted(partitions[name])
        out += [len(encoded).to_bytes(2, "big"), encoded, len(parts).to_bytes(4, "big")]
        out += [p.to_bytes(4, "big", signed=True) for p in parts]
    out.append((-1).to_bytes(4, "big", signed=True))  # no user data
    return b"".join(out)
