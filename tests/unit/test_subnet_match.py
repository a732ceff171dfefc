"""floating-subnet / floating-subnet-tags: OCCM's matching, checked against Go itself.

``GO_VECTORS`` was produced by running OCCM's ``subnetNameMatcher`` logic (Go's ``regexp`` and
``gopkg.in/godo.v2@v2.0.9`` ``glob.Globexp``, ``FindString(name) == name``) over every pattern x
name below; the tag cases are OCCM's ``subnetTagMatcher`` (and its own unit test's).
"""

from __future__ import annotations

import pytest

from reconciler.config.subnet_match import (
    SubnetCandidate,
    SubnetPatternError,
    check_pattern,
    check_tags,
    glob_to_go_regexp,
    matching_subnets,
    name_matcher,
    parse_tags,
    tag_matcher,
)

NAMES = (
    "test-123",
    "",
    "public",
    "public-1",
    "public-2",
    "pub",
    "ab",
    "a",
    "b-x",
    "x/y",
    "a.b",
    "a+b",
    "A1",
    "Public-1",
    "ä-1",
    "a,b",
    "{a}",
    "pub lic",
    "a\nb",
    "x",
    "[",
    "1",
)
# pattern -> which NAMES it matches per Go ('1' at a name's index), None: Go refuses the pattern
# (OCCM: an error, or a panic in Globexp)
GO_VECTORS: dict[str, str | None] = {
    "test-*": "11....................",
    "~test-.*": "11....................",
    "*": "111111111.111111111111",
    "~.*": "111111111111111111.111",
    "other*": ".1....................",
    "~other.*": ".1....................",
    "!test-*": "..11111111111111111111",
    "!~test-.*": "..11111111111111111111",
    "!*": ".........1............",
    "public": ".11...................",
    "public-?": ".1.11.................",
    "public-[12]": ".1.11.................",
    "public-[!1]": ".1.1..................",
    "public-[^1]": ".1.1..................",
    "pub*": ".11111...........1....",
    "!pub*": "1.....11111111111.1111",
    "~^pub": ".1...1................",
    "~pub": ".1...1................",
    "~^pub$": ".1...1................",
    "~pub.*": ".11111...........1....",
    "~public-\\d": ".1.11.................",
    "~public-[0-9]+": ".1.11.................",
    "~a|ab": ".1.....1..............",
    "~ab|a": ".1....11..............",
    "~(?i)PUBLIC-1": ".1.1.........1........",
    "~(?i:public)-1": ".1.1.........1........",
    "{a,b}-x": ".1......1.............",
    "{a,ab}": ".1....11..............",
    "{a": None,
    "a}": ".1....................",
    "{{a}": ".1..............1.....",
    "a,b": ".1.............1......",
    "~a{,2}": ".1....................",
    "~a{1,2}": ".1.....1..............",
    "~a{2}": ".1....................",
    "~x{1001}": None,
    "a.b": ".1........1...........",
    "a+b": ".1.........1..........",
    "x/*": ".1.......1............",
    "x/**": ".1.......1............",
    "**/y": ".1.......1............",
    "~\\Qa.b\\E": ".1........1...........",
    "~a\\.b": ".1........1...........",
    "~[[:alpha:]]+": ".11..111...........1..",
    "~[[:digit:]]": ".1...................1",
    "~(?P<n>a)b": ".1....1...............",
    "~(?<n>a)b": ".1....1...............",
    "~a(?=b)": None,
    "~\\1": None,
    "~a*+": None,
    "~a++": None,
    "~a**": None,
    "~[": None,
    "~(": None,
    "~)": None,
    "[": None,
    "[a": None,
    "~\\x{61}b": ".1....1...............",
    "~a\\z": ".1.....1..............",
    "~\\w+": ".11..111....1......1.1",
    "~\\d": ".1...................1",
    "~[\\w-]+": "111111111...11.....1.1",
    "~^$": ".1....................",
    "": ".1....................",
    "!": "1.11111111111111111111",
    "~": ".1....................",
    "!~": "1.11111111111111111111",
    "~\\Z": None,
    "~[a&&b]": ".1.....1..............",
    "~[a~~b]+": ".1....11..............",
    "~[a||b]+": ".1....11..............",
    "~[[]": ".1..................1.",
    "~[]a]": ".1.....1..............",
    "~a{,}": ".1....................",
    "~a{1,}": ".1.....1..............",
    "~.": ".1.....1...........111",
    "~a?": ".1.....1..............",
    "~a??": ".1....................",
    "~a*?": ".1....................",
    "~\\bab\\b": ".1....1...............",
    "~[\\b]": None,
    "~\\C": None,
    "~\\ub": None,
    "~ä-1": ".1............1.......",
    "~\\x61": ".1.....1..............",
    "~\\01": ".1....................",
    "~\\141": ".1.....1..............",
    "~(?s).": ".1.....1...........111",
    "~(?m)^b": ".1....................",
    "~(?i-s)a": ".1.....1..............",
    "~(?#c)a": None,
    "~(?>a)": None,
    "pub lic": ".1...............1....",
    "~pub lic": ".1...............1....",
    "=a": ".1....................",
    "!!a": "1.11111111111111111111",
    "~!a": ".1....................",
    "a\\*": ".1....................",
    "a$": ".1....................",
    "a^": ".1....................",
    "(a)": ".1....................",
    "a|b": ".1....................",
    "~a$": ".1.....1..............",
    "~a{2,1}": None,
    "~\\Q": ".1....................",
    "~[:alpha:]": ".1.....1..............",
    "~[[:foo:]]": None,
}


@pytest.mark.parametrize(("pattern", "matched"), sorted(GO_VECTORS.items()))
def test_name_patterns_match_as_in_go(pattern: str, matched: str | None) -> None:
    if matched is None:
        with pytest.raises(SubnetPatternError):
            name_matcher(pattern)
        assert check_pattern(pattern)
        return
    matches = name_matcher(pattern)
    assert "".join("1" if matches(n) else "." for n in NAMES) == matched
    assert check_pattern(pattern) is None


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("~\\pL+", "Unicode classes"),  # Go: letters; refused rather than read differently
        ("~(?U)a+", "ungreedy"),
        ("~a(?i)b", "scope them"),
        ("~[[:^alpha:]]", "negated POSIX"),
        ("~a(?=b)", "lookaround"),  # Python-only syntax: Go refuses it too
        ("~\\1", "backreferences"),
    ],
)
def test_go_syntax_this_port_does_not_take_is_refused_with_a_reason(
    pattern: str, says: str
) -> None:
    with pytest.raises(SubnetPatternError, match=says):
        name_matcher(pattern)


def test_occm_unit_test_cases() -> None:
    # OCCM TestMatchSubnet: subnet "test-123" tagged alice, bob.
    for pattern in ("test-*", "~test-.*", "*", "~.*"):
        assert name_matcher(pattern)("test-123")
        assert not name_matcher("!" + pattern)("test-123")
    for pattern in ("other*", "~other.*"):
        assert not name_matcher(pattern)("test-123")
        assert name_matcher("!" + pattern)("test-123")
    tags = ("alice", "bob")
    assert tag_matcher("alice")(tags)
    assert not tag_matcher("!alice")(tags)
    assert not tag_matcher("other")(tags)
    assert tag_matcher("!other")(tags)
    assert tag_matcher("alice,bob")(tags)
    assert tag_matcher("alice,peter")(tags)
    assert tag_matcher("&alice,bob")(tags)
    assert not tag_matcher("&alice,peter")(tags)


@pytest.mark.parametrize(
    ("tags", "have", "expected"),
    [
        ("a,b", (), False),
        ("a,b", ("b",), True),  # any of
        ("&a,b", ("b",), False),  # all of
        ("&a,b", ("a", "b", "c"), True),
        ("!a,b", ("b",), False),  # none of (OCCM's doc and matcher)
        ("!a,b", ("c",), True),
        ("!&a,b", ("b",), True),  # not all of
        ("!&a,b", ("a", "b"), False),
        ("a b", ("b",), True),  # blanks separate tags too (OCCM SplitTrim)
        (" a , c ", ("c",), True),
    ],
)
def test_tag_lists(tags: str, have: tuple[str, ...], expected: bool) -> None:
    assert tag_matcher(tags)(have) is expected


@pytest.mark.parametrize(("tags", "says"), [("!", "no tag"), ("&", "no tag"), (",", "no tag")])
def test_empty_tag_lists_are_refused(tags: str, says: str) -> None:
    # OCCM would match every subnet; that is never what was meant
    assert says in (check_tags(tags) or "")


def test_prefixes_in_the_wrong_order_are_refused() -> None:
    assert "prefixes go first" in (check_tags("&!a") or "")
    assert parse_tags("!&a").negate
    assert parse_tags("!&a").all_of


def test_glob_translation_is_godos() -> None:
    assert glob_to_go_regexp("pub-*") == "^pub-[^/]*$"
    assert glob_to_go_regexp("{a,b}.x") == "^(a|b)\\.x$"
    assert glob_to_go_regexp("a,b") == "^a\\,b$"


def test_matching_subnets_needs_both_and_keeps_the_order() -> None:
    subnets = [
        SubnetCandidate("1", "public-a", ("dmz",), 4),
        SubnetCandidate("2", "public-b", ("internet",), 4),
        SubnetCandidate("3", "private", ("internet",), 4),
        SubnetCandidate("4", "public-c", ("internet", "dmz"), 4),
    ]
    ids = lambda found: [s.id for s in found]  # noqa: E731
    assert ids(matching_subnets(subnets, pattern="public-*", tags="internet")) == ["2", "4"]
    assert ids(matching_subnets(subnets, pattern="!public-*", tags=None)) == ["3"]
    assert ids(matching_subnets(subnets, pattern=None, tags="!&internet,dmz")) == ["1", "2", "3"]
    assert ids(matching_subnets(subnets, pattern="~public-[ab]", tags="!dmz")) == ["2"]
