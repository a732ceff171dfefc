"""Checks across the keys of a parsed cloud.conf: values Octavia would reject later, keys this
controller cannot honour, and keys without effect. Each returns :class:`ConfigIssue` values.

* errors (:func:`check_load_balancer`, :func:`check_global`, :func:`check_matchers`): what OCCM
  would accept but Octavia refuses, surfaced at start-up rather than as one failed load balancer
  after another (an unknown ``lb-method``, ``monitor-timeout`` above ``monitor-delay``,
  retries outside 1..10, OCCM's ``floating-subnet``/``floating-subnet-tags`` syntax), and what
  cannot work here (Keystone trusts; ``cloud`` without ``use-clouds``);
* :func:`refuse_unsupported`: keys OCCM reads that this controller cannot honour: refused,
  never ignored (``enabled = false``, ``cascade-delete = false``,
  ``provider-requires-serial-api-calls = true``);
* warnings (:func:`warn_load_balancer`, :func:`warn_global`): an untested provider, an unknown
  container store, ``max-shared-lb`` below 1, ``clouds-file`` without ``use-clouds``, an
  ``os-endpoint-type`` that names no interface.
"""

from __future__ import annotations

from reconciler.config.settings import AuthConfig, ConfigIssue, LoadBalancerConfig, Secret
from reconciler.config.subnet_match import check_pattern, check_tags

__all__ = [
    "AMPHORA_PROVIDERS",
    "ENDPOINT_TYPES",
    "KNOWN_CONTAINER_STORES",
    "KNOWN_PROVIDERS",
    "LB_METHODS",
    "check_global",
    "check_load_balancer",
    "check_matchers",
    "method_unsupported",
    "refuse_unsupported",
    "warn_global",
    "warn_load_balancer",
]

LB_METHODS = ("ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT")
KNOWN_PROVIDERS = ("amphora", "octavia", "ovn", "f5", "amphorav2")
# Octavia's amphora driver refuses SOURCE_IP_PORT with a 501 (ProviderUnsupportedOptionError,
# octavia/api/drivers/amphora_driver/v2/driver.py); "octavia" and "amphorav2" name that driver
AMPHORA_PROVIDERS = ("amphora", "octavia", "amphorav2")
KNOWN_CONTAINER_STORES = ("barbican", "external")


def check_matchers(section: str, pattern: str, tags: str) -> list[ConfigIssue]:
    """``floating-subnet`` and ``floating-subnet-tags``: OCCM's syntax (:mod:`.subnet_match`)."""
    out = []
    if pattern and (problem := check_pattern(pattern)):
        fix = "write a glob such as public-* or a Go regular expression after '~' ('!' negates)"
        out.append(ConfigIssue(section, "floating-subnet", pattern, problem, fix))
    if tags and (problem := check_tags(tags)):
        fix = 'write tags as "a,b" (any of them); prefix "&" for all of them, "!" to negate'
        out.append(ConfigIssue(section, "floating-subnet-tags", tags, problem, fix))
    return out


def method_unsupported(provider: str, method: str) -> tuple[str, str] | None:
    """(reason, fix) when ``provider``'s driver refuses the load-balancing ``method``: ovn takes
    only SOURCE_IP_PORT, the amphora driver all but it (Octavia's 501, once the load balancer is
    made); None when it takes it. The one rule for cloud.conf and the annotation alike."""
    if provider == "ovn" and method != "SOURCE_IP_PORT":
        return "is not supported by the ovn provider", "use SOURCE_IP_PORT"
    if provider in AMPHORA_PROVIDERS and method == "SOURCE_IP_PORT":
        fix = "use ROUND_ROBIN, LEAST_CONNECTIONS or SOURCE_IP"
        return f"is not supported by the {provider} provider (cloud.conf lb-provider)", fix
    return None


def check_load_balancer(lb: LoadBalancerConfig) -> list[ConfigIssue]:
    s, out = "LoadBalancer", []
    if lb.lb_version not in ("", "v2"):
        out.append(ConfigIssue(s, "lb-version", lb.lb_version, "only v2 exists", "remove it"))
    if lb.lb_method not in LB_METHODS:
        fix = "use one of " + ", ".join(LB_METHODS)
        out.append(ConfigIssue(s, "lb-method", lb.lb_method, "unknown algorithm", fix))
    elif (refused := method_unsupported(lb.lb_provider, lb.lb_method)) is not None:
        out.append(ConfigIssue(s, "lb-method", lb.lb_method, *refused))
    if lb.monitor_timeout > lb.monitor_delay:
        reason = f"longer than monitor-delay ({lb.monitor_delay.total_seconds():g}s)"
        fix = "make monitor-timeout at most monitor-delay"
        value = f"{lb.monitor_timeout.total_seconds():g}s"
        out.append(ConfigIssue(s, "monitor-timeout", value, reason, fix))
    for key, n in (
        ("monitor-max-retries", lb.monitor_max_retries),
        ("monitor-max-retries-down", lb.monitor_max_retries_down),
    ):
        if not 1 <= n <= 10:
            out.append(ConfigIssue(s, key, str(n), "Octavia accepts 1 to 10", "pick 1 to 10"))
    return out + check_matchers(s, lb.floating_subnet, lb.floating_subnet_tags)


def warn_load_balancer(lb: LoadBalancerConfig) -> list[ConfigIssue]:
    s, out = "LoadBalancer", []
    if lb.lb_provider not in KNOWN_PROVIDERS:
        fix = "check the name with `openstack loadbalancer provider list`"
        out.append(ConfigIssue(s, "lb-provider", lb.lb_provider, "untested provider", fix))
    if lb.container_store not in KNOWN_CONTAINER_STORES:
        fix = "use barbican or external"
        out.append(ConfigIssue(s, "container-store", lb.container_store, "unknown store", fix))
    if lb.max_shared_lb < 1:
        fix = "set max-shared-lb to 1 or more (1 disables sharing)"
        value = str(lb.max_shared_lb)
        out.append(ConfigIssue(s, "max-shared-lb", value, "no Service can use a shared LB", fix))
    return out


# --- keys OCCM reads that this controller cannot honour: refused, never ignored -------------


def refuse_unsupported(lb: LoadBalancerConfig) -> list[ConfigIssue]:
    s, out = "LoadBalancer", []
    if not lb.enabled:
        reason = (
            "load balancers are disabled, and they are all lb-reconciler does (OCCM runs no "
            "service controller then)"
        )
        fix = "set enabled = true (or remove it) to run lb-reconciler, or do not deploy it"
        out.append(ConfigIssue(s, "enabled", "false", reason, fix))
    if not lb.cascade_delete:
        reason = (
            "not supported: lb-reconciler deletes a load balancer's children one by one (what "
            "OCCM does with cascade-delete = false) but still cascades a load balancer in ERROR "
            "or one whose children cannot be deleted, and `sweep` deletes with cascade"
        )
        fix = "remove it (the default is true)"
        out.append(ConfigIssue(s, "cascade-delete", "false", reason, fix))
    if lb.provider_requires_serial_api_calls:
        reason = (
            "not supported: listeners and pools are created one by one already, but members are "
            "set with Octavia's batch member update, which this option exists to avoid"
        )
        fix = "remove it (the default is false); no provider without batch member updates is served"
        out.append(ConfigIssue(s, "provider-requires-serial-api-calls", "true", reason, fix))
    return out


def check_global(auth: AuthConfig) -> list[ConfigIssue]:
    s, out = "Global", []
    trust_fix = (
        "log in without a trust: an application credential (application-credential-id and "
        "application-credential-secret) or a user with a password"
    )
    reason = "Keystone trusts are not supported (the OpenStack Pulumi provider cannot use one)"
    for key, value in (
        ("trust-id", auth.trust_id),
        ("trustee-id", auth.trustee_id),
        ("trustee-password", auth.trustee_password),
    ):
        if value:
            shown = "" if isinstance(value, Secret) else str(value)
            out.append(ConfigIssue(s, key, shown, reason, trust_fix))
    if auth.cloud and not auth.use_clouds:
        reason = "names a clouds.yaml entry, which is read only with use-clouds = true"
        fix = (
            "set use-clouds = true (and clouds-file) to take the credentials from it, or remove it"
        )
        out.append(ConfigIssue(s, "cloud", auth.cloud, reason, fix))
    return out


# what gophercloud (OCCM's and the provider's) reads in os-endpoint-type; anything else: public
ENDPOINT_TYPES = ("public", "publicURL", "internal", "internalURL", "admin", "adminURL")


def warn_global(auth: AuthConfig) -> list[ConfigIssue]:
    out = []
    if auth.clouds_file and not auth.use_clouds:
        reason = "is not read without use-clouds = true (as in OCCM)"
        fix = "set use-clouds = true to take the credentials from it, or remove it"
        out.append(ConfigIssue("Global", "clouds-file", auth.clouds_file, reason, fix))
    if auth.endpoint_type and auth.endpoint_type not in ENDPOINT_TYPES:
        reason = "is no endpoint interface: the public endpoints are used (as by OCCM)"
        fix = "set public, internal or admin"
        out.append(ConfigIssue("Global", "os-endpoint-type", auth.endpoint_type, reason, fix))
    return out
