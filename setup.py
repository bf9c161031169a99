"""Build: generate the codecs from schemas/, then compile them with Cython.

KAFKAPROTO_PURE_BUILD=1 skips compiling; the pure-Python codecs are used then.

Compiled modules are cached by the hash of what makes them (their source, the
.pxd files they cimport, Cython, the compiler, flags and Python), in
~/.cache/kafkaproto/build or KAFKAPROTO_BUILD_CACHE: building the same sources
again (the test command's reinstall, a wheel from the sdist) copies them.
"""

import hashlib
import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from codegen.model import default_schema_dirs, load_model  # noqa: E402
from codegen.render import render, write_package  # noqa: E402

GENERATED = Path("kafkaproto") / "_generated"
# -O2 without debug info keeps a full build of the generated modules within a few minutes.
FLAGS = ["-O2", "-g0", "-Wno-unused-function"] if os.name == "posix" else []
DIRECTIVES = {"language_level": 3}
CACHE = Path(os.environ.get("KAFKAPROTO_BUILD_CACHE") or Path.home() / ".cache" / "kafkaproto" / "build")
CACHE_LIMIT = 400  # compiled modules kept; the least recently used go first


def generate():
    files = render(load_model(default_schema_dirs()))
    write_package(files, HERE / GENERATED)
    return sorted(name[:-4] for name in files if name.endswith(".pyx"))


def extensions(modules):
    if os.environ.get("KAFKAPROTO_PURE_BUILD") == "1":
        return []
    exts = [Extension("kafkaproto._core", ["kafkaproto/_core.pyx"], extra_compile_args=FLAGS),
            Extension("kafkaproto.records._crecords", ["kafkaproto/records/_crecords.pyx"], extra_compile_args=FLAGS),
            Extension("kafkaproto._cfields", ["kafkaproto/_cfields.pyx"], extra_compile_args=FLAGS),
            Extension("kafkaproto._cjsonview", ["kafkaproto/_cjsonview.pyx"], extra_compile_args=FLAGS),
            Extension("kafkaproto.records._ccrc32c", ["kafkaproto/records/_ccrc32c.pyx"],
                      extra_compile_args=FLAGS),
            Extension("kafkaproto.records._clz4", ["kafkaproto/records/_clz4.pyx"], extra_compile_args=FLAGS),
            Extension("kafkaproto.capture._cpcap", ["kafkaproto/capture/_cpcap.pyx"], extra_compile_args=FLAGS),
            Extension("kafkaproto.capture._cpackets", ["kafkaproto/capture/_cpackets.pyx"],
                      extra_compile_args=FLAGS),
            Extension("kafkaproto.capture._crecordrows", ["kafkaproto/capture/_crecordrows.pyx"],
                      extra_compile_args=FLAGS),
            Extension("kafkaproto.capture._carrowcols", ["kafkaproto/capture/_carrowcols.pyx"],
                      extra_compile_args=FLAGS)]
    exts += [Extension(f"kafkaproto._generated.{m}", [f"{GENERATED.as_posix()}/{m}.pyx"], extra_compile_args=FLAGS)
             for m in modules]
    return exts


def cache_key(ext):
    """What the compiled module depends on, hashed."""
    import Cython

    digest = hashlib.sha256()
    pxds = sorted((HERE / "kafkaproto").rglob("*.pxd"))
    for path in [HERE / s for s in ext.sources] + pxds:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for part in (ext.name, Cython.__version__, sys.version, sysconfig.get_platform(),
                 sysconfig.get_config_var("EXT_SUFFIX") or "", sysconfig.get_config_var("CC") or "",
                 repr(ext.extra_compile_args), repr(DIRECTIVES)):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:32]


class CachedBuildExt(build_ext):
    """Compiles what the cache lacks, in parallel; copies the rest from it."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def build_extensions(self):
        from Cython.Build import cythonize

        todo = []
        for ext in self.extensions:
            target = Path(self.get_ext_fullpath(ext.name))
            cached = CACHE / f"{ext.name}.{cache_key(ext)}{sysconfig.get_config_var('EXT_SUFFIX')}"
            if cached.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(cached, target)
                os.utime(cached)  # recently used
            else:
                todo.append((ext, target, cached))
        if not todo:
            return
        # Largest first, in translating and in compiling: the worker processes take modules in this order, and a
        # large one started last would leave the other cores idle while it finishes.
        todo.sort(key=lambda item: -sum(os.path.getsize(source) for source in item[0].sources))
        translated = cythonize([ext for ext, _, _ in todo], nthreads=os.cpu_count() or 1, quiet=True,
                               compiler_directives=DIRECTIVES)
        for (ext, _, _), c_ext in zip(todo, translated):
            ext.sources = c_ext.sources  # keep setuptools' own Extension objects, now pointing at the C
        self.extensions = [ext for ext, _, _ in todo]
        super().build_extensions()
        try:
            CACHE.mkdir(parents=True, exist_ok=True)
            for _, target, cached in todo:
                fd, tmp = tempfile.mkstemp(dir=CACHE, prefix=".tmp-")
                os.close(fd)
                shutil.copyfile(target, tmp)
                os.replace(tmp, cached)
            for old in sorted(CACHE.glob("kafkaproto*"), key=lambda p: p.stat().st_mtime)[:-CACHE_LIMIT]:
                old.unlink(missing_ok=True)
        except OSError as e:  # a cache that cannot be written only costs time
            print(f"kafkaproto: not caching compiled modules in {CACHE}: {e}", file=sys.stderr)


setup(ext_modules=extensions(generate()), cmdclass={"build_ext": CachedBuildExt})
