"""A watch on one namespace's Services: when each first showed an ingress IP, and when each was
deleted (its finalizer released), in ``time.monotonic()`` seconds of this process.

A list, then a watch from its resourceVersion (bookmarks on); a dropped or expired watch is
resumed, an error event (410 Gone) relists, and a relist marks what vanished meanwhile as deleted.
:meth:`ServiceWatch.wait` blocks on a condition over the recorded times.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from reconciler.controller.kubeapi import KubeApi, KubeError, KubeUnavailableError


class ServiceWatch:
    """When each Service of the namespace first had an ingress IP, and when it was deleted."""

    def __init__(self, kube: KubeApi, *, path: str) -> None:
        self._kube = kube
        self._path = path
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._raw: Any = None
        self._rv = ""
        self.ip_at: dict[str, float] = {}
        self.gone_at: dict[str, float] = {}
        self.present: dict[str, dict[str, Any]] = {}
        self._thread = threading.Thread(target=self._run, name="bench-watch", daemon=True)

    def start(self) -> ServiceWatch:
        self._relist()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        with contextlib.suppress(Exception):
            if self._raw is not None:
                self._raw.shutdown()
        self._thread.join(timeout=10)
        self._kube.close()

    def wait(self, predicate: Callable[[], bool], *, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{what}: not within {timeout:.0f}s")
                self._cond.wait(min(left, 1.0))

    def _seen(self, obj: Mapping[str, Any], now: float) -> None:
        name = obj["metadata"]["name"]
        self.present[name] = dict(obj)
        if ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress"):
            self.ip_at.setdefault(name, now)

    def _relist(self) -> None:
        listed = self._kube.list(self._path)
        now = time.monotonic()
        with self._cond:
            names = {item["metadata"]["name"] for item in listed.get("items") or []}
            for name in set(self.present) - names:
                self.present.pop(name)
                self.gone_at.setdefault(name, now)
            for item in listed.get("items") or []:
                self._seen(item, now)
            self._rv = listed["metadata"]["resourceVersion"]
            self._cond.notify_all()

    def _run(self) -> None:
        query = {"watch": True, "allowWatchBookmarks": True, "timeoutSeconds": 60}
        while not self._stop.is_set():
            try:
                for event in self._kube.stream(
                    path=self._path,
                    query={**query, "resourceVersion": self._rv},
                    timeout=90,
                    on_open=lambda raw: setattr(self, "_raw", raw),
                ):
                    self._event(event)
            except (KubeError, KubeUnavailableError, ValueError):
                if self._stop.is_set():
                    return
                time.sleep(0.5)
                with contextlib.suppress(KubeError, KubeUnavailableError):
                    self._relist()

    def _event(self, event: Mapping[str, Any]) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        now = time.monotonic()
        if kind == "ERROR":
            raise ValueError(f"watch error: {obj.get('message')}")  # 410 Gone: relist
        with self._cond:
            self._rv = obj.get("metadata", {}).get("resourceVersion", self._rv)
            if kind in ("ADDED", "MODIFIED"):
                self._seen(obj, now)
            elif kind == "DELETED":
                self.present.pop(obj["metadata"]["name"], None)
                self.gone_at.setdefault(obj["metadata"]["name"], now)
            self._cond.notify_all()
