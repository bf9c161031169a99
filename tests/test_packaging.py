"""The sdist and the wheel: each builds from the source tree alone, installs into a fresh venv, and runs."""

import fnmatch
import json
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from workers import built_dist

# Packaging builds its own venvs; it does not depend on the codecs in use (conftest.py: the pure-Python pass).
pytestmark = pytest.mark.above_the_codecs

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    pytest.importorskip("build")
    if os.environ.get("KAFKAPROTO_PURE") == "1":
        pytest.skip("packaging does not depend on the codecs in use; the compiled pass checks it")
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("needs the source tree")
    # Builds the sdist, then the wheel from the unpacked sdist: so the sdist must be self-contained.
    return built_dist(tmp_path_factory)


@pytest.mark.parametrize("kind", ["sdist", "wheel"])
def test_installs_into_a_fresh_venv_and_runs(dist, kind, tmp_path):
    (artifact,) = dist.glob("*.tar.gz" if kind == "sdist" else "*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(artifact)], check=True,
                   capture_output=True, text=True)
    check = subprocess.run([str(env_dir / "bin" / "kafkaproto")], cwd=tmp_path, capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k != "KAFKAPROTO_PURE"})
    assert check.returncode == 0, check.stderr
    assert "compiled (Cython) codecs" in check.stdout and check.stdout.rstrip().endswith("-> ok"), check.stdout
    # The generator carries kafkaproto's specs, which extensions are checked against.
    specs = subprocess.run([str(python), "-c", "from kafkaproto_codegen.extend import BuiltinSpecs; "
                            "print(len(BuiltinSpecs().raw))"], cwd=tmp_path, capture_output=True, text=True)
    assert specs.stdout.strip() == str(len(list((ROOT / "schemas").rglob("*.json")))), specs.stderr
    if kind == "wheel":
        files = subprocess.run([str(python), "-c", "import kafkaproto, pathlib; "
                                "print(*sorted(p.suffix for p in pathlib.Path(kafkaproto.__file__).parent.rglob('*')"
                                " if p.is_file()))"], cwd=tmp_path, capture_output=True, text=True,
                               check=True).stdout.split()
        assert ".c" not in files and ".pyx" not in files, "the wheel ships build sources"


# ---- the README's install commands ------------------------------------------------------------------------------

README = ROOT / "README.md"
OPTIONS_WITH_A_VALUE = ("--target", "-t")
WORD = re.compile(r"[ \t]+('[^']*'|\"[^\"]*\"|[^\s'\"`()&;#|]+)")


def project():
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def readme_pip_installs():
    """Every `pip install` of the README as (line number, its arguments): in code blocks, in their comments, and in
    prose, where an inline command may go on over the next line."""
    lines = README.read_text(encoding="utf-8").splitlines()
    found, in_block = [], False
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            in_block = not in_block
            continue
        for match in re.finditer(r"\bpip install\b", line):
            rest = line[match.end():]
            if not in_block:
                if "`" not in rest and number < len(lines):
                    rest += " " + lines[number]
                rest = rest.split("`")[0]
            # Words up to what ends the command: a comment, &&, a closing parenthesis, the end of inline code.
            args, at = [], 0
            while word := WORD.match(rest, at):
                args.append(word.group(1))
                at = word.end()
            found.append((number, args))
    return found


def requirements(args):
    """The requirements (paths, names) among pip's arguments, quotes removed."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in OPTIONS_WITH_A_VALUE:
            skip = True
        elif not arg.startswith("-"):
            out.append(arg.strip("'\""))
    return out


def split_extras(requirement):
    target, _, extras = requirement.partition("[")
    return target, [e.strip() for e in extras.rstrip("]").split(",") if e.strip()]


def made_by_the_readme(path, text, version):
    """True for a wheel the README's own commands make: kafkaproto's (python -m build writes dist/), or an
    extension's (kafkaproto-codegen extend --out DIR writes DIR/dist/)."""
    folder, _, name = path.rpartition("/")
    if folder == "dist":
        return "python -m build" in text and name == f"kafkaproto-{version}-*.whl"
    return folder.endswith("/dist") and f"--out {folder[:-len('/dist')]}" in text and name.endswith("-*.whl")


def test_every_readme_pip_install_names_what_exists():
    """Each `pip install` of the README installs on a fresh machine from a checkout: `.` or a wheel the README's
    commands build, with extras pyproject.toml defines; kafkaproto by name (it is not on PyPI) only beside such a
    path, which provides it."""
    meta = project()
    extras, version = set(meta["optional-dependencies"]), meta["version"]
    text = README.read_text(encoding="utf-8")
    installs = readme_pip_installs()
    assert len(installs) == text.count("pip install"), "a pip install the parser missed"
    problems, seen = [], set()
    for number, args in installs:
        reqs = requirements(args)
        if not reqs:
            problems.append(f"README.md:{number}: pip install of nothing: {args}")
        kafkaproto_paths = [r for r in reqs if split_extras(r)[0] == "." or
                            split_extras(r)[0].startswith("dist/kafkaproto-")]
        for req in reqs:
            target, wanted = split_extras(req)
            seen.add(req)
            if re.fullmatch(r"[A-Z_]+", target):
                continue  # a placeholder the text explains (DIR)
            if target == "." or target.startswith("dist/kafkaproto-"):
                if target != "." and not made_by_the_readme(target, text, version):
                    problems.append(f"README.md:{number}: {target} is not the wheel `python -m build` makes "
                                    f"(dist/kafkaproto-{version}-*.whl)")
            elif "/" in target or target.endswith(".whl"):
                if not list(ROOT.glob(target)) and not made_by_the_readme(target, text, version):
                    problems.append(f"README.md:{number}: {target} is neither in the checkout nor made by a "
                                    "command the README gives")
                continue
            elif target == meta["name"]:
                if not kafkaproto_paths:
                    problems.append(f"README.md:{number}: {req!r} alone: kafkaproto is not on PyPI; install it "
                                    "from the checkout ('.') or a built wheel")
            for extra in wanted:
                if extra not in extras:
                    problems.append(f"README.md:{number}: {req}: pyproject.toml has no extra {extra!r}")
    assert not problems, "\n".join(problems)
    assert {".", ".[test]", ".[codegen]", ".[arrow]", ".[report]", ".[spark]", ".[bench]"} <= seen, seen


def test_every_extra_the_code_names_exists():
    """The extras error messages tell users to install are pyproject.toml's."""
    extras = set(project()["optional-dependencies"])
    named = {}
    for path in [*(ROOT / "kafkaproto").rglob("*.py"), *(ROOT / "codegen").glob("*.py")]:
        if "_generated" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        for pattern in (r"kafkaproto\[(\w+)\]", r"require\(\s*\"[\w.]+\",\s*\"(\w+)\"", r"install_hint\(['\"](\w+)"):
            for extra in re.findall(pattern, text):
                named.setdefault(extra, path.relative_to(ROOT))
    assert {"arrow", "report", "spark", "codegen"} <= set(named), named
    assert not {e: p for e, p in named.items() if e not in extras}, named


def test_a_built_wheel_installs_with_an_extra_as_the_readme_says(dist):
    """`pip install dist/kafkaproto-VERSION-*.whl 'kafkaproto[codegen]'`: the wheel, with the extra's packages
    (resolved only, not installed)."""
    text = README.read_text(encoding="utf-8")
    (wheel,) = dist.glob("*.whl")
    commands = [requirements(args) for _, args in readme_pip_installs()
                if any(r.startswith("dist/kafkaproto-") for r in requirements(args))]
    assert commands, "the README does not say how to install from a built wheel"
    for reqs in commands:
        for req in reqs:
            if req.startswith("dist/"):
                assert fnmatch.fnmatch(wheel.name, req[len("dist/"):]), (req, wheel.name)
    assert "python -m build" in text
    with_extra = next(reqs for reqs in commands if any("[" in r for r in reqs))
    args = [str(wheel) if r.startswith("dist/") else r for r in with_extra]
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                           "--report", "-", *args], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    chosen = {item["metadata"]["name"].lower(): item["download_info"]["url"]
              for item in json.loads(done.stdout)["install"]}
    assert chosen["kafkaproto"] == wheel.as_uri(), chosen
    extra = split_extras(next(r for r in with_extra if "[" in r))[1][0]
    for dependency in project()["optional-dependencies"][extra]:
        assert re.match(r"[\w-]+", dependency).group().lower() in chosen, (dependency, chosen)


def test_the_spark_recipe_ships_kafkaproto_as_a_folder(dist, tmp_path):
    """"Captures at cluster scale: Spark": `pip install --target kp` of the checkout or a built wheel, then
    PYTHONPATH=kp, as the executors get it; here with the wheel (tests/test_spark_cluster.py runs the job)."""
    recipe = [requirements(args) for _, args in readme_pip_installs() if "--target" in args]
    assert recipe, "the README has no pip install --target"
    for reqs in recipe:
        assert reqs and all(r == "." or r.startswith("dist/kafkaproto-") for r in reqs), reqs
    (wheel,) = dist.glob("*.whl")
    kp = tmp_path / "kp"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(kp), str(wheel)],
                   check=True, capture_output=True, text=True)
    env = {k: v for k, v in os.environ.items() if k != "KAFKAPROTO_PURE"}
    env["PYTHONPATH"] = str(kp)
    probe = "import kafkaproto, kafkaproto.spark; print(kafkaproto.__file__, kafkaproto.compiled())"
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    where, compiled = done.stdout.split()
    assert Path(where).is_relative_to(kp) and compiled == "True", done.stdout


# ---- optional dependencies: a missing one is named with its extra ----------------------------------------------

HIDE = """
import sys
HIDDEN = {hidden!r}
for name in [m for m in sys.modules if m.split(".")[0] in HIDDEN]:
    del sys.modules[name]


class NotInstalled:
    '''Modules looked for as though they were not installed.'''

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)


sys.meta_path.insert(0, NotInstalled())
"""

CLI = "from kafkaproto.__main__ import run\nsys.argv = ['kafkaproto', *sys.argv[1:]]\nsys.exit(run())\n"
CAPTURE = ROOT / "tests" / "data" / "captures" / "kafka-python.pcap"


def without(hidden, code, *args, cwd):
    """Run code in a Python where the hidden modules are not installed."""
    env = {k: v for k, v in os.environ.items() if k != "KAFKAPROTO_PURE"}
    return subprocess.run([sys.executable, "-c", HIDE.format(hidden=set(hidden)) + code, *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=300)


def hint(extra):
    return f"pip install 'kafkaproto[{extra}]' (from a checkout: pip install '.[{extra}]')"


@pytest.mark.parametrize("hidden, args, what, extra, output", [
    ("pyarrow", ["--format", "csv", "--output", "out.csv"], "--format csv needs pyarrow", "arrow", "out.csv"),
    ("pyarrow", ["--output", "out.parquet"], "--format parquet needs pyarrow", "arrow", "out.parquet"),
    ("pyarrow", ["--records", "--format", "jsonl", "--output", "out.jsonl"], "--records needs pyarrow", "arrow",
     "out.jsonl"),
    ("plotly", ["--report", "report.html"], "--report needs plotly", "report", "report.html"),
], ids=["csv", "parquet", "records", "report"])
def test_the_capture_command_names_the_extra_it_misses(tmp_path, hidden, args, what, extra, output):
    done = without([hidden], CLI, "capture", str(CAPTURE), *args, cwd=tmp_path)
    assert done.returncode != 0 and done.stderr == f"kafkaproto: error: {what}: {hint(extra)}\n", done.stderr
    assert not (tmp_path / output).exists()


def test_the_capture_command_needs_no_extra_for_json_rows_and_the_summary(tmp_path):
    for args in (["--format", "jsonl", "--output", "out.jsonl"], []):
        done = without(["pyarrow", "plotly", "pyspark"], CLI, "capture", str(CAPTURE), *args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.jsonl").stat().st_size > 0


@pytest.mark.parametrize("hidden, statement, what, extra", [
    ("pyspark", "import kafkaproto.spark", "kafkaproto.spark needs pyspark", "spark"),
    ("pyarrow", "import kafkaproto.spark", "kafkaproto.spark needs pyarrow", "spark"),
    ("pyarrow", "from kafkaproto.capture import tables; tables.exchange_schema()",
     "kafkaproto.capture.tables needs pyarrow", "arrow"),
    ("pyarrow", "from kafkaproto import records; records.to_arrow(b'')", "records.to_arrow needs pyarrow", "arrow"),
], ids=["spark-pyspark", "spark-pyarrow", "tables", "records"])
def test_the_library_names_the_extra_it_misses(tmp_path, hidden, statement, what, extra):
    code = f"try:\n    {statement}\nexcept ImportError as e:\n    print(e)\n    sys.exit(3)\n"
    done = without([hidden], code, cwd=tmp_path)
    assert done.returncode == 3 and done.stdout == f"{what}: {hint(extra)}\n", done.stdout + done.stderr
