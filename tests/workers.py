"""What the parallel workers of one test run (pytest -n) share: a folder, and things made once in it."""

import os
import shutil

from filelock import FileLock


def run_dir(tmp_path_factory):
    """A folder this test run's workers share: each worker's own base folder sits in it."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def made_once(tmp_path_factory, name, make):
    """The folder run_dir/name, filled by make(folder) in the first worker that asks; the others wait for it."""
    folder = run_dir(tmp_path_factory) / name
    with FileLock(f"{folder}.lock"):
        if not (folder / ".made").is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / ".made").touch()
    return folder


def built_dist(tmp_path_factory):
    """The project's sdist and the wheel built from it (python -m build), once per run for every worker: two builds
    at once in the source tree would trip over each other's files."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    return made_once(tmp_path_factory, "dist", lambda out: subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(root)], check=True, capture_output=True, text=True))
