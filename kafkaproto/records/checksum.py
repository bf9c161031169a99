"""CRC-32C (Castagnoli), the checksum a record batch carries over its bytes from the attributes on."""

from .._impl import COMPILED

if COMPILED:
    from ._ccrc32c import crc32c
else:
    from crc32c import crc32c

__all__ = ["crc32c"]
