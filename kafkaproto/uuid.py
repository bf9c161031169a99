"""Kafka's 128-bit ``Uuid`` (topic ids, cluster ids, ...).

Mirrors ``org.apache.kafka.common.Uuid``: the text form is the 16 big-endian
bytes in URL-safe base64 with the ``==`` padding dropped (22 characters), and
ordering compares the two 64-bit halves as *signed* longs, like the Java
``compareTo``.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import functools
import os
import re
from operator import index
from typing import Any, Callable

__all__ = ["Uuid"]

_U64 = 1 << 64
_I64_MIN = -(1 << 63)
# 22 URL-safe characters hold 132 bits; Java's decoder also takes the padded
# 24-character form, so "==" is optional (a single "=" is rejected, as in Java).
_B64_RE = re.compile(r"[A-Za-z0-9_-]{22}(?:==)?")


def _half(value: int, what: str) -> bytes:
    value = index(value)
    if not _I64_MIN <= value < _U64:
        raise ValueError(f"{what} {value} does not fit in 64 bits")
    return (value % _U64).to_bytes(8, "big")


@functools.total_ordering
class Uuid:
    """Immutable 128-bit id; construct from two 64-bit halves (signed or unsigned)."""

    __slots__ = ("_bytes",)
    _bytes: bytes

    # Filled in after the class body.
    ZERO: Uuid
    ONE: Uuid
    METADATA_TOPIC_ID: Uuid
    RESERVED: frozenset[Uuid]

    def __init__(self, most_significant_bits: int, least_significant_bits: int) -> None:
        _set_bytes(
            self,
            _half(most_significant_bits, "most_significant_bits")
            + _half(least_significant_bits, "least_significant_bits"),
        )

    # --- other constructors -------------------------------------------------

    @classmethod
    def from_bytes(cls, data: bytes) -> Uuid:
        data = bytes(data)
        if len(data) != 16:
            raise ValueError(f"a Uuid needs exactly 16 bytes, got {len(data)}: {data!r}")
        return _uuid_from_bytes(data)

    @classmethod
    def from_int(cls, value: int) -> Uuid:
        value = index(value)
        if not 0 <= value < 1 << 128:
            raise ValueError(f"{value} is not an unsigned 128-bit integer")
        return _uuid_from_bytes(value.to_bytes(16, "big"))

    @classmethod
    def from_string(cls, text: str) -> Uuid:
        """Parse the base64 form, accepting what Java's ``Uuid.fromString`` accepts.

        Like Java's decoder, unused low bits of the last character are ignored,
        so a non-canonical spelling parses but will not round-trip.
        """
        if not isinstance(text, str):  # ValueError on purpose: every bad input fails the same way
            raise ValueError(  # noqa: TRY004
                f"Uuid string must be a str, got {type(text).__name__}: {text!r}"
            )
        if len(text) > 24:
            shown = repr(text) if len(text) <= 64 else repr(text[:64]) + "..."
            raise ValueError(f"Uuid string {shown} is too long ({len(text)} chars) to be a base64-encoded Uuid")
        if not _B64_RE.fullmatch(text):
            raise ValueError(
                f"Uuid string {text!r} is not 22 URL-safe base64 characters "
                "(A-Z a-z 0-9 - _, optionally followed by '==')"
            )
        try:
            data = base64.urlsafe_b64decode(text[:22] + "==")
        except binascii.Error as e:  # pragma: no cover - the regex already rules this out
            raise ValueError(f"Uuid string {text!r} is not valid base64: {e}") from None
        return _uuid_from_bytes(data)

    @classmethod
    def random(cls) -> Uuid:
        """Random version-4 Uuid, never reserved and never containing '-'.

        Same loop as Kafka trunk's ``randomUuid`` (KAFKA-20072 widened the
        retry from "starts with '-'" to "contains '-'").
        """
        while True:
            raw = bytearray(os.urandom(16))
            raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
            raw[8] = (raw[8] & 0x3F) | 0x80  # IETF variant
            uuid = _uuid_from_bytes(bytes(raw))
            if uuid not in cls.RESERVED and "-" not in str(uuid):
                return uuid

    # --- views -------------------------------------------------------------

    @property
    def bytes(self) -> bytes:
        return self._bytes

    @property
    def most_significant_bits(self) -> int:
        return int.from_bytes(self._bytes[:8], "big", signed=True)

    @property
    def least_significant_bits(self) -> int:
        return int.from_bytes(self._bytes[8:], "big", signed=True)

    @property
    def int(self) -> int:
        return int.from_bytes(self._bytes, "big")

    def __str__(self) -> str:
        return base64.urlsafe_b64encode(self._bytes)[:22].decode("ascii")

    def __repr__(self) -> str:
        return f"Uuid({str(self)!r})"

    # --- value semantics ---------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Uuid):
            return self._bytes == other._bytes
        return NotImplemented

    # Below the properties named int and bytes, the builtins are spelled out for type checkers.
    def __hash__(self) -> builtins.int:
        return hash(self._bytes)

    def __lt__(self, other: object) -> bool:
        if isinstance(other, Uuid):
            return _signed_key(self._bytes) < _signed_key(other._bytes)
        return NotImplemented

    def __reduce__(self) -> tuple[Callable[[builtins.bytes], Uuid], tuple[builtins.bytes]]:
        return _uuid_from_bytes, (self._bytes,)

    def __copy__(self) -> Uuid:
        return self

    def __deepcopy__(self, memo: Any) -> Uuid:
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Uuid is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Uuid is immutable")


# Writing through the slot descriptor bypasses the blocking __setattr__.
_set_bytes = Uuid._bytes.__set__  # type: ignore[misc, attr-defined]
_new = object.__new__


def _uuid_from_bytes(data: bytes) -> Uuid:
    """Hot-path constructor for decoders: ``data`` must be 16 ``bytes``; unchecked."""
    uuid = _new(Uuid)
    _set_bytes(uuid, data)
    return uuid


def _signed_key(data: bytes) -> tuple[int, int]:
    # Java's compareTo compares the halves as signed longs.
    return (int.from_bytes(data[:8], "big", signed=True), int.from_bytes(data[8:], "big", signed=True))


Uuid.ZERO = _uuid_from_bytes(bytes(16))
Uuid.ONE = _uuid_from_bytes(bytes(15) + b"\x01")
Uuid.METADATA_TOPIC_ID = Uuid.ONE
Uuid.RESERVED = frozenset({Uuid.ZERO, Uuid.ONE})
