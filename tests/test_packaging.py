"""The sdist and the wheel: each builds from the source tree alone, installs into a fresh venv, and runs."""

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from workers import made_once

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
    # Builds the sdist, then the wheel from the unpacked sdist: so the sdist must be self-contained. Once for all
    # workers: two builds at once in the source tree would trip over each other's files.
    return made_once(tmp_path_factory, "dist", lambda out: subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], check=True, capture_output=True, text=True))


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
