"""The read-only credentials of ``examples/ci/`` against the real servers (PostgreSQL, MinIO).

The role of ``readonly-postgres.sql`` and the credentials limited by ``readonly-s3-policy.json``
(made by :mod:`tests.readonly` as a team makes them) read everything this project reads of a
backend: stack names, tags, checkpoints, locks, history. Every write through them is refused by
the server, and whatever the store is asked to do through them, the backend's objects stay
byte for byte as they were.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from botocore.exceptions import ClientError
from psycopg import errors as pg_errors

from reconciler.cli.main import main
from reconciler.engine.state.stacks import create_stack, last_update
from reconciler.engine.state.store import BucketError, StateStore
from reconciler.toolchain import Toolchain
from stacks.vocabulary import PROJECT
from tests.backends import Backend, BackendServers, persons_lock
from tests.readonly import POSTGRES_SQL, S3_POLICY, postgres_read_only, psql, read_only, s3_policy

# each test starts real pulumi runs for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

PASSPHRASE = "readonly-test-passphrase"
STACKS = ("ro.default.web", "ro.default.db")


def snapshot(store: StateStore) -> dict[str, str]:
    """Every object of the backend: key -> SHA-256 of its bytes."""
    out = {}
    for obj in store.objects(""):
        data = store.bucket.read(obj.key)
        out[obj.key] = hashlib.sha256(data or b"").hexdigest()
    return out


def made_by_the_cli(toolchain: Toolchain, backend: Backend, tmp_path: Path) -> None:
    """Two stacks as the CLI makes them, tagged as the controller tags its stacks, each with one
    operation in its history, and a person's lock on the first."""
    where = tmp_path / "project"
    where.mkdir()
    (where / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: yaml\n")
    env = {
        **toolchain.env(),
        **backend.cli_env(),
        "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
    }

    def pulumi(*args: str) -> None:
        done = subprocess.run(
            [str(toolchain.path("pulumi")), "--non-interactive", *args],
            cwd=where,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr

    for stack in STACKS:
        pulumi("stack", "init", stack)
        pulumi("stack", "tag", "set", "lbr:cluster", "ro", "-s", stack)
        pulumi("refresh", "--yes", "--skip-preview", "-s", stack)
    store = backend.store()
    persons_lock(store, STACKS[0])
    store.close()


def test_the_store_reads_everything_through_the_read_only_credentials(
    toolchain: Toolchain, backend: Backend, readonly_backend: Backend, tmp_path: Path
) -> None:
    made_by_the_cli(toolchain, backend, tmp_path)
    admin, reader = backend.store(), readonly_backend.store()
    before = snapshot(admin)
    try:
        reader.check_layout()
        assert reader.opened()
        assert reader.set_up()  # set up already: nothing to write
        assert reader.stack_names() == admin.stack_names() == sorted(STACKS)
        assert reader.all_tags() == admin.all_tags()
        assert reader.tags(STACKS[0]) == admin.tags(STACKS[0])
        assert reader.tags("ro.default.gone") == {}  # a missing object is missing, not refused
        assert not reader.stack_exists("ro.default.gone")
        assert reader.read_checkpoint("ro.default.gone") is None
        for stack in STACKS:
            assert reader.stack_exists(stack)
            theirs, ours = admin.read_checkpoint(stack), reader.read_checkpoint(stack)
            assert ours is not None
            assert theirs is not None
            assert (ours.key, ours.version, ours.raw) == (theirs.key, theirs.version, theirs.raw)
            assert reader.deployment(stack) == admin.deployment(stack)
            assert reader.objects_of(stack) == admin.objects_of(stack)
            record = last_update(reader, stack)
            assert record is not None
            assert record == last_update(admin, stack)
            assert record["kind"] == "refresh"
        (lock,) = reader.list_locks(STACKS[0])
        assert (lock.username, lock.hostname) == ("alice", "laptop")
        assert set(reader.all_locks()) == {STACKS[0]}
        assert reader.objects() == admin.objects()
    finally:
        assert snapshot(admin) == before
        admin.close()
        reader.close()


@pytest.mark.parametrize("kind", ["postgres", "s3"])
def test_every_write_through_the_read_only_credentials_fails_at_the_server(
    backend_servers: BackendServers, tmp_path: Path, kind: str
) -> None:
    backend = backend_servers.backend(kind, folder=tmp_path)
    admin = backend.store()
    assert create_stack(admin, "ro.default.web")
    admin.write_tags("ro.default.web", {"lbr:cluster": "ro"})
    persons_lock(admin, "ro.default.web")
    readonly = read_only(backend)
    reader = readonly.store()
    before = snapshot(admin)
    tags_key = admin.tags_key("ro.default.web")
    (lock,) = reader.list_locks("ro.default.web")
    refused = [
        lambda: reader.write_tags("ro.default.web", {"lbr:cluster": "other"}),
        lambda: reader.bucket.write("x/new-object", b"new"),
        lambda: reader.bucket.delete(tags_key),
        lambda: reader.delete_lock(lock.key),
        lambda: reader.cancel("ro.default.web"),
        lambda: create_stack(reader, "ro.default.new"),
    ]
    if kind == "postgres":
        refused.append(reader.bucket.prepare)  # the table's CREATE ... IF NOT EXISTS
    try:
        for call in refused:
            with pytest.raises(BucketError) as caught:
                call()
            words = "permission denied" if kind == "postgres" else "AccessDenied"
            assert words in str(caught.value), caught.value
        if kind == "postgres":
            postgres_refuses(backend, readonly)
        else:
            s3_refuses(backend, readonly)
    finally:
        assert snapshot(admin) == before
        admin.close()
        reader.close()


def postgres_refuses(backend: Backend, readonly: Backend) -> None:
    """The role reads the table and nothing else: every other statement is refused with
    ``permission denied`` (``insufficient_privilege``), even inside a read-write transaction."""
    with psycopg.connect(readonly.url, autocommit=True) as conn:
        (count,) = conn.execute("SELECT count(*) FROM pulumi_state").fetchone() or (0,)
        assert count > 0
        for statement in (
            "INSERT INTO pulumi_state (key, data) VALUES ('x', '{}')",
            "UPDATE pulumi_state SET data = '{}'",
            "DELETE FROM pulumi_state",
            "TRUNCATE pulumi_state",
            "ALTER TABLE pulumi_state ADD COLUMN x int",
            "DROP TABLE pulumi_state",
            "CREATE TABLE new_table (x int)",
            "CREATE TABLE IF NOT EXISTS pulumi_state (key TEXT PRIMARY KEY)",
            "CREATE INDEX IF NOT EXISTS pulumi_state_key_prefix_idx "
            "ON pulumi_state (key text_pattern_ops)",
            "CREATE SCHEMA mine",
        ):
            with pytest.raises(pg_errors.InsufficientPrivilege):
                conn.execute(statement)
        granted = conn.execute(
            "SELECT privilege_type FROM information_schema.role_table_grants "
            "WHERE grantee = current_user"
        ).fetchall()
        assert granted == [("SELECT",)]
        schema = conn.execute(
            "SELECT has_schema_privilege('public', 'USAGE'), "
            "has_schema_privilege('public', 'CREATE')"
        ).fetchone()
        assert schema == (True, False)
        role = conn.execute(
            "SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, "
            "rolcanlogin FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        assert role == (False, False, False, False, False, True)


def s3_refuses(backend: Backend, readonly: Backend) -> None:
    """The credentials list the bucket and read the state's objects, nothing else: a write, a
    delete, a read outside the prefix, a new bucket, a policy change are refused
    (``AccessDenied``)."""
    assert backend.server is not None
    root = backend.server.s3_client()
    bucket = backend.url.partition("://")[2].partition("/")[0]
    root.put_object(Bucket=bucket, Key="elsewhere/secret", Body=b"not the state's")
    ro = reader_client(readonly)
    try:
        listed = ro.list_objects_v2(Bucket=bucket, Prefix="state/.pulumi/")
        assert listed["KeyCount"] > 0
        with pytest.raises(ClientError) as missing:  # not refused: missing (ListBucket)
            ro.get_object(Bucket=bucket, Key="state/.pulumi/no-such-object")
        assert missing.value.response["Error"]["Code"] == "NoSuchKey"
        for call, kwargs in (
            (ro.put_object, {"Bucket": bucket, "Key": "state/.pulumi/x", "Body": b"x"}),
            (ro.delete_object, {"Bucket": bucket, "Key": "state/.pulumi/meta.yaml"}),
            (ro.get_object, {"Bucket": bucket, "Key": "elsewhere/secret"}),
            (ro.put_object, {"Bucket": bucket, "Key": "elsewhere/x", "Body": b"x"}),
            (ro.create_bucket, {"Bucket": f"{bucket}-new"}),
            (ro.delete_bucket, {"Bucket": bucket}),
            (ro.delete_bucket_policy, {"Bucket": bucket}),
        ):
            with pytest.raises(ClientError) as caught:
                call(**kwargs)
            assert caught.value.response["Error"]["Code"] == "AccessDenied", (call, kwargs)
    finally:
        ro.close()
        root.delete_object(Bucket=bucket, Key="elsewhere/secret")
        root.close()


def reader_client(readonly: Backend) -> Any:
    from botocore.config import Config

    from reconciler.engine.state.aws import botocore_client

    assert readonly.server is not None
    return botocore_client(
        "s3",
        endpoint_url=f"http://{readonly.server.endpoint}",
        region_name="us-east-1",
        aws_access_key_id=readonly.env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=readonly.env["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=readonly.env["AWS_SESSION_TOKEN"],
        config=Config(s3={"addressing_style": "path"}),
    )


def test_the_role_file_is_idempotent_and_needs_a_password(
    backend_servers: BackendServers, tmp_path: Path
) -> None:
    """Run twice, the file sets a new password (the old one no longer logs in); without a
    password it stops with an error before it changes anything."""
    backend = backend_servers.backend("postgres", folder=tmp_path)
    first = read_only(backend)
    role = first.url.partition("://")[2].partition(":")[0]
    second = postgres_read_only(backend, role=role)
    with psycopg.connect(second.url, autocommit=True) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (role,)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(first.url).close()
    done = psql(backend.url, "-v", "role=lbr_no_password", "-f", str(POSTGRES_SQL))
    assert done.returncode != 0
    assert "no password" in done.stderr
    with psycopg.connect(backend.url, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'lbr_no_password'")
        assert found.fetchone() is None


def test_the_policy_file_is_the_example_with_its_placeholders() -> None:
    example = json.loads(S3_POLICY.read_text())
    assert {s["Sid"] for s in example["Statement"]} == {"ListTheStateBucket", "ReadTheStateObjects"}
    actions = sorted(a for s in example["Statement"] for a in s["Action"])
    assert actions == ["s3:GetObject", "s3:ListBucket"]
    filled = json.loads(s3_policy("team-state", "lbr"))
    assert filled["Statement"][1]["Resource"] == ["arn:aws:s3:::team-state/lbr/*"]
    assert filled["Statement"][0]["Resource"] == ["arn:aws:s3:::team-state"]
    top = json.loads(s3_policy("team-state", ""))
    assert top["Statement"][1]["Resource"] == ["arn:aws:s3:::team-state/*"]


def test_lb_reconciler_stacks_on_a_new_backend_writes_nothing(
    backend: Backend,
    readonly_backend: Backend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The read path sets nothing up: on a backend nobody has opened yet (no ``meta.yaml``;
    ``postgres://``: the table and no row), ``lb-reconciler stacks`` through the read-only
    credential lists no stacks and leaves the backend empty (``StateStore.set_up``, which the
    controller's start runs, would write ``meta.yaml``)."""
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    for key, value in readonly_backend.env.items():
        monkeypatch.setenv(key, value)
    admin = backend.store()
    try:
        assert admin.objects("") == []
        code = main(
            [
                "stacks",
                "--backend-url",
                readonly_backend.url,
                "--cluster-name",
                "ro",
                "--state-dir",
                str(tmp_path / "lbr"),
            ]
        )
        out = capsys.readouterr().out
        assert (code, out.startswith("no stacks of cluster ro on ")) == (0, True), out
        password = urlsplit(readonly_backend.url).password
        if password:  # postgres://: the URL shown without the role's password
            assert password not in out
            assert ":[secret]@" in out
        assert admin.objects("") == []
        assert not admin.opened()
    finally:
        admin.close()


def test_the_plain_cli_cannot_open_postgres_read_only(
    toolchain: Toolchain, postgres_backend: Backend, postgres_readonly: Backend, tmp_path: Path
) -> None:
    """docs/inspect.md's three findings, each quoted there: the CLI's ``CREATE TABLE IF NOT
    EXISTS`` is refused to the role; with ``CREATE`` on the schema its ``CREATE INDEX IF NOT
    EXISTS`` is, for want of the table's ownership; and a read-only session refuses it even to
    the owner."""
    doc = (Path(__file__).resolve().parents[3] / "docs" / "inspect.md").read_text()
    role = urlsplit(postgres_readonly.url).username

    def stack_ls(backend_url: str) -> str:
        done = subprocess.run(
            [str(toolchain.path("pulumi")), "stack", "ls", "--all"],
            cwd=tmp_path,
            env={
                **toolchain.env(),
                **postgres_backend.env,
                "PULUMI_BACKEND_URL": backend_url,
                "PULUMI_SKIP_UPDATE_CHECK": "true",
            },
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode != 0, done.stdout
        return done.stderr.partition("failed to create table pulumi_state: ")[2].strip()

    assert stack_ls(postgres_readonly.url) == (
        "pq: permission denied for schema public at position 1:28 (42501)"
    )
    done = psql(postgres_backend.url, "-c", f'GRANT CREATE ON SCHEMA public TO "{role}"')
    assert done.returncode == 0, done.stderr
    owner = stack_ls(postgres_readonly.url)
    assert owner == "pq: must be owner of table pulumi_state (42501)"
    assert f"`{owner}`" in doc
    read_only_session = stack_ls(f"{postgres_backend.url}&default_transaction_read_only=on")
    assert read_only_session == (
        "pq: cannot execute CREATE TABLE in a read-only transaction (25006)"
    )
    assert f"`{read_only_session}`" in doc
