"""The daemon with the demo devices and rosbridge on free ports, and a raw rosbridge WebSocket client."""

from __future__ import annotations

import asyncio
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import aiohttp
import cbor2
import websockets

from tests.harness import GatewayUnderTest

#: Motor leases long enough that only the client's departure can end them within a test.
MOTOR_LEASE_MS = 60000


def demo_config(tmp_path: Path, extra: str = "") -> str:
    """gateway/demo.toml on free ports with a Unix socket in `tmp_path` (and long Thymio motor leases)."""
    text = resources.files("gateway").joinpath("demo.toml").read_text(encoding="utf-8")
    text = re.sub(r"(?m)^http_port = \d+$", "http_port = 0", text)
    text = re.sub(r"(?m)^msgpack_port = \d+$", f'msgpack_port = 0\nunix_socket = "{tmp_path / "gw.sock"}"', text)
    text = re.sub(r"(?m)^port = 9090$", "port = 0", text)
    text = text.replace("[devices.thymio-demo]\n", f"[devices.thymio-demo]\nmotor_lease_ms = {MOTOR_LEASE_MS}\n")
    return extra + "\n" + text


def rosbridge_url(gateway: GatewayUnderTest) -> str:
    """The `ws://host:port/` the gateway logged for rosbridge."""
    listening = next(line for line in gateway.logs if line.get("event") == "listening")
    url: str = listening["rosbridge"]
    return url


async def metric(gateway: GatewayUnderTest, name: str, labels: str = "") -> float:
    """One sample of the gateway's /metrics (0 when absent)."""
    async with aiohttp.ClientSession() as session, session.get(gateway.base_url + "/metrics") as response:
        text = await response.text()
    for line in text.splitlines():
        if line.startswith(f"{name}{{{labels}}} ") if labels else line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def wait_connected(gateway: GatewayUnderTest, device: str, timeout: float = 15.0) -> None:
    """Until `device` is connected (its Thymio VM or remote started)."""
    async with asyncio.timeout(timeout):
        while True:
            async with aiohttp.ClientSession() as session, session.get(gateway.base_url + "/healthz") as response:
                devices = {d["id"]: d["status"] for d in (await response.json())["devices"]}
            if devices.get(device) == "connected":
                return
            await asyncio.sleep(0.1)


class RawRosbridge:
    """A plain `websockets` client speaking rosbridge JSON (and CBOR) frames, for the bad-input cases."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.kept: list[dict[str, Any]] = []

    @classmethod
    async def open(cls, url: str, **options: Any) -> RawRosbridge:
        # An unbounded queue keeps reading while the test does not, so closing never waits on a full buffer.
        return cls(await websockets.connect(url, max_size=None, max_queue=None, compression=None, **options))

    async def send(self, message: Any) -> None:
        await self.ws.send(json.dumps(message))

    async def send_text(self, text: str) -> None:
        await self.ws.send(text)

    async def send_bytes(self, data: bytes) -> None:
        await self.ws.send(data)

    async def recv(self, timeout: float = 5.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            frame = await self.ws.recv()
        message: dict[str, Any] = cbor2.loads(frame) if isinstance(frame, bytes) else json.loads(frame)
        return message

    async def wait_for(self, predicate: Any, timeout: float = 5.0) -> dict[str, Any]:
        for index, message in enumerate(self.kept):
            if predicate(message):
                return self.kept.pop(index)
        async with asyncio.timeout(timeout):
            while True:
                message = await self.recv(timeout)
                if predicate(message):
                    return message
                self.kept.append(message)

    async def status(self, request_id: Any = None, timeout: float = 5.0) -> dict[str, Any]:
        """The next `status` (with `request_id` when given)."""
        return await self.wait_for(
            lambda m: m.get("op") == "status" and (request_id is None or m.get("id") == request_id), timeout
        )

    async def call(self, service: str, args: Any, request_id: str | int = "call:1", **fields: Any) -> dict[str, Any]:
        await self.send({"op": "call_service", "id": request_id, "service": service, "args": args, **fields})
        return await self.wait_for(lambda m: m.get("op") == "service_response" and m.get("id") == request_id)

    async def close(self) -> None:
        await self.ws.close()
