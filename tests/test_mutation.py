"""Damaged input either decodes or raises DecodeError, never anything else, on both implementations."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaproto import DecodeError, _generated

from impls import IMPLS, classes
from strategies import message

CASES = [(name, v) for name, spec in sorted(_generated.SPECS.items()) for v in spec.valid_versions]
IMPL_CLASSES = {impl: classes(impl) for impl in IMPLS}


def _outcome(impl, name, data, version):
    """What decoding gives: ("ok", re-encoded bytes) or ("error", message)."""
    cls = IMPL_CLASSES[impl][name]
    try:
        msg = cls.decode(data, version)
    except DecodeError as e:
        assert e.offset is not None and 0 <= e.offset <= len(data), (e.offset, len(data))
        return ("error", str(e))
    return ("ok", msg.encode(version))


def _check(name, data, version):
    outcomes = {impl: _outcome(impl, name, data, version) for impl in IMPLS}
    assert len(set(outcomes.values())) == 1, outcomes
    return outcomes[IMPLS[0]]


@pytest.mark.parametrize("name,version", CASES, ids=[f"{n}-v{v}" for n, v in CASES])
@settings(max_examples=3)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_truncations_and_mutations(name, version, data, seed):
    msg = data.draw(message(IMPL_CLASSES[IMPLS[0]][name], version))
    encoded = msg.encode(version)
    # Every strict prefix runs out of input somewhere.
    for n in range(len(encoded)):
        kind, detail = _check(name, encoded[:n], version)
        assert kind == "error", (n, detail)
    rng = random.Random(seed)
    for _ in range(12):
        damaged = bytearray(encoded)
        op = rng.randrange(3)
        if op == 0 and damaged:
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        elif op == 1:
            damaged.insert(rng.randrange(len(damaged) + 1), rng.randrange(256))
        elif damaged:
            del damaged[rng.randrange(len(damaged))]
        _check(name, bytes(damaged), version)
