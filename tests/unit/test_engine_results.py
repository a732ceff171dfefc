"""One EnsureResult for the engine and the controller: what its properties read from the outputs,
and that the controller reaches it without loading Pulumi."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from reconciler.engine.results import EnsureResult

LB = "6b2f4a1c-0000-4000-8000-000000000001"


@pytest.mark.parametrize(
    ("outputs", "lb_id", "vip", "fip", "address"),
    [
        (
            {"lb_id": LB, "vip_address": "10.0.0.5", "floating_ip": "172.24.4.10"},
            LB,
            "10.0.0.5",
            "172.24.4.10",
            "172.24.4.10",
        ),
        (
            {"lb_id": LB, "vip_address": "10.0.0.5", "floating_ip": None},
            LB,
            "10.0.0.5",
            None,
            "10.0.0.5",
        ),
        (
            {"lb_id": LB, "vip_address": "10.0.0.5", "floating_ip": ""},
            LB,
            "10.0.0.5",
            None,
            "10.0.0.5",
        ),
        ({}, "", "", None, ""),  # a stack that exported nothing (yet)
    ],
)
def test_properties_read_the_outputs(
    outputs: dict[str, Any], lb_id: str, vip: str, fip: str | None, address: str
) -> None:
    result = EnsureResult(changed=True, spec_hash="h", outputs=outputs)
    assert (result.lb_id, result.vip_address, result.floating_ip, result.address) == (
        lb_id,
        vip,
        fip,
        address,
    )
    assert (result.resource_changes, result.frozen) == ({}, ())


def test_the_controller_side_loads_no_pulumi() -> None:
    code = (
        "import sys\n"
        "import reconciler.engine.results, reconciler.controller.backend\n"
        "import reconciler.controller.sync_plan, reconciler.controller.sync\n"
        "print(sorted(m for m in sys.modules if m == 'pulumi' or m.startswith('pulumi.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
