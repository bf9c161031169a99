"""Kafka version ranges: ``"none"``, ``"3"``, ``"3+"``, ``"3-7"``."""

MAX_VERSION = 0x7FFF


class Versions:
    """An inclusive range of versions; ``Versions.NONE`` is empty."""

    __slots__ = ("lo", "hi")

    def __init__(self, lo, hi):
        self.lo = lo
        self.hi = hi

    @classmethod
    def parse(cls, text):
        """Parse a range; raise ValueError with the reason on bad text."""
        if isinstance(text, int) and not isinstance(text, bool):
            text = str(text)
        if not isinstance(text, str):
            raise ValueError(f"a version range must be a string, not {text!r}")
        s = text.strip()
        if s == "none":
            return cls.NONE
        try:
            if s.endswith("+"):
                return cls._checked(int(s[:-1]), MAX_VERSION, text)
            if "-" in s:
                lo, hi = s.split("-", 1)
                return cls._checked(int(lo), int(hi), text)
            v = int(s)
            return cls._checked(v, v, text)
        except ValueError:
            raise ValueError(f"invalid version range {text!r}") from None

    @classmethod
    def _checked(cls, lo, hi, text):
        if not 0 <= lo <= hi <= MAX_VERSION:
            raise ValueError(f"invalid version range {text!r}")
        return cls(lo, hi)

    @property
    def empty(self):
        return self.lo > self.hi

    @property
    def open_ended(self):
        return not self.empty and self.hi == MAX_VERSION

    def __contains__(self, v):
        return self.lo <= v <= self.hi

    def intersect(self, other):
        lo, hi = max(self.lo, other.lo), min(self.hi, other.hi)
        return Versions(lo, hi) if lo <= hi else Versions.NONE

    def issubset(self, other):
        return self.empty or (other.lo <= self.lo and self.hi <= other.hi)

    def __iter__(self):
        return iter(range(self.lo, self.hi + 1))

    def __eq__(self, other):
        if not isinstance(other, Versions):
            return NotImplemented
        return (self.empty and other.empty) or (self.lo == other.lo and self.hi == other.hi)

    def __hash__(self):
        return hash((0, -1) if self.empty else (self.lo, self.hi))

    def __str__(self):
        if self.empty:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        if self.lo == self.hi:
            return str(self.lo)
        return f"{self.lo}-{self.hi}"

    def __repr__(self):
        return f"Versions({str(self)!r})"


Versions.NONE = Versions(1, 0)
