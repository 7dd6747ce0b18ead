"""SDL virtual joysticks: real SDL devices whose inputs we set and whose output callbacks we record.

Everything here runs on the SDL thread (`devices.gamepad.sdl_backend`), like every other SDL call.
"""

from __future__ import annotations

import ctypes
import dataclasses
import logging
from collections.abc import Callable, Mapping

import sdl2

from devices.gamepad.model import SdlError, VirtualInputs, VirtualSpec
from gateway.messages.gamepad import GamepadVirtualOutputs

log = logging.getLogger(__name__)


def sdl_error(what: str) -> SdlError:
    """An `SdlError` for `what` with SDL's last error text."""
    detail = sdl2.SDL_GetError().decode(errors="replace")
    return SdlError(f"{what}: {detail or 'no detail from SDL'}")


def device_index(instance_id: int) -> int | None:
    """The current device index of joystick `instance_id` (indices shift as devices come and go)."""
    for index in range(int(sdl2.SDL_NumJoysticks())):
        if int(sdl2.SDL_JoystickGetDeviceInstanceID(index)) == instance_id:
            return index
    return None


class VirtualPad:
    """An attached SDL virtual joystick (SDL thread only).

    `calls` lists every output callback as (name, arguments) in the order SDL made them, and
    `outputs` holds the resulting state; `on_output`, when given, is called (on the SDL thread) after
    each callback with the new outputs.
    """

    def __init__(self, spec: VirtualSpec, on_output: Callable[[GamepadVirtualOutputs], None] | None = None) -> None:
        self.spec = spec
        self.calls: list[tuple[str, tuple[int, ...]]] = []
        self.outputs = GamepadVirtualOutputs()
        self._on_output = on_output
        naxes, nbuttons, nhats = spec.counts
        desc = sdl2.SDL_VirtualJoystickDesc()
        desc.version = sdl2.SDL_VIRTUAL_JOYSTICK_DESC_VERSION
        desc.type = (
            sdl2.SDL_JOYSTICK_TYPE_GAMECONTROLLER if spec.layout == "gamecontroller" else sdl2.SDL_JOYSTICK_TYPE_UNKNOWN
        )
        desc.naxes, desc.nbuttons, desc.nhats = naxes, nbuttons, nhats
        desc.vendor_id, desc.product_id = spec.vendor_id, spec.product_id
        desc.name = spec.name.encode()
        # SDL keeps the function pointers: the ctypes thunks must live as long as the device.
        self._callbacks: list[object] = []
        if "rumble" in spec.features:
            desc.Rumble = self._keep(sdl2.joystick.CFUNC_Rumble(self._rumble))
        if "trigger_rumble" in spec.features:
            desc.RumbleTriggers = self._keep(sdl2.joystick.CFUNC_RumbleTriggers(self._rumble_triggers))
        if "led" in spec.features:
            desc.SetLED = self._keep(sdl2.joystick.CFUNC_SetLED(self._set_led))
        if "player_index" in spec.features:
            desc.SetPlayerIndex = self._keep(sdl2.joystick.CFUNC_SetPlayerIndex(self._set_player_index))
        self._desc = desc
        index = int(sdl2.SDL_JoystickAttachVirtualEx(ctypes.byref(desc)))
        if index < 0:
            raise sdl_error(f"cannot attach virtual pad {spec.name!r}")
        self.instance_id = int(sdl2.SDL_JoystickGetDeviceInstanceID(index))
        # Setting inputs needs an open joystick; SDL reference-counts it with the game controller's.
        self._joystick = sdl2.SDL_JoystickOpen(index)
        if not self._joystick:
            error = sdl_error(f"cannot open virtual pad {spec.name!r}")
            sdl2.SDL_JoystickDetachVirtual(index)
            raise error
        self.attached = True

    def set_inputs(
        self,
        axes: Mapping[int, int] | None = None,
        buttons: Mapping[int, bool] | None = None,
        hats: Mapping[int, int] | None = None,
    ) -> None:
        """Set joystick axes (index → [-32768, 32767]), buttons (index → pressed) and hats (index → SDL_HAT_*).

        SDL applies them at its next joystick update, i.e. the SDL thread's next poll.
        """
        self._check_attached()
        for axis, value in (axes or {}).items():
            self._checked(sdl2.SDL_JoystickSetVirtualAxis(self._joystick, axis, value), f"axis {axis}")
        for button, pressed in (buttons or {}).items():
            self._checked(sdl2.SDL_JoystickSetVirtualButton(self._joystick, button, int(pressed)), f"button {button}")
        for hat, value in (hats or {}).items():
            self._checked(sdl2.SDL_JoystickSetVirtualHat(self._joystick, hat, value), f"hat {hat}")

    def apply(self, inputs: VirtualInputs) -> None:
        """Set every axis and button of a "gamecontroller" layout pad at once (scripted motion)."""
        self.set_inputs(dict(enumerate(inputs.axes)), dict(enumerate(inputs.buttons)))

    def detach(self) -> None:
        """Close and detach the device; SDL reports it removed at the next poll."""
        if not self.attached:
            return
        self.attached = False
        sdl2.SDL_JoystickClose(self._joystick)
        index = device_index(self.instance_id)
        if index is not None and sdl2.SDL_JoystickDetachVirtual(index) < 0:
            log.warning("%s", sdl_error(f"cannot detach virtual pad {self.spec.name!r}"))

    def _check_attached(self) -> None:
        if not self.attached:
            raise SdlError(f"virtual pad {self.spec.name!r} is detached")

    def _checked(self, result: int, what: str) -> None:
        if result < 0:
            raise sdl_error(f"virtual pad {self.spec.name!r}: cannot set {what}")

    def _keep(self, callback: object) -> object:
        self._callbacks.append(callback)
        return callback

    def _record(self, name: str, arguments: tuple[int, ...], outputs: GamepadVirtualOutputs) -> None:
        # Runs inside a ctypes callback, where an exception would only be printed: plain assignments,
        # and the listener (the adapter's thread-safe hand-over) guards itself.
        self.calls.append((name, arguments))
        self.outputs = dataclasses.replace(outputs, calls=outputs.calls + 1, last_call=name)
        if self._on_output is not None:
            self._on_output(self.outputs)

    def _rumble(self, _userdata: object, low: int, high: int) -> int:
        self._record("Rumble", (low, high), dataclasses.replace(self.outputs, rumble_low=low, rumble_high=high))
        return 0

    def _rumble_triggers(self, _userdata: object, left: int, right: int) -> int:
        changed = dataclasses.replace(self.outputs, trigger_left=left, trigger_right=right)
        self._record("RumbleTriggers", (left, right), changed)
        return 0

    def _set_led(self, _userdata: object, red: int, green: int, blue: int) -> int:
        self._record("SetLED", (red, green, blue), dataclasses.replace(self.outputs, led=(red, green, blue)))
        return 0

    def _set_player_index(self, _userdata: object, index: int) -> None:
        self._record("SetPlayerIndex", (index,), dataclasses.replace(self.outputs, player_index=index))
