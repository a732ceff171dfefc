"""The chart's PrometheusRule with the real promtool (built from Go modules: tools/promtool): the
rules helm renders pass ``promtool check rules``, and ``promtool test rules`` with
tests/data/alert_rules_test.yaml makes each alert fire on series named as the controller exposes
them, and not fire in the case next to it (one replica leading; a Service retrying is no
backlog). Every alert of the rule has such a case; every series the cases feed is a metric a real
:class:`~reconciler.controller.metrics.Metrics` registry exposes."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.controller.metrics import Metrics
from reconciler.local.toolchain import Toolchain
from reconciler.toolchain import REPO_ROOT

pytestmark = pytest.mark.integration

CHART = REPO_ROOT / "charts" / "lb-reconciler"
CASES = REPO_ROOT / "tests" / "data" / "alert_rules_test.yaml"


def rendered_rules(toolchain: Toolchain) -> dict[str, Any]:
    done = subprocess.run(
        [
            str(toolchain.path("helm")),
            "template",
            "r",
            str(CHART),
            "--set",
            "clusterName=prod",
            "--set",
            "prometheusRule.enabled=true",
            "--show-only",
            "templates/prometheusrule.yaml",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rule = yaml.safe_load(done.stdout)
    assert rule["kind"] == "PrometheusRule"
    return {"groups": rule["spec"]["groups"]}


def promtool(toolchain: Toolchain, *args: str, cwd: Path) -> str:
    done = subprocess.run(
        [str(toolchain.path("promtool")), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_rules_load_and_each_alert_fires_in_its_case(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    rules = rendered_rules(toolchain)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    shutil.copy(CASES, tmp_path / CASES.name)
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    assert len(alerts) >= 7
    checked = promtool(toolchain, "check", "rules", "rules.yaml", cwd=tmp_path)
    assert f"SUCCESS: {len(alerts)} rules found" in checked
    assert "SUCCESS" in promtool(toolchain, "test", "rules", CASES.name, cwd=tmp_path)

    cases = yaml.safe_load(CASES.read_text())["tests"]
    fired = {t["alertname"] for case in cases for t in case["alert_rule_test"] if t["exp_alerts"]}
    assert fired == alerts  # every alert fires in a case, and no case names another
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert rule["annotations"]["runbook"].startswith("docs/troubleshooting.md#")


def test_the_cases_feed_metrics_the_controller_exposes() -> None:
    text = Metrics(process_metrics=False).render()[0].decode()
    exposed = {line.split("{")[0].split()[0] for line in text.splitlines() if line[:1].isalpha()}
    cases = yaml.safe_load(CASES.read_text())["tests"]
    fed = {
        re.match(r"[a-z_]+", series["series"]).group(0)  # type: ignore[union-attr]
        for case in cases
        for series in case["input_series"]
    }
    assert fed <= exposed, fed - exposed
