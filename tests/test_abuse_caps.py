"""Every face's connections count toward one cap together, and a place freed on one face is taken on another.

Each face's own refusal past the total cap and the cap per peer is in tests/test_conformance.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import websockets
from websockets.asyncio.client import ClientConnection

from protocols.tdm import codec
from protocols.tdm.framing import FrameReader
from protocols.tdm.messages import ErrorType
from tests.abuse_clients import close_of, open_raw, read_until_closed
from tests.harness import RunningGateway, free_port, gateway_config, start_gateway

pytestmark = pytest.mark.timeout(60)

CAP = 8


async def _gateway(tmp_path: Path, server: str) -> tuple[RunningGateway, dict[str, int]]:
    ports = {"rosbridge": free_port(), "foxglove": free_port(), "tdm_tcp": free_port(), "tdm_ws": free_port()}
    extra = (
        f"[rosbridge]\nenabled = true\nport = {ports['rosbridge']}\n"
        f"[foxglove]\nenabled = true\nport = {ports['foxglove']}\n"
        f'[tdm]\nenabled = true\nhost = "127.0.0.1"\ntcp_port = {ports["tdm_tcp"]}\nws_port = {ports["tdm_ws"]}\n'
    )
    return await start_gateway(tmp_path, gateway_config(tmp_path, server=server, extra=extra)), ports


async def _tcp(port: int, source: str = "127.0.0.1") -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    sock = socket.socket()
    sock.bind((source, 0))
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    return await asyncio.open_connection(sock=sock)


async def _ws(port: int, path: str = "/", subprotocols: list[str] | None = None) -> ClientConnection:
    return await websockets.connect(
        f"ws://127.0.0.1:{port}{path}",
        subprotocols=[websockets.Subprotocol(p) for p in subprotocols] if subprotocols else None,
        open_timeout=5,
    )


class Faces:
    """Opens one connection on a face; returns something to close it with."""

    def __init__(self, gateway: RunningGateway, ports: dict[str, int]) -> None:
        self.gateway = gateway
        self.ports = ports
        self.open: dict[str, Callable[[], Awaitable[Any]]] = {
            "native ws": lambda: _ws(gateway.http_port, "/ws"),
            "msgpack tcp": lambda: open_raw(gateway, "tcp"),
            "msgpack unix": lambda: open_raw(gateway, "unix"),
            "rosbridge": lambda: _ws(ports["rosbridge"]),
            "foxglove": lambda: _ws(ports["foxglove"], subprotocols=["foxglove.websocket.v1"]),
            "tdm ws": lambda: _ws(ports["tdm_ws"]),
            "tdm tcp": lambda: _tcp(ports["tdm_tcp"]),
        }


async def _refusal(faces: Faces, face: str) -> str:
    """Open one more connection on `face` and return how it was refused (fails if it was admitted)."""
    if face in ("native ws", "rosbridge", "foxglove", "tdm ws"):
        with pytest.raises(websockets.InvalidStatus) as refused:
            await faces.open[face]()
        response = refused.value.response
        assert response.status_code == 503, face
        return response.body.decode() if response.body else ""
    reader, writer = await faces.open[face]()
    try:
        data = await read_until_closed(reader, timeout=5.0)
    finally:
        writer.close()
    if face == "tdm tcp":
        [message] = FrameReader(1 << 20).feed(data)
        assert message == codec.error(0, ErrorType.UNKNOWN_ERROR)
        return "tdm Error"
    close = close_of("tcp", data)
    assert close is not None, (face, data)
    assert close["code"] == "unavailable"
    return str(close["reason"])


async def _close(handle: Any) -> None:
    if isinstance(handle, tuple):
        handle[1].close()
    else:
        await handle.close()


@pytest.fixture
async def held() -> AsyncIterator[list[Any]]:
    handles: list[Any] = []
    yield handles
    for handle in handles:
        with contextlib.suppress(Exception):
            await _close(handle)


async def _clients(gateway: RunningGateway) -> int:
    async with aiohttp.ClientSession() as http, http.get(f"{gateway.base_url}/healthz") as response:
        assert response.status == 200
        return int((await response.json())["clients"])


async def test_every_face_shares_one_cap_and_refuses_clearly_past_it(tmp_path: Path, held: list[Any]) -> None:
    gateway, ports = await _gateway(tmp_path, f"max_clients = {CAP}\nmax_clients_per_peer = {CAP}\n")
    try:
        faces = Faces(gateway, ports)
        for face in faces.open:  # one connection on each of the 7 faces, and one more native: the cap is full
            held.append(await faces.open[face]())
        held.append(await faces.open["msgpack tcp"]())
        await asyncio.sleep(0.3)  # the stream listeners admit after the accept
        assert await _clients(gateway) == CAP  # /healthz still answers, from the reserve
        for face in faces.open:
            reason = await _refusal(faces, face)
            if face != "tdm tcp":
                assert f"server.max_clients = {CAP}" in reason or "server.max_clients)" in reason, (face, reason)
        # A place freed on one face is taken on another: the TDM's TCP connection leaves, a Foxglove client comes.
        await _close(held.pop(list(faces.open).index("tdm tcp")))
        await asyncio.sleep(0.3)
        held.append(await faces.open["foxglove"]())
        assert "server.max_clients" in await _refusal(faces, "tdm ws")
        assert any("refusing connections: too many clients" in line.get("event", "") for line in gateway.logs)
    finally:
        assert await gateway.stop() == 0
