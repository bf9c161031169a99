"""Requests that wait (dispatch.Wait), and what wakes each: kept apart from the sockets.

A waiting request is a future its connection's task awaits. One that waits on
partitions (a Fetch short of data) is kept under each partition's
PartitionProducers and woken only by an append to one of them, so a busy topic
does not wake the fetches of every other; one that waits on nothing in
particular is woken by any change of the state. Some changes (logs shrank,
partitions went, the broker stops) wake every waiting request, and each looks
again. Nothing here reads a clock or a socket: the server awaits the futures,
with their deadlines, and drops a request whose client hangs up.
"""


class Waiting:
    """The server's waiting requests: those on partitions, by the partition's PartitionProducers, and the others
    (anyone), each a future to be given a result when it is to look again."""

    def __init__(self):
        self.on_partitions = {}  # PartitionProducers -> the futures waiting on its appends
        self.anyone = set()  # futures waiting on any change of the state

    def changed(self):
        """The state changed (a group moved on, a transaction ended, data was appended): wake the requests that
        wait on nothing in particular. A fetch waits on its partitions and is woken by their appends only."""
        if self.anyone:
            woken, self.anyone = self.anyone, set()
            _wake(woken)

    def appended(self, producers):
        """A partition took a batch (its PartitionProducers calls this): wake the fetches waiting on it."""
        woken = self.on_partitions.pop(producers, None)
        if woken:
            _wake(woken)

    def wake_all(self):
        """Wake every waiting request (logs shrank, partitions went, the broker stops): each looks again."""
        self.changed()
        on_partitions, self.on_partitions = self.on_partitions, {}
        for woken in on_partitions.values():
            _wake(woken)

    def watch(self, woken, on):
        """Register a waiting request's future: under each partition of on, or in anyone if on is None; the keys
        to give unwatch."""
        if on is None:
            self.anyone.add(woken)
            return None
        keys = []
        for partition in on:
            producers = partition.producers
            if producers is None:
                continue
            producers.on_append = self.appended
            self.on_partitions.setdefault(producers, set()).add(woken)
            keys.append(producers)
        return keys

    def unwatch(self, woken, keys):
        """Forget a request's future (it was woken, its time is up, or its client left); keys: what watch gave."""
        if keys is None:
            self.anyone.discard(woken)
            return
        for producers in keys:
            waiting = self.on_partitions.get(producers)
            if waiting is not None:
                waiting.discard(woken)
                if not waiting:
                    del self.on_partitions[producers]


def _wake(futures):
    for future in futures:
        if not future.done():
            future.set_result(None)
