"""tdmclient 0.1.21 (unchanged) programs the TDM tests run in a thread, against the real daemon."""

from __future__ import annotations

import contextlib
import socket
import time
from typing import Any

from tdmclient import ClientAsync

STATUS_AVAILABLE, STATUS_BUSY, STATUS_READY = 2, 3, 4

BAD_PROGRAM = "var a = 1\na = no_such_variable + 2\n"
#: Uses what a real Thymio II has (leds.top as a variable, P4), a registered event both ways.
GOOD_PROGRAM = """var n = 0
leds.top = [0, 32, 0]
onevent go
    n = n + 1
    motor.left.target = event.args[0]
    emit pong [event.args[0], n]
"""
PLAYGROUND_PROGRAM = """var n = 0
var seen = 7
onevent go
    n = n + 1
    seen = event.args[0]
    emit pong [event.args[0], n]
"""


def leave(c: ClientAsync) -> None:
    """End the connection as a program's exit would: tdmclient's disconnect() only stops its reader."""
    ws = getattr(c.tdm, "ws", None)
    sock = getattr(getattr(c.tdm, "io", None), "socket", None) or getattr(ws, "sock", None)
    c.disconnect()
    if ws is not None:
        ws.close()
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()


def client(port: int, ws: bool, password: str | None = None) -> ClientAsync:
    """A tdmclient client on loopback `port` (WebSocket with `ws`)."""
    return ClientAsync(tdm_addr="127.0.0.1", tdm_port=port, tdm_ws=ws, password=password)


async def until(c: ClientAsync, condition: Any, timeout: float = 10.0) -> None:
    """Let tdmclient process messages until `condition()` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        await c.sleep(0.02)


def full_sequence(port: int, ws: bool, program: str, watched: str, expect_leds: bool) -> dict[str, Any]:
    """Connect, lock, set, compile bad and good, watch, run, events both ways, unlock; what was seen."""
    seen: dict[str, Any] = {"events": []}
    with client(port, ws) as c:

        async def main() -> None:
            node = await c.wait_for_node()
            seen["status_before"] = node.status
            await node.lock()
            await until(c, lambda: node.status == STATUS_READY)
            seen["set"] = await node.set_variables({"motor.left.target": [123]})
            seen["bad"] = await node.compile(BAD_PROGRAM)
            seen["register"] = await node.register_events([("pong", 2), ("go", 1)])
            started = time.perf_counter()
            seen["good"] = await node.compile(program)
            seen["run"] = await node.run()
            seen["compile_and_run_s"] = time.perf_counter() - started
            node.add_event_received_listener(lambda _node, name, data: seen["events"].append((name, list(data))))
            seen["watch"] = await node.watch(variables=True, events=True, vm_state=True)
            await node.wait_for_variables({watched, "motor.left.target"})
            if expect_leds:
                await until(c, lambda: list(node["leds.top"]) == [0, 32, 0])
                seen["leds.top"] = list(node["leds.top"])
            seen["send"] = await node.send_events({"go": [5]})
            await until(c, lambda: ("pong", [5, 1]) in seen["events"])
            await until(c, lambda: node[watched] == 5 if watched != "n" else node["n"] == 1)
            seen["watched"] = node[watched]
            seen["unlock"] = await node.unlock()
            await until(c, lambda: node.status == STATUS_AVAILABLE)
            seen["status_after"] = node.status

        try:
            c.run_async_program(main)
        finally:
            leave(c)
    return seen


def lock_and_leave(port: int, ws: bool) -> int:
    """Lock the node and disconnect without unlocking; the status seen while locked."""
    with client(port, ws) as c:
        status: list[int] = []

        async def main() -> None:
            node = await c.wait_for_node()
            await node.lock()
            await until(c, lambda: node.status == STATUS_READY)
            status.append(node.status)

        try:
            c.run_async_program(main)
        finally:
            leave(c)
    return status[0]


def first_status(port: int, ws: bool, password: str | None = None, want: int | None = None) -> int:
    """The node's status as a fresh client sees it (waiting for `want` when given)."""
    with client(port, ws, password) as c:
        status: list[int] = []

        async def main() -> None:
            node = await c.wait_for_node()
            if want is not None:
                await until(c, lambda: node.status == want)
            status.append(node.status)

        try:
            c.run_async_program(main)
        finally:
            leave(c)
    return status[0]


def try_lock(port: int, ws: bool) -> str:
    """Lock the node; the exception's class name when refused, else 'locked'."""
    with client(port, ws) as c:
        outcome: list[str] = []

        async def main() -> None:
            node = await c.wait_for_node()
            try:
                await node.lock()
            except Exception as error:
                outcome.append(type(error).__name__)
            else:
                outcome.append("locked")
                await node.unlock()

        try:
            c.run_async_program(main)
        finally:
            leave(c)
    return outcome[0]
