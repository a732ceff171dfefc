"""The controller's main thread wakes for SIGTERM whichever thread the kernel hands it to.

A process-directed signal goes to any thread that does not block it. CPython runs the Python
handler only in the main thread, when that thread runs Python code; if the main thread sits in
an ``Event.wait()`` without a timeout and the signal went to another thread, the handler waits
for the next signal that happens to reach the main thread. A pod deletion's SIGTERM was ignored
so until a SIGUSR1 60 s later (CI, tests/e2e/test_controller_process.py, a replica's teardown).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import os, signal, threading, time
    from reconciler.controller.runner import wait_until

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda _s, _f: done.set())
    ready = threading.Event()

    def other():  # the one thread that does not block SIGTERM: the kernel hands it the signal
        ready.wait()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)

    threading.Thread(target=other, daemon=True).start()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # the main thread only
    ready.set()
    wait_until(done)
    print("woke")
    """
)


def test_sigterm_handed_to_another_thread_still_wakes_the_main_thread() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=20, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "woke"
