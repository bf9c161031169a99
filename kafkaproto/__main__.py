"""kafkaproto (or python -m kafkaproto): what this build supports, and decoding of frames.

    kafkaproto                                   summary and a self-check
    kafkaproto apis                              every API with its versions
    kafkaproto decode 00000020001200030000...    a request frame, as JSON (hex, base64, a file or stdin)
    kafkaproto decode --response Metadata 12 F   a response frame to a Metadata v12 request
    kafkaproto capture traffic.pcapng            what the Kafka traffic in a capture did
    kafkaproto replay traffic.pcapng --bootstrap-server HOST:PORT   the capture's clients again, answers compared
    kafkaproto broker [server.properties]        a Kafka broker on 127.0.0.1:9092 (--nodes N: a cluster of N)
    kafkaproto cluster --channel H:P move-leader T 0 2   a running broker's leaders moved, brokers stopped, faults
    kafkaproto admin partitions --topic T ...    a topic's partitions; admin delete-partitions deletes some
"""

import argparse
import base64
import binascii
import difflib
import importlib
import json
import os
import re
import sys
from pathlib import Path

import kafkaproto
from kafkaproto import messages, registry
from kafkaproto.jsonview import to_json

EPILOG = """\
exit status:
  0  success
  1  the answer is no: replay found answers that diverged, or capture --check found exchanges with errors
  2  could not run: bad input, a missing file, an unreachable broker, a bad option

Errors go to standard error as one line, "kafkaproto: error: ...", saying what went wrong and where."""


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
    """The frame bytes from hex or base64 text, a file, or standard input ("-" or nothing).

    A file or standard input holding only hex text (whitespace and line breaks allowed) is read as hex, one holding
    only base64 text as base64, and anything else as the frame's own bytes. An argument that names no file is hex
    or base64 text."""
    if source in (None, "-"):
        if source is None and _is_terminal(sys.stdin):
            raise ValueError("give a frame to decode: hex or base64 text, a file, or - to read standard input")
        return _decode_text(sys.stdin.buffer.read(), encoding, "standard input")
    if not source:
        raise ValueError("the frame given is empty")
    if len(source) < 4096:  # longer is the frame itself, never a path
        path = Path(source)
        if _is_file(path):
            return _decode_text(path.read_bytes(), encoding, source)
        if _is_folder(path):
            raise ValueError(f"{source} is a folder, not a file")
    data = None
    if source.isascii() and encoding != "raw":
        data = _from_hex(source) if encoding in ("auto", "hex") else None
        if data is None and encoding in ("auto", "base64"):
            data = _from_base64(source)
    path = _names_a_path(source, data is not None)
    if data is not None and not path:
        if not data:
            raise ValueError("the frame given is empty")
        return data
    if path or encoding == "raw":
        raise ValueError(f"no such file: {_shorten(source)}")
    kind = "hex or base64" if encoding == "auto" else encoding
    raise ValueError(f"no such file, and not {kind} text: {_shorten(source)}")


def _decode_text(data, encoding, where):
    """The bytes read from a file or standard input: hex or base64 text decoded, anything else as it is."""
    if encoding != "raw":
        try:
            text = data.decode("ascii")
        except UnicodeDecodeError:
            text = None
        decoded = None
        if text is not None and encoding in ("auto", "hex"):
            decoded = _from_hex(text)
        if decoded is None and text is not None and encoding in ("auto", "base64"):
            decoded = _from_base64(text)
        if decoded is not None:
            data = decoded
        elif encoding != "auto":
            raise ValueError(f"{where} is not {encoding} text")
        elif _is_text(data):  # a frame's own bytes always hold some that are not text (its zeros, at least)
            raise ValueError(f"{where} holds text that is neither hex nor base64")
    if not data:
        raise ValueError(f"{where} is empty")
    return data


def _is_text(data):
    try:
        return "".join(data.decode("utf-8").split()).isprintable()
    except UnicodeDecodeError:
        return False


def _from_hex(text):
    cleaned = "".join(text.split())
    if cleaned[:2] in ("0x", "0X"):
        cleaned = cleaned[2:]
    try:
        return bytes.fromhex(cleaned)
    except ValueError:
        return None


def _from_base64(text):
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        return None


def _names_a_path(text, is_text):
    """Whether an argument that names no file was meant as one. Hex and base64 text hold no dot and start with no
    slash or tilde; base64 holds slashes, but not after a folder that exists."""
    if "." in text or text.startswith(("/", "~")) or "\\" in text or (os.altsep and os.altsep in text):
        return True
    if os.sep in text:
        folder = os.path.dirname(text)
        return not is_text or bool(folder) and _is_folder(Path(folder))
    return False


def _shorten(text, limit=80):
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _is_file(path):
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long to be a path, or one holding a NUL, is no file
        return False


def _is_folder(path):
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def read_frame(data, size_prefix, read, plausible=None):
    """read(payload) of the frame in data, which starts with its int32 size prefix or not (size_prefix auto, yes or
    no). plausible(payload) says whether a request payload's first 4 bytes are an API key and a version that exist
    (None: anything may be, as for a response's correlation id)."""
    if len(data) < 4:
        if size_prefix == "yes":
            raise ValueError(f"the frame has {len(data)} bytes, fewer than its 4-byte size prefix")
        return read(data)
    size, rest = int.from_bytes(data[:4], "big"), len(data) - 4
    mismatch = f"the frame's size prefix says {size} bytes but {rest} follow"
    if size_prefix == "no":
        return read(data)
    if size == rest:
        return read(data[4:])
    if size_prefix == "yes":
        raise ValueError(mismatch)
    # Without a size prefix that fits, the frame is read as it is; when that fails, the size prefix may explain why.
    try:
        return read(data)
    except (kafkaproto.KafkaProtoError, ValueError) as e:
        bare = plausible is None or plausible(data)
        prefixed = plausible is None or len(data) < 8 or plausible(data[4:])
        if not bare and (size > rest or prefixed):  # only the size-prefixed reading can be right
            raise ValueError(mismatch) from None
        if size > rest and prefixed:  # either can: cut short, or bad without a size prefix
            raise ValueError(f"{mismatch}; read without a size prefix: {e}") from None
        raise


def _plausible_request(payload):
    if len(payload) < 4:
        return False
    api_key, version = int.from_bytes(payload[:2], "big", signed=True), int.from_bytes(payload[2:4], "big")
    try:
        return version in messages.api(api_key).valid_versions
    except KeyError:
        return False


def decode(args):
    if args.response:  # the API and version first: they are wrong whatever the input
        name, version = args.response
        info = messages.api(int(name) if name.lstrip("-").isdigit() else name)
        try:
            version = int(version)
        except ValueError:
            raise ValueError(f"--response takes an API and a version number, not {version!r}") from None
    data = read_input(args.input, args.encoding)
    if args.response:
        decoded = read_frame(data, args.size_prefix,
                             lambda payload: kafkaproto.decode_response(payload, info.api_key, version))
        out = {"api": info.name, "version": decoded.version, "header": to_json(decoded.header),
               "response": to_json(decoded.body)}
    else:
        decoded = read_frame(data, args.size_prefix, kafkaproto.decode_request, _plausible_request)
        info = messages.api(decoded.header.request_api_key)
        out = {"api": info.name, "version": decoded.header.request_api_version,
               "header": to_json(decoded.header), "request": to_json(decoded.body)}
    print(json.dumps(out, indent=None if args.compact else 2, ensure_ascii=False))
    return 0


def error_message(error):
    """An error as the one line the command prints: a KeyError's message without the quotes str() adds, and the
    nearest API name to one that does not exist."""
    text = str(error.args[0]) if isinstance(error, KeyError) and len(error.args) == 1 else str(error)
    unknown = re.fullmatch(r"no Kafka API '(.+)'", text)
    if unknown:
        wanted = unknown.group(1).lower().removesuffix("request").removesuffix("response")
        names = {a.name.lower(): a.name for a in messages.apis()}
        close = difflib.get_close_matches(wanted, names, n=1, cutoff=0.75)
        if close:
            text += f" (did you mean {names[close[0]]}?)"
    return text


def _chosen_parser(parser, args):
    """The (sub)parser of the subcommand the arguments chose: argparse leaves its unrecognized arguments to the
    top-level parser, whose usage does not show the subcommand's options."""
    while True:
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, actions[0].dest, None) if actions else None
        if chosen is None or chosen not in actions[0].choices:
            return parser
        parser = actions[0].choices[chosen]


def _decode_arguments(dec):
    dec.add_argument("input", nargs="?", help="hex or base64 text, a file, or - for stdin (the default)")
    dec.add_argument("--response", nargs=2, metavar=("API", "VERSION"),
                     help="decode a response to a request of this API (name or key) and version")
    dec.add_argument("--encoding", choices=("auto", "hex", "base64", "raw"), default="auto",
                     help="how the input is written (default: hex, else base64, else a binary file)")
    dec.add_argument("--size-prefix", choices=("auto", "yes", "no"), default="auto",
                     help="whether the frame starts with its int32 size (default: when the size fits)")
    dec.add_argument("--compact", action="store_true", help="one line of JSON")


def _first_line(module):
    return module.__doc__.splitlines()[0]


# Each subcommand: its help line, and the module of kafkaproto.cli with its add_arguments and run (None: this
# file's). A subcommand's module is imported only when it is the one asked for: ``kafkaproto capture`` does not
# load the broker.
COMMANDS = {
    "apis": ("list every API and its versions", None),
    "decode": ("decode a request (or --response) frame to JSON", None),
    "capture": ("summarise the Kafka traffic in pcap/pcapng files, or write its rows", "capture"),
    "replay": ("replay a capture's client traffic against a broker and compare the answers", "replay"),
    "admin": ("list a topic's partitions, or delete some (partition deletion)", "admin"),
    "broker": ("run a Kafka broker, or a cluster of several in one process", "broker"),
    "cluster": ("move leaders, stop brokers and install faults in a running broker", "cluster"),
}
_OWN = {"apis": (lambda parser: None, lambda args: list_apis()), "decode": (_decode_arguments, decode)}


def _command(name):
    """(description, add_arguments, run) of a subcommand."""
    module = COMMANDS[name][1]
    if module is None:
        return (None, *_OWN[name])
    cli = importlib.import_module(f"kafkaproto.cli.{module}")
    return getattr(cli, "DESCRIPTION", None) or _first_line(cli), cli.add_arguments, cli.run


def _parser(chosen):
    """The command line's parser, with the arguments of the chosen subcommand only (the others are named)."""
    parser = argparse.ArgumentParser(prog="kafkaproto", description=__doc__.splitlines()[0], epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"kafkaproto {kafkaproto.__version__}")
    parser.add_argument("--extension", action="append", default=[], metavar="NAME",
                        help="load an installed extension first (repeatable; KAFKAPROTO_EXTENSIONS does too)")
    sub = parser.add_subparsers(dest="command")
    for name, (what, _) in COMMANDS.items():
        if name == chosen:
            description, add_arguments, _ = _command(name)
            add_arguments(sub.add_parser(name, help=what, description=description))
        else:
            sub.add_parser(name, help=what, add_help=False)
    return parser


def _pyarrow_runs_without_numpy():
    """Whether the pyarrow installed is 16 or later, which runs without numpy when it cannot import it (an older
    one fails). Read from its metadata folder's name: importing importlib.metadata would cost what this saves."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("pyarrow")
        if spec is None or not spec.origin:
            return False
        found = [entry.name[len("pyarrow-"):].split(".")[0] for entry in os.scandir(Path(spec.origin).parent.parent)
                 if entry.name.startswith("pyarrow-") and entry.name.endswith(".dist-info")]
    except (ImportError, ValueError, OSError):  # not installed, or not as a folder beside its metadata
        return False
    return bool(found) and all(major.isdigit() and int(major) >= 16 for major in found)


def main(argv=None, *, console=False):
    chosen = _parser(None).parse_known_args(argv)[0].command
    if console and chosen == "capture" and "numpy" not in sys.modules and _pyarrow_runs_without_numpy():
        # pyarrow imports numpy whenever it can (about 0.05 s of its 0.13 s import), though it needs numpy only
        # to trade arrays with it, which this process never does. Only the console script does this:
        # a program calling main() keeps its numpy.
        sys.modules["numpy"] = None
    parser = _parser(chosen)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        _chosen_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        registry.load_extensions(args.extension)
        if args.command is None:
            return summary()
        return _command(args.command)[2](args)
    except BrokenPipeError:
        raise
    except (kafkaproto.KafkaProtoError, ValueError, KeyError, OSError, ImportError) as e:
        from kafkaproto.capture.summary import escape_controls  # a file name or a frame's text may hold escapes
        print(f"kafkaproto: error: {escape_controls(error_message(e))}", file=sys.stderr)
        return 2  # could not run (1 is a subcommand's "no": see EPILOG)


def run():
    """The console script: main(), quiet when the reader of its output goes away (kafkaproto apis | head)."""
    try:
        code = main(console=True)
        sys.stdout.flush()
    except BrokenPipeError:
        # Python flushes stdout again at exit; point it at /dev/null so that does not fail too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    return code


if __name__ == "__main__":
    sys.exit(run())
