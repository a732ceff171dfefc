"""Timestamps in the formats the OpenStack APIs use."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(ts: float) -> str:
    """``2024-05-01T12:00:00Z``: Neutron ``created_at``/``updated_at``."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_no_z(ts: float) -> str:
    """``2024-05-01T12:00:00``: Octavia ``created_at``/``updated_at`` (UTC, no zone suffix).

    gophercloud parses Octavia members and pools with ``RFC3339NoZ`` only, so a ``Z`` breaks it.
    """
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def iso_micro(ts: float) -> str:
    """``2024-05-01T12:00:00.000000Z``: Keystone ``expires_at``/``issued_at``."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
