"""A capture summed up: counts by status and API, latencies, error codes, bytes by topic, clients, problems.

``Summary.add`` takes exchanges one at a time and keeps constant memory however many; ``merge`` takes in another
summary (of another file, or another Spark task's share). Nothing here does I/O: the command line's summary text,
HTML report and live view are views over it.

A capture's strings (client ids, topic and group names, software names) are whatever its packets say, terminal
escape sequences and bidi overrides included: every text output shows them through ``escape_controls``.
"""

import math
from collections import Counter, defaultdict

from ..fields import holds_records
from ..messages import ApiKey
from ..uuid import Uuid
from .exchanges import OK, records_fields

PROBLEMS_KEPT = 50  # the exchanges not ok that a summary keeps (it counts them all)


def escape_controls(text):
    """text with every character a terminal could act on, or that would hide what follows it, written as an escape
    instead: whatever str.isprintable() refuses (C0 and C1 controls, DEL, bidi overrides and other format
    characters, line and paragraph separators, lone surrogates) as Python writes it in a repr: ESC as \\x1b, U+202E
    as \\u202e, U+E0001 as \\U000e0001. Backslashes are left as they are. Everything else is kept, any script."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escape(ord(char)) for char in text)


def _escape(code):
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def answered_errors(ex):
    """The error codes an exchange's response carries: its top-level one, then each partition's (0 left out)."""
    response = ex.response
    if response is None:
        return
    code = getattr(response, "error_code", None)
    if code:
        yield code
    for _, _, code in ex.partition_errors:
        yield code


class LatencyHistogram:
    """Latencies in buckets 2% apart: percentiles within 2% in constant memory, however many exchanges."""

    STEP = math.log(1.02)
    HELD = 4096  # latencies held before they are put in buckets, all at once

    def __init__(self):
        self.counts = Counter()
        self.held = []
        self._total = 0
        self._max = 0

    def add(self, ns):
        self.held.append(ns)
        if len(self.held) >= self.HELD:
            self._fold()

    def _fold(self):
        held, log, step = self.held, math.log, self.STEP
        if held:
            self.counts.update(int(log(ns) / step) if ns > 0 else -1 for ns in held)
            self._total += len(held)
            self._max = max(self._max, max(held))
            self.held = []

    def buckets(self):
        """[(latency ns at the bucket's middle, count)], lowest first."""
        self._fold()
        return sorted((0 if b < 0 else math.exp((b + 0.5) * self.STEP), n) for b, n in self.counts.items())

    def merge(self, other):
        """Take in another histogram's latencies."""
        other._fold()
        self._fold()
        self.counts.update(other.counts)
        self._total += other._total
        self._max = max(self._max, other._max)

    @property
    def total(self):
        self._fold()
        return self._total

    @property
    def max(self):
        self._fold()
        return self._max

    def percentile(self, q):
        target = q * self.total
        seen = 0
        for bucket in sorted(self.counts):
            seen += self.counts[bucket]
            if seen >= target:
                return 0 if bucket < 0 else min(self.max, math.exp((bucket + 0.5) * self.STEP))
        return self.max


class Summary:
    """Counts, latencies, errors, topics and clients over a stream of exchanges."""

    def __init__(self, names=None):
        self.names = names  # a TopicNames: topics counted by id are shown by name where it is known by then
        self.files = []
        self.by_status = Counter()
        self.by_api = Counter()  # (api name, version) -> exchanges
        self.latency = defaultdict(LatencyHistogram)  # api name -> latencies
        self.error_codes = Counter()  # (api name, code) -> responses or partitions with it
        self.produced = Counter()  # topic -> record bytes produced
        self.fetched = Counter()
        self.clients = {}  # client id -> {"requests": n, "software": set}
        self.problems = []  # (file, exchange) for everything not ok
        self.problem_count = 0
        self._names = {}  # api key -> name

    def add(self, path, ex):
        self.by_status[ex.status] += 1
        key = ex.api_key
        name = None
        if key is not None:
            name = self._names.get(key)
            if name is None:
                name = self._names[key] = ex.api_name or f"api key {key}"
            self.by_api[(name, ex.api_version)] += 1
            if ex.response_time_ns is not None and ex.request_time_ns is not None:
                self.latency[name].add(ex.response_time_ns - ex.request_time_ns)
        if ex.status != OK:
            self.problem_count += 1
            if len(self.problems) < PROBLEMS_KEPT:
                self.problems.append((path, ex))
        for code in answered_errors(ex):
            self.error_codes[(name, code)] += 1
        if ex.client_id is not None or key is not None:
            client = self.clients.get(ex.client_id)
            if client is None:
                client = self.clients[ex.client_id] = {"requests": 0, "software": set()}
            client["requests"] += 1
            if key == ApiKey.API_VERSIONS and ex.request is not None:
                software = getattr(ex.request, "client_software_name", None)
                if software:
                    client["software"].add(f"{software} {ex.request.client_software_version or ''}".strip())
        request, response = ex.request, ex.response
        if (request is not None and holds_records(type(request))) or \
                (response is not None and holds_records(type(response))):
            for side, _, topic, topic_id, _, data in records_fields(ex):
                bucket = self.produced if side == "request" else self.fetched
                bucket[topic if topic is not None else str(topic_id)] += len(data)

    def named(self, counter, unnamed):
        """counter with its topic ids (kept as text) put under their names where those are known now."""
        if self.names is None:
            return counter
        out = Counter()
        for topic, n in counter.items():
            name = self.names.name(topic) if topic else None
            if name is None and topic and is_topic_id(topic):
                unnamed.add(topic)
            out[name or topic] += n
        return out

    def merge(self, other):
        """Take in another summary's counts (the other's topic names are not taken: merge the TopicNames)."""
        self.files.extend(other.files)
        self.by_status.update(other.by_status)
        self.by_api.update(other.by_api)
        for name, hist in other.latency.items():
            self.latency[name].merge(hist)
        self.error_codes.update(other.error_codes)
        self.produced.update(other.produced)
        self.fetched.update(other.fetched)
        for client_id, info in other.clients.items():
            mine = self.clients.setdefault(client_id, {"requests": 0, "software": set()})
            mine["requests"] += info["requests"]
            mine["software"] |= info["software"]
        self.problems.extend(other.problems[:max(0, PROBLEMS_KEPT - len(self.problems))])
        self.problem_count += other.problem_count


def is_topic_id(text):
    """Whether text is a topic id as Kafka writes them (22 characters of URL-safe base64)."""
    try:
        Uuid.from_string(text)
    except ValueError:
        return False
    return len(text) == 22
