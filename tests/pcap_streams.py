"""Just enough pcap reading for the capture tests: TCP payload per connection and direction.

Reads classic pcap files (either byte order, micro- or nanosecond timestamps) with Ethernet,
Linux cooked (SLL), BSD loopback or raw IP link layers, IPv4 or IPv6, and TCP. Connections
must be captured from their SYN. Segments are placed by sequence number, so retransmissions
and reordering do not duplicate or scramble bytes; a gap (a segment the capture missed) or a
packet cut short by the snap length raises. Full stream reassembly for captures at
scale belongs to the pcap package, not here.
"""

import struct
from collections import defaultdict

LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_LINUX_SLL = 0, 1, 101, 113


class PcapError(Exception):
    pass


def packets(data):
    """(link type, frame bytes) for each captured packet."""
    if len(data) < 24:
        raise PcapError("not a pcap file: shorter than its 24-byte header")
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        raise PcapError(f"not a classic pcap file (magic {magic.hex()}); pcapng is not read here")
    (link,) = struct.unpack_from(endian + "I", data, 20)
    pos = 24
    while pos < len(data):
        if len(data) - pos < 16:
            raise PcapError(f"truncated packet header at byte {pos}")
        _, _, caplen, wirelen = struct.unpack_from(endian + "IIII", data, pos)
        pos += 16
        if caplen > len(data) - pos:
            raise PcapError(f"packet at byte {pos - 16} claims {caplen} bytes; {len(data) - pos} are left")
        if caplen < wirelen:
            raise PcapError(f"packet at byte {pos - 16} was cut to {caplen} of {wirelen} bytes (snap length)")
        yield link, data[pos:pos + caplen]
        pos += caplen


def _ip_payload(link, frame):
    if link == LINKTYPE_ETHERNET:
        ethertype, at = struct.unpack_from(">H", frame, 12)[0], 14
        while ethertype == 0x8100:  # VLAN tags
            ethertype, at = struct.unpack_from(">H", frame, at + 2)[0], at + 4
    elif link == LINKTYPE_LINUX_SLL:
        ethertype, at = struct.unpack_from(">H", frame, 14)[0], 16
    elif link == LINKTYPE_NULL:  # the address family, in the capturing host's byte order
        family = frame[0] or frame[3]
        ethertype, at = (0x0800 if family == 2 else 0x86DD), 4
    elif link == LINKTYPE_RAW:
        ethertype, at = (0x0800 if frame[0] >> 4 == 4 else 0x86DD), 0
    else:
        raise PcapError(f"link type {link} is not read here")
    if ethertype == 0x0800:
        ihl = (frame[at] & 0x0F) * 4
        total = struct.unpack_from(">H", frame, at + 2)[0]
        proto, src, dst = frame[at + 9], frame[at + 12:at + 16], frame[at + 16:at + 20]
        return proto, src, dst, frame[at + ihl:at + total]
    if ethertype == 0x86DD:
        length = struct.unpack_from(">H", frame, at + 4)[0]
        proto, src, dst = frame[at + 6], frame[at + 8:at + 24], frame[at + 24:at + 40]
        return proto, src, dst, frame[at + 40:at + 40 + length]  # extension headers are not followed
    return None


def tcp_streams(data):
    """{((src, sport), (dst, dport)): payload bytes} for each TCP direction, in order of first packet."""
    segments = defaultdict(dict)  # direction -> {relative seq: payload}
    first_seq = {}
    for link, frame in packets(data):
        ip = _ip_payload(link, frame)
        if ip is None or ip[0] != 6:
            continue
        _, src, dst, tcp = ip
        sport, dport, seq = struct.unpack_from(">HHI", tcp, 0)
        offset = (tcp[12] >> 4) * 4
        flags = tcp[13]
        key = ((bytes(src), sport), (bytes(dst), dport))
        payload = bytes(tcp[offset:])
        if flags & 0x02:  # SYN: the stream starts at seq + 1
            first_seq[key] = (seq + 1) & 0xFFFFFFFF
            segments[key]
            seq += 1
        if not payload:
            continue
        if key not in first_seq:
            raise PcapError(f"{key}: data before the connection's SYN; the capture started mid-connection")
        rel = (seq - first_seq[key]) & 0xFFFFFFFF
        if len(payload) > len(segments[key].get(rel, b"")):  # a longer retransmission carries more
            segments[key][rel] = payload
    streams = {}
    for key, parts in segments.items():
        out = bytearray()
        for rel in sorted(parts):
            chunk = parts[rel]
            if rel > len(out):
                raise PcapError(f"{key}: {rel - len(out)} bytes missing from the capture at stream byte {len(out)}")
            out += chunk[len(out) - rel:]
        streams[key] = bytes(out)
    return streams
