# cython: language_level=3, boundscheck=False, wraparound=False
# Classic pcap records, compiled: the twin of pcap._pcap_packets, with the same packets, errors and offsets.
# Iterated, it gives pcap.Packet tuples; the compiled capture loop instead asks next_record() for where each
# record's bytes lie, and reads them where they are.

from cpython.bytes cimport PyBytes_AS_STRING
from libc.stdint cimport uint32_t

from .pcap import MAX_PCAP_CAPLEN, Packet

cdef long long _MAX_CAPLEN = MAX_PCAP_CAPLEN


cdef inline uint32_t _u32(const unsigned char *p, bint little) noexcept nogil:
    if little:
        return (<uint32_t>p[3] << 24) | (<uint32_t>p[2] << 16) | (<uint32_t>p[1] << 8) | p[0]
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef class PcapRecords:
    """The packets of a classic pcap file whose first four bytes have been read into data (a pcap._Input)."""

    def __cinit__(self, data, order, long long fraction_ns, bint modified):
        self.data = data
        self.little = order == "<"
        self.fraction_ns = fraction_ns
        self.header_size = 24 if modified else 16  # modified adds ifindex, protocol, type
        have = data.fill(24)
        if have < 24:
            data.close()
            raise data.error(f"truncated: the pcap file header at byte 0 needs 24 bytes; {have} are left", 0)
        cdef Py_ssize_t at = data.pos
        cdef bytes buf = data.buf
        # The upper bits of the link type say the FCS length.
        self.link_type = _u32(<const unsigned char *>PyBytes_AS_STRING(buf) + at + 20, self.little) & 0xFFFF
        data.pos = at + 24
        self._window()

    cdef void _window(self):
        self.buf = self.data.buf
        self.pos = self.data.pos
        self.base = self.data.base
        self.end = len(self.buf)

    cdef int next_record(self) except -1:
        """1 with the next record's time_ns, start, stop, wire_length and record_at set; 0 at the end."""
        cdef const unsigned char *p
        cdef long long caplen, need
        cdef Py_ssize_t have
        if self.closed:
            return 0
        while True:
            if self.pos + self.header_size <= self.end:
                p = <const unsigned char *>PyBytes_AS_STRING(self.buf) + self.pos
                caplen = _u32(p + 8, self.little)
                if caplen > _MAX_CAPLEN:
                    self.close()
                    raise self.data.error(f"packet record at byte {self.base + self.pos} declares {caplen} captured "
                                          f"bytes; a pcap record holds at most {_MAX_CAPLEN}", self.base + self.pos)
                if self.pos + self.header_size + caplen <= self.end:
                    self.time_ns = <long long>_u32(p, self.little) * 1000000000 + \
                        <long long>_u32(p + 4, self.little) * self.fraction_ns
                    self.wire_length = _u32(p + 12, self.little)
                    self.record_at = self.base + self.pos
                    self.start = self.pos + self.header_size
                    self.stop = self.start + caplen
                    self.pos = self.stop
                    return 1
                need = self.header_size + caplen
            else:
                need = self.header_size
            self.data.pos = self.pos
            have = self.data.fill(need)
            self._window()
            if have < need:
                self.close()
                if have == 0:
                    return 0
                offset = self.base + self.pos
                if have < self.header_size:
                    raise self.data.error(f"truncated: packet record at byte {offset} has {have} of its "
                                          f"{self.header_size}-byte header", offset)
                raise self.data.error(f"truncated: packet record at byte {offset} declares {need - self.header_size} "
                                      f"captured bytes; {have - self.header_size} are left", offset)

    def __iter__(self):
        return self

    def __next__(self):
        if not self.next_record():
            raise StopIteration
        return tuple.__new__(Packet, (self.time_ns, self.link_type, self.buf[self.start:self.stop], self.wire_length,
                                      self.record_at, 0))

    def close(self):
        """Closes the file, if it was opened for reading (as a generator's close would)."""
        if not self.closed:
            self.closed = True
            self.data.close()

    def __del__(self):
        self.close()
