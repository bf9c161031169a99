"""The partition-deletion example built as an extension, for the tests that need it (fixtures, via conftest)."""

import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from kafkaproto import registry
from kafkaproto._impl import IMPL
from workers import made_once

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "partition-deletion" / "specs"


@pytest.fixture(scope="session")
def built_example(tmp_path_factory):
    """The example built by the README's command, its wheel installed into a folder of its own.

    When the suite runs the pure-Python codecs, the extension is built without compiling, as
    KAFKAPROTO_PURE_BUILD=1 asks."""
    work = made_once(tmp_path_factory, "extension", _build)
    built = json.loads((work / "built.json").read_text())
    (wheel,) = (work / "partition-deletion" / "dist").glob("*.whl")
    return types.SimpleNamespace(site=work / "site", wheel=wheel, **built)


def _build(work):
    env = {**os.environ, "KAFKAPROTO_PURE_BUILD": "1" if IMPL == "python" else "0"}
    command = [str(Path(sys.executable).parent / "kafkaproto-codegen"), "extend", str(EXAMPLE),
               "--name", "partition_deletion", "--out", str(work / "partition-deletion")]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=work)
    seconds = time.monotonic() - start
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = (work / "partition-deletion" / "dist").glob("*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(work / "site"),
                    str(wheel)], check=True)
    (work / "built.json").write_text(json.dumps({"seconds": seconds, "output": done.stdout}))


@pytest.fixture
def without_extensions():
    """The registry with kafkaproto's own specs only, for one test (the suite can run with
    KAFKAPROTO_EXTENSIONS); the extensions loaded before come back afterwards."""
    loaded = registry.extensions()
    for package in loaded:
        registry.unregister(package)
    yield
    for package in registry.extensions():
        registry.unregister(package)
    for package in loaded:
        registry.register(package)


@pytest.fixture
def extension(built_example, without_extensions, monkeypatch):
    """partition_deletion imported (so registered) for one test; the registry is put back afterwards."""
    monkeypatch.syspath_prepend(str(built_example.site))
    for name in [m for m in sys.modules if m.split(".")[0] == "partition_deletion"]:
        monkeypatch.delitem(sys.modules, name)
    import partition_deletion

    yield partition_deletion
    registry.unregister(partition_deletion)
    assert registry.extension_of("MetadataResponse") is None
