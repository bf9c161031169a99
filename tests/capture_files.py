"""Capture files for tests: pcap and pcapng writers, and the link, IP and TCP headers of their packets.

Headers nest outward, and a file is a list of (timestamp, frame) pairs::

    frame = ethernet(ipv4("10.0.0.1", "10.0.0.2", tcp(50000, 9092, 1, b"hello")))
    pcap([(1_700_000_000_000_000_000, frame)])

The files are laid out as tcpdump and Wireshark write them, IPv4 header and TCP checksums included,
so tshark reads them without complaint.
"""

import ipaddress
import struct

from kafkaproto.capture.link import ACK, LINKTYPE_ETHERNET, PSH

NS_PER_SECOND = 1_000_000_000
SOURCE_MAC = bytes.fromhex("020000000001")
DESTINATION_MAC = bytes.fromhex("020000000002")

# pcapng block types and option codes
SECTION_HEADER = 0x0A0D0D0A
INTERFACE_DESCRIPTION = 1
OBSOLETE_PACKET = 2
SIMPLE_PACKET = 3
NAME_RESOLUTION = 4
INTERFACE_STATISTICS = 5
ENHANCED_PACKET = 6
DECRYPTION_SECRETS = 10
CUSTOM = 0xBAD
OPT_COMMENT = 1
SHB_USERAPPL = 4
IF_NAME = 2
IF_TSRESOL = 9
IF_TSOFFSET = 14

# IPv6 extension headers
HOP_BY_HOP = 0
ROUTING = 43
FRAGMENT = 44
AUTHENTICATION = 51
DESTINATION_OPTIONS = 60


# -- TCP and IP --------------------------------------------------------------------------------------


def tcp(sport, dport, seq, payload=b"", *, ack=0, flags=ACK | PSH, options=b"", window=65535):
    """A TCP header (20 bytes, more with ``options``, padded with NOPs to 4 bytes) and its payload."""
    options = bytes(options) + b"\x01" * (-len(options) % 4)
    data_offset = (20 + len(options)) // 4
    header = struct.pack(">HHIIHHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                         (data_offset << 12) | flags, window, 0, 0)
    return header + options + bytes(payload)


def ipv4(src, dst, proto_payload, *, proto=6, total_length=None, more_fragments=False, fragment_offset=0,
         options=b"", identification=1):
    """An IPv4 header (with options if given, and its checksum) and its payload.

    ``total_length`` overrides the length field (the payload is written whole regardless);
    ``fragment_offset`` is in bytes and must be a multiple of 8.
    """
    options = bytes(options) + b"\x00" * (-len(options) % 4)
    header_length = 20 + len(options)
    if total_length is None:
        total_length = header_length + len(proto_payload)
    if more_fragments or fragment_offset:
        fragment = (0x2000 if more_fragments else 0) | (fragment_offset // 8)
    else:
        fragment = 0x4000  # don't fragment, as Linux sets it on TCP
    header = struct.pack(">BBHHHBBH4s4s", 0x40 | header_length // 4, 0, total_length, identification, fragment, 64,
                         proto, 0, ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed) + options
    checksum = internet_checksum(header)
    payload = bytes(proto_payload)
    if proto == 6 and not (more_fragments or fragment_offset):
        payload = _with_tcp_checksum(header[12:16], header[16:20], payload)
    return header[:10] + struct.pack(">H", checksum) + header[12:] + payload


def _with_tcp_checksum(src, dst, segment):
    """``segment`` with its TCP checksum filled in, if it has a TCP header whose checksum is 0."""
    if len(segment) < 20 or segment[16:18] != b"\x00\x00":
        return segment
    pseudo_header = src + dst + struct.pack(">HH", 6, len(segment)) if len(src) == 4 else \
        src + dst + struct.pack(">IxxxB", len(segment), 6)
    checksum = internet_checksum(pseudo_header + segment)
    return segment[:16] + struct.pack(">H", checksum) + segment[18:]


def internet_checksum(data):
    """The ones' complement sum of 16-bit words that IPv4 headers carry."""
    if len(data) % 2:
        data += b"\x00"
    total = sum(struct.unpack(f">{len(data) // 2}H", data))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ipv6(src, dst, proto_payload, *, proto=6, extension_headers=(), payload_length=None):
    """An IPv6 header, its extension headers and its payload.

    Each extension header is its type (hop-by-hop 0, routing 43, fragment 44, destination options 60,
    authentication 51), written with a body of zero bytes (padding options; routing type 0 with no
    segments left; a first fragment; an authentication header with a 12-byte ICV), or a (type, body)
    pair whose body is what follows the next-header and length bytes: 6 bytes plus a multiple of 8
    (an authentication header counts in 4-byte units instead). ``payload_length`` overrides the length field.
    """
    chain = b""
    kinds = [h if isinstance(h, int) else h[0] for h in extension_headers]
    bodies = [(b"\x00" * (22 if h == AUTHENTICATION else 6)) if isinstance(h, int) else bytes(h[1])
              for h in extension_headers]
    for i, body in enumerate(bodies):
        following = kinds[i + 1] if i + 1 < len(kinds) else proto
        unit, less = (4, 2) if kinds[i] == AUTHENTICATION else (8, 1)
        if (2 + len(body)) % unit or 2 + len(body) < 8:
            raise ValueError(f"extension header {kinds[i]}: a body of {len(body)} bytes does not fill its units")
        chain += bytes((following, (2 + len(body)) // unit - less)) + body
    first = kinds[0] if kinds else proto
    src, dst = ipaddress.IPv6Address(src).packed, ipaddress.IPv6Address(dst).packed
    proto_payload = bytes(proto_payload)
    if proto == 6 and FRAGMENT not in kinds:
        proto_payload = _with_tcp_checksum(src, dst, proto_payload)
    payload = chain + proto_payload
    if payload_length is None:
        payload_length = len(payload)
    return struct.pack(">IHBB16s16s", 6 << 28, payload_length, first, 64, src, dst) + payload


# -- link layers -------------------------------------------------------------------------------------


def _ethertype_of(ip_packet):
    return 0x86DD if ip_packet[:1] and ip_packet[0] >> 4 == 6 else 0x0800


def ethernet(ip_packet, *, vlans=(), ethertype=None):
    """An Ethernet II frame; ``vlans`` are (tpid, vid) tags, outermost first; the ethertype follows the IP version."""
    tags = b"".join(struct.pack(">HH", tpid, vid) for tpid, vid in vlans)
    if ethertype is None:
        ethertype = _ethertype_of(ip_packet)
    return DESTINATION_MAC + SOURCE_MAC + tags + struct.pack(">H", ethertype) + bytes(ip_packet)


def sll(ip_packet, *, protocol=None):
    """A Linux cooked capture (v1) frame: packet type, ARPHRD type, address length, address, protocol."""
    if protocol is None:
        protocol = _ethertype_of(ip_packet)
    return struct.pack(">HHH8sH", 0, 1, 6, SOURCE_MAC, protocol) + bytes(ip_packet)


def sll2(ip_packet, *, protocol=None):
    """A Linux cooked capture v2 frame: protocol, reserved, interface index, ARPHRD type, packet type, address."""
    if protocol is None:
        protocol = _ethertype_of(ip_packet)
    return struct.pack(">HHIHBB8s", protocol, 0, 1, 1, 0, 6, SOURCE_MAC) + bytes(ip_packet)


def _family_of(ip_packet):
    return 30 if _ethertype_of(ip_packet) == 0x86DD else 2  # AF_INET6 as Darwin numbers it


def null_loopback(ip_packet, *, byteorder="little", family=None):
    """A BSD loopback (LINKTYPE_NULL) frame: the address family as a 4-byte integer in the host's byte order."""
    if family is None:
        family = _family_of(ip_packet)
    return family.to_bytes(4, byteorder) + bytes(ip_packet)


def loop(ip_packet, *, family=None):
    """An OpenBSD loopback (LINKTYPE_LOOP) frame: the address family in network byte order."""
    if family is None:
        family = _family_of(ip_packet)
    return family.to_bytes(4, "big") + bytes(ip_packet)


def raw(ip_packet):
    """A raw IP frame: the packet itself."""
    return bytes(ip_packet)


# -- classic pcap ------------------------------------------------------------------------------------


def pcap(packets, *, link_type=LINKTYPE_ETHERNET, nanos=False, big_endian=False, snaplen=262144):
    """A classic pcap file of ``packets``: (timestamp_ns, frame) or (timestamp_ns, frame, original_length).

    Each record holds ``frame[:snaplen]``; the original length defaults to the frame's.
    """
    order = ">" if big_endian else "<"
    magic = 0xA1B23C4D if nanos else 0xA1B2C3D4
    out = [struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, snaplen, link_type)]
    for timestamp_ns, frame, *original in packets:
        captured = bytes(frame[:snaplen])
        seconds, nanoseconds = divmod(timestamp_ns, NS_PER_SECOND)
        fraction = nanoseconds if nanos else nanoseconds // 1000
        length = original[0] if original else len(frame)
        out.append(struct.pack(order + "IIII", seconds, fraction, len(captured), length) + captured)
    return b"".join(out)


# -- pcapng ------------------------------------------------------------------------------------------


def block(block_type, body, *, big_endian=False):
    """A pcapng block: type, total length, ``body`` padded to 4 bytes, total length again."""
    order = ">" if big_endian else "<"
    body = bytes(body) + b"\x00" * (-len(body) % 4)
    length = 12 + len(body)
    return struct.pack(order + "II", block_type, length) + body + struct.pack(order + "I", length)


def options(items, *, big_endian=False):
    """pcapng options from (code, value bytes) pairs, each padded to 4 bytes, then opt_endofopt; b"" for none."""
    if not items:
        return b""
    order = ">" if big_endian else "<"
    out = b""
    for code, value in items:
        out += struct.pack(order + "HH", code, len(value)) + value + b"\x00" * (-len(value) % 4)
    return out + struct.pack(order + "HH", 0, 0)


def section_header(*, big_endian=False):
    """A Section Header Block of version 1.0, section length unknown, naming the writer in shb_userappl."""
    order = ">" if big_endian else "<"
    body = struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1)
    body += options([(SHB_USERAPPL, b"kafkaproto tests")], big_endian=big_endian)
    return block(SECTION_HEADER, body, big_endian=big_endian)


def interface_description(link_type, tsresol=6, *, tsoffset=0, snaplen=0, name=b"cap0", big_endian=False):
    """An Interface Description Block; if_tsresol is written when not the default 6, if_tsoffset when not 0."""
    order = ">" if big_endian else "<"
    items = [(IF_NAME, name)] if name else []
    if tsresol != 6:
        items.append((IF_TSRESOL, bytes((tsresol,))))
    if tsoffset:
        items.append((IF_TSOFFSET, struct.pack(order + "q", tsoffset)))
    body = struct.pack(order + "HHI", link_type, 0, snaplen) + options(items, big_endian=big_endian)
    return block(INTERFACE_DESCRIPTION, body, big_endian=big_endian)


def ticks(timestamp_ns, tsresol=6, tsoffset=0):
    """A timestamp in an interface's units (``tsresol`` as if_tsresol stores it), less its offset in seconds."""
    since_offset = timestamp_ns - tsoffset * NS_PER_SECOND
    exponent = tsresol & 0x7F
    if tsresol & 0x80:
        return (since_offset << exponent) // NS_PER_SECOND
    return since_offset * 10 ** exponent // NS_PER_SECOND


def timestamp_ns(units, tsresol=6, tsoffset=0):
    """The inverse of ``ticks``, rounding down to a nanosecond: what a reader should make of ``units``."""
    exponent = tsresol & 0x7F
    if tsresol & 0x80:
        return (units * NS_PER_SECOND >> exponent) + tsoffset * NS_PER_SECOND
    return units * NS_PER_SECOND // 10 ** exponent + tsoffset * NS_PER_SECOND


def enhanced_packet(interface, units, frame, original_length=None, *, comment=None, big_endian=False):
    """An Enhanced Packet Block with timestamp ``units`` (see ``ticks``), optionally an opt_comment."""
    order = ">" if big_endian else "<"
    frame = bytes(frame)
    original = len(frame) if original_length is None else original_length
    body = struct.pack(order + "IIIII", interface, units >> 32, units & 0xFFFFFFFF, len(frame), original)
    body += frame + b"\x00" * (-len(frame) % 4)
    if comment is not None:
        body += options([(OPT_COMMENT, comment)], big_endian=big_endian)
    return block(ENHANCED_PACKET, body, big_endian=big_endian)


def simple_packet(frame, original_length=None, *, big_endian=False):
    """A Simple Packet Block: original length, then the frame as captured."""
    order = ">" if big_endian else "<"
    frame = bytes(frame)
    original = len(frame) if original_length is None else original_length
    return block(SIMPLE_PACKET, struct.pack(order + "I", original) + frame, big_endian=big_endian)


def obsolete_packet(interface, units, frame, original_length=None, *, big_endian=False):
    """The obsolete Packet Block (type 2): 16-bit interface id and drops count, then as an enhanced packet."""
    order = ">" if big_endian else "<"
    frame = bytes(frame)
    original = len(frame) if original_length is None else original_length
    body = struct.pack(order + "HHIIII", interface, 0, units >> 32, units & 0xFFFFFFFF, len(frame), original)
    return block(OBSOLETE_PACKET, body + frame, big_endian=big_endian)


def pcapng(packets, *, interfaces=((LINKTYPE_ETHERNET, 6),), big_endian=False, simple=False):
    """One pcapng section: its header, its interfaces, then ``packets``. Concatenate sections for more.

    ``interfaces``: (link_type, tsresol[, tsoffset[, snaplen]]) each, tsresol as if_tsresol stores it
    (6 = microseconds, 9 = nanoseconds, 0x80 | 20 = 2^-20 s), tsoffset in seconds, snaplen 0 = none.
    ``packets``: (interface, timestamp_ns, frame[, original_length]); a frame longer than its interface's
    snap length is cut to it. With ``simple``, Simple Packet Blocks (interface 0, no timestamps).
    """
    described = [tuple(i) + (0, 0)[len(i) - 2:] for i in interfaces]
    out = [section_header(big_endian=big_endian)]
    out += [interface_description(link, tsresol, tsoffset=tsoffset, snaplen=snaplen, name=b"cap%d" % i,
                                  big_endian=big_endian)
            for i, (link, tsresol, tsoffset, snaplen) in enumerate(described)]
    for interface, when, frame, *original in packets:
        _, tsresol, tsoffset, snaplen = described[interface]
        original = original[0] if original else len(frame)
        captured = frame[:snaplen] if snaplen else frame
        if simple:
            if interface != 0:
                raise ValueError("simple packet blocks are all of interface 0")
            out.append(simple_packet(captured, original, big_endian=big_endian))
        else:
            out.append(enhanced_packet(interface, ticks(when, tsresol, tsoffset), captured, original,
                                       big_endian=big_endian))
    return b"".join(out)
