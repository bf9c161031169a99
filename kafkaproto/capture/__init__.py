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

from ..allocator import keep_freed_memory
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
    records_fields,
    walk,
)
from .exchanges import Exchanges as Exchanges  # the stage below the reader, for tests that feed it segments
from .names import TopicNames, held
from .pcap import CaptureFormatError
from .reader import CaptureReader, CaptureStats, read_capture

__all__ = [
    "CAPTURE_ERROR", "DECODE_ERROR", "GAP", "OK", "STATUSES", "UNMATCHED_REQUEST", "UNMATCHED_RESPONSE",
    "UNSUPPORTED", "CaptureFormatError", "CaptureReader", "CaptureStats", "Exchange", "TopicNames", "follow", "held",
    "keep_freed_memory", "read_capture", "records", "records_fields", "walk",
]


def follow(path, *, ports=None, names=None, idle=None, poll=None, **limits):
    """The exchanges of a capture still being written (see follow.follow)."""
    from .follow import follow

    return follow(path, ports=ports, names=names, idle=idle, poll=poll, **limits)


_RECORD_FIELDS = ("offset", "timestamp", "key", "value", "headers")
_WHERE = ("connection", "api_key", "api_name", "side", "time_ns", "topic", "topic_id", "partition")


def records(exchanges, *, validate=True):
    """One dict per record in the exchanges' Produce requests and Fetch (and ShareFetch) responses.

    Each row names where the record travelled (connection, api, time, topic, topic id,
    partition), what it is (offset, timestamp, key, value, headers and its batch's
    producer fields) and whether its transaction was ``aborted`` (True, False, or None
    when the message does not tell: see capture.transactions). Records that do not
    read, and a damaged file, give a row whose ``error`` says why.
    """
    from .. import records as recs
    from .transactions import outcomes, records_fields_with_aborted

    for ex in exchanges:
        if ex.status == CAPTURE_ERROR:  # a row like a bad batch's: where it travelled (nowhere known), and why
            yield dict.fromkeys(_WHERE, None) | {"error": f"capture error: {ex.error}"}
            continue
        for (side, time_ns, topic, topic_id, partition, data), aborted_list in records_fields_with_aborted(ex):
            base = {"connection": ex.connection, "api_key": ex.api_key, "api_name": ex.api_name, "side": side,
                    "time_ns": time_ns, "topic": topic, "topic_id": topic_id, "partition": partition}
            # The field's batch headers first (markers further on decide batches before them), then its rows;
            # a fault met on the way comes after the rows before it.
            batches, fault = [], None
            try:
                for batch in recs.iter_batches(data, validate=validate, allow_partial=True):
                    batches.append(batch)
            except recs.RecordsError as e:
                fault = e
            verdicts = outcomes([_transaction_item(batch) for batch in batches], aborted_list)
            try:
                for batch, aborted in zip(batches, verdicts):
                    batch_fields = _batch_fields(batch)
                    base_sequence = batch_fields.pop("base_sequence")
                    for record in batch:
                        row = dict(base)
                        row.update(batch_fields)
                        row.update(offset=record.offset, timestamp=record.timestamp, key=record.key,
                                   value=record.value, headers=list(record.headers), error=None,
                                   sequence=recs.record_sequence(base_sequence, record.offset - batch.base_offset),
                                   aborted=aborted)
                        yield row
                if fault is not None:
                    raise fault
            except recs.RecordsError as e:
                yield dict(base, error=str(e))


def _transaction_item(batch):
    """What transactions.outcomes needs of a batch: producer id, transactional, control, marker, last offset."""
    from ..exceptions import RecordsError
    from .transactions import marker_type

    control = bool(getattr(batch, "is_control", False))
    marker = None
    if control:
        try:
            first = next(iter(batch), None)
        except RecordsError:  # records that do not read: the rows' own pass reports it, in its place
            first = None
        marker = marker_type(first.key) if first is not None else None
    return (getattr(batch, "producer_id", -1), bool(getattr(batch, "is_transactional", False)), control, marker,
            batch.last_offset)


def _batch_fields(batch):
    return {"producer_id": getattr(batch, "producer_id", -1), "producer_epoch": getattr(batch, "producer_epoch", -1),
            "base_sequence": getattr(batch, "base_sequence", -1),
            "transactional": bool(getattr(batch, "is_transactional", False)),
            "control": bool(getattr(batch, "is_control", False)), "compression": batch.compression.name.lower()}
