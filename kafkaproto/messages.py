"""Every Kafka request and response, plus the request and response headers.

    from kafkaproto.messages import MetadataRequest, MetadataResponse, api

Classes are named as in the specs and cover all versions of their message.
``api(key_or_name)`` describes one API: its classes, versions and header versions.
"""

from typing import NamedTuple

from . import _generated

_CLASSES, _COMPILED = _generated.load()
_ALL = {name: cls for name, cls in _CLASSES.items() if _generated.SPECS[name][0] in ("request", "response", "header")}
globals().update(_ALL)
__all__ = sorted(_ALL) + ["api", "apis", "ApiInfo", "load_implementation"]


def load_implementation(impl):
    """{name: class} of one implementation, "compiled" or "python", side by side with the default."""
    return _generated.load(impl)[0]


def _parse(text):
    if text == "none":
        return range(0)
    lo, _, hi = text.partition("-")
    return range(int(lo), int(hi or lo) + 1)


class ApiInfo(NamedTuple):
    api_key: int
    name: str  # e.g. "Fetch"
    request: type
    response: type
    valid_versions: range
    flexible_versions: range
    unstable_versions: range  # upstream marks these unstable; brokers do not advertise them
    removed_versions: range  # gone from current Apache Kafka, kept to read old traffic
    deprecated_versions: range
    listeners: tuple

    @property
    def stable_versions(self):
        return [v for v in self.valid_versions if v not in self.unstable_versions]

    def request_header_version(self, version):
        if self.api_key == 7 and version == 0:  # ControlledShutdown v0 predates the client id
            return 0
        return 2 if version in self.flexible_versions else 1

    def response_header_version(self, version):
        if self.api_key == 18:  # ApiVersions answers with header v0 so any client can read it
            return 0
        return 1 if version in self.flexible_versions else 0


def _build_apis(classes):
    by_key = {}
    for name, spec in _generated.SPECS.items():
        if spec[0] == "request":
            by_key[spec[1]] = name
    infos = {}
    for key, req in sorted(by_key.items()):
        kind, _, lo, hi, flo, fhi, unstable, removed, deprecated, listeners = _generated.SPECS[req]
        base = req[: -len("Request")]
        valid = range(lo, hi + 1)
        flexible = range(max(lo, flo), min(hi, fhi) + 1)
        infos[key] = ApiInfo(key, base, classes[req], classes[base + "Response"], valid, flexible,
                             _parse(unstable), _parse(removed), _parse(deprecated), tuple(listeners))
    return infos


_APIS = _build_apis(_CLASSES)
_BY_NAME = {}
for _info in _APIS.values():
    _BY_NAME[_info.name] = _BY_NAME[_info.name.lower()] = _info


def api(key_or_name):
    """The ApiInfo of an API by key (1) or name ("Fetch", "FetchRequest", "fetch")."""
    if isinstance(key_or_name, int):
        info = _APIS.get(key_or_name)
    else:
        name = str(key_or_name)
        for suffix in ("Request", "Response"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        info = _BY_NAME.get(name) or _BY_NAME.get(name.lower())
    if info is None:
        raise KeyError(f"no Kafka API {key_or_name!r}")
    return info


def apis():
    """Every ApiInfo, by api key."""
    return list(_APIS.values())
