"""The stack settings file (``Pulumi.<stack>.yaml``) that a members change rewrites without the
CLI (:func:`reconciler.engine.stack_meta.set_plain_config`): written by libyaml where PyYAML has
it, and the same text PyYAML's own dumper writes, so a person's ``git diff`` of a work folder
or ``pulumi config`` sees nothing but the value that changed."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from reconciler.engine.stack_meta import set_plain_config

SPEC = json.dumps(
    {
        "name": "kube_service_prod_default_web",
        "description": 'Kubernetes external service default/web from cluster prod: it\'s "x"',
        "unicode": "café ☃",
        "members": [{"name": f"node-{i}", "address": f"10.0.0.{i}"} for i in range(40)],
    },
    sort_keys=True,
    separators=(",", ":"),
)


def test_the_settings_file_is_the_text_pyyamls_own_dumper_writes(tmp_path: Path) -> None:
    config_file = tmp_path / "Pulumi.prod.default.web.yaml"
    settings = {
        "secretsprovider": "passphrase",
        "encryptionsalt": "v1:c2FsdA==:v1:aXY=:Y2lwaGVy",
        "config": {
            "openstack:authUrl": "https://keystone.example.com:5000/v3",
            "openstack:insecure": "false",
            "lbr:multi": "line one\nline two",
            "lbr:empty": "",
        },
    }
    config_file.write_text(yaml.safe_dump(settings, sort_keys=False))

    written = set_plain_config(config_file, "lbr:spec", SPEC)

    expected = {**settings, "config": {**settings["config"], "lbr:spec": SPEC}}
    assert written == expected["config"]
    text = config_file.read_text()
    assert text == yaml.safe_dump(
        expected, sort_keys=False, default_flow_style=False, width=1 << 20
    )
    assert yaml.safe_load(text) == expected
