"""Java's hash codes, where Kafka's choices depend on them: which partition of an internal topic keeps a key
(coordinator_logs.py), and the iteration order of Java's hash maps that assignors follow (groups/assignors.py)."""


def int32(value):
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def string_hash(text):
    """java.lang.String.hashCode, over UTF-16 code units."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return int32(h)


def uuid_hash(uuid):
    """org.apache.kafka.common.Uuid.hashCode: the halves of msb ^ lsb, xored."""
    x = uuid.most_significant_bits ^ uuid.least_significant_bits
    return int32((x >> 32) ^ x)
