"""Extensions: a folder of specs that adds to kafkaproto's own, built into a package that joins its registry.

A spec whose name kafkaproto lacks is new: a new API (request and response), a
new KRaft metadata record type, a new header or data structure. A spec whose
name kafkaproto has amends kafkaproto's spec of that name:

- top-level keys left out keep kafkaproto's values; ``validVersions`` may only
  add versions above kafkaproto's highest; any other key given must be equal;
- in ``fields`` (and ``commonStructs``), an entry with a name but no ``type``
  stands for kafkaproto's field of that name, and its ``fields`` amend that
  struct; an entry with a ``type`` and a known name restates the field (only
  its version ranges may change, and only above kafkaproto's versions);
  an entry with a new name is a new field, kept at its place in the list;
- at every version kafkaproto already knows, the amended message must read and
  write the same bytes as before apart from new tagged fields (KIP-482's way of
  adding to a message compatibly): so a new field there must be tagged, with a
  tag its struct does not use yet.

Each rule that breaks is reported as a SpecError naming the extension's file
and kafkaproto's file.
"""

import copy
from pathlib import Path

from .errors import CODEGEN_EXTRA, SpecError, raise_all
from .loader import load_spec, spec_files
from .model import KEYED_TYPES, build_spec, default_schema_dirs, refused_names, spec_fingerprint
from .versions import Versions

# Keys of a field an amendment may restate differently; the layout check decides whether the
# difference reaches a version kafkaproto already knows.
VERSION_KEYS = ("versions", "nullableVersions", "taggedVersions", "flexibleVersions")
PROSE = ("about",)


class BuiltinSpecs:
    """kafkaproto's own specs, read from the generator's copy of schemas/."""

    def __init__(self, directories=None):
        self.files = {}  # name -> path
        self.raw = {}  # name -> dict
        for path in spec_files(directories or default_schema_dirs()):
            data = load_spec(path)
            self.files[data["name"]] = path
            self.raw[data["name"]] = data
        self._built = {}

    def spec(self, name):
        if name not in self._built:
            self._built[name] = build_spec(self.files[name], self.raw[name])
        return self._built[name]

    def by_key(self, kind, api_key):
        """The name of kafkaproto's spec of that type and api key (or record type), if any."""
        for name, data in self.raw.items():
            if data.get("type") == kind and data.get("apiKey") == api_key:
                return name
        return None


class Extension:
    """The validated specs of an extension: new ones and kafkaproto's amended ones, ready to render."""

    def __init__(self, specs, amends):
        self.specs = specs  # model Specs, sorted by name
        self.amends = amends  # amended spec name -> fingerprint of kafkaproto's spec it was built on


def load_extension(directories, builtin=None):
    """Validate an extension's specs against kafkaproto's; raise SpecError(s) naming every broken rule."""
    builtin = builtin or BuiltinSpecs()
    errors, specs, amends, seen, refused = [], {}, {}, {}, set()
    for path in spec_files(directories):
        data = None
        try:
            data = load_spec(path)
            name = data.get("name")
            if name in seen:
                raise SpecError(path, name, f"spec name already defined in {seen[name]}")
            seen[name] = path
            if name in builtin.raw:
                base_file = builtin.files[name]
                merged = merge_spec(builtin.raw[name], data, base_file, path)
                spec = build_spec(path, merged)
                check_layout(builtin.spec(name), spec, base_file, path)
                amends[name] = spec_fingerprint(builtin.raw[name])
            else:
                spec = build_spec(path, data)
                _check_new_key(spec, builtin)
            specs[name] = spec
        except SpecError as e:
            errors.extend(getattr(e, "errors", [e]))
            refused.update(refused_names(path, data))
    errors.extend(_check_extension_keys(specs))
    errors.extend(_check_pairs(specs, builtin, refused))
    if errors:
        raise_all(errors)
    return Extension([specs[n] for n in sorted(specs)], amends)


def _check_new_key(spec, builtin):
    if spec.api_key is None or spec.type not in KEYED_TYPES:
        return
    other = builtin.by_key(spec.type, spec.api_key)
    if other is not None:
        what = "api key" if spec.type in ("request", "response") else "record type"
        raise SpecError(spec.file, f"{spec.name}.apiKey",
                        f"{what} {spec.api_key} is already kafkaproto's {other} ({builtin.files[other]}); "
                        f"choose a {what} no spec uses")


def _check_extension_keys(specs):
    errors, keys = [], {}
    for spec in specs.values():
        if spec.api_key is None or spec.type not in KEYED_TYPES:
            continue
        other = keys.setdefault((spec.type, spec.api_key), spec)
        if other is not spec:
            errors.append(SpecError(spec.file, f"{spec.name}.apiKey",
                                    f"apiKey {spec.api_key} with type {spec.type} is already used by "
                                    f"{other.name} ({other.file})"))
    return errors


def _check_pairs(specs, builtin, refused=()):
    """A request and its response share their versions, whichever of them the extension holds. Nothing is said
    of a message whose partner the extension gives but was refused: the partner's own errors say what is wrong."""
    errors = []
    for spec in specs.values():
        if spec.type != "request":
            continue
        partner_name = spec.name[:-len("Request")] + "Response"
        if partner_name in refused or (spec.api_key, "response") in refused:
            continue
        partner = specs.get(partner_name)
        if partner is None and partner_name in builtin.raw:
            partner = builtin.spec(partner_name)
        if partner is None or partner.type != "response" or partner.api_key != spec.api_key:
            errors.append(SpecError(spec.file, spec.name,
                                    f"apiKey {spec.api_key} has a request but no response {partner_name}"))
        elif partner.valid != spec.valid:
            errors.append(SpecError(spec.file, f"{spec.name}.validVersions",
                                    f"validVersions {spec.valid} differ from {partner_name}'s {partner.valid} "
                                    f"({partner.file}); amend both"))
    for spec in specs.values():
        if spec.type == "response":
            request = spec.name[:-len("Response")] + "Request"
            if request in refused or (spec.api_key, "request") in refused:
                continue
            if request not in specs and request not in builtin.raw:
                errors.append(SpecError(spec.file, spec.name,
                                        f"apiKey {spec.api_key} has a response but no request {request}"))
            elif request not in specs and builtin.spec(request).valid != spec.valid:
                errors.append(SpecError(spec.file, f"{spec.name}.validVersions",
                                        f"validVersions {spec.valid} differ from {request}'s "
                                        f"{builtin.spec(request).valid} ({builtin.files[request]}); amend both"))
    return errors


def merge_spec(base, ext, base_file, ext_file):
    """kafkaproto's spec dict amended by an extension's; raises SpecError(s) for amendments that
    change what kafkaproto's spec says."""
    name = base["name"]
    errors = []
    out = copy.deepcopy(base)
    for key, value in ext.items():
        if key in ("name", "fields", "commonStructs") or key in PROSE:
            continue
        if key == "validVersions":
            try:
                mine, theirs = Versions.parse(value), Versions.parse(base[key])
            except ValueError as e:
                errors.append(SpecError(ext_file, f"{name}.validVersions", str(e)))
                continue
            if mine.empty or mine.lo != theirs.lo or mine.hi < theirs.hi:
                errors.append(SpecError(ext_file, f"{name}.validVersions",
                                        f"validVersions {value} must keep kafkaproto's {base[key]} ({base_file}) "
                                        "and may only add versions above them"))
            out[key] = value
        elif key not in base or not _same(key, base[key], value):
            was = repr(base[key]) if key in base else "not set"
            errors.append(SpecError(ext_file, f"{name}.{key}",
                                    f"{key} is {value!r} here but {was} in kafkaproto's spec ({base_file}); "
                                    "an extension cannot change it"))
    out["fields"] = _merge_fields(base.get("fields", []), ext.get("fields", []), name, base_file, ext_file, errors)
    if "commonStructs" in ext:
        common = {cs["name"]: cs for cs in out.get("commonStructs", [])}
        for cs in ext["commonStructs"]:
            where = f"{name}.commonStructs.{cs.get('name')}"
            if not isinstance(cs, dict) or not isinstance(cs.get("fields", []), list):
                errors.append(SpecError(ext_file, where, "a common struct needs a name and a fields list"))
            elif cs.get("name") in common:
                old = common[cs["name"]]
                old["fields"] = _merge_fields(old["fields"], cs.get("fields", []), where, base_file, ext_file, errors)
            else:
                out.setdefault("commonStructs", []).append(cs)
    if errors:
        raise_all(errors)
    return out


def _same(key, a, b):
    if key.endswith("Versions"):
        try:
            return Versions.parse(a) == Versions.parse(b)
        except ValueError:
            return False
    return a == b


def _merge_fields(base_fields, ext_fields, path, base_file, ext_file, errors):
    """Kafka's fields amended: the extension's order, with kafkaproto's fields it does not mention kept
    where they were (before the next field it does mention)."""
    if not isinstance(ext_fields, list):
        errors.append(SpecError(ext_file, path, "fields must be a list"))
        return base_fields
    by_name = {f["name"]: f for f in base_fields}
    order = [f["name"] for f in base_fields]
    tags = {f["tag"]: f["name"] for f in base_fields if "tag" in f}
    out, done, given = [], set(), []

    def flush(upto):
        for n in order[:upto]:
            if n not in done:
                out.append(copy.deepcopy(by_name[n]))
                done.add(n)

    for i, ef in enumerate(ext_fields):
        name = ef.get("name") if isinstance(ef, dict) else None
        where = f"{path}.{name}" if isinstance(name, str) else f"{path}[{i}]"
        if not isinstance(name, str):
            errors.append(SpecError(ext_file, where, "a field needs a name"))
            continue
        if name in given:
            errors.append(SpecError(ext_file, where, "field given twice"))
            continue
        if name in done:
            errors.append(SpecError(ext_file, where, f"fields are in another order than in kafkaproto's spec "
                                    f"({base_file}), where {name} comes before {given[-1]}"))
            continue
        given.append(name)
        if name not in by_name:
            if "type" not in ef:
                errors.append(SpecError(ext_file, where, f"kafkaproto's spec ({base_file}) has no field {name} "
                                        "here; a new field needs a type"))
                continue
            if "tag" in ef and ef["tag"] in tags:
                errors.append(SpecError(ext_file, where, f"tag {ef['tag']} is already used by {tags[ef['tag']]} "
                                        f"in kafkaproto's spec ({base_file})"))
                continue
            out.append(copy.deepcopy(ef))
            done.add(name)
            continue
        flush(order.index(name))
        bf = by_name[name]
        if "type" not in ef:
            extra = sorted(set(ef) - {"name", "fields", "about"})
            if extra:
                errors.append(SpecError(ext_file, where, f"a field given by name alone stands for kafkaproto's; "
                                        f"give its type to restate it, not only {', '.join(extra)}"))
            merged = copy.deepcopy(bf)
        else:
            for key in sorted((set(bf) | set(ef)) - {"name", "fields", *PROSE, *VERSION_KEYS}):
                if bf.get(key) != ef.get(key):
                    errors.append(SpecError(ext_file, f"{where}.{key}",
                                            f"{key} is {ef.get(key)!r} here but {bf.get(key)!r} in kafkaproto's "
                                            f"spec ({base_file}); an extension cannot change it"))
            merged = {k: copy.deepcopy(v) for k, v in ef.items() if k != "fields"}
        if "fields" in bf or "fields" in ef:
            if "fields" not in bf:
                errors.append(SpecError(ext_file, where, f"kafkaproto's {name} ({base_file}) has no inline fields; "
                                        "amend the common struct it names instead"))
            else:
                merged["fields"] = _merge_fields(bf["fields"], ef.get("fields", []), where, base_file, ext_file,
                                                 errors)
        out.append(merged)
        done.add(name)
    flush(len(order))
    return out


def check_layout(base, spec, base_file, ext_file):
    """At every version kafkaproto knows, the amended spec must carry the same fields the same way;
    only new tagged fields may appear there."""
    errors = []
    _compare_struct(base.root, spec.root, base.valid, base.name, base_file, ext_file, errors)
    if errors:
        raise_all(errors)


def _compare_struct(base, mine, known, path, base_file, ext_file, errors):
    mine_by_name = {f.name: f for f in mine.fields}
    for bf in base.fields:
        where = f"{path}.{bf.name}"
        mf = mine_by_name.get(bf.name)
        present = bf.present.intersect(known)
        if mf is None:
            errors.append(SpecError(ext_file, where, f"field of kafkaproto's spec ({base_file}) is missing"))
            continue
        for what, a, b in (("versions", present, mf.present.intersect(known)),
                           ("nullableVersions", bf.nullable.intersect(known), mf.nullable.intersect(known)),
                           ("taggedVersions", bf.tagged.intersect(known), mf.tagged.intersect(known))):
            if a != b:
                errors.append(SpecError(ext_file, where, f"{what} cover {b} of kafkaproto's versions {known} here but "
                                        f"{a} in kafkaproto's spec ({base_file}); versions it knows cannot change"))
        if bf.struct is not None and mf.struct is not None and not present.empty:
            _compare_struct(bf.struct, mf.struct, present, where, base_file, ext_file, errors)
    base_names = {f.name for f in base.fields}
    for mf in mine.fields:
        if mf.name in base_names:
            continue
        in_known = mf.present.intersect(known)
        if in_known != mf.tagged.intersect(known):
            errors.append(SpecError(ext_file, f"{path}.{mf.name}",
                                    f"new field is in versions {in_known}, which kafkaproto already reads "
                                    f"({base_file}); there it must be tagged (tag and taggedVersions), or start at "
                                    "a new version"))
    # The order of the fields every known version writes must not change either.
    base_order = [f.name for f in base.fields if f.name in mine_by_name]
    mine_order = [f.name for f in mine.fields if f.name in base_names]
    if base_order != mine_order:
        errors.append(SpecError(ext_file, path, f"fields are in another order than in kafkaproto's spec "
                                f"({base_file}): {', '.join(mine_order)}"))


class ProjectError(Exception):
    """The extension project cannot be written or built; says why."""


def write_project(extension, package, out, spec_files_used, version="0.1.0"):
    """Write an installable project for the extension into out (new, or one this wrote before)."""
    import re

    from .render import MARKER, OutputError, _environment, render, write_package

    if not re.fullmatch(r"[a-z_][a-z0-9_]*", package) or package in ("kafkaproto", "kafkaproto_codegen"):
        raise ProjectError(f"--name {package!r} must be a new lower-case Python package name, such as my_extension")
    out = Path(out)
    pyproject = out / "pyproject.toml"
    if out.exists() and any(out.iterdir()):
        if not pyproject.is_file() or MARKER not in pyproject.read_text(encoding="utf-8", errors="replace")[:200]:
            raise ProjectError(f"{out} is not empty and was not written by kafkaproto-codegen extend; "
                               "give --out a new folder or one it wrote before")
    env = _environment()
    fields = dict(marker=MARKER, package=package, distribution=package.replace("_", "-"), version=version,
                  kafkaproto_version=_kafkaproto_version(),
                  summary=", ".join(s.name for s in extension.specs))
    files = {f"{package}/{name}": text
             for name, text in render(extension.specs, extension=True, amends=extension.amends).items()}
    package_dir = out / package
    if (package_dir / "specs").is_dir():  # the copy of the specs an earlier run made
        for old in (package_dir / "specs").glob("*.json"):
            old.unlink()
        (package_dir / "specs").rmdir()
    try:
        write_package({name.split("/", 1)[1]: text for name, text in files.items()}, package_dir)
    except OutputError as e:
        raise ProjectError(str(e)) from None
    (package_dir / "specs").mkdir()
    for path in spec_files_used:
        (package_dir / "specs" / Path(path).name).write_bytes(Path(path).read_bytes())
    (out / "setup.py").write_text(env.get_template("extension_setup.py.j2").render(**fields), encoding="utf-8")
    pyproject.write_text(env.get_template("extension_pyproject.toml.j2").render(**fields), encoding="utf-8")
    return out


def _installed(module):
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def build_requirements():
    """None when this Python can compile an extension (build_wheel); otherwise what is missing, in one line."""
    import os

    if not _installed("pip"):
        return "building the wheel needs pip in this Python: python -m ensurepip (or --no-wheel)"
    needed = ["setuptools"] + ([] if os.environ.get("KAFKAPROTO_PURE_BUILD") == "1" else ["Cython"])
    lacking = [name for name in needed if not _installed(name)]
    if lacking:
        return (f"compiling the extension needs {' and '.join(lacking)}: {CODEGEN_EXTRA}; or give --no-wheel to "
                "write the project only")
    return None


def _build_environment():
    """This environment, with kafkaproto's folder on PYTHONPATH when only an import hook finds it (an editable
    install): Cython looks for the kafkaproto/_core.pxd the generated modules cimport on sys.path."""
    import importlib.util
    import os
    import sys

    env = dict(os.environ)
    spec = importlib.util.find_spec("kafkaproto")
    if spec is None or not spec.origin:
        return env, {}
    root = str(Path(spec.origin).resolve().parent.parent)
    on_path = {str(Path(entry or ".").resolve()) for entry in sys.path}
    if root in on_path:
        return env, {}
    added = {"PYTHONPATH": os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)}
    return {**env, **added}, added


def build_wheel(out, package):
    """Compile the project into a wheel in out/dist, with the kafkaproto and Cython installed here. When that
    fails, pip's output is in out/build.log and the error says so, with the command that builds it again."""
    import shlex
    import subprocess
    import sys

    out = Path(out).resolve()  # pip reads a bare word ("build") as a project on PyPI, a path as a folder
    dist = out / "dist"
    log = out / "build.log"
    for old in dist.glob("*.whl"):
        old.unlink()
    command = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--wheel-dir", str(dist),
               str(out)]
    env, added = _build_environment()
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    wheels = sorted(dist.glob("*.whl"))
    if result.returncode != 0 or not wheels:
        log.write_text(f"$ {shlex.join(command)}\n{result.stdout}{result.stderr}", encoding="utf-8")
        again = " ".join([*(f"{k}={shlex.quote(v)}" for k, v in added.items()), shlex.join(command)])
        raise ProjectError(f"compiling {out} failed: pip's output is in {log}; once what it says is fixed, build "
                           f"the wheel with: {again}")
    log.unlink(missing_ok=True)
    # A wheel's file name starts with its project's name, "-" and "." written "_".
    ours = [w for w in wheels if w.name.startswith(package + "-")]
    if len(ours) != 1 or len(wheels) != 1:
        raise ProjectError(f"building {out} made {', '.join(w.name for w in wheels)}, not one wheel of {package}")
    return ours[0]


def install_wheel(wheel):
    import shlex
    import subprocess
    import sys

    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", str(wheel)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        log = Path(wheel).resolve().parent.parent / "install.log"  # beside the project's build.log
        log.write_text(f"$ {shlex.join(command)}\n{result.stdout}{result.stderr}", encoding="utf-8")
        raise ProjectError(f"installing {wheel} failed: pip's output is in {log}; install it again with: "
                           f"{shlex.join(command)}")


def _kafkaproto_version():
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kafkaproto")
    except PackageNotFoundError:
        raise ProjectError("kafkaproto is not installed here; an extension is built against an installed "
                           "kafkaproto") from None
