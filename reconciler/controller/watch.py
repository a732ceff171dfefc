"""List and watch one collection (Services or Nodes) into an in-memory store, missing nothing.

A :class:`Reflector` is client-go's reflector + informer store, reduced to what the controller
needs. The loop:

1. **List** (paged) and *diff* the result against the store: objects new to the store are
   ``on_add``, objects whose ``resourceVersion`` changed are ``on_update(old, new)``, objects gone
   are ``on_delete``. The first list is how the controller starts; every later list is how it
   recovers, and the diff is what makes recovery lossless: a change made while the watch was
   down shows up as a difference, so it is handled exactly like a watch event.
2. **Watch** from the list's ``resourceVersion`` with ``allowWatchBookmarks``: each event updates
   the store and calls back; BOOKMARK events only advance the resourceVersion, so a quiet
   collection does not fall behind etcd's compaction window.
3. When the stream ends (the server's ``timeoutSeconds``, a dropped connection, the API server
   restarting), watch again from the last resourceVersion seen, after a short capped backoff if
   the server did not answer. An ``ERROR`` event or HTTP answer with 410 Gone means that
   resourceVersion is compacted away: list again (step 1).

Callbacks run on the reflector's thread and must be quick (the controller's only add keys to its
queue). The store hands out the latest object of a key; objects are the API's JSON as dicts and
must be treated as read-only by the caller.

Shutdown: :meth:`Reflector.stop` sets the stop flag and shuts the open watch connection, so the
thread ends within a moment instead of at the next server timeout.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping
from typing import Any

from reconciler.controller.kubeapi import KubeApi, KubeError, KubeUnavailableError

__all__ = ["Reflector", "object_key"]

_log = logging.getLogger(__name__)

Obj = dict[str, Any]


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name``, or ``name`` for cluster-scoped objects (Nodes)."""
    meta = obj.get("metadata") or {}
    ns, name = meta.get("namespace"), str(meta.get("name") or "")
    return f"{ns}/{name}" if ns else name


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class _GoneError(Exception):
    """The resourceVersion we watch from is too old: relist."""


class Reflector:
    def __init__(
        self,
        *,
        kube: KubeApi,
        path: str,
        name: str,
        on_add: Callable[[Obj], None] = lambda _o: None,
        on_update: Callable[[Obj, Obj], None] = lambda _o, _n: None,
        on_delete: Callable[[Obj], None] = lambda _o: None,
        watch_timeout: int = 300,
        page_size: int = 500,
        retry_min: float = 0.2,
        retry_max: float = 5.0,
    ) -> None:
        self._kube = kube
        self._path = path
        self.name = name
        self._on_add, self._on_update, self._on_delete = on_add, on_update, on_delete
        self._watch_timeout = watch_timeout
        self._page_size = page_size
        self._retry_min, self._retry_max = retry_min, retry_max
        self._lock = threading.Lock()
        self._store: dict[str, Obj] = {}
        self._stop = threading.Event()
        self.synced = threading.Event()
        self._thread: threading.Thread | None = None
        self._current: Any = None  # the open watch response, to shut it on stop()
        self.relists = 0  # how many lists ran: 1 at start, +1 per 410 Gone

    # -- store --------------------------------------------------------------------------------

    def get(self, key: str) -> Obj | None:
        with self._lock:
            return self._store.get(key)

    def items(self) -> list[Obj]:
        with self._lock:
            return list(self._store.values())

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name=f"reflector-{self.name}", daemon=True)
        self._thread.start()

    def stop(self, *, timeout: float = 5.0) -> None:
        self._stop.set()
        current = self._current
        if current is not None:
            try:
                current.shutdown()
            except Exception:  # best effort: the thread also sees the stop flag
                _log.debug("watch shutdown failed", exc_info=True)
        if self._thread is not None:
            self._thread.join(timeout)

    def run(self) -> None:
        rv: str | None = None
        failures = 0
        while not self._stop.is_set():
            try:
                if rv is None:
                    rv = self._relist()
                    self.synced.set()
                rv = self._watch(rv)
                failures = 0
            except _GoneError:
                _log.info("watch expired, relisting", extra={"reflector": self.name})
                rv = None
            except (KubeUnavailableError, KubeError) as exc:
                if self._stop.is_set():
                    break
                if isinstance(exc, KubeError) and exc.gone:
                    rv = None
                    continue
                failures += 1
                delay = min(self._retry_max, self._retry_min * 2 ** min(failures, 10))
                delay *= 0.5 + random.random() / 2
                _log.warning(
                    "watch interrupted, reconnecting",
                    extra={"reflector": self.name, "error": str(exc), "retry_in": delay},
                )
                self._stop.wait(delay)
            except Exception:
                _log.exception("reflector error", extra={"reflector": self.name})
                self._stop.wait(self._retry_max)

    # -- list ---------------------------------------------------------------------------------

    def _relist(self) -> str:
        items: list[Obj] = []
        cont = ""
        rv = ""
        while True:
            query: dict[str, str | int | bool] = {"limit": self._page_size}
            if cont:
                query["continue"] = cont
            page = self._kube.list(self._path, query=query)
            items += [i for i in page.get("items") or [] if isinstance(i, dict)]
            meta = page.get("metadata") or {}
            rv = rv or str(meta.get("resourceVersion") or "")
            cont = str(meta.get("continue") or "")
            if not cont:
                break
        self.relists += 1
        self._replace(items)
        return rv

    def _replace(self, items: list[Obj]) -> None:
        fresh = {object_key(i): i for i in items}
        with self._lock:
            old = self._store
            self._store = fresh
        for key, obj in fresh.items():
            before = old.get(key)
            if before is None:
                self._call(self._on_add, obj)
            elif _rv(before) != _rv(obj):
                self._call(self._on_update, before, obj)
        for key, obj in old.items():
            if key not in fresh:
                self._call(self._on_delete, obj)

    # -- watch --------------------------------------------------------------------------------

    def _watch(self, rv: str) -> str:
        query: dict[str, str | int | bool] = {
            "watch": True,
            "resourceVersion": rv,
            "allowWatchBookmarks": True,
            "timeoutSeconds": self._watch_timeout,
        }
        stream = self._kube.stream(
            path=self._path,
            query=query,
            timeout=self._watch_timeout + 30.0,
            on_open=self._opened,
        )
        try:
            for event in stream:
                if self._stop.is_set():
                    break
                rv = self._apply(event, rv)
        finally:
            self._current = None
        return rv

    def _opened(self, response: Any) -> None:
        self._current = response

    def _apply(self, event: Mapping[str, Any], rv: str) -> str:
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            return rv
        if kind == "ERROR":
            code = obj.get("code")
            if code == 410:
                raise _GoneError()
            raise KubeError(
                status=int(code or 500),
                reason=str(obj.get("reason") or ""),
                message=str(obj.get("message") or ""),
            )
        new_rv = _rv(obj) or rv
        if kind == "BOOKMARK":
            return new_rv
        key = object_key(obj)
        with self._lock:
            before = self._store.get(key)
            if kind == "DELETED":
                self._store.pop(key, None)
            else:
                self._store[key] = obj
        if kind == "DELETED":
            self._call(self._on_delete, obj)
        elif before is None:
            self._call(self._on_add, obj)
        else:
            self._call(self._on_update, before, obj)
        return new_rv

    def _call(self, fn: Callable[..., None], *args: Obj) -> None:
        try:
            fn(*args)
        except Exception:
            _log.exception("watch callback failed", extra={"reflector": self.name})
