"""The reader loop: packets in, exchanges out, counted as they go.

A capture's packets come from a file (pcap.read_packets) or from a capture still being written (follow.Follower);
each TCP segment goes to exchanges.Exchanges, and each exchange it completes comes out, named by a
names.TopicNames when one is given. _cpackets.read_exchanges is the loop's compiled twin.
"""

import os
from collections import Counter

from .._impl import COMPILED
from ..messages import ApiKey
from . import link
from .exchanges import CAPTURE_ERROR, Exchange, Exchanges
from .names import NAMING
from .pcap import CaptureFormatError, check_capture, read_packets

if COMPILED:
    from ._cpackets import read_exchanges as compiled_loop
else:
    compiled_loop = None

FETCH = ApiKey.FETCH


def _replicating(request):
    """Whether a Fetch is a replica's (the KRaft metadata log is replicated so, and its TopicRecords name topics)."""
    return request is not None and max(request.replica_id, request.replica_state.replica_id) >= 0


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
