"""Kubernetes Events for Services: one body builder (pure) and a small recorder (effects).

Events are ``core/v1`` Events, as upstream's ``record.EventRecorder`` writes them and as
``kubectl describe service`` shows them: ``involvedObject`` is the Service (with its uid, so an
Event never attaches to a re-created Service of the same name), ``source.component`` and
``reportingComponent`` name this controller.

Like client-go's correlator, a repeat of the same (Service uid, type, reason, message) within the
recorder's memory bumps ``count`` and ``lastTimestamp`` of the Event already written, instead of
writing a new one; a Service that fails every five minutes for a day has one Event with a count,
not three hundred. The memory is a bounded LRU inside the recorder (no module state).

Recording never raises: an Event that cannot be written is logged and dropped. A sync must not
fail, or be retried, because its Event could not be written.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from reconciler.controller.kubeapi import KubeApi, KubeError, KubeUnavailableError
from reconciler.controller.sync_plan import Event

__all__ = ["COMPONENT", "EventRecorder", "event_body"]

COMPONENT = "lb-reconciler"
_log = logging.getLogger(__name__)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event_body(
    *, service: Mapping[str, Any], event: Event, timestamp: str, instance: str, suffix: str
) -> dict[str, Any]:
    meta = service.get("metadata") or {}
    name = str(meta.get("name") or "")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{suffix}", "namespace": meta.get("namespace") or "default"},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Service",
            "namespace": meta.get("namespace"),
            "name": name,
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "type": event.type,
        "reason": event.reason,
        "message": event.message,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": instance,
        "firstTimestamp": timestamp,
        "lastTimestamp": timestamp,
        "count": 1,
    }


class EventRecorder:
    def __init__(
        self,
        *,
        kube: KubeApi,
        instance: str,
        memory: int = 4096,
        clock: Callable[[], str] = _now,
    ) -> None:
        self._kube = kube
        self._instance = instance
        self._memory = memory
        self._clock = clock
        self._lock = threading.Lock()
        # (uid, type, reason, message) -> (namespace, event name, count)
        self._seen: OrderedDict[tuple[str, str, str, str], tuple[str, str, int]] = OrderedDict()

    def record(self, service: Mapping[str, Any], event: Event) -> None:
        meta = service.get("metadata") or {}
        ns = str(meta.get("namespace") or "default")
        key = (str(meta.get("uid") or ""), event.type, event.reason, event.message)
        now = self._clock()
        log = _log.warning if event.type == "Warning" else _log.info
        log(
            "event",
            extra={
                "service": f"{ns}/{meta.get('name')}",
                "reason": event.reason,
                "msg_": event.message,
            },
        )
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None:
                self._seen.move_to_end(key)
        try:
            if seen is not None:
                _ns, name, count = seen
                try:
                    self._kube.patch(
                        f"/api/v1/namespaces/{ns}/events/{name}",
                        {"count": count + 1, "lastTimestamp": now},
                    )
                    self._remember(key, (ns, name, count + 1))
                    return
                except KubeError as exc:
                    if not exc.not_found:
                        raise
            body = event_body(
                service=service,
                event=event,
                timestamp=now,
                instance=self._instance,
                suffix=uuid.uuid4().hex[:16],
            )
            self._kube.create(f"/api/v1/namespaces/{ns}/events", body)
            self._remember(key, (ns, body["metadata"]["name"], 1))
        except (KubeError, KubeUnavailableError) as exc:
            _log.warning(
                "event not recorded",
                extra={
                    "service": f"{ns}/{meta.get('name')}",
                    "reason": event.reason,
                    "error": str(exc),
                },
            )

    def _remember(self, key: tuple[str, str, str, str], value: tuple[str, str, int]) -> None:
        with self._lock:
            self._seen[key] = value
            self._seen.move_to_end(key)
            while len(self._seen) > self._memory:
                self._seen.popitem(last=False)
