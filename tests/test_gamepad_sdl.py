"""The gamepad adapter in-process against real SDL: virtual pads attached, moved, unplugged, rumbled.

No mocks: the adapter runs its real SDL thread (PySDL2 + pysdl2-dll), and each test attaches SDL
virtual joysticks through the same thread, sets their inputs, and reads what their output
callbacks received. The adapter publishes on a real `Bus` through a real `DeviceContext`.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from devices.gamepad import sdl_backend
from devices.gamepad.adapter import GamepadAdapter, GamepadOptions, PadLost
from devices.gamepad.mappings import MappingFileError
from devices.gamepad.model import VirtualSpec
from devices.gamepad.sdl_backend import SdlBackend
from devices.gamepad.sdl_virtual import VirtualPad
from gateway.bus import Bus
from gateway.core.adapter import Command, DeviceContext
from gateway.errors import DeviceUnavailable, InvalidArgument, UnknownCommand
from gateway.messages.creos import ControllerState
from gateway.messages.gamepad import GamepadInfo, GamepadPlayerIndex, GamepadTriggerRumble, GamepadVirtualOutputs
from gateway.messages.generic import Led, Rumble

TIMEOUT_S = 10.0
SDL_HAT_RIGHT = 0x02
REST = (0.0,) * 6, (0,) * 17


class RecordingBus(Bus):
    """A real bus that also keeps every publish with its monotonic time."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[str, Any, float]] = []

    def publish(self, topic: str, message: Any, stamp: float | None = None) -> Any:
        self.log.append((topic, message, time.monotonic()))
        return super().publish(topic, message, stamp)


class Device:
    """One gamepad device run the way the supervisor runs it: `run` in a task, status recorded."""

    def __init__(self, options: GamepadOptions, device_id: str = "pad") -> None:
        self.bus = RecordingBus()
        self.statuses: list[tuple[str, str]] = [("connecting", "")]
        self.ctx = DeviceContext(device_id, self.bus, lambda status, detail: self.statuses.append((status, detail)))
        self.adapter = GamepadAdapter(self.ctx, options)
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.statuses.append(("connecting", ""))  # what the supervisor reports before each run
        self.task = asyncio.create_task(self.adapter.run())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task

    @property
    def status(self) -> tuple[str, str]:
        return self.statuses[-1]

    def state(self) -> ControllerState | None:
        sample = self.bus.latest("pad/state")
        return None if sample is None else sample.message

    def values(self) -> tuple[tuple[float, ...], tuple[int, ...]] | None:
        state = self.state()
        return None if state is None else (state.axes, state.buttons)

    def axes(self) -> tuple[float, ...] | None:
        values = self.values()
        return None if values is None else values[0]

    def buttons(self) -> tuple[int, ...] | None:
        values = self.values()
        return None if values is None else values[1]

    def shows(self, want: tuple[tuple[float, ...], tuple[int, ...]]) -> Callable[[], bool]:
        return lambda: self.values() == want

    def info(self) -> GamepadInfo:
        sample = self.bus.latest("pad/info")
        assert sample is not None
        info: GamepadInfo = sample.message
        return info

    def states(self) -> list[tuple[ControllerState, float]]:
        return [(message, at) for topic, message, at in self.bus.log if topic == "pad/state"]

    async def command(self, type_name: str, message: Any, client: str = "c1") -> Any:
        return await self.adapter.handle_command(Command(type_name, message, client, time.monotonic() + 5.0))


async def until(predicate: Callable[[], object], what: str, timeout: float = TIMEOUT_S) -> None:
    """Poll `predicate` until it holds; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


@pytest.fixture
async def sdl() -> AsyncIterator[SdlBackend]:
    backend = sdl_backend.acquire()
    await backend.ready()
    yield backend
    await sdl_backend.release(backend)


@pytest.fixture
async def devices(sdl: SdlBackend) -> AsyncIterator[Callable[..., Device]]:
    """Start devices; every one is stopped before SDL is released."""
    started: list[Device] = []

    def start(device_id: str = "pad", **options: Any) -> Device:
        device = Device(GamepadOptions(**options), device_id)
        device.start()
        started.append(device)
        return device

    yield start
    for device in started:
        await device.stop()


class Outputs:
    """Output callbacks of a test's virtual pad, each with the monotonic time it arrived."""

    def __init__(self) -> None:
        self.seen: list[tuple[GamepadVirtualOutputs, float]] = []

    def __call__(self, outputs: GamepadVirtualOutputs) -> None:  # on the SDL thread
        self.seen.append((outputs, time.monotonic()))


async def attach(sdl: SdlBackend, name: str, **spec: Any) -> VirtualPad:
    return await sdl.attach_virtual(VirtualSpec(name, **spec))


async def connected(device: Device) -> None:
    await until(lambda: device.status[0] == "connected" and device.values() is not None, "the pad to connect")


async def test_hot_plug_add_remove_and_reattach_of_the_same_pad(sdl: SdlBackend, devices) -> None:
    device = devices(name_contains="hotplug pad")
    await until(lambda: device.status[1] == "waiting for a pad with name containing 'hotplug pad'", "waiting")
    pad = await attach(sdl, "Hotplug Pad")
    await connected(device)
    info = device.info()
    assert (info.attached, info.name, info.virtual, info.type) == (True, "Hotplug Pad", True, "ps4")
    assert (info.vendor_id, info.product_id) == (0x054C, 0x09CC)
    assert re.fullmatch("ff00[0-9a-f]{28}", info.guid)
    assert info.key == info.guid  # a virtual pad has neither serial nor path
    assert device.values() == REST
    capabilities = device.adapter.capabilities()
    assert capabilities["attached"] is True
    assert capabilities["key"] == info.key
    assert {k: capabilities[k] for k in ("rumble", "trigger_rumble", "led", "player_index")} == dict.fromkeys(
        ("rumble", "trigger_rumble", "led", "player_index"), True
    )

    await sdl.detach_virtual(pad)
    assert device.task is not None
    with pytest.raises(PadLost, match=rf"pad 'Hotplug Pad' \({info.key}\) detached"):
        await asyncio.wait_for(device.task, TIMEOUT_S)
    assert device.info() == GamepadInfo(attached=False)
    assert device.adapter.capabilities()["attached"] is False

    device.start()  # the supervisor's restart
    await until(lambda: device.status[1].startswith("waiting for a pad"), "waiting again")
    await attach(sdl, "Hotplug Pad")
    await connected(device)
    assert device.info().key == info.key  # the same pad comes back under the same identity


async def test_each_pad_is_bound_once_and_guid_selects(sdl: SdlBackend, devices) -> None:
    await attach(sdl, "Pad One")
    await attach(sdl, "Pad Two")
    first = devices("pad")
    await connected(first)
    assert first.info().name == "Pad One"  # the first free pad in SDL's order
    taken = devices("pad", guid=first.info().guid)
    await until(lambda: taken.status[1].startswith("waiting for a pad with GUID"), "the taken pad to be refused")
    # A GUID with a zero name CRC, as in GameControllerDB lines, matches either pad: the free one is bound.
    any_name = first.info().guid[:4] + "0000" + first.info().guid[8:]
    second = devices("pad", guid=any_name)
    await connected(second)
    assert second.info().name == "Pad Two"
    assert taken.status[0] == "connecting"


AXIS_CASES = [
    # (joystick axis, raw value, index in the seed's axes, normalized value)
    (0, 16384, 0, 16384 / 32767),
    (0, -32768, 0, -1.0),
    (0, 32767, 0, 1.0),
    (1, -32768, 1, 1.0),  # up is positive
    (1, 16384, 1, -16384 / 32767),
    (2, -8192, 2, -8192 / 32767),
    (2, 32767, 2, 1.0),
    (3, 32767, 3, -1.0),
    (3, -16384, 3, 16384 / 32767),
    # The virtual pad's trigger axes are full range (-32768 at rest); SDL scales them to 0..32767.
    (4, 32767, 4, 1.0),
    (4, 0, 4, 16383 / 32767),
    (5, 32767, 5, 1.0),
    (5, -16384, 5, 8191 / 32767),
]


async def test_every_axis_has_its_exact_normalized_value(sdl: SdlBackend, devices) -> None:
    pad = await attach(sdl, "Axis Pad")
    device = devices(dead_zone=0.0, long_press_s=60.0)
    await connected(device)
    for axis, value, index, expected in AXIS_CASES:
        await sdl.set_virtual(pad, axes={axis: value})
        axes = tuple(expected if i == index else 0.0 for i in range(6))
        # A trigger at 0.5 or more also presses L2 (seed button 6) or R2 (7).
        pressed = {4: 6, 5: 7}.get(index) if expected >= 0.5 else None
        want = axes, tuple(1 if i == pressed else 0 for i in range(17))
        await until(device.shows(want), f"axis {axis} at {value} as {want}")
        await sdl.set_virtual(pad, axes={axis: -32768 if axis >= 4 else 0})
        await until(lambda: device.values() == REST, f"axis {axis} back at rest")


SDL_BUTTON_TO_SEED = {
    0: 0,
    1: 1,
    2: 3,
    3: 2,
    4: 8,
    5: 10,
    6: 9,
    7: 11,
    8: 12,
    9: 4,
    10: 5,
    11: 14,
    12: 16,
    13: 13,
    14: 15,
}


async def test_every_button_lands_in_its_seed_position(sdl: SdlBackend, devices) -> None:
    pad = await attach(sdl, "Button Pad")
    device = devices(long_press_s=60.0)
    await connected(device)
    for sdl_button, seed_index in SDL_BUTTON_TO_SEED.items():
        await sdl.set_virtual(pad, buttons={sdl_button: True})
        want: tuple[tuple[float, ...], tuple[int, ...]] = (
            (0.0,) * 6,
            tuple(1 if i == seed_index else 0 for i in range(17)),
        )
        await until(device.shows(want), f"SDL button {sdl_button} as seed button {seed_index}")
        await sdl.set_virtual(pad, buttons={sdl_button: False})
        await until(lambda: device.values() == REST, f"SDL button {sdl_button} released")
    for axis, seed_index in ((4, 6), (5, 7)):  # L2 and R2 come from the triggers
        await sdl.set_virtual(pad, axes={axis: 32767})
        want = tuple(1.0 if i == axis else 0.0 for i in range(6)), tuple(1 if i == seed_index else 0 for i in range(17))
        await until(device.shows(want), f"trigger {axis} as seed button {seed_index}")
        await sdl.set_virtual(pad, axes={axis: -32768})
        await until(lambda: device.values() == REST, f"trigger {axis} released")


async def test_dead_zone(sdl: SdlBackend, devices) -> None:
    pad = await attach(sdl, "Dead Zone Pad")
    device = devices(dead_zone=0.25)
    await connected(device)
    await sdl.set_virtual(pad, axes={0: 8000, 1: -8000, 2: -8191, 3: 8191})  # each about 0.244 of full scale
    await sdl.set_virtual(pad, buttons={0: True})  # a change after the axes, so a state is published
    await until(lambda: (device.buttons() or (0,))[0] == 1, "button")
    assert device.axes() == (0.0,) * 6
    await sdl.set_virtual(pad, axes={0: 16384, 1: 32767})
    expected = ((16384 / 32767 - 0.25) / 0.75, -1.0, 0.0, 0.0, 0.0, 0.0)
    await until(lambda: device.axes() == expected, "scaled beyond the dead zone")


RAW_MAPPING = (
    "ff000000341200007856000000007600,Raw Test Pad,"  # zero name CRC: any name with this bus/vid/pid/version
    "a:b1,b:b2,x:b0,y:b3,back:b8,guide:b12,start:b9,leftstick:b10,rightstick:b11,"
    "leftshoulder:b4,rightshoulder:b5,dpup:h0.1,dpdown:h0.4,dpleft:h0.8,dpright:h0.2,"
    "leftx:a0,lefty:a1,rightx:a2,righty:a5,lefttrigger:a3,righttrigger:a4,platform:Linux,"
)


async def test_a_mapping_file_turns_an_unmapped_joystick_into_a_pad(sdl: SdlBackend, devices, tmp_path: Path) -> None:
    pad = await attach(sdl, "Raw Test Pad", layout="raw")
    unmapped = devices(name_contains="raw test pad")
    await until(lambda: "without a game controller mapping: Raw Test Pad (GUID ff00" in unmapped.status[1], "unmapped")
    await unmapped.stop()

    mappings = tmp_path / "mine.txt"
    mappings.write_text(f"# a user mapping file\n{RAW_MAPPING}\n")
    device = devices(name_contains="raw test pad", mapping_files=(str(mappings),), dead_zone=0.0)
    await connected(device)
    assert device.info().guid.endswith("341200007856000000007600")
    await sdl.set_virtual(pad, buttons={1: True, 0: True}, hats={0: SDL_HAT_RIGHT})
    await sdl.set_virtual(pad, axes={5: 32767, 3: 32767, 4: -32768})
    buttons = [0] * 17
    buttons[0] = buttons[3] = 1  # joystick button 1 is ✕ (a:b1), button 0 is □ (x:b0)
    buttons[15] = 1  # the hat's right is the D-pad's right
    buttons[6] = 1  # L2 from the left trigger (lefttrigger:a3)
    want = (0.0, 0.0, 0.0, -1.0, 1.0, 0.0), tuple(buttons)  # righty:a5 at +32767 is down
    await until(lambda: device.values() == want, "the mapped values")


async def test_bad_mapping_files_fail_the_device_with_file_and_line(sdl: SdlBackend, tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text(f"{RAW_MAPPING}\nthis is not a mapping\n")
    for path, message in ((bad, r"bad\.txt:2: not a mapping"), (tmp_path / "none.txt", "cannot read mapping file")):
        device = Device(GamepadOptions(mapping_files=(str(path),)))
        with pytest.raises(MappingFileError, match=message):
            await asyncio.wait_for(device.adapter.run(), TIMEOUT_S)


async def test_long_press_after_the_configured_time(sdl: SdlBackend, devices) -> None:
    pad = await attach(sdl, "Long Press Pad")
    device = devices(long_press_s=0.3, rate_hz=0.0)
    await connected(device)
    await sdl.set_virtual(pad, buttons={0: True})
    await until(lambda: (device.buttons() or (0,))[0] == 2, "a long press")
    states = device.states()
    pressed = next(state for state, _ in states if state.buttons[0] == 1)
    long_press = next(state for state, _ in states if state.buttons[0] == 2)
    held = long_press.timestamp.to_seconds() - pressed.timestamp.to_seconds()
    # Never before its time (a late timer is the machine's, not a fault: no upper bound here; the
    # tracker's own timing is test_gamepad_normalize's, on an injected clock).
    assert held >= 0.29
    await sdl.set_virtual(pad, buttons={0: False})
    await until(lambda: device.values() == REST, "released")


async def test_outputs_reach_the_virtual_device_and_rumble_stops_by_itself(sdl: SdlBackend, devices) -> None:
    outputs = Outputs()
    pad = await sdl.attach_virtual(VirtualSpec("Output Pad"), outputs)
    device = devices()
    await connected(device)

    sent = time.monotonic()
    result = await device.command("rumble", Rumble(low=0.5, high=1.0, duration_s=0.25))
    assert result == {"low": 32768, "high": 65535, "duration_ms": 250}
    await until(lambda: ("Rumble", (0, 0)) in pad.calls, "the rumble to stop by itself")
    started = next(at for out, at in outputs.seen if out.last_call == "Rumble" and out.rumble_high == 65535)
    stopped = next(at for out, at in outputs.seen if out.last_call == "Rumble" and out.rumble_high == 0)
    assert stopped >= started >= sent  # on, then off by itself: SDL ends it when the 250 ms are up

    result = await device.command("hwgateway/GamepadTriggerRumble", GamepadTriggerRumble(0.25, 0.75, 0.2))
    assert result == {"left": 16384, "right": 49151, "duration_ms": 200}
    await until(lambda: ("RumbleTriggers", (0, 0)) in pad.calls, "the trigger rumble to stop by itself")

    assert await device.command("led", Led(index=-1, rgb=(1.0, 0.5, 0.0))) == {"rgb": [255, 128, 0]}
    assert await device.command("hwgateway/GamepadPlayerIndex", GamepadPlayerIndex(3)) == {"index": 3}
    await until(lambda: ("SetPlayerIndex", (3,)) in pad.calls, "the player index")
    calls = [call for call in pad.calls if call[0] != "SetPlayerIndex" or call[1] == (3,)]
    assert calls == [
        ("Rumble", (32768, 65535)),
        ("Rumble", (0, 0)),
        ("RumbleTriggers", (16384, 49151)),
        ("RumbleTriggers", (0, 0)),
        ("SetLED", (255, 128, 0)),
        ("SetPlayerIndex", (3,)),
    ]
    with pytest.raises(InvalidArgument, match=r"^data\.index: 2 is not an LED of this pad"):
        await device.command("led", Led(index=2, rgb=(1.0, 1.0, 1.0)))


async def test_unsupported_outputs_answer_a_clear_error(sdl: SdlBackend, devices) -> None:
    await attach(sdl, "Plain Pad", features=frozenset({"rumble"}))
    device = devices()
    await connected(device)
    capabilities = device.adapter.capabilities()
    assert (capabilities["rumble"], capabilities["trigger_rumble"], capabilities["led"]) == (True, False, False)
    with pytest.raises(UnknownCommand) as led:
        await device.command("led", Led(rgb=(1.0, 0.0, 0.0)))
    assert led.value.message == "pad 'Plain Pad' of device 'pad' has no LED; it has: rumble, a player index"
    with pytest.raises(UnknownCommand, match="has no trigger rumble; it has: rumble, a player index"):
        await device.command("hwgateway/GamepadTriggerRumble", GamepadTriggerRumble())


async def test_rumble_is_leased_to_its_client_and_estop_and_shutdown_stop_it(sdl: SdlBackend, devices) -> None:
    pad = await attach(sdl, "Lease Pad")
    device = devices()
    await connected(device)
    await device.command("rumble", Rumble(duration_s=30.0), client="c1")
    device.adapter.release("c2")
    device.adapter.release("c1")
    await until(lambda: ("Rumble", (0, 0)) in pad.calls, "the departed client's rumble to stop")
    assert pad.calls.count(("Rumble", (0, 0))) == 1  # another client leaving stopped nothing

    await device.command("hwgateway/GamepadTriggerRumble", GamepadTriggerRumble(duration_s=30.0))
    await device.adapter.estop()
    await until(lambda: ("RumbleTriggers", (0, 0)) in pad.calls, "e-stop to stop the trigger motors")

    await device.command("rumble", Rumble(duration_s=30.0))
    await device.stop()  # the gateway stopping: the pad is let go with its motors off
    await until(lambda: pad.calls.count(("Rumble", (0, 0))) == 2, "shutdown to stop the rumble")


async def test_one_kind_of_rumble_ending_leaves_the_other_running(sdl: SdlBackend, devices) -> None:
    pad = await attach(sdl, "Two Motor Pad")
    device = devices()
    await connected(device)
    await device.command("rumble", Rumble(duration_s=30.0), client="c1")
    await device.command("hwgateway/GamepadTriggerRumble", GamepadTriggerRumble(duration_s=30.0), client="c2")
    device.adapter.release("c1")
    await until(lambda: ("Rumble", (0, 0)) in pad.calls, "c1's rumble to stop")
    device.adapter.leases.expire(now=float("inf"))  # c2's trigger rumble runs out
    await until(lambda: ("RumbleTriggers", (0, 0)) in pad.calls, "the trigger rumble to stop")
    stops = [call for call in pad.calls if call[1] == (0, 0)]
    assert stops == [("Rumble", (0, 0)), ("RumbleTriggers", (0, 0))]  # each stopped once, when its lease ended


async def test_commands_without_a_pad_are_unavailable(sdl: SdlBackend, devices) -> None:
    device = devices(name_contains="nothing like this")
    await until(lambda: device.status[1].startswith("waiting"), "waiting")
    with pytest.raises(DeviceUnavailable, match="has no pad attached"):
        await device.command("rumble", Rumble())


async def test_own_virtual_pad_with_scripted_motion_publishes_its_outputs(devices) -> None:
    device = devices(virtual=True, virtual_motion="demo", virtual_features=("rumble",), rate_hz=50.0)
    await connected(device)
    info = device.info()
    assert (info.virtual, info.name) == (True, "hwgateway virtual pad pad")
    assert (info.rumble, info.trigger_rumble, info.led) == (True, False, False)
    await device.command("rumble", Rumble(low=1.0, high=0.0, duration_s=5.0))
    await until(lambda: (s := device.bus.latest("pad/virtual_outputs")) and s.message.rumble_low == 65535, "outputs")
    # The scripted motion moves the sticks and holds buttons long enough for long presses.
    await until(lambda: len({s.axes[0] for s, _ in device.states()}) > 10, "moving sticks")
    await until(lambda: any(2 in s.buttons for s, _ in device.states()), "a long press", timeout=20.0)


SDL_HOLDER = """
import asyncio, time
from devices.gamepad import sdl_backend
from devices.gamepad.model import VirtualSpec

async def main():
    backend = sdl_backend.acquire()
    await backend.ready()
    await backend.attach_virtual(VirtualSpec("Signal Pad"))
    print("ready", flush=True)
    time.sleep(30)  # no asyncio signal handlers: only SDL could intercept SIGTERM

asyncio.run(main())
"""


async def test_sdl_leaves_sigterm_to_the_process() -> None:
    # Without SDL_NO_SIGNAL_HANDLERS, SDL_Init installs its own SIGTERM handler that only queues SDL_QUIT.
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", SDL_HOLDER, stdout=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        assert await asyncio.wait_for(proc.stdout.readline(), TIMEOUT_S) == b"ready\n"
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), TIMEOUT_S) == -signal.SIGTERM
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_a_waiter_cancelled_before_sdl_init_leaves_the_thread_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    # `hwgateway demo` on a port in use: the gamepad's start is cancelled while SDL_Init still runs.
    failures: list[threading.ExceptHookArgs] = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    backend = sdl_backend.acquire()
    waiter = asyncio.create_task(backend.ready())
    await asyncio.sleep(0)
    waiter.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await waiter
    await sdl_backend.release(backend)
    assert not backend._thread.is_alive()
    assert [f"{failure.exc_type.__name__}: {failure.exc_value}" for failure in failures] == []
