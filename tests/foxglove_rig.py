"""The Foxglove face's URL, the npm Foxglove client and a raw client (the demo config is tests.harness's)."""

from __future__ import annotations

import asyncio
import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
import websockets
from websockets.typing import Subprotocol

from tests.harness import GatewayUnderTest

NODE_DIR = Path(__file__).resolve().parent / "node" / "foxglove"
SUBPROTOCOLS = ("foxglove.sdk.v1", "foxglove.websocket.v1")


def foxglove_url(gateway: GatewayUnderTest) -> str:
    """The `ws://host:port/` the gateway logged for Foxglove."""
    listening = next(line for line in gateway.logs if line.get("event") == "listening")
    url: str = listening["foxglove"]
    return url


async def run_node_client(url: str, subprotocol: str, plan: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
    """Run tests/node/foxglove/client.mjs (the npm client, unchanged) with `plan`; return its report."""
    node = shutil.which("node")
    if node is None or not (NODE_DIR / "node_modules" / "@foxglove" / "ws-protocol").is_dir():
        pytest.fail(
            "the Foxglove Node client is not installed: run `make node-foxglove` (npm ci in tests/node/foxglove)"
        )
    proc = await asyncio.create_subprocess_exec(
        node,
        str(NODE_DIR / "client.mjs"),
        url,
        subprotocol,
        json.dumps(plan),
        cwd=NODE_DIR,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(timeout):
        out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    lines = out.decode().strip().splitlines()
    assert lines, f"the client printed nothing; stderr: {err.decode()}"
    report: dict[str, Any] = json.loads(lines[-1])
    return report


class RawFoxglove:
    """A plain `websockets` client for the cases the npm client cannot send (bad input, v1.1)."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.kept: list[Any] = []

    @classmethod
    async def open(cls, url: str, subprotocol: str = "foxglove.sdk.v1", **options: Any) -> RawFoxglove:
        ws = await websockets.connect(
            url, subprotocols=[Subprotocol(subprotocol)], max_size=None, max_queue=None, compression=None, **options
        )
        return cls(ws)

    async def send(self, message: Any) -> None:
        await self.ws.send(json.dumps(message))

    async def recv(self, timeout: float = 5.0) -> Any:
        """The next message: a dict for JSON, bytes for binary."""
        async with asyncio.timeout(timeout):
            message = await self.ws.recv()
        return json.loads(message) if isinstance(message, str) else message

    async def wait_for(self, op: str | int, timeout: float = 5.0) -> Any:
        """The first message (kept or new) with JSON `op`, or binary opcode `op`."""

        def matches(message: Any) -> bool:
            return message[0] == op if isinstance(message, bytes) else message.get("op") == op

        for index, message in enumerate(self.kept):
            if matches(message):
                return self.kept.pop(index)
        async with asyncio.timeout(timeout):
            while True:
                message = await self.recv(timeout)
                if matches(message):
                    return message
                self.kept.append(message)

    async def close(self) -> None:
        await self.ws.close()


def service_call(service: int, call: int, payload: bytes, encoding: str = "json") -> bytes:
    """A ServiceCallRequest frame as a client sends it."""
    name = encoding.encode()
    return struct.pack("<BIII", 2, service, call, len(name)) + name + payload


def message_data(channel: int, payload: bytes) -> bytes:
    """A client MessageData frame."""
    return struct.pack("<BI", 1, channel) + payload
