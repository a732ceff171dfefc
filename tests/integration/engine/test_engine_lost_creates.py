"""A create the cloud carried out but reported as failed must not leave a second object behind.

Found by the chaos run (docs/chaos.md): Neutron made the floating IP, then the provider's wait
for it hit an error, and the provider returned the error without the ID. Pulumi kept nothing,
and the next ``up`` made a second floating IP; the first one leaked. The next ``ensure`` must
find it (by the Service's description) and adopt it.
"""

from __future__ import annotations

import pytest

from reconciler.engine.errors import EngineError
from tests.builders import stored_service
from tests.integration.engine.conftest import Env, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow


def test_floating_ip_made_before_its_create_failed_is_adopted(fault_env: tuple[Env, str]) -> None:
    env, _admin = fault_env
    config = env.config()
    spec = spec_for(stored_service("fip-lost"), config)
    stack = env.engine(config).stack(service=spec.service)

    # the provider's wait for the new floating IP gets a 409: its create "fails"
    rule = {"operation": "neutron.floatingip.show", "status": 409, "count": 1}
    env.cloud.post("/faults/rules", rule)
    with pytest.raises(EngineError, match="floating"):
        stack.ensure(spec)
    env.cloud.clear_faults()
    made = only(env.cloud.inventory()["floatingips"])  # it is there, but no state has it

    result = stack.ensure(spec)

    fip = only(env.cloud.inventory()["floatingips"])
    assert fip["id"] == made["id"]
    assert result.outputs["floating_ip"] == fip["floating_ip_address"]
    assert fip["port_id"] == only(env.cloud.lbs())["vip_port_id"]
    assert not stack.ensure(spec).changed
    assert stack.delete().existed
    assert env.cloud.inventory()["floatingips"] == []


@pytest.mark.parametrize("operation", ["neutron.floatingip.create", "octavia.loadbalancer.create"])
def test_an_object_whose_create_answer_was_lost_goes_with_its_deleted_service(
    fault_env: tuple[Env, str], operation: str
) -> None:
    """Found by the CI chaos run (seed 7): a floating IP and its port outlived their Service.

    The cloud made the object and the answer was lost, so the ``up`` failed with no ID and no
    pending operation in the state; then the Service was deleted. ``delete`` recovered without
    a spec, so it never looked for what the last ``up`` was asked to make: ``destroy`` removed
    what the state held and the object stayed for ever."""
    env, _admin = fault_env
    config = env.config()
    name = "gone-" + operation.split(".")[1]
    spec = spec_for(stored_service(name), config)
    stack = env.engine(config).stack(service=spec.service)

    env.cloud.post("/faults/rules", {"operation": operation, "drop": True, "after": True})
    with pytest.raises(EngineError):
        stack.ensure(spec)
    env.cloud.clear_faults()
    kind = "floatingips" if operation.startswith("neutron") else "loadbalancers"
    assert len(env.cloud.inventory()[kind]) == 1  # made, but no state has it

    assert stack.delete().existed

    assert env.cloud.created() == {}  # no floating IP, its port, load balancer or VIP port
