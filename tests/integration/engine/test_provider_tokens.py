"""Every ``pulumi_openstack`` resource and data source used by ``stacks/`` is served by the plugin.

The toolchain's ``pulumi-resource-openstack`` is this project's own build (``tools/openstack``):
it maps the Terraform resources the project uses to the type tokens the ``pulumi-openstack``
SDK sends, and gives every other resource a mechanical ``openstack:index/...`` token. A resource
used by the program but missing from that map fails only when a stack declares it
(``unrecognized resource type (Check)``), which for rarely taken paths (security groups) is
late. This test reads the tokens from the SDK's source for every ``openstack.<module>.<Name>``
the program's modules use and checks them against the plugin's own schema.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import subprocess
from pathlib import Path

import pulumi
import pulumi_openstack

from reconciler.toolchain import Toolchain

STACKS = Path(__file__).resolve().parents[3] / "stacks"
_TOKEN = re.compile(r"['\"](openstack:[A-Za-z0-9_/]+:[A-Za-z0-9_]+)['\"]")


def _used() -> set[tuple[str, str]]:
    """(module, attribute) of every ``openstack.<module>.<attribute>`` in stacks/."""
    found = set()
    for path in STACKS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and isinstance(node.value.value, ast.Name)
                and node.value.value.id == "openstack"
            ):
                found.add((node.value.attr, node.attr))
    return found


def _sdk_token(module: str, attribute: str) -> str | None:
    """The type token the SDK sends for a resource class or an invoke function."""
    member = getattr(getattr(pulumi_openstack, module), attribute)
    if not (inspect.isclass(member) or inspect.isfunction(member)):
        return None
    if inspect.isclass(member) and not issubclass(member, pulumi.Resource):
        return None  # an Args class, not a resource
    source = inspect.getsource(member)
    match = _TOKEN.search(source)
    return match.group(1) if match else None


def test_program_uses_only_tokens_the_plugin_serves(toolchain: Toolchain) -> None:
    done = subprocess.run(
        [
            str(toolchain.path("pulumi")),
            "package",
            "get-schema",
            str(toolchain.path("pulumi-resource-openstack")),
        ],
        capture_output=True,
        text=True,
        env=toolchain.env(),
        check=True,
        timeout=120,
    )
    schema = json.loads(done.stdout)
    served = set(schema["resources"]) | set(schema["functions"])
    tokens = {
        (module, attribute): token
        for module, attribute in _used()
        if (token := _sdk_token(module, attribute)) is not None
    }
    assert ("networking", "SecGroup") in tokens  # the scan sees the program's resources
    assert ("networking", "get_port") in tokens  # and its data sources
    missing = sorted(f"{m}.{a} ({t})" for (m, a), t in tokens.items() if t not in served)
    assert missing == [], f"add to tools/openstack/provider/provider.go: {missing}"
