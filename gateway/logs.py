"""Logging set-up for the entry point only: structlog renders every record, ours and the libraries'.

JSON lines on stdout when stdout is not a TTY (journald, containers), a readable console otherwise.
Library modules just use `logging.getLogger(__name__)`; `extra={...}` keys become JSON fields.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import orjson
import structlog


def _json(event: Any, **_: Any) -> str:
    return orjson.dumps(event, default=str).decode()


def _shared_processors() -> list[Any]:
    """The processors every record passes, structlog's own and the standard library's."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.ExtraAdder(),
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]


def formatter(console: bool) -> logging.Formatter:
    """The formatter of the daemon's log lines: a readable console, or one JSON object per line."""
    renderer: Any = structlog.dev.ConsoleRenderer() if console else structlog.processors.JSONRenderer(_json)
    final: list[Any] = [structlog.stdlib.ProcessorFormatter.remove_processors_meta]
    if not console:
        final.append(structlog.processors.dict_tracebacks)
    final.append(renderer)
    return structlog.stdlib.ProcessorFormatter(foreign_pre_chain=_shared_processors(), processors=final)


def configure(level: str = "info", fmt: str = "auto") -> None:
    """Route all logging to stdout through structlog at `level` (`fmt`: auto, json or console)."""
    console = sys.stdout.isatty() if fmt == "auto" else fmt == "console"
    structlog.configure(
        processors=[*_shared_processors(), structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(formatter(console))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # aiohttp's access log would write a line per HTTP request; health checks make that noise.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
