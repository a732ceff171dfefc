"""What the model says about bad or doubtful input, as data (it never raises for bad input).

A :class:`ValidationError` stops the Service from being changed: the controller reports it as a
Warning Event and leaves the load balancer as it was. A :class:`Notice` is something the user
should know while the load balancer is still built (an eligible Node without an address, a
health-check port that goes unused). ``field`` names where the value came from, in the user's
terms: ``metadata.annotations["loadbalancer.openstack.org/connection-limit"]``,
``spec.ports[1].protocol`` or ``cloud.conf [LoadBalancer] lb-method``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Notice", "ValidationError", "annotation_field", "config_field"]


@dataclass(frozen=True)
class ValidationError:
    field: str
    value: str
    reason: str
    fix: str

    def __str__(self) -> str:
        return f"{self.field}: {self.value!r} {self.reason}; {self.fix}"


@dataclass(frozen=True)
class Notice:
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def annotation_field(key: str) -> str:
    return f'metadata.annotations["{key}"]'


def config_field(section: str, key: str) -> str:
    return f"cloud.conf [{section}] {key}"
