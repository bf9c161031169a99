"""A split read on a worker: its capture decoded into Arrow batches of the source's rows; whatever goes wrong with
the file becomes a capture error row rather than a failed task."""

import os

from .. import capture
from ..capture import ring, tables
from ..capture.names import NAMING
from . import schema as _schema
from .planning import open_capture, same_head


def _damaged(message):
    ex = capture.Exchange(capture.CAPTURE_ERROR)
    ex.error = message
    return ex


def _guarded(split, options):
    """The split's exchanges; whatever goes wrong with the file becomes one capture error exchange, reported
    by the file's first split only (every split reads the whole file and would meet the same damage)."""
    file = split.file
    report = split.index == 0
    if file.error is not None:
        if report:
            yield _damaged(file.error)
        return
    partition = (split.index, split.count) if split.count > 1 else None
    try:
        source = open_capture(file.location) if split.ring is None else None
        if split.ring is not None and _written_again(file):
            raise OSError("written again since the stream planned it (a ring gone round): not read")
    except Exception as e:  # any filesystem's error: permission, gone since listing, no credentials
        if report:
            yield _damaged(f"cannot read {file.name}: {e}")
        return
    if options.level == _schema.TOPIC_NAMES:
        names, decode = capture.TopicNames(), NAMING  # only the answers that pair names and ids
    else:  # the pairs of the whole read (the driver's first pass) or those given, then those the split learns
        given = split.topic_names if split.topic_names is not None else \
            options.topic_names.known if options.topic_names is not None else None
        names, decode = capture.TopicNames(given), True
    if split.ring is not None:
        window, final, oldest_leaves, starts_ring = split.ring
        locations = {f.name: f.location for f in window}
    try:
        if split.ring is None:
            reader = capture.read_capture(source, ports=options.ports, name=file.name, partition=partition,
                                          decode=decode, names=names)
        else:
            # A piece of a file still being written (a stream): its planned bytes, after those read before.
            upto = file.size if file.open else None
            reader = ring.RingReader([f.name for f in window], final=final and upto is None,
                                     oldest_leaves=oldest_leaves, starts_ring=starts_ring,
                                     opener=lambda name: open_capture(locations[name]), ports=options.ports,
                                     partition=partition, decode=decode, names=names, after=file.after, upto=upto)
        for ex in reader:
            if ex.status == capture.CAPTURE_ERROR and ex.connection is None and not report:
                continue
            yield ex
    except Exception as e:  # read_capture reports damage itself; this is what it does not catch (I/O)
        if report:
            yield _damaged(f"{file.name}: reading stopped: {e}")
    finally:
        if source is not None:
            source.close()


def _written_again(file):
    """Whether a local file planned at its modification time is another file now: written anew by the ring. A
    file planned while it was still being written may have grown since (its head is the same)."""
    if file.location[0] != "local" or file.mtime_ns is None:
        return False
    stat = os.stat(file.location[1])
    if stat.st_mtime_ns == file.mtime_ns:
        return False
    return not (file.open and stat.st_size >= (file.size or 0) and same_head(file, file.head))


def read_split(split, options, arrow_schema):
    """The split's rows as pyarrow RecordBatches of arrow_schema (see schema.arrow_schema_of)."""
    import pyarrow as pa

    name = split.file.name
    exchanges = _guarded(split, options)
    if options.level == _schema.TOPIC_NAMES:
        batches = _topic_name_batches(exchanges)
    else:
        exchanges = capture.held(exchanges)  # a request goes out once a later answer names its topic
        if options.level == _schema.RECORDS:
            batches = tables.record_batches(exchanges, file=name)
        else:
            batches = tables.exchange_batches(exchanges, file=name, bodies=options.bodies)
    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            yield _schema.conform(batch, arrow_schema)
    except Exception as e:  # a row that would not build: report it as data rather than fail the job
        if options.level == _schema.RECORDS:
            row = {"file": name, "error": f"{capture.CAPTURE_ERROR}: {e}"}
            yield _schema.conform(pa.RecordBatch.from_pylist([row], schema=tables.record_schema()), arrow_schema)
        else:
            rows = tables.exchange_batches([_damaged(f"{name}: rows could not be built: {e}")], file=name)
            yield _schema.conform(next(rows), arrow_schema)


def _topic_name_batches(exchanges):
    """One batch of the pairs the exchanges' answers carry (reading them teaches their names)."""
    import pyarrow as pa

    names = None
    for ex in exchanges:
        names = ex.names if ex.names is not None else names
    pairs = [{"topic_id": str(topic_id), "name": name} for topic_id, name in (names.items() if names else ())]
    yield pa.RecordBatch.from_pylist(pairs, schema=tables.topic_names_schema())
