from libc.stdint cimport uint32_t


cdef class Records:
    # The file as a window of bytes (pcap._Input): buf[pos:end] is unread, base is buf[0]'s offset in the file.
    cdef object data, buf
    cdef Py_ssize_t pos, end
    cdef long long base
    cdef bint closed
    # The record next_record() found: its time, link type and interface, where its bytes lie in buf, its length
    # on the wire, its offset.
    cdef readonly int link_type
    cdef long long time_ns, wire_length, record_at
    cdef Py_ssize_t start, stop
    cdef int interface

    cdef int next_record(self) except -1
    cdef void _window(self)


cdef class PcapRecords(Records):
    cdef Py_ssize_t header_size
    cdef long long fraction_ns
    cdef bint little


cdef class PcapngRecords(Records):
    cdef object section  # pcap._Section: the byte order's structs and the interfaces
    cdef bint little
    # The section's first interfaces as C values: link type, and nanoseconds per tick where a packet's time is
    # ticks times that (no offset, micro- or nanoseconds); 0 sends the packet's time to section.stamp.
    cdef Py_ssize_t described
    cdef int links[64]
    cdef long long tick_ns[64]

    cdef int _describe(self) except -1
