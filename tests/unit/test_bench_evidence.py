"""bench.evidence: the lines a failed chaos run prints about a Service or a cloud orphan."""

from __future__ import annotations

from bench.evidence import log_lines, objects_of, orphan, orphan_key, stack_lines


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


FIP = "9b87bca8-0000-4000-8000-000000000001"
PORT = "3cc80166-0000-4000-8000-000000000002"
RESOURCES = {
    "floatingips": [
        {
            "id": FIP,
            "floating_ip_address": "172.24.4.9",
            "description": "Floating IP for Kubernetes external service default/chaos-0003 "
            "from cluster chaos",
            "port_id": None,
        }
    ],
    "ports": [
        {"id": PORT, "device_owner": "network:floatingip", "device_id": FIP, "name": ""},
    ],
}


def test_orphan_key_reads_the_cloud_violation() -> None:
    assert orphan_key(f"floatingip {FIP} has no Service") == ("floatingips", FIP)
    assert orphan_key(f"loadbalancer {FIP} (kube_service_x) has no Service") == (
        "loadbalancers",
        FIP,
    )
    assert orphan_key("no load balancer named x") is None


def test_a_floating_ip_port_orphan_names_its_floating_ip_and_the_log_lines_of_both() -> None:
    emulator = "\n".join(
        [
            f"12:00 POST /networking/v2.0/floatingips -> dropped after 201 id={FIP} (req-1)",
            "12:00 GET /networking/v2.0/ports -> 200 (req-2)",
        ]
    )
    controller = f'{{"msg": "stack x: deleting floatingips {FIP}"}}\n{{"msg": "172.24.4.9"}}'
    lines = orphan(
        kind="ports",
        rid=PORT,
        resources=RESOURCES,
        log_text=controller,
        emulator_log=emulator,
    )
    assert lines[0].startswith(f"cloud port {PORT} ")
    assert 'device_owner="network:floatingip"' in lines[0]
    assert f'device_id="{FIP}"' in lines[0]
    assert lines[1].startswith(f"cloud floatingip {FIP} ")
    assert "Floating IP for Kubernetes external service default/chaos-0003" in lines[1]
    assert "port_id=null" in lines[1]
    assert (
        f"emulator 12:00 POST /networking/v2.0/floatingips -> dropped after 201 id={FIP} (req-1)"
        in lines
    )
    assert any(line.startswith("log ") and FIP in line for line in lines)


def test_a_floating_ip_orphan_names_its_backing_port_and_its_address_in_the_logs() -> None:
    lines = orphan(
        kind="floatingips",
        rid=FIP,
        resources=RESOURCES,
        log_text='{"msg": "ingress 172.24.4.9"}',
        emulator_log="",
    )
    assert 'floating_ip_address="172.24.4.9"' in lines[0]
    assert lines[1].startswith(f"cloud port {PORT} ")
    assert 'log {"msg": "ingress 172.24.4.9"}' in lines


def test_an_orphan_gone_meanwhile_says_so() -> None:
    assert orphan(kind="ports", rid="x", resources={}, log_text="", emulator_log="") == [
        "cloud port x: gone from the cloud"
    ]


def test_an_orphans_emulator_lines_keep_the_create_that_made_it() -> None:
    emulator = "\n".join(
        [f"POST /networking/v2.0/floatingips -> 201 id={FIP}"]
        + [f"GET /networking/v2.0/floatingips/{FIP} -> 200 #{i}" for i in range(60)]
    )
    lines = orphan(
        kind="floatingips", rid=FIP, resources=RESOURCES, log_text="", emulator_log=emulator
    )
    said = [line for line in lines if line.startswith("emulator ")]
    assert said[0] == f"emulator POST /networking/v2.0/floatingips -> 201 id={FIP}"
    assert said[-1].endswith("#59")
    assert len(said) == 26  # 25 lines and the gap between them
