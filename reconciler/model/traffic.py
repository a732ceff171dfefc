"""How traffic flows: provider features, protocols, timeouts, health monitors, members, status.

One listener and one pool per Service port, as OCCM. The protocol rules, stated once:

* listener: ``TERMINATED_HTTPS`` with a TLS container ref, else ``HTTP`` with x-forwarded-for,
  else the port's protocol (TCP, UDP or SCTP);
* pool: ``PROXY``/``PROXYV2`` with proxy-protocol, else ``HTTP`` with x-forwarded-for or TLS, else
  the listener's protocol;
* monitor: ``HTTP GET /healthz`` (expecting 200) on the health-check node port when the Service has
  ``externalTrafficPolicy: Local`` and the provider can, else ``UDP-CONNECT`` for UDP, else the
  port's protocol. Monitors exist only when enabled (annotation, else ``create-monitor``);
  ``externalTrafficPolicy: Local`` without one is a notice the controller shows as a Warning
  Event (:func:`warning_reason`): OCCM's doc says the monitor is required.

HTTP-level features (x-forwarded-for, TLS, PROXY) need a TCP port; OCCM would send Octavia an
HTTP listener on a UDP port, here that is a validation error. Octavia's limits on monitors
(``1 <= max-retries <= 10``, ``timeout <= delay``) are checked here, not discovered in the cloud.

What the ``ovn`` provider cannot do (OCCM ``IsOctaviaFeatureSupported``): listener ACLs, flavors,
timeouts, availability zones and HTTP monitors. A modern Octavia (API 2.16 or later) is assumed
for every other provider.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.config import LoadBalancerConfig
from reconciler.model import annotations as a
from reconciler.model.annotations import AnnotationReader, is_uuid
from reconciler.model.errors import Notice, ValidationError, annotation_field, config_field
from reconciler.model.spec import MonitorSpec, StatusSpec
from reconciler.model.view import PortView, ServiceView

__all__ = [
    "NO_MONITOR_FIELD",
    "NO_MONITOR_REASON",
    "Features",
    "MonitorSettings",
    "ProtocolOptions",
    "Timeouts",
    "listener_protocol",
    "monitor_settings",
    "monitor_spec",
    "pool_protocol",
    "protocol_options",
    "provider_features",
    "status_for",
    "timeouts",
    "warning_reason",
]


@dataclass(frozen=True)
class Features:
    vip_acl: bool
    flavors: bool
    timeouts: bool
    availability_zones: bool
    http_monitors: bool
    http_monitors_on_udp: bool
    l7: bool  # HTTP listeners, TLS termination, PROXY pools


def provider_features(provider: str) -> Features:
    if provider == "ovn":
        return Features(False, False, False, False, False, False, False)
    return Features(True, True, True, True, True, True, True)


@dataclass(frozen=True)
class ProtocolOptions:
    proxy: str | None  # PROXY or PROXYV2
    x_forwarded_for: bool
    tls_container_ref: str | None


def _tls_ref_problem(ref: str, store: str) -> str | None:
    if store != "barbican":
        return None  # "external": any string, as OCCM
    parts = ref.rstrip("/").split("/")
    if len(parts) < 2 or parts[-2] not in ("containers", "secrets") or not is_uuid(parts[-1]):
        return "is not a Barbican container or secret reference"
    return None


def protocol_options(
    reader: AnnotationReader, lb: LoadBalancerConfig, features: Features
) -> tuple[ProtocolOptions, list[ValidationError]]:
    errors: list[ValidationError] = []
    proxy_raw = reader.string(a.PROXY_PROTOCOL)
    proxy = {"true": "PROXY", "v1": "PROXY", "v2": "PROXYV2"}.get(proxy_raw or "")
    if proxy_raw not in (None, "", "false", "true", "v1", "v2"):
        fix = 'use "true" or "v1" (PROXY v1), "v2" (PROXY v2) or "false"'
        errors.append(
            ValidationError(
                annotation_field(a.PROXY_PROTOCOL), proxy_raw or "", "is not a version", fix
            )
        )
    xff = reader.boolean(a.X_FORWARDED_FOR, default=False)
    if proxy and xff:
        reason = f"cannot be used together with {a.X_FORWARDED_FOR}"
        fix = "keep one: PROXY protocol for any TCP backend, or X-Forwarded-For for HTTP"
        errors.append(
            ValidationError(annotation_field(a.PROXY_PROTOCOL), proxy_raw or "", reason, fix)
        )
    annotated = reader.string(a.TLS_CONTAINER_REF)
    ref = annotated if annotated is not None else lb.default_tls_container_ref
    where = (
        annotation_field(a.TLS_CONTAINER_REF)
        if annotated is not None
        else config_field("LoadBalancer", "default-tls-container-ref")
    )
    if ref and (problem := _tls_ref_problem(ref, lb.container_store)):
        fix = "use https://<barbican>/v1/containers/<uuid> or .../v1/secrets/<uuid>"
        errors.append(ValidationError(where, ref, problem, fix))
    options = ProtocolOptions(proxy, xff, ref or None)
    if not features.l7 and (proxy or xff or ref):
        key = a.PROXY_PROTOCOL if proxy else a.X_FORWARDED_FOR if xff else a.TLS_CONTAINER_REF
        reason = f"is not supported by the {lb.lb_provider} provider"
        fix = "remove it, or use a provider such as amphora"
        errors.append(ValidationError(annotation_field(key), str(reader.string(key)), reason, fix))
    return options, errors


def listener_protocol(port: PortView, options: ProtocolOptions) -> str:
    if options.tls_container_ref:
        return "TERMINATED_HTTPS"
    return "HTTP" if options.x_forwarded_for else port.protocol


def pool_protocol(listener: str, options: ProtocolOptions) -> str:
    if options.proxy:
        return options.proxy
    if options.x_forwarded_for or options.tls_container_ref:
        return "HTTP"
    return listener


def port_problems(port: PortView, options: ProtocolOptions) -> list[ValidationError]:
    if port.protocol == "TCP" or not (
        options.proxy or options.x_forwarded_for or options.tls_container_ref
    ):
        return []
    reason = "cannot carry PROXY, X-Forwarded-For or TLS termination"
    fix = "use TCP for this port, or drop those annotations"
    return [ValidationError(f"spec.ports[{port.index}].protocol", port.protocol, reason, fix)]


@dataclass(frozen=True)
class Timeouts:
    client_data: int | None
    member_connect: int | None
    member_data: int | None
    tcp_inspect: int | None


def timeouts(reader: AnnotationReader, features: Features) -> tuple[Timeouts, list[Notice]]:
    """Milliseconds; OCCM's defaults 50000/5000/50000/0. None where the provider has none."""
    keys = (
        a.TIMEOUT_CLIENT_DATA,
        a.TIMEOUT_MEMBER_CONNECT,
        a.TIMEOUT_MEMBER_DATA,
        a.TIMEOUT_TCP_INSPECT,
    )
    defaults = (50000, 5000, 50000, 0)
    if not features.timeouts:
        notes = [
            Notice(annotation_field(k), "ignored: the provider has no timeouts")
            for k in keys
            if reader.has(k)
        ]
        return Timeouts(None, None, None, None), notes
    values = [
        reader.integer(k, default=d, minimum=0, unit=" of milliseconds")
        for k, d in zip(keys, defaults, strict=True)
    ]
    return Timeouts(*values), []


# externalTrafficPolicy: Local without a health monitor: a Notice the controller must show as a
# Warning Event with this reason (:func:`warning_reason`), not only log.
NO_MONITOR_FIELD = "spec.externalTrafficPolicy"
NO_MONITOR_REASON = "LoadBalancerHealthMonitorMissing"


def warning_reason(notice: Notice) -> str | None:
    """The Event reason of a notice the user must see as a Warning Event; None for the others
    (they are logged)."""
    return NO_MONITOR_REASON if notice.field == NO_MONITOR_FIELD else None


@dataclass(frozen=True)
class MonitorSettings:
    enabled: bool
    delay: int
    timeout: int
    max_retries: int
    max_retries_down: int
    health_check_node_port: int  # 0: no HTTP monitor


def monitor_settings(
    reader: AnnotationReader, lb: LoadBalancerConfig, view: ServiceView
) -> tuple[MonitorSettings, list[ValidationError], list[Notice]]:
    enabled = reader.boolean(a.ENABLE_HEALTH_MONITOR, default=lb.create_monitor)
    delay = reader.integer(
        a.HEALTH_MONITOR_DELAY,
        default=int(lb.monitor_delay.total_seconds()),
        minimum=0,
        unit=" of seconds",
    )
    timeout = reader.integer(
        a.HEALTH_MONITOR_TIMEOUT,
        default=int(lb.monitor_timeout.total_seconds()),
        minimum=0,
        unit=" of seconds",
    )
    retries = reader.integer(
        a.HEALTH_MONITOR_MAX_RETRIES, default=lb.monitor_max_retries, minimum=1, maximum=10
    )
    down = reader.integer(
        a.HEALTH_MONITOR_MAX_RETRIES_DOWN,
        default=lb.monitor_max_retries_down,
        minimum=1,
        maximum=10,
    )
    errors, notices = [], []
    if enabled and timeout > delay:
        where = annotation_field(
            a.HEALTH_MONITOR_TIMEOUT
            if reader.has(a.HEALTH_MONITOR_TIMEOUT)
            else a.HEALTH_MONITOR_DELAY
        )
        reason = f"gives a monitor timeout ({timeout}s) longer than its delay ({delay}s)"
        fix = "make health-monitor-timeout at most health-monitor-delay"
        errors.append(
            ValidationError(
                where,
                str(
                    reader.string(a.HEALTH_MONITOR_TIMEOUT) or reader.string(a.HEALTH_MONITOR_DELAY)
                ),
                reason,
                fix,
            )
        )
    local = view.external_traffic_policy == "Local"
    hc_port = view.health_check_node_port if enabled and local else 0
    if local and not enabled:
        message = (
            "is Local but the load balancer has no health monitor, which OCCM documents as "
            "required: every Node gets traffic and those without a ready endpoint drop it; set "
            f'the annotation {a.ENABLE_HEALTH_MONITOR}: "true" (or create-monitor = true in '
            "cloud.conf [LoadBalancer]), or use externalTrafficPolicy: Cluster"
        )
        notices.append(Notice(NO_MONITOR_FIELD, message))
    return MonitorSettings(enabled, delay, timeout, retries, down, hc_port), errors, notices


def monitor_spec(
    port: PortView, settings: MonitorSettings, features: Features, name: str
) -> MonitorSpec | None:
    if not settings.enabled:
        return None
    http_ok = features.http_monitors and (port.protocol != "UDP" or features.http_monitors_on_udp)
    common = (settings.delay, settings.timeout, settings.max_retries, settings.max_retries_down)
    if settings.health_check_node_port > 0 and http_ok:
        return MonitorSpec(
            name, "HTTP", *common, http_method="GET", url_path="/healthz", expected_codes="200"
        )
    kind = "UDP-CONNECT" if port.protocol == "UDP" else port.protocol
    return MonitorSpec(name, kind, *common)


def status_for(
    reader: AnnotationReader, lb: LoadBalancerConfig, options: ProtocolOptions
) -> StatusSpec:
    """OCCM ``createLoadBalancerStatus``: hostname annotation, else <ip>.<suffix> with PROXY and
    enable-ingress-hostname, else the IP with ipMode Proxy under PROXY (KEP-1860), else VIP."""
    ip_mode = "Proxy" if options.proxy else "VIP"
    hostname = reader.string(a.HOSTNAME)
    if hostname:
        return StatusSpec(hostname, None, ip_mode)
    if options.proxy and lb.enable_ingress_hostname:
        return StatusSpec(None, lb.ingress_hostname_suffix, ip_mode)
    return StatusSpec(None, None, ip_mode)
