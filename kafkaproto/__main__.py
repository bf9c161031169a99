"""kafkaproto (or python -m kafkaproto): what this build supports, and decoding of frames.

    kafkaproto                                   summary and a self-check
    kafkaproto apis                              every API with its versions
    kafkaproto decode 00000020001200030000...    a request frame, as JSON (hex, base64, a file or stdin)
    kafkaproto decode --response Metadata 12 F   a response frame to a Metadata v12 request
    kafkaproto capture traffic.pcapng            what the Kafka traffic in a capture did
    kafkaproto replay traffic.pcapng --bootstrap-server HOST:PORT   the capture's clients again, answers compared
    kafkaproto broker [server.properties]        a single-node Kafka broker on 127.0.0.1:9092
    kafkaproto admin partitions --topic T ...    a topic's partitions; admin delete-partitions deletes some
"""

import argparse
import base64
import binascii
import json
import os
import sys
from pathlib import Path

import kafkaproto
from kafkaproto import messages, registry
from kafkaproto.cli import admin as admin_cli
from kafkaproto.cli import broker as broker_cli
from kafkaproto.cli import capture as capture_cli
from kafkaproto.cli import replay as replay_cli
from kafkaproto.jsonview import to_json


def _range(r):
    return "-" if not len(r) else f"{r.start}" if len(r) == 1 else f"{r.start}-{r.stop - 1}"


def summary():
    apis = messages.apis()
    versions = sum(len(a.valid_versions) for a in apis)
    impl = "compiled (Cython)" if kafkaproto.compiled() else "pure Python"
    print(f"kafkaproto {kafkaproto.__version__}, {impl} codecs ({Path(kafkaproto.__file__).parent})")
    if not kafkaproto.compiled() and os.environ.get("KAFKAPROTO_PURE") != "1":
        print("  the compiled codecs are not importable here: a source checkout shadows the installed "
              "package, or it was built with KAFKAPROTO_PURE_BUILD=1")
    records = sum(1 for name in registry.classes() if registry.spec(name).kind == "metadata")
    print(f"{len(apis)} APIs, {versions} request versions, {2 * versions} request/response versions, "
          f"{records} KRaft metadata records")
    for package in registry.extensions():
        amends = sorted(getattr(package, "AMENDS", {}))
        print(f"extension {package.__name__}: {len(package.SPECS) - len(amends)} specs added"
              + (f", amends {', '.join(amends)}" if amends else ""))
    # A self-check anyone can read: one request through the whole frame path.
    header = messages.RequestHeader(request_api_key=18, request_api_version=3, correlation_id=1, client_id="cli")
    body = messages.ApiVersionsRequest(client_software_name="kafkaproto",
                                       client_software_version=kafkaproto.__version__)
    frame = kafkaproto.encode_request(header, body, 3)
    back = kafkaproto.decode_request(kafkaproto.split_frames(frame)[0])
    status = "ok" if back.body == body and back.header == header else "MISMATCH"
    print(f"self-check: ApiVersionsRequest v3 frame {frame.hex()} -> {status}")
    return 0 if status == "ok" else 1


def list_apis():
    print(f"{'key':>4}  {'name':<40} {'versions':<9} {'flexible':<9} {'removed':<8} unstable")
    for a in messages.apis():
        print(f"{a.api_key:>4}  {a.name:<40} {_range(a.valid_versions):<9} {_range(a.flexible_versions):<9} "
              f"{_range(a.removed_versions):<8} {_range(a.unstable_versions)}")
    return 0


def read_input(source, encoding):
    """The frame bytes from a hex or base64 string, a file, or stdin ("-" or nothing)."""
    is_file = source not in (None, "-") and len(source) < 4096 and _is_file(source)
    if source in (None, "-"):
        data = sys.stdin.buffer.read()
    elif is_file:
        data = Path(source).read_bytes()
    else:
        data = source.encode()
        if encoding == "raw":
            encoding = "auto"
    if encoding == "raw":
        return data
    text = data.decode("ascii", "replace").strip()
    if encoding in ("auto", "hex"):
        cleaned = "".join(text.split()).removeprefix("0x")
        try:
            return bytes.fromhex(cleaned)
        except ValueError:
            if encoding == "hex":
                raise ValueError("the input is not hex") from None
    if encoding in ("auto", "base64"):
        try:
            return base64.b64decode("".join(text.split()), validate=True)
        except binascii.Error:
            if encoding == "base64":
                raise ValueError("the input is not base64") from None
    if is_file:
        return data  # a binary file
    raise ValueError("the input is neither hex nor base64 (nor a file)")


def _is_file(name):
    try:
        return Path(name).is_file()
    except OSError:  # a name too long to be a path is the frame itself
        return False


def strip_size(data, mode):
    """The frame payload: without its int32 size prefix when it has one (mode auto, yes or no)."""
    has = len(data) >= 4 and int.from_bytes(data[:4], "big") == len(data) - 4
    if mode == "yes" and not has:
        raise ValueError(f"the first 4 bytes are not the size of the {len(data) - 4} bytes after them")
    return data[4:] if (has and mode != "no") else data


def decode(args):
    data = strip_size(read_input(args.input, args.encoding), args.size_prefix)
    if args.response:
        name, version = args.response
        info = messages.api(int(name) if name.lstrip("-").isdigit() else name)
        decoded = kafkaproto.decode_response(data, info.api_key, int(version))
        out = {"api": info.name, "version": decoded.version, "header": to_json(decoded.header),
               "response": to_json(decoded.body)}
    else:
        decoded = kafkaproto.decode_request(data)
        info = messages.api(decoded.header.request_api_key)
        out = {"api": info.name, "version": decoded.header.request_api_version,
               "header": to_json(decoded.header), "request": to_json(decoded.body)}
    print(json.dumps(out, indent=None if args.compact else 2, ensure_ascii=False))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="kafkaproto", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"kafkaproto {kafkaproto.__version__}")
    parser.add_argument("--extension", action="append", default=[], metavar="NAME",
                        help="load an installed extension first (repeatable; KAFKAPROTO_EXTENSIONS does too)")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("apis", help="list every API and its versions")
    dec = sub.add_parser("decode", help="decode a request (or --response) frame to JSON")
    dec.add_argument("input", nargs="?", help="hex or base64 text, a file, or - for stdin (the default)")
    dec.add_argument("--response", nargs=2, metavar=("API", "VERSION"),
                     help="decode a response to a request of this API (name or key) and version")
    dec.add_argument("--encoding", choices=("auto", "hex", "base64", "raw"), default="auto",
                     help="how the input is written (default: hex, else base64, else a binary file)")
    dec.add_argument("--size-prefix", choices=("auto", "yes", "no"), default="auto",
                     help="whether the frame starts with its int32 size (default: when the size fits)")
    dec.add_argument("--compact", action="store_true", help="one line of JSON")
    cap = sub.add_parser("capture", help="summarise the Kafka traffic in pcap/pcapng files, or write its rows",
                         description=capture_cli.__doc__.splitlines()[0])
    capture_cli.add_arguments(cap)
    rep = sub.add_parser("replay", help="replay a capture's client traffic against a broker and compare the answers",
                         description=replay_cli.__doc__.splitlines()[0])
    replay_cli.add_arguments(rep)
    adm = sub.add_parser("admin", help="list a topic's partitions, or delete some (partition deletion)",
                         description=admin_cli.__doc__.splitlines()[0])
    admin_cli.add_arguments(adm)
    brk = sub.add_parser("broker", help="run a single-node Kafka broker", description=broker_cli.DESCRIPTION)
    broker_cli.add_arguments(brk)
    args = parser.parse_args(argv)
    try:
        registry.load_extensions(args.extension)
        if args.command == "apis":
            return list_apis()
        if args.command == "decode":
            return decode(args)
        if args.command == "capture":
            return capture_cli.run(args)
        if args.command == "replay":
            return replay_cli.run(args)
        if args.command == "admin":
            return admin_cli.run(args)
        if args.command == "broker":
            return broker_cli.run(args)
        return summary()
    except BrokenPipeError:
        raise
    except (kafkaproto.KafkaProtoError, ValueError, KeyError, OSError, ImportError) as e:
        print(f"kafkaproto: error: {e}", file=sys.stderr)
        return 2 if args.command == "replay" else 1  # replay's 1 says an answer diverged


def run():
    """The console script: main(), quiet when the reader of its output goes away (kafkaproto apis | head)."""
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # Python flushes stdout again at exit; point it at /dev/null so that does not fail too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    return code


if __name__ == "__main__":
    sys.exit(run())
