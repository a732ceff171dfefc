"""Faults on demand: errors, latency, dropped connections, quota exhaustion and sick LBs.

Two kinds of rules, both loaded from the ``faults`` file (YAML/JSON) or the admin endpoint:

* :class:`FaultRule` acts on an API operation before it runs. Operations are named
  ``<service>.<resource>.<action>`` (``octavia.loadbalancer.create``,
  ``neutron.floatingip.update``, ``octavia.member.batch_update``...) and a rule's ``operation``
  is a glob. A matching rule fires with probability ``rate`` (at most ``count`` times) and then
  adds ``latency`` seconds, answers ``status`` with an error body, drops the connection without
  an answer, or (``quota: true``) answers that service's over-quota error. ``hold: true``
  keeps the request waiting (after its latency) until the fault configuration is replaced or
  cleared, then lets it go on: a cloud call that is in flight for exactly as long as a test
  needs, with no sleep to guess. ``drop`` with
  ``after: true`` carries the operation out first and then drops the connection: the cloud made
  the change and the client never hears of it (an API process that dies mid-answer). A rule's
  ``interface`` (a glob, default any) limits it to requests through the catalog's ``public``,
  ``internal`` or ``admin`` endpoints: ``{interface: public, drop: true}`` is a cloud whose
  public endpoints cannot be reached from where the client runs.
* :class:`LbFault` acts on the Octavia status machine: the next matching transition of a load
  balancer (by name glob and phase) ends in ``ERROR`` or stays ``PENDING_*`` for ever.

Random draws come from one ``random.Random(seed)``, so a run with the same seed and the same
sequence of requests fires the same faults.
"""

from __future__ import annotations

import fnmatch
import random
import threading
from dataclasses import asdict, dataclass, field
from typing import Any

_ACTIONS = ("error", "stuck")
_PHASES = ("create", "update", "delete", "any")


@dataclass(frozen=True)
class FaultRule:
    operation: str = "*"
    rate: float = 1.0
    status: int = 500
    latency: float = 0.0
    drop: bool = False
    after: bool = False  # with drop: carry the operation out, then drop (the answer is lost)
    quota: bool = False
    count: int | None = None
    message: str = "Injected fault"
    interface: str = "*"  # glob over the catalog interface used: public, internal, admin
    hold: bool = False  # wait until the configuration is replaced or cleared, then go on

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"fault rule 'rate' must be within 0..1, got {self.rate}")
        if not 100 <= self.status <= 599:
            raise ValueError(f"fault rule 'status' must be an HTTP status, got {self.status}")
        if self.latency < 0:
            raise ValueError(f"fault rule 'latency' must be >= 0 seconds, got {self.latency}")
        if self.count is not None and self.count < 1:
            raise ValueError(f"fault rule 'count' must be >= 1 or absent, got {self.count}")
        if self.after and not self.drop:
            raise ValueError("fault rule 'after' needs 'drop: true' (the answer it loses)")

    @property
    def fails(self) -> bool:
        """Whether the rule answers instead of the API (a pure latency rule does not)."""
        return self.drop or self.quota or self.status >= 400


@dataclass(frozen=True)
class LbFault:
    name: str = "*"
    outcome: str = "error"
    phase: str = "create"
    count: int | None = 1

    def __post_init__(self) -> None:
        if self.outcome not in _ACTIONS:
            raise ValueError(f"LB fault 'outcome' must be one of {_ACTIONS}, got {self.outcome!r}")
        if self.phase not in _PHASES:
            raise ValueError(f"LB fault 'phase' must be one of {_PHASES}, got {self.phase!r}")


@dataclass(frozen=True)
class FaultConfig:
    seed: int = 0
    rules: tuple[FaultRule, ...] = ()
    loadbalancers: tuple[LbFault, ...] = ()

    @staticmethod
    def from_dict(data: dict[str, Any]) -> FaultConfig:
        unknown = set(data) - {"seed", "rules", "loadbalancers"}
        if unknown:
            raise ValueError(
                f"unknown fault config keys {sorted(unknown)}; use seed, rules, loadbalancers"
            )
        try:
            rules = tuple(FaultRule(**r) for r in data.get("rules") or ())
            lbs = tuple(LbFault(**r) for r in data.get("loadbalancers") or ())
        except TypeError as exc:
            raise ValueError(f"invalid fault rule: {exc}") from exc
        return FaultConfig(seed=int(data.get("seed", 0)), rules=rules, loadbalancers=lbs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "rules": [asdict(r) for r in self.rules],
            "loadbalancers": [asdict(r) for r in self.loadbalancers],
        }


def unmatched(rules: tuple[FaultRule, ...], operations: frozenset[str]) -> str | None:
    """Why ``rules`` cannot be used: the first rule whose ``operation`` glob names none of
    ``operations`` (a typo would never fire, and a test that needs it would pass or fail by
    timing), with the operations of the same service; None when every rule matches one."""
    for rule in rules:
        if not fnmatch.filter(operations, rule.operation):
            service = rule.operation.partition(".")[0]
            near = sorted(op for op in operations if op.startswith(service + "."))
            return (
                f"fault rule 'operation' {rule.operation!r} matches no operation of the "
                f"emulator; {service!r} has: {', '.join(near) or 'none (no such service)'}"
            )
    return None


@dataclass(frozen=True)
class Decision:
    """What to do to one request: wait, then maybe fail or drop."""

    latency: float = 0.0
    rule: FaultRule | None = None
    hold: threading.Event | None = None  # set when the request may go on

    @property
    def drop(self) -> bool:
        """Drop the connection instead of running the operation."""
        return self.rule is not None and self.rule.drop and not self.rule.after

    @property
    def lose_answer(self) -> bool:
        """Run the operation, then drop the connection."""
        return self.rule is not None and self.rule.drop and self.rule.after


@dataclass
class _Armed:
    config: FaultConfig
    rng: random.Random
    fired: dict[str, int] = field(default_factory=dict)
    released: threading.Event = field(default_factory=threading.Event)


class FaultInjector:
    """Holds the active :class:`FaultConfig` and makes the seeded draws."""

    def __init__(self, config: FaultConfig | None = None) -> None:
        self._lock = threading.Lock()
        self._armed = self._arm(config or FaultConfig())

    @staticmethod
    def _arm(config: FaultConfig) -> _Armed:
        return _Armed(config=config, rng=random.Random(config.seed))

    @property
    def config(self) -> FaultConfig:
        return self._armed.config

    def configure(self, config: FaultConfig) -> None:
        """Replace the configuration; the requests its ``hold`` rules keep go on."""
        with self._lock:
            self._armed.released.set()
            self._armed = self._arm(config)

    def release(self) -> None:
        """Let every held request go on, and hold none from now (the cloud is closing)."""
        with self._lock:
            self._armed.released.set()

    def extend(
        self, *, rules: tuple[FaultRule, ...] = (), loadbalancers: tuple[LbFault, ...] = ()
    ) -> FaultConfig:
        """Append rules, keeping the random state and the fired counts of existing rules."""
        with self._lock:
            old = self._armed.config
            self._armed.config = FaultConfig(
                seed=old.seed,
                rules=(*old.rules, *rules),
                loadbalancers=(*old.loadbalancers, *loadbalancers),
            )
            return self._armed.config

    def fired(self) -> dict[str, int]:
        """How often each rule fired, keyed ``rules[i]`` / ``loadbalancers[i]``."""
        with self._lock:
            return dict(self._armed.fired)

    def decide(self, operation: str, *, interface: str = "public") -> Decision:
        """The latency to add and the failing rule (if any) for one API operation, asked
        through the catalog's ``interface``."""
        latency, hold = 0.0, None
        with self._lock:
            armed = self._armed
            for i, rule in enumerate(armed.config.rules):
                if not fnmatch.fnmatchcase(operation, rule.operation):
                    continue
                if not fnmatch.fnmatchcase(interface, rule.interface):
                    continue
                if not self._fire(armed, f"rules[{i}]", rule.rate, rule.count):
                    continue
                latency += rule.latency
                if rule.hold and not armed.released.is_set():
                    hold = armed.released
                if rule.fails:
                    return Decision(latency=latency, rule=rule, hold=hold)
        return Decision(latency=latency, hold=hold)

    def lb_outcome(self, *, name: str, phase: str) -> str:
        """``ok``, ``error`` or ``stuck`` for a load balancer transition."""
        with self._lock:
            armed = self._armed
            for i, fault in enumerate(armed.config.loadbalancers):
                if fault.phase not in ("any", phase):
                    continue
                if not fnmatch.fnmatchcase(name or "", fault.name):
                    continue
                if self._fire(armed, f"loadbalancers[{i}]", 1.0, fault.count):
                    return fault.outcome
        return "ok"

    @staticmethod
    def _fire(armed: _Armed, key: str, rate: float, count: int | None) -> bool:
        fired = armed.fired
        if count is not None and fired.get(key, 0) >= count:
            return False
        if rate < 1.0 and armed.rng.random() >= rate:
            return False
        fired[key] = fired.get(key, 0) + 1
        return True
