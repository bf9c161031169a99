"""The import contracts in pyproject.toml ([tool.importlinter]) hold for the installed package."""

from pathlib import Path

import pytest

CONFIG = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_imports_point_one_way():
    cli = pytest.importorskip("importlinter.cli")
    assert cli.lint_imports(config_filename=str(CONFIG)) == 0, "an import breaks a contract (see the report above)"
