# cython: language_level=3, boundscheck=False, wraparound=False
# Capture records, compiled: classic pcap records, the twin of pcap._pcap_packets, and pcapng packet blocks, the
# twin of pcap._pcapng_packets, with the same packets, errors and offsets. Iterated, they give pcap.Packet tuples;
# the compiled capture loop instead asks next_record() for where each record's bytes lie, and reads them there.

from cpython.bytes cimport PyBytes_AS_STRING
from libc.limits cimport LLONG_MAX
from libc.stdint cimport uint32_t

from .pcap import (MAX_PCAP_CAPLEN, MAX_PCAPNG_BLOCK, Packet, _Section, _overlong_packet, _short_block,
                   _truncated_block)

cdef long long _MAX_CAPLEN = MAX_PCAP_CAPLEN


cdef inline uint32_t _u32(const unsigned char *p, bint little) noexcept nogil:
    if little:
        return (<uint32_t>p[3] << 24) | (<uint32_t>p[2] << 16) | (<uint32_t>p[1] << 8) | p[0]
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef class Records:
    """What both kinds of file share: the window of bytes, and iterating as pcap.Packet tuples."""

    cdef void _window(self):
        self.buf = self.data.buf
        self.pos = self.data.pos
        self.base = self.data.base
        self.end = len(self.buf)

    cdef int next_record(self) except -1:
        return 0

    def __iter__(self):
        return self

    def __next__(self):
        if not self.next_record():
            raise StopIteration
        return tuple.__new__(Packet, (self.time_ns, self.link_type, self.buf[self.start:self.stop], self.wire_length,
                                      self.record_at, self.interface))

    def close(self):
        """Closes the file, if it was opened for reading (as a generator's close would)."""
        if not self.closed and self.data is not None:
            self.closed = True
            self.data.close()

    def __del__(self):
        self.close()


cdef class PcapRecords(Records):
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


DEF SECTION_HEADER = 0x0A0D0D0A
DEF INTERFACE_DESCRIPTION = 1
DEF ENHANCED_PACKET = 6
cdef long long _MAX_BLOCK = MAX_PCAPNG_BLOCK


cdef class PcapngRecords(Records):
    """The packets of a pcapng file whose first four bytes have been read into data (a pcap._Input). Enhanced
    Packet Blocks, nearly all of a capture, are read here; every other block by pcap._Section, as the Python
    twin reads it."""

    def __cinit__(self, data):
        self.data = data
        self.section = _Section()
        self.little = True
        self._window()

    cdef int next_record(self) except -1:
        """1 with the next packet's fields set; 0 at the end."""
        cdef const unsigned char *p
        cdef const unsigned char *at
        cdef uint32_t block_type, interface, high, low
        cdef unsigned long long ticks
        cdef long long length, caplen, need
        cdef Py_ssize_t have
        section = self.section
        if self.closed:
            return 0
        try:
            while True:
                need = 12
                while self.pos + 12 <= self.end:
                    p = <const unsigned char *>PyBytes_AS_STRING(self.buf)
                    at = p + self.pos
                    block_type = _u32(at, self.little)
                    if block_type == SECTION_HEADER:  # sets the byte order (or says there is none)
                        block_type, length = section.head(self.data, self.buf, self.pos)
                        self.little = section.layout.u32.format[0] == "<"
                    else:
                        length = _u32(at + 4, self.little)
                    if length < 12 or length & 3 or length > _MAX_BLOCK or self.pos + length > self.end \
                            or _u32(at + length - 4, self.little) != length:
                        if not section.check(self.data, self.buf, self.pos, length, self.end):
                            need = length
                            break
                    self.record_at = self.base + self.pos
                    if block_type == ENHANCED_PACKET:
                        if length < 32:
                            raise _short_block(self.data, "enhanced packet", self.record_at, length, 32)
                        interface = _u32(at + 8, self.little)
                        high = _u32(at + 12, self.little)
                        low = _u32(at + 16, self.little)
                        caplen = _u32(at + 20, self.little)
                        if caplen > length - 32:
                            raise _overlong_packet(self.data, "enhanced packet", self.record_at, caplen, length - 32)
                        ticks = (<unsigned long long>high << 32) | low
                        if interface < self.described and self.tick_ns[interface] and \
                                ticks <= <unsigned long long>(LLONG_MAX // self.tick_ns[interface]):
                            self.time_ns = <long long>ticks * self.tick_ns[interface]
                            self.link_type = self.links[interface]
                        else:
                            self.time_ns = section.stamp(self.data, self.record_at, interface, high, low)
                            self.link_type = section.interfaces[interface].link_type
                        self.wire_length = _u32(at + 24, self.little)
                        self.interface = interface
                        self.start = self.pos + 28
                        self.stop = self.start + caplen
                        self.pos += length
                        return 1
                    found = section.other_block(self.data, self.buf, self.pos, length, block_type)
                    if block_type == INTERFACE_DESCRIPTION or block_type == SECTION_HEADER:
                        self._describe()  # what the packets that follow are read with
                    self.pos += length
                    if found is not None:
                        self.time_ns, self.link_type, self.start, self.stop, self.wire_length, self.interface = found
                        return 1
                self.data.pos = self.pos
                have = self.data.fill(need)
                self._window()
                if have < need:
                    if have == 0:
                        self.close()
                        return 0
                    raise _truncated_block(self.data, section.layout, have)
        except BaseException:
            self.close()
            raise

    cdef int _describe(self) except -1:
        """Copies the section's interfaces into the C arrays the packets are read with."""
        cdef Py_ssize_t i
        interfaces = self.section.interfaces
        self.described = min(len(interfaces), 64)
        for i in range(self.described):
            link_type, _, multiplier, divisor, offset_ns = interfaces[i]
            self.links[i] = link_type
            plain = divisor == 1 and offset_ns == 0 and multiplier in (1, 1000)
            self.tick_ns[i] = multiplier if plain else 0
        return 0
