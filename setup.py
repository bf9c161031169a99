"""Build: generate the codecs from schemas/, then compile them with Cython.

KAFKAPROTO_PURE_BUILD=1 skips compiling; the pure-Python codecs are used then.
"""

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from codegen.model import default_schema_dirs, load_model  # noqa: E402
from codegen.render import render, write_package  # noqa: E402

GENERATED = os.path.join("kafkaproto", "_generated")


def generate():
    files = render(load_model(default_schema_dirs()))
    write_package(files, os.path.join(HERE, GENERATED))
    return sorted(name[:-4] for name in files if name.endswith(".pyx"))


class ParallelBuildExt(build_ext):
    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1


def extensions(modules):
    if os.environ.get("KAFKAPROTO_PURE_BUILD") == "1":
        return []
    from Cython.Build import cythonize

    # -O2 without debug info keeps a full build of the generated modules within a few minutes.
    flags = ["-O2", "-g0", "-Wno-unused-function"] if os.name == "posix" else []
    exts = [Extension("kafkaproto._core", ["kafkaproto/_core.pyx"], extra_compile_args=flags),
            Extension("kafkaproto.records._crecords", ["kafkaproto/records/_crecords.pyx"],
                      extra_compile_args=flags)]
    exts += [Extension(f"kafkaproto._generated.{m}", [f"{GENERATED}/{m}.pyx"], extra_compile_args=flags)
             for m in modules]
    return cythonize(exts, nthreads=os.cpu_count() or 1, quiet=True,
                     compiler_directives={"language_level": 3})


setup(ext_modules=extensions(generate()), cmdclass={"build_ext": ParallelBuildExt})
