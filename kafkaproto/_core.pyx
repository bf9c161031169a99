# cython: language_level=3, boundscheck=False, wraparound=False, auto_pickle=False
"""Compiled codec core: Reader, Writer, the Struct base class and cold paths."""

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.memoryview cimport PyMemoryView_FromObject
from cpython.number cimport PyNumber_Index
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdlib cimport free, malloc, realloc
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t

from kafkaproto import _generic
from kafkaproto.exceptions import DecodeError, UnsupportedVersionError
from kafkaproto._pycore import FileRegion, Request, Response

cdef type FILE_REGION = FileRegion  # a C-level reference: the encoders test every non-bytes buffer against it
from kafkaproto.uuid import Uuid

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object o, Py_ssize_t* size) except NULL
    int PyGC_Enable()
    int PyGC_Disable()
    ctypedef struct PyTypeObject:
        PyObject* (*tp_new)(PyTypeObject*, PyObject*, PyObject*) except NULL
    ctypedef struct PyMemberDef:
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member

cdef tuple _NO_ARGS = ()


cdef class Reader:
    """A bounds-checked cursor over any buffer; never copies the input."""

    def __cinit__(self, data):
        if type(data) is bytes:
            self.buf = <const unsigned char*>PyBytes_AS_STRING(data)
            self.end = len(<bytes>data)
        else:
            PyObject_GetBuffer(data, &self.view, PyBUF_SIMPLE)
            self.has_view = True
            self.buf = <const unsigned char*>self.view.buf
            self.end = self.view.len
            self._mv = memoryview(data).cast("B")  # now, not while the collector may be paused
        self.data = data
        self.pos = 0

    def __dealloc__(self):
        if self.has_view:
            PyBuffer_Release(&self.view)

    cdef object slice(self, Py_ssize_t start, Py_ssize_t stop):
        if self._mv is None:
            self._mv = memoryview(self.data).cast("B")
        return self._mv[start:stop]

    # Python-level access to the primitives, named as in the pure-Python Reader.
    def bool(self):
        return read_bool(self)

    def int8(self):
        return read_int8(self)

    def int16(self):
        return read_int16(self)

    def uint16(self):
        return read_uint16(self)

    def int32(self):
        return read_int32(self)

    def uint32(self):
        return read_uint32(self)

    def int64(self):
        return read_int64(self)

    def float64(self):
        return read_float64(self)

    def uvarint(self):
        return read_uvarint(self)

    def uvarlong(self):
        return <uint64_t>read_uvarlong(self)

    def varint(self):
        return read_varint(self)

    def varlong(self):
        return read_varlong(self)

    def uuid(self):
        return read_uuid(self)

    def string(self, bint compact, bint nullable):
        return read_string(self, compact, nullable)

    def bytes(self, bint compact, bint nullable):
        return read_bytes(self, compact, nullable)

    def records(self, bint compact, bint nullable):
        return read_records(self, compact, nullable)

    def array_len(self, bint compact, Py_ssize_t min_item):
        return read_array_len(self, compact, min_item)

    @property
    def position(self):
        return self.pos

    @property
    def remaining(self):
        return self.end - self.pos


# One scratch buffer kept between encodes, so writing goes to memory that is
# already mapped and warm; finish() copies the result out once.
cdef char* _spare = NULL
cdef Py_ssize_t _spare_cap = 0
cdef Py_ssize_t SPARE_MAX = 16 * 1024 * 1024
# Buffers at least this large (records, mostly) are not copied into the scratch
# buffer; finish() copies them straight into the result, as b"".join would.
cdef Py_ssize_t DEFER_MIN = 4096


cdef class Writer:
    """A growable output buffer; finish() returns its bytes."""

    def __cinit__(self, Py_ssize_t capacity=1024):
        global _spare, _spare_cap
        if _spare is not NULL and _spare_cap >= capacity:
            self.data, self.cap = _spare, _spare_cap
            _spare, _spare_cap = NULL, 0
        else:
            self.cap = max(capacity, 64)
            self.data = <char*>malloc(self.cap)
            if self.data is NULL:
                raise MemoryError()
        self.pos = 0
        self.blobs = None
        self.blob_bytes = 0

    def __dealloc__(self):
        self._release()

    cdef void _release(self) noexcept:
        global _spare, _spare_cap
        if self.data is NULL:
            return
        if self.cap <= SPARE_MAX and (_spare is NULL or _spare_cap < self.cap):
            free(_spare)
            _spare, _spare_cap = self.data, self.cap
        else:
            free(self.data)
        self.data = NULL
        self.cap = self.pos = 0

    cdef int grow(self, Py_ssize_t need) except -1:
        if self.data is NULL:
            raise ValueError("Writer already finished")
        cdef Py_ssize_t cap = self.cap * 2
        if cap < self.pos + need:
            cap = self.pos + need
        cdef char* p = <char*>realloc(self.data, cap)
        if p is NULL:
            raise MemoryError()
        self.data, self.cap = p, cap
        return 0

    cdef int defer(self, object value, Py_ssize_t n) except -1:
        """Copy value (n bytes) at finish() instead of now; value must not change size until then."""
        if self.blobs is None:
            self.blobs = []
        self.blobs.append((self.pos, value))
        self.blob_bytes += n
        return 0

    cdef int rollback(self, Py_ssize_t pos, Py_ssize_t nblobs) except -1:
        """Forget everything written after a mark (a failed message)."""
        self.pos = pos
        if self.blobs is not None and len(self.blobs) > nblobs:
            del self.blobs[nblobs:]
            self.blob_bytes = 0
            for _, blob in self.blobs:
                self.blob_bytes += len(blob) if type(blob) is FILE_REGION else memoryview(blob).nbytes
        return 0

    cpdef bytes finish(self):
        if self.data is NULL:
            raise ValueError("Writer already finished")
        cdef Py_ssize_t total = self.pos + self.blob_bytes
        cdef bytes out = PyBytes_FromStringAndSize(NULL, total)
        cdef char* dst = PyBytes_AS_STRING(out)
        cdef Py_ssize_t done = 0, at
        cdef Py_buffer view
        if self.blobs is not None:
            for at, blob in self.blobs:
                memcpy(dst, self.data + done, at - done)
                dst += at - done
                done = at
                if type(blob) is FILE_REGION:
                    blob = blob.read()
                PyObject_GetBuffer(blob, &view, PyBUF_SIMPLE)
                memcpy(dst, view.buf, view.len)
                dst += view.len
                PyBuffer_Release(&view)
            self.blobs = None
        memcpy(dst, self.data + done, self.pos - done)
        self._release()
        self.blob_bytes = 0
        return out

    cpdef list finish_parts(self):
        """What was written as a list of bytes and the FileRegions written, in order (as finish() would have
        it, but each region left in its file)."""
        if self.data is NULL:
            raise ValueError("Writer already finished")
        cdef list parts = [], pending = []
        cdef Py_ssize_t done = 0, at
        if self.blobs is not None:
            for at, blob in self.blobs:
                pending.append(PyBytes_FromStringAndSize(self.data + done, at - done))
                done = at
                if type(blob) is FILE_REGION:
                    parts.append(b"".join(pending))
                    parts.append(blob)
                    pending = []
                else:
                    pending.append(blob)
            self.blobs = None
        pending.append(PyBytes_FromStringAndSize(self.data + done, self.pos - done))
        parts.append(b"".join(pending))
        self._release()
        self.blob_bytes = 0
        return parts

    # Python-level access to the primitives, named as in the pure-Python Writer.
    def bool(self, value):
        write_bool(self, value)

    def int8(self, value):
        write_int8(self, as_int8(value))

    def int16(self, value):
        write_int16(self, as_int16(value))

    def uint16(self, value):
        write_uint16(self, as_uint16(value))

    def int32(self, value):
        write_int32(self, as_int32(value))

    def uint32(self, value):
        write_uint32(self, as_uint32(value))

    def int64(self, value):
        write_int64(self, as_int64(value))

    def float64(self, double value):
        write_float64(self, value)

    def uvarint(self, value):
        write_uvarint(self, as_uint32(value))

    def uvarlong(self, value):
        write_uvarlong(self, as_uint64(value))

    def varint(self, value):
        write_varint(self, as_int32(value))

    def varlong(self, value):
        write_varlong(self, as_int64(value))

    def uuid(self, value):
        write_uuid(self, value)

    def string(self, value, bint compact, bint nullable):
        write_string(self, value, compact, nullable)

    def bytes(self, value, bint compact, bint nullable):
        write_bytes(self, value, compact, nullable)

    def null(self, bint compact, bint short_len):
        write_null(self, compact, short_len)

    def array_len(self, Py_ssize_t n, bint compact):
        write_array_len(self, n, compact)

    def raw(self, data):
        """Append bytes as they are."""
        cdef const unsigned char[:] view = data
        if view.shape[0]:
            write_raw(self, <const char*>&view[0], view.shape[0])

    def patch_int32(self, Py_ssize_t pos, int32_t value):
        """Overwrite four bytes already written (a size prefix, once the size is known)."""
        if pos < 0 or pos + 4 > self.pos or (self.blobs and (<tuple>self.blobs[0])[0] < pos + 4):
            raise IndexError(f"no int32 written at {pos}")
        cdef char* p = self.data + pos
        cdef uint32_t u = <uint32_t>value
        p[0] = <char>(u >> 24)
        p[1] = <char>(u >> 16)
        p[2] = <char>(u >> 8)
        p[3] = <char>u

    def __len__(self):
        return self.pos + self.blob_bytes


# A large message makes thousands of objects that all stay alive, and each
# allocation counts towards a collection that would find nothing to free; so
# the cyclic collector is paused while one is read. The collector's switch is
# global, so the pause must be invisible to other threads: it is taken only when
# the collector is on, and no Python code runs until it ends (decoding is C
# alone, and every error restarts the collector before building its exception),
# so no other thread can run, or see or change the switch, in between.
cdef Py_ssize_t GC_PAUSE_MIN = 8192
cdef bint _gc_paused = False


cdef bint gc_pause(Py_ssize_t nbytes) noexcept:
    global _gc_paused
    if nbytes > GC_PAUSE_MIN and not _gc_paused and PyGC_Disable():
        _gc_paused = True
    return _gc_paused


cdef void gc_resume() noexcept:
    global _gc_paused
    if _gc_paused:
        _gc_paused = False
        PyGC_Enable()




cdef inline Struct new_struct(type cls):
    """A fresh instance with every attribute None, without running __init__."""
    return <Struct>new_empty(cls)


cdef class Struct:
    """Base of every generated class: generic methods driven by the class's _fields."""

    _fields = ()
    _qualname = "Struct"
    valid_versions = range(0)

    cdef int _read(self, Reader r, int v) except -1:
        return 0

    cdef int _write(self, Writer w, int v) except -1:
        return 0

    def encode(self, int version):
        """The message's bytes at the given version."""
        cdef Writer w = Writer()
        if version not in type(self).valid_versions:
            _generic.bad_version(type(self), version)
        try:
            self._write(w, version)
        except (TypeError, ValueError, OverflowError) as e:
            _generic.diagnose_encode(self, version, e)
        return w.finish()

    @classmethod
    def decode(cls, data, int version):
        """Decode one message at the given version from any buffer; all of it must be used."""
        if version not in cls.valid_versions:
            _generic.bad_version(cls, version)
        cdef Reader r = Reader(data)
        cdef Struct o = new_struct(cls)
        read_message(o, r, version)
        if r.pos != r.end:
            raise DecodeError(f"{r.end - r.pos} bytes left over after the message", r.pos,
                              message=f"{cls._qualname} v{version}")
        return o

    @classmethod
    def read_from(cls, Reader r, int version):
        """Decode from the reader's position, leaving it after the message."""
        if version not in cls.valid_versions:
            _generic.bad_version(cls, version)
        cdef Struct o = new_struct(cls)
        read_message(o, r, version)
        return o

    def write_to(self, Writer w, int version):
        """Append the message's bytes at the given version to a Writer."""
        if version not in type(self).valid_versions:
            _generic.bad_version(type(self), version)
        cdef Py_ssize_t start = w.pos
        cdef Py_ssize_t nblobs = len(w.blobs) if w.blobs is not None else 0
        try:
            self._write(w, version)
        except (TypeError, ValueError, OverflowError) as e:
            w.rollback(start, nblobs)
            _generic.diagnose_encode(self, version, e)

    def __eq__(self, other):
        return _generic.equal(self, other)

    def __ne__(self, other):
        eq = _generic.equal(self, other)
        return eq if eq is NotImplemented else not eq

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


# ---- cold paths ----------------------------------------------------------

cdef int fail_at(str reason, Py_ssize_t offset) except -1:
    """Raise DecodeError; every decode error goes through here (see gc_pause)."""
    gc_resume()
    raise DecodeError(reason, offset)


cdef int raise_short(Reader r, Py_ssize_t n, const char* what) except -1:
    fail_at(f"{what.decode()} needs {n} bytes but only {r.end - r.pos} remain", r.pos)


cdef int raise_decode(Reader r, str reason) except -1:
    fail_at(reason, r.pos)


cdef Py_ssize_t bad_length(Reader r, Py_ssize_t n, bint compact, bint nullable, int kind) except -2:
    what = ("string", "bytes", "records")[kind]
    width = 1 if compact else 2 if kind == K_STRING else 4
    if n < -1:
        fail_at(f"negative {what} length {n}", r.pos - width)
    if not nullable:
        fail_at(f"null {what} in a non-nullable field", r.pos - width)
    return -1


cdef Py_ssize_t slot_offset(type cls, str name) except -1:
    """Where a __slots__ attribute lives inside instances of cls."""
    d = cls.__dict__.get(name)
    if type(d).__name__ != "member_descriptor":
        raise TypeError(f"{cls.__name__}.{name} is not a __slots__ attribute")
    return (<PyMemberDescrObject*>d).d_member.offset


cdef inline object new_empty(type cls):
    """An instance of a plain slotted class with every slot unset, without __init__."""
    cdef PyObject* p = (<PyTypeObject*>cls).tp_new(<PyTypeObject*>cls, <PyObject*>_NO_ARGS, NULL)
    cdef object o = <object>p   # takes a reference...
    Py_DECREF(o)                # ...so drop the one tp_new returned
    return o


cdef inline void set_slot(object o, Py_ssize_t offset, object value) noexcept:
    """Fill an unset slot of a fresh instance (skipping any __setattr__ the class has)."""
    Py_INCREF(value)
    (<PyObject**>(<char*><PyObject*>o + offset))[0] = <PyObject*>value


# Decoders make a Uuid per topic id; filling its one slot directly skips a
# Python-level call per Uuid.
cdef type _UUID_TYPE = Uuid
cdef Py_ssize_t _UUID_SLOT = slot_offset(Uuid, "_bytes")


cdef object make_uuid(const unsigned char* p):
    cdef object u = new_empty(_UUID_TYPE)
    set_slot(u, _UUID_SLOT, PyBytes_FromStringAndSize(<const char*>p, 16))
    return u


cdef object decode_utf8(Reader r, Py_ssize_t n):
    cdef const char* p = <const char*>(r.buf + r.pos)
    try:
        s = PyUnicode_DecodeUTF8(p, n, NULL)
    except UnicodeDecodeError as e:
        gc_resume()
        raise DecodeError(f"invalid UTF-8 in string: {e.reason}", r.pos + e.start) from None
    r.pos += n
    return s


cdef uint32_t read_uvarint_slow(Reader r) except? 0xFFFFFFFF:
    cdef uint32_t v = 0
    cdef int shift = 0
    cdef unsigned char b
    cdef Py_ssize_t start = r.pos
    while True:
        if r.pos >= r.end:
            fail_at("varint runs past the end of the input", r.pos)
        b = r.buf[r.pos]
        r.pos += 1
        if shift == 28 and b > 0x0F:
            fail_at("varint does not fit in 32 bits", start)
        v |= (<uint32_t>(b & 0x7F)) << shift
        if b < 0x80:
            return v
        shift += 7


cdef Py_ssize_t read_array_len(Reader r, bint compact, Py_ssize_t min_item) except -2:
    """An array length; -1 means null. Fails before a lying length can allocate."""
    cdef Py_ssize_t start = r.pos
    cdef Py_ssize_t n
    if compact:
        n = <Py_ssize_t>read_uvarint(r) - 1
    else:
        n = read_int32(r)
    if n < -1:
        fail_at(f"negative array length {n}", start)
    if n > 0 and n * min_item > r.end - r.pos:
        fail_at(f"array of {n} items needs at least {n * min_item} bytes but only {r.end - r.pos} remain", start)
    return n


cdef dict read_unknown_tag(Reader r, dict unknown, uint32_t tag, Py_ssize_t size):
    if unknown is None:
        unknown = {}
    unknown[tag] = (<const char*>r.buf)[r.pos:r.pos + size]
    r.pos += size
    return unknown


cdef int write_tagged(Writer w, list known, object unknown, tuple tags, int v) except -1:
    """The tagged-field section when it is not empty: known and unknown tags in tag order."""
    items = _generic.merge_tags(known, unknown, tags, v)
    write_uvarint(w, <uint32_t>len(items))
    for tag, data in items:
        write_uvarint(w, tag)
        write_uvarint(w, <uint32_t>len(data))
        write_raw(w, PyBytes_AS_STRING(data), len(<bytes>data))
    return 0


cdef object index_value(object value):
    return PyNumber_Index(value)


cdef int write_length(Writer w, Py_ssize_t n, bint compact, bint short_len, str what) except -1:
    """The length prefix of n bytes or items, refusing a length the field cannot carry."""
    cdef Py_ssize_t limit = MAX_LENGTH if compact else 0x7FFF if short_len else 0x7FFFFFFF
    if n > limit:
        raise ValueError(f"{what} of length {n} is longer than {limit}")
    if compact:
        return write_uvarint(w, <uint32_t>(n + 1))
    if short_len:
        return write_int16(w, <int16_t>n)
    return write_int32(w, <int32_t>n)


cdef int write_buffer(Writer w, object value, bint compact, str what) except -1:
    cdef Py_buffer view
    cdef Py_ssize_t n
    if type(value) is bytes:
        n = len(<bytes>value)
        write_length(w, n, compact, False, what)
        if n >= DEFER_MIN:
            w.defer(value, n)  # immutable: safe to copy later
        else:
            write_raw(w, PyBytes_AS_STRING(value), n)
        return 0
    if type(value) is FILE_REGION:  # left in its file until finish() reads it or finish_parts() hands it on
        n = value.size
        write_length(w, n, compact, False, what)
        w.defer(value, n)
        return 0
    try:
        PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
    except TypeError:
        raise bad_value(value, what) from None
    try:
        write_length(w, view.len, compact, False, what)
        if view.len >= DEFER_MIN:
            # A memoryview pins the buffer until finish() copies it: resizing a
            # bytearray in the meantime fails instead of moving the memory.
            w.defer(PyMemoryView_FromObject(value), view.len)
        else:
            write_raw(w, <const char*>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return 0


cdef int write_str(Writer w, object value, bint compact) except -1:
    cdef Py_ssize_t n
    cdef const char* p
    if type(value) is not str:
        raise bad_value(value, "string")
    p = PyUnicode_AsUTF8AndSize(value, &n)
    write_length(w, n, compact, True, "string")
    write_raw(w, p, n)
    return 0


cdef int write_uuid(Writer w, object value) except -1:
    if type(value) is not Uuid:
        raise bad_value(value, "uuid")
    cdef bytes b = value.bytes
    write_raw(w, PyBytes_AS_STRING(b), 16)
    return 0


cdef object bad_value(object value, str what):
    """The exception for a value that cannot be written; the caller adds the field path."""
    if value is None:
        return TypeError(f"{what} field is not nullable here, got None")
    return TypeError(f"cannot write {type(value).__name__} as {what}")


# ---- request/response frames -----------------------------------------------
# The compiled twin of the frame functions in protocol.py; protocol.install()
# hands over the API table once the generated classes are loaded.

cdef dict _APIS = {}   # api key -> ApiEntry
cdef type _REQUEST_HEADER = None
cdef type _RESPONSE_HEADER = None


cdef class ApiEntry:
    """What the frame functions need of one API, as C values."""
    cdef type request
    cdef type response
    cdef tuple requests, responses  # every class encoded as this API: an extension's and the one it amends
    cdef int lo, hi
    cdef tuple request_headers, response_headers  # header version by version - lo
    cdef int fallback  # the version a response is read at when it does not read at the one asked; -1: none
    cdef str name


def install(apis, request_header, response_header):
    """apis: {api key: registry.ApiInfo}; the registry calls this whenever a package joins."""
    global _REQUEST_HEADER, _RESPONSE_HEADER
    cdef ApiEntry e
    _APIS.clear()
    for key, info in apis.items():
        e = ApiEntry.__new__(ApiEntry)
        e.request, e.response, e.name = info.request, info.response, info.name
        e.requests, e.responses = info.request_classes, info.response_classes
        valid = info.valid_versions
        e.lo, e.hi = (valid.start, valid.stop - 1) if len(valid) else (1, 0)
        e.request_headers, e.response_headers = info.request_header_versions, info.response_header_versions
        e.fallback = -1 if info.fallback_version is None else info.fallback_version
        _APIS[key] = e
    _REQUEST_HEADER, _RESPONSE_HEADER = request_header, response_header


# Request and Response are the pure-Python classes (one definition for both
# implementations); their slots are filled directly, as for Uuid.
cdef type _REQUEST = Request
cdef type _RESPONSE = Response
cdef Py_ssize_t _REQ_HEADER_SLOT = slot_offset(Request, "header")
cdef Py_ssize_t _REQ_BODY_SLOT = slot_offset(Request, "body")
cdef Py_ssize_t _RESP_HEADER_SLOT = slot_offset(Response, "header")
cdef Py_ssize_t _RESP_BODY_SLOT = slot_offset(Response, "body")
cdef Py_ssize_t _RESP_VERSION_SLOT = slot_offset(Response, "version")


cdef object make_request(header, body):
    cdef object o = new_empty(_REQUEST)
    set_slot(o, _REQ_HEADER_SLOT, header)
    set_slot(o, _REQ_BODY_SLOT, body)
    return o


cdef object make_response(header, body, int version):
    cdef object o = new_empty(_RESPONSE)
    set_slot(o, _RESP_HEADER_SLOT, header)
    set_slot(o, _RESP_BODY_SLOT, body)
    set_slot(o, _RESP_VERSION_SLOT, version)
    return o


cdef inline int request_header_version(ApiEntry e, int version):
    return <int>e.request_headers[version - e.lo]


cdef inline int response_header_version(ApiEntry e, int version) except -1:
    # A response may be read at another version than asked (see ApiEntry.fallback).
    if e.lo <= version <= e.hi:
        return <int>e.response_headers[version - e.lo]
    if e.fallback >= 0:
        return <int>e.response_headers[e.fallback - e.lo]
    _generic.bad_version(e.response, version)


cdef ApiEntry _api_entry(object api_key):
    entry = _APIS.get(api_key)
    if entry is None:
        raise KeyError(f"no Kafka API {api_key!r}")
    return <ApiEntry>entry


cdef int read_message(Struct o, Reader r, int version) except -1:
    """Read a whole message into o; a DecodeError is labelled with the message and version."""
    gc_pause(r.end - r.pos)
    try:
        o._read(r, version)
    except DecodeError as e:
        e.message = f"{type(o)._qualname} v{version}"
        raise
    finally:
        gc_resume()
    return 0


cdef int _write_message(Struct o, Writer w, int version) except -1:
    cdef Py_ssize_t start = w.pos
    cdef Py_ssize_t nblobs = len(w.blobs) if w.blobs is not None else 0
    try:
        o._write(w, version)
    except (TypeError, ValueError, OverflowError) as e:
        w.rollback(start, nblobs)
        _generic.diagnose_encode(o, version, e)
    return 0


cdef inline int patch_size(Writer w) except -1:
    cdef uint32_t size = <uint32_t>(w.pos + w.blob_bytes - 4)
    w.data[0] = <char>(size >> 24)
    w.data[1] = <char>(size >> 16)
    w.data[2] = <char>(size >> 8)
    w.data[3] = <char>size
    return 0


def decode_request(frame, bint allow_trailing=False):
    try:
        return _decode_request(frame, allow_trailing)
    except (DecodeError, UnsupportedVersionError) as exc:
        _generic.note_size_prefix(exc, frame)
        raise


cdef _decode_request(frame, bint allow_trailing):
    cdef Reader r = Reader(frame)
    if r.end < 4:
        raise DecodeError("a request needs at least 4 bytes for its api key and version", 0)
    cdef int api_key = read_int16(r)
    cdef int version = read_int16(r)
    r.pos = 0
    entry = _APIS.get(api_key)
    if entry is None:
        raise DecodeError(f"unknown api key {api_key}", 0)
    cdef ApiEntry e = <ApiEntry>entry
    if not e.lo <= version <= e.hi:
        _generic.bad_version(e.request, version)
    cdef Struct header = new_struct(_REQUEST_HEADER)
    read_message(header, r, request_header_version(e, version))
    cdef Struct body = new_struct(e.request)
    read_message(body, r, version)
    if r.pos != r.end and not allow_trailing:
        raise DecodeError(f"{r.end - r.pos} bytes left over after the message", r.pos,
                          message=f"{e.request._qualname} v{version}")
    return make_request(header, body)


def decode_response(frame, int api_key, int api_version):
    cdef ApiEntry e = _api_entry(api_key)
    try:
        return _decode_response(e, frame, api_version)
    except (DecodeError, UnsupportedVersionError) as exc:
        _generic.note_size_prefix(exc, frame)
        raise


cdef _read_response_body(ApiEntry e, Reader r, int version):
    cdef Struct body = new_struct(e.response)
    read_message(body, r, version)
    if r.pos != r.end:
        raise DecodeError(f"{r.end - r.pos} bytes left over after the message", r.pos,
                          message=f"{e.response._qualname} v{version}")
    return body


cdef _decode_response(ApiEntry e, frame, int api_version):
    cdef Reader r = Reader(frame)
    cdef Struct header = new_struct(_RESPONSE_HEADER)
    read_message(header, r, response_header_version(e, api_version))
    cdef Py_ssize_t start = r.pos
    if e.fallback >= 0 and api_version != e.fallback:
        first = None
        if e.lo <= api_version <= e.hi:
            try:
                return make_response(header, _read_response_body(e, r, api_version), api_version)
            except DecodeError as exc:
                first = exc
        r.pos = start
        try:
            body = _read_response_body(e, r, e.fallback)
        except DecodeError:
            if first is None:
                raise
            raise first from None  # the version asked is the likelier truth; its error says more
        return make_response(header, body, e.fallback)
    if not e.lo <= api_version <= e.hi:
        _generic.bad_version(e.response, api_version)
    return make_response(header, _read_response_body(e, r, api_version), api_version)


cdef ApiEntry _entry_of(Struct body, str side):
    entry = _APIS.get(getattr(body, "api_key", None))
    if entry is None:
        raise TypeError(f"{type(body).__name__} is not a {side}")
    cdef ApiEntry e = <ApiEntry>entry
    cdef type t = type(body)
    if t is not (e.request if side == "request" else e.response) and t not in (
            e.requests if side == "request" else e.responses):
        raise TypeError(f"{type(body).__name__} is not a {side}")
    return e


def encode_request(Struct header, Struct body, int version):
    cdef ApiEntry e = _entry_of(body, "request")
    if type(header) is not _REQUEST_HEADER:
        raise TypeError(f"expected a RequestHeader, got {type(header).__name__}")
    if not e.lo <= version <= e.hi:
        _generic.bad_version(e.request, version)
    cdef int api_key = body.api_key
    if header.request_api_key != api_key or header.request_api_version != version:
        raise ValueError(
            f"header names API {header.request_api_key} v{header.request_api_version} "
            f"but the body is {e.name} v{version}")
    cdef Writer w = Writer()
    reserve(w, 4)
    _write_message(header, w, request_header_version(e, version))
    _write_message(body, w, version)
    patch_size(w)
    return w.finish()


def encode_response(Struct header, Struct body, int version):
    return _encode_response(header, body, version).finish()


def encode_response_parts(Struct header, Struct body, int version):
    return _encode_response(header, body, version).finish_parts()


cdef Writer _encode_response(Struct header, Struct body, int version):
    cdef ApiEntry e = _entry_of(body, "response")
    if type(header) is not _RESPONSE_HEADER:
        raise TypeError(f"expected a ResponseHeader, got {type(header).__name__}")
    if not e.lo <= version <= e.hi:
        _generic.bad_version(e.response, version)
    cdef Writer w = Writer()
    reserve(w, 4)
    _write_message(header, w, response_header_version(e, version))
    _write_message(body, w, version)
    patch_size(w)
    return w


cdef extern from *:
    """
    #if defined(__GLIBC__)
    #include <malloc.h>
    static int kafkaproto_keep_freed_memory(void) {
        /* Fixed thresholds: frame-sized blocks come from the heap, and up to 64 MiB freed at its top stays. */
        return mallopt(M_MMAP_THRESHOLD, 16 << 20) && mallopt(M_TRIM_THRESHOLD, 64 << 20);
    }
    #else
    static int kafkaproto_keep_freed_memory(void) { return 0; }
    #endif
    """
    int kafkaproto_keep_freed_memory()


def keep_freed_memory():
    """See kafkaproto.allocator.keep_freed_memory."""
    return bool(kafkaproto_keep_freed_memory())
