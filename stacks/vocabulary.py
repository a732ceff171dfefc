"""The stack's vocabulary: the words the program, the engine and the CLI must spell alike. Pure.

A stack is read and written from several places: :mod:`stacks.program` declares resources under
logical names, the engine imports cloud objects under those names after a crash or for
``lb-reconciler adopt``, looks them up by type token, deletes them by cloud collection, and sets
the program's configuration; the CLI orders a preview's rows by them. Each word is spelt here,
once, so that a renamed resource cannot leave one reader behind. Nothing here decides anything.

Imports nothing of the project and no Pulumi, so every layer may use it (it sits below
:mod:`reconciler.config`, ``tests/unit/test_architecture.py`` checks it), the pure model too.

**These spellings are part of every existing stack.** A logical name is part of the resource's
URN; changing one makes Pulumi delete the old resource and create a new one (a new load balancer
means a new IP address). The configuration keys are in every stack's ``Pulumi.<stack>.yaml``.

* **The Pulumi project** ``lb-reconciler`` (``Pulumi.yaml``).
* **Configuration** (namespace ``lb-reconciler``): ``spec`` (the spec's canonical JSON),
  ``release-load-balancer``, ``imports``, ``child-delete-timeout``.
* **Logical names**: ``lb``, ``fip``, ``fip-association``, ``sg``; per Service port, keyed by
  protocol and port (:func:`logical_suffix`, ``tcp-80``): ``listener-tcp-80``, ``pool-tcp-80``,
  ``members-tcp-80``, ``monitor-tcp-80``; per security-group rule ``sg-rule-...`` and per Node
  port ``sg-port-<address>``.
* **Type tokens**: what ``pulumi_openstack`` sends for each resource
  (``openstack:loadbalancer/listener:Listener`` ...).
* **Kinds**: the OpenStack API collection an object's ID is in (``listeners``, ``floatingips``
  ...), and which logical name imports an object of which kind (:func:`object_kind`).
* **URNs**: ``urn:pulumi:<stack>::<project>::<type>::<logical name>`` (:func:`urn_of`,
  :func:`logical_name`).
* **The floating IP's description** starts with OCCM's :data:`FIP_DESCRIPTION_MARKER`; OCCM (and
  this controller) deletes only floating IPs so described.
* **A spec the program cannot realise** fails with a message that starts with
  :data:`INVALID_SPEC_MARKER` (``stacks.lookups.InvalidSpecError``); the engine tells it from a
  cloud failure by it.
"""

from __future__ import annotations

from typing import Protocol

__all__ = [
    "CHAIN_PREFIXES",
    "CHILD_DELETE_TIMEOUT_KEY",
    "CONFIG_NAMESPACE",
    "DEFAULT_CHILD_DELETE_TIMEOUT",
    "FIP",
    "FIP_ASSOCIATION",
    "FIP_ASSOCIATION_TYPE",
    "FIP_DESCRIPTION_MARKER",
    "FIP_TYPE",
    "FLOATINGIPS",
    "HEALTHMONITORS",
    "IMPORTS_KEY",
    "INVALID_SPEC_MARKER",
    "LB",
    "LB_TYPE",
    "LISTENERS",
    "LISTENER_PREFIX",
    "LISTENER_TYPE",
    "LOADBALANCERS",
    "LOOKUPS_KEY",
    "LOOKUPS_OUTPUT",
    "MEMBERS_PREFIX",
    "MEMBERS_TYPE",
    "MONITOR_PREFIX",
    "MONITOR_TYPE",
    "NOT_CHECKED_MARKER",
    "POOLS",
    "POOL_PREFIX",
    "POOL_TYPE",
    "PORT_SG_TYPE",
    "PROJECT",
    "PROTECTED",
    "RELEASE_KEY",
    "SECURITY_GROUP",
    "SECURITY_GROUPS",
    "SECURITY_GROUP_RULE_TYPE",
    "SECURITY_GROUP_TYPE",
    "SG_PORT_PREFIX",
    "SG_RULE_PREFIX",
    "SPEC_KEY",
    "ServicePort",
    "listener_name",
    "logical_name",
    "logical_suffix",
    "members_name",
    "monitor_name",
    "object_kind",
    "pool_name",
    "sg_port_name",
    "sg_rule_name",
    "urn_of",
]

# --- the Pulumi project ---------------------------------------------------------------------------

# Pulumi.yaml's name: part of every URN and of the paths in a file:// backend
PROJECT = "lb-reconciler"

# --- the program's configuration ------------------------------------------------------------------

CONFIG_NAMESPACE = "lb-reconciler"
SPEC_KEY = "spec"
# Set by the engine before destroying the stack of a load balancer that other Services still
# use: the load balancer (and its floating IP) are then retained in the cloud, as OCCM does.
RELEASE_KEY = "release-load-balancer"
# Set by the engine after a crash: {logical name: cloud ID} of objects created by an interrupted
# `up` that never reached the state; they are declared with `import_` so they are adopted.
# `lb-reconciler adopt` sets it to OCCM's objects (members import by pool id, the floating-IP
# association by floating IP id).
IMPORTS_KEY = "imports"
# How long the provider waits for a listener, pool, members or monitor to be gone after its
# delete (a Go duration). The provider's own default is 10 minutes, and it keeps waiting while
# the object is ACTIVE or ERROR: a delete the cloud lost (an operator reset a stuck load
# balancer) held a Service's deletion for the full 10 minutes in the chaos run. Past this time
# the operation fails and the engine recovers (engine_errored).
CHILD_DELETE_TIMEOUT_KEY = "child-delete-timeout"
DEFAULT_CHILD_DELETE_TIMEOUT = "2m"
# Set by a preview that does not ask the cloud (CI without cloud credentials): the stack's
# output `lookups` of its last `up` (JSON), which the program replays instead of asking the
# cloud (stacks.recorded). Absent: every lookup asks the cloud.
LOOKUPS_KEY = "lookups-recorded"
# The output in which the program records what it looked up in the cloud.
LOOKUPS_OUTPUT = "lookups"

# --- logical names --------------------------------------------------------------------------------

LB = "lb"
FIP = "fip"
FIP_ASSOCIATION = "fip-association"
SECURITY_GROUP = "sg"
LISTENER_PREFIX = "listener-"
POOL_PREFIX = "pool-"
MEMBERS_PREFIX = "members-"
MONITOR_PREFIX = "monitor-"
SG_RULE_PREFIX = "sg-rule-"
SG_PORT_PREFIX = "sg-port-"
# a port's chain, in the order the program declares it (and Pulumi deletes it in reverse)
CHAIN_PREFIXES = (LISTENER_PREFIX, POOL_PREFIX, MEMBERS_PREFIX, MONITOR_PREFIX)


class ServicePort(Protocol):
    """What :func:`logical_suffix` reads of a port (a ``ListenerSpec``)."""

    @property
    def service_protocol(self) -> str: ...

    @property
    def protocol_port(self) -> int: ...


def logical_suffix(listener: ServicePort) -> str:
    """``tcp-80``: the key of a port's chain of resources, stable when other ports change."""
    return f"{listener.service_protocol.lower()}-{listener.protocol_port}"


def listener_name(key: str) -> str:
    """``listener-<key>``; ``key`` from :func:`logical_suffix`."""
    return f"{LISTENER_PREFIX}{key}"


def pool_name(key: str) -> str:
    return f"{POOL_PREFIX}{key}"


def members_name(key: str) -> str:
    return f"{MEMBERS_PREFIX}{key}"


def monitor_name(key: str) -> str:
    return f"{MONITOR_PREFIX}{key}"


def sg_rule_name(
    *,
    protocol: object,
    port_range_min: object,
    port_range_max: object,
    ethertype: str,
    remote_ip_prefix: object,
) -> str:
    """``sg-rule-tcp-30080-30080-ipv4-10.0.0.0/24``: a security-group rule, by what it allows."""
    return (
        f"{SG_RULE_PREFIX}{protocol}-{port_range_min}-{port_range_max}-"
        f"{ethertype.lower()}-{remote_ip_prefix}"
    )


def sg_port_name(address: str) -> str:
    """``sg-port-<address>``: the security group's association with a Node's port."""
    return f"{SG_PORT_PREFIX}{address}"


# --- type tokens (what pulumi_openstack sends) ----------------------------------------------------

LB_TYPE = "openstack:loadbalancer/loadBalancer:LoadBalancer"
LISTENER_TYPE = "openstack:loadbalancer/listener:Listener"
POOL_TYPE = "openstack:loadbalancer/pool:Pool"
MEMBERS_TYPE = "openstack:loadbalancer/members:Members"
MONITOR_TYPE = "openstack:loadbalancer/monitor:Monitor"
FIP_TYPE = "openstack:networking/floatingIp:FloatingIp"
FIP_ASSOCIATION_TYPE = "openstack:networking/floatingIpAssociate:FloatingIpAssociate"
SECURITY_GROUP_TYPE = "openstack:networking/secGroup:SecGroup"
SECURITY_GROUP_RULE_TYPE = "openstack:networking/secGroupRule:SecGroupRule"
PORT_SG_TYPE = "openstack:networking/portSecGroupAssociate:PortSecGroupAssociate"

# logical name -> type of the resources the program declares `protect`
PROTECTED = {LB: LB_TYPE, FIP: FIP_TYPE}

# --- kinds (OpenStack API collections) ------------------------------------------------------------

LOADBALANCERS = "loadbalancers"
LISTENERS = "listeners"
POOLS = "pools"
HEALTHMONITORS = "healthmonitors"
FLOATINGIPS = "floatingips"
SECURITY_GROUPS = "security-groups"

# logical name, or its prefix when it ends in "-", -> the collection its ID is in (batch members
# are imported by their pool's ID, the association by the floating IP's)
_KINDS = (
    (LB, LOADBALANCERS),
    (FIP, FLOATINGIPS),
    (FIP_ASSOCIATION, FLOATINGIPS),
    (SECURITY_GROUP, SECURITY_GROUPS),
    (LISTENER_PREFIX, LISTENERS),
    (POOL_PREFIX, POOLS),
    (MEMBERS_PREFIX, POOLS),
    (MONITOR_PREFIX, HEALTHMONITORS),
)


def object_kind(name: str) -> str | None:
    """The cloud collection of the object a logical name imports (``listener-tcp-80``:
    ``listeners``); None for names never imported (security group rules, port associations)."""
    for key, kind in _KINDS:
        if name == key or (key.endswith("-") and name.startswith(key)):
            return kind
    return None


# --- URNs -----------------------------------------------------------------------------------------


def urn_of(*, stack: str, project: str, type_token: str, name: str) -> str:
    """The URN of a top-level resource (one without a parent) of the program in ``stack``."""
    return f"urn:pulumi:{stack}::{project}::{type_token}::{name}"


def logical_name(urn: str) -> str:
    """A resource's logical name (``lb``, ``listener-tcp-80``): the URN's last part; a bare
    logical name is returned as it is."""
    return urn.rsplit("::", 1)[-1]


# --- the floating IP's description ----------------------------------------------------------------

# The start of the description OCCM (and this controller) give the floating IPs they create:
# "<marker> <namespace>/<name> from cluster <cluster>" (reconciler.model.naming). OCCM deletes
# only floating IPs whose description contains it.
FIP_DESCRIPTION_MARKER = "Floating IP for Kubernetes external service"

# --- the program's refusals -----------------------------------------------------------------------

# The start of the message of a spec the program cannot realise in this cloud (a missing subnet,
# a full shared load balancer ...): the engine classifies such a failure as the user's to fix
# (reconciler.engine.errors), not as the cloud's.
INVALID_SPEC_MARKER = "lb-reconciler invalid spec:"

# The start of the warning a replaying preview gives for a lookup it could not replay
# (stacks.recorded): the engine lists the rest of the message as not checked.
NOT_CHECKED_MARKER = "lb-reconciler not checked:"
