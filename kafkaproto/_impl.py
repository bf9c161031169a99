"""Which codecs run: the compiled (Cython) ones or the pure-Python fallback, decided here once.

KAFKAPROTO_PURE=1 asks for the pure-Python codecs. Otherwise the compiled ones run
when they are built; a source checkout where they are not built says so, once.
"""

import importlib
import os
import warnings
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def _source_checkout():
    return (PACKAGE.parent / "setup.py").is_file() and (PACKAGE.parent / "schemas").is_dir()


def _choose():
    if os.environ.get("KAFKAPROTO_PURE") == "1":
        return "python"
    try:
        importlib.import_module(f"{__package__}._core")
    except ImportError:
        if _source_checkout():
            warnings.warn(
                f"kafkaproto is imported from the source checkout {PACKAGE.parent}, where the compiled codecs "
                "are not built, so the pure-Python ones run (several times slower). Install it (pip install .) "
                "and import it from another directory, or build here: python setup.py build_ext --inplace",
                RuntimeWarning, stacklevel=4)
        return "python"
    return "compiled"


IMPL = _choose()  # "compiled" or "python"
COMPILED = IMPL == "compiled"
