"""``build_spec``: one Service + its candidate Nodes + cloud.conf -> a LoadBalancerSpec, or errors.

This is the composition only; every decision it uses has a name in :mod:`.network` (where the load
balancer lives) or :mod:`.traffic` (how traffic flows) or :mod:`reconciler.model.nodes` (which
Nodes). All problems are collected, not just the first, so one Warning Event can list them all; if
there is any :class:`ValidationError` there is no spec, so the caller leaves the cloud as it was.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.config import LB_METHODS, CloudConfig, LoadBalancerConfig, method_unsupported
from reconciler.model import annotations as a
from reconciler.model import naming, network, traffic
from reconciler.model import nodes as node_rules
from reconciler.model.annotations import AnnotationReader
from reconciler.model.errors import Notice, ValidationError, annotation_field, config_field
from reconciler.model.spec import (
    ListenerSpec,
    LoadBalancerSpec,
    MemberSpec,
    PoolSpec,
    SecurityGroupRuleSpec,
    SecurityGroupSpec,
    ServiceRef,
)
from reconciler.model.view import ServiceView, read_service

__all__ = ["BuildResult", "build_spec"]


@dataclass(frozen=True)
class BuildResult:
    """``spec`` is set exactly when ``errors`` is empty; ``notices`` may accompany either."""

    spec: LoadBalancerSpec | None
    errors: tuple[ValidationError, ...]
    notices: tuple[Notice, ...]

    @property
    def ok(self) -> bool:
        return self.spec is not None


def _lb_method(
    reader: AnnotationReader, lb: LoadBalancerConfig
) -> tuple[str, list[ValidationError]]:
    annotated = reader.string(a.LB_METHOD)
    method = annotated or lb.lb_method
    where = (
        annotation_field(a.LB_METHOD) if annotated else config_field("LoadBalancer", "lb-method")
    )
    if method not in LB_METHODS:
        fix = "use one of " + ", ".join(LB_METHODS)
        return lb.lb_method, [
            ValidationError(where, method, "is not a load-balancing algorithm", fix)
        ]
    refused = method_unsupported(lb.lb_provider, method)
    return method, [ValidationError(where, method, *refused)] if refused is not None else []


def _node_selector(
    reader: AnnotationReader, lb: LoadBalancerConfig
) -> tuple[node_rules.NodeSelector, list[ValidationError]]:
    annotated = reader.string(a.NODE_SELECTOR)
    text = annotated if annotated is not None else lb.node_selector
    where = (
        annotation_field(a.NODE_SELECTOR)
        if annotated is not None
        else config_field("LoadBalancer", "node-selector")
    )
    selector = node_rules.parse_node_selector(text=text)
    fix = 'write label selectors as "key=value, key2" (a bare key needs only the label)'
    return selector, [ValidationError(where, text, p, fix) for p in selector.problems]


def _optional_feature(
    reader: AnnotationReader, key: str, default: str, supported: bool, uuid: bool
) -> tuple[str | None, list[Notice]]:
    value = (reader.uuid(key) if uuid else reader.string(key)) if reader.has(key) else default
    if value and not supported:
        return None, [Notice(annotation_field(key), "ignored: the provider does not support it")]
    return value or None, []


def _security_group(
    view: ServiceView,
    cluster_name: str,
    family: str | None,
    cidrs: tuple[str, ...],
    use_cidrs: bool,
) -> SecurityGroupSpec:
    """OCCM ``ensureAndUpdateOctaviaSecurityGroup``: open the node ports (and the health-check
    port) to the member subnet; with ovn, which keeps client addresses, to the source ranges."""
    default_type = "IPv6" if family == "IPv6" else "IPv4"
    rules: set[SecurityGroupRuleSpec] = set()
    if view.health_check_node_port:
        hc = view.health_check_node_port
        rules.add(SecurityGroupRuleSpec("tcp", default_type, hc, hc, None))
    for port in view.ports:
        if port.node_port == 0:
            continue
        for cidr in cidrs if use_cidrs else (None,):
            ether = default_type
            if cidr is not None:
                ether = f"IPv{ipaddress.ip_network(cidr).version}"
            rule = SecurityGroupRuleSpec(
                port.protocol.lower(), ether, port.node_port, port.node_port, cidr
            )
            rules.add(rule)
    ordered = tuple(
        sorted(
            rules,
            key=lambda r: (r.port_range_min, r.protocol, r.ethertype, r.remote_ip_prefix or ""),
        )
    )
    ident = {"namespace": view.namespace, "name": view.name}
    return SecurityGroupSpec(
        naming.security_group_name(uid=view.uid, **ident),
        naming.security_group_description(cluster_name=cluster_name, **ident),
        ordered,
    )


def build_spec(
    *,
    service: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    config: CloudConfig,
    cluster_name: str,
) -> BuildResult:
    """Decide the load balancer for ``service``. Never raises for bad input."""
    view, errors = read_service(service)
    if view is None:
        return BuildResult(None, tuple(errors), ())
    lb = config.load_balancer
    reader = AnnotationReader(view.annotations)
    notices: list[Notice] = []
    features = traffic.provider_features(lb.lb_provider)
    family = network.preferred_family(view)
    internal = network.is_internal(reader, lb)
    cls, found = network.choose_class(reader, config)
    errors += found
    place = network.placement(reader, lb, cls)
    ident = {"cluster_name": cluster_name, "namespace": view.namespace, "name": view.name}
    lb_name = naming.lb_name(**ident)
    fip, found = network.floating_ip(
        reader=reader,
        view=view,
        lb=lb,
        cls=cls,
        internal=internal,
        family=family,
        description=naming.floating_ip_description(**ident),
    )
    errors += found + network.load_balancer_ip(view, family)
    cidrs, explicit, found = network.allowed_cidrs(view, family)
    errors += found
    if explicit and not features.vip_acl and not lb.manage_security_groups:
        reason = f"cannot be enforced by the {lb.lb_provider} provider without security groups"
        fix = "set manage-security-groups=true in cloud.conf, or remove the source ranges"
        errors.append(
            ValidationError("spec.loadBalancerSourceRanges", ",".join(cidrs), reason, fix)
        )
    options, found = traffic.protocol_options(reader, lb, features)
    errors += found
    method, found = _lb_method(reader, lb)
    errors += found
    limit = reader.integer(a.CONNECTION_LIMIT, default=-1, minimum=-1, unit=" (-1 for unlimited)")
    times, notes = traffic.timeouts(reader, features)
    notices += notes
    monitor, found, notes = traffic.monitor_settings(reader, lb, view)
    errors += found
    notices += notes
    flavor, notes = _optional_feature(
        reader, a.FLAVOR_ID, lb.flavor_id, features.flavors, uuid=True
    )
    notices += notes
    zone, notes = _optional_feature(
        reader, a.AVAILABILITY_ZONE, lb.availability_zone, features.availability_zones, uuid=False
    )
    notices += notes
    existing_lb = reader.uuid(a.LOAD_BALANCER_ID) or None
    selector, found = _node_selector(reader, lb)
    errors += found
    choice = node_rules.choose_nodes(nodes=nodes, selector=selector, family=family)
    if not choice.backends:
        notices.append(Notice("nodes", "there are no available nodes for the load balancer"))
    for name in choice.without_address:
        notices.append(
            Notice(
                f"nodes[{name}]", "left out: no InternalIP or ExternalIP of the Service's family"
            )
        )
    persistence = "SOURCE_IP" if view.session_affinity == "ClientIP" else None
    lb_tags, listener_tags = reader.tags(a.LOAD_BALANCER_TAGS), reader.tags(a.LISTENER_TAGS)
    pool_tags = reader.tags(a.POOL_TAGS)
    headers = (("X-Forwarded-For", "true"),) if options.x_forwarded_for else ()
    listener_acl = cidrs if features.vip_acl else ()
    listeners = []
    for port in view.ports:
        errors += traffic.port_problems(port, options)
        l_proto = traffic.listener_protocol(port, options)
        mon = traffic.monitor_spec(
            port, monitor, features, naming.monitor_name(index=port.index, lb=lb_name)
        )
        monitor_port = (
            monitor.health_check_node_port if mon is not None and mon.type == "HTTP" else None
        )
        members = (
            ()
            if port.node_port == 0
            else tuple(
                MemberSpec(n, addr, port.node_port, place.member_subnet_id, monitor_port)
                for n, addr in choice.backends
            )
        )
        pool = PoolSpec(
            naming.pool_name(index=port.index, lb=lb_name),
            traffic.pool_protocol(l_proto, options),
            method,
            persistence,
            members,
            mon,
            tags=pool_tags,
        )
        listeners.append(
            ListenerSpec(
                index=port.index,
                name=naming.listener_name(index=port.index, lb=lb_name),
                protocol=l_proto,
                protocol_port=port.port,
                service_protocol=port.protocol,
                node_port=port.node_port,
                connection_limit=limit,
                timeout_client_data=times.client_data,
                timeout_member_connect=times.member_connect,
                timeout_member_data=times.member_data,
                timeout_tcp_inspect=times.tcp_inspect,
                allowed_cidrs=listener_acl,
                insert_headers=headers,
                default_tls_container_ref=options.tls_container_ref,
                tags=(lb_name, *listener_tags),
                pool=pool,
            )
        )
    has_vip = place.vip_subnet_id or place.vip_network_id or place.vip_port_id
    if not has_vip and not choice.backends:
        reason = "has no eligible Node to find the VIP subnet from"
        fix = (
            f"set subnet-id in cloud.conf or the {a.SUBNET_ID} annotation, or make a Node eligible"
        )
        errors.append(ValidationError("nodes", "", reason, fix))
    errors += reader.errors
    if errors:
        return BuildResult(None, tuple(dict.fromkeys(errors)), tuple(notices))
    vip_address = (
        view.load_balancer_ip if view.load_balancer_ip and (internal or family == "IPv6") else None
    )
    sg = (
        _security_group(view, cluster_name, family, cidrs, not features.vip_acl)
        if lb.manage_security_groups
        else None
    )
    spec = LoadBalancerSpec(
        service=ServiceRef(view.namespace, view.name, view.uid),
        cluster_name=cluster_name,
        name=lb_name,
        description=naming.lb_description(**ident),
        tags=(lb_name,),
        extra_tags=lb_tags,
        existing_lb_id=existing_lb,
        provider=lb.lb_provider,
        flavor_id=flavor,
        availability_zone=zone,
        ip_family=family,
        internal=internal,
        vip_subnet_id=place.vip_subnet_id,
        vip_network_id=place.vip_network_id,
        vip_port_id=place.vip_port_id,
        vip_address=vip_address,
        vip_autodetect_address=None if has_vip or not choice.backends else choice.backends[0][1],
        member_subnet_id=place.member_subnet_id,
        floating_ip=fip,
        listeners=tuple(listeners),
        security_group=sg,
        status=traffic.status_for(reader, lb, options),
        max_shared_lb=lb.max_shared_lb,
    )
    return BuildResult(spec, (), tuple(notices))
