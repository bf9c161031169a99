"""Every (message, version): random messages round-trip, and both implementations agree byte for byte."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kafkaproto
from kafkaproto import _generated
from kafkaproto.messages import load_implementation

from strategies import message, unknown_tags

COMPILED = load_implementation("compiled") if kafkaproto.compiled() else None
PURE = load_implementation("python")
PRIMARY = COMPILED or PURE

CASES = [
    (name, v)
    for name, spec in sorted(_generated.SPECS.items())
    for v in spec.valid_versions
]


def test_cases_cover_the_union():
    messages = [c for c in CASES if _generated.SPECS[c[0]].kind in ("request", "response")]
    requests = [c for c in CASES if _generated.SPECS[c[0]].kind == "request"]
    assert len(messages) == 736
    assert len(requests) == 368


def _roundtrip(classes, name, version, msg):
    cls = classes[name]
    data = msg.encode(version)
    back = cls.decode(data, version)
    assert back == msg
    assert back.encode(version) == data
    return data


@pytest.mark.parametrize("name,version", CASES, ids=[f"{n}-v{v}" for n, v in CASES])
@settings(max_examples=12)
@given(data=st.data())
def test_roundtrip(name, version, data):
    msg = data.draw(message(PRIMARY[name], version))
    encoded = _roundtrip(PRIMARY, name, version, msg)
    if COMPILED is not None:
        twin = PURE[name].from_dict(msg.to_dict())
        assert twin.encode(version) == encoded
        assert PURE[name].decode(encoded, version).to_dict() == msg.to_dict()


FLEXIBLE = [(n, v) for n, v in CASES if v in _generated.SPECS[n].flexible_versions]


def _inject(draw, obj, version):
    """Put random unknown tags on obj and on every struct inside it."""
    obj.unknown_tagged_fields = draw(unknown_tags(type(obj), version)) or None
    for f in type(obj)._fields:
        if f.struct is None or version not in f.versions:
            continue
        value = getattr(obj, f.attr)
        for item in (value or []) if f.array else [value]:
            if item is not None:
                _inject(draw, item, version)


@pytest.mark.parametrize("name,version", FLEXIBLE, ids=[f"{n}-v{v}" for n, v in FLEXIBLE])
@settings(max_examples=5)
@given(data=st.data())
def test_unknown_tagged_fields_roundtrip(name, version, data):
    msg = data.draw(message(PRIMARY[name], version))
    _inject(data.draw, msg, version)
    encoded = _roundtrip(PRIMARY, name, version, msg)
    if COMPILED is not None:
        assert PURE[name].from_dict(msg.to_dict()).encode(version) == encoded
