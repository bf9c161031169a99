"""kafkaproto-codegen SCHEMA_DIR... --out DIR: validate Kafka-style specs and generate codecs from them.

kafkaproto-codegen extend SPEC_DIR... --name NAME --out DIR: build an extension of kafkaproto from specs that
add to or amend its own (see extend.py).
"""

import argparse
import sys

from .errors import CODEGEN_EXTRA, SpecError
from .model import load_model


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["extend"]:
        return extend(argv[1:])
    parser = argparse.ArgumentParser(
        prog="kafkaproto-codegen",
        description="Validate Kafka-style JSON message specs and generate kafkaproto codecs "
        "(Cython sources plus a pure-Python fallback) as an importable package.",
        epilog="kafkaproto-codegen extend --help: build an extension of kafkaproto's own specs instead.",
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
        return _missing(e)
    try:
        specs = load_model(args.schema_dirs)
        if not args.check:
            check_output_folder(args.out)
            write_package(render(specs), args.out)
    except (SpecError, OutputError) as e:
        return _failed(e)
    versions = sum(len(range(s.valid.lo, s.valid.hi + 1)) for s in specs if not s.valid.empty)
    print(f"{len(specs)} specs, {versions} spec versions" + ("" if args.check else f" -> {args.out}"))
    return 0


def extend(argv):
    parser = argparse.ArgumentParser(
        prog="kafkaproto-codegen extend",
        description="Build an extension of kafkaproto: new APIs, versions, tagged fields and metadata records "
        "from a folder of specs, checked against kafkaproto's own, as a project with a compiled wheel. "
        "Installed and imported (or named in KAFKAPROTO_EXTENSIONS), it joins kafkaproto's registry.",
    )
    parser.add_argument("spec_dirs", nargs="+", metavar="SPEC_DIR", help="directories or files of *.json specs")
    parser.add_argument("--name", required=True, help="the Python package to make, e.g. partition_deletion")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="the project folder to write: a new folder, or one this command wrote before")
    parser.add_argument("--version", default="0.1.0", help="the extension's version (default %(default)s)")
    parser.add_argument("--no-wheel", action="store_true", help="write the project only; do not compile it")
    parser.add_argument("--install", action="store_true", help="also install the wheel into this environment")
    args = parser.parse_args(argv)
    try:
        from . import render  # noqa: F401 - jinja2, which writing the project needs
        from .extend import ProjectError, build_requirements, build_wheel, install_wheel, load_extension, write_project
        from .loader import spec_files
    except ImportError as e:
        return _missing(e)
    if not args.no_wheel:
        # Checked before anything is written: a project that cannot be compiled here is no use.
        lacking = build_requirements()
        if lacking:
            print(f"kafkaproto-codegen: error: {lacking}", file=sys.stderr)
            return 2
    try:
        extension = load_extension(args.spec_dirs)
        out = write_project(extension, args.name, args.out, spec_files(args.spec_dirs), args.version)
        amended = ", ".join(sorted(extension.amends)) or "none"
        print(f"{len(extension.specs)} specs ({len(extension.amends)} amending kafkaproto's: {amended}) -> {out}")
        if not args.no_wheel:
            wheel = build_wheel(out, args.name)
            pure = wheel.name.endswith("-none-any.whl")  # a wheel with compiled modules is tagged with its platform
            print(f"{'built, not compiled (KAFKAPROTO_PURE_BUILD=1)' if pure else 'compiled'}: {wheel}")
            if args.install:
                install_wheel(wheel)
                print(f"installed {args.name}; load it with: import {args.name} (or KAFKAPROTO_EXTENSIONS={args.name})")
            else:
                print(f"install it with: pip install {wheel}")
    except (SpecError, ProjectError) as e:
        return _failed(e)
    return 0


def _missing(error):
    """One line for a dependency of the generator that is not installed; the exit status 2."""
    name = error.name.split(".")[0] if isinstance(error, ModuleNotFoundError) and error.name else None
    what = f"needs {name}" if name else f"cannot import what it needs ({error})"
    print(f"kafkaproto-codegen: error: the generator {what}: {CODEGEN_EXTRA}", file=sys.stderr)
    return 2


def _failed(error):
    """Every broken rule of a SpecErrors, or the one error, on stderr; the exit status 1."""
    for each in getattr(error, "errors", [error]):
        print(f"kafkaproto-codegen: error: {each}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
