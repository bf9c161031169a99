"""kafkaproto: the Apache Kafka wire protocol, every API and version, compiled.

    from kafkaproto.messages import MetadataRequest
    data = MetadataRequest(topics=None).encode(12)
    MetadataRequest.decode(data, 12)
"""


def _installed_build():
    """The spec of an installed, compiled kafkaproto, when this one is an unbuilt source checkout.

    Python puts the current directory first on sys.path, so `python -c`, `python -m kafkaproto`, piped scripts and
    Spark's workers started in a checkout's root would import its sources, whose codecs are not compiled. They get
    the installed build instead; a checkout built in place (or with nothing installed) is used as it is.
    """
    import sys
    from importlib.machinery import EXTENSION_SUFFIXES, PathFinder
    from pathlib import Path

    def compiled_at(folder):
        return any((folder / f"_core{suffix}").is_file() for suffix in EXTENSION_SUFFIXES)

    here = Path(__file__).resolve().parent
    if compiled_at(here) or not (here.parent / "setup.py").is_file() or not (here.parent / "schemas").is_dir():
        return None
    elsewhere = []
    for entry in sys.path:
        try:
            if Path(entry or ".").resolve() != here.parent:
                elsewhere.append(entry)
        except OSError:
            continue
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None:
            continue
        try:
            spec = PathFinder.find_spec(__name__, elsewhere) if finder is PathFinder else find_spec(__name__, None)
        except Exception:  # a third-party finder's failure is no reason to fail the import
            continue
        if spec is not None and spec.origin and spec.loader is not None:
            folder = Path(spec.origin).resolve().parent
            if folder != here and compiled_at(folder):
                return spec
    return None


_installed = _installed_build()
if _installed is not None:
    import importlib.util as _util
    import sys as _sys

    # The installed package takes this module's place; the imports below then resolve to its modules.
    _sys.modules[__name__] = _util.module_from_spec(_installed)
    _installed.loader.exec_module(_sys.modules[__name__])

from .exceptions import (  # noqa: E402 - after the swap above, these are the installed package's
    DecodeError,
    EncodeError,
    EncodeTypeError,
    KafkaProtoError,
    RecordsError,
    UnsupportedVersionError,
)

__version__ = "0.1.0"

# Loaded on first use, so that a program that needs only part of kafkaproto (the errors table, Uuid, records, the
# command line's help) does not pay for the codecs of every API.
_LAZY = {
    "ApiKey": "messages", "FrameBuffer": "protocol", "FrameError": "protocol", "Request": "protocol",
    "Response": "protocol", "decode_request": "protocol", "decode_response": "protocol",
    "encode_request": "protocol", "encode_response": "protocol", "split_frames": "protocol", "Uuid": "uuid",
}


def __getattr__(name):
    module = "errors" if name == "errors" else _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kafkaproto' has no attribute {name!r}")
    import importlib

    module = importlib.import_module(f".{module}", __name__)
    value = module if name == "errors" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


def compiled():
    """True when the Cython-compiled codecs are in use (not the pure-Python fallback)."""
    from ._impl import COMPILED

    return COMPILED


__all__ = [
    "ApiKey", "DecodeError", "EncodeError", "EncodeTypeError", "FrameBuffer", "FrameError", "KafkaProtoError",
    "RecordsError", "Request", "Response", "UnsupportedVersionError", "Uuid", "compiled", "decode_request",
    "decode_response", "encode_request", "encode_response", "errors", "split_frames",
]
