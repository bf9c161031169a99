"""Java's regular expressions (java.util.regex.Pattern) read into Python's ``re``, for the broker settings Kafka
reads with Java's syntax (a client-metrics subscription's ``match`` patterns).

    compile_java(r"client-\\d+")        # a compiled re.Pattern, or JavaRegexError with Java's description
    compile_java(r"a{,2}")              # JavaRegexError: Illegal repetition (Python would take it)

The two syntaxes differ both ways: Java refuses ``{`` that begins no repetition, ``(?P<n>...)`` and ``(?#...)``,
which Python takes; Python refuses what Java takes: ``\\Q...\\E``, ``(?<name>...)``, inline flags in mid-pattern,
``\\p{...}`` properties, ``\\h``, ``\\R``, ``\\z``, ``\\x{...}``, ``\\cX``, classes nested or intersected
(``[a-z&&[^x]]``), a quantifier with nothing before it (``{2}``), a back-reference to a group not (yet) there.
The pattern is parsed as Java parses it, refused where Java refuses it (with Java's description of the fault,
for the usual ones), and written anew for ``re``. Matching follows Java's defaults: ``\\d``, ``\\w``, ``\\s``
and case-insensitivity are ASCII.

Where ``re`` cannot say what Java means, the translation comes near it: ``\\G`` as ``\\A`` (a pattern is
matched once, from the start), ``\\X`` as any one character, ``.`` and ``$`` with Python's line ends; the flags
``u``, ``U`` and ``d`` are read and have no effect (``x``, blanks and comments, is done here, as Java does it).
``\\p{...}`` knows Unicode's general categories, the POSIX classes and the ``java...`` ones. Refused here, though
Java takes them: Unicode scripts and blocks (``\\p{IsLatin}``, ``\\p{InGreek}``), a lookbehind whose width is not
fixed, and ``\\b{g}``.
"""

import functools
import re
import sys
import unicodedata

__all__ = ["JavaRegexError", "compile_java", "translate"]


class JavaRegexError(ValueError):
    """A pattern Java refuses (or, for the few constructs named in the module's doc, one this cannot read); the
    message is Java's description of what is wrong."""


INT_MAX = 2**31 - 1
_FLAGS = "idmsuxU"
_PYTHON_FLAGS = {"i": "i", "m": "m", "s": "s"}  # x is read here; u, U and d have no equivalent in re
_BLANKS = " \t\n\x0b\f\r"  # what the x flag skips, with comments from '#' to the line's end
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "a": "\x07", "e": "\x1b"}
_QUANTIFIER = re.compile(r"\{(\d+)(?:(,)(\d*))?\}")
_GROUP_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9]*")
_LINE_ENDS = ((0x0A, 0x0A), (0x0D, 0x0D), (0x85, 0x85), (0x2028, 0x2029))
_VERTICAL = ((0x0A, 0x0D), (0x85, 0x85), (0x2028, 0x2029))
_HORIZONTAL = ((0x20, 0x20), (0x09, 0x09), (0xA0, 0xA0), (0x1680, 0x1680), (0x180E, 0x180E), (0x2000, 0x200A),
               (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000))
_WHITESPACE = ((0x09, 0x0D), (0x1C, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
               (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000))
_CONTROLS = ((0x00, 0x1F), (0x7F, 0x9F))
# The POSIX classes, ASCII as Java's are by default.
_POSIX = {
    "Lower": ((0x61, 0x7A),), "Upper": ((0x41, 0x5A),), "ASCII": ((0x00, 0x7F),),
    "Alpha": ((0x41, 0x5A), (0x61, 0x7A)), "Digit": ((0x30, 0x39),),
    "Alnum": ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)),
    "Punct": ((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)), "Graph": ((0x21, 0x7E),),
    "Print": ((0x20, 0x7E),), "Blank": ((0x20, 0x20), (0x09, 0x09)), "Cntrl": ((0x00, 0x1F), (0x7F, 0x7F)),
    "XDigit": ((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)), "Space": ((0x09, 0x0D), (0x20, 0x20)),
}
_CATEGORIES = {"L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No", "P", "Pc", "Pd",
               "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So", "Z", "Zs", "Zl", "Zp", "C", "Cc", "Cf",
               "Co", "Cs", "Cn", "LC"}
_LETTERS = ("Lu", "Ll", "Lt", "Lm", "Lo")
# Java's own properties (Character.isXxx) and Unicode's binary ones, as the categories that come closest; a
# tuple of ranges where no category says it.
_JAVA_PROPERTIES = {"javaLowerCase": ("Ll",), "javaUpperCase": ("Lu",), "javaTitleCase": ("Lt",),
                    "javaDigit": ("Nd",), "javaLetter": _LETTERS, "javaLetterOrDigit": _LETTERS + ("Nd",),
                    "javaAlphabetic": _LETTERS + ("Nl",), "javaIdeographic": ("Lo",),
                    "javaSpaceChar": ("Zs", "Zl", "Zp"), "javaWhitespace": _WHITESPACE, "javaISOControl": _CONTROLS}
_BINARY = {"Alphabetic": _LETTERS + ("Nl",), "Letter": _LETTERS, "Digit": ("Nd",), "Uppercase": ("Lu",),
           "Lowercase": ("Ll",), "Titlecase": ("Lt",), "Punctuation": ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"),
           "Control": ("Cc",), "White_Space": _WHITESPACE, "WhiteSpace": _WHITESPACE}


def _escape(code):
    """One code point as re writes it literally, in a pattern or in a set."""
    char = chr(code)
    if char.isascii() and char.isalnum():
        return char
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _ranges(ranges):
    """A set's body from (first, last) code point pairs."""
    return "".join(_escape(a) if a == b else f"{_escape(a)}-{_escape(b)}" for a, b in ranges)


@functools.lru_cache(maxsize=1)
def _by_category():
    """{general category: [(first, last) code point ranges]}, read from unicodedata once."""
    out = {}
    previous, start = None, 0
    for code in range(sys.maxunicode + 2):
        category = unicodedata.category(chr(code)) if code <= sys.maxunicode else None
        if category != previous:
            if previous is not None:
                out.setdefault(previous, []).append((start, code - 1))
            previous, start = category, code
    return out


@functools.lru_cache(maxsize=None)
def _category_ranges(categories):
    """The (first, last) code point ranges of the general categories named (one letter: all of its kind)."""
    wanted = set()
    for name in categories:
        if name == "LC":
            wanted |= {"Lu", "Ll", "Lt"}
        elif len(name) == 1:
            wanted |= {c for c in _CATEGORIES if len(c) == 2 and c[0] == name and c != "LC"}
        else:
            wanted.add(name)
    merged = []
    for first, last in sorted(r for name in wanted for r in _by_category().get(name, ())):
        if merged and first == merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], last)
        else:
            merged.append((first, last))
    return tuple(merged)


class _Set:
    """What a class escape stands for: a set's body, and whether it is negated (\\D, \\P{L})."""

    __slots__ = ("body", "negated")

    def __init__(self, body, negated=False):
        self.body, self.negated = body, negated

    def pattern(self):
        return f"[{'^' if self.negated else ''}{self.body}]"


class _Parser:
    """Java's Pattern, read the way Java reads it (its errors with its descriptions), written out for re."""

    def __init__(self, pattern):
        self.p = pattern
        self.i = 0
        self.groups = 0  # capturing groups opened so far
        self.closed = set()  # numbers of the groups closed so far
        self.names = {}  # group name -> number
        # per open group: [its number or None, extra ')' owed for flags set inside it, the x flag before it]
        self.open = []
        self.owed = 0  # extra ')' owed at the top level
        self.comments = False  # the x flag: blanks and comments are skipped

    def skip_comments(self):
        """Past the blanks and comments at self.i, where the x flag is on."""
        while self.comments and self.i < len(self.p):
            if self.p[self.i] in _BLANKS:
                self.i += 1
            elif self.p[self.i] == "#":
                while self.i < len(self.p) and self.p[self.i] not in "\n\r\x85\u2028\u2029":
                    self.i += 1
            else:
                break

    def error(self, description):
        raise JavaRegexError(description)

    def peek(self, offset=0):
        j = self.i + offset
        return self.p[j] if j < len(self.p) else ""

    # ---- the pattern outside classes

    def translate(self):
        out = []
        quantifiable = False  # whether * + ? may follow: after an atom, not after a quantifier or nothing
        while self.i < len(self.p):
            self.skip_comments()
            if self.i >= len(self.p):
                break
            c = self.p[self.i]
            if c == "\\":
                piece = self.escape(in_class=False)
                if piece is None:
                    continue
                out.append(piece if isinstance(piece, str) else
                           _escape(piece) if isinstance(piece, int) else piece.pattern())
                quantifiable = True
            elif c == "[":
                self.i += 1
                out.append(self.char_class())
                quantifiable = True
            elif c == "(":
                out.append(self.group_open())
                quantifiable = False
            elif c == ")":
                if not self.open:
                    self.error("Unmatched closing ')'")
                number, owed, self.comments = self.open.pop()
                if number is not None:
                    self.closed.add(number)
                out.append(")" * (owed + 1))
                self.i += 1
                quantifiable = True
            elif c in "*+?":
                if not quantifiable:
                    self.error(f"Dangling meta character '{c}'")
                self.i += 1
                out.append(c + self.quantifier_mode())
                quantifiable = False
            elif c == "{":
                out.append(self.repetition(quantifiable))
                quantifiable = False
            else:
                # re repeats no anchor: in a group of its own it can be (Java repeats them)
                out.append(f"(?:{c})" if c in "^$" else c if c in "|." else _escape(ord(c)))
                self.i += 1
                quantifiable = c != "|"
        if self.open:
            self.error("Unclosed group")
        return "".join(out) + ")" * self.owed

    def repetition(self, quantifiable):
        found = _QUANTIFIER.match(self.p, self.i)
        if found is None:
            self.error("Illegal repetition")
        low = int(found.group(1))
        high = low if found.group(2) is None else int(found.group(3)) if found.group(3) else None
        if low > INT_MAX or (high is not None and (high > INT_MAX or high < low)):
            self.error("Illegal repetition range")
        self.i = found.end()
        text = f"{{{low}}}" if found.group(2) is None else f"{{{low},{'' if high is None else high}}}"
        # Java lets a repetition follow nothing or another repetition: it repeats nothing then
        return ("" if quantifiable else "(?:)") + text + self.quantifier_mode()

    def quantifier_mode(self):
        """A lazy (?) or possessive (+) mark after a quantifier."""
        if self.peek() in ("?", "+"):
            self.i += 1
            return self.p[self.i - 1]
        return ""

    def group_open(self):
        p, i = self.p, self.i
        if not p.startswith("(?", i):
            self.groups += 1
            self.open.append([self.groups, 0, self.comments])
            self.i += 1
            return "("
        rest = p[i + 2:]
        for lead in ("<=", "<!", ":", "=", "!", ">"):
            if rest.startswith(lead):
                self.open.append([None, 0, self.comments])
                self.i += 2 + len(lead)
                return "(?" + lead
        if rest.startswith("<"):
            found = _GROUP_NAME.match(rest, 1)
            if found is None:
                self.error("capturing group name does not start with a Latin letter")
            if not rest.startswith(">", found.end()):
                self.error("named capturing group is missing trailing '>'")
            name = found.group()
            if name in self.names:
                self.error(f"Named capturing group <{name}> is already defined")
            self.groups += 1
            self.names[name] = self.groups
            self.open.append([self.groups, 0, self.comments])
            self.i += 2 + found.end() + 1
            return f"(?P<{name}>"
        found = re.match(rf"([{_FLAGS}]*)(?:-([{_FLAGS}]*))?([:)])", rest)
        if found is None:
            self.error("Unknown inline modifier")
        on = "".join(dict.fromkeys(_PYTHON_FLAGS[f] for f in found.group(1) if f in _PYTHON_FLAGS))
        off = "".join(dict.fromkeys(_PYTHON_FLAGS[f] for f in found.group(2) or "" if f in _PYTHON_FLAGS))
        off = "".join(f for f in off if f not in on)
        self.i += 2 + found.end()
        flags = on + (f"-{off}" if off else "")
        comments = "x" in found.group(1) or (self.comments and "x" not in (found.group(2) or ""))
        if found.group(3) == ":":
            self.open.append([None, 0, self.comments])
            self.comments = comments
            return f"(?{flags}:"
        self.comments = comments  # to the end of the group it is in
        if not flags:
            return ""
        # Flags set in mid-pattern hold to the end of the group they are in: re gets a group of their own that
        # closes with it.
        if self.open:
            self.open[-1][1] += 1
        else:
            self.owed += 1
        return f"(?{flags}:"

    # ---- escapes

    def escape(self, in_class):
        """What the escape at self.i (a backslash) stands for: a code point (int), a class escape (_Set), pattern
        text (str, outside classes only), or None for nothing at all (an empty \\Q\\E)."""
        self.i += 1
        c = self.peek()
        if not c:
            self.error("Unexpected internal error")
        self.i += 1
        if c in _SIMPLE_ESCAPES:
            return ord(_SIMPLE_ESCAPES[c])
        if c in "dDsSwW":
            return _Set("\\" + c.lower(), c.isupper())  # compiled with re.ASCII: Java's ASCII classes
        if c in "hH":
            return _Set(_ranges(_HORIZONTAL), c == "H")
        if c in "vV":
            return _Set(_ranges(_VERTICAL), c == "V")
        if c in "pP":
            return _Set(self.property(), c == "P")
        if c == "0":
            found = re.match(r"[0-3][0-7]{2}|[0-7]{1,2}", self.p[self.i:])
            if found is None:
                self.error("Illegal octal escape sequence")
            self.i += found.end()
            return int(found.group(), 8)
        if c == "x":
            return self.hexadecimal()
        if c == "u":
            digits = self.p[self.i:self.i + 4]
            if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                self.error("Illegal Unicode escape sequence")
            self.i += 4
            return int(digits, 16)
        if c == "c":
            if self.i >= len(self.p):
                self.error("Illegal control escape sequence")
            self.i += 1
            return ord(self.p[self.i - 1]) ^ 64
        if c == "N" and self.peek() == "{":
            end = self.p.find("}", self.i)
            name = self.p[self.i + 1:end] if end > 0 else ""
            try:
                char = unicodedata.lookup(name)
            except KeyError:
                self.error(f"Unknown character name [{name}]")
            self.i = end + 1
            return ord(char)
        if c == "Q":
            end = self.p.find("\\E", self.i)
            text = self.p[self.i:] if end < 0 else self.p[self.i:end]
            self.i = len(self.p) if end < 0 else end + 2
            if in_class:
                return _Set("".join(_escape(ord(ch)) for ch in text)) if text else None
            return f"(?:{''.join(_escape(ord(ch)) for ch in text)})" if text else None
        if c.isascii() and c.isalnum() and in_class:
            self.error("Illegal/unsupported escape sequence")
        if c.isascii() and c.isalnum():
            return self.anchor_or_reference(c)
        return ord(c)

    def hexadecimal(self):
        if self.peek() == "{":
            end = self.p.find("}", self.i)
            digits = self.p[self.i + 1:end] if end > 0 else ""
            if end < 0:
                self.error("Unclosed hexadecimal escape sequence")
            if not re.fullmatch(r"[0-9a-fA-F]+", digits):
                self.error("Illegal hexadecimal escape sequence")
            if int(digits, 16) > sys.maxunicode:
                self.error("Hexadecimal codepoint is too big")
            self.i = end + 1
            return int(digits, 16)
        digits = self.p[self.i:self.i + 2]
        if not re.fullmatch(r"[0-9a-fA-F]{2}", digits):
            self.error("Illegal hexadecimal escape sequence")
        self.i += 2
        return int(digits, 16)

    def anchor_or_reference(self, c):
        if c in "bBA":
            return "\\" + c
        if c == "G":  # where the last match ended: a pattern matched once, from the start
            return "\\A"
        if c == "z":
            return "\\Z"
        if c == "Z":
            return f"(?=[{_ranges(_LINE_ENDS)}]?\\Z)"
        if c == "R":
            return f"(?:\\r\\n|[{_ranges(_VERTICAL)}])"
        if c == "X":
            return "(?s:.)"
        if c == "k":
            found = re.match(r"<([a-zA-Z][a-zA-Z0-9]*)>", self.p[self.i:])
            if found is None:
                self.error("\\k is not followed by '<' for named capturing group")
            name = found.group(1)
            if name not in self.names:
                self.error(f"named capturing group <{name}> does not exist")
            self.i += found.end()
            return self.backreference(self.names[name])
        if c.isdigit():
            # Java reads as many digits as still name a group there is (the first always)
            number = int(c)
            while self.peek().isdigit() and int(f"{number}{self.peek()}") <= self.groups:
                number = int(f"{number}{self.peek()}")
                self.i += 1
            return self.backreference(number)
        self.error("Illegal/unsupported escape sequence")

    def backreference(self, number):
        # A group that is not there, or still open, matches nothing in Java; re refuses to refer to it.
        return f"(?:\\{number})" if number in self.closed and number < 100 else "(?!)"

    def property(self):
        """The set's body of \\p{name} (or \\pL)."""
        if self.peek() == "{":
            end = self.p.find("}", self.i)
            if end < 0:
                self.error("Unclosed character family")
            name = self.p[self.i + 1:end]
            self.i = end + 1
        else:
            name = self.peek()
            if not name:
                self.error("Illegal character family")
            self.i += 1
        bare = name[2:] if name.startswith("Is") else name
        if name in _POSIX:
            return _ranges(_POSIX[name])
        if bare in _CATEGORIES:
            return _ranges(_category_ranges((bare,)))
        found = _JAVA_PROPERTIES.get(name) if name.startswith("java") else \
            _BINARY.get(bare) if name.startswith("Is") else None
        if found is not None:
            return _ranges(found if isinstance(found[0], tuple) else _category_ranges(found))
        if name.startswith(("In", "Is")):
            self.error(f"Unicode scripts and blocks are not read here: {{{name}}}")
        self.error(f"Unknown character property name {{{name}}}")

    # ---- classes

    def char_class(self):
        """A class from after its '[' to after its ']', as re text: one set where it can be, else sets combined
        (Java's nested classes are unions, && an intersection)."""
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        body, alternatives, intersection = [], [], None
        first = True
        while True:
            self.skip_comments()
            c = self.peek()
            if not c:
                self.error("Unclosed character class")
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "[":
                self.i += 1
                alternatives.append(self.char_class())
                continue
            if c == "&" and self.peek(1) == "&":
                self.i += 2
                side = self.union(body, alternatives)
                intersection = side if intersection is None else f"(?:(?={intersection}){side})"
                body, alternatives = [], []
                continue
            start = self.class_atom()
            if start is None:
                continue
            if isinstance(start, _Set):
                if start.negated or not start.body:
                    alternatives.append(start.pattern() if start.body else "(?!)")
                else:
                    body.append(start.body)
                continue
            if self.peek() == "-" and self.peek(1) == "":
                self.error("Illegal character range")
            if self.peek() == "-" and self.peek(1) not in ("]", "["):
                self.i += 1
                end = self.class_atom()
                if not isinstance(end, int) or end < start:
                    self.error("Illegal character range")
                body.append(f"{_escape(start)}-{_escape(end)}")
            else:
                body.append(_escape(start))
        whole = self.union(body, alternatives)
        if intersection is not None:
            whole = f"(?:(?={intersection}){whole})"
        if not negated:
            return whole
        if intersection is None and not alternatives:
            return f"[^{''.join(body)}]"
        return f"(?:(?!{whole})(?s:.))"

    @staticmethod
    def union(body, alternatives):
        sides = ([f"[{''.join(body)}]"] if body else []) + alternatives
        if not sides:
            return "(?!)"  # an empty side of an intersection
        return sides[0] if len(sides) == 1 else "(?:" + "|".join(sides) + ")"

    def class_atom(self):
        """One member of a class: a code point (int), a class escape (_Set), or None (an empty \\Q\\E)."""
        c = self.p[self.i]
        if c != "\\":
            self.i += 1
            return ord(c)
        return self.escape(in_class=True)


def translate(pattern):
    """The pattern, as Java reads it, written for re (to be compiled with re.ASCII); raises JavaRegexError."""
    return _Parser(pattern).translate()


@functools.lru_cache(maxsize=1024)
def compile_java(pattern):
    """pattern compiled as Java compiles it; raises JavaRegexError where Java refuses it."""
    text = translate(pattern)
    try:
        return re.compile(text, re.ASCII)
    except re.error as e:  # what the translation cannot give re (a lookbehind of no fixed width, say)
        raise JavaRegexError(f"not read here: {e}") from None
