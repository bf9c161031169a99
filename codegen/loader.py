"""Reads spec files: JSON with ``//`` line comments, as Kafka writes them."""

import json
from pathlib import Path

from .errors import SpecError


def strip_comments(text):
    """Blank out ``//`` comments outside strings, keeping line and column numbers."""
    out = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def load_spec(path):
    """Parse one spec file; malformed JSON raises SpecError with line and column."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(path, "", f"cannot read file: {e}") from None
    try:
        data = json.loads(strip_comments(text))
    except json.JSONDecodeError as e:
        raise SpecError(path, f"line {e.lineno}, column {e.colno}", f"malformed JSON: {e.msg}") from None
    if not isinstance(data, dict):
        raise SpecError(path, "", "a spec must be a JSON object")
    return data


def spec_files(directories):
    """Every ``*.json`` below the given directories, in a stable order."""
    files = []
    for d in directories:
        d = Path(d)
        if d.is_file():
            files.append(d)
        elif d.is_dir():
            files.extend(sorted(p for p in d.rglob("*.json") if p.is_file()))
        else:
            raise SpecError(d, "", "no such file or directory")
    return files
