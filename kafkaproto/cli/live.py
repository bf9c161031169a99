"""kafkaproto capture --live: a table of request rates, latency percentiles and errors per API over the last seconds
of traffic, redrawn in place every second, for people watching a cluster.

Rates and percentiles are over the last ``window`` seconds of capture time (the packets' own clock, so a file read
faster than it was written shows the rates it had). Memory is bounded: per API, one latency histogram per second
of the window.

On a terminal the table is redrawn in place; written anywhere else (a file, a pipe) it has no escape codes: a plain
table is appended every ``window`` seconds, and the last one at the end. The escape codes are the view's own: what
the table shows of a capture (API names, the title's file names) goes through escape_controls.
"""

import math
import threading
import time
from collections import Counter, defaultdict, deque

from ..capture.summary import LatencyHistogram, escape_controls


class _Second:
    __slots__ = ("at", "requests", "errors", "latency")

    def __init__(self, at):
        self.at = at  # capture time, whole seconds
        self.requests = Counter()  # api -> exchanges
        self.errors = Counter()  # api -> answers carrying an error code
        self.latency = defaultdict(LatencyHistogram)  # api -> latencies


class LiveView:
    """Counts per API and second of capture time, drawn as a table (``render``) by ``start``'s thread."""

    def __init__(self, out, *, window=10, interval=1.0, title="live", redraw=None):
        self.out = out
        self.window = window
        self.redraw = _is_terminal(out) if redraw is None else redraw  # in place, with escape codes
        self.interval = interval if self.redraw else max(interval, window)
        self.title = title
        self.seconds = deque()  # _Second, oldest first, at most window of them
        self.total = 0
        self.now = None  # the latest capture time seen (whole seconds)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self.draws = 0

    def add(self, ex):
        stamp = ex.response_time_ns or ex.request_time_ns
        if stamp is None or ex.api_key is None:
            return
        second = stamp // 1_000_000_000
        name = ex.api_name or f"api key {ex.api_key}"
        with self._lock:
            self.total += 1
            if self.now is None or second > self.now:
                self.now = second
            while self.seconds and self.seconds[0].at <= self.now - self.window:
                self.seconds.popleft()
            bucket = self.seconds[-1] if self.seconds and self.seconds[-1].at == second else None
            if bucket is None:
                if second <= self.now - self.window:
                    return  # older than the window (a packet out of time order)
                bucket = _Second(second)
                self.seconds.append(bucket)
                if len(self.seconds) > 1 and self.seconds[-2].at > second:
                    self.seconds = deque(sorted(self.seconds, key=lambda s: s.at))
            bucket.requests[name] += 1
            if ex.latency_ns is not None:
                bucket.latency[name].add(ex.latency_ns)
            response = ex.response
            if response is not None and (getattr(response, "error_code", None) or ex.partition_errors):
                bucket.errors[name] += 1

    def rows(self):
        """[(api, requests/s, p50 ms, p99 ms, errors)] over the window, busiest first."""
        with self._lock:
            seconds = list(self.seconds)
        span = max(1, min(self.window, (seconds[-1].at - seconds[0].at + 1) if seconds else 1))
        requests, errors = Counter(), Counter()
        latency = defaultdict(LatencyHistogram)
        for second in seconds:
            requests.update(second.requests)
            errors.update(second.errors)
            for name, histogram in second.latency.items():
                latency[name].merge(histogram)
        out = []
        for name, n in requests.most_common():
            histogram = latency.get(name)
            p50 = p99 = math.nan
            if histogram is not None and histogram.total:
                p50, p99 = histogram.percentile(0.5) / 1e6, histogram.percentile(0.99) / 1e6
            out.append((name, n / span, p50, p99, errors[name]))
        return out

    def render(self):
        """The table as text."""
        when = time.strftime("%H:%M:%S", time.gmtime(self.now)) if self.now is not None else "--:--:--"
        lines = [f"kafkaproto capture {escape_controls(self.title)}: {when} UTC, {self.total:,} exchanges; "
                 f"the last {self.window} s of traffic",
                 f"{'api':<32} {'req/s':>10} {'p50 ms':>10} {'p99 ms':>10} {'errors':>8}"]
        for name, rate, p50, p99, errors in self.rows():
            lines.append(f"{escape_controls(name):<32} {rate:>10.1f} {_ms(p50):>10} {_ms(p99):>10} {errors:>8}")
        return "\n".join(lines) + "\n"

    def draw(self):
        if self.redraw:  # home, clear to the end of the screen, then the table: redrawn in place
            self.out.write("\x1b[H\x1b[J" + self.render())
        else:  # one table after another, a blank line between
            self.out.write(self.render() + "\n")
        self.out.flush()
        self.draws += 1

    def start(self):
        """Draw every ``interval`` seconds in a thread of its own, until ``stop``."""
        def loop():
            while not self._stop.wait(self.interval):
                self.draw()

        self._thread = threading.Thread(target=loop, name="kafkaproto-live", daemon=True)
        self._thread.start()
        return self

    def stop(self, draw=True):
        """Stop drawing, and draw the last table (draw=False: not, as when the command fails); once."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if draw:
            self.draw()


def _is_terminal(out):
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


def _ms(value):
    return "-" if math.isnan(value) else f"{value:.2f}"
