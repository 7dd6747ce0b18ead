"""What the SDL thread and the adapter exchange: pad identity, selectors, virtual pads, events (pure)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from devices.gamepad.normalize import SDL_AXES, SDL_BUTTONS, RawPad
from gateway.messages.gamepad import GamepadVirtualOutputs

#: SDL_GameControllerType values by name (SDL 2.32); unknown values read "unknown".
CONTROLLER_TYPES = (
    "unknown", "xbox360", "xboxone", "ps3", "ps4", "switch_pro", "virtual", "ps5", "amazon_luna",
    "google_stadia", "nvidia_shield", "joycon_left", "joycon_right", "joycon_pair",
)  # fmt: skip

VirtualFeature = Literal["rumble", "trigger_rumble", "led", "player_index"]
VIRTUAL_FEATURES: tuple[VirtualFeature, ...] = ("rumble", "trigger_rumble", "led", "player_index")
VirtualLayout = Literal["gamecontroller", "raw"]


class SdlError(Exception):
    """An SDL call failed; the message carries SDL's error text."""


class BackendStopped(Exception):
    """The SDL thread has stopped (or failed) and takes no more requests."""


class PadGone(Exception):
    """The device has no pad attached right now."""


#: Characters 4 to 7 of an SDL 2.26+ GUID string hold the CRC16 of the device name (little-endian).
_CRC = slice(4, 8)


def controller_type_name(value: int) -> str:
    """The name of an SDL_GameControllerType value."""
    return CONTROLLER_TYPES[value] if 0 <= value < len(CONTROLLER_TYPES) else "unknown"


def guid_matches(wanted: str, guid: str) -> bool:
    """True when SDL GUID string `guid` is `wanted`; a `wanted` whose name CRC is 0000 matches any name.

    SDL_GameControllerDB lines carry a zero CRC, so the same rule lets a selector copied from a
    mapping line find the pad that mapping applies to.
    """
    wanted, guid = wanted.lower(), guid.lower()
    if wanted == guid:
        return True
    return wanted[_CRC] == "0000" and wanted == guid[: _CRC.start] + "0000" + guid[_CRC.stop :]


@dataclass(frozen=True, slots=True)
class PadInfo:
    """An attached pad as SDL describes it.

    `instance_id` is SDL's handle for this attachment (it changes on every re-attach, so it is never
    used as an id); `guid` the 32-hex-digit SDL joystick GUID; `serial` and `path` may be empty.
    `rumble`, `trigger_rumble` and `led` say what the pad's driver supports.
    """

    instance_id: int
    name: str
    guid: str
    serial: str
    path: str
    vendor_id: int
    product_id: int
    type: str
    rumble: bool
    trigger_rumble: bool
    led: bool
    virtual: bool

    @property
    def key(self) -> str:
        """The stable identity of the pad: GUID plus serial (or else device path) when it has one."""
        suffix = self.serial or self.path
        return f"{self.guid}/{suffix}" if suffix else self.guid


@dataclass(frozen=True, slots=True)
class Selector:
    """Which pad a gamepad device takes: every non-empty field must match (all empty: any free pad).

    `guid`: an SDL GUID (a name CRC of 0000 matches any name); `serial`, `path`: exact;
    `name_contains`: a case-insensitive part of the name.
    """

    guid: str = ""
    serial: str = ""
    path: str = ""
    name_contains: str = ""

    def matches(self, pad: PadInfo) -> bool:
        """True when `pad` satisfies every field that is set."""
        return self.may_match(pad.name, pad.guid, pad.path) and (not self.serial or self.serial == pad.serial)

    def may_match(self, name: str, guid: str, path: str) -> bool:
        """The fields known before opening a pad match (everything but the serial)."""
        return (
            (not self.guid or guid_matches(self.guid, guid))
            and (not self.path or self.path == path)
            and (not self.name_contains or self.name_contains.lower() in name.lower())
        )

    def describe(self) -> str:
        """The selector in words, for availability details."""
        parts = [f"{name} {value!r}" for name, value in self._fields() if value]
        return "any pad" if not parts else "a pad with " + ", ".join(parts)

    def _fields(self) -> tuple[tuple[str, str], ...]:
        return (
            ("GUID", self.guid),
            ("serial", self.serial),
            ("path", self.path),
            ("name containing", self.name_contains),
        )


@dataclass(frozen=True, slots=True)
class VirtualSpec:
    """An SDL virtual joystick to attach (tests, demos).

    `layout` "gamecontroller": SDL maps it automatically (6 axes, 15 buttons in SDL's button order,
    DS4 vendor/product ids so SDL types it as a PS4 pad; its trigger axes are full range, -32768 at rest).
    `layout` "raw": 6 axes, 13 buttons and 1 hat with no mapping, so it becomes a game controller only
    through a mapping (e.g. from a mapping file). `features`: the output callbacks the device has; SDL
    reports rumble, trigger rumble and LED support only where the callback exists.
    """

    name: str
    layout: VirtualLayout = "gamecontroller"
    features: frozenset[VirtualFeature] = frozenset(VIRTUAL_FEATURES)

    @property
    def vendor_id(self) -> int:
        """USB vendor id the virtual device reports."""
        return 0x054C if self.layout == "gamecontroller" else 0x1234

    @property
    def product_id(self) -> int:
        """USB product id the virtual device reports."""
        return 0x09CC if self.layout == "gamecontroller" else 0x5678

    @property
    def counts(self) -> tuple[int, int, int]:
        """Joystick axes, buttons and hats."""
        return (SDL_AXES, SDL_BUTTONS, 0) if self.layout == "gamecontroller" else (6, 13, 1)


@dataclass(frozen=True, slots=True)
class VirtualInputs:
    """Joystick-level inputs for a "gamecontroller" virtual pad: 6 axes in [-32768, 32767], 15 buttons."""

    axes: tuple[int, ...]
    buttons: tuple[bool, ...]


#: One demo cycle: every button is held in turn for `_HOLD_S` of each `_STEP_S`.
_STEP_S = 1.2
_HOLD_S = 0.9


def _raw(value: float) -> int:
    return max(-32768, min(32767, round(value * 32767)))


def demo_motion(t: float) -> VirtualInputs:
    """The scripted motion of the demo's virtual pad at `t` seconds after it started.

    The left stick circles every 4 s, the right stick traces a figure eight, the triggers breathe in
    turn, and the 15 buttons are pressed one at a time for 0.9 s each, long enough to read as a long
    press with the default 0.6 s.
    """
    phase = 2 * math.pi * t / 4.0
    axes = (
        _raw(math.cos(phase)),
        _raw(math.sin(phase)),
        _raw(math.sin(phase)),
        _raw(math.sin(2 * phase) / 2),
        _raw(math.sin(phase)),  # full-range trigger axes: -1 released, 1 fully pressed
        _raw(-math.sin(phase)),
    )
    step, into = divmod(t, _STEP_S)
    pressed = int(step) % SDL_BUTTONS if into < _HOLD_S else -1
    return VirtualInputs(axes, tuple(index == pressed for index in range(SDL_BUTTONS)))


@dataclass(frozen=True, slots=True)
class PadAttached:
    """The device's pad is attached and open."""

    pad: PadInfo


@dataclass(frozen=True, slots=True)
class PadDetached:
    """The device's pad went away (unplugged, or the SDL thread stopped): `reason` says which."""

    pad: PadInfo | None
    reason: str


@dataclass(frozen=True, slots=True)
class PadWaiting:
    """No pad matches yet; `detail` says what is awaited and which joysticks lack a mapping."""

    detail: str


@dataclass(frozen=True, slots=True)
class PadSample:
    """A changed reading: `wall` in s since the epoch, `monotonic` in s on `time.monotonic`'s clock."""

    raw: RawPad
    wall: float
    monotonic: float


@dataclass(frozen=True, slots=True)
class VirtualOutputsChanged:
    """A callback of the device's own virtual pad ran (rumble, LED, ...): the outputs it now holds."""

    outputs: GamepadVirtualOutputs


PadEvent = PadAttached | PadDetached | PadWaiting | PadSample | VirtualOutputsChanged
