"""Incremental fetch sessions (KIP-227): a consumer names its partitions once, then asks only for changes.

A session remembers, per partition, where the consumer fetches from and what
the last response said (high watermark, last stable offset, log start); an
incremental fetch answers only the partitions with records or with something
new to say. Sessions are kept by id in a cache of max.incremental.fetch.session.
cache.slots (1,000 by default), the least recently used making room.
"""

import random
import time
from collections import OrderedDict


class CachedPartition:
    __slots__ = ("topic", "name", "index", "fetch_offset", "max_bytes", "high_watermark", "stable", "log_start")

    def __init__(self, topic, name, index, fetch_offset, max_bytes):
        self.topic = topic  # the session's key for the topic: its ID (v13+) or its name
        self.name = name
        self.index = index
        self.fetch_offset = fetch_offset
        self.max_bytes = max_bytes
        self.high_watermark = self.stable = self.log_start = None  # as last answered; None: never answered


class FetchSession:
    def __init__(self, session_id, uses_ids, partitions):
        self.session_id = session_id
        self.uses_ids = uses_ids
        self.partitions = partitions  # OrderedDict (topic key, index) -> CachedPartition
        self.epoch = 1  # the epoch the next incremental fetch must carry
        self.used = time.monotonic()


class FetchSessions:
    def __init__(self, slots=1000):
        self.slots = slots
        self.sessions = OrderedDict()

    def get(self, session_id):
        session = self.sessions.get(session_id)
        if session is not None:
            self.sessions.move_to_end(session_id)
            session.used = time.monotonic()
        return session

    def create(self, uses_ids, partitions):
        """A new session, or None when there is no room (the fetch is then answered without one)."""
        if self.slots <= 0:
            return None
        while len(self.sessions) >= self.slots:
            self.sessions.popitem(last=False)
        session_id = 0
        while session_id == 0 or session_id in self.sessions:
            session_id = random.randint(1, 2**31 - 1)
        session = self.sessions[session_id] = FetchSession(session_id, uses_ids, partitions)
        return session

    def remove(self, session_id):
        self.sessions.pop(session_id, None)
