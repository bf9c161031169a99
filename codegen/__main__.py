"""kafkaproto-codegen SCHEMA_DIR... --out DIR: validate specs and generate codecs."""

import argparse
import sys

from .errors import SpecError
from .model import load_model
from .render import render, write_package


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="kafkaproto-codegen",
        description="Validate Kafka-style JSON message specs and generate kafkaproto codecs "
        "(Cython sources plus a pure-Python fallback) as an importable package.",
    )
    parser.add_argument("schema_dirs", nargs="+", metavar="SCHEMA_DIR",
                        help="directories (searched recursively) or files of *.json specs")
    parser.add_argument("--out", required=True, metavar="DIR", help="package directory to write")
    parser.add_argument("--check", action="store_true",
                        help="only validate the specs; write nothing")
    args = parser.parse_args(argv)
    try:
        specs = load_model(args.schema_dirs)
        files = render(specs)
    except SpecError as e:
        print(f"kafkaproto-codegen: error: {e}", file=sys.stderr)
        return 1
    if not args.check:
        write_package(files, args.out)
    versions = sum(len(range(s.valid.lo, s.valid.hi + 1)) for s in specs if not s.valid.empty)
    print(f"{len(specs)} specs, {versions} spec versions" + ("" if args.check else f" -> {args.out}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
