"""TCP segments out of captured frames: link layer, IPv4 or IPv6, then TCP.

``tcp_segment(link_type, frame)`` reads one captured frame and returns a ``Segment`` (addresses, ports,
sequence and acknowledgement numbers, flags, payload) when it carries TCP, or else a short reason
string, meant as a counter key ("not TCP (protocol 17)", "IPv4 fragment", "truncated header", ...).
It never raises on what a capture holds.

Link layers read: Ethernet (with any number of 802.1Q / 802.1ad VLAN tags), Linux cooked capture v1
(SLL) and v2 (SLL2), BSD loopback (NULL, address family in the capturing host's byte order; LOOP, in
network byte order) and raw IP (LINKTYPE_RAW, the old DLT_RAW values 12 and 14, LINKTYPE_IPV4/IPV6).

IP lengths are believed over the frame's: bytes past an IPv4 total length (Ethernet padding, a
frame check sequence) are not payload, and a segment the capture cut short (snap length) has its
captured part as payload and the number of bytes cut off in ``missing``. Fragments are reported, not
reassembled. IPv6 hop-by-hop, routing, destination options and authentication headers are followed.
"""

import socket
import struct
from typing import NamedTuple

__all__ = ["Segment", "tcp_segment", "address_text", "FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR",
           "LINKTYPE_NULL", "LINKTYPE_ETHERNET", "LINKTYPE_RAW", "LINKTYPE_LOOP", "LINKTYPE_LINUX_SLL",
           "LINKTYPE_IPV4", "LINKTYPE_IPV6", "LINKTYPE_LINUX_SLL2"]

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
# DLT_RAW's value differs between BSDs (12 on most, 14 on OpenBSD); captures written there may carry it.
_DLT_RAW_VALUES = (12, 14)

FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 1, 2, 4, 8, 16, 32, 64, 128

TRUNCATED = "truncated header"

_IPV4 = 0x0800
_IPV6 = 0x86DD
_VLAN_TPIDS = frozenset((0x8100, 0x88A8, 0x9100))
_AF_INET = 2
_AF_INET6 = frozenset((24, 28, 30))  # NetBSD/OpenBSD, FreeBSD, Darwin
_IPV6_SKIPPED_HEADERS = frozenset((0, 43, 60))  # hop-by-hop, routing, destination options: 8-byte units
_IPV6_AUTHENTICATION = 51  # length in 4-byte units
_IPV6_FRAGMENT = 44
_TCP = 6

# IPv4 header from its total length: total length, flags/fragment offset, protocol, addresses
_IPV4_HEADER = struct.Struct(">2xHxxHxB2x4s4s")
_TCP_HEADER = struct.Struct(">HHIIH")            # ports, seq, ack, data offset/flags
_IPV4_TCP_HEADERS = struct.Struct(">2xHxxHxB2x4s4sHHIIH")
_IPV6_HEADER = struct.Struct(">B3xHB1x16s16s")   # version, payload length, next header, addresses
_ETHERNET_IPV4_TCP_HEADERS = struct.Struct(">16xHxxHxB2x4s4sHHIIH")
_U32_LITTLE = struct.Struct("<I")
_U32_BIG = struct.Struct(">I")


class Segment(NamedTuple):
    """One TCP segment as captured."""

    src: bytes      # 4 or 16 address bytes
    sport: int
    dst: bytes
    dport: int
    seq: int        # raw 32-bit sequence number
    ack: int
    flags: int      # FIN, SYN, RST, PSH, ACK, ... (the 9 low bits of the flags field)
    payload: bytes  # the captured payload
    missing: int    # payload bytes the segment carried that the capture cut off (snap length); usually 0


def tcp_segment(link_type, data):
    """The TCP segment in a captured frame of ``link_type``, or a short reason why there is none."""
    size = len(data)
    if link_type == LINKTYPE_ETHERNET and size >= 54 and data[12:15] == b"\x08\x00\x45":
        # Most frames are untagged IPv4 without options: all three headers in one unpack. Whatever this
        # path does not accept outright goes the general way below, which gives the same answers.
        (total_length, fragment, protocol, src, dst,
         sport, dport, seq, ack, offset_flags) = _ETHERNET_IPV4_TCP_HEADERS.unpack_from(data)
        if protocol == _TCP and not fragment & 0x3FFF and total_length >= 40:
            ip_end = 14 + total_length
            payload_at = 34 + ((offset_flags >> 12) << 2)
            captured_end = ip_end if ip_end < size else size
            if 54 <= payload_at <= captured_end:
                return tuple.__new__(Segment, (src, sport, dst, dport, seq, ack, offset_flags & 0x1FF,
                                               data[payload_at:captured_end], ip_end - captured_end))
    if link_type == LINKTYPE_ETHERNET:
        if size < 14:
            return TRUNCATED
        ethertype = (data[12] << 8) | data[13]
        at = 14
        while ethertype in _VLAN_TPIDS:
            if size < at + 4:
                return TRUNCATED
            ethertype = (data[at + 2] << 8) | data[at + 3]
            at += 4
    elif link_type == LINKTYPE_LINUX_SLL:
        if size < 16:
            return TRUNCATED
        ethertype = (data[14] << 8) | data[15]
        at = 16
    elif link_type == LINKTYPE_LINUX_SLL2:
        if size < 20:
            return TRUNCATED
        ethertype = (data[0] << 8) | data[1]
        at = 20
    elif link_type == LINKTYPE_NULL or link_type == LINKTYPE_LOOP:
        if size < 4:
            return TRUNCATED
        if link_type == LINKTYPE_LOOP:
            family = _U32_BIG.unpack_from(data)[0]
        else:  # the capturing host's byte order, which the file does not record: the family is small
            family = _U32_LITTLE.unpack_from(data)[0]
            if family > 0xFFFF:
                family = _U32_BIG.unpack_from(data)[0]
        if family == _AF_INET:
            ethertype = _IPV4
        elif family in _AF_INET6:
            ethertype = _IPV6
        else:
            return f"not IP (address family {family})"
        at = 4
    elif link_type == LINKTYPE_RAW or link_type == LINKTYPE_IPV4 or link_type == LINKTYPE_IPV6 \
            or link_type in _DLT_RAW_VALUES:
        if size < 1:
            return TRUNCATED
        version = data[0] >> 4
        if version == 4:
            ethertype = _IPV4
        elif version == 6:
            ethertype = _IPV6
        else:
            return f"not IP (version {version})"
        at = 0
    else:
        return f"link type {link_type}"

    tcp_read = False
    if ethertype == _IPV4:
        if size < at + 20:
            return TRUNCATED
        version_ihl = data[at]
        if version_ihl == 0x45 and size >= at + 34:
            # The usual case, no IP options: the IPv4 header and the start of TCP's in one unpack.
            (total_length, fragment, protocol, src, dst,
             sport, dport, seq, ack, offset_flags) = _IPV4_TCP_HEADERS.unpack_from(data, at)
            header_length = 20
            tcp_read = True
        else:
            total_length, fragment, protocol, src, dst = _IPV4_HEADER.unpack_from(data, at)
            header_length = (version_ihl & 0x0F) << 2
            if version_ihl >> 4 != 4 or header_length < 20:
                return "bad IPv4 header"
        if fragment & 0x3FFF:  # more fragments, or an offset
            return "IPv4 fragment"
        if protocol != _TCP:
            return f"not TCP (protocol {protocol})"
        if total_length == 0:  # segmentation offload: the sending host captured before the NIC set it
            total_length = size - at
        elif total_length < header_length:
            return "bad IPv4 header"
        tcp_at = at + header_length
        ip_end = at + total_length
    elif ethertype == _IPV6:
        if size < at + 40:
            return TRUNCATED
        version, payload_length, next_header, src, dst = _IPV6_HEADER.unpack_from(data, at)
        if version >> 4 != 6:
            return "bad IPv6 header"
        tcp_at = at + 40
        # A payload length of 0 is a jumbogram or segmentation offload: the frame says how long it is.
        ip_end = tcp_at + payload_length if payload_length else size
        while next_header in _IPV6_SKIPPED_HEADERS or next_header == _IPV6_AUTHENTICATION:
            if tcp_at + 2 > size or tcp_at + 2 > ip_end:
                return TRUNCATED if tcp_at + 2 <= ip_end else "bad IPv6 header"
            if next_header == _IPV6_AUTHENTICATION:
                extension_length = (data[tcp_at + 1] + 2) << 2
            else:
                extension_length = (data[tcp_at + 1] + 1) << 3
            next_header = data[tcp_at]
            tcp_at += extension_length
            if tcp_at > ip_end:
                return "bad IPv6 header"
        if next_header == _IPV6_FRAGMENT:
            return "IPv6 fragment"
        if next_header != _TCP:
            return f"not TCP (protocol {next_header})"
    else:
        return f"not IP (ethertype 0x{ethertype:04x})"

    captured_end = ip_end if ip_end < size else size
    if tcp_at + 20 > captured_end:
        return TRUNCATED if tcp_at + 20 <= ip_end else "bad TCP header"
    if not tcp_read:
        sport, dport, seq, ack, offset_flags = _TCP_HEADER.unpack_from(data, tcp_at)
    payload_at = tcp_at + ((offset_flags >> 12) << 2)
    if payload_at < tcp_at + 20 or payload_at > ip_end:
        return "bad TCP header"
    if payload_at > captured_end:
        return TRUNCATED
    return tuple.__new__(Segment, (src, sport, dst, dport, seq, ack, offset_flags & 0x1FF,
                                   data[payload_at:captured_end], ip_end - captured_end))


def address_text(addr):
    """An address as text: "10.0.0.1", or IPv6 in its compressed form ("::1")."""
    if len(addr) == 4:
        return socket.inet_ntop(socket.AF_INET, addr)
    if len(addr) == 16:
        return socket.inet_ntop(socket.AF_INET6, addr)
    raise ValueError(f"an address is 4 or 16 bytes, not {len(addr)}")
