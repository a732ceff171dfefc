"""Deleting a load balancer that Octavia left in ``ERROR``.

When an Octavia flow fails, the load balancer and the children it touched end in ``ERROR``.
Octavia then still accepts a delete of the load balancer with ``cascade`` (which is how OCCM
deletes every load balancer), but ``pulumi destroy`` deletes the children one by one and the
provider waits for each one's pool or load balancer to be ``ACTIVE`` again: it fails with
``unexpected state 'ERROR'`` on every retry, and the Service would keep its finalizer for ever.

So before ``destroy``, :meth:`reconciler.engine.ServiceStack.delete` asks :func:`needs_cascade`
about the load balancer the stack owns; when it says yes, :func:`cascade_delete` deletes it with
cascade and waits until it is gone, and the engine refreshes the stack (the provider drops what
no longer exists) before destroying what is left (the floating IP, security groups). A load
balancer shared with other Services is never cascaded: their listeners hang from it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from reconciler.engine_errors import UpTimeoutError
from reconciler.openstack_rest import OpenStackRest

log = logging.getLogger("reconciler.engine")

ERROR = "ERROR"
FIRST_WAIT = 0.5
BACKOFF = 1.5
MAX_WAIT = 10.0


def needs_cascade(lb: Mapping[str, Any] | None) -> bool:
    """Whether ``destroy`` cannot delete this load balancer's children one by one."""
    return lb is not None and lb.get("provisioning_status") == ERROR


def cascade_delete(
    rest: OpenStackRest,
    lb_id: str,
    *,
    stack_name: str,
    timeout: float,
    cancelled: threading.Event,
) -> None:
    """Delete ``lb_id`` with cascade, then wait (bounded by ``timeout``) until Octavia no longer
    has it. Raises :class:`UpTimeoutError` (retryable) past the deadline, or when ``cancelled``
    is set."""
    log.warning(
        "load balancer %s is in ERROR: deleting it with cascade before destroying the stack",
        lb_id,
    )
    rest.delete_load_balancer(lb_id)
    deadline = time.monotonic() + timeout
    wait = FIRST_WAIT
    while rest.load_balancer(lb_id) is not None:
        left = deadline - time.monotonic()
        if left <= 0 or cancelled.wait(min(wait, left)):
            raise UpTimeoutError(
                f"load balancer {lb_id} (ERROR, deleted with cascade) was still there after "
                f"{timeout:.0f}s; the next sync retries",
                stack=stack_name,
            )
        wait = min(wait * BACKOFF, MAX_WAIT)
