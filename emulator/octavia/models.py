"""The Octavia model: load balancers, listeners, pools, members and monitors in one class.

Built as a chain of modules (``base`` -> ``loadbalancers`` -> ``listeners`` -> ``members``) so
each stays small; :class:`Octavia` adds quotas. See :mod:`emulator.octavia.base` for the status
machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from emulator.context import AuthContext
from emulator.errors import BadRequest, Forbidden
from emulator.octavia.base import QUOTA_KEYS
from emulator.octavia.members import Members


class Octavia(Members):
    def set_quota(self, ctx: AuthContext, project_id: str, values: Mapping[str, Any]) -> None:
        if not ctx.is_admin:
            raise Forbidden("Policy does not allow this request to be performed.")
        aliases = {"load_balancer": "loadbalancer", "health_monitor": "healthmonitor"}
        record: dict[str, Any] = self.store.get("octavia_quota", project_id) or {"id": project_id}
        for key, value in values.items():
            name = aliases.get(key, key)
            if name not in QUOTA_KEYS:
                raise BadRequest(
                    f"Invalid input for field/attribute quota. Unknown quota '{key}'; use one of "
                    f"{', '.join(QUOTA_KEYS)}."
                )
            if value is not None and (not isinstance(value, int) or value < -1):
                raise BadRequest(f"Invalid input for field/attribute {key}: must be >= -1.")
            record[name] = -1 if value is None else value
        self.store.put("octavia_quota", record)

    def quota_view(self, project_id: str) -> dict[str, int]:
        q = self.quota(project_id)
        return {
            "load_balancer": q["loadbalancer"],
            "loadbalancer": q["loadbalancer"],
            "listener": q["listener"],
            "pool": q["pool"],
            "member": q["member"],
            "health_monitor": q["healthmonitor"],
            "healthmonitor": q["healthmonitor"],
            "l7policy": q["l7policy"],
            "l7rule": q["l7rule"],
        }
