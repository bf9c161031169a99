"""The features this broker implements, with the levels it supports: a new cluster finalizes each at its highest,
as a new Kafka 4.3 cluster does, and UpdateFeatures (kafka-features) may move it within them. Clients read the
finalized levels in ApiVersions to choose protocols.

- transaction.version 2: KIP-890's epoch bump at every end, partitions and groups joining a transaction on their
  own (1: the first protocol's requests only, as clients then choose);
- group.version 1: KIP-848 consumer groups (0: ConsumerGroupHeartbeat and ConsumerGroupDescribe are not
  served, as on Kafka);
- share.version 1: share groups (KIP-932; 0: their APIs are not served);
- streams.version 1: streams groups (KIP-1071; 0: their APIs are not served).
"""

FEATURES = {"group.version": (0, 1), "share.version": (0, 1), "streams.version": (0, 1), "transaction.version": (0, 2)}


def consumer_groups_enabled(state):
    return state.cluster.features.get("group.version", 0) >= 1


def share_groups_enabled(state):
    return state.cluster.features.get("share.version", 0) >= 1


def streams_groups_enabled(state):
    return state.cluster.features.get("streams.version", 0) >= 1
