"""bench.evidence: the lines a failed chaos run prints about a Service."""

from __future__ import annotations

from bench.evidence import log_lines, objects_of, stack_lines


def test_log_lines_are_the_last_ones_naming_the_service() -> None:
    text = "\n".join(["a chaos-0001 x", "b chaos-0002", "c chaos-0001 y", "d chaos-0001 z"])
    assert log_lines(text, "chaos-0001", last=2) == ["c chaos-0001 y", "d chaos-0001 z"]


def test_stack_lines_name_each_resource_and_pending_operation() -> None:
    checkpoint = {
        "checkpoint": {
            "latest": {
                "resources": [
                    {"urn": "urn:pulumi:s::p::pulumi:pulumi:Stack::p-s", "custom": False},
                    {
                        "urn": "urn:pulumi:s::p::openstack:lb::listener-tcp-443",
                        "custom": True,
                        "id": "L1",
                    },
                ],
                "pending_operations": [
                    {"type": "creating", "resource": {"urn": "urn:pulumi:s::p::t::pool-tcp-443"}}
                ],
            }
        }
    }
    assert stack_lines(checkpoint) == ["state listener-tcp-443 L1", "pending creating pool-tcp-443"]


def test_objects_of_lists_the_load_balancer_and_its_children() -> None:
    resources = {
        "loadbalancers": [
            {"id": "LB", "name": "mine", "provisioning_status": "ACTIVE"},
            {"id": "X", "name": "other", "provisioning_status": "ACTIVE"},
        ],
        "listeners": [
            {
                "id": "L",
                "protocol": "TCP",
                "protocol_port": 443,
                "provisioning_status": "ACTIVE",
                "default_pool_id": None,
                "loadbalancers": [{"id": "LB"}],
            },
            {"id": "M", "protocol": "TCP", "protocol_port": 80, "loadbalancers": [{"id": "X"}]},
        ],
        "pools": [
            {
                "id": "P",
                "provisioning_status": "ACTIVE",
                "loadbalancers": [{"id": "LB"}],
                "listeners": [],
            },
        ],
    }
    assert objects_of(resources, "mine") == [
        "cloud loadbalancer LB ACTIVE",
        "cloud listener L TCP:443 ACTIVE pool=None",
        "cloud pool P ACTIVE listeners=[]",
    ]
