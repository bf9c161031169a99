"""The README's examples run as written (those of "Extending kafkaproto" in tests/test_extensions.py, which
builds the extension they import)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
EXTENDING = "Extending kafkaproto"


def sections():
    """{heading: text} of the README's "## " sections."""
    parts = re.split(r"^## (.+)$", README.read_text(encoding="utf-8"), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def python_blocks(text):
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_readme_example_runs():
    blocks = [b for heading, text in sections().items() if heading != EXTENDING for b in python_blocks(text)]
    assert blocks, "README has no python example"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {})
