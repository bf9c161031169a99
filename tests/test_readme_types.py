"""The README's Python examples type-check as a user's code would: ``mypy --strict`` and pyright (its standard mode)
find no error in any of them, against the installed kafkaproto. And the package's stubs (``*.pyi``) say what the
modules beside them hold: mypy's stubtest compares the two.

Each example is written to a module of its own in a temporary folder, outside the checkout, and the checkers run
there. A source checkout installed in development mode (pip install -e) is found through an import hook that type
checkers do not run, so for that case the package's folder is named to them; a normal install is found where the
interpreter finds it.

Without mypy or pyright these tests are skipped, except in CI (CI=true), where they fail.
"""

import ast
import importlib.util
import json
import os
import re
import site
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.above_the_codecs  # the same stubs and annotations whichever codecs run

README = Path(__file__).resolve().parents[1] / "README.md"

# "Extending kafkaproto" imports an extension built from examples/partition-deletion, and uses a field the
# extension adds to kafkaproto's own MetadataResponse when it is imported (``mode``). A type checker sees
# kafkaproto's classes as its stubs describe them, without that field, so these examples cannot type-check as
# written. (tests/test_extensions.py builds the extension and runs them.)
NOT_CHECKED = {"Extending kafkaproto"}

# A block labelled with one of these keys continues the block with the other label: the streaming example reads
# from the session the Spark example makes.
CONTINUES = {"stream": "spark"}

# Libraries the examples use that ship no type information (kafka-python): their names are typed Any, as a
# user's mypy configuration would say for them. kafkaproto itself gets no such allowance.
UNTYPED_LIBRARIES = ["kafka", "kafka.*"]

BLOCK = re.compile(r"^(?P<indent>[ \t]*)```python(?P<label>[^\n]*)\n(?P<body>.*?)^(?P=indent)```", re.M | re.S)

# What stubtest may find that is no fault of a stub.
STUBTEST_ALLOWED = r"""
# Compiled (Cython) classes: their pickling helpers, and signatures Cython does not expose.
.*\.__reduce_cython__
.*\.__setstate_cython__
kafkaproto\.records\.RecordBatchBuilder\.__init__
# Private modules under stubbed packages, which have no stubs of their own.
kafkaproto\.records\._.*
kafkaproto\.capture\.pcap\..*
# Filled in from the registry when the module is imported.
kafkaproto\.messages\.__all__
kafkaproto\.metadata\.__all__
kafkaproto\.coordinator_records\.__all__
"""


def examples():
    """[(module name, source)] of the README's Python examples, in order."""
    text = README.read_text(encoding="utf-8")
    headings = [(m.start(), m.group(1).strip()) for m in re.finditer(r"^## (.+)$", text, re.M)]
    by_label, out = {}, []
    for m in BLOCK.finditer(text):
        section = next((title for at, title in reversed(headings) if at < m.start()), "")
        label = m.group("label").strip()
        source = textwrap.dedent(m.group("body"))
        if label:
            by_label[label] = source
        if section in NOT_CHECKED:
            continue
        if label in CONTINUES:
            source = by_label[CONTINUES[label]] + "\n" + source
        slug = re.sub(r"\W+", "_", section.lower()).strip("_") or "intro"
        out.append((f"readme_example_{len(out) + 1:02d}_{slug}", source))
    return out


def _checker(module):
    if importlib.util.find_spec(module) is None:
        message = f"{module} is not installed (pip install '.[test]' brings it)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)


def _package():
    spec = importlib.util.find_spec("kafkaproto")
    assert spec is not None and spec.submodule_search_locations, "kafkaproto is not installed"
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _search_path(folder):
    """The folder to name to the checkers so that they find kafkaproto, or None when the interpreter's
    site-packages hold it (a normal install)."""
    package = _package()
    installed = {Path(p).resolve() for p in [*site.getsitepackages(), site.getusersitepackages(),
                                             sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]}
    if package.parent in installed:
        return None
    # A development install: a folder holding kafkaproto alone, so that nothing else of the checkout is visible.
    found = folder / "site"
    found.mkdir()
    (found / "kafkaproto").symlink_to(package, target_is_directory=True)
    return found


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """The temporary folder holding one module per README example, and the folder kafkaproto is found in."""
    folder = tmp_path_factory.mktemp("readme_types")
    modules = examples()
    assert len(modules) >= 5, "the README's Python examples were not found"
    for name, source in modules:
        (folder / f"{name}.py").write_text(source, encoding="utf-8")
    return folder, [f"{name}.py" for name, _ in modules], _search_path(folder)


def _mypy_cache(request, name, folder):
    """A cache kept between runs where pytest keeps one: the libraries the examples use (pyspark, pandas, ...)
    are analysed once."""
    cache = getattr(request.config, "cache", None)
    return cache.mkdir(f"readme_types_{name}") if cache is not None else folder / f".{name}_cache"


def _run(command, folder, search=None):
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    if search is not None:
        env["MYPYPATH"] = str(search)
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=1200)


def test_mypy_strict(checked, request):
    _checker("mypy")
    folder, files, search = checked
    config = ["[mypy]", "strict = True", f"cache_dir = {_mypy_cache(request, 'mypy', folder)}"]
    if search is not None:
        # Found through mypy_path, kafkaproto would be checked as the project's own code: it is a library here,
        # read as an installed package is (its errors are not the user's).
        config += [f"mypy_path = {search}", "[mypy-kafkaproto.*]", "follow_imports = silent"]
    config += [f"[mypy-{','.join(UNTYPED_LIBRARIES)}]", "ignore_missing_imports = True"]
    (folder / "mypy.ini").write_text("\n".join(config) + "\n", encoding="utf-8")
    result = _run([sys.executable, "-m", "mypy", "--strict", "--config-file", "mypy.ini", *files], folder)
    if result.returncode:
        pytest.fail(f"mypy --strict on the README's examples ({folder}):\n{result.stdout}{result.stderr}",
                    pytrace=False)


def test_pyright(checked):
    _checker("pyright")
    folder, files, search = checked
    config = {"include": files, "typeCheckingMode": "standard",
              "pythonVersion": f"{sys.version_info.major}.{sys.version_info.minor}"}
    if search is not None:
        config["extraPaths"] = [str(search)]
    (folder / "pyrightconfig.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    result = _run([sys.executable, "-m", "pyright", "--outputjson", "--pythonpath", sys.executable,
                   "--project", "pyrightconfig.json"], folder)
    try:
        report = json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"pyright did not run ({result.returncode}):\n{result.stdout}{result.stderr}", pytrace=False)
    errors = [d for d in report["generalDiagnostics"] if d["severity"] == "error"]
    if errors or report["summary"]["errorCount"]:
        shown = "\n".join(f"{Path(d['file']).name}:{d['range']['start']['line'] + 1}: {d['message']} "
                          f"({d.get('rule', '')})" for d in errors)
        pytest.fail(f"pyright on the README's examples ({folder}):\n{shown}\n{result.stderr}", pytrace=False)


def _stubbed_modules():
    """The modules under kafkaproto that have stubs of their own (the generated ones aside: the build writes
    them from the same specs as their classes), without those stubtest reaches from their package's."""
    package = _package()
    names = set()
    for stub in package.rglob("*.pyi"):
        parts = stub.relative_to(package).with_suffix("").parts
        if parts[0] == "_generated":
            continue
        names.add(".".join(("kafkaproto", *parts[:-1]) if parts[-1] == "__init__" else ("kafkaproto", *parts)))
    names.discard("kafkaproto")  # the package's own names are compared in test_package_stub_names
    return sorted(n for n in names if not any(n.startswith(other + ".") for other in names))


def test_stubs_match_the_modules(tmp_path, request):
    """Every stub against the module it stands for: its names, their kinds and their signatures (stubtest), so
    that a function added or changed in a module without its stub fails here rather than in a user's checker."""
    _checker("mypy")
    modules = _stubbed_modules()
    assert "kafkaproto.records" in modules, modules
    search = _search_path(tmp_path)
    (tmp_path / "allowlist.txt").write_text(STUBTEST_ALLOWED, encoding="utf-8")
    # The modules' own untyped code is not what is compared here: only the stubs against what the modules hold.
    cache = _mypy_cache(request, "stubtest", tmp_path)
    (tmp_path / "mypy.ini").write_text(f"[mypy]\nignore_missing_imports = True\ncache_dir = {cache}\n"
                                       "[mypy-kafkaproto.*]\nignore_errors = True\n", encoding="utf-8")
    result = _run([sys.executable, "-m", "mypy.stubtest", "--concise", "--ignore-disjoint-bases",
                   "--ignore-unused-allowlist", "--allowlist", "allowlist.txt", "--mypy-config-file", "mypy.ini",
                   *modules], tmp_path, search)
    if result.returncode:
        pytest.fail(f"stubtest: these stubs no longer say what their modules hold ({', '.join(modules)}); update "
                    f"the .pyi files:\n{result.stdout}{result.stderr}", pytrace=False)


def test_package_stub_names():
    """kafkaproto/__init__.pyi names what the package exports (stubtest would walk every module below it)."""
    import kafkaproto

    tree = ast.parse((_package() / "__init__.pyi").read_text(encoding="utf-8"))
    declared = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            declared.update(a.asname for a in node.names if a.asname == a.name)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            declared.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            declared.add(node.target.id)
    stub_all = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets))
    assert sorted(stub_all) == sorted(kafkaproto.__all__), "__init__.pyi's __all__ differs from the package's"
    missing = [name for name in [*kafkaproto.__all__, "__version__"] if name not in declared]
    assert not missing, f"kafkaproto/__init__.pyi does not declare {missing}"
    extra = [name for name in declared if not hasattr(kafkaproto, name)]
    assert not extra, f"kafkaproto/__init__.pyi declares {extra}, which the package does not have"
