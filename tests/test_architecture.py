"""The import contracts in pyproject.toml ([tool.importlinter]) hold for the installed package."""

import sys
from pathlib import Path

import pytest

CONFIG = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_imports_point_one_way(monkeypatch):
    cli = pytest.importorskip("importlinter.cli")
    # import-linter puts the working directory first on sys.path; processes started later in this
    # run (the fuzzer's workers) would then import the source checkout instead of the installed package.
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert cli.lint_imports(config_filename=str(CONFIG)) == 0, "an import breaks a contract (see the report above)"
