"""Optional dependencies: a missing one is named with the extra that installs it, in one line.

    pa = require("pyarrow", "arrow", "--format parquet")
"""

import importlib
from types import ModuleType


def install_hint(extra: str) -> str:
    """The commands that install an extra: for an installed kafkaproto, and in a source checkout."""
    return f"pip install 'kafkaproto[{extra}]' (from a checkout: pip install '.[{extra}]')"


def missing(module: str, extra: str, what: str) -> ImportError:
    """The ImportError for a missing module: what needs it, and the extra that brings it."""
    return ImportError(f"{what} needs {module.split('.')[0]}: {install_hint(extra)}", name=module)


def require(module: str, extra: str, what: str) -> ModuleType:
    """Import module, or raise an ImportError saying that what needs it and which extra installs it.

    Only the module's absence is reported so: an installed module that fails to import keeps its own error."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        top = module.split(".")[0]
        if e.name is not None and e.name.split(".")[0] != top:
            raise  # something the module itself imports is missing: its own message says what
        raise missing(module, extra, what) from None
