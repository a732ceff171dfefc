"""Helpers for the model tests: build a spec from the example Service with some changes."""

from __future__ import annotations

from typing import Any

from reconciler.config import CloudConfig, default_config, parse_cloud_conf
from reconciler.model import BuildResult, LoadBalancerSpec, build_spec
from tests.builders import example_nodes, example_service

NODES = example_nodes()
UUID1 = "11111111-1111-4111-8111-111111111111"
UUID2 = "22222222-2222-4222-8222-222222222222"
UUID3 = "33333333-3333-4333-8333-333333333333"


def config_from(text: str) -> CloudConfig:
    result = parse_cloud_conf(text=text)
    assert result.config is not None, result.errors
    return result.config


def build(
    annotations: dict[str, str] | None = None,
    *,
    config: CloudConfig | None = None,
    nodes: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> BuildResult:
    return build_spec(
        service=example_service(annotations=annotations or None, **spec),
        nodes=NODES if nodes is None else nodes,
        config=config or default_config(),
        cluster_name="kubernetes",
    )


def spec_of(
    annotations: dict[str, str] | None = None,
    *,
    config: CloudConfig | None = None,
    nodes: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> LoadBalancerSpec:
    result = build(annotations, config=config, nodes=nodes, **spec)
    assert result.spec is not None, [str(e) for e in result.errors]
    return result.spec
