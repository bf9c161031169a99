"""Exchanges and records as Arrow tables, with one documented schema each (what Parquet files and Spark get).

    from kafkaproto.capture import read_capture, tables
    table = tables.exchanges_table(read_capture("traffic.pcap"), file="traffic.pcap")
    rows = tables.records_table(read_capture("traffic.pcap"))

Bodies go in as JSON text (kafkaproto.jsonview: snake_case fields, bytes in base64,
topic ids in Kafka's base64 form); topic ids everywhere else are in that form too.
Tables are built in batches (``batches(..., size=N)``), so a capture of any size
streams through in bounded memory. Needs pyarrow (the extra ``arrow``).
"""

import json

from .. import records as _records
from .._impl import COMPILED
from .._optional import require
from ..jsonview import from_json, to_json_text
from ..messages import RequestHeader, ResponseHeader
from ..registry import api
from ..uuid import Uuid
from .exchanges import CAPTURE_ERROR, Exchange
from . import _arrowcols
from .transactions import aborted_array, outcomes, records_fields_with_aborted

if COMPILED:
    from ._carrowcols import repeated
    from ._crecordrows import RecordRows

EXCHANGE_FIELDS = (
    # (name, Arrow type, what it holds)
    ("file", "string", "the capture file the exchange came from"),
    ("status", "string", "ok, unmatched request, unmatched response, gap, decode error, unsupported, capture error"),
    ("connection", "int64", "index of the TCP connection in the file, in order of first packet"),
    ("joined", "bool_", "true when the capture joined the connection after it began (its first requests unseen)"),
    ("client_address", "string", "the client's IP address"),
    ("client_port", "int32", "the client's TCP port"),
    ("broker_address", "string", "the broker's IP address"),
    ("broker_port", "int32", "the broker's TCP port"),
    ("request_time", "timestamp", "when the packet completing the request was captured (UTC)"),
    ("response_time", "timestamp", "when the packet completing the response was captured (UTC)"),
    ("latency_ns", "int64", "response_time - request_time, in nanoseconds"),
    ("request_packet", "int64", "number (from 1, as Wireshark counts) of the packet completing the request"),
    ("response_packet", "int64", "number of the packet completing the response"),
    ("api_key", "int16", "the request's API key"),
    ("api_name", "string", "the API's name (Produce, Fetch, ...), null for keys kafkaproto does not know"),
    ("api_version", "int16", "the version the request (and its response) were read at"),
    ("request_version", "int16", "the version the request was sent at: api_version, but where a broker answered "
                                 "ApiVersions at version 0 the one the client asked"),
    ("correlation_id", "int32", "the request's correlation id"),
    ("client_id", "string", "the client id in the request header"),
    ("request_size", "int32", "the request frame's size prefix"),
    ("response_size", "int32", "the response frame's size prefix"),
    ("error_code", "int16", "the response's top-level error code"),
    ("partition_errors", "partition_errors", "topic, partition and error code of each partition in error"),
    ("topics", "list<string>", "topic names the request and response name"),
    ("topic_ids", "list<string>", "topic ids they name, in Kafka's base64 form"),
    ("error", "string", "what went wrong, for every status but ok"),
    ("error_offset", "int64", "where: the byte in the frame, or in the stream for gaps"),
    ("request", "string", "the request body as JSON"),
    ("response", "string", "the response body as JSON"),
)

# Where each record travelled, before the record's own columns (kafkaproto.records.arrow_schema()).
RECORD_CONTEXT = (
    ("file", "string", "the capture file"),
    ("connection", "int64", "index of the TCP connection in the file"),
    ("api_key", "int16", "0 for a Produce request, 1 for a Fetch response, 78 for a ShareFetch response"),
    ("api_name", "string", "Produce, Fetch, ..."),
    ("side", "string", "request (produced) or response (fetched)"),
    ("time", "timestamp", "when the packet completing the frame was captured (UTC)"),
    ("topic", "string", "the topic's name, when the message names it"),
    ("topic_id", "string", "the topic's id in Kafka's base64 form, when the message carries it"),
    ("partition", "int32", "the partition"),
    ("error", "string", "why the records field did not read (the record columns are null then)"),
)

# After the record's own columns: what became of it (kafkaproto.capture.transactions says how it is told).
RECORD_OUTCOME = (
    ("aborted", "bool_", "whether the record's transaction was aborted: false outside transactions; in a Fetch "
                         "answer to a read_committed request as Kafka's consumer decides; elsewhere by its "
                         "producer's next COMMIT or ABORT marker in the same records; null when none tells "
                         "(a Produce request's, as a rule: markers come later, from the broker)"),
)


TOPIC_NAME_FIELDS = (
    ("topic_id", "string", "a topic's id, in Kafka's base64 form"),
    ("name", "string", "the topic's name, as an answer in the capture paired them"),
)


def _pyarrow():
    return require("pyarrow", "arrow", "kafkaproto.capture.tables")


def _type(pa, name):
    if name == "timestamp":
        return pa.timestamp("ns", tz="UTC")
    if name == "list<string>":
        return pa.list_(pa.string())
    if name == "partition_errors":
        return pa.list_(pa.struct([("topic", pa.string()), ("partition", pa.int32()), ("error_code", pa.int16())]))
    return getattr(pa, name)()


def exchange_schema():
    pa = _pyarrow()
    return pa.schema([pa.field(name, _type(pa, kind), metadata={"doc": doc}) for name, kind, doc in EXCHANGE_FIELDS])


def topic_names_schema():
    pa = _pyarrow()
    return pa.schema([pa.field(name, _type(pa, kind), metadata={"doc": doc}) for name, kind, doc in TOPIC_NAME_FIELDS])


def record_schema():
    pa = _pyarrow()
    context = [pa.field(name, _type(pa, kind), metadata={"doc": doc}) for name, kind, doc in RECORD_CONTEXT]
    outcome = [pa.field(name, _type(pa, kind), metadata={"doc": doc}) for name, kind, doc in RECORD_OUTCOME]
    # Nullable throughout: a records field that does not read gives a row with the error and no record.
    return pa.schema(context + [f.with_nullable(True) for f in _records.arrow_schema()] + outcome)


def api_or_none(key):
    try:
        return api(key)
    except (KeyError, TypeError):
        return None


def _topic_text(topic):
    return str(topic) if isinstance(topic, Uuid) else topic


def exchange_row(ex, file=None, bodies=True):
    """One exchange as a dict of the exchange schema's columns. bodies: True (JSON with records spelled out),
    False (none), or "exact" (records as base64 bytes, so that exchange_of gives back the same exchange)."""
    topics = ex.topics
    header = ex.request_header
    row = {
        "file": file, "status": ex.status, "connection": ex.connection, "joined": ex.joined,
        "client_address": ex.client_address, "client_port": ex.client_port,
        "broker_address": ex.broker_address, "broker_port": ex.broker_port,
        "request_time": ex.request_time_ns, "response_time": ex.response_time_ns, "latency_ns": ex.latency_ns,
        "request_packet": ex.request_packet, "response_packet": ex.response_packet,
        "api_key": ex.api_key, "api_name": ex.api_name, "api_version": ex.api_version,
        "request_version": header.request_api_version if header is not None else ex.api_version,
        "correlation_id": ex.correlation_id, "client_id": ex.client_id,
        "request_size": ex.request_size, "response_size": ex.response_size,
        "error_code": ex.error_code,
        "partition_errors": [{"topic": _topic_text(t), "partition": p, "error_code": c}
                             for t, p, c in ex.partition_errors],
        "topics": [t for t in topics if isinstance(t, str)],
        "topic_ids": [str(t) for t in topics if isinstance(t, Uuid)],
        "error": ex.error, "error_offset": ex.error_offset,
        "request": None, "response": None,
    }
    if bodies:
        decode = bodies != "exact"
        if ex.request is not None:
            row["request"] = to_json_text(ex.request, decode)
        if ex.response is not None:
            row["response"] = to_json_text(ex.response, decode)
    return row


def exchange_of(row):
    """The Exchange an exchange row (a dict, a Spark Row's asDict()) came from, its bodies read back with
    jsonview.from_json: rows written with bodies "exact" give the very messages captured (kafkaproto.replay
    can replay them). Times may be nanoseconds or datetimes (as Spark gives them, to the microsecond)."""
    ex = Exchange(row["status"])
    for name in ("connection", "joined", "client_address", "client_port", "broker_address", "broker_port",
                 "request_packet", "response_packet", "api_key", "api_version", "correlation_id", "client_id",
                 "request_size", "response_size", "error", "error_offset"):
        setattr(ex, name, row.get(name))
    ex.request_time_ns, ex.response_time_ns = _nanoseconds(row.get("request_time")), \
        _nanoseconds(row.get("response_time"))
    info = api_or_none(ex.api_key)
    if info is not None and row.get("request") is not None:
        version = row.get("request_version", ex.api_version)
        ex.request_header = RequestHeader(request_api_key=ex.api_key, request_api_version=version,
                                          correlation_id=ex.correlation_id, client_id=ex.client_id)
        ex.request = from_json(info.request, _json(row["request"]), f"{info.request.__name__} (row request)")
    if info is not None and row.get("response") is not None:
        ex.response_header = ResponseHeader(correlation_id=ex.correlation_id)
        ex.response = from_json(info.response, _json(row["response"]), f"{info.response.__name__} (row response)")
    return ex


def _json(value):
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def _nanoseconds(value):
    if value is None or isinstance(value, int):
        return value
    return round(value.timestamp() * 1_000_000) * 1000  # a datetime (microseconds)


# Bodies held in one batch of exchange rows, as text (about bytes: JSON's escapes keep most of it ASCII).
BATCH_BODY_BYTES = 4 << 20


def exchange_batches(exchanges, file=None, size=4096, bodies=True, body_bytes=None):
    """pyarrow RecordBatches of the exchange schema, size rows at most each, and ended once their bodies' text
    reaches body_bytes (BATCH_BODY_BYTES by default): a batch of large Fetch answers holds a few, not thousands."""
    body_bytes = BATCH_BODY_BYTES if body_bytes is None else body_bytes
    pa = _pyarrow()
    schema = exchange_schema()
    rows = []
    held = 0
    for ex in exchanges:
        row = exchange_row(ex, file, bodies)
        rows.append(row)
        for body in (row["request"], row["response"]):
            if body is not None:
                held += len(body)
        if len(rows) >= size or held >= body_bytes:
            yield _arrowcols.batch(pa, rows, schema)
            rows = []
            held = 0
    if rows:
        yield _arrowcols.batch(pa, rows, schema)


def exchanges_table(exchanges, file=None, bodies=True):
    pa = _pyarrow()
    return pa.Table.from_batches(list(exchange_batches(exchanges, file, bodies=bodies)), schema=exchange_schema())


def record_batches(exchanges, file=None, validate=True, rows=65536):
    """pyarrow RecordBatches of the record schema, of up to about ``rows`` rows each: the records fields' rows
    gathered so that a field of one record does not cost a batch of its own. Compiled, the rows of every field
    that reads cleanly go straight from its bytes into the batch's columns (capture._crecordrows); the others,
    and all of them in pure Python, are read by kafkaproto.records.to_arrow."""
    pa = _pyarrow()
    schema = record_schema()
    gathered = _Compiled(schema) if COMPILED else _Gathered(schema)
    for ex in exchanges:
        if ex.status == CAPTURE_ERROR:  # the file's damage leaves a trace here too
            yield from gathered.flush()
            yield _arrowcols.batch(pa, [{"file": file, "error": f"capture error: {ex.error}"}], schema)
            continue
        for (side, time_ns, topic, topic_id, partition, data), aborted in records_fields_with_aborted(ex):
            context = (file, ex.connection, ex.api_key, ex.api_name, side, time_ns, topic,
                       None if topic_id is None else str(topic_id), partition)
            if not gathered.took(context, data, validate, aborted):
                try:
                    table = _records.to_arrow(data, validate=validate, allow_partial=True)
                except _records.RecordsError as e:
                    yield from gathered.flush()
                    row = dict(zip(_CONTEXT, context), error=str(e))
                    yield _arrowcols.batch(pa, [row], schema)
                    continue
                if table.num_rows:
                    gathered.add(context, table, aborted_array(table, aborted))
            if gathered.rows >= rows or gathered.ready:
                yield from gathered.flush()
    yield from gathered.flush()


_CONTEXT = tuple(name for name, _, _ in RECORD_CONTEXT if name != "error")  # the order record_batches gives them


def _context_columns(pa, schema, contexts, which):
    """{name: column} of the context columns, a value per field repeated over the field's rows (which: the index
    of each row's field in contexts)."""
    values = dict(zip(_CONTEXT, zip(*contexts)))
    return {name: _arrowcols.column(pa, schema.field(name).type, list(values[name])).take(which)
            for name in _CONTEXT}


class _Gathered:
    """Records fields' tables and where each came from, until they make one batch."""

    ready = ()  # batches made and not yet given (none here: see _Compiled)

    def __init__(self, schema):
        self.schema = schema
        self.tables = []
        self.contexts = []  # one per table
        self.outcomes = []  # one "aborted" array per table
        self.rows = 0

    def took(self, context, data, validate, aborted):
        return False  # every field is read by records.to_arrow, and given to add

    def add(self, context, table, aborted):
        self.tables.append(table)
        self.contexts.append(context)
        self.outcomes.append(aborted)
        self.rows += table.num_rows

    def flush(self):
        if self.rows:
            yield self.batch()

    def batch(self):
        pa = _pyarrow()
        records = pa.concat_tables(self.tables).combine_chunks()
        which = []
        for i, table in enumerate(self.tables):
            which.extend([i] * table.num_rows)
        context = _context_columns(pa, self.schema, self.contexts, _arrowcols.column(pa, pa.int32(), which))
        columns = []
        for field in self.schema:
            if field.name in context:
                columns.append(context[field.name])
            elif field.name == "error":
                columns.append(pa.nulls(self.rows, type=field.type))
            elif field.name == "aborted":
                columns.append(pa.concat_arrays(self.outcomes))
            else:
                columns.append(records.column(field.name).combine_chunks())
        self.tables, self.contexts, self.outcomes, self.rows = [], [], [], 0
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


class _Compiled:
    """Records fields' rows gathered in compiled column buffers (RecordRows), and where each field came from. A
    field the general path reads (given to add) makes a batch of its own, after those of the fields before it."""

    def __init__(self, schema):
        self.schema = schema
        self.columns = RecordRows(_pyarrow(), _records.arrow_schema(), outcomes)
        self.names = [f.name for f in _records.arrow_schema()]
        self.contexts = []  # one per field with rows in columns
        self.ready = []

    @property
    def rows(self):
        return self.columns.rows

    def took(self, context, data, validate, aborted):
        """Whether the field's rows are in (False: the general path is to read it, and give it to add)."""
        added = self.columns.add(data, validate, aborted)
        if added == -2:  # the rows gathered leave no room for the field's in an Arrow column (2 GiB)
            self.ready.append(self.batch())
            added = self.columns.add(data, validate, aborted)
        if added > 0:
            self.contexts.append(context)
        return added >= 0

    def add(self, context, table, aborted):
        if self.columns.rows:
            self.ready.append(self.batch())
        general = _Gathered(self.schema)
        general.add(context, table, aborted)
        self.ready.append(general.batch())

    def flush(self):
        if self.columns.rows:
            self.ready.append(self.batch())
        ready, self.ready = self.ready, []
        yield from ready

    def batch(self):
        pa = _pyarrow()
        rows = self.columns.rows
        records, counts, aborted = self.columns.build()
        columns = dict(zip(self.names, records), aborted=aborted, error=pa.nulls(rows, type=pa.string()))
        for name, values in zip(_CONTEXT, zip(*self.contexts)):
            columns[name] = repeated(pa, self.schema.field(name).type, values, counts)
        self.contexts = []
        return pa.RecordBatch.from_arrays([columns[f.name] for f in self.schema], schema=self.schema)


def records_table(exchanges, file=None, validate=True):
    pa = _pyarrow()
    return pa.Table.from_batches(list(record_batches(exchanges, file, validate)), schema=record_schema())


def compiled_record_lines(batch):
    """The JSON lines of a batch of the record schema (json.dumps of each row, times in ISO 8601 and bytes in
    base64, as the command line writes them), written in compiled code; None where that code does not take the
    batch, or is not built."""
    if not COMPILED:
        return None
    pa = _pyarrow()
    from ._carrowcols import record_lines
    return record_lines(pa, batch)
