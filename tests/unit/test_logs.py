"""reconciler.controller.logs: JSON lines with extras and tracebacks, text lines, validation,
idempotence."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reconciler.controller.logs import NOISY_LOGGERS, configure_logging

RFC3339_MS_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    noisy = {name: logging.getLogger(name).level for name in NOISY_LOGGERS}
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)
    for name, lvl in noisy.items():
        logging.getLogger(name).setLevel(lvl)


@pytest.fixture
def out() -> io.StringIO:
    return io.StringIO()


def records(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


log = logging.getLogger("reconciler.test_logs")


def test_json_line_fields(out: io.StringIO) -> None:
    configure_logging(stream=out)
    log.info("ensured %s", "default/web")
    (rec,) = records(out)
    assert list(rec) == ["ts", "level", "logger", "msg"]
    assert rec["level"] == "info"
    assert rec["logger"] == "reconciler.test_logs"
    assert rec["msg"] == "ensured default/web"
    assert RFC3339_MS_UTC.match(rec["ts"])
    when = datetime.fromisoformat(rec["ts"])
    assert when.tzinfo is not None
    assert abs(datetime.now(UTC) - when) < timedelta(seconds=10)


def test_json_extras_follow_msg(out: io.StringIO) -> None:
    configure_logging(stream=out)
    log.warning(
        "drift",
        extra={"service": "default/web", "attempt": 3, "ok": False, "ids": ["a", "b"], "n": None},
    )
    (rec,) = records(out)
    assert list(rec)[:4] == ["ts", "level", "logger", "msg"]
    assert rec["level"] == "warning"
    assert {k: rec[k] for k in ("service", "attempt", "ok", "ids", "n")} == {
        "service": "default/web",
        "attempt": 3,
        "ok": False,
        "ids": ["a", "b"],
        "n": None,
    }


def test_json_unserialisable_values_become_str(out: io.StringIO) -> None:
    class Ref:
        def __str__(self) -> str:
            return "default/web@uid-1"

    configure_logging(stream=out)
    log.info("x", extra={"ref": Ref(), "nan": float("nan"), "raw": b"\x00", "fine": 1.5})
    (rec,) = records(out)  # still valid JSON: no NaN token
    assert rec["ref"] == "default/web@uid-1"
    assert rec["nan"] == "nan"
    assert rec["raw"] == "b'\\x00'"
    assert rec["fine"] == 1.5


def test_json_extras_named_like_fixed_keys_do_not_overwrite_them(out: io.StringIO) -> None:
    configure_logging(stream=out)
    log.info("real", extra={"ts": "fake", "level": "fake", "exc": "fake"})
    (rec,) = records(out)
    assert rec["level"] == "info"
    assert RFC3339_MS_UTC.match(rec["ts"])
    assert "exc" not in rec
    assert (rec["extra_ts"], rec["extra_level"], rec["extra_exc"]) == ("fake", "fake", "fake")


def test_json_exception(out: io.StringIO) -> None:
    configure_logging(stream=out)
    try:
        1 / 0  # noqa: B018
    except ZeroDivisionError:
        log.exception("sync crashed", extra={"service": "default/web"})
    (rec,) = records(out)
    assert rec["level"] == "error"
    assert rec["msg"] == "sync crashed"
    assert rec["service"] == "default/web"
    assert rec["exc"].startswith("Traceback (most recent call last):")
    assert rec["exc"].endswith("ZeroDivisionError: division by zero")
    assert list(rec)[-1] == "exc"


def test_json_stays_one_line(out: io.StringIO) -> None:
    configure_logging(stream=out)
    log.info("two\nlines", extra={"detail": "a\nb"})
    try:
        raise ValueError("bad")
    except ValueError:
        log.warning("with traceback", exc_info=True)
    assert len(out.getvalue().splitlines()) == 2
    first, second = records(out)
    assert first["msg"] == "two\nlines"
    assert "ValueError: bad" in second["exc"]


def test_json_stack_info(out: io.StringIO) -> None:
    configure_logging(stream=out)
    log.info("where", stack_info=True)
    (rec,) = records(out)
    assert rec["stack"].startswith("Stack (most recent call last):")


def test_text_format(out: io.StringIO) -> None:
    configure_logging(fmt="text", stream=out)
    log.info("ensured", extra={"service": "default/web", "reason": "spec changed", "n": 2})
    (line,) = out.getvalue().splitlines()
    ts, rest = line.split(" ", 1)
    assert RFC3339_MS_UTC.match(ts)
    assert rest == (
        'INFO    reconciler.test_logs: ensured service=default/web reason="spec changed" n=2'
    )


def test_text_format_exception_follows_the_line(out: io.StringIO) -> None:
    configure_logging(fmt="text", stream=out)
    try:
        raise KeyError("lb")
    except KeyError:
        log.exception("failed", extra={"service": "default/web"})
    first, *rest = out.getvalue().splitlines()
    assert first.endswith("ERROR   reconciler.test_logs: failed service=default/web")
    assert rest[0] == "Traceback (most recent call last):"
    assert rest[-1] == "KeyError: 'lb'"


def test_level_filters(out: io.StringIO) -> None:
    configure_logging(level="warning", stream=out)
    log.info("hidden")
    log.warning("shown")
    assert [r["msg"] for r in records(out)] == ["shown"]


def test_level_is_case_insensitive(out: io.StringIO) -> None:
    configure_logging(level="DEBUG", stream=out)
    log.debug("shown")
    assert records(out)[0]["level"] == "debug"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"level": "verbose"},
            "unknown log level 'verbose'; allowed: debug, info, warning, error, critical",
        ),
        ({"fmt": "yaml"}, "unknown log format 'yaml'; allowed: json, text"),
    ],
)
def test_invalid_arguments(kwargs: dict[str, str], message: str) -> None:
    before = list(logging.getLogger().handlers)
    with pytest.raises(ValueError, match=re.escape(message)):
        configure_logging(level=kwargs.get("level", "info"), fmt=kwargs.get("fmt", "json"))
    assert logging.getLogger().handlers == before  # nothing installed


def test_idempotent(out: io.StringIO) -> None:
    root = logging.getLogger()
    before = len(root.handlers)
    configure_logging(stream=io.StringIO())
    configure_logging(stream=io.StringIO())
    configure_logging(stream=out)
    assert len(root.handlers) == before + 1
    log.info("once")
    assert [r["msg"] for r in records(out)] == ["once"]


def test_reconfigure_switches_format(out: io.StringIO) -> None:
    configure_logging(fmt="json", stream=io.StringIO())
    configure_logging(fmt="text", stream=out)
    log.info("plain")
    assert out.getvalue().rstrip().endswith("reconciler.test_logs: plain")


def test_other_handlers_stay(out: io.StringIO) -> None:
    root = logging.getLogger()
    foreign = logging.StreamHandler(io.StringIO())
    root.addHandler(foreign)
    try:
        configure_logging(stream=out)
        configure_logging(stream=out)
        assert foreign in root.handlers
    finally:
        root.removeHandler(foreign)


def test_noisy_libraries_quiet_unless_debug(out: io.StringIO) -> None:
    configure_logging(level="info", stream=out)
    for name in ("urllib3", "kubernetes", "pulumi"):
        assert logging.getLogger(name).level == logging.WARNING
    logging.getLogger("urllib3.connectionpool").info("chatter")
    logging.getLogger("kubernetes.client.rest").warning("worth seeing")
    assert [r["msg"] for r in records(out)] == ["worth seeing"]

    configure_logging(level="debug", stream=out)
    for name in ("urllib3", "kubernetes", "pulumi"):
        assert logging.getLogger(name).level == logging.NOTSET
    logging.getLogger("urllib3.connectionpool").debug("now shown")
    assert records(out)[-1]["msg"] == "now shown"


def test_default_stream_is_stderr_at_call_time(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging()
    log.info("to stderr")
    assert json.loads(capsys.readouterr().err.splitlines()[-1])["msg"] == "to stderr"
