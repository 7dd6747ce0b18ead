"""The `gamepad` adapter: one configured device bound to one SDL game controller.

Publishes, under the config id:

- `<id>/state` — `creos_messages/ControllerState` (see `devices.gamepad.normalize`), on every change
  and `rate_hz` times a second; its `timestamp` is the time of the newest reading of the pad by the
  SDL thread, so a republished state whose reading did not happen (a stalled SDL thread) repeats the
  previous timestamp, and a consumer judging freshness (a binding's timeout) sees it as a repeat;
- `<id>/info` — `hwgateway/GamepadInfo`: the bound pad's identity and outputs, on attach and detach;
- `<id>/virtual_outputs` — `hwgateway/GamepadVirtualOutputs` (virtual pads only): what the virtual
  device's rumble/LED/player-index callbacks received, so clients and tests see commands land.

Accepts `rumble` (low/high motors), `led` (the pad's one RGB LED), `hwgateway/GamepadTriggerRumble`
and `hwgateway/GamepadPlayerIndex`. A pad without the output answers `unknown_command` naming what
it does support; `list_devices` shows each pad's outputs in `capabilities`. Rumble durations are 0
(stop) or at least `MIN_RUMBLE_S` (1 ms, SDL's unit), up to the schema's 60 s.

Rumble (of either kind) is leased to the client that started it for its duration (the core's
`gateway.core.lease` rule): the motors stop when that client leaves, when the duration is up (SDL
stops them then too), on estop, when the pad is lost and at shutdown. The LED and player index stay.

Availability: `connecting` until a matching pad is attached, then `connected`. Unplugging it ends
`run` with `PadLost`, so the supervisor reports `disconnected` and starts over: the device waits
(`connecting`) for a matching pad and reconnects when one, e.g. the same pad, is plugged in again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from devices.gamepad.model import (
    VIRTUAL_FEATURES,
    BackendStopped,
    PadAttached,
    PadDetached,
    PadEvent,
    PadGone,
    PadInfo,
    PadSample,
    PadWaiting,
    SdlError,
    Selector,
    VirtualFeature,
    VirtualLayout,
    VirtualOutputsChanged,
    VirtualSpec,
)
from devices.gamepad.normalize import Normalizer, RawPad, Settings
from gateway.core.adapter import Adapter, Command, DeviceContext
from gateway.core.dispatch import CommandTable
from gateway.core.lease import Lease, LeaseEnd, Leases
from gateway.errors import DeviceError, DeviceUnavailable, InvalidArgument, UnknownCommand
from gateway.messages.common import Time
from gateway.messages.creos import ControllerState
from gateway.messages.gamepad import (
    PAD_AXIS_NAMES,
    PAD_BUTTON_NAMES,
    GamepadInfo,
    GamepadPlayerIndex,
    GamepadTriggerRumble,
)
from gateway.messages.generic import Led, Rumble

if TYPE_CHECKING:
    from devices.gamepad.sdl_backend import Claim, SdlBackend

log = logging.getLogger(__name__)

_GUID = re.compile(r"[0-9a-fA-F]{32}")
_U16_MAX = 65535


@dataclass(frozen=True, slots=True)
class GamepadOptions:
    """Config of a `kind = "gamepad"` device (SDL2 game controller).

    Which pad: `guid` (an SDL GUID, 32 hex digits; with name CRC 0000, as in GameControllerDB lines,
    any name), `serial`, `path` (e.g. /dev/input/event7) and `name_contains` must each match when
    set; with none set, the first pad no other device has taken.
    `mapping_files`: GameControllerDB-format files (e.g. a `gamecontrollerdb.txt`, then your own
    mappings) added to SDL's built-in mappings in order; later lines win.
    Normalization: `dead_zone` (fraction of stick travel read as 0), `trigger_threshold` and
    `trigger_hysteresis` (trigger values in [0, 1] that press and release L2/R2), `long_press_s`
    (seconds held before a button reads 2). `rate_hz`: states per second besides those on change
    (0: on change only).
    Virtual pads (tests, demos): `virtual` attaches an SDL virtual pad for this device alone;
    `virtual_layout` "gamecontroller" is mapped automatically, "raw" needs a mapping (from
    `mapping_files`); `virtual_motion` "demo" plays a scripted motion; `virtual_features` lists its
    outputs (rumble, trigger_rumble, led, player_index).
    """

    guid: str = ""
    serial: str = ""
    path: str = ""
    name_contains: str = ""
    mapping_files: tuple[str, ...] = ()
    dead_zone: float = field(default=0.05, metadata={"min": 0.0, "max": 0.9})
    trigger_threshold: float = field(default=0.5, metadata={"min": 0.05, "max": 1.0})
    trigger_hysteresis: float = field(default=0.05, metadata={"min": 0.0, "max": 0.5})
    long_press_s: float = field(default=0.6, metadata={"min": 0.05, "max": 60.0})
    rate_hz: float = field(default=20.0, metadata={"min": 0.0, "max": 1000.0})
    virtual: bool = False
    virtual_layout: VirtualLayout = "gamecontroller"
    virtual_motion: Literal["none", "demo"] = "none"
    virtual_features: tuple[VirtualFeature, ...] = VIRTUAL_FEATURES

    def __post_init__(self) -> None:
        # Every problem in one error, like the config loader's per-key errors.
        problems = []
        if self.guid and not _GUID.fullmatch(self.guid):
            problems.append(f"guid {self.guid!r} is not 32 hexadecimal digits")
        selected = self.guid or self.serial or self.path or self.name_contains
        if self.virtual and selected:
            problems.append("a virtual pad is its own selector: drop guid, serial, path and name_contains")
        if self.virtual_motion == "demo" and not (self.virtual and self.virtual_layout == "gamecontroller"):
            problems.append('virtual_motion = "demo" needs virtual = true and virtual_layout = "gamecontroller"')
        try:
            self.settings()  # raises ValueError for an inconsistent trigger threshold and hysteresis
        except ValueError as error:
            problems.append(str(error))
        if problems:
            raise ValueError("; ".join(problems))

    def settings(self) -> Settings:
        """The normalization settings."""
        return Settings(self.dead_zone, self.trigger_threshold, self.trigger_hysteresis, self.long_press_s)

    def selector(self) -> Selector:
        """Which pad to bind."""
        return Selector(self.guid, self.serial, self.path, self.name_contains)


class PadLost(ConnectionError):
    """The bound pad went away; the supervisor restarts the device, which then waits for a pad again."""


class GamepadUnavailable(RuntimeError):
    """SDL2 (the `gamepad` extra) cannot be loaded."""


def _u16(value: float) -> int:
    return round(value * _U16_MAX)


#: Shortest rumble (s): SDL counts whole milliseconds, and a shorter one would round to 0, which stops.
MIN_RUMBLE_S = 0.001


def _milliseconds(seconds: float) -> int:
    if 0 < seconds < MIN_RUMBLE_S:
        raise InvalidArgument(f"data.duration_s: {seconds:g} s is below the minimum rumble of 1 ms (0 stops)")
    return round(seconds * 1000.0)


def _info_message(pad: PadInfo | None) -> GamepadInfo:
    if pad is None:
        return GamepadInfo()
    return GamepadInfo(
        attached=True,
        name=pad.name,
        key=pad.key,
        guid=pad.guid,
        serial=pad.serial,
        path=pad.path,
        type=pad.type,
        vendor_id=pad.vendor_id,
        product_id=pad.product_id,
        rumble=pad.rumble,
        trigger_rumble=pad.trigger_rumble,
        led=pad.led,
        virtual=pad.virtual,
    )


TRIGGER_RUMBLE = "hwgateway/GamepadTriggerRumble"


class GamepadAdapter(Adapter[GamepadOptions]):
    """A game controller through SDL2: ControllerState out; rumble, trigger rumble, LED, player index in."""

    kind = "gamepad"
    options_class = GamepadOptions
    publishes = ("creos_messages/ControllerState", "hwgateway/GamepadInfo", "hwgateway/GamepadVirtualOutputs")
    streams: ClassVar[Mapping[str, str]] = {
        "state": "creos_messages/ControllerState",
        "info": "hwgateway/GamepadInfo",
        "virtual_outputs": "hwgateway/GamepadVirtualOutputs",
    }

    def __init__(self, ctx: DeviceContext, options: GamepadOptions) -> None:
        super().__init__(ctx, options)
        self._normalizer = Normalizer(options.settings())
        self._backend: SdlBackend | None = None
        self._claim: Claim | None = None
        self._token: object | None = None
        self._lost: asyncio.Future[None] | None = None
        self._pad: PadInfo | None = None
        self._raw: RawPad | None = None
        self._last: tuple[tuple[float, ...], tuple[int, ...]] | None = None
        #: The time (s since the epoch) of the newest reading of the pad the published state stands on.
        self._read_wall = 0.0
        self._timer: asyncio.TimerHandle | None = None
        #: Rumble leases by command type ("rumble", `TRIGGER_RUMBLE`); the value is (motor, motor, ms).
        self.leases: Leases[str, tuple[int, int, int]] = Leases(ctx.device_id, self._on_lease_end, is_safe=_still)

    def capabilities(self) -> Mapping[str, Any]:
        """The bound pad (attached, name, key, type) and the outputs it has."""
        pad = self._pad
        caps: dict[str, Any] = {
            "attached": pad is not None,
            "virtual": self.options.virtual,
            "selects": "its own virtual pad" if self.options.virtual else self.options.selector().describe(),
            "rumble": bool(pad and pad.rumble),
            "trigger_rumble": bool(pad and pad.trigger_rumble),
            "led": bool(pad and pad.led),
            # SDL keeps a player index for every pad; pads with player LEDs show it.
            "player_index": pad is not None,
            "controller": {"axes": list(PAD_AXIS_NAMES), "buttons": list(PAD_BUTTON_NAMES)},
        }
        if pad is not None:
            caps.update(name=pad.name, key=pad.key, guid=pad.guid, type=pad.type)
        return caps

    async def run(self) -> None:
        """Start (or join) the SDL thread, load mappings, claim a pad and serve it until it is lost."""
        try:
            from devices.gamepad import sdl_backend
        except (ImportError, RuntimeError) as error:  # PySDL2 raises RuntimeError when libSDL2 is missing
            raise GamepadUnavailable(f"SDL2 is not available ({error}); install hwgateway[gamepad]") from None
        loop = asyncio.get_running_loop()
        self._token = token = object()
        self._lost = loop.create_future()
        backend = sdl_backend.acquire()
        claim: Claim | None = None
        try:
            version = await backend.ready()
            for path in self.options.mapping_files:
                report = await backend.load_mappings(path)
                log.info(
                    "%s: %s gave %d new and %d updated mappings (SDL %s)",
                    self.ctx.device_id, path, report.added, report.updated, version.version,
                )  # fmt: skip
            virtual = None
            if self.options.virtual:
                name = f"hwgateway virtual pad {self.ctx.device_id}"
                virtual = VirtualSpec(name, self.options.virtual_layout, frozenset(self.options.virtual_features))
            claim = await backend.claim(
                self.options.selector(),
                functools.partial(self._deliver, loop, token),
                virtual,
                motion=self.options.virtual_motion == "demo",
            )
            self._backend, self._claim = backend, claim
            await self._serve(self._lost)
        except asyncio.CancelledError:
            self.leases.end_all(LeaseEnd.SHUTDOWN)
            raise
        finally:
            self.leases.end_all(LeaseEnd.DEVICE_LOST)  # nothing left after a shutdown
            self._token = None
            self._forget_pad()
            if claim is not None:
                backend.unclaim(claim)
            self._backend = self._claim = None
            if self._lost.done() and not self._lost.cancelled():
                self._lost.exception()  # retrieved, so asyncio does not log it as forgotten
            await sdl_backend.release(backend)

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        """Send a rumble, trigger rumble, LED colour or player index to the pad; return the SDL values sent."""
        try:
            result: Mapping[str, Any] = await self.commands.run(
                self, command, f"device {self.ctx.device_id!r} (gamepad)"
            )
        except PadGone:
            raise DeviceUnavailable(f"device {self.ctx.device_id!r}: its pad went away") from None
        except (SdlError, BackendStopped) as error:
            raise DeviceError(str(error)) from None
        return result

    def _bound(self) -> tuple[SdlBackend, Claim, PadInfo]:
        backend, claim, pad = self._backend, self._claim, self._pad
        if backend is None or claim is None or pad is None:
            raise DeviceUnavailable(f"device {self.ctx.device_id!r} has no pad attached")
        return backend, claim, pad

    async def _rumble(self, command: Command) -> Mapping[str, Any]:
        backend, claim, pad = self._bound()
        message: Rumble = command.message
        self._require(pad, pad.rumble, "rumble")
        low, high, duration_ms = _u16(message.low), _u16(message.high), _milliseconds(message.duration_s)
        # Leased before the SDL call is awaited: a command deadline that cancels the wait
        # does not stop the SDL thread, and an unleased motor would outlive its client.
        self._lease_rumble(command, (low, high, duration_ms))
        await backend.rumble(claim, low, high, duration_ms)
        return {"low": low, "high": high, "duration_ms": duration_ms}

    async def _trigger_rumble(self, command: Command) -> Mapping[str, Any]:
        backend, claim, pad = self._bound()
        message: GamepadTriggerRumble = command.message
        self._require(pad, pad.trigger_rumble, "trigger rumble")
        left, right = _u16(message.left), _u16(message.right)
        duration_ms = _milliseconds(message.duration_s)
        self._lease_rumble(command, (left, right, duration_ms))
        await backend.rumble_triggers(claim, left, right, duration_ms)
        return {"left": left, "right": right, "duration_ms": duration_ms}

    async def _led(self, command: Command) -> Mapping[str, Any]:
        backend, claim, pad = self._bound()
        message: Led = command.message
        self._require(pad, pad.led, "LED")
        if message.index not in (-1, 0):
            raise InvalidArgument(f"data.index: {message.index} is not an LED of this pad (it has one: 0 or -1)")
        red, green, blue = (round(channel * 255) for channel in message.rgb)
        await backend.set_led(claim, red, green, blue)
        return {"rgb": [red, green, blue]}

    async def _player_index(self, command: Command) -> Mapping[str, Any]:
        backend, claim, _ = self._bound()
        message: GamepadPlayerIndex = command.message
        await backend.set_player_index(claim, message.index)
        return {"index": message.index}

    async def estop(self) -> None:
        """Stop the motors now (queued to the SDL thread, not awaited), leased or not."""
        self.leases.end_all(LeaseEnd.ESTOP)
        self._stop_rumble()  # both kinds, leased or not (SDL sends a stop only to a motor still running)

    def release(self, client_id: str) -> None:
        """A rumble is leased to the client that started it: it stops early when that client leaves."""
        self.leases.release(client_id)

    # ---- events from the SDL thread ------------------------------------------------------------

    def _deliver(self, loop: asyncio.AbstractEventLoop, token: object, event: PadEvent) -> None:
        """Hand an event from the SDL thread to the event loop (called on the SDL thread)."""
        # A closed loop means the gateway has stopped and nobody is listening.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._on_event, token, event)

    def _on_event(self, token: object, event: PadEvent) -> None:
        lost = self._lost
        if token is not self._token or lost is None or lost.done():
            return  # from an earlier run, or after the pad was lost
        if isinstance(event, PadSample):
            if self._pad is not None:
                self._raw = event.raw
                self._evaluate(event.wall, event.monotonic, force=False)
        elif isinstance(event, PadAttached):
            self._forget_pad()
            self._pad = event.pad
            self.ctx.set_status("connected")
            self.ctx.publish("info", _info_message(event.pad))
        elif isinstance(event, PadDetached):
            self._forget_pad()
            self.ctx.publish("info", _info_message(None))
            pad = event.pad
            lost.set_exception(PadLost(f"pad {pad.name!r} ({pad.key}) {event.reason}" if pad else event.reason))
        elif isinstance(event, PadWaiting):
            self.ctx.set_status("connecting", event.detail)
        elif isinstance(event, VirtualOutputsChanged):
            self.ctx.publish("virtual_outputs", event.outputs)

    # ---- state ---------------------------------------------------------------------------------

    async def _serve(self, lost: asyncio.Future[None]) -> None:
        """Publish the state `rate_hz` times a second until the pad is lost (then raise `PadLost`)."""
        period = 1.0 / self.options.rate_hz if self.options.rate_hz else None
        next_tick = time.monotonic()
        while True:
            timeout = None if period is None else max(0.0, next_tick + period - time.monotonic())
            await asyncio.wait({lost}, timeout=timeout)
            if lost.done():
                lost.result()
                return
            assert period is not None
            # After a stall, carry on from now instead of publishing a burst of identical states.
            next_tick = max(next_tick + period, time.monotonic() - period)
            if self._pad is not None and self._raw is not None:
                self._evaluate(self._newest_reading(), time.monotonic(), force=True)

    def _newest_reading(self) -> float:
        """When the SDL thread last read the pad (s since the epoch): what a republished state stands on."""
        claim = self._claim
        return max(self._read_wall, claim.read_wall if claim is not None else 0.0)

    def _evaluate(self, wall: float, monotonic: float, force: bool) -> None:
        """Normalize the latest reading at `monotonic`; publish it if it changed (or `force`).

        `wall`: the time of the reading the state stands on (never earlier than the last one published).
        """
        assert self._raw is not None
        axes, buttons = self._normalizer.update(self._raw, monotonic)
        if force or (axes, buttons) != self._last:
            self._last = (axes, buttons)
            self._read_wall = wall = max(wall, self._read_wall)
            self.ctx.publish("state", ControllerState(Time.from_seconds(wall), axes, buttons), wall)
        self._schedule_long_press(monotonic)

    def _schedule_long_press(self, monotonic: float) -> None:
        # A held button turns into a long press with no new input: wake up when that is due.
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        due = self._normalizer.next_change(monotonic)
        if due is not None:
            self._timer = asyncio.get_running_loop().call_later(max(0.0, due - time.monotonic()), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._pad is not None and self._raw is not None:
            self._evaluate(self._newest_reading(), time.monotonic(), force=False)

    def _forget_pad(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pad = self._raw = self._last = None
        self._read_wall = 0.0
        self._normalizer.reset()
        self.leases.end_all(LeaseEnd.DEVICE_LOST)

    # ---- outputs -------------------------------------------------------------------------------

    def _require(self, pad: PadInfo, supported: bool, what: str) -> None:
        if supported:
            return
        has = [name for name, present in (("rumble", pad.rumble), ("trigger rumble", pad.trigger_rumble)) if present]
        has += ["an LED"] if pad.led else []
        raise UnknownCommand(
            f"pad {pad.name!r} of device {self.ctx.device_id!r} has no {what}; "
            f"it has: {', '.join([*has, 'a player index'])}"
        )

    def _lease_rumble(self, command: Command, motors: tuple[int, int, int]) -> None:
        """The rumble is leased for its duration (SDL stops it then; the lease's end stops it too)."""
        self.leases.take(command.type, command.client_id, motors, term_s=motors[2] / 1000.0)

    def _on_lease_end(self, kind: str, lease: Lease[tuple[int, int, int]], why: LeaseEnd) -> None:
        """A rumble's lease ended: its motors stop (queued to the SDL thread, not awaited)."""
        triggers = kind == TRIGGER_RUMBLE
        self._stop_rumble(motors=not triggers, triggers=triggers)

    def _stop_rumble(self, motors: bool = True, triggers: bool = True) -> None:
        if self._backend is not None and self._claim is not None:
            self._backend.stop_rumble(self._claim, motors, triggers)

    #: Every command the pad takes, and its handler.
    commands: ClassVar[CommandTable[GamepadAdapter, Command]] = CommandTable(
        {
            "rumble": _rumble,
            "led": _led,
            TRIGGER_RUMBLE: _trigger_rumble,
            "hwgateway/GamepadPlayerIndex": _player_index,
        }
    )
    accepts = commands.types()


def _still(motors: tuple[int, int, int]) -> bool:
    """A rumble of strength 0 or duration 0 stops the motors: their safe value."""
    low, high, duration_ms = motors
    return duration_ms == 0 or (low == 0 and high == 0)
