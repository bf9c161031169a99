"""Pure-Python codec core: the fallback twin of _core.pyx, same behaviour.

Error messages and offsets match the compiled core exactly; tests compare them.
"""

import os
from struct import Struct as _S
from struct import error as _struct_error

from . import _generic
from .exceptions import DecodeError
from .uuid import Uuid, _uuid_from_bytes

_I8, _I16, _U16, _I32, _U32, _I64, _F64 = (_S(f) for f in (">b", ">h", ">H", ">i", ">I", ">q", ">d"))
_KIND_NAMES = ("string", "bytes", "records")


class Reader:
    """A bounds-checked cursor over any buffer; slices are zero-copy memoryviews."""

    __slots__ = ("buf", "pos", "end", "data", "_mv")

    def __init__(self, data):
        if type(data) is bytes:
            self.buf = data
        else:
            self.buf = memoryview(data).cast("B")
        self.data = data
        self.pos = 0
        self.end = len(self.buf)
        self._mv = None

    @property
    def position(self):
        return self.pos

    @property
    def remaining(self):
        return self.end - self.pos

    def short(self, n, what):
        raise DecodeError(f"{what} needs {n} bytes but only {self.end - self.pos} remain", self.pos)

    def fail(self, reason):
        raise DecodeError(reason, self.pos)

    def _fixed(self, s, n, what):
        pos = self.pos
        if self.end - pos < n:
            self.short(n, what)
        self.pos = pos + n
        return s.unpack_from(self.buf, pos)[0]

    def bool(self):
        return self._fixed(_I8, 1, "bool") != 0

    def int8(self):
        return self._fixed(_I8, 1, "int8")

    def int16(self):
        return self._fixed(_I16, 2, "int16")

    def uint16(self):
        return self._fixed(_U16, 2, "int16")

    def int32(self):
        return self._fixed(_I32, 4, "int32")

    def uint32(self):
        return self._fixed(_U32, 4, "int32")

    def int64(self):
        return self._fixed(_I64, 8, "int64")

    def float64(self):
        return self._fixed(_F64, 8, "int64")

    def uvarint(self):
        v = shift = 0
        start = self.pos
        buf = self.buf
        while True:
            if self.pos >= self.end:
                raise DecodeError("varint runs past the end of the input", self.pos)
            b = buf[self.pos]
            self.pos += 1
            if shift == 28 and b > 0x0F:
                raise DecodeError("varint does not fit in 32 bits", start)
            v |= (b & 0x7F) << shift
            if b < 0x80:
                return v
            shift += 7

    def uvarlong(self):
        v = shift = 0
        buf = self.buf
        while True:
            if self.pos >= self.end:
                self.short(1, "varlong")
            b = buf[self.pos]
            self.pos += 1
            v |= (b & 0x7F) << shift
            if b < 0x80:
                return v & 0xFFFFFFFFFFFFFFFF
            shift += 7
            if shift > 63:
                self.fail("varlong is longer than 10 bytes")

    def varint(self):
        u = self.uvarint()
        return (u >> 1) ^ -(u & 1)

    def varlong(self):
        u = self.uvarlong()
        return (u >> 1) ^ -(u & 1)

    def uuid(self):
        pos = self.pos
        if self.end - pos < 16:
            self.short(16, "uuid")
        self.pos = pos + 16
        return _uuid_from_bytes(bytes(self.buf[pos:pos + 16]))

    def length(self, compact, nullable, kind):
        if compact:
            n = self.uvarint() - 1
            width = 1
        elif kind == 0:
            n = self.int16()
            width = 2
        else:
            n = self.int32()
            width = 4
        if n < 0:
            what = _KIND_NAMES[kind]
            if n < -1:
                raise DecodeError(f"negative {what} length {n}", self.pos - width)
            if not nullable:
                raise DecodeError(f"null {what} in a non-nullable field", self.pos - width)
            return -1
        if self.end - self.pos < n:
            self.short(n, _KIND_NAMES[kind])
        return n

    def string(self, compact, nullable):
        n = self.length(compact, nullable, 0)
        if n < 0:
            return None
        pos = self.pos
        try:
            s = str(self.buf[pos:pos + n], "utf-8")
        except UnicodeDecodeError as e:
            raise DecodeError(f"invalid UTF-8 in string: {e.reason}", pos + e.start) from None
        self.pos = pos + n
        return s

    def bytes(self, compact, nullable):
        n = self.length(compact, nullable, 1)
        if n < 0:
            return None
        pos = self.pos
        self.pos = pos + n
        return bytes(self.buf[pos:pos + n])

    def records(self, compact, nullable):
        n = self.length(compact, nullable, 2)
        if n < 0:
            return None
        pos = self.pos
        self.pos = pos + n
        if self._mv is None:
            self._mv = memoryview(self.data).cast("B")
        return self._mv[pos:pos + n]

    def array_len(self, compact, min_item):
        start = self.pos
        n = self.uvarint() - 1 if compact else self.int32()
        if n < -1:
            raise DecodeError(f"negative array length {n}", start)
        if n > 0 and n * min_item > self.end - self.pos:
            raise DecodeError(
                f"array of {n} items needs at least {n * min_item} bytes but only {self.end - self.pos} remain",
                start)
        return n

    def unknown_tag(self, unknown, tag, size):
        if unknown is None:
            unknown = {}
        unknown[tag] = bytes(self.buf[self.pos:self.pos + size])
        self.pos += size
        return unknown


def _bad_value(value, what):
    if value is None:
        return TypeError(f"{what} field is not nullable here, got None")
    return TypeError(f"cannot write {type(value).__name__} as {what}")


class FileRegion:
    """size bytes of an open file from position, as the value of a bytes or records field.

    An encoder leaves the bytes in the file: encode_response_parts gives the region back among a frame's
    parts, for the writer to send with sendfile(2), and encode_response reads them in. Whoever made the
    region keeps the file open until release() (called once it is sent, or dropped).
    """

    __slots__ = ("fd", "position", "size", "_release")

    def __init__(self, fd, position, size, release=None):
        if position < 0 or size < 0:
            raise ValueError(f"a file region needs a position and size of at least 0, not {position} and {size}")
        self.fd, self.position, self.size, self._release = fd, position, size, release

    def __len__(self):
        return self.size

    def __repr__(self):
        return f"FileRegion(fd={self.fd}, position={self.position}, size={self.size})"

    def fileno(self):
        return self.fd

    def read(self):
        """The region's bytes, read from the file (all of them, or OSError)."""
        data = os.pread(self.fd, self.size, self.position)
        while len(data) < self.size:
            more = os.pread(self.fd, self.size - len(data), self.position + len(data))
            if not more:
                raise OSError(f"file region of {self.size} bytes at {self.position}: the file ends "
                              f"{self.size - len(data)} bytes short")
            data += more
        return data

    def release(self):
        """Let the file go (once; later calls do nothing)."""
        release, self._release = self._release, None
        if release is not None:
            release()


class Writer:
    """A growable output buffer; FileRegions written stay in their files until finish() or finish_parts()."""

    __slots__ = ("buf", "regions")

    def __init__(self, capacity=256):
        self.buf = bytearray()
        self.regions = None  # [(position in buf, FileRegion)]

    def patch_int32(self, pos, value):
        """Overwrite four bytes already written (a size prefix, once the size is known)."""
        if pos < 0 or pos + 4 > len(self.buf):
            raise IndexError(f"no int32 written at {pos}")
        _I32.pack_into(self.buf, pos, value)

    def __len__(self):
        return len(self.buf) + (sum(region.size for _, region in self.regions) if self.regions else 0)

    def finish(self):
        if not self.regions:
            return bytes(self.buf)
        return b"".join(part.read() if type(part) is FileRegion else part for part in self.finish_parts())

    def finish_parts(self):
        """What was written as a list of bytes and the FileRegions written, in order."""
        parts, done = [], 0
        for at, region in self.regions or ():
            parts += (bytes(self.buf[done:at]), region)
            done = at
        parts.append(bytes(self.buf[done:]))
        self.regions = None
        return parts

    def int8(self, v):
        self.buf += _I8.pack(v)

    def bool(self, v):
        if v is True:
            self.buf.append(1)
        elif v is False:
            self.buf.append(0)
        else:
            raise _bad_value(v, "bool")

    def int16(self, v):
        self.buf += _I16.pack(v)

    def uint16(self, v):
        self.buf += _U16.pack(v)

    def int32(self, v):
        self.buf += _I32.pack(v)

    def uint32(self, v):
        self.buf += _U32.pack(v)

    def int64(self, v):
        self.buf += _I64.pack(v)

    def float64(self, v):
        self.buf += _F64.pack(v)

    def uvarint(self, v):
        if not 0 <= v <= 0xFFFFFFFF:
            raise OverflowError(f"{v} does not fit an unsigned varint")
        buf = self.buf
        while v >= 0x80:
            buf.append((v & 0x7F) | 0x80)
            v >>= 7
        buf.append(v)

    def uvarlong(self, v):
        v &= 0xFFFFFFFFFFFFFFFF
        buf = self.buf
        while v >= 0x80:
            buf.append((v & 0x7F) | 0x80)
            v >>= 7
        buf.append(v)

    def varint(self, v):
        _I32.pack(v)  # range check, as the compiled writer's C conversion does
        self.uvarint(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)

    def varlong(self, v):
        _I64.pack(v)
        self.uvarlong((v << 1) ^ (v >> 63))

    def null(self, compact, short_len):
        if compact:
            self.buf.append(0)
        elif short_len:
            self.buf += b"\xff\xff"
        else:
            self.buf += b"\xff\xff\xff\xff"

    def string(self, value, compact, nullable):
        if value is None:
            if not nullable:
                raise _bad_value(value, "string")
            return self.null(compact, True)
        if type(value) is not str:
            raise _bad_value(value, "string")
        data = value.encode("utf-8")
        self.length(len(data), compact, True, "string")
        self.buf += data

    def bytes(self, value, compact, nullable, what="bytes"):
        if value is None:
            if not nullable:
                raise _bad_value(value, what)
            return self.null(compact, False)
        if isinstance(value, str):
            raise _bad_value(value, what)
        if type(value) is FileRegion:
            self.length(value.size, compact, False, what)
            if self.regions is None:
                self.regions = []
            self.regions.append((len(self.buf), value))
            return
        try:
            view = memoryview(value)
        except TypeError:
            raise _bad_value(value, what) from None
        self.length(view.nbytes, compact, False, what)
        self.buf += view

    def uuid(self, value):
        if type(value) is not Uuid:
            raise _bad_value(value, "uuid")
        self.buf += value.bytes

    def array_len(self, n, compact):
        self.length(n, compact, False, "array")

    def length(self, n, compact, short_len, what):
        """The length prefix of n bytes or items, refusing a length the field cannot carry."""
        limit = _generic.MAX_LENGTH if compact else 0x7FFF if short_len else 0x7FFFFFFF
        if n > limit:
            raise ValueError(f"{what} of length {n} is longer than {limit}")
        if compact:
            self.uvarint(n + 1)
        elif short_len:
            self.buf += _I16.pack(n)
        else:
            self.buf += _I32.pack(n)

    def raw(self, data):
        self.buf += data

    def tagged(self, known, unknown, tags, version):
        items = _generic.merge_tags(known, unknown, tags, version)
        self.uvarint(len(items))
        for tag, data in items:
            self.uvarint(tag)
            self.uvarint(len(data))
            self.buf += data


class Struct:
    """Base of every generated pure-Python class."""

    __slots__ = ("unknown_tagged_fields",)
    _fields = ()
    _qualname = "Struct"
    valid_versions = range(0)

    def _read(self, r, v):
        pass

    def _write(self, w, v):
        pass

    def encode(self, version):
        """The message's bytes at the given version."""
        if version not in type(self).valid_versions:
            _generic.bad_version(type(self), version)
        w = Writer()
        try:
            self._write(w, version)
        except (TypeError, ValueError, OverflowError, _struct_error) as e:
            _generic.diagnose_encode(self, version, e)
        return w.finish()

    @classmethod
    def decode(cls, data, version):
        """Decode one message at the given version from any buffer; all of it must be used."""
        if version not in cls.valid_versions:
            _generic.bad_version(cls, version)
        r = Reader(data)
        o = cls.__new__(cls)
        try:
            o._read(r, version)
            if r.pos != r.end:
                r.fail(f"{r.end - r.pos} bytes left over after the message")
        except DecodeError as e:
            e.message = f"{cls._qualname} v{version}"
            raise
        return o

    @classmethod
    def read_from(cls, r, version):
        """Decode from the reader's position, leaving it after the message."""
        if version not in cls.valid_versions:
            _generic.bad_version(cls, version)
        o = cls.__new__(cls)
        try:
            o._read(r, version)
        except DecodeError as e:
            e.message = f"{cls._qualname} v{version}"
            raise
        return o

    def write_to(self, w, version):
        """Append the message's bytes at the given version to a Writer."""
        if version not in type(self).valid_versions:
            _generic.bad_version(type(self), version)
        start = len(w.buf)
        try:
            self._write(w, version)
        except (TypeError, ValueError, OverflowError, _struct_error) as e:
            del w.buf[start:]
            _generic.diagnose_encode(self, version, e)

    def __eq__(self, other):
        return _generic.equal(self, other)

    __hash__ = None

    def __repr__(self):
        return _generic.represent(self)

    def to_dict(self):
        return _generic.to_dict(self)

    @classmethod
    def from_dict(cls, d):
        return _generic.from_dict(cls, d)

    def __reduce__(self):
        return (_generic.rebuild, (type(self), _generic.field_values(self)))


class _HeaderAndBody:
    """Unpacks as ``header, body = decoded``."""

    __slots__ = ()

    def __iter__(self):
        return iter((self.header, self.body))

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return (self.header, self.body)[i]

    __hash__ = None


class Request(_HeaderAndBody):
    """A decoded request: ``header`` and ``body``."""

    __slots__ = ("header", "body")

    def __init__(self, header, body):
        self.header = header
        self.body = body

    def __eq__(self, other):
        if type(other) is not Request:
            return NotImplemented
        return self.header == other.header and self.body == other.body

    def __repr__(self):
        return f"Request(header={self.header!r}, body={self.body!r})"


class Response(_HeaderAndBody):
    """A decoded response: ``header``, ``body`` and the ``version`` the body was read at."""

    __slots__ = ("header", "body", "version")

    def __init__(self, header, body, version):
        self.header = header
        self.body = body
        self.version = version

    def __eq__(self, other):
        if type(other) is not Response:
            return NotImplemented
        return (self.header, self.body, self.version) == (other.header, other.body, other.version)

    def __repr__(self):
        return f"Response(header={self.header!r}, body={self.body!r}, version={self.version})"
