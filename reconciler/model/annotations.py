"""Service annotation names (OCCM's) and a typed, error-collecting reader for them.

OCCM reads annotations leniently: a value that is not exactly ``true``/``false`` or not an integer
silently falls back to the default. That hides mistakes (``keep-floatingip: "True"`` would delete
the floating IP), so here every malformed value is a :class:`ValidationError` naming the
annotation, the value and the accepted form. As in OCCM, an annotation that is present with an
empty value is *present*: ``floating-network-id: ""`` means "no configured network", not "use
cloud.conf".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from reconciler.model.errors import ValidationError, annotation_field
from reconciler.model.naming import CLUSTER_ID_TAG_PREFIX, SERVICE_PREFIX

__all__ = [
    "AnnotationReader",
    "is_uuid",
]

PREFIX = "loadbalancer.openstack.org/"
INTERNAL = "service.beta.kubernetes.io/openstack-internal-load-balancer"
SOURCE_RANGES = "service.beta.kubernetes.io/load-balancer-source-ranges"
NODE_SELECTOR = PREFIX + "node-selector"
CONNECTION_LIMIT = PREFIX + "connection-limit"
FLOATING_NETWORK_ID = PREFIX + "floating-network-id"
FLOATING_SUBNET = PREFIX + "floating-subnet"
FLOATING_SUBNET_ID = PREFIX + "floating-subnet-id"
FLOATING_SUBNET_TAGS = PREFIX + "floating-subnet-tags"
CLASS = PREFIX + "class"
KEEP_FLOATING_IP = PREFIX + "keep-floatingip"
PORT_ID = PREFIX + "port-id"
LB_METHOD = PREFIX + "lb-method"
PROXY_PROTOCOL = PREFIX + "proxy-protocol"
SUBNET_ID = PREFIX + "subnet-id"
NETWORK_ID = PREFIX + "network-id"
MEMBER_SUBNET_ID = PREFIX + "member-subnet-id"
TIMEOUT_CLIENT_DATA = PREFIX + "timeout-client-data"
TIMEOUT_MEMBER_CONNECT = PREFIX + "timeout-member-connect"
TIMEOUT_MEMBER_DATA = PREFIX + "timeout-member-data"
TIMEOUT_TCP_INSPECT = PREFIX + "timeout-tcp-inspect"
X_FORWARDED_FOR = PREFIX + "x-forwarded-for"
FLAVOR_ID = PREFIX + "flavor-id"
AVAILABILITY_ZONE = PREFIX + "availability-zone"
ENABLE_HEALTH_MONITOR = PREFIX + "enable-health-monitor"
HEALTH_MONITOR_DELAY = PREFIX + "health-monitor-delay"
HEALTH_MONITOR_TIMEOUT = PREFIX + "health-monitor-timeout"
HEALTH_MONITOR_MAX_RETRIES = PREFIX + "health-monitor-max-retries"
HEALTH_MONITOR_MAX_RETRIES_DOWN = PREFIX + "health-monitor-max-retries-down"
HOSTNAME = PREFIX + "hostname"
LOAD_BALANCER_ADDRESS = PREFIX + "load-balancer-address"  # written by the controller, not read
TLS_CONTAINER_REF = PREFIX + "default-tls-container-ref"
LOAD_BALANCER_ID = PREFIX + "load-balancer-id"
# OCCM 2.36 (PR #3149): extra tags, comma- or space-separated, on the load balancer (added to
# the tags it has: it may be shared), on the Service's listeners and on their pools
LOAD_BALANCER_TAGS = PREFIX + "load-balancer-tags"
LISTENER_TAGS = PREFIX + "listener-tags"
POOL_TAGS = PREFIX + "pool-tags"
# the tags OCCM and this controller count owners and clusters by: not the user's to set
RESERVED_TAG_PREFIXES = (SERVICE_PREFIX, CLUSTER_ID_TAG_PREFIX)
MAX_TAG_LENGTH = 255  # Octavia's limit for one tag

_UUID = re.compile(r"^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$")


def is_uuid(text: str) -> bool:
    return bool(_UUID.match(text))


class AnnotationReader:
    """Reads ``metadata.annotations``; malformed values go to ``errors``, defaults come back."""

    def __init__(self, annotations: Any) -> None:
        self._values: Mapping[str, Any] = annotations if isinstance(annotations, Mapping) else {}
        self.errors: list[ValidationError] = []

    def _error(self, key: str, value: str, reason: str, fix: str) -> None:
        self.errors.append(ValidationError(annotation_field(key), value, reason, fix))

    def has(self, key: str) -> bool:
        return key in self._values

    def string(self, key: str) -> str | None:
        """The value, ``""`` when present but empty, None when absent."""
        if key not in self._values:
            return None
        value = self._values[key]
        return value if isinstance(value, str) else str(value)

    def boolean(self, key: str, *, default: bool) -> bool:
        value = self.string(key)
        if value is None:
            return default
        if value in ("true", "false"):
            return value == "true"
        self._error(key, value, "is not a boolean", 'write "true" or "false" (lower case, quoted)')
        return default

    def integer(
        self, key: str, *, default: int, minimum: int, maximum: int | None = None, unit: str = ""
    ) -> int:
        value = self.string(key)
        if value is None:
            return default
        try:
            number = int(value.strip(), 10)
        except ValueError:
            fix = f'write a whole number{unit}, e.g. "{max(default, minimum)}"'
            self._error(key, value, "is not an integer", fix)
            return default
        if number < minimum:
            self._error(key, value, f"is below {minimum}", f"use {minimum} or more{unit}")
            return default
        if maximum is not None and number > maximum:
            fix = f"use {minimum} to {maximum}{unit}"
            self._error(key, value, f"is above {maximum}", fix)
            return default
        return number

    def tags(self, key: str) -> tuple[str, ...]:
        """A list of tags as OCCM splits it (at commas and white space; empty ones dropped),
        each once, in order. A tag longer than Octavia allows, or one starting like the tags
        OCCM and this controller count Services and clusters by, is an error."""
        value = self.string(key)
        if not value:
            return ()
        found = tuple(dict.fromkeys(t for t in re.split(r"[\s,]+", value) if t))
        long = [t for t in found if len(t) > MAX_TAG_LENGTH]
        if long:
            reason = f"has a tag longer than {MAX_TAG_LENGTH} characters ({long[0][:20]}...)"
            self._error(key, value, reason, f"shorten each tag to {MAX_TAG_LENGTH} characters")
            return ()
        reserved = [t for t in found if t.startswith(RESERVED_TAG_PREFIXES)]
        if reserved:
            reason = f"has the tag {reserved[0]!r}, which is how Services and clusters are counted"
            fix = "remove tags starting with " + " or ".join(RESERVED_TAG_PREFIXES)
            self._error(key, value, reason, fix)
            return ()
        return found

    def uuid(self, key: str) -> str | None:
        """An OpenStack id; ``""`` (present but empty) is kept, meaning "none"."""
        value = self.string(key)
        if value is None or value == "":
            return value
        if not is_uuid(value.strip()):
            fix = "use the UUID shown by `openstack ... show -c id`"
            self._error(key, value, "is not an OpenStack id (a UUID)", fix)
            return None
        return value.strip()
