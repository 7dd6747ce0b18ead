"""Drive the real ROS 2 peer (`tests/ros2_peer/peer.py`, rclpy in `.venv-ros2`) from the gateway's venv.

`RosPeer.start(domain_id)` runs the peer as a subprocess on DDS domain `domain_id` and waits for its
`ready` (`distro="kilted"`: the Kilted peer of `.venv-ros2-kilted`; `make ros2-peer` builds both);
`request(op, **fields)` sends one JSON request and returns its `ok` (raising `PeerError` with the
peer's error); messages the peer receives are kept per ROS topic in `messages`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
#: Each ROS 2 distribution's peer venv (`make ros2-peer`); `HWGW_ROS2_PEER` names another Jazzy one.
PEER_VENVS = {
    "jazzy": Path(os.environ.get("HWGW_ROS2_PEER", ROOT / ".venv-ros2")),
    "kilted": ROOT / ".venv-ros2-kilted",
}
PEER_SCRIPT = Path(__file__).resolve().parent / "peer.py"
#: Seconds the peer may take to import rclpy and start its node (on two loaded cores).
START_TIMEOUT_S = 30.0


class PeerError(RuntimeError):
    """The peer answered a request with an error."""


class RosPeer:
    """One running peer process and what it reported."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.messages: dict[str, list[dict[str, Any]]] = {}
        self.arrived = asyncio.Event()
        self._ids = itertools.count(1)
        self._answers: dict[int, asyncio.Future[Any]] = {}
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._reader = asyncio.create_task(self._read(), name="ros2-peer reader")

    @classmethod
    async def start(cls, domain_id: int, name: str = "hwgateway_test_peer", distro: str = "jazzy") -> RosPeer:
        """Run `distro`'s peer as node `name` on DDS domain `domain_id` and wait until its node is up."""
        python = PEER_VENVS[distro] / "bin" / "python"
        # Not the gateway's PYTHONPATH: its `hwgateway` package (the client library) would hide the
        # ROS message package `hwgateway` that rosidl built into the peer's venv.
        env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        env.update(ROS_DOMAIN_ID=str(domain_id), PYTHONUNBUFFERED="1")
        process = await asyncio.create_subprocess_exec(
            str(python),
            str(PEER_SCRIPT),
            name,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            limit=64 * 1024 * 1024,
        )
        peer = cls(process)
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                await peer._ready
        except BaseException:
            await peer.close()
            raise
        return peer

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            message = json.loads(line)
            if message.get("event") == "ready":
                self._ready.set_result(None)
            elif message.get("event") == "message":
                self.messages.setdefault(message["topic"], []).append(message)
                self.arrived.set()
            elif "id" in message:
                answer = self._answers.pop(message["id"], None)
                if answer is not None and not answer.done():
                    if "error" in message:
                        answer.set_exception(PeerError(message["error"]))
                    else:
                        answer.set_result(message["ok"])
        error = PeerError(f"the peer ended (exit code {await self.process.wait()})")
        if not self._ready.done():
            self._ready.set_exception(error)
        for answer in self._answers.values():
            if not answer.done():
                answer.set_exception(error)

    async def request(self, op: str, timeout: float = 10.0, **fields: Any) -> Any:
        """Send request `op` with `fields`; its answer (`ok`)."""
        assert self.process.stdin is not None
        request_id = next(self._ids)
        answer = self._answers[request_id] = asyncio.get_running_loop().create_future()
        self.process.stdin.write(json.dumps({"id": request_id, "op": op, **fields}).encode() + b"\n")
        await self.process.stdin.drain()
        async with asyncio.timeout(timeout):
            return await answer

    async def wait_for(
        self,
        predicate: Callable[[], bool],
        what: str,
        timeout: float = 10.0,
        missing: Callable[[], object] | None = None,
    ) -> None:
        """Until `predicate()` holds, checked whenever a message arrives (and every 0.1 s for graph changes).

        On timeout the assertion names `what` and, when given, what `missing()` says is still missing.
        """
        try:
            async with asyncio.timeout(timeout):
                while not predicate():
                    self.arrived.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(0.1):
                            await self.arrived.wait()
        except TimeoutError:
            raise AssertionError(f"never happened: {what}" + (f" (missing: {missing()})" if missing else "")) from None

    async def close(self) -> None:
        """Ask the peer to quit (its node leaves the graph), then make sure the process is gone."""
        if self.process.returncode is None and self.process.stdin is not None:
            with contextlib.suppress(ConnectionError):
                self.process.stdin.write(b'{"op": "quit"}\n')
                await self.process.stdin.drain()
            try:
                async with asyncio.timeout(10.0):
                    await self.process.wait()
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
