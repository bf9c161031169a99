"""Every Kafka request and response, plus the request and response headers.

    from kafkaproto.messages import MetadataRequest, MetadataResponse, ApiKey, api

Classes are named as in the specs and cover all versions of their message;
nested structs are attributes (``FetchRequest.FetchTopic``). ``api(key_or_name)``
describes one API: its classes, versions and header versions.

KAFKAPROTO_EXTENSIONS=name,... loads extensions (see registry.load_extensions)
once kafkaproto's own specs are known: so do processes started for you, such as
Spark's workers, when they inherit it.
"""

import os

from . import _impl, registry

try:
    from . import _generated
except ImportError as exc:
    raise ImportError(
        "kafkaproto's generated codecs are missing: this looks like a source checkout that was never built. "
        "Install it (pip install .) and import it from another directory, or build here with "
        "python setup.py build_ext --inplace") from exc

from ._generated import ApiKey
from .registry import ApiInfo, api, apis

registry.register(_generated)

_ALL = {name: cls for name, cls in _generated.load(_impl.IMPL).items()
        if _generated.SPECS[name].kind in ("request", "response", "header")}
globals().update(_ALL)
__all__ = sorted(_ALL) + ["ApiInfo", "ApiKey", "api", "apis", "load_implementation"]


def load_implementation(impl):
    """{name: class} of kafkaproto's own specs in one implementation, "compiled" or "python"."""
    return _generated.load(impl)


if os.environ.get("KAFKAPROTO_EXTENSIONS", "").strip():
    registry.load_extensions([n.strip() for n in os.environ["KAFKAPROTO_EXTENSIONS"].split(",") if n.strip()])
