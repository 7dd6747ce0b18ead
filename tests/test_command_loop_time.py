"""Random schema-valid commands to every device type never hold the event loop for more than 10 ms.

The demo's devices (one of each kind, all simulated: two `sim` controllers, an SDL virtual gamepad, a
simulated Kortex 3 arm on loopback TCP/UDP, a simulated Thymio running the gateway's program in the
Aseba VM behind loopback TCP, a simulated Wii Remote answering HID reports over a socket pair) run on
a real bus behind the real `Supervisor` and `CommandRouter`, on an event loop in a thread of their
own. Hypothesis draws a device, one of the types it accepts, data valid for that type's schema
(range ends, 1e-300 and 5e-324, the longest patterns drawn) and a deadline; each command goes
through `CommandRouter.execute` and the loop then runs 30 ms more, so the work a command leaves
behind (LED and rumble patterns, timers) is measured too.

Every callback the loop runs is timed by a wrapper around `asyncio.Handle._run` in the loop thread's
CPU time (`time.thread_time`): a command that computes too long shows up however loaded the machine
is, while another process or the Hypothesis thread taking the CPU does not count against the loop.
The garbage collector is switched off in the loop thread's way and run from the test thread between
examples, since a collection pause is not what this measures. Wall-clock latency under a hostile
command is the daemon test's subject (`test_hostile_timed_commands.py`).

Arrays are drawn up to `MAX_DRAWN_ARRAY` elements (the longest arrays make every example slow);
the longest arrays the schemas allow (4096 nested constants and node ids, 32768 words, every LED's
pattern at 256 segments) are tried as explicit examples, valid and with their last element bad:
their validation runs in steps (`gateway.messages.stepwise`), each one callback of the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from importlib import resources
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st

from devices.aseba.thymio_program import EVENT_ID
from devices.registry import KINDS as DEVICE_KINDS
from gateway.bus import Bus
from gateway.commands import MIN_COMMAND_TIMEOUT_S, CommandRouter
from gateway.config import loads
from gateway.errors import GatewayError
from gateway.messages import REGISTRY
from gateway.messages.schema import Array, Bool, Float, Int, Nested, Spec, Str, info_of
from gateway.supervisor import Supervisor

T = TypeVar("T")

#: The longest block of loop CPU time one callback may take (s).
MAX_CALLBACK_S = 0.010
#: How long the loop keeps running after each command, so patterns and timers it started are measured.
SETTLE_S = 0.03
MAX_DRAWN_ARRAY = 64
_FLOAT32_MAX = 3.4028234663852886e38
#: Names that reach deeper than random text: Thymio variables and events, a LoadScript file.
NAMES = ("motor.left.target", "timer.period", "leds.top", "gw.gesture", "script.aesl", *EVENT_ID)


class LoopMeter:
    """The longest callback since `reset`, in loop-thread CPU seconds, and what it was."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.worst_what = ""
        self._original: Callable[[asyncio.Handle], None] | None = None

    def install(self) -> None:
        original = asyncio.Handle._run
        self._original = original
        meter = self

        def timed_run(handle: asyncio.Handle) -> None:
            started = time.thread_time()
            try:
                original(handle)
            finally:
                spent = time.thread_time() - started
                if spent > meter.worst:
                    meter.worst, meter.worst_what = spent, _describe(handle)

        setattr(asyncio.Handle, "_run", timed_run)  # noqa: B010 - mypy refuses assigning to a method

    def uninstall(self) -> None:
        if self._original is not None:
            setattr(asyncio.Handle, "_run", self._original)  # noqa: B010

    def reset(self) -> None:
        self.worst, self.worst_what = 0.0, ""


def _describe(handle: asyncio.Handle) -> str:
    """The task a handle steps (its coroutine names the code), else the handle itself."""
    owner = getattr(handle._callback, "__self__", None)  # type: ignore[attr-defined]
    return repr(owner if isinstance(owner, asyncio.Task) else handle)


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


@pytest.fixture(scope="module")
def meter() -> Iterator[LoopMeter]:
    loop_meter = LoopMeter()
    loop_meter.install()
    yield loop_meter
    loop_meter.uninstall()


@pytest.fixture(scope="module")
def demo(meter: LoopMeter) -> Iterator[DemoDevices]:
    devices = DemoDevices()
    devices.start()
    gc.collect()
    gc.disable()
    try:
        yield devices
    finally:
        gc.enable()
        devices.stop()


def _edges(low: float, high: float) -> list[float]:
    candidates = (low, high, 0.0, -0.0, 5e-324, 1e-300, 1e-6, 0.0199, 0.02, 1.0, -1e-300, -1.0)
    return [value for value in candidates if low <= value <= high]


def strategy_of(spec: Spec) -> st.SearchStrategy[Any]:
    """Plain data valid for `spec`, leaning on its ends and on tiny and huge magnitudes."""
    if isinstance(spec, Int):
        if spec.choices is not None:
            return st.sampled_from(spec.choices)
        first, last = spec.bounds()
        ends = sorted({first, last, *(min(max(value, first), last) for value in (-1, 0, 1))})
        return st.one_of(st.sampled_from(ends), st.integers(first, last))
    if isinstance(spec, Float):
        largest = _FLOAT32_MAX if spec.bits == 32 else 1.7976931348623157e308
        low = -largest if spec.minimum is None else spec.minimum
        high = largest if spec.maximum is None else spec.maximum
        return st.one_of(st.sampled_from(_edges(low, high)), st.floats(low, high, allow_nan=False))
    if isinstance(spec, Bool):
        return st.booleans()
    if isinstance(spec, Str):
        return st.one_of(st.sampled_from(NAMES), st.text(max_size=min(spec.max_length, 32)))
    if isinstance(spec, Array):
        low = spec.length or 0
        high = spec.length or min(spec.max_length, MAX_DRAWN_ARRAY)
        item = strategy_of(spec.item)
        independent = st.lists(item, min_size=low, max_size=high)
        if high == 0:
            return independent
        # Also one value repeated: a pattern whose every duration is tiny is the dangerous one.
        repeated = st.builds(lambda value, count: [value] * count, item, st.integers(max(low, 1), high))
        return st.one_of(independent, repeated)
    if isinstance(spec, Nested):
        return data_of(spec.cls)
    raise TypeError(f"no strategy for {spec!r}")


def data_of(cls: type[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A dict of plain data for message class `cls`; every field may be left to its default."""
    fields = info_of(cls).fields
    return st.fixed_dictionaries({}, optional={name: strategy_of(spec) for name, spec in fields})


def commands_for(pairs: list[tuple[str, str]]) -> st.SearchStrategy[tuple[str, str, dict[str, Any], float]]:
    """A device, a type it accepts, data for it and a deadline (s)."""

    @st.composite
    def draw(draw_from: st.DrawFn) -> tuple[str, str, dict[str, Any], float]:
        device, type_name = draw_from(st.sampled_from(pairs))
        data = draw_from(data_of(REGISTRY[type_name].cls))
        timeout_s = draw_from(
            st.one_of(st.sampled_from((MIN_COMMAND_TIMEOUT_S, 0.25)), st.floats(MIN_COMMAND_TIMEOUT_S, 0.25))
        )
        return device, type_name, data, timeout_s

    return draw()


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


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", KINDS)
def test_random_valid_commands_never_block_the_loop(demo: DemoDevices, meter: LoopMeter, kind: str) -> None:
    pairs = demo.accepted(kind)
    assert pairs, f"the demo config has no {kind} device"
    outcomes: dict[str, int] = {}

    def one_command(command: tuple[str, str, dict[str, Any], float]) -> None:
        device, type_name, data, timeout_s = command
        gc.collect()
        meter.reset()
        outcome = demo.call(demo.command(device, type_name, data, timeout_s), timeout=timeout_s + 5)
        note(f"{device} {type_name} {data} timeout_s={timeout_s}: {outcome}")
        code = outcome.split(":", 1)[0]
        outcomes[code] = outcomes.get(code, 0) + 1
        assert meter.worst <= MAX_CALLBACK_S, (
            f"one callback held the loop for {meter.worst * 1000:.1f} ms of CPU: {meter.worst_what}"
        )
        assert demo.supervisor.tasks_alive()

    test = given(commands_for(pairs))(one_command)
    for hostile in HOSTILE[kind]:
        test = example(hostile)(test)
    settings(
        max_examples=40,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )(test)()
    # The commands reached the devices: not every one was refused before it got there.
    assert outcomes.get("ok", 0) > 0, outcomes
    for handle in demo.supervisor.devices.values():
        assert handle.reconnects == 0, f"{handle.id} failed under random commands: {handle.detail}"


def test_the_meter_sees_a_callback_that_computes_too_long(demo: DemoDevices, meter: LoopMeter) -> None:
    async def spin() -> None:
        until = time.thread_time() + 2 * MAX_CALLBACK_S
        while time.thread_time() < until:
            math.sqrt(2.0)

    meter.reset()
    demo.call(spin(), timeout=5)
    assert meter.worst > MAX_CALLBACK_S
    assert "spin" in meter.worst_what
