"""Kafka traffic captures: pcap and pcapng files to request/response exchanges.

    from kafkaproto import capture

    reader = capture.read_capture("traffic.pcapng", ports=[9092])
    for ex in reader:                        # one Exchange per request (and per unmatched response)
        ex.status, ex.api_name, ex.api_version, ex.latency_ns, ex.topics, ex.request, ex.response
    reader.stats                             # packets, connections, what was skipped and why

    for row in capture.records(capture.read_capture("traffic.pcap")):
        row["topic"], row["partition"], row["offset"], row["key"], row["value"]

Files are read as a stream (gzip-compressed ones too), so a capture far larger
than memory is fine. A path that cannot be opened raises at once (OSError, such as
FileNotFoundError), and so does a file that is not a capture at all
(CaptureFormatError: empty, or not starting as pcap or pcapng do). Past that,
nothing raises on bad traffic: a packet that is not TCP is counted in
``stats.skipped``, and a frame that is cut, lost or unreadable comes out as an
exchange whose ``status`` says so (``capture.STATUSES``). A file that is itself
damaged ends with a "capture error" exchange, after everything that could be read
from it; so does a file object that is not a capture, or one that fails while it is
read.
"""

import os
from collections import Counter

from .._impl import COMPILED
from ..messages import ApiKey
from . import link
from .exchanges import (
    CAPTURE_ERROR,
    DECODE_ERROR,
    GAP,
    OK,
    STATUSES,
    UNMATCHED_REQUEST,
    UNMATCHED_RESPONSE,
    UNSUPPORTED,
    Exchange,
    Exchanges,
    records_fields,
    walk,
)
from .names import NAMING, TopicNames, held
from .pcap import CaptureFormatError, check_capture, read_packets

FETCH = ApiKey.FETCH


def _replicating(request):
    """Whether a Fetch is a replica's (the KRaft metadata log is replicated so, and its TopicRecords name topics)."""
    return request is not None and max(request.replica_id, request.replica_state.replica_id) >= 0

if COMPILED:
    from ._cpackets import read_exchanges as compiled_loop
else:
    compiled_loop = None

__all__ = [
    "CAPTURE_ERROR", "DECODE_ERROR", "GAP", "OK", "STATUSES", "UNMATCHED_REQUEST", "UNMATCHED_RESPONSE",
    "UNSUPPORTED", "CaptureFormatError", "CaptureReader", "CaptureStats", "Exchange", "TopicNames", "follow", "held",
    "read_capture", "records", "records_fields", "walk",
]


class CaptureStats:
    """What reading a capture saw: counts, and the file's own damage if any."""

    def __init__(self):
        self.packets = 0
        self.bytes = 0  # captured bytes of all packets
        self.tcp_segments = 0
        self.connections = 0  # TCP connections read as Kafka
        self.exchanges = 0
        self.gap_bytes = 0  # stream bytes the capture did not hold
        self.skipped = Counter()  # reason -> packets not read as Kafka
        self.error = None  # the file's damage (CaptureFormatError text), if any

    def to_dict(self):
        out = dict(vars(self))
        out["skipped"] = dict(self.skipped)
        return out

    def __repr__(self):
        return f"CaptureStats({self.to_dict()})"


class CaptureReader:
    """The exchanges of one capture file, read as it is iterated. See read_capture."""

    def __init__(self, source, *, ports=None, name=None, partition=None, decode=True, names=None, packets=None,
                 **limits):
        self.source = source
        self.packets = packets  # packets to read instead of the file's (follow.Follower)
        self.name = name
        self.ports = ports
        self.partition = partition
        self.decode = decode
        self.names = names
        self.limits = limits
        self.stats = CaptureStats()
        self.exchanges = None  # the exchanges.Exchanges reading it, once reading has begun

    def __iter__(self):
        return self._exchanges() if self.names is None else self._named(self._exchanges())

    def _named(self, exchanges):
        names = self.names
        for ex in exchanges:
            ex.names = names
            key = ex.api_key
            if key in NAMING or key == FETCH and _replicating(ex.request):
                names.learn(ex)
            yield ex

    def _exchanges(self):
        stats = self.stats = CaptureStats()
        exchanges = self.exchanges = Exchanges(self.ports, partition=self.partition, decode=self.decode,
                                               **self.limits)
        loop = compiled_loop or read_exchanges
        try:
            packets = read_packets(self.source, self.name) if self.packets is None else iter(self.packets)
            yield from loop(packets, exchanges, stats, link.tcp_segment)
        except (CaptureFormatError, OSError) as e:  # a damaged file, or one that cannot be read (to its end)
            stats.error = str(e)
            damaged = Exchange(CAPTURE_ERROR)
            damaged.error, damaged.error_offset = str(e), getattr(e, "offset", None)
            stats.exchanges += 1
            yield damaged
        out = exchanges.finish()
        stats.exchanges += len(out)
        stats.connections = exchanges.count
        stats.gap_bytes = exchanges.gap_bytes
        for reason, count in exchanges.skipped.items():
            stats.skipped[reason] += count
        yield from out


def read_exchanges(packets, exchanges, stats, tcp_segment):
    """CaptureReader's loop: the exchanges of packets (pcap.Packet), counted in stats as they go.
    _cpackets.read_exchanges is its compiled twin, with a compiled path for plain packets."""
    skipped = stats.skipped
    general = exchanges.packet
    for number, packet in enumerate(packets, stats.packets + 1):
        stats.packets = number
        stats.bytes += len(packet.data)
        seg = tcp_segment(packet.link_type, packet.data)
        if type(seg) is str:
            skipped[seg] += 1
            continue
        stats.tcp_segments += 1
        out = general(seg, packet.timestamp_ns, number)
        if out:
            stats.exchanges += len(out)
            yield from out


def read_capture(source, *, ports=None, name=None, partition=None, decode=True, names=None, **limits):
    """The exchanges in a pcap or pcapng file (a path or a binary file object; gzip is recognised).

    A path is checked here: one that cannot be opened raises OSError (FileNotFoundError naming it, ...), and a
    file that is not a capture raises CaptureFormatError. A file object is first read when iterated, and what is
    wrong with it comes out as a "capture error" exchange, as damage further into any file does.

    ports: the brokers' ports (others are skipped); without them, each connection's
    client is found from its SYN or its first request. partition=(i, n): only the
    connections that hash to i of n, for readers that split one file between them.
    decode=False reads request headers only, not bodies (a set of API keys: those
    APIs' bodies only, as names.NAMING for a quick pass that learns names). names: a names.TopicNames
    that learns the topic id/name pairs the traffic carries (share one across files)
    and names the topics of each exchange and record by it. limits: max_frame,
    idle_ns, max_connections, max_pending (see exchanges.Exchanges).
    """
    if isinstance(source, (str, bytes, os.PathLike)):
        check_capture(source, name)
    return CaptureReader(source, ports=ports, name=name, partition=partition, decode=decode, names=names, **limits)


def follow(path, *, ports=None, names=None, idle=None, poll=None, **limits):
    """The exchanges of a capture still being written: a growing file, or a folder a capture tool rotates files
    into (see follow.Follower), read as one stream so that connections go on from file to file. idle: stop once
    nothing new has come for this many seconds (None: go on until interrupted). ``reader.packets`` is the
    Follower: its ``files`` and ``notes``, and ``stop()``."""
    from .follow import POLL_SECONDS, Follower

    follower = Follower(path, idle=idle, poll=POLL_SECONDS if poll is None else poll)
    return CaptureReader(path, ports=ports, name=path, names=names, packets=follower, **limits)


_RECORD_FIELDS = ("offset", "timestamp", "key", "value", "headers")
_WHERE = ("connection", "api_key", "api_name", "side", "time_ns", "topic", "topic_id", "partition")


def records(exchanges, *, validate=True):
    """One dict per record in the exchanges' Produce requests and Fetch (and ShareFetch) responses.

    Each row names where the record travelled (connection, api, time, topic, topic id,
    partition) and what it is (offset, timestamp, key, value, headers and its batch's
    producer fields). Records that do not read, and a damaged file, give a row whose
    ``error`` says why.
    """
    from .. import records as recs

    for ex in exchanges:
        if ex.status == CAPTURE_ERROR:  # a row like a bad batch's: where it travelled (nowhere known), and why
            yield dict.fromkeys(_WHERE, None) | {"error": f"capture error: {ex.error}"}
            continue
        for side, time_ns, topic, topic_id, partition, data in records_fields(ex):
            base = {"connection": ex.connection, "api_key": ex.api_key, "api_name": ex.api_name, "side": side,
                    "time_ns": time_ns, "topic": topic, "topic_id": topic_id, "partition": partition}
            try:
                for batch in recs.iter_batches(data, validate=validate, allow_partial=True):
                    batch_fields = _batch_fields(batch)
                    base_sequence = batch_fields.pop("base_sequence")
                    for record in batch:
                        row = dict(base)
                        row.update(batch_fields)
                        row.update(offset=record.offset, timestamp=record.timestamp, key=record.key,
                                   value=record.value, headers=list(record.headers), error=None,
                                   sequence=recs.record_sequence(base_sequence, record.offset - batch.base_offset))
                        yield row
            except recs.RecordsError as e:
                yield dict(base, error=str(e))


def _batch_fields(batch):
    return {"producer_id": getattr(batch, "producer_id", -1), "producer_epoch": getattr(batch, "producer_epoch", -1),
            "base_sequence": getattr(batch, "base_sequence", -1),
            "transactional": bool(getattr(batch, "is_transactional", False)),
            "control": bool(getattr(batch, "is_control", False)), "compression": batch.compression.name.lower()}
