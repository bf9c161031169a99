"""kafkaproto-codegen SCHEMA_DIR... --out DIR: validate Kafka-style specs and generate codecs from them."""

import argparse
import sys

from .errors import SpecError
from .model import load_model


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="kafkaproto-codegen",
        description="Validate Kafka-style JSON message specs and generate kafkaproto codecs "
        "(Cython sources plus a pure-Python fallback) as an importable package.",
    )
    parser.add_argument("schema_dirs", nargs="+", metavar="SCHEMA_DIR",
                        help="directories (searched recursively) or files of *.json specs")
    parser.add_argument("--out", metavar="DIR",
                        help="the package folder to write: a new folder, or one this command wrote before")
    parser.add_argument("--check", action="store_true", help="only validate the specs; write nothing")
    args = parser.parse_args(argv)
    if not args.check and not args.out:
        parser.error("--out DIR is needed (or --check to only validate)")
    try:
        from .render import OutputError, check_output_folder, render, write_package
    except ImportError as e:
        print(f"kafkaproto-codegen: error: {e.name or e} is missing; install the generator's "
              "dependencies with: pip install 'kafkaproto[codegen]'", file=sys.stderr)
        return 2
    try:
        specs = load_model(args.schema_dirs)
        if not args.check:
            check_output_folder(args.out)
            write_package(render(specs), args.out)
    except SpecError as e:
        for error in getattr(e, "errors", [e]):
            print(f"kafkaproto-codegen: error: {error}", file=sys.stderr)
        return 1
    except OutputError as e:
        print(f"kafkaproto-codegen: error: {e}", file=sys.stderr)
        return 1
    versions = sum(len(range(s.valid.lo, s.valid.hi + 1)) for s in specs if not s.valid.empty)
    print(f"{len(specs)} specs, {versions} spec versions" + ("" if args.check else f" -> {args.out}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
