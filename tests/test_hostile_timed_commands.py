"""The real demo daemon against hostile timed commands: each refused by name, other clients unaffected.

Issue 12's command (`wiimote/TimedSwitch` REPEAT FOREVER of 1e-300 s) used to spin the event loop
for good; its clumsy variant (4 LEDs × REPEAT [1e-6, 1e-6] × 2³¹−1) for 72 minutes. Here one client
sends them and their siblings on the other devices while a second client, on another transport,
pings throughout: every hostile command is answered `invalid_argument` naming its limit, every ping
is answered, `/healthz` names no fault but, at most, the loop lag (a loaded test machine lags too:
wall clock, whose budget is the bench's) and the daemon
still stops cleanly on SIGTERM. The busiest patterns the limits allow (every LED and the rumble
toggling each 20 ms) run meanwhile and are seen on the state stream. How fast the pings are, busy
against idle, is `bench/timed_patterns.py`'s measure.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.harness import Client, RunningGateway, connect, free_port, health_faults, start_demo

FOREVER_TINY = {"switch_mode": -1, "num_cycles": -1, "pulse_pattern": [1e-300]}
MANY_SHORT = {"switch_mode": -1, "num_cycles": 2**31 - 1, "pulse_pattern": [1e-6, 1e-6]}
#: (device, type, data, extra request fields, text the error message must contain).
HOSTILE: list[tuple[str, str, dict[str, Any], dict[str, Any], str]] = [
    ("wiimote-demo", "wiimote/TimedSwitch", FOREVER_TINY, {}, "below the minimum duration 0.02 s"),
    ("wiimote-demo", "hwgateway/WiimoteLeds", {"leds": [MANY_SHORT] * 4}, {}, "data.leds[0].pulse_pattern[0]"),
    ("wiimote-demo", "rumble", {"duration_s": 1e-300}, {}, "below the minimum rumble of 0.02 s"),
    ("wiimote-demo", "wiimote/TimedSwitch", {**FOREVER_TINY, "pulse_pattern": [1] * 257}, {}, "more than 256"),
    ("thymio-demo", "thymio_msgs/LedGesture", {"gesture": 1, "period": 1e-300}, {}, "outside [0.02, 32.767] s"),
    ("thymio-demo", "thymio_msgs/Sound", {"duration": {"sec": 2**31 - 1}, "frequency": 440}, {}, "data.duration"),
    ("gamepad-demo", "rumble", {"duration_s": 1e-300}, {}, "below the minimum rumble of 1 ms"),
    ("sim-pad", "led", {}, {"timeout_s": 1e-300}, "command.timeout_s"),
]
#: The busiest patterns the limits allow: accepted, and they keep running while the pings go on.
BUSIEST_LEDS = {"leds": [{"switch_mode": -1, "num_cycles": -1, "pulse_pattern": [0.02, 0.02]}] * 4}
BUSIEST_RUMBLE = {"switch_mode": -1, "num_cycles": 2**31 - 1, "pulse_pattern": [0.02, 0.02]}


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[RunningGateway]:
    running = await start_demo(tmp_path, free_port(), free_port())
    yield running
    assert await running.stop() == 0


async def _ping_until(client: Client, stop: asyncio.Event) -> int:
    """Pings sent every 10 ms until `stop`, each answered (the harness's timeout guards a hang); how many."""
    count = 0
    while not stop.is_set():
        assert (await client.ok("ping"))["pong"] is True
        count += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.01)
    return count


async def test_hostile_timed_commands_are_refused_while_pings_are_answered(demo: RunningGateway) -> None:
    hostile = await connect(demo, "ws")
    pinger = await connect(demo, "tcp")
    devices = {device for device, *_ in HOSTILE}
    async with asyncio.timeout(20):
        listed = {d["id"]: d for d in (await hostile.ok("list_devices"))["devices"]}
        while any(listed[d]["status"] != "connected" for d in devices):
            await asyncio.sleep(0.1)
            listed = {d["id"]: d for d in (await hostile.ok("list_devices"))["devices"]}
    stop = asyncio.Event()
    pings = asyncio.create_task(_ping_until(pinger, stop))
    try:
        for device, type_name, data, extra, expected in HOSTILE:
            error = await hostile.error("command", device=device, type=type_name, data=data, **extra)
            assert error["code"] == "invalid_argument", (type_name, error)
            assert expected in error["message"], (type_name, error)
        await hostile.ok("subscribe", topics=["wiimote-demo/state"])
        await hostile.ok("command", device="wiimote-demo", type="hwgateway/WiimoteLeds", data=BUSIEST_LEDS)
        await hostile.ok("command", device="wiimote-demo", type="wiimote/TimedSwitch", data=BUSIEST_RUMBLE)
        seen: set[tuple[tuple[bool, ...], bool]] = set()
        async with asyncio.timeout(5):
            while len(seen) < 2:
                state = await hostile.wait_for(lambda m: m["op"] == "state" and m["topic"] == "wiimote-demo/state")
                seen.add((tuple(state["data"]["LEDs"]), state["data"]["rumble"]))
        await asyncio.sleep(1.0)  # the patterns keep toggling while the pings go on
        async with aiohttp.ClientSession() as http:
            health = await (await http.get(f"{demo.base_url}/healthz")).json()
            assert health_faults(health) == [], health
    finally:
        stop.set()
        answered = await pings
    assert answered > 0  # pings went on throughout (each one answered)
    await hostile.close()
    await pinger.close()
