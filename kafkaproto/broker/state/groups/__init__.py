"""Groups: the coordinator that owns them (coordinator.py), and the rules of each kind.

    coordinator.py  GroupCoordinator: every group and its offsets; one method per group API, routed by kind
    classic.py      the classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup): its state diagram
    consumer.py     KIP-848 consumer groups (ConsumerGroupHeartbeat), and the classic members they take in
    assignors.py    KIP-848's server-side assignors (uniform, range)
    embedded.py     the consumer protocol's subscription and assignment bytes, read and written
    offsets.py      committed offsets, in the broker's offsets log
    stored.py       what a group keeps of its membership across a restart, in the same log
"""

from .classic import (COMPLETING, DEAD, EMPTY, PREPARING, STABLE, ClassicGroup, JoinRequest, JoinResult,
                      SyncResult, Waiter)
from ..clock import clock_ms
from .coordinator import GroupCoordinator
from .offsets import OFFSETS_DIR

__all__ = ["COMPLETING", "DEAD", "EMPTY", "PREPARING", "STABLE", "ClassicGroup", "GroupCoordinator", "JoinRequest",
           "JoinResult", "OFFSETS_DIR", "SyncResult", "Waiter", "clock_ms"]
