"""The authenticated caller, as Neutron and Octavia see it after Keystone validated the token."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AuthContext:
    """Who is calling: the user, the project the token is scoped to and its roles there."""

    user_id: str
    project_id: str
    roles: tuple[str, ...]

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles
