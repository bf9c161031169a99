cdef class PcapRecords:
    cdef object data, buf
    cdef Py_ssize_t pos, end, header_size
    cdef long long base, fraction_ns
    cdef bint little, closed
    cdef readonly int link_type
    # The record next_record() found: its time, where its bytes lie in buf, its length on the wire, its offset.
    cdef long long time_ns, wire_length, record_at
    cdef Py_ssize_t start, stop

    cdef int next_record(self) except -1
    cdef void _window(self)
