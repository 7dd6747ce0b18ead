"""The rosbridge face's URL and a raw rosbridge WebSocket client (the demo config is tests.harness's)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import cbor2
import websockets

from tests.harness import GatewayUnderTest

#: Motor leases long enough that only the client's departure can end them within a test.
MOTOR_LEASE_MS = 60000


def rosbridge_url(gateway: GatewayUnderTest) -> str:
    """The `ws://host:port/` the gateway logged for rosbridge."""
    listening = next(line for line in gateway.logs if line.get("event") == "listening")
    url: str = listening["rosbridge"]
    return url


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
