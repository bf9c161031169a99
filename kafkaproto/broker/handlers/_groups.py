"""What the group handlers share: the clock they move the groups to, and how long a parked request waits."""

import time

from ..dispatch import Wait


def advance(state):
    """Fire the group timers due by now (a member whose session ended is gone before its next request is
    looked at); the time, for the request to use."""
    now = time.monotonic()
    if state.groups.tick(now):
        state.changed()
    return now


def until_next_deadline(state):
    """Wait for a change, or until the next group timer is due (asked again then, the handler advances)."""
    deadline = state.groups.next_deadline()
    if deadline is None:
        return Wait(1000)
    return Wait(max(int((deadline - time.monotonic()) * 1000) + 1, 1))
