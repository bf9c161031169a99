"""Adapters that let the interop tests drive independent Python Kafka codecs ("peers").

Two peers, both generated independently from the upstream JSON message specs:

* ``kio`` (0.6.5): one frozen dataclass per (message, version) under
  ``kio.schema.<api>.v<N>``, read by the Rust ``kio._kio_native`` readers and
  written by ``kio.serial.entity_writer``.
* ``kafka-python`` (3.x): one class per message, built at import time from the
  JSON specs bundled in ``kafka/protocol/schemas/resources``; its encoders and
  decoders are Python source generated per version and ``exec``-compiled.

Values are compared in a *canonical* form: kafkaproto's value domain (plain ints,
bools, str, float, bytes), with every uuid as its 16 bytes, nested structs as
dicts keyed by kafkaproto's attribute names and arrays as lists. A peer's object
is converted into that form; the other way, kafkaproto's ``to_dict()`` is
converted into the peer's own types to build the peer object.

Fields are matched by position among the fields present at the version, after
``build_plan`` checked that the two sides agree on the structure (count, type,
nullability, tag). Field *names* are allowed to differ, since both peers rename:
kio drops ``_ms`` from duration/timestamp fields (``throttle_time_ms`` ->
``throttle_time``) and appends ``_`` to ``id``; both peers' specs predate some
upstream renames (``GenerationIdOrMemberEpoch`` was ``GenerationId``,
``AcceptableRecoveryLagLegacy`` was ``AcceptableRecoveryLag``); kafka-python
patches ``*AuthorizedOperations`` to ``authorized_operations``.

Normalisations (the peer cannot express what kafkaproto can, or says it
differently). Each is a conversion both ways, never a silent drop:

* uuid, both peers: the all-zero uuid is ``None`` in the peer (its readers turn
  zero into ``None``, its writers write zero for ``None``). Kafka has no null
  uuid, so nothing is lost.
* kio ``error_code`` fields (int16 in the spec) are ``ErrorCode`` enum members.
* kio ``timedelta_i32``/``timedelta_i64`` fields (int32/int64 ``*Ms`` durations)
  are ``datetime.timedelta``; kio ``datetime_i64`` fields (int64 ``*TimestampMs``)
  are UTC ``datetime``. Where kio types such a field ``Optional`` while the spec
  has a plain int64 (``ProduceResponse...LogAppendTimeMs``), ``None`` stands for
  the spec's -1.
* kafka-python ``bitfield`` fields (its json_patch of the int32
  ``*AuthorizedOperations``) are a set of bit numbers; ``None`` stands for
  ``INT32_MIN`` (only bit 31, the spec's "not requested" default).
* kafka-python tagged struct fields default to ``None`` (kafkaproto: a struct of
  defaults). ``None`` in the peer is the default struct; a default struct is
  handed to the peer as ``None``, which it then omits, as kafkaproto does.

Narrowing (values the peer cannot represent; the generated message is mapped
into the peer's domain by ``Peer.narrow`` before the test uses it):

* kio ``error_code``: only codes kio's ``ErrorCode`` enum knows (its reader
  raises ``ValueError`` on any other int16).
* kio ``datetime_i64``: 0 <= ms < 2**42 (and -1 where kio has ``None``). The
  reader rejects negative timestamps and years past 9999, and converts through a
  float, losing microseconds above 2**42 ms (e.g. 253402300799999 ms decodes to
  ...59.998993).
* kio ``timedelta_i64``: |ms| < 2**51. Python's timedelta overflows at
  ~8.6e16 ms and the writer's ``round(total_seconds() * 1000)`` loses precision
  beyond 2**51.
"""

import dataclasses
import datetime
import importlib
import io
import pkgutil
import re
import uuid as _uuid
import warnings
from typing import NamedTuple

from kafkaproto import _generated

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
ONE_MS = datetime.timedelta(milliseconds=1)
INT32_MIN = -(2**31)
ZERO16 = bytes(16)

KIO_DATETIME_MAX = 2**42 - 1
KIO_TIMEDELTA64_MAX = 2**51 - 1


def snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def kind_of(spec_name):
    return _generated.SPECS[spec_name].kind


def api_base(spec_name):
    kind = kind_of(spec_name)
    if kind == "header":
        return spec_name
    return spec_name[: -len(kind)]


def present(f, version):
    return version in f.versions


class Mismatch(Exception):
    """kafkaproto and the peer disagree on the structure of a (message, version)."""


class PeerField(NamedTuple):
    name: str
    ptype: str  # the peer's type: "int32", "uuid", "error_code", "bitfield", "struct", ...
    array: bool
    nullable: bool
    tag: object  # int or None
    node: object  # the peer's node for a struct field


class FieldPlan(NamedTuple):
    attr: str
    info: object  # kafkaproto FieldInfo
    peer_name: str
    conv: str  # plain, bytes, uuid, struct, error_code, timedelta, datetime, datetime_or_null, bitfield
    array: bool
    nullable: bool
    tagged: bool
    child: object  # Plan for struct fields


class Plan(NamedTuple):
    cls: type  # kafkaproto class
    node: object  # the peer's type or schema node
    path: str
    fields: tuple


# ---- generic traversal -------------------------------------------------------

_SAME = {
    "int8": "plain", "int16": "plain", "uint16": "plain", "int32": "plain", "uint32": "plain",
    "int64": "plain", "float64": "plain", "bool": "plain", "string": "plain",
    "bytes": "bytes", "records": "bytes", "uuid": "uuid", "struct": "struct",
}


def build_plan(peer, cls, node, version, path):
    ours = [f for f in cls._fields if present(f, version)]
    theirs = peer.fields(node, version)
    if len(ours) != len(theirs):
        raise Mismatch(f"{path} v{version}: kafkaproto has fields {[f.attr for f in ours]}, "
                       f"{peer.name} has {[f.name for f in theirs]}")
    out = []
    for f, p in zip(ours, theirs):
        here = f"{path}.{f.attr}"
        if f.array != p.array:
            raise Mismatch(f"{here} v{version}: array {f.array} vs {peer.name} {p.array}")
        conv = _SAME.get(f.kind) if f.kind == p.ptype else peer.special_conv(f, p, version)
        if conv is None:
            raise Mismatch(f"{here} v{version}: type {f.kind} vs {peer.name} {p.ptype}")
        nullable = version in f.nullable_versions
        if nullable != p.nullable and not peer.nullable_ok(f, p, conv, nullable):
            raise Mismatch(f"{here} v{version}: nullable {nullable} vs {peer.name} {p.nullable}")
        tag = f.tag if f.tag is not None and version in f.tagged_versions else None
        if tag != p.tag:
            raise Mismatch(f"{here} v{version}: tag {tag} vs {peer.name} {p.tag}")
        child = build_plan(peer, f.struct, p.node, version, here) if f.struct is not None else None
        out.append(FieldPlan(f.attr, f, p.name, conv, f.array, nullable, tag is not None, child))
    return Plan(cls, node, path, tuple(out))


def canon(plan, d):
    """kafkaproto's to_dict() (one struct) in canonical form: present fields only."""
    return {fp.attr: _canon_value(fp, d[fp.attr]) for fp in plan.fields}


def _canon_value(fp, v):
    if v is None:
        return None
    if fp.array:
        return [_canon_item(fp, x) for x in v]
    return _canon_item(fp, v)


def _canon_item(fp, v):
    if fp.conv == "struct":
        return canon(fp.child, v)
    if fp.conv == "uuid":
        return v.bytes
    if fp.conv == "bytes":
        return bytes(v)
    return v


def default_canon(fp):
    return canon(fp.child, fp.info.struct().to_dict())


def peer_canon(peer, plan, obj):
    """A peer's object in canonical form."""
    return {fp.attr: _peer_value(peer, fp, getattr(obj, fp.peer_name)) for fp in plan.fields}


def _peer_value(peer, fp, v):
    if v is None and not fp.array:
        if fp.conv == "uuid":
            return ZERO16
        if fp.conv == "datetime_or_null":
            return -1
        if fp.conv == "bitfield":
            return INT32_MIN
        if fp.conv == "struct" and fp.tagged and not fp.array and not fp.nullable and peer.tagged_struct_none:
            return default_canon(fp)
        return None
    if v is None:
        return None
    if fp.array:
        return [_peer_item(peer, fp, x) for x in v]
    return _peer_item(peer, fp, v)


def _exact_ms(delta):
    ms, rest = divmod(delta, ONE_MS)
    return ms if not rest else delta  # a non-whole millisecond shows up as a mismatch


def _peer_item(peer, fp, v):
    conv = fp.conv
    if conv == "struct":
        return peer_canon(peer, fp.child, v)
    if conv == "uuid":
        return ZERO16 if v is None else v.bytes
    if conv == "bytes":
        return bytes(v)
    if conv == "error_code":
        return int(v)
    if conv == "timedelta":
        return _exact_ms(v)
    if conv in ("datetime", "datetime_or_null"):
        return _exact_ms(v - EPOCH)
    if conv == "bitfield":
        n = sum(1 << b for b in v)
        return n - 2**32 if n >= 2**31 else n
    if type(v) is bool or type(v) is str or type(v) is float:
        return v
    return int(v) if isinstance(v, int) else v


def to_peer(peer, plan, d, version):
    """Build the peer's object holding the values of kafkaproto's to_dict() d."""
    kwargs = {}
    for fp in plan.fields:
        v = d[fp.attr]
        if (fp.conv == "struct" and fp.tagged and not fp.array and not fp.nullable and peer.tagged_struct_none
                and v is not None and canon(fp.child, v) == default_canon(fp)):
            kwargs[fp.peer_name] = None
        elif v is None:
            kwargs[fp.peer_name] = None
        elif fp.array:
            kwargs[fp.peer_name] = peer.make_array([_to_peer_item(peer, fp, x, version) for x in v])
        else:
            kwargs[fp.peer_name] = _to_peer_item(peer, fp, v, version)
    return peer.make(plan, kwargs, version)


def _to_peer_item(peer, fp, v, version):
    conv = fp.conv
    if conv == "struct":
        return to_peer(peer, fp.child, v, version)
    if conv == "uuid":
        return None if v.bytes == ZERO16 else _uuid.UUID(bytes=v.bytes)
    if conv == "bytes":
        return bytes(v)
    return peer.to_special(conv, v)


def narrow(peer, plan, d):
    """Map kafkaproto's to_dict() d (in place) into the values the peer can represent."""
    for fp in plan.fields:
        v = d[fp.attr]
        if v is None:
            continue
        if fp.conv == "struct":
            for item in v if fp.array else [v]:
                if item is not None:
                    narrow(peer, fp.child, item)
        elif fp.conv not in ("plain", "bytes", "uuid"):
            d[fp.attr] = [peer.narrow_value(fp.conv, x) for x in v] if fp.array else peer.narrow_value(fp.conv, v)
    return d


def _into(v, lo, hi):
    return v if lo <= v <= hi else lo + (v - lo) % (hi - lo + 1)


def strip_unknown_tags(d):
    """A copy of a to_dict() without unknown tagged fields at any depth."""
    if isinstance(d, dict):
        return {k: strip_unknown_tags(v) for k, v in d.items() if k != "unknown_tagged_fields"}
    if isinstance(d, list):
        return [strip_unknown_tags(x) for x in d]
    return d


# ---- peers ------------------------------------------------------------------

class Peer:
    name = "?"
    available = False
    missing_reason = ""
    tagged_struct_none = False  # a tagged struct field is None when at its default
    reads_unknown_tags = True  # decoding skips (or keeps) tags it does not know, as KIP-482 requires
    keeps_unknown_tags = False  # decoding keeps unknown tags (exposed by unknown_tags())
    unknown_tags_in_tagged_structs = True  # can decode unknown tags inside a tagged field's struct
    lacks = {}  # kafkaproto request/response/header names the peer has no class for, with the reason

    def versions(self, spec_name):
        """The versions of spec_name the peer has a codec for (empty if none)."""
        raise NotImplementedError

    def below_spec_min(self, spec_name, version):
        """Supported although older than the peer's own spec's validVersions (a note for the report)."""
        return False

    def special_conv(self, f, p, version):
        return None

    def nullable_ok(self, f, p, conv, nullable):
        return False

    def narrow_value(self, conv, v):
        return v

    def to_special(self, conv, v):
        return v

    def make_array(self, items):
        return items


class KioPeer(Peer):
    name = "kio"
    tagged_struct_none = False
    # kio 0.6.5's reader raises KeyError("Unknown tagged field tag: N") on any tag its
    # dataclass does not declare, instead of skipping it (KIP-482). Not tested with unknown
    # tags; test_kio_rejects_unknown_tags pins the behaviour down.
    reads_unknown_tags = False
    keeps_unknown_tags = False
    lacks = {
        "ControlledShutdown": "ZooKeeper-era inter-broker API, removed in Kafka 4.0 (kio follows 4.x specs)",
        "LeaderAndIsr": "ZooKeeper-era inter-broker API, removed in Kafka 4.0 (kio follows 4.x specs)",
        "StopReplica": "ZooKeeper-era inter-broker API, removed in Kafka 4.0 (kio follows 4.x specs)",
        "UpdateMetadata": "ZooKeeper-era inter-broker API, removed in Kafka 4.0 (kio follows 4.x specs)",
        "StreamsGroupTopologyDescriptionUpdate": "newer than kio 0.6.5's spec snapshot (trunk only)",
        "UnregisterController": "newer than kio 0.6.5's spec snapshot (trunk only)",
    }

    def __init__(self):
        try:
            from kio.index import load_entity_schema
            from kio.schema.errors import ErrorCode
            from kio.schema.index import schema_name_map
            from kio.serial import entity_reader, entity_writer
            from kio.serial._introspect import classify_field, is_optional
            from kio.static.constants import EntityType
        except ImportError as e:
            self.missing_reason = f"kio is not installed ({e})"
            return
        self.available = True
        self._load = load_entity_schema
        self._map = schema_name_map
        self._reader = entity_reader
        self._writer = entity_writer
        self._classify = classify_field
        self._optional = is_optional
        self._types = {"request": EntityType.request, "response": EntityType.response,
                       "header": EntityType.header}
        self.ErrorCode = ErrorCode
        self.error_codes = sorted(int(c) for c in ErrorCode)

    def _key(self, spec_name):
        return snake(api_base(spec_name)), self._types[kind_of(spec_name)]

    def versions(self, spec_name):
        name, et = self._key(spec_name)
        return sorted(v for v, types in self._map.get(name, {}).items() if et in types)

    def root(self, spec_name, version):
        name, et = self._key(spec_name)
        return self._load(name, version, et)

    def fields(self, node, version):
        out = []
        for k in dataclasses.fields(node):
            fc = self._classify(k)
            ptype = k.metadata.get("kafka_type") or "struct"
            child = fc.type_ if ptype == "struct" else None
            out.append(PeerField(k.name, ptype, fc.is_array, self._optional(k), k.metadata.get("tag"), child))
        return out

    def special_conv(self, f, p, version):
        return {
            ("int16", "error_code"): "error_code",
            ("int32", "timedelta_i32"): "timedelta",
            ("int64", "timedelta_i64"): "timedelta",
            ("int64", "datetime_i64"): "datetime_or_null" if p.nullable else "datetime",
        }.get((f.kind, p.ptype))

    def nullable_ok(self, f, p, conv, nullable):
        # kio types every uuid Optional (zero <-> None); an Optional datetime stands for -1.
        return (conv == "uuid" or conv == "datetime_or_null") and not nullable

    def narrow_value(self, conv, v):
        if conv == "error_code":
            return v if v in self.ErrorCode._value2member_map_ else self.error_codes[v % len(self.error_codes)]
        if conv == "datetime":
            return _into(v, 0, KIO_DATETIME_MAX)
        if conv == "datetime_or_null":
            return v if v == -1 else _into(v, 0, KIO_DATETIME_MAX)
        if conv == "timedelta":
            return _into(v, -KIO_TIMEDELTA64_MAX, KIO_TIMEDELTA64_MAX)
        return v

    def to_special(self, conv, v):
        if conv == "error_code":
            return self.ErrorCode(v)
        if conv == "timedelta":
            return datetime.timedelta(milliseconds=v)
        if conv == "datetime_or_null" and v == -1:
            return None
        if conv in ("datetime", "datetime_or_null"):
            return EPOCH + datetime.timedelta(milliseconds=v)
        return v

    def make_array(self, items):
        return tuple(items)

    def make(self, plan, kwargs, version):
        return plan.node(**kwargs)

    def encode(self, plan, obj, version):
        buf = io.BytesIO()
        self._writer(plan.node)(buf, obj)
        return buf.getvalue()

    def decode(self, plan, data, version):
        obj, size = self._reader(plan.node)(data, 0)
        assert size == len(data), f"kio read {size} of {len(data)} bytes"
        return obj

    def unknown_tags(self, obj):
        return None


class KafkaPythonPeer(Peer):
    name = "kafka-python"
    tagged_struct_none = True
    keeps_unknown_tags = True  # as obj.unknown_tags {"_<tag>": bytes}; encode() drops them
    # Tagged struct values are read with tagged=None, which asserts an empty tag section.
    unknown_tags_in_tagged_structs = False
    lacks = {
        "AddRaftVoter": "controller-quorum (KRaft) API; kafka-python only ships client-facing APIs",
        "AllocateProducerIds": "inter-broker/controller API; not shipped by kafka-python",
        "AlterPartition": "inter-broker/controller API; not shipped by kafka-python",
        "AlterShareGroupOffsets": "share groups (KIP-932); not shipped by kafka-python",
        "AssignReplicasToDirs": "inter-broker/controller API; not shipped by kafka-python",
        "BeginQuorumEpoch": "controller-quorum (KRaft) API; not shipped by kafka-python",
        "BrokerHeartbeat": "inter-broker/controller API; not shipped by kafka-python",
        "BrokerRegistration": "inter-broker/controller API; not shipped by kafka-python",
        "ConsumerGroupDescribe": "KIP-848 consumer group API; not shipped by kafka-python",
        "ConsumerGroupHeartbeat": "KIP-848 consumer group API; not shipped by kafka-python",
        "ControlledShutdown": "ZooKeeper-era inter-broker API; not shipped by kafka-python",
        "ControllerRegistration": "inter-broker/controller API; not shipped by kafka-python",
        "CreateDelegationToken": "delegation tokens; not shipped by kafka-python",
        "DeleteShareGroupOffsets": "share groups (KIP-932); not shipped by kafka-python",
        "DeleteShareGroupState": "share groups (KIP-932); not shipped by kafka-python",
        "DescribeDelegationToken": "delegation tokens; not shipped by kafka-python",
        "DescribeShareGroupOffsets": "share groups (KIP-932); not shipped by kafka-python",
        "EndQuorumEpoch": "controller-quorum (KRaft) API; not shipped by kafka-python",
        "Envelope": "inter-broker/controller API; not shipped by kafka-python",
        "ExpireDelegationToken": "delegation tokens; not shipped by kafka-python",
        "FetchSnapshot": "controller-quorum (KRaft) API; not shipped by kafka-python",
        "GetTelemetrySubscriptions": "client telemetry (KIP-714); not shipped by kafka-python",
        "InitializeShareGroupState": "share groups (KIP-932); not shipped by kafka-python",
        "LeaderAndIsr": "ZooKeeper-era inter-broker API; not shipped by kafka-python",
        "PushTelemetry": "client telemetry (KIP-714); not shipped by kafka-python",
        "ReadShareGroupState": "share groups (KIP-932); not shipped by kafka-python",
        "ReadShareGroupStateSummary": "share groups (KIP-932); not shipped by kafka-python",
        "RemoveRaftVoter": "controller-quorum (KRaft) API; not shipped by kafka-python",
        "RenewDelegationToken": "delegation tokens; not shipped by kafka-python",
        "ShareAcknowledge": "share groups (KIP-932); not shipped by kafka-python",
        "ShareFetch": "share groups (KIP-932); not shipped by kafka-python",
        "ShareGroupDescribe": "share groups (KIP-932); not shipped by kafka-python",
        "ShareGroupHeartbeat": "share groups (KIP-932); not shipped by kafka-python",
        "StopReplica": "ZooKeeper-era inter-broker API; not shipped by kafka-python",
        "StreamsGroupDescribe": "KIP-1071 streams groups; not shipped by kafka-python",
        "StreamsGroupHeartbeat": "KIP-1071 streams groups; not shipped by kafka-python",
        "StreamsGroupTopologyDescriptionUpdate": "KIP-1071 streams groups; not shipped by kafka-python",
        "UnregisterBroker": "inter-broker/controller API; not shipped by kafka-python",
        "UnregisterController": "inter-broker/controller API; not shipped by kafka-python",
        "UpdateMetadata": "ZooKeeper-era inter-broker API; not shipped by kafka-python",
        "UpdateRaftVoter": "controller-quorum (KRaft) API; not shipped by kafka-python",
        "Vote": "controller-quorum (KRaft) API; not shipped by kafka-python",
        "WriteShareGroupState": "share groups (KIP-932); not shipped by kafka-python",
    }

    def __init__(self):
        try:
            import kafka.protocol as protocol
            from kafka.protocol.api_header import ApiHeader
            from kafka.protocol.api_message import ApiMessage
            from kafka.protocol.schemas.fields.base import BaseField
        except ImportError as e:
            self.missing_reason = f"kafka-python is not installed ({e})"
            return
        self.available = True
        self._parse_versions = BaseField.parse_versions
        self.classes = {}
        for info in pkgutil.walk_packages(protocol.__path__, protocol.__name__ + "."):
            if ".old" in info.name or info.name.endswith("generate_stubs"):
                continue
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if (isinstance(value, type) and issubclass(value, (ApiMessage, ApiHeader))
                        and getattr(value, "_json", None) and value.__name__ in _generated.SPECS
                        and getattr(value, "_class_version", None) is None):
                    self.classes[value.__name__] = value
        self._header = ApiHeader

    def _json_versions(self, cls):
        return self._parse_versions(cls._json["validVersions"])

    def versions(self, spec_name):
        cls = self.classes.get(spec_name)
        if cls is None:
            return []
        lo, hi = self._json_versions(cls)
        if issubclass(cls, self._header):
            # Headers are encoded at their first valid (or first flexible) version only.
            return list(range(lo, hi + 1))
        # kafka-python deliberately relaxes every message's minimum to 0 (ApiMessageData),
        # to talk to old brokers: it encodes versions its own spec no longer lists.
        return list(range(0, hi + 1))

    def below_spec_min(self, spec_name, version):
        cls = self.classes.get(spec_name)
        return cls is not None and version < self._json_versions(cls)[0]

    def root(self, spec_name, version):
        return self.classes[spec_name]

    def fields(self, node, version):
        struct = node._struct if isinstance(node, type) else node
        out = []
        for k in struct._fields:
            if not k.for_version_q(version):
                continue
            t = k.type_str if not k.is_array() else k._type_str[2:]
            ptype = "struct" if (k.is_struct() or k.is_struct_array()) else t
            child = (k.array_of if k.is_struct_array() else k) if ptype == "struct" else None
            tag = k.tag if k.tagged_field_q(version) else None
            out.append(PeerField(k.name, ptype, k.is_array(), k.nullable_for_version_q(version), tag, child))
        return out

    def special_conv(self, f, p, version):
        if f.kind == "int32" and p.ptype == "bitfield":
            return "bitfield"
        return None

    def to_special(self, conv, v):
        if conv == "bitfield":
            return None if v == INT32_MIN else {b for b in range(32) if (v & 0xFFFFFFFF) >> b & 1}
        return v

    def make(self, plan, kwargs, version):
        node = plan.node
        cls = node if isinstance(node, type) else node.data_class
        return cls(version=version, **kwargs)

    def _flexible(self, cls, version):
        fv = cls._flexible_versions
        return fv is not None and fv[0] <= version <= fv[1]

    def encode(self, plan, obj, version):
        cls = plan.node
        if issubclass(cls, self._header):
            assert version in self._json_versions(cls)
            return bytes(obj.encode(flexible=self._flexible(cls, version)))
        return bytes(obj.encode(version=version))

    def decode(self, plan, data, version):
        cls = plan.node
        flexible = self._flexible(cls, version)
        if issubclass(cls, self._header):
            buf = io.BytesIO(data)
            obj = cls.decode(buf, flexible=flexible)
            size = buf.tell()
        else:
            # What ApiMessage.decode does, minus ApiVersionsResponse's override (which
            # re-reads the body as v0 when ErrorCode != 0, the KIP-511 fallback for a
            # broker that rejected the version), and keeping the end position.
            fn = cls._struct.compiled_decode_from(version, compact=flexible, tagged=flexible, data_class=cls[None])
            obj, size = fn(memoryview(data), 0)
            # The decoder (ApiMessage.decode too, unless header=True) never sets the _header
            # slot, and encode(version=...) reads it in the API_VERSION setter: a decoded
            # message cannot be re-encoded (AttributeError: no attribute '_header'). Set it as
            # ApiMessage.__init__ would.
            if not hasattr(obj, "_header"):
                obj._header = None
        assert size == len(data), f"kafka-python read {size} of {len(data)} bytes"
        return obj

    def unknown_tags(self, obj):
        tags = getattr(obj, "unknown_tags", None)
        return {int(k[1:]): bytes(v) for k, v in tags.items()} if tags else None


def all_peers():
    with warnings.catch_warnings():
        # kafka-python reads its bundled specs with importlib.resources.read_text (deprecated).
        warnings.simplefilter("ignore", DeprecationWarning)
        return [KioPeer(), KafkaPythonPeer()]
