"""kafkaproto (or python -m kafkaproto): what this build supports, and decoding of hex frames.

    kafkaproto                           summary and a self-check
    kafkaproto apis                      every API with its versions
    kafkaproto request HEX               decode a request frame payload
    kafkaproto response KEY VERSION HEX  decode a response frame payload
"""

import argparse
import os
import sys

import kafkaproto
from kafkaproto import messages, metadata


def _range(r):
    return "-" if not len(r) else f"{r.start}" if len(r) == 1 else f"{r.start}-{r.stop - 1}"


def summary():
    apis = messages.apis()
    versions = sum(len(a.valid_versions) for a in apis)
    impl = "compiled (Cython)" if kafkaproto.compiled() else "pure Python"
    print(f"kafkaproto {kafkaproto.__version__}, {impl} codecs ({kafkaproto.__file__})")
    if not kafkaproto.compiled() and os.environ.get("KAFKAPROTO_PURE") != "1":
        print("  the compiled codecs are not importable here: a source checkout shadows the installed "
              "package, or it was built with KAFKAPROTO_PURE_BUILD=1")
    print(f"{len(apis)} APIs, {versions} request versions, {2 * versions} request/response versions, "
          f"{len(metadata.__all__) - 1} KRaft metadata records")
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


def main(argv=None):
    parser = argparse.ArgumentParser(prog="kafkaproto", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("apis", help="list every API and its versions")
    req = sub.add_parser("request", help="decode a request frame payload given in hex")
    req.add_argument("hex")
    resp = sub.add_parser("response", help="decode a response frame payload given in hex")
    resp.add_argument("api_key", type=int)
    resp.add_argument("version", type=int)
    resp.add_argument("hex")
    args = parser.parse_args(argv)
    try:
        if args.command == "apis":
            return list_apis()
        if args.command == "request":
            r = kafkaproto.decode_request(bytes.fromhex(args.hex))
            print(r.header)
            print(r.body)
            return 0
        if args.command == "response":
            r = kafkaproto.decode_response(bytes.fromhex(args.hex), args.api_key, args.version)
            print(r.header)
            print(r.body)
            return 0
        return summary()
    except (kafkaproto.KafkaProtoError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
