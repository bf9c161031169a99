"""What a setting is, and how its value is read and checked, as Kafka's ConfigDef does: a Setting's type, range
and allowed values, and the errors that name what is wrong (config.py defines the broker's settings with them)."""

import re
from dataclasses import dataclass


class ConfigError(ValueError):
    """Settings that are missing, unreadable or out of range: one line per wrong setting, each naming the key and
    where its value came from. ``problems`` holds them (Problem objects, or strings)."""

    def __init__(self, problems):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        lines = [str(p) for p in self.problems]
        if len(lines) == 1:
            message = lines[0]
        else:
            message = f"{len(lines)} settings are wrong:\n" + "\n".join("  " + line for line in lines)
        super().__init__(message)


class Problem:
    """One wrong setting: the key, the line that says what is wrong with it, and whether Apache Kafka refuses
    the value too (False: Kafka takes it, but this broker does not implement it or would fail on it later)."""

    def __init__(self, key, text, kafka=True):
        self.key, self.text, self.kafka = key, text, kafka

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"Problem({self.key!r}, {self.text!r}, kafka={self.kafka})"


class Invalid(ValueError):
    """Why a value is refused, without the key; kafka=False when Kafka would take it."""

    def __init__(self, why, kafka=True):
        super().__init__(why)
        self.kafka = kafka


# The range of each integer type, as Java's.
INTEGER_BOUNDS = {"short": (-2**15, 2**15 - 1), "int": (-2**31, 2**31 - 1), "long": (-2**63, 2**63 - 1)}
PYTHON_TYPES = {"short": int, "int": int, "long": int, "double": float, "boolean": bool}
WHOLE = re.compile(r"[+-]?[0-9]+")  # Integer.parseInt's syntax, ASCII digits only
DECIMAL = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")
JAVA_CLASS = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")


def split_list(text):
    """A LIST value's items, as Kafka splits them: on commas, each trimmed; nothing at all is no items."""
    return [] if not text.strip() else [item.strip() for item in text.split(",")]


@dataclass(frozen=True)
class Setting:
    """A broker setting as Kafka's ConfigDef defines it.

    type: Kafka's type name; default: the value (parsed) when the key is not given; topic_key: the per-topic
    config this broker setting is the default of. Checks, in order: at_least / at_most (values in ``also`` pass
    whatever the range), one_of (the values Kafka allows; for a list, each item), non_empty (a list needs an
    item), then implemented (of the allowed values, those this broker serves; ``unimplemented`` says why the
    others are refused) and check (a function raising Invalid, for what the rest cannot say)."""

    type: str
    default: object = None
    topic_key: str = None
    doc: str = ""
    at_least: object = None
    at_most: object = None
    also: tuple = ()
    one_of: tuple = None
    ignore_case: bool = False
    non_empty: bool = False
    implemented: tuple = None
    unimplemented: str = ""
    check: object = None
    dynamic: bool = False  # Kafka changes it while the broker runs; read again at each use here too

    @property
    def kind(self):
        """The Python type of the parsed value: int, float, bool or str (lists, classes and passwords are text)."""
        return PYTHON_TYPES.get(self.type, str)

    def parse(self, text):
        """The value of ``text``, checked; raises Invalid."""
        text = str(text).strip()
        kind = self.type
        if kind == "boolean":
            if text.lower() not in ("true", "false"):
                raise Invalid("not true or false")
            value = text.lower() == "true"
        elif kind in INTEGER_BOUNDS:
            if not WHOLE.fullmatch(text):
                raise Invalid("not an integer" if text else "empty, where an integer is needed")
            value = int(text)
            low, high = INTEGER_BOUNDS[kind]
            if not low <= value <= high:
                raise Invalid(f"out of range for {'an' if kind == 'int' else 'a'} {kind} ({low} to {high})")
        elif kind == "double":
            if not DECIMAL.fullmatch(text):
                raise Invalid("not a number" if text else "empty, where a number is needed")
            value = float(text.rstrip("fFdD").replace("Infinity", "inf"))
        elif kind == "class":
            if not JAVA_CLASS.fullmatch(text):
                raise Invalid("not a Java class name")
            value = text
        else:  # string, list, password: kept as text
            value = text
        self.validate(value)
        return value

    def validate(self, value):
        """Raise Invalid if a parsed value breaks this setting's range or allowed values."""
        if value is None:
            return
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value not in self.also:
            low, high = self.at_least, self.at_most
            if low is not None and value < low or high is not None and value > high:
                raise Invalid(self.range_text())
        items = split_list(value) if self.type == "list" else [value]
        if self.type == "list":
            if self.non_empty and not items:
                raise Invalid("empty; at least one value is needed")
            if "" in items:
                raise Invalid("has an empty item (two commas, or one at an end)")
        elif self.non_empty and value == "":
            raise Invalid("empty; a value is needed")
        if self.one_of is not None:
            for item in items:
                if not _among(item, self.one_of, self.ignore_case):
                    raise Invalid(f"{item!r} is not one of: {', '.join(self.one_of)}" if self.type == "list"
                                  else f"not one of: {', '.join(self.one_of)}")
        if self.implemented is not None:
            for item in items:
                if not _among(item, self.implemented, self.ignore_case):
                    raise Invalid(self.unimplemented or f"{item!r} is not implemented here (only "
                                  f"{', '.join(self.implemented)})", kafka=False)
        if self.check is not None:
            self.check(value)

    def range_text(self):
        low, high = self.at_least, self.at_most
        text = (f"must be between {low} and {high}" if low is not None and high is not None
                else f"must be at least {low}" if low is not None else f"must be at most {high}")
        return text + "".join(f" or {v}" for v in self.also)


def _among(value, allowed, ignore_case):
    return value.lower() in {a.lower() for a in allowed} if ignore_case else value in allowed
