"""The gateway in the test's own event loop: the same config text, loading and `Gateway`, without a process.

Starting the daemon as a subprocess costs 1 to 3.5 s of interpreter start and imports per test. A test
that checks what the gateway says and does on its sockets needs no process boundary: it gets an
`InProcessGateway`, which offers what `RunningGateway` does (addresses, JSON log lines, `events`,
`until_connected`, `stop`) so that a test switches with one call. Tests of signals, the CLI, systemd,
exit codes, RLIMIT_NOFILE or stdout keep `start_gateway`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway import logs
from gateway.app import Gateway
from gateway.config import load
from gateway.core.config_checks import warnings as config_warnings
from tests.harness import GatewayUnderTest, write_config

log = logging.getLogger("gateway.cli")


class _RootLevel:
    """The root logger's level while in-process gateways run: the lowest they ask, restored after the last.

    Gateways may overlap (a federation test runs two), so the level is not each one's to restore.
    """

    def __init__(self) -> None:
        self._before = logging.WARNING
        self._levels: list[int] = []

    def push(self, level: int) -> None:
        root = logging.getLogger()
        if not self._levels:
            self._before = root.level
        self._levels.append(level)
        root.setLevel(min(self._levels))

    def pop(self, level: int) -> None:
        self._levels.remove(level)
        logging.getLogger().setLevel(min(self._levels) if self._levels else self._before)


_root_level = _RootLevel()


class JsonLines(logging.Handler):
    """Keeps every log record, rendered as the daemon's `--log-format json` renders it, as a dict."""

    def __init__(self, lines: list[dict[str, Any]]) -> None:
        super().__init__(logging.NOTSET)
        self.lines = lines
        self.setFormatter(logs.formatter(console=False))

    def emit(self, record: logging.LogRecord) -> None:
        # The daemon mutes aiohttp's access log below warnings (a line per HTTP request).
        if record.name == "aiohttp.access" and record.levelno < logging.WARNING:
            return
        self.lines.append(json.loads(self.format(record)))


@dataclass
class InProcessGateway(GatewayUnderTest):
    """A `Gateway` started in the running event loop; `logs` holds the records logged while it runs.

    Records are the process's: two gateways started in one test both see each other's lines.
    """

    gateway: Gateway
    http_port: int
    msgpack_port: int | None
    unix_socket: str | None
    logs: list[dict[str, Any]] = field(default_factory=list)
    _handler: logging.Handler | None = None
    _level: int = logging.INFO

    async def stop(self, signum: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        """Stop as the daemon does on `signum` (bounded by `timeout`, s); 0 once stopped, as its exit code."""
        if self._handler is None:
            return 0
        name = signal.Signals(signum).name
        try:
            log.info("%s received: stopping", name, extra={"signal": name})
            async with asyncio.timeout(timeout):
                await self.gateway.stop()
        finally:
            self._detach()
        return 0

    def _detach(self) -> None:
        if self._handler is not None:
            logging.getLogger().removeHandler(self._handler)
            _root_level.pop(self._level)
            self._handler = None


async def start_in_process(tmp_path: Path, config_text: str) -> InProcessGateway:
    """Write `config_text`, load it as `hwgateway run` does and start its `Gateway` in this event loop.

    Raises `OSError` when an address cannot be bound, and the config's `ConfigError` when it is invalid.
    """
    path = write_config(tmp_path, config_text)
    config = load(path)
    lines: list[dict[str, Any]] = []
    handler = JsonLines(lines)
    level = logging.getLevelNamesMapping()[config.logging.level.upper()]
    logging.getLogger().addHandler(handler)
    _root_level.push(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    try:
        for warning in config_warnings(config):
            log.warning("config: %s", warning)
        gateway = Gateway(config, config_path=path)
        try:
            await gateway.start()
        except BaseException:
            await gateway.stop()
            raise
    except BaseException:
        logging.getLogger().removeHandler(handler)
        _root_level.pop(level)
        raise
    assert gateway.http_port is not None
    listeners: dict[str, str | None] = {}
    for face in gateway.faces:
        listeners.update(face.listeners())
    return InProcessGateway(
        gateway,
        gateway.http_port,
        gateway.msgpack_port,
        listeners.get("unix"),
        lines,
        handler,
        level,
    )


@contextlib.asynccontextmanager
async def running_gateway(tmp_path: Path, config_text: str) -> AsyncIterator[InProcessGateway]:
    """An in-process gateway for the `async with` block; it must stop cleanly when the block ends."""
    running = await start_in_process(tmp_path, config_text)
    try:
        yield running
    finally:
        code = await running.stop()
    assert code == 0, running.logs[-20:]
