"""A subunit v2 stream (stdin) to JSON lines (stdout): one line per test that ended.

Run by the conformance virtualenv's Python, which has python-subunit and testtools (the
project's does not): ``.venv-conformance/bin/python conformance/subunit_json.py < run.subunit``.
Each line is ``{"id", "status", "reason", "traceback"}``: ``status`` as subunit says it
(``success``, ``fail``, ``skip``, ``xfail``, ``uxsuccess``), ``reason`` a skip's reason and
``traceback`` a failure's, both possibly empty. A class whose setup failed shows up as one
test ``setUpClass (module.Class)`` that failed. Imports nothing of the project.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import subunit  # type: ignore[import-not-found,unused-ignore]
import testtools  # type: ignore[import-not-found,unused-ignore]

ENDED = ("success", "fail", "skip", "xfail", "uxsuccess")


def _text(details: dict[str, Any], name: str) -> str:
    content = details.get(name)
    if content is None:
        return ""
    return b"".join(bytes(chunk) for chunk in content.iter_bytes()).decode("utf-8", "replace")


def main() -> int:
    def on_test(test: dict[str, Any]) -> None:
        if test["status"] not in ENDED:
            return
        details = test["details"]
        record = {
            "id": test["id"],
            "status": test["status"],
            "reason": _text(details, "reason"),
            "traceback": _text(details, "traceback"),
        }
        sys.stdout.write(json.dumps(record) + "\n")

    stream = subunit.ByteStreamToStreamResult(sys.stdin.buffer, non_subunit_name="stdout")
    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    try:
        stream.run(result)
    finally:
        result.stopTestRun()
    return 0


if __name__ == "__main__":
    sys.exit(main())
