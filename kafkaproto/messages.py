"""Every Kafka request and response, plus the request and response headers.

    from kafkaproto.messages import MetadataRequest, MetadataResponse, ApiKey, api

Classes are named as in the specs and cover all versions of their message;
nested structs are attributes (``FetchRequest.FetchTopic``). ``api(key_or_name)``
describes one API: its classes, versions and header versions.

KAFKAPROTO_EXTENSIONS=name,... loads extensions (see registry.load_extensions)
once kafkaproto's own specs are known: so do processes started for you, such as
Spark's workers, when they inherit it.
"""

import sys

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

__all__ = ["ApiInfo", "ApiKey", "api", "apis", "load_implementation"]
registry.register(_generated)
# Every request, response and header class is an attribute here, and stays the registry's: an extension's
# amended class takes the place of kafkaproto's once the extension is imported.
registry.publish(sys.modules[__name__], ("request", "response", "header"))


def load_implementation(impl=None):
    """{name: class} of kafkaproto's own specs, as no extension amends them, in one implementation: "compiled",
    "python", or by default the one in use."""
    return _generated.load(impl or _impl.IMPL)


registry.load_extensions(registry.environment_extensions())
