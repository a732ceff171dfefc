"""``floating-subnet`` and ``floating-subnet-tags``: their syntax and OCCM's matching, exactly.

OCCM (``pkg/openstack/loadbalancer_subnet_match.go``) picks the floating IP's subnet among the
subnets of the floating network by name and by tags; the annotations and the cloud.conf keys
(``[LoadBalancer]`` and ``[LoadBalancerClass "x"]``) share the syntax, so it lives here, below
both the model (which validates) and the program (which matches the cloud's subnets).

**Names** (``floating-subnet``): a leading ``!`` negates; the rest is a Go regular expression
after ``~``, else a glob turned into one by ``gopkg.in/godo.v2/glob.Globexp`` (``*`` any run of
characters but ``/``, ``?`` one character, ``[abc]`` a set, ``{a,b}`` alternatives; every other
character stands for itself). A subnet matches when the expression's leftmost-first match in
its name *is* the name (Go's ``FindString(name) == name``), so ``~a|ab`` does not match ``ab``
and, OCCM's quirk kept on purpose, a subnet without a name matches every pattern (and no
negated one).

**Tags** (``floating-subnet-tags``): a comma- (or blank-) separated list; by default a subnet
matches when it has at least one of them, with a leading ``&`` when it has all of them, and a
``!`` before that negates: ``!a,b`` = none of them, ``!&a,b`` = not all of them. (That is OCCM's
documented meaning and its matcher's; OCCM's list query sends the two negated forms to Neutron
swapped, ``not-tags`` for ``!a,b`` and ``not-tags-any`` for ``!&a,b``, so with more than one tag
OCCM itself selects the other set. Here the documented meaning holds.)

Both given: a subnet must match both. Go and Python regular expressions agree on the common
syntax; where they differ (lookaround and backreferences exist only in Python; ``\\pL``,
``\\Q...\\E``, ``[[:alpha:]]``, ``(?<name>...)``, ``\\z`` and ``{,n}`` mean something else or
nothing there) the Go meaning is translated, or the pattern is refused with a
:class:`SubnetPatternError` naming the construct, never read differently. Character classes
(``\\w``, ``\\d``, ``\\s``, ``\\b``) are ASCII, as in Go.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "SubnetCandidate",
    "SubnetPatternError",
    "TagSpec",
    "go_regexp",
    "matching_subnets",
    "name_matcher",
    "parse_tags",
    "tag_matcher",
]


class SubnetPatternError(ValueError):
    """A ``floating-subnet`` or ``floating-subnet-tags`` value that cannot be used; the message
    says what is wrong (the caller names the key and the fix)."""


# --- globs: gopkg.in/godo.v2 glob.Globexp, rule by rule ------------------------------------

_GLOB_ANY_RUNE = "[^/]*"
_GLOB_DIRS = r"(?:[.{}\w\-\ ]+\/)*"


def glob_to_go_regexp(glob: str) -> str:
    """The Go regular expression ``Globexp`` makes of ``glob`` (before compiling it)."""
    out, i, in_group, n = ["^"], 0, False, len(glob)
    while i < n:
        c, width = glob[i], 1
        if c in "\\$^+.()=!|":
            out.append("\\" + c)
        elif c == "/":
            out.append("/")
            rest = glob[i:]
            if rest.startswith("/**/"):
                out.append(_GLOB_DIRS)
                width = 4
            elif rest == "/**":
                out.append(".*")
                width = 3
        elif c == "?":
            out.append(".")
        elif c == "{":
            if glob[i + 1 : i + 2] == "{":
                out.append("\\{")
                width = 2
            else:
                in_group = True
                out.append("(")
        elif c == "}":
            out.append(")" if in_group else "}")
            in_group = False
        elif c == ",":
            out.append("|" if in_group else "\\,")
        elif c == "*":
            if glob[i:].startswith("**/"):
                out.append(_GLOB_DIRS)
                width = 3
            else:
                out.append(_GLOB_ANY_RUNE)
        else:  # "[" and "]" included: a glob's sets are the regexp's sets
            out.append(c)
        i += width
    out.append("$")
    return "".join(out)


# --- Go regular expressions (RE2 syntax) in Python's re ------------------------------------

_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_REPEAT = re.compile(r"\{(\d+)(,\d*)?\}")
_FLAGS = re.compile(r"([imsU]*)(-[imsU]*)?([:)])")
_NOT_GO = "Go regular expressions (RE2) have no"


def _escape_escapes(text: str) -> str:
    return "".join("\\" + c if not c.isalnum() else c for c in text)


def _translate(p: str) -> str:  # one scanner, one branch per construct
    out: list[str] = []
    i, n = 0, len(p)
    in_class = False
    class_start = False
    while i < n:
        c = p[i]
        if c == "\\":
            if i + 1 >= n:
                raise SubnetPatternError("a trailing backslash ends the regular expression")
            d = p[i + 1]
            if d == "Q":
                end = p.find("\\E", i + 2)
                literal = p[i + 2 :] if end < 0 else p[i + 2 : end]
                out.append(_escape_escapes(literal))
                i = n if end < 0 else end + 2
                class_start = False
                continue
            if in_class and d in "bBAz":
                raise SubnetPatternError(f"\\{d} is not allowed in a character set")
            if d == "z":
                out.append("\\Z")
            elif d == "x" and p[i + 2 : i + 3] == "{":
                end = p.find("}", i + 3)
                digits = p[i + 3 : end] if end > 0 else ""
                if not digits or any(ch not in "0123456789abcdefABCDEF" for ch in digits):
                    raise SubnetPatternError(f"bad escape {p[i : end + 1 if end > 0 else n]!r}")
                out.append(f"\\U{int(digits, 16):08x}")
                i = end + 1
                class_start = False
                continue
            elif d in "pP":
                raise SubnetPatternError(
                    f"\\{d} (Unicode classes) is not supported here; write the characters as a "
                    "set such as [A-Za-z]"
                )
            elif d in "1234567" and re.match(r"[0-7]{2}", p[i + 2 : i + 4]):
                out.append(p[i : i + 4])  # three octal digits: a character in both
                i += 4
                class_start = False
                continue
            elif d in "123456789":
                raise SubnetPatternError(
                    f"\\{d}: {_NOT_GO} backreferences; write the character itself"
                )
            elif d in "ZuUNGCgk":
                raise SubnetPatternError(f"\\{d} is not a Go regular-expression escape")
            else:
                out.append(p[i : i + 2])
            i += 2
            class_start = False
            continue
        if in_class:
            if c == "[" and p.startswith("[:", i):
                end = p.find(":]", i + 2)
                name = p[i + 2 : end] if end > 0 else ""
                if name in _POSIX_CLASSES:
                    out.append(_POSIX_CLASSES[name])
                    i = end + 2
                    class_start = False
                    continue
                if end > 0 and name.startswith("^"):
                    raise SubnetPatternError(
                        f"[:{name}:] (a negated POSIX class) is not supported here"
                    )
                if end > 0 and name.isalpha():
                    raise SubnetPatternError(f"[:{name}:] is not a POSIX character class")
            if c == "]" and not class_start:
                in_class = False
                out.append("]")
            elif c in "[&~|":  # literal in a Go set; Python warns about or reads them otherwise
                out.append("\\" + c)
            else:
                out.append(c)
            i += 1
            class_start = False
            continue
        if c == "[":
            in_class, class_start = True, True
            out.append("[")
            i += 1
            if p[i : i + 1] == "^":
                out.append("^")
                i += 1
            continue
        if c == "(" and p.startswith("(?", i):
            rest = p[i + 2 :]
            if rest.startswith("P<"):
                out.append("(?P<")
                i += 4
                continue
            if rest.startswith("<") and not rest.startswith(("<=", "<!")):
                out.append("(?P<")
                i += 3
                continue
            flags = _FLAGS.match(rest)
            if flags is None or flags.group(0) in (")", "-)", "-:"):
                raise SubnetPatternError(
                    f"{p[i : i + 4]!r}: {_NOT_GO} lookaround, atomic groups, comments, "
                    "conditionals or backreferences"
                )
            if "U" in flags.group(0):
                raise SubnetPatternError("(?U) (ungreedy) is not supported here; use *? and +?")
            width = 2 + len(flags.group(0))
            if flags.group(3) == ")" and not out and flags.group(2):
                flags = _FLAGS.match(flags.group(1) + ")")  # all flags start off: "-x" is moot
                assert flags is not None
            if flags.group(3) == ")" and (out or flags.group(2)):
                raise SubnetPatternError(
                    f"{'(?' + flags.group(0)!r}: flags for the rest of the expression are only "
                    "supported at its start and without '-'; scope them as (?i:...)"
                )
            out.append("(?" + flags.group(0))
            i += width
            continue
        if c in "*+?" and p[i + 1 : i + 2] in ("*", "+"):
            raise SubnetPatternError(
                f"{p[i : i + 2]!r}: {_NOT_GO} possessive or doubled repetition"
            )
        if c == "{":
            repeat = _REPEAT.match(p, i)
            if repeat is None:  # not a repetition: a literal brace in Go ({,n} included)
                out.append("\\{")
                i += 1
                continue
            if int(repeat.group(1)) > 1000 or int((repeat.group(2) or ",0")[1:] or 0) > 1000:
                raise SubnetPatternError(f"{repeat.group(0)!r}: Go allows at most 1000 repeats")
            out.append(repeat.group(0))
            i = repeat.end()
            if p[i : i + 1] == "+":
                raise SubnetPatternError(f"{_NOT_GO} possessive repetition ({{n}}+)")
            continue
        out.append(c)
        i += 1
    if in_class:
        raise SubnetPatternError("missing closing ] of a character set")
    return "".join(out)


def go_regexp(pattern: str) -> re.Pattern[str]:
    """``regexp.Compile(pattern)`` as Python: the same strings match, or SubnetPatternError."""
    try:
        return re.compile(_translate(pattern), re.ASCII)
    except re.error as exc:
        raise SubnetPatternError(f"not a regular expression ({exc})") from None


# --- OCCM's matchers -------------------------------------------------------------------------


def name_matcher(pattern: str) -> Callable[[str], bool]:
    """OCCM ``subnetNameMatcher``: ``!`` negates, ``~`` a regexp, else a glob."""
    negate = pattern.startswith("!")
    body = pattern[1:] if negate else pattern
    if body.startswith("~"):
        compiled = go_regexp(body[1:])
    else:
        try:
            compiled = go_regexp(glob_to_go_regexp(body))
        except SubnetPatternError as exc:
            raise SubnetPatternError(f"not a glob ({exc})") from None

    def matches(name: str) -> bool:
        found = compiled.search(name)
        hit = (found.group(0) if found else "") == name  # Go: FindString(name) == name
        return hit != negate

    return matches


@dataclass(frozen=True)
class TagSpec:
    tags: tuple[str, ...]
    negate: bool  # leading "!"
    all_of: bool  # "&" (after any "!")


def parse_tags(text: str) -> TagSpec:
    """OCCM ``tagList``: ``!`` then ``&`` prefixes, tags split at commas and blanks."""
    negate = text.startswith("!")
    rest = text[1:] if negate else text
    all_of = rest.startswith("&")
    rest = rest[1:] if all_of else rest
    tags = tuple(t for t in re.split(r"[\s,]+", rest) if t)
    if not tags:
        raise SubnetPatternError("names no tag")
    bad = next((t for t in tags if t[0] in "!&"), None)
    if bad is not None:
        raise SubnetPatternError(
            f"tag {bad!r} starts with {bad[0]!r}: the prefixes go first, '!' before '&'"
        )
    return TagSpec(tags, negate, all_of)


def tag_matcher(text: str) -> Callable[[Iterable[str]], bool]:
    """OCCM ``subnetTagMatcher``: any (or ``&`` all) of the tags, ``!`` negated."""
    spec = parse_tags(text)

    def matches(subnet_tags: Iterable[str]) -> bool:
        present = set(subnet_tags)
        hits = [t in present for t in spec.tags]
        found = all(hits) if spec.all_of else any(hits)
        return found != spec.negate

    return matches


@dataclass(frozen=True)
class SubnetCandidate:
    id: str
    name: str
    tags: tuple[str, ...]
    ip_version: int


def matching_subnets(
    subnets: Sequence[SubnetCandidate], *, pattern: str | None, tags: str | None
) -> list[SubnetCandidate]:
    """The subnets that match the name pattern and the tags (each when given), in order."""
    by_name = name_matcher(pattern) if pattern else None
    by_tags = tag_matcher(tags) if tags else None
    return [
        s
        for s in subnets
        if (by_name is None or by_name(s.name)) and (by_tags is None or by_tags(s.tags))
    ]


def check_pattern(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a ``floating-subnet`` value, or None."""
    try:
        name_matcher(pattern)
    except SubnetPatternError as exc:
        return str(exc)
    return None


def check_tags(tags: str) -> str | None:
    """Why ``tags`` cannot be a ``floating-subnet-tags`` value, or None."""
    try:
        parse_tags(tags)
    except SubnetPatternError as exc:
        return str(exc)
    return None
