"""From a capture's exchanges to what a replay sends: each client connection's requests in the captured order, the
order they must keep with answers on other connections, the topics to set up first, and what cannot be replayed.

    plan = Plan.of(read_capture("session.pcapng"))
    plan.steps                 # every request to send, in the order the capture saw them sent
    plan.not_replayable        # [(connection, client, reason)]: TLS, SCRAM, joined late, lost bytes, brokers' own
    plan.topics                # {name: TopicSetup}: topics the capture uses but does not create itself

Order across connections: a request waits for every answer the capture saw arrive before it was sent (on any
connection), because the client may have acted on it; requests also leave in the captured order. Nothing here does
I/O.
"""

from collections import defaultdict

from .. import errors
from ..capture import tables
from ..compare import LOADING
from ..connection import expects_response
from ..messages import ApiKey
from ..uuid import Uuid
from .. import fields

# Requests brokers and controllers send each other: the target makes its own, so a replay leaves them out.
CLUSTER_OWN = {
    ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA, ApiKey.CONTROLLED_SHUTDOWN,
    ApiKey.WRITE_TXN_MARKERS, ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH, ApiKey.ALTER_PARTITION,
    ApiKey.ENVELOPE, ApiKey.FETCH_SNAPSHOT, ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT,
    ApiKey.ALLOCATE_PRODUCER_IDS, ApiKey.CONTROLLER_REGISTRATION, ApiKey.ASSIGN_REPLICAS_TO_DIRS,
    ApiKey.UPDATE_RAFT_VOTER, ApiKey.INITIALIZE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE,
    ApiKey.WRITE_SHARE_GROUP_STATE, ApiKey.DELETE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY,
}
_GREETING = {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
# SASL mechanisms whose exchange is bound to the captured broker's own challenge.
UNREPEATABLE_SASL = {"SCRAM-SHA-256": "SCRAM's proof answers the captured broker's nonce",
                     "SCRAM-SHA-512": "SCRAM's proof answers the captured broker's nonce",
                     "GSSAPI": "Kerberos tickets and wrapped tokens belong to the captured session"}


def cluster_own(header, body):
    """Why a request is one a broker sends another (None for a client's): the target sends its own."""
    key = header.request_api_key
    if key in CLUSTER_OWN:
        return f"the cluster's own traffic ({ApiKey(key).name}): the target sends its own"
    if key == ApiKey.ADD_PARTITIONS_TO_TXN and header.request_api_version >= 4:
        return "a broker verifying a transaction with its coordinator (AddPartitionsToTxn v4+): the target does its own"
    if key == ApiKey.FETCH and body is not None and max(body.replica_id, body.replica_state.replica_id) >= 0:
        return "a follower's fetch: the target's replicas fetch for themselves"
    return None


def not_ready(body):
    """Whether an answer only says the broker was not ready yet (a coordinator loading, a leader not elected, a
    transaction still ending): every error code in it is one of compare.LOADING."""
    codes = []
    _error_codes(body, codes)
    return bool(codes) and all(code in LOADING for code in codes)


def _error_codes(obj, out):
    """The error codes that decide an answer: its top-level ones when set, else every nested one (partition
    results name theirs PartitionErrorCode and the like)."""
    cls = type(obj)
    top = [getattr(obj, f.attr) for f in cls._fields if f.name.endswith("ErrorCode") and f.kind == "int16"]
    if any(top):
        out.extend(code for code in top if code)
        return
    nested = []
    for f in cls._fields:
        if f.struct is None:
            continue
        value = getattr(obj, f.attr)
        for item in (value or ()) if f.array else (value,):
            if item is not None:
                _error_codes(item, nested)
    out.extend(nested or top)


class Step:
    """One request to send: the captured exchange, and where it stands in the captured order.

    ``after``: how many captured answers (counted in the order they arrived) came before it was sent; it waits
    for their replays. ``rank``: its own answer's place in that order (None when no answer is awaited).
    ``skip``: why it is not sent (the captured answer only said the broker was not ready; the client asked
    again). ``compare``: whether its answer can be compared (the capture holds it whole).
    """

    __slots__ = ("index", "connection", "exchange", "after", "rank", "skip", "compare")

    def __init__(self, index, connection, exchange):
        self.index, self.connection, self.exchange = index, connection, exchange
        self.after = 0
        self.rank = None
        self.skip = None
        self.compare = exchange.response is not None

    @property
    def header(self):
        return self.exchange.request_header

    @property
    def request(self):
        return self.exchange.request

    @property
    def answer(self):
        """The captured answer's body, or None."""
        return self.exchange.response

    @property
    def expects_answer(self):
        return expects_response(self.header, self.request)

    def __repr__(self):
        ex = self.exchange
        return (f"Step({self.index}, connection {self.connection}, {ex.api_name} v{ex.api_version}, "
                f"correlation id {ex.correlation_id}{', skip: ' + self.skip if self.skip else ''})")


class TopicSetup:
    """A topic to create before the replay: what the capture tells of it."""

    __slots__ = ("name", "partitions", "replication_factor", "configs")

    def __init__(self, name):
        self.name = name
        self.partitions = 0
        self.replication_factor = -1
        self.configs = {}

    def __repr__(self):
        return f"TopicSetup({self.name!r}, partitions={self.partitions}, configs={self.configs})"


class Plan:
    """The steps of a replay (see the module's doc). Build one with Plan.of(exchanges)."""

    def __init__(self):
        self.steps = []  # in the captured order of sending
        self.not_replayable = []  # [(connection index or None, client (address, port) or None, reason)]
        self.topics = {}  # name -> TopicSetup
        self.topic_names = {}  # topic id (Uuid) -> name, as the capture's answers pair them
        self.named_topics = set()  # every topic name the capture holds
        self.named_groups = set()  # every group id it holds
        self.versions = defaultdict(set)  # api key -> versions the replayed requests use
        self.nodes = {}  # (host, port) -> node id, as the capture's answers advertise its brokers
        self.damage = None  # the capture file's own damage, if any

    @classmethod
    def of(cls, exchanges):
        """The plan for a capture's exchanges (from kafkaproto.capture.read_capture, in any order)."""
        plan = cls()
        by_connection = defaultdict(list)
        for ex in exchanges:
            if ex.status == "capture error":
                plan.damage = ex.error
            elif ex.connection is not None:
                by_connection[ex.connection].append(ex)
        kept = []
        for connection, found in sorted(by_connection.items()):
            found.sort(key=_sent_at)
            reason = _unreplayable(found)
            if reason is not None:
                plan.not_replayable.append((connection, (found[0].client_address, found[0].client_port), reason))
                continue
            for ex in found:
                if ex.request is not None:
                    kept.append(ex)
        kept.sort(key=_sent_at)
        for ex in kept:
            step = Step(len(plan.steps), ex.connection, ex)
            step.skip = cluster_own(ex.request_header, ex.request)
            if step.skip is None and ex.response is not None and not_ready(ex.response):
                step.skip = "the captured broker was not ready (rule loading): the client asked again"
            plan.steps.append(step)
        plan._order()
        plan._learn_names(kept)
        plan._plan_topics(kept)
        return plan

    @classmethod
    def of_rows(cls, rows):
        """The plan for exchange rows (kafkaproto.capture.tables' columns: a Parquet file's rows, or those a Spark
        job collected with the kafka-pcap source's option bodies=exact), as dicts or Spark Rows."""
        return cls.of(tables.exchange_of(row if isinstance(row, dict) else row.asDict()) for row in rows)

    def _order(self):
        """Rank the awaited answers in the order they arrived, and count for each step the answers before it."""
        answered = [s for s in self.steps if s.skip is None and s.expects_answer and s.compare]
        answered.sort(key=lambda s: _answered_at(s.exchange))
        for rank, step in enumerate(answered):
            step.rank = rank
        times = [_answered_at(s.exchange) for s in answered]
        # A step never waits for an answer to itself or to a later step (a capture whose clocks disagree could
        # say so): the smallest rank from each step on bounds what it waits for.
        bound = [len(answered)] * (len(self.steps) + 1)
        for step in reversed(self.steps):
            bound[step.index] = min(bound[step.index + 1], len(answered) if step.rank is None else step.rank)
        i = 0
        for step in self.steps:  # in order of sending: the count only grows
            sent = _sent_at(step.exchange)
            while i < len(times) and times[i] < sent:
                i += 1
            step.after = min(i, bound[step.index])
            if step.skip is None:
                self.versions[step.exchange.api_key].add(step.exchange.api_version)

    def _learn_names(self, exchanges):
        for ex in exchanges:
            for body in (ex.request, ex.response):
                if body is not None:
                    fields.visit(body, self._name)
            answer = ex.response
            if ex.api_key in (ApiKey.METADATA, ApiKey.DESCRIBE_CLUSTER) and answer is not None:
                nodes = answer.brokers
            elif ex.api_key == ApiKey.FIND_COORDINATOR and answer is not None:
                nodes = answer.coordinators if ex.api_version >= 4 else [answer]
            else:
                continue
            for node in nodes:
                if fields.node_id(node) >= 0:
                    self.nodes[(node.host, node.port)] = fields.node_id(node)

    def node_of(self, address, port):
        """The captured node id of the broker a connection went to (by its address, or its port alone when no
        other node has that port), or None."""
        found = self.nodes.get((address, port))
        if found is None:
            by_port = {node for (_, p), node in self.nodes.items() if p == port}
            found = by_port.pop() if len(by_port) == 1 else None
        return found

    def _name(self, role, value, where, obj):
        if role == fields.TOPIC_NAME:
            self.named_topics.add(value)
            topic_id = getattr(obj, "topic_id", None)
            if isinstance(topic_id, Uuid) and topic_id != Uuid.ZERO:
                self.topic_names.setdefault(topic_id, value)
        elif role == fields.GROUP:
            self.named_groups.add(value)

    def _plan_topics(self, exchanges):
        """Topics a captured answer shows existing before the capture creates them itself."""
        created = set()
        for ex in exchanges:
            answer = ex.response
            if answer is None or ex.status != "ok":
                continue
            key = ex.api_key
            if key == ApiKey.CREATE_TOPICS and not ex.request.validate_only:
                created.update(t.name for t in answer.topics if t.error_code == 0)
            elif key in (ApiKey.METADATA, ApiKey.DESCRIBE_TOPIC_PARTITIONS):
                for topic in answer.topics:
                    name = topic.name or self.topic_names.get(topic.topic_id)
                    if name and topic.error_code in (0, errors.LEADER_NOT_AVAILABLE.code) and not _internal(name) \
                            and name not in created and topic.partitions:
                        setup = self.topics.setdefault(name, TopicSetup(name))
                        setup.partitions = max(setup.partitions, len(topic.partitions))
                        if setup.replication_factor < 0:
                            setup.replication_factor = max(len(p.replica_nodes) for p in topic.partitions)
            elif key == ApiKey.DESCRIBE_CONFIGS:
                for result in answer.results:
                    if result.resource_type == 2 and result.error_code == 0 and result.resource_name in self.topics:
                        setup = self.topics[result.resource_name]
                        if not setup.configs:
                            setup.configs = {c.name: c.value for c in result.configs if _set_on_topic(c, ex)}
            elif key in _DATA_APIS:
                fields.visit(answer, lambda role, value, where, obj: self._partition_seen(role, where, obj, created))

    def _partition_seen(self, role, where, obj, created):
        if role != fields.PARTITION or getattr(obj, "error_code", None) != 0:
            return
        name = where.topic or self.topic_names.get(where.topic_id)
        if name and name not in created and not _internal(name):
            setup = self.topics.setdefault(name, TopicSetup(name))
            setup.partitions = max(setup.partitions, where.partition + 1)

    def connections(self):
        """{connection index: [its steps, in order]}."""
        out = defaultdict(list)
        for step in self.steps:
            out[step.connection].append(step)
        return dict(out)

    def __repr__(self):
        return (f"Plan({len(self.steps)} steps on {len(self.connections())} connections, "
                f"{len(self.not_replayable)} not replayable, topics {sorted(self.topics)})")


# Answers whose partitions exist only where the topic does.
_DATA_APIS = {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.DELETE_RECORDS}


def _internal(name):
    return name.startswith("__")


def _set_on_topic(config, ex):
    """Whether a DescribeConfigs entry was set on the topic itself (not a broker's or Kafka's default)."""
    if ex.api_version >= 1:
        return config.config_source == 1  # TOPIC_CONFIG
    return not config.is_default and not config.read_only


def _sent_at(ex):
    return (ex.request_time_ns or ex.response_time_ns or 0, ex.request_packet or 1 << 62)


def _answered_at(ex):
    return (ex.response_time_ns or 0, ex.response_packet or 1 << 62)


def _unreplayable(exchanges):
    """Why a captured connection cannot be replayed, or None."""
    first = exchanges[0]
    if first.joined:
        return "the capture joined it after it began: its first requests (ApiVersions, SASL) are missing"
    for ex in exchanges:
        if ex.status == "unsupported" and ex.error and "TLS" in ex.error:
            return "TLS: the connection is encrypted"
        if ex.status == "unsupported" and ex.error and "raw SASL" in ex.error:
            return "SASL tokens sent raw after SaslHandshake v0: the capture reader does not keep them"
        if ex.request is None and ex.status in ("gap", "decode error", "unsupported"):
            return f"the request at packet {ex.request_packet or ex.response_packet} cannot be read: {ex.error}"
        if ex.api_key == ApiKey.SASL_HANDSHAKE and ex.request is not None:
            reason = UNREPEATABLE_SASL.get((ex.request.mechanism or "").upper())
            if reason:
                return f"SASL {ex.request.mechanism}: {reason}"
    # A connection whose requests, past its greeting (ApiVersions, SASL), are all the cluster's own is a broker's.
    own = [cluster_own(ex.request_header, ex.request) for ex in exchanges
           if ex.request is not None and ex.api_key not in _GREETING]
    if own and all(own):
        return own[0]
    return None
