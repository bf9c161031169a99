"""The import contracts in pyproject.toml ([tool.importlinter]) hold for the installed package."""

import logging
import re
import sys
import tomllib
from pathlib import Path

import pytest

# Import contracts hold whichever codecs run (conftest.py: the pure-Python pass).
pytestmark = pytest.mark.above_the_codecs

CONFIG = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_imports_point_one_way(monkeypatch):
    cli = pytest.importorskip("importlinter.cli")
    # import-linter puts the working directory first on sys.path; processes started later in this
    # run (the fuzzer's workers) would then import the source checkout instead of the installed package.
    monkeypatch.setattr(sys, "path", list(sys.path))
    # Its command line also runs logging.config.dictConfig, which disables every logger that exists then
    # (the broker's, among them) for the rest of the run; put them back as they were.
    loggers = {name: (logger.disabled, logger.level) for name, logger in logging.Logger.manager.loggerDict.items()
               if isinstance(logger, logging.Logger)}
    root = logging.getLogger()
    root_state = (root.level, list(root.handlers))
    try:
        assert cli.lint_imports(config_filename=str(CONFIG)) == 0, "an import breaks a contract (see the report above)"
    finally:
        for name, (disabled, level) in loggers.items():
            logger = logging.getLogger(name)
            logger.disabled, logger.level = disabled, level
        root.setLevel(root_state[0])
        root.handlers[:] = root_state[1]


PACKAGE = CONFIG.parent / "kafkaproto"
# A compiled module stands on the layer of its pure twin; the others on their package's.
TWINS = {"_core": "_pycore", "_cfields": "fields", "_cjsonview": "jsonview"}
IMPORT = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+c?import\b|c?import\s+([\w.]+))", re.M)


def _layer_of(module):
    """'kafkaproto.records._crecords' -> 'records': the name the layers list it under."""
    part = module.split(".")[1]
    return TWINS.get(part, part)


def test_compiled_modules_import_as_the_layers_allow():
    """import-linter reads Python sources only: the imports of the .pyx modules are held to the same layers here
    (a layer may import those below it, and its ':' siblings, never those above or its '|' siblings)."""
    layers = tomllib.loads(CONFIG.read_text())["tool"]["importlinter"]["contracts"][0]["layers"]
    level, independent = {}, {}
    for index, layer in enumerate(layers):
        sep = "|" if "|" in layer else ":"
        for name in layer.split(sep):
            level[name.strip()], independent[name.strip()] = index, sep == "|"
    checked = 0
    for pyx in sorted(PACKAGE.rglob("*.pyx")):
        if "_generated" in pyx.parts:
            continue
        module = ".".join(pyx.relative_to(PACKAGE.parent).with_suffix("").parts)
        package = module.rsplit(".", 1)[0].split(".")
        for match in IMPORT.finditer(pyx.read_text()):
            target = match.group(1) or match.group(2)
            dots = len(target) - len(target.lstrip("."))
            if dots:
                target = ".".join(package[:len(package) - dots + 1] + ([target[dots:]] if target[dots:] else []))
            if not target.startswith("kafkaproto."):
                continue  # the standard library, Cython's and other packages
            importer, imported = _layer_of(module), _layer_of(target)
            checked += 1
            if importer == imported:
                continue
            assert importer in level and imported in level, f"{pyx.name}: {module} or {target} is on no layer"
            allowed = level[importer] < level[imported] or (
                level[importer] == level[imported] and not independent[importer])
            assert allowed, f"{pyx.relative_to(PACKAGE.parent)} imports {target}, above or beside its layer"
    assert checked > 10


def test_the_only_import_circle_is_the_handlers_registration():
    """Modules that import each other, directly or round a loop, are one room split in two: the broker's handlers
    registering themselves with dispatch (which imports them all) is the one circle the layout keeps."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("kafkaproto")
    imports = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    circles = []
    # Tarjan's strongly connected components, iteratively (the import graph is deep enough to hit recursion limits).
    index, low, on_stack, stack, counter = {}, {}, set(), [], 0
    for root in sorted(imports):
        if root in index:
            continue
        work = [(root, iter(sorted(imports[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(imports[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    members = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.add(member)
                        if member == node:
                            break
                    if len(members) > 1:
                        circles.append(sorted(members))
    registration = [c for c in circles if "kafkaproto.broker.dispatch" in c and
                    all(m == "kafkaproto.broker.dispatch" or m.startswith("kafkaproto.broker.handlers") for m in c)]
    others = [c for c in circles if c not in registration]
    assert len(registration) == 1 and not others, f"import circles besides the handlers' registration: {others}"
