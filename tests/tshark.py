"""Kafka PDUs as Wireshark's tshark dissects them: a test oracle that shares no code with kafkaproto.

    pdus = kafka_pdus("capture.pcap", ports=[9092])     # one dict per Kafka PDU, in capture order
    supported = dissector_versions()                    # {api key: range of versions the dissector decodes}

tshark reassembles TCP itself and reports each Kafka PDU in the packet that completes it, so one
packet can carry several PDUs and a PDU spread over several packets appears once, in its last
packet. The output is read as PDML, tshark's XML tree: ``-T fields`` (even with ``-E occurrence=a``)
prints one flat list per field and packet, which cannot tell which of a packet's PDUs a repeated
field (a topic name, a partition, an error code) belongs to, and a field that only some PDUs carry
(the API key of a response whose request tshark did not parse) shifts every later value. In the
tree each PDU is its own ``<proto name="kafka">`` element.

Debian 12's tshark (Wireshark 4.0.x) has a dissector that predates flexible versions for most
APIs and knows no API key above 47 (``dissector_versions()`` asks it rather than trusting a table;
with 4.0.17 it gives, among others, Produce 0-8, Fetch 0-11, ListOffsets 0-5, Metadata 0-9,
OffsetCommit 0-8, OffsetFetch 0-7, FindCoordinator 0-3, JoinGroup 0-7, ApiVersions 0-3,
CreateTopics 0-5, DeleteTopics 0-4). For a version outside its range it still dissects the
header, notes "Unsupported ... version" and then guesses at the body; ``dissected`` is False for
such PDUs and their body fields are guesses, not facts.
"""

import os
import re
import shutil
import struct
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from functools import lru_cache
from pathlib import Path

TIMEOUT = 300  # seconds for one tshark run; the captures here take well under one

# Tallied by the tests that compare with tshark, for the summary at the end of the run (conftest.py).
COMPARED = Counter()  # what was compared: "PDUs", "bodies", "records", ...
DISAGREEMENTS = defaultdict(Counter)  # rule -> Counter of capture names: the disagreements met


def tallies():
    """This process's tallies, as plain values (parallel workers send them to the process that reports)."""
    return {"compared": dict(COMPARED), "disagreements": {rule: dict(c) for rule, c in DISAGREEMENTS.items()}}


def summary_lines(all_tallies):
    """The summary of several processes' tallies, or [] when nothing was compared."""
    compared, disagreements = Counter(), defaultdict(Counter)
    for t in all_tallies:
        compared.update(t["compared"])
        for rule, per_capture in t["disagreements"].items():
            disagreements[rule].update(per_capture)
    if not compared:
        return []
    lines = ["compared: " + ", ".join(f"{count} {what}" for what, count in sorted(compared.items()))]
    if not disagreements:
        lines.append("no disagreements")
    for rule, per_capture in sorted(disagreements.items()):
        where = ", ".join(f"{name} {count}" for name, count in sorted(per_capture.items()))
        lines.append(f"- {rule}: {sum(per_capture.values())} ({where})")
    return lines


class TsharkError(Exception):
    """tshark failed, or printed something this module does not understand."""


def tshark_path():
    """The tshark executable, or None when it is not installed."""
    return shutil.which("tshark")


@lru_cache(maxsize=None)
def tshark_version():
    """tshark's version string, e.g. ``"4.0.17"``."""
    out = subprocess.run([_require(), "--version"], capture_output=True, text=True, timeout=60).stdout
    match = re.search(r"TShark \(Wireshark\) (\S+)", out)
    if match is None:
        raise TsharkError(f"cannot read tshark's version from: {out[:200]!r}")
    return match.group(1).rstrip(".")


def _require():
    path = tshark_path()
    if path is None:
        raise TsharkError("tshark is not installed (apt-get install tshark)")
    return path


def _pdml_packets(path, ports):
    """Each packet (as an Element) of tshark's PDML for ``path`` that holds at least one Kafka PDU."""
    ports = sorted({int(p) for p in ports})
    if not ports:
        raise ValueError("at least one broker port is needed")
    cmd = [_require(), "-r", str(path), "-n",
           # Reassemble as the broker would read the stream, whatever order the segments were captured in.
           "-o", "tcp.desegment_tcp_streams:TRUE", "-o", "tcp.reassemble_out_of_order:TRUE",
           "-o", "tcp.analyze_sequence_numbers:TRUE"]
    for port in ports:
        cmd += ["-d", f"tcp.port=={port},kafka"]
    cmd += ["-Y", "kafka", "-T", "pdml"]
    # An empty personal configuration folder, so that no one's saved preferences or "Decode As" rules
    # change what is dissected.
    with tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as config:
        env = dict(os.environ, WIRESHARK_CONFIG_DIR=config)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env)
        try:
            for _, elem in ET.iterparse(proc.stdout, events=("end",)):
                if elem.tag == "packet":
                    yield elem
                    elem.clear()
        except ET.ParseError as exc:
            proc.kill()
            raise TsharkError(f"tshark's PDML for {path} does not parse: {exc}") from None
        finally:
            proc.stdout.close()
            try:
                code = proc.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise TsharkError(f"tshark took more than {TIMEOUT} s on {path}") from None
        if code != 0:
            err.seek(0)
            messages = [line for line in err.read().decode(errors="replace").splitlines()
                        if "Running as user" not in line]  # root's warning, harmless
            raise TsharkError(f"tshark exited with {code} on {path}: {' '.join(messages)[:500]}")


def _fields(elem):
    """Every named ``<field>`` below ``elem``, depth first, in document (wire) order."""
    for child in elem:
        if child.tag == "field":
            if child.get("name"):
                yield child
            yield from _fields(child)


def _first(elem, name):
    for field in _fields(elem):
        if field.get("name") == name:
            return field
    return None


def _int(field):
    if field is None:
        return None
    show = field.get("show")
    return int(show, 16) if show.startswith("0x") else int(show)


def _string(field):
    """A string field's value; None for a null string (tshark shows "[ Null ]" for those)."""
    if field.get("show") == "[ Null ]" and field.get("value") in ("ffff", "00"):  # int16 -1, or compact 0
        return None
    return field.get("show")


# The header fields whose expert notes speak of the whole PDU, not of one item in its body.
_HEADER_FIELDS = {"kafka.api_key", "kafka.request_key", "kafka.response_key", "kafka.api_version",
                  "kafka.request.version", "kafka.response.version"}


def _header_notes(proto):
    """Expert messages tshark attached to the PDU itself or to its header fields."""
    notes = []
    for child in proto:
        if child.tag != "field":
            continue
        name = child.get("name")
        if name == "_ws.expert":
            holders = [child]
        elif name in _HEADER_FIELDS:
            holders = [c for c in child if c.get("name") == "_ws.expert"]
        else:
            continue
        for expert in holders:
            message = _first(expert, "_ws.expert.message")
            kinds = [f.get("name") for f in expert if f.get("name", "").startswith("kafka.")]
            notes.append((kinds[0] if kinds else None, message.get("show") if message is not None else ""))
    return notes


def _packet_info(packet):
    protos = {p.get("name"): p for p in packet if p.tag == "proto"}
    frame, tcp = protos.get("frame"), protos.get("tcp")
    ip = protos.get("ip") or protos.get("ipv6")
    if frame is None or tcp is None or ip is None:
        raise TsharkError("a Kafka packet without frame, IP or TCP layer in tshark's PDML")
    family = "ip" if ip.get("name") == "ip" else "ipv6"
    seconds, _, fraction = _first(frame, "frame.time_epoch").get("show").partition(".")
    return {
        "frame_number": _int(_first(frame, "frame.number")),
        "time_ns": int(seconds) * 1_000_000_000 + int((fraction + "000000000")[:9]),
        "tcp_stream": _int(_first(tcp, "tcp.stream")),
        "src_address": _first(ip, f"{family}.src").get("show"),
        "src_port": _int(_first(tcp, "tcp.srcport")),
        "dst_address": _first(ip, f"{family}.dst").get("show"),
        "dst_port": _int(_first(tcp, "tcp.dstport")),
    }


def _pdu(packet_info, proto, malformed):
    fields = {}
    for field in _fields(proto):
        fields.setdefault(field.get("name"), []).append(field)
    is_request = "kafka.request_key" in fields
    key_field = "kafka.request_key" if is_request else "kafka.response_key"
    version_field = "kafka.request.version" if is_request else "kafka.response.version"
    notes = _header_notes(proto)
    refused = {"kafka.unsupported_api_version", "kafka.unknown_api_key", "kafka.request_missing"}
    api_key = _int(fields[key_field][0]) if key_field in fields else None
    pdu = dict(packet_info)
    pdu.update({
        "is_request": is_request,
        "api_key": api_key,
        "api_version": _int(fields[version_field][0]) if version_field in fields else None,
        "correlation_id": _int(fields["kafka.correlation_id"][0]) if "kafka.correlation_id" in fields else None,
        "length": _int(fields["kafka.len"][0]),
        "client_id": _string(fields["kafka.client_id"][0]) if "kafka.client_id" in fields else None,
        # A response: the packet holding the request tshark paired it with (None when it found none).
        "request_frame": _int(fields["kafka.request_frame"][0]) if "kafka.request_frame" in fields else None,
        # tshark knows this API key and version, so the body fields below are its reading, not a guess.
        "dissected": api_key is not None and not any(kind in refused for kind, _ in notes),
        "malformed": malformed,
        "notes": [message for _, message in notes],
        "topics": [_string(f) for f in fields.get("kafka.topic_name", [])],
        "partitions": [_int(f) for f in fields.get("kafka.partition_id", [])],
        "error_codes": [_int(f) for f in fields.get("kafka.error", [])],
        # The dissector gives every record of a magic-2 batch it reads (after decompressing) one
        # attributes field, and every magic 0/1 message it reads a CRC field.
        "records": len(fields.get("kafka.record_attributes", [])),
        "legacy_messages": len(fields.get("kafka.message_crc", [])),
    })
    return pdu


def kafka_pdus(path, ports):
    """One dict per Kafka PDU tshark finds in the capture at ``path`` on the broker ``ports``, in order.

    Keys: frame_number (1-based packet number of the packet that completed the PDU), time_ns (that
    packet's capture time, in nanoseconds since the epoch), tcp_stream
    (tshark's 0-based connection index), src_address, src_port, dst_address, dst_port, is_request,
    api_key, api_version (both None for a response tshark could not pair with a request),
    correlation_id, length (the size prefix, kafka.len), client_id (requests), request_frame
    (responses), dissected, malformed, notes (tshark's expert messages on the PDU), and the body
    fields in wire order: topics (kafka.topic_name, None for a null name), partitions
    (kafka.partition_id), error_codes (kafka.error), records (records of magic-2 batches) and
    legacy_messages (magic 0/1 messages). Body fields are meaningful only where ``dissected``.
    """
    ports = {int(p) for p in ports}
    pdus = []
    for packet in _pdml_packets(path, ports):
        info = _packet_info(packet)
        if info["src_port"] not in ports and info["dst_port"] not in ports:
            continue  # tshark's own default Kafka port, not one asked for
        protos = [p for p in packet if p.tag == "proto"]
        for i, proto in enumerate(protos):
            if proto.get("name") != "kafka":
                continue
            # An exception while dissecting a PDU shows as a "_ws.malformed" layer right after it; a PDU
            # whose fields end before its length says carries one inside.
            malformed = (i + 1 < len(protos) and protos[i + 1].get("name") == "_ws.malformed"
                         or any(p.get("name") == "_ws.malformed" for p in proto.iter("proto")))
            pdus.append(_pdu(info, proto, malformed))
    return pdus


# --- Captures made by hand: for the dissector's version table, and to test this module ---------------------

_PROBE_PORT = 9092
_SUPPORTS = re.compile(r"Supports v(\d+)(?:-(\d+))?\.?")


def _raw_ipv4_tcp(src_port, dst_port, seq, ack, payload):
    """One IPv4/TCP packet (PSH+ACK) from 127.0.0.1 to 127.0.0.1 carrying ``payload``."""
    tcp = struct.pack(">HHIIBBHHH", src_port, dst_port, seq, ack, 5 << 4, 0x18, 65535, 0, 0)
    total = 20 + len(tcp) + len(payload)
    header = struct.pack(">BBHHHBBH4s4s", 0x45, 0, total, 1, 0x4000, 64, 6, 0, bytes([127, 0, 0, 1]),
                         bytes([127, 0, 0, 1]))
    words = sum(struct.unpack(">10H", header))
    while words > 0xFFFF:
        words = (words & 0xFFFF) + (words >> 16)
    header = header[:10] + struct.pack(">H", ~words & 0xFFFF) + header[12:]
    return header + tcp + payload


def synthetic_capture(segments, broker_port=_PROBE_PORT, client_port=40000):
    """A classic pcap (raw IPv4 link type) of one loopback TCP connection, without handshake:
    ``segments`` is a list of (from_client, payload bytes), one packet each, sequence numbers
    running on per direction. Written by hand so that tshark's input does not lean on kafkaproto."""
    seq = {True: 1000, False: 5000}
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101))  # LINKTYPE_RAW
    for i, (from_client, payload) in enumerate(segments):
        ports = (client_port, broker_port) if from_client else (broker_port, client_port)
        packet = _raw_ipv4_tcp(*ports, seq[from_client], seq[not from_client], payload)
        seq[from_client] += len(payload)
        out += struct.pack("<IIII", 1700000000, i, len(packet), len(packet)) + packet
    return bytes(out)


def _probe_capture(api_keys):
    """An ApiVersions v0 request and a response claiming every key in ``api_keys`` at versions 0-32767."""
    client_id = b"probe"
    request = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
    response = struct.pack(">ihi", 1, 0, len(api_keys)) + b"".join(struct.pack(">hhh", k, 0, 0x7FFF)
                                                                   for k in api_keys)
    return synthetic_capture([(True, struct.pack(">i", len(request)) + request),
                              (False, struct.pack(">i", len(response)) + response)])


@lru_cache(maxsize=None)
def dissector_versions(max_api_key=127):
    """{api key: range of versions} the installed tshark's Kafka dissector decodes; keys it does not
    know are left out. Found by showing it an ApiVersions response that claims every key up to
    ``max_api_key`` at every version: it notes, for each, either the range it supports or that it
    does not know the key."""
    keys = list(range(max_api_key + 1))
    with tempfile.TemporaryDirectory() as tmp:
        pcap = Path(tmp) / "probe.pcap"
        pcap.write_bytes(_probe_capture(keys))
        # Each packet element is emptied once the loop moves on, so the response is picked out here.
        responses = [proto for packet in _pdml_packets(pcap, [_PROBE_PORT]) for proto in packet
                     if proto.get("name") == "kafka" and _first(proto, "kafka.request_key") is None]
    if len(responses) != 1:
        raise TsharkError(f"the probe's ApiVersions response was not found in tshark's output ({len(responses)})")
    supported = {}
    # One unnamed subtree per entry, holding its api key, versions and the dissector's note.
    entries = [f for f in responses[0].iter("field")
               if any(c.get("name") == "kafka.api_versions.api_key" for c in f)]
    for entry in entries:
        api_key = _int(_first(entry, "kafka.api_versions.api_key"))
        messages = [m.get("show") for m in entry.iter("field") if m.get("name") == "_ws.expert.message"]
        kinds = {f.get("name") for f in entry.iter("field")}
        if "kafka.unknown_api_key" in kinds:
            continue
        ranges = [_SUPPORTS.search(m) for m in messages]
        ranges = [r for r in ranges if r]
        if "kafka.unsupported_api_version" not in kinds or len(ranges) != 1:
            raise TsharkError(f"cannot read which versions of API key {api_key} tshark supports: {messages}")
        low, high = int(ranges[0].group(1)), int(ranges[0].group(2) or ranges[0].group(1))
        supported[api_key] = range(low, high + 1)
    if len(entries) != len(keys):
        raise TsharkError(f"tshark listed {len(entries)} of the probe's {len(keys)} API keys")
    return supported
