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

registry.load()  # kafkaproto's own specs, or a clear error in a checkout never built

from . import _generated  # noqa: E402
from ._generated import ApiKey  # noqa: E402
from .registry import ApiInfo, api, apis  # noqa: E402

__all__ = ["ApiInfo", "ApiKey", "api", "apis", "load_implementation"]
# Every request, response and header class is an attribute here, and stays the registry's: an extension's
# amended class takes the place of kafkaproto's once the extension is imported.
registry.publish(sys.modules[__name__], ("request", "response", "header"))


def load_implementation(impl=None):
    """{name: class} of kafkaproto's own specs, as no extension amends them, in one implementation: "compiled",
    "python", or by default the one in use."""
    return _generated.load(impl or _impl.IMPL)
