"""When the direct paths may write a stack's state at all (reconciler.engine.direct_gate)."""

from __future__ import annotations

from reconciler.engine.direct_gate import (
    CHECKPOINT_FORMAT,
    TESTED_CLI,
    TESTED_PROVIDER,
    state_refusal,
    tools_refusal,
)


def test_only_the_tested_cli_and_provider_versions_allow_them() -> None:
    assert tools_refusal(cli=TESTED_CLI, provider=TESTED_PROVIDER) is None
    newer = tools_refusal(cli="v3.260.0", provider=TESTED_PROVIDER)
    assert newer is not None
    assert f"pulumi reports v3.260.0 (tested with {TESTED_CLI})" in newer
    assert "through the pulumi CLI only" in newer
    unread = tools_refusal(cli=TESTED_CLI, provider=None)
    assert unread is not None
    assert "pulumi-resource-openstack reports no version" in unread


def test_only_a_format_3_checkpoint_without_journal_allows_them() -> None:
    assert state_refusal(checkpoint_format=CHECKPOINT_FORMAT, journal=False) is None
    assert state_refusal(checkpoint_format=4, journal=False) == "its checkpoint is format 4, not 3"
    journaled = state_refusal(checkpoint_format=3, journal=True)
    assert journaled is not None
    assert "journal objects" in journaled
