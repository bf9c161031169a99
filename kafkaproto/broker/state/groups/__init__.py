"""Every group this broker coordinates, and the offsets they commit.

``Groups.groups`` maps a group id to its group object; each has a ``kind``
("classic": the JoinGroup/SyncGroup protocol, in classic.py; "consumer":
KIP-848's, in consumer.py, with the assignors in assignors.py) and a
``state``. Committed offsets live in their own store (offsets.py), whatever
kind of group commits them, and survive a restart; as in Kafka, a group id
with offsets but no members is an Empty classic group. Time moves on through
``tick(now)``: handlers call it before they look at a group, the server's
housekeeping calls it too.
"""

from .classic import (COMPLETING, DEAD, EMPTY, PREPARING, STABLE, ClassicGroup, JoinRequest, JoinResult,
                      SyncResult, Waiter)
from .offsets import OFFSETS_DIR, OffsetStore

__all__ = ["COMPLETING", "DEAD", "EMPTY", "PREPARING", "STABLE", "ClassicGroup", "Groups", "JoinRequest",
           "JoinResult", "OFFSETS_DIR", "SyncResult", "Waiter"]


class Groups:
    def __init__(self, config, log_dir, files=None):
        self.config = config
        self.groups = {}
        self.offsets = OffsetStore(log_dir, files)
        for group_id in self.offsets.by_group:
            self.groups[group_id] = ClassicGroup(group_id, config)

    def group(self, group_id, create=False):
        """The group of that id (of any kind), or None; create makes an empty classic group."""
        group = self.groups.get(group_id)
        if group is None and create:
            group = self.groups[group_id] = ClassicGroup(group_id, self.config)
        return group

    def replace(self, group_id):
        """An empty classic group in place of a group of another kind (an empty one converts freely)."""
        group = self.groups[group_id] = ClassicGroup(group_id, self.config)
        return group

    def tick(self, now):
        """Fire every group timer due by now (monotonic seconds); True when any did."""
        fired = False
        for group in list(self.groups.values()):
            while group.fire_next(now):
                fired = True
        return fired

    def next_deadline(self):
        return min((d for d in (g.next_deadline() for g in self.groups.values()) if d is not None), default=None)

    def commit(self, group_id, offsets):
        """offsets: [((topic, partition), (offset, leader epoch, metadata, commit time ms))]."""
        self.group(group_id, create=True)
        self.offsets.commit(group_id, offsets)

    def committed(self, group_id):
        return self.offsets.committed(group_id)

    def expire_offsets(self, now_ms, retention_ms):
        """Drop old offsets of groups without members, then the empty groups left without offsets; the number of
        offsets dropped."""
        dropped = self.offsets.expire(now_ms, retention_ms, keep=lambda group_id: self._active(group_id))
        for group_id in [g for g, group in self.groups.items() if group.state == EMPTY
                         and not self.offsets.committed(g) and not self._active(g)]:
            del self.groups[group_id]
        return dropped

    def _active(self, group_id):
        group = self.groups.get(group_id)
        return group is not None and (group.state != EMPTY or bool(group.pending_join))

    def forget_topic(self, topic):
        """Drop the offsets of a deleted topic, so a topic re-created under its name starts clean."""
        self.offsets.forget_topic(topic)

    def delete(self, group_id):
        self.offsets.delete_group(group_id)
        self.groups.pop(group_id, None)

    def close(self):
        self.offsets.close()
