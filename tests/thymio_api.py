"""Thymio Suite's JavaScript client (npm thymio-api 0.11.1, unchanged) as an asyncio object for tests and benches.

`ThymioApi` runs tests/node/thymio/driver.mjs (its header documents every op) in one Node process that
may hold several connections, each named by `client=`. `call(op, **arguments)` sends one command and
returns its result, raising `ThymioApiError` when the client's promise was rejected (with the TDM's
error code, or the compiler's message). What the server pushes to watchers is kept in `events`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

DRIVER_DIR = Path(__file__).parent / "node" / "thymio"
DRIVER = DRIVER_DIR / "driver.mjs"
#: Seconds an op may take by default (the driver's own timeout is one second shorter).
CALL_TIMEOUT_S = 15.0


class ThymioApiError(Exception):
    """A thymio-api call that failed: `code` is the TDM's ErrorType (None for a compile error or a timeout)."""

    def __init__(self, op: str, error: str, code: int | None) -> None:
        super().__init__(f"{op}: {error} (code {code})")
        self.error = error
        self.code = code


def require_driver() -> None:
    """Fail (under HWGW_REQUIRE_PEERS=1) or skip when node or the npm client is not installed."""
    message = "node and tests/node/thymio/node_modules are needed (make test runs npm ci there)"
    installed = (DRIVER_DIR / "node_modules" / "@mobsya-association" / "thymio-api").is_dir()
    if shutil.which("node") is None or not installed:
        if os.environ.get("HWGW_REQUIRE_PEERS") == "1":
            pytest.fail(message)
        pytest.skip(message)


class ThymioApi:
    """One driver process; `call` is safe from several tasks at once."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self._reader = asyncio.create_task(self._read())
        self._errors = asyncio.create_task(self._read_stderr())

    async def _read(self) -> None:
        assert self._process.stdout is not None
        async for line in self._process.stdout:
            message = json.loads(line)
            if "event" in message:
                self.events.append(message)
                continue
            future = self._pending.pop(message["id"], None)
            if future is not None and not future.done():
                future.set_result(message)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionError("the thymio-api driver ended: " + "".join(self.stderr[-20:])))

    async def _read_stderr(self) -> None:
        assert self._process.stderr is not None
        async for line in self._process.stderr:
            self.stderr.append(line.decode(errors="replace"))

    async def call(self, op: str, timeout_s: float = CALL_TIMEOUT_S, **arguments: Any) -> Any:
        """Run one op (see driver.mjs) and return its result; `ThymioApiError` when it failed."""
        assert self._process.stdin is not None
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        command = {"id": request_id, "op": op, "timeoutMs": int((timeout_s - 1) * 1000), **arguments}
        self._process.stdin.write((json.dumps(command) + "\n").encode())
        await self._process.stdin.drain()
        async with asyncio.timeout(timeout_s):
            reply = await future
        if not reply["ok"]:
            raise ThymioApiError(op, reply["error"], reply["code"])
        return reply["result"]

    def seen(self, kind: str, client: str = "default", node: str | None = None) -> list[dict[str, Any]]:
        """The events of `kind` pushed so far to `client` (about `node` when given)."""
        return [
            e
            for e in self.events
            if e["event"] == kind and e["client"] == client and (node is None or e["node"] == node)
        ]

    async def stop(self) -> None:
        """Close every connection and end the process (killed when it does not end within 5 s)."""
        if self._process.returncode is None and self._process.stdin is not None:
            with contextlib.suppress(ConnectionError):
                self._process.stdin.close()
        try:
            async with asyncio.timeout(5):
                await self._process.wait()
        except TimeoutError:
            self._process.kill()
            await self._process.wait()
        for task in (self._reader, self._errors):
            with contextlib.suppress(asyncio.CancelledError):
                await task


@contextlib.asynccontextmanager
async def thymio_api() -> AsyncIterator[ThymioApi]:
    """A running driver process, stopped on exit."""
    require_driver()
    process = await asyncio.create_subprocess_exec(
        "node",
        str(DRIVER),
        cwd=DRIVER_DIR,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=1 << 24,
    )
    api = ThymioApi(process)
    try:
        yield api
    finally:
        await api.stop()
