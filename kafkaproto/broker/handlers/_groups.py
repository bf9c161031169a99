"""What the group handlers share: the clock they move the groups to, how long a parked request waits, and
whether the client may use the group."""

from ... import errors

from ..dispatch import Wait
from ..state.acls import GROUP, READ
from ..state.groups import Waiter, clock_ms


def group_refused(ctx, group_id, operation=READ):
    """GROUP_AUTHORIZATION_FAILED when the client may not do operation on the group (READ to be a member or
    commit, DESCRIBE to look, DELETE to delete), else None."""
    return None if ctx.allowed(operation, GROUP, group_id) else errors.GROUP_AUTHORIZATION_FAILED


def advance(state):
    """Fire the group timers due by now (a member whose session ended is gone before its next request is
    looked at); the time, for the request to use (the group coordinator's clock)."""
    now = clock_ms()
    if state.groups.tick(now):
        state.changed()
    return now


def until_next_deadline(state):
    """Wait for a change, or until the next group timer is due (asked again then, the handler advances)."""
    deadline = state.groups.next_deadline()
    if deadline is None:
        return Wait(1000)
    return Wait(max(int(deadline - clock_ms()) + 1, 1))


def awaited(ctx, start):
    """The result a JoinGroup or SyncGroup is answered with, or a Wait: the first time the request is asked,
    start(now, waiter) hands it to the group coordinator, which fills in the waiter at once or when the group
    moves on; asked again, the waiter is looked at."""
    now = advance(ctx.state)
    waiter = ctx.memo.get("waiter")
    if waiter is None:
        waiter = ctx.memo["waiter"] = Waiter()
        start(now, waiter)
        ctx.state.changed()
    if waiter.result is None:
        return until_next_deadline(ctx.state)
    return waiter.result
