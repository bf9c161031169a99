"""What a handler may answer instead of a response: ask again later (Wait), or close the connection (Close).
dispatch.py hands them to the server; faults.py answers with them too."""

from typing import NamedTuple


class _Wait(NamedTuple):
    ms: int


class Wait(_Wait):
    """Ask again when the state changes (data appended, a group moves on) or after ms, with ctx.final True.
    A Fetch short of min_bytes, a JoinGroup waiting for the other members, a SyncGroup for the leader.
    Asked with ctx.final, a handler may return Wait again: its time starts over.

    on, when given, names the partitions whose appends may make the answer ready: the request is asked again
    only when one of them takes a batch (or its time is up), not at every change of the broker's state, so an
    append wakes the fetches waiting on its partition and no others (Kafka's fetch purgatory, keyed by
    partition). A request that waits on nothing in particular (on None) is asked again at any change. Two
    Waits are equal when they wait as long: on only narrows what wakes them."""

    def __new__(cls, ms, on=None):
        wait = super().__new__(cls, ms)
        wait.on = on
        return wait


class Close(NamedTuple):
    """Close the connection instead of answering, as Kafka does where a request has no way to carry its error
    (a Produce with acks=0 that failed)."""

    reason: str
