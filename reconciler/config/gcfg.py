"""A reader for gcfg syntax (``gopkg.in/gcfg.v1``, the INI dialect OCCM reads cloud.conf with).

It only turns text into ``(section, subsection, key, raw value, line)`` entries and syntax errors;
what the keys mean is decided in :mod:`reconciler.config.keys`. Reproduced quirks:

* names are identifiers of letters, digits and ``-``;
* ``[Sect "sub"]`` takes a quoted, case-sensitive subsection (escapes: backslash-quote and
  backslash-backslash);
* a value ends at the line end or at an unquoted ``;`` or ``#``; quoted parts are unquoted, with
  backslash escapes for quote, backslash, ``n`` and ``t``; a backslash at the end of a line
  continues the value; trailing blanks are dropped;
* a key with no ``=`` has no value (``raw`` is None, a "blank").
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.config.settings import ConfigIssue

__all__ = ["Entry", "read_gcfg"]


@dataclass(frozen=True)
class Entry:
    section: str
    sub: str | None
    key: str  # "" for a bare section header
    raw: str | None
    line: int


_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t"}


def _unquote(lit: str) -> str:
    out: list[str] = []
    quoted, i = False, 0
    while i < len(lit):
        c = lit[i]
        if c == "\\" and i + 1 < len(lit):
            nxt = lit[i + 1]
            if nxt != "\n":  # an escaped newline is a line continuation: it disappears
                out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        else:
            out.append(c)
        i += 1
    return "".join(out)


class _Reader:
    """A hand-written scanner for gcfg syntax; collects entries and syntax errors."""

    def __init__(self, text: str) -> None:
        self.src = text.removeprefix("\ufeff")
        self.pos = 0
        self.line = 1
        self.entries: list[Entry] = []
        self.errors: list[ConfigIssue] = []

    def _peek(self) -> str:
        return self.src[self.pos] if self.pos < len(self.src) else ""

    def _next(self) -> str:
        c = self._peek()
        self.pos += 1
        if c == "\n":
            self.line += 1
        return c

    def _skip_blanks(self) -> None:
        while self._peek() in (" ", "\t", "\r") and self._peek():
            self.pos += 1

    def _ident(self) -> str:
        start = self.pos
        while self._peek() and (self._peek().isalnum() or self._peek() == "-"):
            self.pos += 1
        return self.src[start : self.pos]

    def _fail(self, section: str, key: str, reason: str, fix: str, line: int) -> None:
        self.errors.append(ConfigIssue(section, key, "", reason, fix, line))
        while self._peek() and self._peek() != "\n":  # resynchronise at the next line
            self.pos += 1

    def _end_of_statement(self, section: str, key: str, line: int) -> None:
        self._skip_blanks()
        c = self._peek()
        if c in (";", "#"):
            while self._peek() and self._peek() != "\n":
                self.pos += 1
        elif c not in ("", "\n"):
            self._fail(section, key, "unexpected text after the value", "remove it", line)

    def _quoted_subsection(self, line: int) -> str | None:
        self.pos += 1  # opening quote
        out: list[str] = []
        while True:
            c = self._peek()
            if c in ("", "\n"):
                return None
            self.pos += 1
            if c == '"':
                return "".join(out)
            if c == "\\":
                esc = self._peek()
                if esc not in ("\\", '"'):
                    return None
                self.pos += 1
                c = esc
            out.append(c)

    def _section(self) -> tuple[str, str | None] | None:
        line = self.line
        self.pos += 1  # '['
        self._skip_blanks()
        name = self._ident()
        if not name or not name[0].isalpha():
            self._fail("", "", "expected a section name after '['", "write [Global]", line)
            return None
        self._skip_blanks()
        sub: str | None = None
        if self._peek() == '"':
            sub = self._quoted_subsection(line)
            if not sub:
                self._fail(name, "", "bad or empty subsection name", 'write [Sect "name"]', line)
                return None
            self._skip_blanks()
        if self._peek() != "]":
            self._fail(name, "", "expected ']'", "close the section header with ']'", line)
            return None
        self.pos += 1
        self._end_of_statement(name, "", line)
        self.entries.append(Entry(name, sub, "", None, line))
        return name, sub

    def _value(self, section: str, key: str, line: int) -> str | None:
        start, end, quoted = self.pos, self.pos, False
        while True:
            c = self._peek()
            if not c or (not quoted and c in ("\n", ";", "#")):
                break
            self._next()
            if c == "\\":
                esc = self._peek()
                if esc == "\r":
                    self.pos += 1
                    esc = self._peek()
                ok = esc in _ESCAPES if quoted else esc in ("\n", '"')
                if not ok:
                    self._fail(section, key, "bad escape sequence", r"use \" \\ \n or \t", line)
                    return None
                self._next()
            elif c == '"':
                quoted = not quoted
            elif quoted and c == "\n":
                self._fail(section, key, "unterminated quote", 'close the value with "', line)
                return None
            if quoted or c not in (" ", "\t", "\r"):
                end = self.pos
        if quoted:
            self._fail(section, key, "unterminated quote", 'close the value with "', line)
            return None
        return _unquote(self.src[start:end].replace("\r", ""))

    def read(self) -> None:
        section: str = ""
        sub: str | None = None
        while True:
            self._skip_blanks()
            c = self._peek()
            if not c:
                return
            if c == "\n":
                self._next()
            elif c in (";", "#"):
                self._end_of_statement(section, "", self.line)
            elif c == "[":
                header = self._section()
                if header is not None:
                    section, sub = header
            elif c.isalpha():
                line = self.line
                key = self._ident()
                if not section:
                    self._fail("", key, "key before any section", "put it under [Global]", line)
                    continue
                self._skip_blanks()
                raw: str | None = None
                if self._peek() == "=":
                    self.pos += 1
                    self._skip_blanks()
                    raw = self._value(section, key, line)
                    if raw is None:
                        continue
                self._end_of_statement(section, key, line)
                self.entries.append(Entry(section, sub, key, raw, line))
            else:
                self._fail(section, "", f"unexpected character {c!r}", "remove it", self.line)


def read_gcfg(text: str) -> tuple[list[Entry], list[ConfigIssue]]:
    """Entries in file order (a bare section header is an entry with key ``""``) and errors."""
    reader = _Reader(text)
    reader.read()
    return reader.entries, reader.errors
