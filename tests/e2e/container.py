"""``lb-reconciler run`` from the container image, run by podman the way a kubelet runs the pod
of ``deploy/deployment.yaml`` (and the chart): the in-cluster configuration (a ServiceAccount
token, CA and namespace mounted at ``/var/run/secrets/kubernetes.io/serviceaccount``,
``KUBERNETES_SERVICE_HOST`` and ``_PORT`` set), cloud.conf mounted read-only at
``/etc/lb-reconciler/cloud.conf``, the backend URL and passphrase in the environment (as from
the Secret), a read-only root filesystem with only ``/tmp`` (a tmpfs) and the state folder
writable, and an arbitrary non-root uid in group 0, as OpenShift assigns.

:class:`ContainerController` is a :class:`~tests.e2e.controller_process.ControllerProcess`
(``/readyz``, ``/metrics``, the JSON log), started with ``podman run``: :meth:`kill` is
``podman kill -s KILL`` (every process of the container at once, as an OOM kill of the pod),
:meth:`terminate` a SIGTERM to the container and a wait (a pod deletion).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from reconciler.toolchain import REPO_ROOT
from tests.e2e.controller_process import PASSPHRASE, ControllerProcess, ControllerSetup
from tests.e2e.rbac import NAMESPACE

IMAGE = "localhost/lb-reconciler:dev"
UID = 1000770000  # an OpenShift-style uid, unknown to the image's /etc/passwd
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def podman_flags() -> list[str]:
    """What this machine needs for podman (image/podman-flags.sh: runc, resource limits)."""
    done = subprocess.run(
        ["bash", str(REPO_ROOT / "image" / "podman-flags.sh")],
        capture_output=True,
        text=True,
        check=True,
    )
    return shlex.split(done.stdout)


def image_revision() -> str:
    """The commit the image was built from (its OCI label); fails, naming the fix, when there is
    no image."""
    done = subprocess.run(
        ["podman", "image", "inspect", "--format", "{{json .Labels}}", IMAGE],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"no image {IMAGE} ({done.stderr.strip()}): run `make image` first")
    labels: dict[str, str] = json.loads(done.stdout) or {}
    return labels.get("org.opencontainers.image.revision", "")


def service_account_files(kubeconfig: Path, ca_cert: Path, folder: Path) -> Path:
    """What the kubelet mounts for the pod's ServiceAccount: ``token`` (the one in the
    ServiceAccount's kubeconfig), ``ca.crt``, ``namespace``; readable by any uid."""
    user = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "token").write_text(user["token"])
    (folder / "ca.crt").write_bytes(ca_cert.read_bytes())
    (folder / "namespace").write_text(NAMESPACE)
    for path in [folder, *folder.iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


class ContainerController(ControllerProcess):
    def __init__(
        self,
        setup: ControllerSetup,
        *,
        identity: str,
        server: str,
        service_account: Path,
        args: list[str] | None = None,
    ) -> None:
        super().__init__(setup, identity=identity, args=args)
        self.name = f"lbr-{identity}-{uuid.uuid4().hex[:6]}"
        host = urlsplit(server)
        # the pod's own folders: cloud.conf (a Secret volume) and the state emptyDir
        pod = setup.logs.parent / "pods" / identity
        (pod / "etc").mkdir(parents=True, exist_ok=True)
        (pod / "etc" / "cloud.conf").write_bytes(setup.cloud_conf.read_bytes())
        (pod / "state").mkdir(exist_ok=True)
        (pod / "state").chmod(0o1777)  # an emptyDir with fsGroup: writable by the pod's uid
        env = {
            "KUBERNETES_SERVICE_HOST": str(host.hostname),
            "KUBERNETES_SERVICE_PORT": str(host.port),
            "POD_NAME": identity,
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_BACKEND_URL": setup.backend,
            **setup.backend_env,
        }
        self.argv = [
            "podman",
            "run",
            "--rm",
            "--name",
            self.name,
            *podman_flags(),
            "--network",
            "host",
            "--read-only",
            "--tmpfs",
            "/tmp:rw,mode=1777",
            "--user",
            f"{UID}:0",
            "--volume",
            f"{service_account}:{SA_DIR}:ro",
            "--volume",
            f"{pod / 'etc'}:/etc/lb-reconciler:ro",
            "--volume",
            f"{pod / 'state'}:/var/lib/lb-reconciler",
            *[a for key, value in env.items() for a in ("--env", f"{key}={value}")],
            IMAGE,
            "run",
            "--cloud-config=/etc/lb-reconciler/cloud.conf",
            "--state-dir=/var/lib/lb-reconciler",
            f"--cluster-name={setup.cluster_name}",
            f"--http-address=127.0.0.1:{self.port}",
            "--log-format=json",
            *setup.extra_args,
            *(args or []),
        ]

    def kill(self) -> None:
        """SIGKILL every process of the container (an OOM kill of the pod)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            subprocess.run(
                ["podman", "kill", "--signal", "KILL", self.name], capture_output=True, check=False
            )
        self.proc.wait(timeout=60)

    def terminate(self, *, timeout: float = 60.0) -> int:
        """SIGTERM to the container's process (a pod deletion) and a wait of at most
        ``timeout`` (the pod's grace period); returns its exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            subprocess.run(
                ["podman", "kill", "--signal", "TERM", self.name], capture_output=True, check=False
            )
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{self.identity} did not stop within {timeout}s of SIGTERM:\n{self.log_tail()}"
            ) from None
        finally:
            self.kill()
