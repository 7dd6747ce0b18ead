"""Gamepad-specific commands and states (`kind = "gamepad"` devices, SDL2 backend).

Rumble and LED colour use the generic `rumble` and `led` commands; what only a gamepad has is here.
"""

from __future__ import annotations

from typing import Annotated

from gateway.messages.schema import BOOL, STR, U8, U16, U64, Array, Float, Int, message

#: A pad's ControllerState axes in order: sticks (up and right positive), then triggers.
PAD_AXIS_NAMES: tuple[str, ...] = ("left x", "left y", "right x", "right y", "L2", "R2")
#: A pad's 17 ControllerState buttons in order (every gamepad's and every simulated pad's).
PAD_BUTTON_NAMES: tuple[str, ...] = ("✕", "◯", "△", "□", "L1", "R1", "L2", "R2", "Share", "Options", "PS", "L3", "R3")
PAD_BUTTON_NAMES += ("D-pad left", "D-pad up", "D-pad right", "D-pad down")

_UNIT = Float(32, 0.0, 1.0)
_SECONDS = Float(32, 0.0, 60.0)


@message("hwgateway/GamepadTriggerRumble", kind="command")
class GamepadTriggerRumble:
    """Rumble the motors in the triggers: `left` and `right` strengths in [0, 1] for `duration_s` seconds.

    Strengths are sent to SDL as 0-65535 (rounded); a `duration_s` of 0, or both strengths 0, stops
    the trigger motors. Only pads whose capabilities list `trigger_rumble` (e.g. Xbox One, DualSense) accept it.
    """

    left: Annotated[float, _UNIT] = 1.0
    right: Annotated[float, _UNIT] = 1.0
    duration_s: Annotated[float, _SECONDS] = 0.5


@message("hwgateway/GamepadPlayerIndex", kind="command")
class GamepadPlayerIndex:
    """Assign player number `index` (0 is player 1, up to 7) or -1 for none; pads with player LEDs show it."""

    index: Annotated[int, Int(8, minimum=-1, maximum=7)] = 0


@message("hwgateway/GamepadInfo")
class GamepadInfo:
    """The pad a gamepad device is bound to, published on `<id>/info` when it attaches or goes away.

    `attached` is false (and the rest empty) while no pad is bound. `key` is the pad's stable identity:
    the SDL `guid` (32 hex digits) plus `serial` or else device `path` when it has one. `type` is SDL's
    controller type (ps4, xboxone, ...); `vendor_id`/`product_id` are USB ids. `rumble`,
    `trigger_rumble` and `led` say which outputs the pad supports; `virtual` marks an SDL virtual pad.
    """

    attached: Annotated[bool, BOOL] = False
    name: Annotated[str, STR] = ""
    key: Annotated[str, STR] = ""
    guid: Annotated[str, STR] = ""
    serial: Annotated[str, STR] = ""
    path: Annotated[str, STR] = ""
    type: Annotated[str, STR] = ""
    vendor_id: Annotated[int, U16] = 0
    product_id: Annotated[int, U16] = 0
    rumble: Annotated[bool, BOOL] = False
    trigger_rumble: Annotated[bool, BOOL] = False
    led: Annotated[bool, BOOL] = False
    virtual: Annotated[bool, BOOL] = False


@message("hwgateway/GamepadVirtualOutputs")
class GamepadVirtualOutputs:
    """What an SDL virtual pad's output callbacks last received, on `<id>/virtual_outputs` (virtual pads only).

    Values are exactly SDL's: `rumble_low`/`rumble_high` and `trigger_left`/`trigger_right` are motor
    strengths 0-65535 (0: stopped, as SDL sends when a rumble's time runs out); `led` is [r, g, b],
    each 0-255; `player_index` is the last index set (-1: none). `calls` counts callbacks and
    `last_call` names the latest (Rumble, RumbleTriggers, SetLED, SetPlayerIndex).
    """

    rumble_low: Annotated[int, U16] = 0
    rumble_high: Annotated[int, U16] = 0
    trigger_left: Annotated[int, U16] = 0
    trigger_right: Annotated[int, U16] = 0
    led: Annotated[tuple[int, ...], Array(U8, 3)] = (0, 0, 0)
    player_index: Annotated[int, Int(32)] = -1
    calls: Annotated[int, U64] = 0
    last_call: Annotated[str, STR] = ""
