"""The baseline as a child process: ``python -m bench.baseline_job < job.json > result.json``.

A separate process so that the harness measures its CPU seconds and resident memory the same way
as the controller's. The job (JSON on stdin) names the cloud, the settings, the number of
parallel workers (OCCM's ``--concurrent-service-syncs``; its default is 1) and a list of phases
run one after the other::

    {"topology": {...}, "settings": {"cluster": "bench", ...}, "workers": 4,
     "phases": [{"action": "ensure", "services": [{"namespace": "bench", "name": "svc-000",
                 "ports": [["TCP", 80, 30080]], "nodes": [["node-1", "10.0.0.11"]]}]},
                {"action": "delete", "services": [...]}]}

The result (JSON on stdout) has, per phase, each Service's seconds from the phase start to the
end of its call, the call's own seconds, its address or error, and the phase's wall time. The
connection is made and authenticated before the first phase, as a running OCCM has it.
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.baseline import Occm, Port, ServiceShape, Settings, connect

ACTIONS = ("ensure", "update", "delete")


def shape(data: dict[str, Any]) -> ServiceShape:
    return ServiceShape(
        namespace=str(data["namespace"]),
        name=str(data["name"]),
        ports=tuple(Port(str(p[0]), int(p[1]), int(p[2])) for p in data["ports"]),
        nodes=tuple((str(n[0]), str(n[1])) for n in data["nodes"]),
    )


def shape_json(svc: ServiceShape) -> dict[str, Any]:
    return {
        "namespace": svc.namespace,
        "name": svc.name,
        "ports": [[p.protocol, p.port, p.node_port] for p in svc.ports],
        "nodes": [list(n) for n in svc.nodes],
    }


def run_phase(
    occm: Occm, action: str, services: list[ServiceShape], workers: int
) -> dict[str, Any]:
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; use one of {', '.join(ACTIONS)}")
    started, cpu = time.monotonic(), time.process_time()

    def one(svc: ServiceShape) -> dict[str, Any]:
        begun = time.monotonic()
        out: dict[str, Any] = {"name": svc.name, "address": None, "error": None}
        try:
            if action == "ensure":
                out["address"] = occm.ensure(svc)
            elif action == "update":
                occm.update(svc)
            else:
                occm.delete(svc)
        except Exception as exc:  # reported per Service; the harness decides what it means
            out["error"] = f"{type(exc).__name__}: {exc}"
        ended = time.monotonic()
        out["call_seconds"] = ended - begun
        out["seconds"] = ended - started
        return out

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(one, services))
    return {
        "action": action,
        "wall_seconds": time.monotonic() - started,
        "cpu_seconds": time.process_time() - cpu,
        "results": results,
    }


def main() -> int:
    job = json.load(sys.stdin)
    settings = Settings(**job["settings"])
    occm = Occm(conn=connect(job["topology"]), settings=settings)
    phases = [
        run_phase(occm, p["action"], [shape(s) for s in p["services"]], int(job["workers"]))
        for p in job["phases"]
    ]
    json.dump({"phases": phases}, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
