"""The Thymio Device Manager face: tdmclient 0.1.21 (from PyPI, unchanged) against the real daemon.

A simulated Thymio whose description has a real Thymio II's variables (pitfall P4: `leds.top` is a
variable), over TCP and over WebSocket; then every kind of bad input on raw sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import websockets
from tdmclient import FlatBuffer
from tdmclient.thymio import ThymioFB

from gateway.faces.tdm.nodes import node_id
from tests import tdm_programs as programs
from tests.harness import GatewayUnderTest, connect, free_port, gateway_config
from tests.inprocess import running_gateway, start_in_process
from tests.test_tdm_codec import nested_vectors, with_raw_value

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(90),
]

DEVICE = "thymio-sim"
DEVICES = f"""
[devices.{DEVICE}]
kind = "aseba"
simulate = true
"""


def tdm_section(tcp: int, ws: int) -> str:
    return f'[tdm]\nenabled = true\nhost = "127.0.0.1"\ntcp_port = {tcp}\nws_port = {ws}\n'


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[GatewayUnderTest, int, int]]:
    tmp_path = tmp_path_factory.mktemp("tdm")
    tcp, ws = free_port(), free_port()
    running = await start_in_process(tmp_path, gateway_config(tmp_path, DEVICES, extra=tdm_section(tcp, ws)))
    native = await connect(running, "ws")
    for _ in range(200):
        devices = (await native.ok("list_devices"))["devices"]
        if devices[0]["status"] == "connected":
            break
        await asyncio.sleep(0.05)
    await native.close()
    yield running, tcp, ws
    assert await running.stop() == 0


def port_of(gateway: tuple[GatewayUnderTest, int, int], ws: bool) -> int:
    return gateway[2] if ws else gateway[1]


@pytest.mark.parametrize("ws", [False, True], ids=["tcp", "websocket"])
async def test_tdmclient_programs_the_simulated_thymio(gateway: tuple[GatewayUnderTest, int, int], ws: bool) -> None:
    seen = await asyncio.to_thread(programs.full_sequence, port_of(gateway, ws), ws, programs.GOOD_PROGRAM, "n", True)
    assert seen["status_before"] == programs.STATUS_AVAILABLE
    assert seen["set"] is None
    assert seen["bad"]["error_line"] == 2
    assert seen["bad"]["error_col"] == 5
    assert "no_such_variable" in seen["bad"]["error_msg"]
    assert seen["register"] is None
    assert seen["good"] is None
    assert seen["run"] is None
    assert seen["watch"] is None
    assert seen["leds.top"] == [0, 32, 0]
    assert ("pong", [5, 1]) in seen["events"]
    assert seen["watched"] == 1
    assert seen["unlock"] is None
    assert seen["status_after"] == programs.STATUS_AVAILABLE


@pytest.mark.parametrize("ws", [False, True], ids=["tcp", "websocket"])
async def test_a_second_client_sees_busy_and_a_leaving_client_releases_its_lock(
    gateway: tuple[GatewayUnderTest, int, int], ws: bool
) -> None:
    port = port_of(gateway, ws)
    holder_connected = asyncio.Event()

    async def hold() -> int:
        holder_connected.set()
        return await asyncio.to_thread(programs.lock_and_leave, port, ws)

    # One client locks and leaves; while it holds the lock (checked inside lock_and_leave) it is ready.
    assert await hold() == programs.STATUS_READY
    # Its lock ended with it: a new client finds the node available and may lock it.
    assert await asyncio.to_thread(programs.first_status, port, ws, None, programs.STATUS_AVAILABLE) == 2
    # A lock taken through the native face is the same lock: TDM clients see busy and cannot lock.
    native = await connect(gateway[0], "ws")
    await native.ok("lock", device=DEVICE)
    try:
        assert await asyncio.to_thread(programs.first_status, port, ws, None, programs.STATUS_BUSY) == 3
        assert await asyncio.to_thread(programs.try_lock, port, ws) == "NodeLockError"
    finally:
        await native.ok("unlock", device=DEVICE)
        await native.close()
    assert await asyncio.to_thread(programs.try_lock, port, ws) == "locked"


@pytest.mark.parametrize("ws", [False, True], ids=["tcp", "websocket"])
async def test_tdmclient_list_exits_0(gateway: tuple[GatewayUnderTest, int, int], ws: bool) -> None:
    args = ["-m", "tdmclient", "list", "--tdmaddr=127.0.0.1", f"--tdmport={port_of(gateway, ws)}"]
    process = await asyncio.create_subprocess_exec(
        sys.executable, *args, *(["--tdmws"] if ws else []), stdout=asyncio.subprocess.PIPE
    )
    output, _ = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, output
    assert DEVICE.encode() in output


# -- bad input, on raw sockets, with tdmclient's own encoder and decoder ---------------------


def message(*fields: Any) -> bytes:
    encoded: bytes = ThymioFB.create_message(fields, ThymioFB.SCHEMA)
    return encoded


HANDSHAKE = message(ThymioFB.MESSAGE_TYPE_CONNECTION_HANDSHAKE, ())
UNKNOWN_ID = bytes(16)


def parse(data: bytes) -> tuple[int, list[Any]]:
    fb = FlatBuffer()
    fb.parse(data, ThymioFB.SCHEMA)
    return fb.root.union_type, fb.root.union_data[0].fields


class RawTcp:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def send(self, data: bytes) -> None:
        self.writer.write(struct.pack("<I", len(data)) + data)
        await self.writer.drain()

    async def receive(self) -> tuple[int, list[Any]]:
        while True:
            (length,) = struct.unpack("<I", await asyncio.wait_for(self.reader.readexactly(4), 5))
            kind, fields = parse(await self.reader.readexactly(length))
            if kind != ThymioFB.MESSAGE_TYPE_PING:
                return kind, fields

    async def aclose(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()

    async def closed(self) -> bool:
        try:
            while await asyncio.wait_for(self.reader.read(65536), 5):
                pass
        except ConnectionError:
            pass
        await self.aclose()
        return True


async def raw_tcp(port: int, handshake: bool = True) -> RawTcp:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    raw = RawTcp(reader, writer)
    if handshake:
        await raw.send(HANDSHAKE)
        kind, _ = await raw.receive()
        assert kind == ThymioFB.MESSAGE_TYPE_CONNECTION_HANDSHAKE
    return raw


async def next_of(raw: RawTcp, kind: int) -> list[Any]:
    for _ in range(20):
        got, fields = await raw.receive()
        if got == kind:
            return fields
    raise AssertionError(f"no message {kind}")


def error_of(fields: list[Any]) -> tuple[int, int]:
    return FlatBuffer.field_val(fields[0], 0), FlatBuffer.field_val(fields[1], 0)


async def still_serving(port: int) -> None:
    raw = await raw_tcp(port)
    fields = await next_of(raw, ThymioFB.MESSAGE_TYPE_NODES_CHANGED)
    assert fields[0][0], "the node list is empty"
    await raw.aclose()


async def test_undecodable_and_unknown_messages_get_an_error_and_the_session_goes_on(
    gateway: tuple[GatewayUnderTest, int, int],
) -> None:
    raw = await raw_tcp(gateway[1])
    await raw.send(b"\xff" * 40)  # no flatbuffer
    assert error_of(await next_of(raw, ThymioFB.MESSAGE_TYPE_ERROR)) == (0, 1)
    await raw.send(bytes([12, 0, 0, 0, 8, 0, 8, 0, 7, 0, 4, 0, 8, 0, 0, 0, 99, 0, 0, 0, 0, 0, 0, 0]))  # tag 99
    assert error_of(await next_of(raw, ThymioFB.MESSAGE_TYPE_ERROR)) == (0, 1)
    await raw.send(message(ThymioFB.MESSAGE_TYPE_FIRMWARE_UPGRADE_REQUEST, (41, (node_id(DEVICE),))))
    assert error_of(await next_of(raw, ThymioFB.MESSAGE_TYPE_ERROR)) == (41, 1)
    await raw.send(message(ThymioFB.MESSAGE_TYPE_LOCK_NODE, (42, (UNKNOWN_ID,))))
    assert error_of(await next_of(raw, ThymioFB.MESSAGE_TYPE_ERROR)) == (42, 2)  # unknown_node
    program = (43, (node_id(DEVICE),), ThymioFB.PROGRAMMING_LANGUAGE_ASEBA, "var a", 2)
    await raw.send(message(ThymioFB.MESSAGE_TYPE_COMPILE_AND_LOAD_CODE_ON_VM, program))
    assert error_of(await next_of(raw, ThymioFB.MESSAGE_TYPE_ERROR)) == (43, 2)  # not locked by this client
    await raw.send(message(ThymioFB.MESSAGE_TYPE_SET_VARIABLES, (44, (node_id(DEVICE),), [("motor.left.target", [1])])))
    assert error_of(await next_of(raw, ThymioFB.MESSAGE_TYPE_ERROR)) == (44, 2)
    await raw.send(message(ThymioFB.MESSAGE_TYPE_LOCK_NODE, (45, (node_id(DEVICE),))))
    assert FlatBuffer.field_val((await next_of(raw, ThymioFB.MESSAGE_TYPE_REQUEST_COMPLETED))[0], 0) == 45
    await raw.send(message(ThymioFB.MESSAGE_TYPE_SET_VARIABLES, (46, (node_id(DEVICE),), [("no.such", [1])])))
    assert error_of(await next_of(raw, ThymioFB.MESSAGE_TYPE_ERROR)) == (46, 1)
    aesl = (47, (node_id(DEVICE),), ThymioFB.PROGRAMMING_LANGUAGE_AESL, "<network/>", 2)
    await raw.send(message(ThymioFB.MESSAGE_TYPE_COMPILE_AND_LOAD_CODE_ON_VM, aesl))
    assert error_of(await next_of(raw, ThymioFB.MESSAGE_TYPE_ERROR)) == (47, 1)
    await raw.aclose()
    await still_serving(gateway[1])


async def test_a_value_of_nested_vectors_is_refused_at_once_and_the_session_goes_on(
    gateway: tuple[GatewayUnderTest, int, int],
) -> None:
    # 205 bytes that expand to 2**41 ints if decoded naively: an hour of the event loop per message.
    raw = await raw_tcp(gateway[1])
    await raw.send(message(ThymioFB.MESSAGE_TYPE_LOCK_NODE, (1, (node_id(DEVICE),))))
    assert FlatBuffer.field_val((await next_of(raw, ThymioFB.MESSAGE_TYPE_REQUEST_COMPLETED))[0], 0) == 1
    for kind in (ThymioFB.MESSAGE_TYPE_SET_VARIABLES, ThymioFB.MESSAGE_TYPE_SEND_EVENTS):
        await raw.send(with_raw_value(nested_vectors(40), kind))
        assert error_of(await next_of(raw, ThymioFB.MESSAGE_TYPE_ERROR)) == (0, 1)
    await raw.send(message(ThymioFB.MESSAGE_TYPE_SET_VARIABLES, (2, (node_id(DEVICE),), [("motor.left.target", [1])])))
    assert FlatBuffer.field_val((await next_of(raw, ThymioFB.MESSAGE_TYPE_REQUEST_COMPLETED))[0], 0) == 2
    await raw.aclose()
    await still_serving(gateway[1])


async def test_a_first_message_that_is_no_handshake_closes_the_connection(
    gateway: tuple[GatewayUnderTest, int, int],
) -> None:
    raw = await raw_tcp(gateway[1], handshake=False)
    await raw.send(message(ThymioFB.MESSAGE_TYPE_LOCK_NODE, (1, (node_id(DEVICE),))))
    assert await raw.closed()
    await still_serving(gateway[1])


async def test_an_oversize_frame_closes_the_connection(gateway: tuple[GatewayUnderTest, int, int]) -> None:
    raw = await raw_tcp(gateway[1])
    raw.writer.write(struct.pack("<I", 102401) + b"\0" * 1024)
    assert await raw.closed()
    await still_serving(gateway[1])


async def drain(ws: Any) -> None:
    """Read until the server closes (Pings arrive every 2.5 s meanwhile)."""
    for _ in range(50):
        await asyncio.wait_for(ws.recv(), 5)


async def test_websocket_oversize_and_text_messages_close_cleanly(gateway: tuple[GatewayUnderTest, int, int]) -> None:
    url = f"ws://127.0.0.1:{gateway[2]}/"
    async with websockets.connect(url, max_size=None) as ws:
        await ws.send(HANDSHAKE)
        await ws.send(b"\0" * 102401)
        with pytest.raises(websockets.ConnectionClosed):
            await drain(ws)
    async with websockets.connect(url) as ws:
        await ws.send("a text message")
        with pytest.raises(websockets.ConnectionClosed):
            await drain(ws)


async def test_the_websocket_listener_refuses_foreign_host_names(gateway: tuple[GatewayUnderTest, int, int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", gateway[2])
    writer.write(b"GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
    status = await asyncio.wait_for(reader.readline(), 5)
    assert b" 421 " in status
    writer.close()
    await writer.wait_closed()


# -- tokens: the handshake's password ---------------------------------------------------------


async def test_with_tokens_the_handshake_password_is_the_token(tmp_path: Path) -> None:
    tcp, ws = free_port(), free_port()
    auth = '[auth]\ntokens = ["a-long-classroom-token"]\n'
    async with running_gateway(tmp_path, gateway_config(tmp_path, DEVICES, extra=auth + tdm_section(tcp, ws))):
        status = await asyncio.to_thread(programs.first_status, tcp, False, "a-long-classroom-token")
        assert status in (programs.STATUS_AVAILABLE, programs.STATUS_BUSY)
        raw = await raw_tcp(tcp, handshake=False)
        wrong = message(ThymioFB.MESSAGE_TYPE_CONNECTION_HANDSHAKE, (1, 1, 102400, None, False, 0, None, "wrong"))
        await raw.send(wrong)
        assert await raw.closed()
        raw = await raw_tcp(tcp, handshake=False)
        await raw.send(HANDSHAKE)  # no password at all
        assert await raw.closed()


async def test_pings_arrive_framed_like_every_message(gateway: tuple[GatewayUnderTest, int, int]) -> None:
    raw = await raw_tcp(gateway[1])
    while True:  # tdmclient's reader only stops after its next message: the TDM pings (pitfall P1)
        # The period (2.5 s) is test_tdm_pings.py's, on a sleep it releases; 5 s here guards a hang.
        (length,) = struct.unpack("<I", await asyncio.wait_for(raw.reader.readexactly(4), 5))
        kind, _ = parse(await raw.reader.readexactly(length))
        if kind == ThymioFB.MESSAGE_TYPE_PING:
            break
    await raw.aclose()
