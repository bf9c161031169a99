# cython: language_level=3, boundscheck=False, wraparound=False
# The common packet, compiled. Most packets of a capture belong to a connection already under way and change it in
# the plainest way: an ACK that gives up nothing, bytes that arrive in order and cut into frames, a FIN, a bare
# SYN-ACK. _steady does exactly what Exchanges.packet would do for such a packet, on the same objects, and hands
# each frame it cuts to the same Exchanges._request / _response. Any other packet (or link layer, or state) it
# leaves alone, having changed nothing, and returns None: the loop then takes the general path, which decides
# everything else.

from cpython.bytes cimport PyBytes_AS_STRING
from libc.stdint cimport int32_t, uint32_t

from ._cpcap cimport Records

from .framing import foreign

DEF MASK = 0xFFFFFFFF
DEF HALF = 0x80000000
DEF FIN = 1
DEF SYN = 2
DEF RST = 4
DEF ACK = 16


cdef inline unsigned int _u16(const unsigned char *p) noexcept nogil:
    return (p[0] << 8) | p[1]


cdef inline uint32_t _u32(const unsigned char *p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef struct Framing:
    # A _Framer's state while it reads a synced stream (see framing.Framer._feed).
    long long need       # payload bytes still owed to the current frame; -1 while reading a size prefix
    long long size       # the current frame's size
    long long offset     # stream offset of the data being fed
    long long frame_offset
    Py_ssize_t held      # bytes in the framer's buffer (a size prefix's first bytes, or a frame's)


cdef bint _cut(Framing *f, const unsigned char *held, const unsigned char *data, Py_ssize_t n,
               long long max_frame, bytes packet, Py_ssize_t at, object framer, list events) except -1:
    """Cut data into frames from state f, as Framer._feed does while synced. With events None it only checks:
    False when a frame size is out of range (the framer would lose its footing: the general path's business).
    With events, it appends the frames to them and keeps what is not yet whole in the framer's buffer; held is
    that buffer's first bytes, for a size prefix split between packets. data is packet's bytes from at on."""
    cdef Py_ssize_t pos = 0, take
    buf = framer.buf if events is not None else None
    cdef unsigned char prefix[4]
    cdef Py_ssize_t i
    cdef long long size
    while pos < n:
        if f.need < 0:
            if f.held == 0 and n - pos >= 4:
                f.frame_offset = f.offset + pos
                size = <int32_t>_u32(data + pos)
                pos += 4
            else:
                if f.held == 0:
                    f.frame_offset = f.offset + pos
                take = min(4 - f.held, n - pos)
                if events is not None:
                    buf += packet[at + pos:at + pos + take]
                f.held += take
                pos += take
                if f.held < 4:
                    break
                # The prefix: the held bytes, then what this data gave.
                for i in range(4 - take):
                    prefix[i] = held[i]
                for i in range(take):
                    prefix[4 - take + i] = data[pos - take + i]
                size = <int32_t>_u32(prefix)
                if events is not None:
                    del buf[:]
                f.held = 0
            if size < 0 or size > max_frame:
                return False
            f.size = f.need = size
            if size == 0:
                if events is not None:
                    events.append(("frame", b"", 0, False, f.frame_offset))
                f.need = -1
            continue
        if f.held == 0 and n - pos >= f.need:
            if events is not None:
                events.append(("frame", packet[at + pos:at + pos + f.need], f.need, False, f.frame_offset))
            pos += f.need
            f.need = -1
            continue
        take = min(f.need, n - pos)
        if events is not None:
            buf += packet[at + pos:at + pos + take]
        f.held += take
        pos += take
        f.need -= take
        if f.need == 0:
            if events is not None:
                events.append(("frame", bytes(buf), f.size, False, f.frame_offset))
                framer.buf = buf = bytearray()  # a new one: a large frame's memory goes with it
            f.held = 0
            f.need = -1
    f.offset += n
    return True


cdef tuple _NOTHING = ()


cdef class _Reader:
    """What the packet path needs of one Exchanges, looked up once."""
    cdef object exchanges, connections, move_to_end, request, response, close
    cdef long long max_frame
    cdef bint partitioned

    def __cinit__(self, exchanges):
        self.exchanges = exchanges
        self.connections = exchanges.connections  # the same dict for the Exchanges' life
        self.move_to_end = self.connections.move_to_end
        self.request = exchanges._request
        self.response = exchanges._response
        self.close = exchanges._close
        self.max_frame = min(exchanges.max_frame, 1 << 62)  # frame sizes are int32: any more is the same
        self.partitioned = exchanges.partition is not None


cdef int _start(framer) except -1:
    """Framer.start: a stream seen from its SYN starts at a frame boundary."""
    if not framer.offset and not framer.buf:
        framer.synced = True
        framer.lost_at = framer.lost_reason = None
    return 0


def read_exchanges(packets, exchanges, stats, tcp_segment):
    """CaptureReader's loop: the exchanges of packets (pcap.Packet, or a file's compiled Records, read in
    place), counted in stats as they go. Plain packets take the compiled path; the rest, tcp_segment and
    exchanges.packet."""
    cdef _Reader reader = _Reader(exchanges)
    cdef long long number = stats.packets, size = stats.bytes, segments = stats.tcp_segments
    cdef long long count = stats.exchanges
    cdef Records records = packets if isinstance(packets, Records) else None
    cdef Py_ssize_t start, stop
    skipped = stats.skipped
    general = exchanges.packet
    others = iter(packets) if records is None else None
    try:
        while True:
            if records is not None:  # the record is read where it lies
                if not records.next_record():
                    break
                link_type, buf, start, stop, time_ns = (records.link_type, records.buf, records.start, records.stop,
                                                        records.time_ns)
            else:
                packet = next(others, None)
                if packet is None:
                    break
                time_ns, link_type, buf = packet[0], packet[1], packet[2]
                if type(buf) is not bytes:
                    buf = bytes(buf)
                start, stop = 0, len(buf)
            number += 1
            size += stop - start
            out = _packet(reader, link_type, buf, start, stop, time_ns, number, tcp_segment, general, skipped)
            if out is None:
                continue
            segments += 1
            if out:
                count += len(out)
                stats.packets, stats.bytes, stats.tcp_segments, stats.exchanges = number, size, segments, count
                yield from out
    finally:
        stats.packets, stats.bytes, stats.tcp_segments, stats.exchanges = number, size, segments, count


cdef object _packet(_Reader reader, int link_type, bytes buf, Py_ssize_t at, Py_ssize_t stop, time_ns, number,
                    tcp_segment, general, skipped):
    """The exchanges of the packet buf[at:stop]; None when it holds no TCP segment (counted in skipped)."""
    out = _steady(reader, link_type, buf, at, stop, time_ns, number)
    if out is None:
        seg = tcp_segment(link_type, buf[at:stop] if at or stop != len(buf) else buf)
        if type(seg) is str:
            skipped[seg] += 1
            return None
        out = general(seg, time_ns, number)
    return out


cdef object _steady(_Reader reader, int link_type, bytes data, Py_ssize_t at, Py_ssize_t stop, time_ns, number):
    """The exchanges the packet data[at:stop] completes, as Exchanges.packet gives them; None (and nothing changed)
    when the packet is not a plain one of a connection under way."""
    cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(data) + at
    cdef Py_ssize_t size = stop - at
    cdef unsigned int total_length, offset_flags, flags
    cdef Py_ssize_t ip_end, payload_at, n
    cdef uint32_t seq, ack, ahead
    cdef bint from_client
    cdef Framing f, trial
    # Ethernet, IPv4 without options, TCP, not a fragment, captured whole.
    if link_type != 1 or size < 54 or p[12] != 0x08 or p[13] != 0x00 or p[14] != 0x45 or p[23] != 6:
        return None
    total_length = _u16(p + 16)
    if _u16(p + 20) & 0x3FFF or total_length < 40:
        return None
    ip_end = 14 + total_length
    offset_flags = _u16(p + 46)
    payload_at = 34 + ((offset_flags >> 12) << 2)
    if ip_end > size or payload_at < 54 or payload_at > ip_end:
        return None
    flags = offset_flags & 0x1FF
    n = ip_end - payload_at
    syn = flags & SYN
    if flags & RST or not flags & ACK or (syn and (n or flags & FIN)):
        return None  # a SYN-ACK is taken only bare
    exchanges = reader.exchanges
    if time_ns >= exchanges._next_sweep_ns:
        return None  # idle connections are due to be swept
    seq = _u32(p + 38)
    ack = _u32(p + 42)

    a = (data[at + 26:at + 30], _u16(p + 34))
    b = (data[at + 30:at + 34], _u16(p + 36))
    key = (a, b) if a <= b else (b, a)
    conn = reader.connections.get(key)
    if conn is None:
        # The last ACK of a connection already closed, or a keep-alive of one never seen; another partition's
        # connections are the general path's to tell.
        return _NOTHING if not n and not syn and not reader.partitioned else None
    if conn.up is None or conn.foreign:
        return None
    from_client = a == conn.client_key
    stream, other = (conn.up, conn.down) if from_client else (conn.down, conn.up)

    # The ACK (of a SYN-ACK too: the peer's SYN was seen): nothing held beyond a hole, and no bytes acknowledged
    # that the capture lacks.
    other_next = other.next_seq
    if other_next is None or other.pending:
        return None
    end_seq = other.end_seq
    if end_seq is not None and 0 < ((ack - <uint32_t>end_seq) & MASK) < HALF:
        ack = end_seq  # the FIN takes a sequence number of its own
    ahead = (ack - <uint32_t>other_next) & MASK
    if 1 < ahead < HALF:
        return None

    events = None
    if n:
        if stream.pending or stream.next_seq != seq:
            return None
        framer = conn.up_frames if from_client else conn.down_frames
        if not framer.synced or framer.damaged:
            return None  # lost its footing, or cut by a hole
        if framer.offset == 0:  # the stream's first bytes: they may be TLS, or not Kafka at all
            why = foreign(data[at + payload_at:at + ip_end], from_client, reader.max_frame, True)
            if why:
                return None
        buf = framer.buf
        f.need = framer.need
        f.size = framer.size
        f.offset = framer.offset
        f.frame_offset = framer.frame_offset
        f.held = len(buf)
        if f.need < 0 and f.held >= 4:
            return None  # not a state the framer leaves
        trial = f
        held = bytes(buf) if f.need < 0 else b""
        if not _cut(&trial, held, p + payload_at, n, reader.max_frame, None, 0, None, None):
            return None
        # From here on the packet is ours.
        if framer.offset == 0:
            conn.foreign = why
        events = []
        _cut(&f, held, p + payload_at, n, reader.max_frame, data, at + payload_at, framer, events)
        framer.need = f.need
        framer.size = f.size
        framer.offset = f.offset
        framer.frame_offset = f.frame_offset
        stream.next_seq = (seq + <uint32_t>n) & MASK
        stream.delivered += n

    if syn and stream.next_seq is None:  # the packet is ours: the sender's stream starts after its SYN
        stream.next_seq = (seq + 1) & MASK
        _start(conn.up_frames if from_client else conn.down_frames)
    reader.move_to_end(key)
    conn.last_ns = time_ns
    if not events and not flags & FIN:
        return _NOTHING  # most packets: an ACK, or part of a frame
    out = []
    if events:
        handle = reader.request if from_client else reader.response
        for event in events:
            handle(conn, event, time_ns, number, out)
    if flags & FIN:
        conn.fin |= 1 if from_client else 2
        if stream.next_seq is not None and stream.end_seq is None:
            stream.end_seq = (seq + <uint32_t>n) & MASK
        if conn.fin == 3:
            reader.close(key, out)
    return out
