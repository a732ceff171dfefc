"""Test results to tables, the gate, failures grouped by cause, and docs/conformance.md.

Pure functions over plain data. The input is what tempest listed (every test id the run was
asked for) and what the subunit stream says ended (:class:`Outcome`, one per test id). A class
whose ``setUpClass`` failed reports no test of its own: each of its listed tests counts as
failed, with the setup's traceback as its cause (or skipped, when the class skipped itself in
``skip_checks``), so the columns of a module always add up to the tests it has. A test listed
but never reported (the run was cut short) is failed too.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

PACKAGE = "octavia_tempest_plugin.tests.api.v2"
# the suite's modules, in the order of the table (test_<name>.py under api/v2)
MODULES = (
    "load_balancer",
    "listener",
    "pool",
    "member",
    "healthmonitor",
    "provider",
    "amphora",
    "flavor",
    "flavor_profile",
    "flavor_capabilities",
    "availability_zone",
    "availability_zone_profile",
    "availability_zone_capabilities",
    "l7policy",
    "l7rule",
)
# The modules that must pass, per RBAC mode: a failure in one of them makes the run exit 1.
# Grow these as the emulator comes to behave as Octavia does (issue 41 wants load_balancer,
# listener, pool, member, healthmonitor and provider in the none and advanced modes);
# docs/conformance.md says which are gated today. Not yet: load_balancer (failover by
# load-balancer_admin: the emulator knows only the admin role), provider (`fields` on the
# provider list), and every module in advanced (RBAC) and keystone_default_roles (Keystone's
# admin API, which the plugin needs to make its non-member user).
GATED: Mapping[str, tuple[str, ...]] = {
    "none": ("listener", "pool", "member", "healthmonitor"),
    "advanced": (),
    "keystone_default_roles": (),
}
_CLASS_HOOK = re.compile(r"^(setUpClass|tearDownClass) \((?P<cls>[\w.]+)\)$")
_PASS = ("success", "xfail")
_SKIP = ("skip",)


@dataclass(frozen=True)
class Outcome:
    """One test's end, as the subunit stream reports it."""

    test_id: str
    status: str  # success, fail, skip, xfail, uxsuccess
    reason: str = ""
    traceback: str = ""


@dataclass
class Counts:
    passed: int = 0
    failed: int = 0
    skipped: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped


@dataclass
class Report:
    """One mode's results: counts per module, what failed and why, teardown errors."""

    mode: str
    modules: dict[str, Counts] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)  # test id -> cause (one line)
    teardown_errors: dict[str, str] = field(default_factory=dict)  # class -> cause

    @property
    def total(self) -> Counts:
        out = Counts()
        for counts in self.modules.values():
            out.passed += counts.passed
            out.failed += counts.failed
            out.skipped += counts.skipped
        return out

    def gate_failures(self, gated: Iterable[str]) -> dict[str, int]:
        """Gated modules with failures, and how many."""
        return {
            name: self.modules[name].failed
            for name in gated
            if name in self.modules and self.modules[name].failed
        }


def base_id(test_id: str) -> str:
    """The test id without its ``[id-...,smoke]`` attributes."""
    return test_id.split("[", 1)[0]


def class_of(test_id: str) -> str:
    """``package.module.Class`` of a test id (or of a ``setUpClass (...)`` entry)."""
    hook = _CLASS_HOOK.match(test_id)
    if hook:
        return hook["cls"]
    return base_id(test_id).rsplit(".", 1)[0]


def module_of(test_id: str) -> str:
    """``pool`` for ``octavia_tempest_plugin.tests.api.v2.test_pool.PoolAPITest.test_x``."""
    name = class_of(test_id).removeprefix(PACKAGE + ".").split(".", 1)[0]
    return name.removeprefix("test_")


_VOLATILE = (
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"req-<uuid>"), "<request>"),
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?\b"), "<time>"),
    (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b"), "<ip>"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<hex>"),
    (re.compile(r"tempest-[\w-]+?-\d+"), "<name>"),
    (re.compile(r"\d+\.\d+ seconds?"), "<n> seconds"),
    (re.compile(r"\s+"), " "),
)


def cause(traceback: str, *, width: int = 220) -> str:
    """One line that names why a test failed: the traceback's exception line (with the
    response body tempest puts on the next line, when there is one), with ids, addresses and
    times replaced, so that failures of the same kind read the same."""
    lines = [line for line in traceback.strip().splitlines() if line.strip()]
    if not lines:
        return "(no traceback)"
    index = len(lines) - 1
    for i in range(len(lines) - 1, -1, -1):
        if re.match(
            r"^[\w.]+(Error|Exception|Failure|Conflict|NotFound|Forbidden|BadRequest|"
            r"Unauthorized|NotImplemented|ServerFault|UnexpectedResponseCode|"
            r"InvalidCredentials|NoSuchOptError|KeyError|TimeoutException|"
            r"UnexpectedContentType|InvalidConfiguration|AssertionError)\b",
            lines[i],
        ):
            index = i
            break
    text = " ".join(lines[index : index + 2]) if index < len(lines) - 1 else lines[index]
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text.strip()[:width]


def build_report(mode: str, *, listed: Sequence[str], outcomes: Iterable[Outcome]) -> Report:
    """Counts per module for the tests ``listed``, from what the stream reported."""
    by_test: dict[str, Outcome] = {}
    setup_failed: dict[str, str] = {}
    setup_skipped: set[str] = set()
    report = Report(mode=mode)
    for outcome in outcomes:
        hook = _CLASS_HOOK.match(outcome.test_id)
        if hook is None:
            by_test[base_id(outcome.test_id)] = outcome
            continue
        if outcome.status in _SKIP and outcome.test_id.startswith("setUpClass"):
            setup_skipped.add(hook["cls"])  # skip_checks skipped the whole class
            continue
        if outcome.status in _PASS or outcome.status in _SKIP:
            continue
        if outcome.test_id.startswith("setUpClass"):
            setup_failed[hook["cls"]] = cause(outcome.traceback)
        else:
            report.teardown_errors[hook["cls"]] = cause(outcome.traceback)
    for name in MODULES:
        report.modules[name] = Counts()
    for test_id in listed:
        counts = report.modules.setdefault(module_of(test_id), Counts())
        ended = by_test.get(base_id(test_id))
        if ended is None and class_of(test_id) in setup_skipped:
            counts.skipped += 1
        elif ended is None:
            counts.failed += 1
            klass = class_of(test_id)
            report.failures[test_id] = (
                f"class setup failed: {setup_failed[klass]}"
                if klass in setup_failed
                else "no result (the run ended before this test reported)"
            )
        elif ended.status in _PASS:
            counts.passed += 1
        elif ended.status in _SKIP:
            counts.skipped += 1
        else:
            counts.failed += 1
            report.failures[test_id] = cause(ended.traceback)
    return report


def top_causes(report: Report, *, limit: int = 15) -> list[tuple[str, int]]:
    """The most common failure causes of one mode, most frequent first."""
    return Counter(report.failures.values()).most_common(limit)


def table(reports: Sequence[Report], *, gated: Mapping[str, Iterable[str]] = GATED) -> str:
    """The Markdown table: one row per module, pass/fail/skip per mode; a gated module is
    marked with ``*`` in each mode that gates it."""
    modes = [r.mode for r in reports]
    head = "| module | " + " | ".join(f"{m} pass | fail | skip" for m in modes) + " |"
    rule = "|---|" + "---:|---:|---:|" * len(modes)
    rows = [head, rule]
    names = list(MODULES) + sorted(
        {n for r in reports for n in r.modules if n not in MODULES and r.modules[n].total}
    )
    for name in names:
        if not any(name in r.modules and r.modules[name].total for r in reports):
            continue
        cells = []
        for r in reports:
            c = r.modules.get(name, Counts())
            mark = "*" if name in set(gated.get(r.mode, ())) else ""
            cells.append(f"{c.passed}{mark} | {c.failed} | {c.skipped}")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    totals = " | ".join(
        f"**{r.total.passed}** | **{r.total.failed}** | **{r.total.skipped}**" for r in reports
    )
    count = max((r.total.total for r in reports), default=0)
    rows.append(f"| **all {count}** | {totals} |")
    return "\n".join(rows)


def markdown(
    reports: Sequence[Report],
    *,
    date: str,
    commit: str,
    versions: Mapping[str, str],
    command: str,
    wall_seconds: Mapping[str, float],
    gated: Mapping[str, Iterable[str]] = GATED,
) -> str:
    """docs/conformance.md: the run's table, what produced it, the gate, the top causes."""
    lines = [
        "# Conformance: Octavia's API suite against the emulator",
        "",
        "Written by `make conformance` (`python -m conformance`); docs/emulator.md says what the",
        "tier is and how to run one module or one test. Do not edit by hand: run it again.",
        "",
        f"- date: {date}",
        f"- commit: `{commit}` (plus the working tree's changes, if any, at the time)",
        "- suite: " + ", ".join(f"{k} {v}" for k, v in versions.items()),
        "- tests: `octavia_tempest_plugin.tests.api.v2`, pre-provisioned credentials, "
        "the emulator's `instant` timing",
        f"- command: `{command}`",
        "- wall time per mode: " + ", ".join(f"{m} {s:.0f} s" for m, s in wall_seconds.items()),
        "",
        table(reports, gated=gated),
        "",
    ]
    gated_list = [f"{mode}: {', '.join(names)}" for mode, names in gated.items() if tuple(names)]
    lines.append(
        "Gated (a failure there makes `make conformance` exit 1; marked `*`): "
        + ("; ".join(gated_list) if gated_list else "none yet.")
    )
    lines.append("")
    for report in reports:
        causes = top_causes(report)
        if not causes:
            continue
        lines += [
            f"## Top causes of failure: `{report.mode}`",
            "",
            "| tests | cause |",
            "|---:|---|",
        ]
        for text, n in causes:
            lines.append(f"| {n} | `{text.replace('|', '/')}` |")
        lines.append("")
    return "\n".join(lines)
