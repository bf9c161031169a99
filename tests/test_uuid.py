import base64
import copy
import pickle
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kafkaproto.uuid as uuid_mod
from kafkaproto.uuid import Uuid, _uuid_from_bytes

raw16 = st.binary(min_size=16, max_size=16)


# --- round trips -------------------------------------------------------------


@given(raw16)
def test_string_round_trip(raw):
    u = Uuid.from_bytes(raw)
    text = str(u)
    assert len(text) == 22 and "=" not in text
    # Independent reference: the stdlib encoder with the padding stripped.
    assert text == base64.urlsafe_b64encode(raw).decode().rstrip("=")
    assert Uuid.from_string(text) == u
    assert Uuid.from_string(text + "==") == u  # Java's decoder also takes the padded form
    assert repr(u) == f"Uuid({text!r})"


@given(raw16)
def test_views_and_constructors_agree(raw):
    u = Uuid.from_bytes(raw)
    msb, lsb = struct.unpack(">qq", raw)
    assert u.bytes == raw
    assert (u.most_significant_bits, u.least_significant_bits) == (msb, lsb)
    assert u.int == int.from_bytes(raw, "big")
    assert Uuid(msb, lsb) == u
    # The unsigned spelling of the halves builds the same value.
    assert Uuid(msb % 2**64, lsb % 2**64) == u
    assert Uuid.from_int(u.int) == u
    assert _uuid_from_bytes(raw) == u


# --- known vectors -----------------------------------------------------------


@pytest.mark.parametrize(
    "uuid, text",
    [
        (Uuid.ZERO, "AAAAAAAAAAAAAAAAAAAAAA"),
        (Uuid.METADATA_TOPIC_ID, "AAAAAAAAAAAAAAAAAAAAAQ"),
        # 128 one-bits: 21 x '_' (63) then '11' + four zero pad bits = 48 = 'w'.
        (Uuid(-1, -1), "_____________________w"),
        # Bytes 01..10: groups 010203 -> AQID, 040506 -> BAUG, ..., final 10 -> EA.
        (Uuid(0x0102030405060708, 0x090A0B0C0D0E0F10), "AQIDBAUGBwgJCgsMDQ4PEA"),
        # fb ff bf -> 111110 111111 111110 111111 -> "-_-_" in the URL-safe alphabet.
        (Uuid.from_bytes(b"\xfb\xff\xbf" * 5 + b"\xfb"), "-_-_" * 5 + "-w"),
    ],
)
def test_known_vectors(uuid, text):
    assert str(uuid) == text
    assert Uuid.from_string(text) == uuid


def test_constants():
    assert Uuid.ZERO.int == 0
    assert Uuid.ONE.int == 1
    assert Uuid.METADATA_TOPIC_ID is Uuid.ONE
    assert Uuid.RESERVED == {Uuid.ZERO, Uuid.ONE}
    assert Uuid(0, 1) == Uuid.ONE


# --- ordering ----------------------------------------------------------------


def _java_key(u):
    # Reference for Java's compareTo, computed from the raw bytes via struct.
    return struct.unpack(">qq", u.bytes)


@given(raw16, raw16)
def test_order_matches_signed_halves(a, b):
    ua, ub = Uuid.from_bytes(a), Uuid.from_bytes(b)
    ka, kb = _java_key(ua), _java_key(ub)
    assert (ua < ub) == (ka < kb)
    assert (ua <= ub) == (ka <= kb)
    assert (ua > ub) == (ka > kb)
    assert (ua >= ub) == (ka >= kb)
    assert (ua == ub) == (a == b)


def test_signed_order_examples():
    # A set top bit makes a half negative, so it sorts first: not byte order.
    high = Uuid.from_bytes(b"\x80" + bytes(15))
    assert high < Uuid.ZERO < Uuid.ONE
    assert Uuid(0, -1) < Uuid(0, 0) < Uuid(0, 1)
    assert Uuid(-1, 2**63 - 1) < Uuid(0, -(2**63))
    values = [Uuid.ONE, Uuid(2**63 - 1, 0), Uuid.ZERO, Uuid(-(2**63), 5), Uuid(-1, -1)]
    assert sorted(values) == [Uuid(-(2**63), 5), Uuid(-1, -1), Uuid.ZERO, Uuid.ONE, Uuid(2**63 - 1, 0)]


def test_ordering_with_other_types_is_an_error():
    with pytest.raises(TypeError):
        Uuid.ZERO < 1  # noqa: B015


# --- random ------------------------------------------------------------------


def test_random_properties():
    seen = set()
    for _ in range(500):
        u = Uuid.random()
        text = str(u)
        assert u not in Uuid.RESERVED
        assert "-" not in text and not text.startswith("-")
        assert u.bytes[6] >> 4 == 4  # version 4
        assert u.bytes[8] >> 6 == 0b10  # IETF variant
        seen.add(u)
    assert len(seen) == 500


def test_random_retries_on_dash(monkeypatch):
    # 0xf8 encodes to a leading '-', so the first draw must be rejected.
    draws = iter([b"\xf8" + bytes(15), bytes(16)])
    monkeypatch.setattr(uuid_mod.os, "urandom", lambda n: next(draws))
    u = Uuid.random()
    assert u.bytes == bytes(6) + b"\x40\x00\x80" + bytes(7)
    assert "-" not in str(u)


# --- from_string errors -------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "AAAAAAAAAAAAAAAAAAAAA+",  # standard alphabet
        "AAAAAAAAAAAAAAAAAAAAA/",
        "AAAAAAAAAAAAAAAAAAAA A",  # whitespace inside
        " AAAAAAAAAAAAAAAAAAAAAA",
        "AAAAAAAAAAAAAAAAAAAAAA\n",  # trailing newline
        "AAAAAAAAAAAAAAAAAAAAA\u00e9",  # non-ASCII letter
        "AAAAAAAAAAAAAAAAAAAA==",  # padding too early
        "AAAAAAAAAAAAAAAAAAAAAA=",  # Java rejects a single '=' after two chars
        "",
        "AAAAAAAAAAAAAAAAAAAAA",  # 21 chars: 15 bytes + leftover bits
        "AAAAAAAAAAAAAAAAAAAAAAA",  # 23 chars: 17 bytes
        "AAAAAAAAAAAAAAAAAAAAAAAA",  # 24 chars: 18 bytes
    ],
)
def test_from_string_rejects_bad_text(text):
    with pytest.raises(ValueError) as info:
        Uuid.from_string(text)
    assert repr(text) in str(info.value)


def test_from_string_rejects_long_text():
    text = "A" * 30
    with pytest.raises(ValueError, match="too long") as info:
        Uuid.from_string(text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize("value", [b"AAAAAAAAAAAAAAAAAAAAAA", None, 12, Uuid.ZERO])
def test_from_string_rejects_non_str(value):
    with pytest.raises(ValueError) as info:
        Uuid.from_string(value)
    assert repr(value) in str(info.value)
    assert type(value).__name__ in str(info.value)


def test_from_string_ignores_unused_trailing_bits_like_java():
    # The last character carries 2 used bits and 4 pad bits; Java's decoder does not
    # check the pad bits, so 'B' (000001) still decodes to all zeros.
    assert Uuid.from_string("AAAAAAAAAAAAAAAAAAAAAB") == Uuid.ZERO


# --- other constructor errors ---------------------------------------------------


@pytest.mark.parametrize("msb, lsb", [(2**64, 0), (0, 2**64), (-(2**63) - 1, 0), (0, -(2**63) - 1)])
def test_halves_out_of_range(msb, lsb):
    with pytest.raises(ValueError):
        Uuid(msb, lsb)


def test_halves_must_be_ints():
    with pytest.raises(TypeError):
        Uuid(1.0, 0)


@pytest.mark.parametrize("raw", [b"", bytes(15), bytes(17)])
def test_from_bytes_wrong_length(raw):
    with pytest.raises(ValueError, match="16 bytes"):
        Uuid.from_bytes(raw)


def test_from_bytes_accepts_bytes_like():
    assert Uuid.from_bytes(bytearray(16)) == Uuid.ZERO
    assert type(Uuid.from_bytes(memoryview(bytes(16))).bytes) is bytes


@pytest.mark.parametrize("value", [-1, 2**128])
def test_from_int_out_of_range(value):
    with pytest.raises(ValueError):
        Uuid.from_int(value)


# --- value semantics ------------------------------------------------------------


@given(raw16)
def test_equality_and_hash(raw):
    a, b = Uuid.from_bytes(raw), Uuid.from_bytes(bytes(raw))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert (a != b) is False


def test_eq_with_other_types():
    assert Uuid.ZERO.__eq__(0) is NotImplemented
    assert Uuid.ZERO != 0
    assert Uuid.ZERO != str(Uuid.ZERO)
    assert Uuid.ZERO != bytes(16)


@given(raw16)
def test_pickle_and_copy(raw):
    u = Uuid.from_bytes(raw)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        clone = pickle.loads(pickle.dumps(u, protocol))
        assert clone == u and type(clone) is Uuid and clone.bytes == raw
    assert copy.copy(u) is u and copy.deepcopy(u) is u


def test_immutable():
    u = Uuid.random()
    with pytest.raises(AttributeError):
        u._bytes = bytes(16)
    with pytest.raises(AttributeError):
        u.other = 1
    with pytest.raises(AttributeError):
        del u._bytes
    assert not hasattr(u, "__dict__")
