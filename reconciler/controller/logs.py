"""Log output of the controller: one JSON object per line (for log shippers) or readable text.

:func:`configure_logging` installs one handler on the root logger. The code logs with the stdlib
``logging`` module and passes context as ``extra``::

    _log.info("load balancer ensured", extra={"service": "default/web", "lb_id": lb.id})

gives, with ``fmt="json"``::

    {"ts": "2025-01-31T09:15:02.123Z", "level": "info", "logger": "reconciler.controller.loop",
     "msg": "load balancer ensured", "service": "default/web", "lb_id": "8c1e..."}

(on one line). ``ts`` is RFC 3339 in UTC with milliseconds; ``level`` is lower case; every
``extra`` field follows ``msg`` (found as the record's attributes that a plain
:class:`logging.LogRecord` does not have); ``exc`` holds the traceback of ``_log.exception`` or
``exc_info=True`` and ``stack`` that of ``stack_info=True``. A value JSON cannot encode is
written as its ``str()``; an extra field named like one of the fixed keys is written as
``extra_<name>``. ``fmt="text"`` gives::

    2025-01-31T09:15:02.123Z INFO    reconciler.controller.loop: load balancer ensured lb_id=8c1e...

Below ``debug``, the chatty libraries (urllib3, kubernetes, pulumi) are held at WARNING.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import IO, Any

__all__ = ["FORMATS", "LEVELS", "JsonFormatter", "TextFormatter", "configure_logging"]

LEVELS = ("debug", "info", "warning", "error", "critical")
FORMATS = ("json", "text")
NOISY_LOGGERS = ("urllib3", "kubernetes", "pulumi")

# Attributes every LogRecord has (and the ones Formatter / Python 3.12 add): not "extra" fields.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}
_FIXED = ("ts", "level", "logger", "msg", "exc", "stack")


def _timestamp(record: logging.LogRecord) -> str:
    when = datetime.fromtimestamp(record.created, tz=UTC)
    return f"{when:%Y-%m-%dT%H:%M:%S}.{int(record.msecs):03d}Z"


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in record.__dict__.items():
        if key in _STANDARD or key.startswith("_"):
            continue
        out[f"extra_{key}" if key in _FIXED else key] = value
    return out


def _json_value(value: Any) -> Any:
    """``value`` if JSON can encode it as it is, else its ``str()``."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)
    return value


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts, level, logger, msg, the extra fields, exc, stack."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        payload.update(_extras(record))
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            payload["exc"] = record.exc_text
        if record.stack_info:
            payload["stack"] = self.formatStack(record.stack_info)
        try:
            return json.dumps(payload, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            safe = {key: _json_value(value) for key, value in payload.items()}
            return json.dumps(safe, ensure_ascii=False, default=str)


def _text_value(value: Any) -> str:
    text = value if isinstance(value, str) else _json_dumps_or_str(value)
    if text == "" or any(c in text for c in ' ="\n\t'):
        return json.dumps(text, ensure_ascii=False)
    return text


def _json_dumps_or_str(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)


class TextFormatter(logging.Formatter):
    """``ts LEVEL logger: msg key=value ...``; a traceback follows on the next lines."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record)} {record.levelname:<7} {record.name}: {record.getMessage()}"
        fields = " ".join(f"{k}={_text_value(v)}" for k, v in _extras(record).items())
        if fields:
            line = f"{line} {fields}"
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line = f"{line}\n{record.exc_text}"
        if record.stack_info:
            line = f"{line}\n{self.formatStack(record.stack_info)}"
        return line


class _Handler(logging.StreamHandler[IO[str]]):
    """Ours, so that a second :func:`configure_logging` replaces it instead of adding one."""


def configure_logging(
    *, level: str = "info", fmt: str = "json", stream: IO[str] | None = None
) -> None:
    """Send every log record at ``level`` or above to ``stream`` (default: ``sys.stderr`` at the
    time of the call) in ``fmt``; ``ValueError`` for a level or format not in LEVELS / FORMATS.

    Calling it again replaces the handler it installed before; handlers others put on the root
    logger (pytest's, for one) stay.
    """
    name = str(level).lower()
    if name not in LEVELS:
        raise ValueError(f"unknown log level {level!r}; allowed: {', '.join(LEVELS)}")
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; allowed: {', '.join(FORMATS)}")
    handler = _Handler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(name.upper())
    for noisy in NOISY_LOGGERS:
        logging.getLogger(noisy).setLevel(logging.NOTSET if name == "debug" else logging.WARNING)
