"""The import contracts in pyproject.toml ([tool.importlinter]) hold for the installed package."""

import logging
import sys
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
