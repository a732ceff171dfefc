"""Folding Pulumi's steps into rows, the external-IP rule, exit codes, text/JSON/Markdown."""

from __future__ import annotations

import json

import pytest

from reconciler.cli.preview_plan import Skipped
from reconciler.cli.preview_report import (
    PreviewReport,
    ResourceRow,
    ServiceReport,
    deleted,
    exit_code,
    external_ip_changes,
    render,
    render_json,
    render_markdown,
    render_text,
    rows_from_steps,
)
from reconciler.cli.terminal import Style
from reconciler.engine.preview import PropertyChange, ResourceStep

FIP = "openstack:networking/floatingIp:FloatingIp"
ASSOC = "openstack:networking/floatingIpAssociate:FloatingIpAssociate"
LB = "openstack:loadbalancer/loadBalancer:LoadBalancer"
LISTENER = "openstack:loadbalancer/listener:Listener"


def step(
    name: str, type_: str, op: str, *changes: PropertyChange, keys: tuple[str, ...] = ()
) -> ResourceStep:
    return ResourceStep(name, type_, op, tuple(changes), keys, None if op == "create" else "id-1")


ADDRESS = PropertyChange("address", "update-replace", "172.24.4.10", "172.24.4.99")
# what a real preview of a changed loadBalancerIP emits (delete-before-replace: three steps each)
FIP_REPLACED = [
    step("fip-association", ASSOC, "delete-replaced"),
    step("fip", FIP, "delete-replaced"),
    step("fip", FIP, "replace", ADDRESS, keys=("address",)),
    step("fip", FIP, "create-replacement", ADDRESS, keys=("address",)),
    step("fip-association", ASSOC, "replace"),
    step("fip-association", ASSOC, "create-replacement", keys=("floatingIp",)),
]


def test_replacements_fold_into_one_row_each_in_declaration_order() -> None:
    limit = PropertyChange("connectionLimit", "update", -1, 9)
    steps = [
        step("lb-reconciler-prod.default.web", "pulumi:pulumi:Stack", "create"),
        step("default_5_5_1", "pulumi:providers:openstack", "create"),
        step("members-tcp-443", "openstack:loadbalancer/members:Members", "create"),
        step("listener-tcp-443", LISTENER, "create"),
        step("listener-tcp-80", LISTENER, "update", limit),
        *FIP_REPLACED,
        step("lb", LB, "same"),
    ]  # fmt: skip
    rows = rows_from_steps(steps)
    assert [(r.name, r.type, r.op) for r in rows] == [
        ("listener-tcp-80", "Listener", "update"),
        ("listener-tcp-443", "Listener", "create"),
        ("members-tcp-443", "Members", "create"),
        ("fip", "FloatingIp", "replace"),
        ("fip-association", "FloatingIpAssociate", "replace"),
    ]
    fip = rows[3]
    assert fip.changes == (ADDRESS,)
    assert fip.replace_keys == ("address",)
    assert fip.old_id == "id-1"
    assert rows[4].replace_keys == ("floatingIp",)


def rows(*steps: ResourceStep) -> tuple[ResourceRow, ...]:
    return rows_from_steps(steps)


def test_a_replaced_floating_ip_changes_the_external_ip() -> None:
    assert external_ip_changes(rows(*FIP_REPLACED), current="172.24.4.10") == (
        "the floating IP 172.24.4.10 is replaced; the new address is 172.24.4.99",
    )


def test_a_deleted_floating_ip_for_the_users_own_changes_the_external_ip() -> None:
    found = rows(
        step("fip", FIP, "delete"),
        step("fip-association", ASSOC, "update",
             PropertyChange("floatingIp", "update", "172.24.4.10", "172.24.4.100")),
    )  # fmt: skip
    assert external_ip_changes(found, current=None) == (
        "the floating IP is deleted; the new address is 172.24.4.100",
    )


def test_a_replaced_load_balancer_changes_the_vip() -> None:
    vip = PropertyChange("vipAddress", "update-replace", "10.0.0.5", "10.0.0.9")
    lb = step("lb", LB, "replace", vip, keys=("vipAddress",))
    internal = external_ip_changes(rows(lb), current="10.0.0.5")
    assert internal == (
        "the load balancer is replaced (vipAddress changes): its VIP address 10.0.0.5 changes",
    )
    public = external_ip_changes(
        rows(lb, step("fip-association", ASSOC, "replace")), current="1.2.3.4"
    )
    assert public == (
        "the load balancer is replaced (vipAddress changes): its VIP address changes, and the "
        "floating IP 1.2.3.4 is associated with the new VIP",
    )  # fmt: skip


@pytest.mark.parametrize(
    "found",
    [
        (step("fip-association", ASSOC, "replace"),),  # same address, another port
        (step("listener-tcp-80", LISTENER, "replace"),),
        (step("fip", FIP, "update", PropertyChange("description", "update", "a", "b")),),
        (step("lb", LB, "update", PropertyChange("description", "update", "a", "b")),),
    ],
)
def test_other_changes_keep_the_external_ip(found: tuple[ResourceStep, ...]) -> None:
    assert external_ip_changes(rows(*found), current="1.2.3.4") == ()


def service(status: str = "changes", **kw: object) -> ServiceReport:
    base: dict[str, object] = {
        "key": "default/web",
        "where": "svc/web.yaml:1",
        "stack": "prod.default.web",
        "status": status,
    }
    return ServiceReport(**{**base, **kw})  # type: ignore[arg-type]


SKIPPED = Skipped("svc/app.yaml:12", "Deployment", "web", "not a Service (Deployment)")


def test_exit_codes() -> None:
    assert exit_code(PreviewReport()) == 0
    assert exit_code(PreviewReport(services=(service("no-changes"),))) == 0
    assert exit_code(PreviewReport(services=(service(), service("no-changes")))) == 2
    assert exit_code(PreviewReport(services=(service("deleted"),))) == 2
    assert exit_code(PreviewReport(services=(service(), service("failed")))) == 1
    assert exit_code(PreviewReport(errors=("x.yaml:1: bad",))) == 1


REPORT = PreviewReport(
    services=(
        service(
            rows=rows(*FIP_REPLACED, step("listener-tcp-443", LISTENER, "create")),
            external_ip=(
                "the floating IP 172.24.4.10 is replaced; the new address is 172.24.4.99",
            ),
            current_ip="172.24.4.10",
            notes=("spec.ports[1] (TCP 443) has no nodePort yet",),
        ),
        service("no-changes", key="shop/api", where="svc/api.yaml:3", stack="prod.shop.api"),
    ),
    skipped=(SKIPPED,),
)


def test_text() -> None:
    text = render_text(REPORT)
    assert text.splitlines() == [
        "default/web (svc/web.yaml:1, stack prod.default.web): 1 to create, 2 to replace",
        "  +  listener-tcp-443         Listener             create",
        "  +- fip                      FloatingIp           replace",
        "       address: 172.24.4.10 -> 172.24.4.99 (forces replacement)",
        "  +- fip-association          FloatingIpAssociate  replace",
        "       replaced because floatingIp changes",
        "  ! external IP changes: the floating IP 172.24.4.10 is replaced; the new address is "
        "172.24.4.99",
        "  note: spec.ports[1] (TCP 443) has no nodePort yet",
        "shop/api (svc/api.yaml:3, stack prod.shop.api): no changes",
        "skipped:",
        "  svc/app.yaml:12 Deployment web: not a Service (Deployment)",
        "2 Services: 1 with changes (1 changing the external IP), 1 unchanged; 1 document skipped",
    ]
    assert "\033[" not in text
    coloured = render_text(REPORT, style=Style(enabled=True))
    assert "\033[31m  +- fip" in coloured  # replacements in red
    assert "\033[32m  +  listener-tcp-443" in coloured


def test_json() -> None:
    doc = json.loads(render_json(REPORT))
    web, api = doc["services"]
    assert web["service"] == "default/web"
    assert web["summary"] == {"create": 1, "replace": 2}
    assert web["externalIP"] == "172.24.4.10"
    assert web["externalIPChanges"] == [
        "the floating IP 172.24.4.10 is replaced; the new address is 172.24.4.99"
    ]
    fip = web["resources"][1]
    assert fip == {
        "name": "fip",
        "type": "FloatingIp",
        "op": "replace",
        "id": "id-1",
        "changes": [
            {
                "path": "address",
                "kind": "update-replace",
                "old": "172.24.4.10",
                "new": "172.24.4.99",
            }
        ],
        "replaceKeys": ["address"],
    }
    assert (api["status"], api["resources"]) == ("no-changes", [])
    assert doc["skipped"] == [
        {"source": "svc/app.yaml:12", "kind": "Deployment", "name": "web",
         "reason": "not a Service (Deployment)"}
    ]  # fmt: skip
    assert (doc["errors"], doc["exitCode"]) == ([], 2)


def test_markdown_is_a_pull_request_comment() -> None:
    md = render_markdown(REPORT)
    lines = md.splitlines()
    assert lines[0] == (
        "### lb-reconciler preview: 2 Services: 1 with changes (1 changing the external IP), "
        "1 unchanged; 1 document skipped"
    )
    assert "#### `default/web`: 1 to create, 2 to replace ⚠️ **external IP changes**" in lines
    assert (
        "> ⚠️ **External IP changes**: the floating IP 172.24.4.10 is replaced; the new address "
        "is 172.24.4.99" in lines
    )
    assert "| | resource | type | change | details |" in lines
    assert (
        "| `+-` | `fip` | FloatingIp | replace | "
        "`address: 172.24.4.10 -> 172.24.4.99 (forces replacement)` |" in lines
    )
    assert "#### `shop/api`: no changes" in lines
    assert lines.count("| | resource | type | change | details |") == 1  # no table without rows
    assert "- `svc/app.yaml:12` Deployment `web`: not a Service (Deployment)" in lines
    assert md.endswith("</details>\n")


def test_markdown_escapes_table_cells() -> None:
    change = PropertyChange("description", "update", "a|b", "c")
    found = rows(step("lb", LB, "update", change))
    md = render_markdown(PreviewReport(services=(service(rows=found),)))
    assert "`description: a\\|b -> c`" in md


def test_input_errors_in_every_format() -> None:
    report = PreviewReport(
        errors=("svc/web.yaml:1: Service default/web: metadata.annotations[\"x\"]: 'abc' bad",)
    )
    assert render(report, "text").startswith("invalid input, nothing was previewed:\n  svc/web")
    assert render(report, "markdown").splitlines()[:3] == [
        "### lb-reconciler preview: invalid input, nothing was previewed",
        "",
        "- svc/web.yaml:1: Service default/web: metadata.annotations[\"x\"]: 'abc' bad",
    ]
    assert json.loads(render(report, "json"))["exitCode"] == 1


def test_a_service_no_longer_served_is_deleted_on_apply() -> None:
    skip = Skipped(
        "svc/web.yaml:1", "Service", "web", "type ClusterIP, not LoadBalancer", "default/web"
    )
    report = deleted(skip, stack="prod.default.web", current_ip="172.24.4.10")
    assert (report.key, report.status) == ("default/web", "deleted")
    assert report.external_ip == (
        "type ClusterIP, not LoadBalancer: the load balancer and its address 172.24.4.10 are "
        "deleted",
    )
    text = render_text(PreviewReport(services=(report,), skipped=(skip,)))
    assert (
        "default/web (svc/web.yaml:1, stack prod.default.web): its load balancer is deleted" in text
    )


def test_long_values_are_cut_in_text_but_not_in_json() -> None:
    change = PropertyChange("allowedCidrs", "update", ["10.0.0.0/8"] * 10, ["0.0.0.0/0"])
    report = PreviewReport(
        services=(service(rows=rows(step("listener-tcp-80", LISTENER, "update", change))),)
    )
    assert "..." in render_text(report)
    assert json.loads(render_json(report))["services"][0]["resources"][0]["changes"][0]["old"] == [
        "10.0.0.0/8"
    ] * 10  # fmt: skip


def test_a_failed_preview_says_why_and_the_others_still_show() -> None:
    failed = service("failed", error="preview of stack prod.default.web failed: 503 from Octavia")
    report = PreviewReport(services=(failed, service("no-changes", key="shop/api")))
    text = render_text(report)
    assert text.splitlines()[:2] == [
        "default/web (svc/web.yaml:1, stack prod.default.web): preview failed",
        "  error: preview of stack prod.default.web failed: 503 from Octavia",
    ]
    assert "2 Services: 0 with changes, 1 unchanged, 1 failed; 0 documents skipped" in text
    assert "> ❌ preview of stack prod.default.web failed: 503 from Octavia" in render_markdown(
        report
    )
    assert exit_code(report) == 1
