"""Model -> source files, through the jinja2 templates in codegen/templates.

The generated package holds the same classes twice: as Cython (``_cN.pyx``,
compiled at install) and as pure Python (``_pyN.py``, the fallback). Specs are
split into a few modules so a 2-core build compiles them in parallel.
"""

import os
import tempfile
from pathlib import Path

import jinja2

from .versions import Versions

TEMPLATES = Path(__file__).resolve().parent / "templates"
MODULE_COUNT = 8

FIXED_SIZE = {"bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
              "int64": 8, "float64": 8, "uuid": 16}


class Cond:
    """Python/Cython source for "version v is in this range", given the spec's valid range."""

    def __init__(self, valid):
        self.valid = valid

    def __call__(self, rng):
        r = rng.intersect(self.valid)
        if r.empty:
            return "False"
        lo, hi = r.lo, r.hi
        if lo <= self.valid.lo and hi >= self.valid.hi:
            return "True"
        if lo <= self.valid.lo:
            return f"v <= {hi}"
        if hi >= self.valid.hi:
            return f"v >= {lo}"
        if lo == hi:
            return f"v == {lo}"
        return f"{lo} <= v <= {hi}"


def _pair(r):
    """An inclusive (lo, hi) pair; (1, 0) for an empty range."""
    return (r.lo, r.hi) if not r.empty else (1, 0)


class FieldView:
    """What the templates need of one field, precomputed."""

    def __init__(self, f, index, spec, cond):
        self.f = f
        self.index = index
        self.attr = f.attr
        self.name = f.name
        self.kind = "struct" if f.struct is not None else f.elem
        self.array = f.is_array
        self.struct_class = f.struct.class_name if f.struct is not None else None
        untagged = f.present if f.tagged.empty else f.present.intersect(Versions(0, f.tagged.lo - 1))
        self.main = cond(untagged)
        self.tagged = cond(f.tagged) if f.tag is not None else "False"
        self.tag = f.tag
        self.tag_row = f"({f.tag}, {_pair(f.tagged)[0]}, {_pair(f.tagged)[1]})" if f.tag is not None else None
        flex = f.flexible_override if f.flexible_override is not None else spec.flexible
        # Conditions inside the field's own branch only need to tell apart the versions
        # that reach it, which often makes them constants.
        in_main, in_tag = Cond(untagged), Cond(f.tagged)
        self.nullable = in_main(f.nullable)
        self.compact = in_main(flex)
        self.nullable_tagged = in_tag(f.nullable)
        self.ignorable = f.ignorable
        # Smallest encoding of one array item, so a lying array length fails before allocating.
        self.min_fixed = 1 if f.struct is not None else FIXED_SIZE.get(f.elem)
        self.min_long = 2 if f.elem == "string" else 4  # non-compact string/bytes length prefix
        d = f.default
        self.default_kind = (
            "list" if d == [] else "struct" if d == "struct" else "uuid" if d == "zero" else "value")
        self.default = repr(d) if self.default_kind == "value" else None
        # The FieldInfo row for _generic: the default as a source expression.
        default_src = {"list": "_LIST", "struct": "_STRUCT", "uuid": "_ZERO"}.get(self.default_kind, self.default)
        t = f.tagged if f.tag is not None else Versions.NONE
        p, n, t, fl = (_pair(r) for r in (f.present, f.nullable, t, flex.intersect(f.present)))
        self.info = (
            f"_FieldInfo({f.attr!r}, {f.name!r}, {self.kind!r}, {f.is_array}, {self.struct_class or 'None'}, "
            f"{p[0]}, {p[1]}, {n[0]}, {n[1]}, {f.tag!r}, {t[0]}, {t[1]}, {fl[0]}, {fl[1]}, "
            f"{f.ignorable}, {default_src})"
        )


def min_item(fv, compact):
    """Source for the smallest item size of an array field, given its compact condition."""
    if fv.min_fixed:
        return str(fv.min_fixed)
    if compact == "True":
        return "1"
    if compact == "False":
        return str(fv.min_long)
    return f"(1 if {compact} else {fv.min_long})"


class StructView:
    def __init__(self, st, spec, cond):
        self.s = st
        self.class_name = st.class_name
        self.qualname = st.qualname
        self.fields = [FieldView(f, i, spec, cond) for i, f in enumerate(st.fields)]
        self.tagged = sorted((fv for fv in self.fields if fv.tag is not None and fv.tagged != "False"),
                             key=lambda fv: fv.tag)
        self.flexible = cond(spec.flexible)
        fl = spec.flexible.intersect(spec.valid)
        self.flex_range = (fl.lo, fl.hi) if not fl.empty else (1, 0)


class SpecView:
    def __init__(self, spec):
        self.spec = spec
        self.name = spec.name
        cond = Cond(spec.valid)
        self.structs = [StructView(st, spec, cond) for st in spec.structs]
        self.root = self.structs[-1]
        self.nested = self.structs[:-1]
        v = spec.valid
        self.valid_range = f"range({v.lo}, {v.hi + 1})" if not v.empty else "range(0)"
        fl = spec.flexible.intersect(v)
        self.flexible_range = f"range({fl.lo}, {fl.hi + 1})" if not fl.empty else "range(0)"


def _environment():
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["min_item"] = min_item
    return env


def split_modules(specs, count=MODULE_COUNT):
    """Deal specs into modules of similar size (by field count), deterministically."""
    weighted = sorted(specs, key=lambda s: (-sum(len(st.fields) + 4 for st in s.structs), s.name))
    buckets = [[] for _ in range(min(count, max(1, len(specs))))]
    loads = [0] * len(buckets)
    for s in weighted:
        i = loads.index(min(loads))
        buckets[i].append(s)
        loads[i] += sum(len(st.fields) + 4 for st in s.structs)
    return [sorted(b, key=lambda s: s.name) for b in buckets]


def render(specs, package="kafkaproto._generated"):
    """Return {relative file name: text} for the generated package."""
    env = _environment()
    modules = split_modules(specs)
    files = {}
    for i, group in enumerate(modules):
        views = [SpecView(s) for s in group]
        files[f"_c{i}.pyx"] = env.get_template("module.pyx.j2").render(specs=views, index=i)
        files[f"_py{i}.py"] = env.get_template("module.py.j2").render(specs=views, index=i)
    files["__init__.py"] = env.get_template("package.py.j2").render(
        specs=specs, modules=[[s.name for s in g] for g in modules], package=package)
    return files


GENERATED = ("_c*.pyx", "_c*.c", "_c*.so", "_c*.pyd", "_py*.py", "__init__.py")


def write_package(files, out_dir):
    """Write the rendered files (each through a temporary file and a rename) and
    remove generated files of an earlier run that this one no longer makes."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in sorted(files.items()):
        target = out / name
        if target.exists() and target.read_text(encoding="utf-8") == text:
            continue  # unchanged: keep the timestamp so builds stay incremental
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=out)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    for pattern in GENERATED:
        for p in out.glob(pattern):
            stem = p.name.split(".")[0]
            if p.name not in files and f"{stem}.pyx" not in files:
                p.unlink()
