"""Which documents `preview` previews, what Kubernetes would fill in, and errors that name the file,
the Service, the field and the fix."""

from __future__ import annotations

import functools
from typing import Any

from reconciler.cli.manifests import Document, parse_text
from reconciler.cli.preview_plan import Target, build, complete, nodes_of, select_services
from reconciler.controller.sync_plan import ControllerSettings
from reconciler.model import build_spec
from tests.builders import example_service, make_service
from tests.unit.model_helpers import NODES, UUID1, config_from

CONFIG = config_from(
    f"[Global]\nauth-url = https://keystone.example/v3\n[LoadBalancer]\nsubnet-id = {UUID1}\n"
)
SETTINGS = ControllerSettings(cluster_name="prod")
A = "loadbalancer.openstack.org/"


def doc(body: dict[str, Any], line: int = 1) -> Document:
    return Document("svc.yaml", line, body)


# a Service as written in git: no namespace unless given, no selector, one bare port
svc = functools.partial(make_service, selector=None, ports=[{"port": 80}])


def test_select_defaults_the_namespace_and_lists_what_is_skipped() -> None:
    docs = [
        doc(svc("web"), 1),
        doc(svc("api", namespace="shop"), 9),
        doc({"kind": "Deployment", "metadata": {"name": "web"}}, 20),
        doc(svc("cache", type="ClusterIP"), 30),
        doc(svc("edge", loadBalancerClass="example.com/lb"), 40),
    ]
    targets, skipped, errors = select_services(docs, settings=SETTINGS, namespace="team")
    assert errors == []
    assert [(t.key, t.where) for t in targets] == [
        ("team/web", "svc.yaml:1"),
        ("shop/api", "svc.yaml:9"),
    ]
    assert [(s.where, s.kind, s.key or s.name, s.reason) for s in skipped] == [
        ("svc.yaml:20", "Deployment", "web", "not a Service (Deployment)"),
        ("svc.yaml:30", "Service", "team/cache", "type ClusterIP, not LoadBalancer"),
        ("svc.yaml:40", "Service", "team/edge",
         "loadBalancerClass example.com/lb is not served (add --load-balancer-class "
         "example.com/lb to serve it)"),
    ]  # fmt: skip
    assert docs[0].body["metadata"] == {"name": "web"}  # the document itself is not changed


def test_owned_classes_and_only_owned_classes_as_the_controller() -> None:
    settings = ControllerSettings(owned_classes=frozenset({"example.com/lb"}), serve_default=False)
    docs = [doc(svc("edge", loadBalancerClass="example.com/lb")), doc(svc("plain"))]
    targets, skipped, _ = select_services(docs, settings=settings, namespace="default")
    assert [t.key for t in targets] == ["default/edge"]
    assert [s.reason for s in skipped] == ["no loadBalancerClass, and --only-owned-classes is set"]


def test_duplicates_unnamed_services_and_unquoted_annotations_are_errors() -> None:
    bool_annotation = svc("web")
    bool_annotation["metadata"]["annotations"] = {A + "x-forwarded-for": True}
    docs = [
        doc(bool_annotation, 1),
        doc(svc("web", namespace="default"), 12),
        doc({"kind": "Service", "metadata": {}}, 20),
    ]
    _, _, errors = select_services(docs, settings=SETTINGS, namespace="default")
    assert [str(e) for e in errors] == [
        'svc.yaml:1: Service default/web: metadata.annotations["loadbalancer.openstack.org/'
        'x-forwarded-for"]: True is a bool, and annotation values must be strings (the API '
        'server refuses the manifest); fix: quote it: "true"',
        "svc.yaml:12: Service default/web: is defined twice (also at svc.yaml:1); fix: keep one "
        "of them",
        "svc.yaml:20: a Service without metadata.name; fix: name the Service",
    ]


def test_nodes_of() -> None:
    docs = [doc({"kind": "Node", "metadata": {"name": "a"}}), doc(svc("web"))]
    assert nodes_of(docs) == [{"kind": "Node", "metadata": {"name": "a"}}]


def applied_spec(service: dict[str, Any]):  # type: ignore[no-untyped-def]
    result = build_spec(service=service, nodes=NODES, config=CONFIG, cluster_name="prod")
    assert result.spec is not None
    return result.spec


def test_complete_takes_uid_and_node_ports_from_the_applied_spec() -> None:
    live = example_service(
        ports=[
            {"name": "http", "port": 80, "protocol": "TCP", "nodePort": 31080},
            {"name": "dns", "port": 53, "protocol": "UDP", "nodePort": 31053},
        ]
    )
    applied = applied_spec(live)
    in_git = svc(
        "example-service",
        ports=[
            {"name": "http", "port": 80},  # TCP by default: keeps 31080
            {"name": "dns", "port": 53, "protocol": "UDP"},  # keeps 31053
            {"name": "dns-tcp", "port": 53},  # new: a placeholder
            {"name": "fixed", "port": 8080, "nodePort": 30001},  # given: kept
        ],
    )
    filled, notes = complete(in_git, applied)
    assert filled["metadata"]["uid"] == live["metadata"]["uid"]
    assert [p["nodePort"] for p in filled["spec"]["ports"]] == [31080, 31053, 32767, 30001]
    assert notes == (
        "spec.ports[2] (TCP 53) has no nodePort yet: previewed with 32767; Kubernetes allocates "
        "the real one",
    )
    assert "nodePort" not in in_git["spec"]["ports"][0]  # the input is not changed


def test_complete_a_new_service_and_health_check_node_port() -> None:
    local = svc("web", externalTrafficPolicy="Local", ports=[{"port": 80, "nodePort": 32767}])
    filled, notes = complete(local, None)
    assert filled["spec"]["healthCheckNodePort"] == 32766  # 32767 is taken
    assert notes == (
        "spec.healthCheckNodePort is not set yet: previewed with 32766; Kubernetes allocates the "
        "real one",
    )
    live = svc("web", externalTrafficPolicy="Local", healthCheckNodePort=31999,
               ports=[{"port": 80, "nodePort": 31000}])  # fmt: skip
    live["metadata"].update(uid="u-1", annotations={A + "enable-health-monitor": "true"})
    applied = applied_spec(live)
    filled, notes = complete(svc("web", externalTrafficPolicy="Local"), applied)
    assert (filled["spec"]["healthCheckNodePort"], notes) == (31999, ())


def test_complete_without_node_ports() -> None:
    none = svc("web", allocateLoadBalancerNodePorts=False)
    filled, notes = complete(none, None)
    assert ("nodePort" not in filled["spec"]["ports"][0], notes) == (True, ())


def test_build_names_file_service_field_and_fix() -> None:
    (target,), _, _ = select_services(
        parse_text(
            "kind: Service\nmetadata:\n  name: web\n  annotations:\n"
            f'    {A}connection-limit: "abc"\n'
            "spec:\n  type: LoadBalancer\n  ports: [{port: 80, protocol: ICMP}]\n",
            source="web.yaml",
        ).documents,
        settings=SETTINGS,
        namespace="default",
    )
    service, _ = complete(target.service, None)
    spec, errors, _ = build(target, service, nodes=NODES, config=CONFIG, settings=SETTINGS)
    assert spec is None
    assert sorted(str(e) for e in errors) == [
        'web.yaml:1: Service default/web: metadata.annotations["loadbalancer.openstack.org/'
        "connection-limit\"]: 'abc' is not an integer; fix: write a whole number (-1 for "
        'unlimited), e.g. "-1"',
        "web.yaml:1: Service default/web: spec.ports[0].protocol: 'ICMP' is not a protocol a load "
        "balancer can carry; fix: use TCP, UDP or SCTP",
    ]


def test_build_gives_the_controllers_spec() -> None:
    target = Target(doc(svc("web", namespace="default")), svc("web", namespace="default"))
    service, _ = complete(target.service, None)
    spec, errors, notices = build(target, service, nodes=NODES, config=CONFIG, settings=SETTINGS)
    assert errors == []
    assert spec is not None
    assert spec.name == "kube_service_prod_default_web"
    assert [m.name for m in spec.listeners[0].pool.members] == ["worker-a", "worker-b"]
    assert notices == ()
