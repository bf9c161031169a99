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

from . import errors  # noqa: E402
from .exceptions import (
    DecodeError,
    EncodeError,
    EncodeTypeError,
    KafkaProtoError,
    RecordsError,
    UnsupportedVersionError,
)
from . import messages as _messages  # noqa: F401 - registers kafkaproto's own specs
from ._impl import COMPILED as _COMPILED
from ._generated import ApiKey
from .protocol import (
    FrameBuffer,
    FrameError,
    Request,
    Response,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    split_frames,
)
from .uuid import Uuid

__version__ = "0.1.0"


def compiled():
    """True when the Cython-compiled codecs are in use (not the pure-Python fallback)."""
    return _COMPILED


__all__ = [
    "ApiKey", "DecodeError", "EncodeError", "EncodeTypeError", "FrameBuffer", "FrameError", "KafkaProtoError",
    "RecordsError", "Request", "Response", "UnsupportedVersionError", "Uuid", "compiled", "decode_request",
    "decode_response", "encode_request", "encode_response", "errors", "split_frames",
]
