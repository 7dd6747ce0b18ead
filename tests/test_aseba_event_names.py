"""Event names the bus could not carry as they are (`émoi`, 300 characters) on the real Aseba VM.

Any `str.isalpha()` letter is legal in an Aseba name, and names have no length limit, so a program
may declare events whose names are no legal topic segment. Loaded through `hwgateway/AsebaCompile`
and through the TDM face (tdmclient 0.1.21, unchanged) on Debian's asebaplayground, the program
runs, its events arrive (on the escaped topic; by their own names over the TDM) and the device
never fails or reconnects.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from devices.sim.aseba_playground import Playground
from gateway.topics import name_segment
from tests import tdm_programs
from tests.conftest import require_peer
from tests.harness import Client, GatewayUnderTest, connect, free_port, gateway_config, healthz
from tests.inprocess import start_in_process

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(120)]

#: Generous: the playground answers on its simulation tick, and CI machines are loaded.
REPLY_TIMEOUT_S = 10.0
DEVICE = "thymio"
FRENCH = "émoi"
LONG = "évènement_" + "x" * 290
#: Each `émoi` the program receives adds its argument to `n` and emits both events back.
PROGRAM = f"""var n = 0
onevent {FRENCH}
    n = n + event.args[0]
    emit {LONG} [n, 7]
    emit {FRENCH} [n]
"""
EVENTS = [{"name": FRENCH, "size": 1}, {"name": LONG, "size": 2}]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def playground(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Playground]:
    require_peer("asebaplayground")
    running = Playground(tmp_path_factory.mktemp("playground"), [free_port()])
    await running.start()
    yield running
    await running.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tdm_port(playground: Playground) -> int:
    return free_port()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(
    playground: Playground, tdm_port: int, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[GatewayUnderTest]:
    devices = f"""
[devices.{DEVICE}]
kind = "aseba"
target = "tcp:127.0.0.1;{playground.robots[0].port}"
request_timeout_ms = 5000
"""
    tdm = f"[tdm]\nenabled = true\ntcp_port = {tdm_port}\nws_port = {free_port()}\n"
    tmp_path = tmp_path_factory.mktemp("gateway")
    running = await start_in_process(tmp_path, gateway_config(tmp_path, devices, extra=tdm))
    yield running
    assert await running.stop() == 0
    assert playground.process is not None
    assert playground.process.returncode is None, playground.log()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(gateway: GatewayUnderTest) -> AsyncIterator[Client]:
    ws = await connect(gateway, "ws")
    await ws.until_connected([DEVICE], timeout=30)
    yield ws
    await ws.close()


async def command(client: Client, type_: str, data: dict[str, Any]) -> dict[str, Any]:
    answer = await client.request(
        "command", timeout=REPLY_TIMEOUT_S, device=DEVICE, type=type_, data=data, timeout_s=REPLY_TIMEOUT_S
    )
    assert answer["ok"], answer
    result: dict[str, Any] = answer["data"]
    return result


async def never_failed(gateway: GatewayUnderTest) -> None:
    """The device is connected and was never restarted; no log line says it failed."""
    [device] = [d for d in (await healthz(gateway))["devices"] if d["id"] == DEVICE]
    assert (device["status"], device["reconnects"]) == ("connected", 0), device
    failures = [line for line in gateway.logs if str(line.get("event", "")).startswith(f"device {DEVICE} failed")]
    assert failures == [], failures


async def test_hwgateway_compile_carries_every_legal_event_name(gateway: GatewayUnderTest, client: Client) -> None:
    await client.ok("subscribe", topics=[f"{DEVICE}/node/*/events/**"])
    compiled = await command(client, "hwgateway/AsebaCompile", {"source": PROGRAM, "events": EVENTS, "load": True})
    assert compiled["ok"], compiled
    await command(client, "hwgateway/AsebaVMControl", {"command": "run"})
    await command(client, "hwgateway/AsebaEvent", {"name": FRENCH, "data": [3]})
    node = f"{DEVICE}/node/1/events/"
    french = await client.wait_for(
        lambda m: m["op"] == "state" and m["topic"] == node + "-e9-moi", timeout=REPLY_TIMEOUT_S
    )
    assert french["data"]["data"] == [3]  # the VM ran the handler: n = 0 + 3
    long = await client.wait_for(
        lambda m: m["op"] == "state" and m["topic"] == node + name_segment(LONG), timeout=REPLY_TIMEOUT_S
    )
    assert long["data"]["data"] == [3, 7]
    [listed] = (await client.ok("list_devices"))["devices"]
    layouts = listed["capabilities"]["events"]["1"]
    assert [(e["name"], e["topic"]) for e in layouts] == [(FRENCH, "-e9-moi"), (LONG, name_segment(LONG))]
    assert (await command(client, "asebaros_msgs/GetVariable", {"variable": "n"}))["data"] == [3]
    await never_failed(gateway)


async def test_tdm_clients_see_the_names_themselves(gateway: GatewayUnderTest, client: Client, tdm_port: int) -> None:
    seen = await asyncio.to_thread(_tdmclient_round_trip, tdm_port)
    assert seen["good"] is None, seen  # compiled and loaded
    assert (FRENCH, [4]) in seen["events"]
    assert (LONG, [4, 7]) in seen["events"]
    assert seen["n"] == 4
    await never_failed(gateway)


async def test_an_empty_event_name_is_refused_at_compile_time(gateway: GatewayUnderTest, client: Client) -> None:
    events = [{"name": "", "size": 1}]
    refused = await command(client, "hwgateway/AsebaCompile", {"source": "var a = 1\n", "events": events})
    assert not refused["ok"]
    assert "empty name" in refused["message"]
    await never_failed(gateway)


def _tdmclient_round_trip(port: int) -> dict[str, Any]:
    """Lock, register both events, compile, run, send `émoi`: the events and `n` the client sees."""
    seen: dict[str, Any] = {"events": []}
    with tdm_programs.client(port, ws=False) as c:

        async def main() -> None:
            node = await c.wait_for_node()
            await node.lock()
            await node.register_events([(FRENCH, 1), (LONG, 2)])
            seen["good"] = await node.compile(PROGRAM)
            node.add_event_received_listener(lambda _node, name, data: seen["events"].append((name, list(data))))
            await node.watch(variables=True, events=True)
            await node.run()
            await node.send_events({FRENCH: [4]})
            await tdm_programs.until(c, lambda: (LONG, [4, 7]) in seen["events"], REPLY_TIMEOUT_S)
            await tdm_programs.until(c, lambda: (FRENCH, [4]) in seen["events"], REPLY_TIMEOUT_S)
            await node.wait_for_variables({"n"})
            await tdm_programs.until(c, lambda: node["n"] == 4, REPLY_TIMEOUT_S)
            seen["n"] = node["n"]
            await node.unlock()

        try:
            c.run_async_program(main)
        finally:
            tdm_programs.leave(c)
    return seen
