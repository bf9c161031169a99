# cython: language_level=3
# CRC-32C as a Python function, for what stamps or checks a batch outside the compiled codecs: batch headers, the
# pure-Python walk the compiled codec shares, the broker's telemetry.

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer

kp_crc32c(NULL, 0)


def crc32c(data):
    """The CRC-32C of a bytes-like object."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return kp_crc32c(<const unsigned char*>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)


def crc32c_by_table(data):
    """The same sum by the table walk, which CPUs without the instruction take: for tests on those with it."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return ~kp_crc32c_by_table(0xFFFFFFFF, <const unsigned char*>view.buf, view.len) & 0xFFFFFFFF
    finally:
        PyBuffer_Release(&view)
