"""Every API, KRaft metadata record and group coordinator record kafkaproto knows, from its own generated package
and any that join it.

    from kafkaproto.registry import api, register
    api("Fetch").valid_versions         # by name, or api(1), or api(ApiKey.FETCH)
    register(my_codecs)                 # a package made by kafkaproto-codegen from edited specs

A package that joins brings its requests, responses and records to the frame functions, the metadata and group
coordinator record lookups and everything built on them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, NamedTuple

from . import _impl
from ._generic import bad_version

if TYPE_CHECKING:
    from types import ModuleType

    from ._generic import SpecInfo


class ApiInfo(NamedTuple):
    """One API: its classes, its versions and the header versions that frame them."""

    api_key: int
    name: str  # e.g. "Fetch"
    request: type[Any]
    response: type[Any]
    valid_versions: range
    flexible_versions: range
    unstable_versions: range  # upstream marks these unstable; brokers do not advertise them
    removed_versions: range  # gone from current Apache Kafka, kept to read old traffic
    deprecated_versions: range
    listeners: tuple[str, ...]
    request_header_versions: tuple[int, ...]  # by version, from the first valid one
    response_header_versions: tuple[int, ...]
    fallback_version: int | None  # the version a broker answers at when it lacks the one asked (ApiVersions: 0)
    # Every class encoded as this API's request: request, then those it amends.
    request_classes: tuple[type[Any], ...] = ()
    response_classes: tuple[type[Any], ...] = ()

    @property
    def stable_versions(self) -> list[int]:
        return [v for v in self.valid_versions if v not in self.unstable_versions]

    def request_header_version(self, version: int) -> int:
        if version not in self.valid_versions:
            bad_version(self.request, version)
        return self.request_header_versions[version - self.valid_versions.start]

    def response_header_version(self, version: int) -> int:
        """The header version of a response to a request at version (the fallback's, for one a broker
        answers at its fallback version)."""
        if version not in self.valid_versions:
            if self.fallback_version is None:
                bad_version(self.response, version)
            version = self.fallback_version
        return self.response_header_versions[version - self.valid_versions.start]


class RegistryError(ValueError):
    """A package cannot join: one of its names or api keys is taken by another package."""


_packages = []
_classes = {}  # spec name -> class, in the implementation in use
_specs = {}  # spec name -> SpecInfo
_apis = {}  # api key -> ApiInfo
_by_name = {}  # "Fetch", "fetch" -> ApiInfo
_records = {}  # metadata record type -> class
_coordinator = {}  # ("coordinator-key" or "coordinator-value", group coordinator record type) -> class
_owners = {}  # spec name -> the package it comes from
_amended = {}  # spec name -> the classes an extension's amended class replaced, which still encode
_replacing = {}  # package -> whether it joined with replace=True
_published = []  # (module, kinds, names it holds now): modules whose class attributes follow the registry
_loaded = False  # whether kafkaproto's own specs (and the environment's extensions) have joined


def load() -> None:
    """Register kafkaproto's own specs, then the extensions KAFKAPROTO_EXTENSIONS names, once per process.

    Every way into the registry calls it first, so kafkaproto's specs are the first package whichever module a
    program imports first, and an extension registered early still amends them.
    """
    global _loaded
    if _loaded:
        return
    _loaded = True
    try:
        from . import _generated
    except ImportError as exc:
        _loaded = False
        raise ImportError(
            "kafkaproto's generated codecs are missing: this looks like a source checkout that was never built. "
            "Install it (pip install .) and import it from another directory, or build here with "
            "python setup.py build_ext --inplace") from exc
    register(_generated)
    load_extensions(environment_extensions())


def register(package: ModuleType, *, replace: bool = False) -> None:
    """Make a generated package's specs known everywhere.

    A package made by ``kafkaproto-codegen extend`` lists in AMENDS the specs of kafkaproto's it
    amends; each replaces kafkaproto's spec of that name if it was built on that very spec. Any
    other name or api key already known is refused, unless replace=True (a regenerated copy of
    kafkaproto's own specs, say). Registering a package twice does nothing.
    """
    load()
    if package in _packages:
        return
    amends = getattr(package, "AMENDS", {})
    builtin = _packages[0] if _packages else None
    taken_keys = {(s.kind, s.api_key): s.name for s in _specs.values() if s.api_key is not None}
    for name, spec in package.SPECS.items():
        other = taken_keys.get((spec.kind, spec.api_key)) if spec.api_key is not None else None
        if name in amends and not replace:
            owner = _owners.get(name)
            if owner is None:
                raise RegistryError(f"{package.__name__} amends {name}, which kafkaproto does not have")
            if owner is not builtin:
                raise RegistryError(f"{package.__name__} amends {name}, which {owner.__name__} amends too; "
                                    "build one extension from both folders of specs")
            if builtin.FINGERPRINTS.get(name) != amends[name]:
                raise RegistryError(f"{package.__name__} was built on another version of kafkaproto's {name} "
                                    "spec than this kafkaproto has; build it again with kafkaproto-codegen extend")
            if not set(_specs[name].valid_versions) <= set(spec.valid_versions):
                raise RegistryError(f"{package.__name__}'s {name} lacks versions kafkaproto reads")
            continue
        if not replace and name in _specs:
            raise RegistryError(f"{package.__name__} defines {name}, which {_owners[name].__name__} already defines")
        if not replace and other is not None:
            raise RegistryError(f"{package.__name__}'s {name} has api key {spec.api_key}, "
                                f"which {other} of {_owners[other].__name__} already uses")
        if other is not None and other != name:
            _forget(other)
    classes = package.load(_impl.IMPL)
    for name, spec in package.SPECS.items():
        if name in amends and name in _classes:
            _amended[name] = _amended.get(name, ()) + (_classes[name],)
        _specs[name] = spec
        _classes[name] = classes[name]
        _owners[name] = package
    _packages.append(package)
    _replacing[package] = replace
    _rebuild()


def unregister(package: ModuleType) -> None:
    """Forget a package that joined (an extension, say): the registry is as if it never had."""
    load()
    remaining = [(p, _replacing[p]) for p in _packages if p is not package]
    for table in (_packages, _specs, _classes, _owners, _amended, _replacing):
        table.clear()
    for p, replace in remaining:
        register(p, replace=replace)


def extension_of(name: str) -> str | None:
    """The name of the extension package a spec comes from, or None for kafkaproto's own (unamended) specs."""
    load()
    owner = _owners.get(name)
    return None if owner is None or owner is _packages[0] else owner.__name__


def extensions() -> list[ModuleType]:
    """The extension packages registered, in the order they joined."""
    load()
    return list(_packages[1:])


def load_extensions(names: Iterable[str]) -> list[ModuleType]:
    """Import extensions, each by module name or by its name in the "kafkaproto.extensions" entry points
    (installed extensions declare one); importing one registers it."""
    if not names:
        return []
    import importlib
    from importlib.metadata import entry_points  # a tenth of a second: only when an extension is named

    importlib.invalidate_caches()  # one installed since this process started (a long-lived Spark worker, say)
    found = {ep.name: ep.value for ep in entry_points(group="kafkaproto.extensions")}
    loaded = []
    for name in names:
        module = found.get(name, name)
        try:
            package = importlib.import_module(module)
        except ImportError as e:
            known = ", ".join(sorted(found)) or "none is installed"
            raise RegistryError(f"no kafkaproto extension {name!r} ({e}); installed extensions: {known}") from None
        if not hasattr(package, "SPECS"):
            if getattr(getattr(package, "__spec__", None), "_initializing", False):
                continue  # being imported (and so loading kafkaproto, which named it): it registers itself next
            raise RegistryError(f"{module} is not a package made by kafkaproto-codegen")
        register(package)
        loaded.append(package)
    return loaded


def environment_extensions() -> list[str]:
    """The extensions KAFKAPROTO_EXTENSIONS names (comma-separated): every kafkaproto process loads them."""
    import os
    return [n.strip() for n in os.environ.get("KAFKAPROTO_EXTENSIONS", "").split(",") if n.strip()]


def use_extensions(names: Iterable[str]) -> list[ModuleType]:
    """Make the registered extensions exactly the named ones and the environment's.

    A long-lived process that runs one job after another (a Spark worker) must decode each as that job asks:
    an extension loaded for an earlier job is set aside, or a later job without it would read its fields.
    """
    wanted = load_extensions([*environment_extensions(), *names])
    for package in extensions():
        if package not in wanted:
            unregister(package)
    return wanted


def publish(module: ModuleType, kinds: Iterable[str]) -> None:
    """Keep module's attributes equal to the registry's classes of those spec kinds, and its __all__ listing them.

    kafkaproto.messages and kafkaproto.metadata publish this way, so that once an extension is
    imported ``kafkaproto.messages.MetadataResponse`` is its amended class and its new messages are
    there too. A name imported from the module before that (``from ... import MetadataResponse``)
    stays bound to the class it was.
    """
    load()
    entry = [module, frozenset(kinds), ()]
    _published.append(entry)
    _publish(entry)


def _publish(entry):
    module, kinds, before = entry
    names = sorted(name for name, spec in _specs.items() if spec.kind in kinds)
    namespace = vars(module)
    for gone in set(before) - set(names):
        namespace.pop(gone, None)
    namespace.update((name, _classes[name]) for name in names)
    others = [name for name in namespace.get("__all__", ()) if name not in before]
    namespace["__all__"] = sorted(set(others) | set(names))
    entry[2] = tuple(names)


def _forget(name):
    _owners.pop(name, None)
    _specs.pop(name, None)
    _classes.pop(name, None)


def _rebuild():
    _apis.clear()
    _by_name.clear()
    _records.clear()
    _coordinator.clear()
    _apis.update(_api_infos(_classes))
    for info in _apis.values():
        _by_name[info.name] = _by_name[info.name.lower()] = info
    for name, spec in _specs.items():
        if spec.kind == "metadata":
            _records[spec.api_key] = _classes[name]
        elif spec.kind in ("coordinator-key", "coordinator-value"):
            _coordinator[(spec.kind, spec.api_key)] = _classes[name]
    if _impl.COMPILED:
        install_compiled(_classes)
    for entry in _published:
        _publish(entry)


def _api_infos(classes, impl=None):
    """{api key: ApiInfo} over the given {spec name: class} of one implementation (by default the one in use)."""
    impl = impl or _impl.IMPL
    out = {}
    for name, spec in _specs.items():
        if spec.kind != "request":
            continue
        base = name[:-len("Request")]
        response = _specs[base + "Response"]
        out[spec.api_key] = ApiInfo(
            spec.api_key, base, classes[name], classes[response.name], spec.valid_versions, spec.flexible_versions,
            spec.unstable_versions, spec.removed_versions, spec.deprecated_versions, spec.listeners,
            spec.header_versions, response.header_versions, response.fallback_version,
            (classes[name],) + _amended_in(name, impl), (classes[response.name],) + _amended_in(response.name, impl))
    return out


def _amended_in(name, impl):
    """The classes of name, in impl, that extensions amended since: they still encode as the API."""
    if impl == _impl.IMPL:
        return _amended.get(name, ())
    found = [package.load(impl)[name] for package in _packages if name in package.SPECS]
    return tuple(reversed(found[:-1]))


def install_compiled(classes: dict[str, type[Any]]) -> None:
    """Give the compiled frame functions their API table, over compiled classes."""
    from ._core import install
    install(_api_infos(classes, "compiled"), classes["RequestHeader"], classes["ResponseHeader"])


def api(key_or_name: int | str) -> ApiInfo:
    """The ApiInfo of an API by key (1, ApiKey.FETCH) or name ("Fetch", "FetchRequest", "fetch")."""
    if not _loaded:
        load()
    if isinstance(key_or_name, int):
        info = _apis.get(key_or_name)
    else:
        name = str(key_or_name)
        for suffix in ("Request", "Response"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        info = _by_name.get(name) or _by_name.get(name.lower())
    if info is None:
        raise KeyError(f"no Kafka API {key_or_name!r}")
    return info


def apis() -> list[ApiInfo]:
    """Every ApiInfo, by api key."""
    load()
    return [_apis[k] for k in sorted(_apis)]


def record_class(record_type: int) -> type[Any]:
    """The class of a KRaft metadata record type (its spec's apiKey)."""
    load()
    try:
        return _records[record_type]
    except KeyError:
        raise KeyError(f"no metadata record type {record_type!r}") from None


def coordinator_class(kind: str, record_type: int) -> type[Any]:
    """The class of a group coordinator record's key (kind "coordinator-key") or value ("coordinator-value") of
    that record type (its spec's apiKey)."""
    load()
    try:
        return _coordinator[(kind, record_type)]
    except KeyError:
        raise KeyError(f"no group coordinator record type {record_type!r}") from None


def spec(name: str) -> SpecInfo:
    """The SpecInfo of a class name ("FetchRequest", "TopicRecord", "RequestHeader")."""
    load()
    return _specs[name]


def message_class(name: str) -> type[Any]:
    """The class of a spec name ("FetchRequest", "RequestHeader") in the implementation in use."""
    load()
    return _classes[name]


def classes(impl: str | None = None) -> dict[str, type[Any]]:
    """{spec name: class} of every registered package, in one implementation (by default the one in use)."""
    load()
    if impl is None or impl == _impl.IMPL:
        return dict(_classes)
    out = {}
    for package in _packages:
        out.update(package.load(impl))
    return out
