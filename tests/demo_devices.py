"""The demo config's devices (one of each kind, all simulated) behind a real supervisor and router, in-process.

`DemoDevices` runs them on an event loop in a thread of its own, so a caller can time or watch that
loop from outside; `HOSTILE` holds the issue's hostile commands and their siblings on every device
kind. `tests/test_command_loop_time.py` sends them (and random ones) and checks the answers;
`bench/command_callbacks.py` measures what each costs the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from importlib import resources
from typing import Any, TypeVar

from devices.registry import KINDS as DEVICE_KINDS
from gateway.bus import Bus
from gateway.commands import MIN_COMMAND_TIMEOUT_S, CommandRouter
from gateway.config import loads
from gateway.errors import GatewayError
from gateway.supervisor import Supervisor

T = TypeVar("T")

#: How long the loop keeps running after each command, so patterns and timers it started run too (s).
SETTLE_S = 0.03


class DemoDevices:
    """The demo config's devices under a supervisor and a router, on a loop in a thread of its own."""

    def __init__(self) -> None:
        text = resources.files("gateway").joinpath("demo.toml").read_text(encoding="utf-8")
        self.config = loads(text)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="demo-devices", daemon=True)
        self.bus = Bus()
        self.supervisor = Supervisor(self.bus, self.config.supervisor, self.config.devices, DEVICE_KINDS)
        self.router = CommandRouter(self.supervisor, lambda device, outcome, seconds: None)

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run `coroutine` on the devices' loop and wait for it (a blocked loop fails the wait)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def start(self) -> None:
        self.thread.start()
        self.call(self._start(), timeout=30)

    async def _start(self) -> None:
        self.supervisor.start()
        async with asyncio.timeout(25):
            while True:
                if all(handle.status == "connected" for handle in self.supervisor.devices.values()):
                    return
                await asyncio.sleep(0.05)

    def stop(self) -> None:
        with contextlib.suppress(TimeoutError):
            self.call(self.supervisor.stop(), timeout=15)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        if not self.thread.is_alive():
            self.loop.close()

    def accepted(self, kind: str) -> list[tuple[str, str]]:
        """(device id, command type) for every type each device of `kind` accepts."""
        return [
            (handle.id, type_name)
            for handle in self.supervisor.devices.values()
            if handle.kind == kind
            for type_name in handle.adapter.accepts
        ]

    async def command(self, device: str, type_name: str, data: dict[str, Any], timeout_s: float) -> str:
        """Send one command through the router, let the loop run `SETTLE_S` more; return the outcome."""
        try:
            await self.router.execute(device, type_name, data, "property-client", timeout_s)
            outcome = "ok"
        except GatewayError as error:
            outcome = f"{error.code.value}: {error}"
        await asyncio.sleep(SETTLE_S)
        return outcome


KINDS = ("wiimote", "aseba", "gamepad", "kortex", "sim")
_FOREVER_TINY = {"switch_mode": -1, "num_cycles": -1, "pulse_pattern": [1e-300]}
_MANY_SHORT = {"switch_mode": -1, "num_cycles": 2**31 - 1, "pulse_pattern": [1e-6, 1e-6]}
#: The longest arrays SetVariable and LoadScript take (words of every magnitude; 4096 constants, node ids).
_WORDS = [i % 65536 - 32768 for i in range(32768)]
_LOAD_SCRIPT = {
    "file_name": "script.aesl",
    "constants": [{"name": f"c{i}", "value": i - 2048} for i in range(4096)],
    "node_ids": list(range(4096)),
}
#: The issue's hostile commands and their siblings on the other devices, tried before the random ones.
HOSTILE: dict[str, list[tuple[str, str, dict[str, Any], float]]] = {
    "wiimote": [
        (
            "wiimote-demo",
            "hwgateway/WiimoteLeds",
            {"leds": [{**_FOREVER_TINY, "pulse_pattern": [3600.0] * 256}] * 4},
            1,
        ),
        ("wiimote-demo", "wiimote/TimedSwitch", _FOREVER_TINY, 0.25),
        ("wiimote-demo", "hwgateway/WiimoteLeds", {"leds": [_MANY_SHORT] * 4}, 0.25),
        ("wiimote-demo", "hwgateway/WiimoteLeds", {"leds": [{**_FOREVER_TINY, "pulse_pattern": [5e-324] * 64}] * 4}, 1),
        ("wiimote-demo", "rumble", {"duration_s": 1e-300}, 0.25),
        ("wiimote-demo", "hwgateway/WiimoteLeds", {"leds": [{**_FOREVER_TINY, "pulse_pattern": [0.02] * 256}] * 4}, 1),
    ],
    "aseba": [
        ("thymio-demo", "asebaros_msgs/SetVariable", {"variable": "motor.left.target", "data": _WORDS}, 0.25),
        ("thymio-demo", "asebaros_msgs/SetVariable", {"variable": "v", "data": [*_WORDS[:-1], 40000]}, 0.25),
        ("thymio-demo", "asebaros_msgs/LoadScript", _LOAD_SCRIPT, 0.25),
        ("thymio-demo", "asebaros_msgs/LoadScript", {**_LOAD_SCRIPT, "node_ids": [*range(4095), -1]}, 0.25),
        ("thymio-demo", "thymio_msgs/LedGesture", {"gesture": 1, "period": 1e-300, "length": 65535}, 0.25),
        ("thymio-demo", "thymio_msgs/Sound", {"duration": {"sec": -(2**31)}, "frequency": 3.4e38}, 0.25),
        ("thymio-demo", "sound", {"frequency_hz": 20000.0, "duration_s": 5e-324}, 0.25),
        ("thymio-demo", "asebaros_msgs/SetVariable", {"variable": "timer.period", "data": [1, 1]}, 0.25),
    ],
    "gamepad": [
        ("gamepad-demo", "rumble", {"duration_s": 1e-300}, MIN_COMMAND_TIMEOUT_S),
        ("gamepad-demo", "hwgateway/GamepadTriggerRumble", {"duration_s": 60.0}, MIN_COMMAND_TIMEOUT_S),
    ],
    "kortex": [("arm-demo", "kortex/WristCyclicC61/Command", {"led_ring_blink_frequency": 2**32 - 1}, 0.25)],
    "sim": [("sim-pad", "rumble", {"duration_s": 5e-324}, 0.25), ("sim-lamp", "sound", {"duration_s": 60.0}, 0.25)],
}
