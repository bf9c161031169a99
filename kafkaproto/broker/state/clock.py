"""The one clock the broker's timers count on: milliseconds of the process's monotonic clock.

Group sessions and rebalances, transaction timeouts and the housekeeping schedule all take their ``now`` from
it, given by the caller, so that a test can move time on. Record timestamps and offset commits are wall-clock
milliseconds instead (BrokerState.now_ms), as Kafka writes them.
"""

import time


def clock_ms():
    return time.monotonic() * 1000
