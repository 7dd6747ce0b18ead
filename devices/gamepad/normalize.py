"""Raw SDL GameController values to `creos_messages/ControllerState` axes and buttons (pure, no SDL).

Input (`RawPad`) is what SDL's GameController API reports, in SDL's own order and units:

- six axes: left x, left y, right x, right y, left trigger, right trigger; sticks in [-32768, 32767]
  with SDL's Y growing downwards, triggers in [0, 32767];
- fifteen buttons, SDL_CONTROLLER_BUTTON_A (0) to SDL_CONTROLLER_BUTTON_DPAD_RIGHT (14), named by
  position (A = south), not by label.

Output follows the seed (creos ControllerState, "Origin" order):

- axes: left x, left y, right x, right y (each in [-1, 1], right and up positive, 0 at rest, with a
  dead zone), left trigger, right trigger (each in [0, 1]);
- buttons: ✕ ◯ △ □ L1 R1 L2 R2 Share Options PS L3 R3, D-pad left up right down; 0 released,
  1 pressed, 2 held for at least the long-press time. L2/R2 come from the trigger axes through a
  threshold with hysteresis, because SDL's GameController API has no digital trigger buttons.

Time is injected (`now`, seconds on any monotonic clock), so long presses are tested without sleeping.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

#: SDL's full-scale axis value; -32768 is clamped to -1.
AXIS_MAX = 32767
#: Axes SDL's GameController API has (SDL_CONTROLLER_AXIS_MAX).
SDL_AXES = 6
#: Buttons read from SDL: A to DPAD_RIGHT (the paddles, MISC1 and the touchpad are not in the seed).
SDL_BUTTONS = 15


class SdlAxis(IntEnum):
    """SDL_GameControllerAxis values."""

    LEFTX = 0
    LEFTY = 1
    RIGHTX = 2
    RIGHTY = 3
    TRIGGERLEFT = 4
    TRIGGERRIGHT = 5


class SdlButton(IntEnum):
    """SDL_GameControllerButton values (positional: A is the south face button)."""

    A = 0
    B = 1
    X = 2
    Y = 3
    BACK = 4
    GUIDE = 5
    START = 6
    LEFTSTICK = 7
    RIGHTSTICK = 8
    LEFTSHOULDER = 9
    RIGHTSHOULDER = 10
    DPAD_UP = 11
    DPAD_DOWN = 12
    DPAD_LEFT = 13
    DPAD_RIGHT = 14


#: The seed's 17 buttons: an SDL button, or an `SdlAxis` trigger read through the threshold.
BUTTON_SOURCES: tuple[SdlButton | SdlAxis, ...] = (
    SdlButton.A,  # ✕
    SdlButton.B,  # ◯
    SdlButton.Y,  # △
    SdlButton.X,  # □
    SdlButton.LEFTSHOULDER,  # L1
    SdlButton.RIGHTSHOULDER,  # R1
    SdlAxis.TRIGGERLEFT,  # L2
    SdlAxis.TRIGGERRIGHT,  # R2
    SdlButton.BACK,  # Share
    SdlButton.START,  # Options
    SdlButton.GUIDE,  # PS
    SdlButton.LEFTSTICK,  # L3
    SdlButton.RIGHTSTICK,  # R3
    SdlButton.DPAD_LEFT,
    SdlButton.DPAD_UP,
    SdlButton.DPAD_RIGHT,
    SdlButton.DPAD_DOWN,
)
BUTTONS = len(BUTTON_SOURCES)

RELEASED, PRESSED, LONG_PRESS = 0, 1, 2


@dataclass(frozen=True, slots=True)
class RawPad:
    """One reading of a pad through SDL's GameController API (units in the module docstring)."""

    axes: tuple[int, ...] = (0,) * SDL_AXES
    buttons: tuple[bool, ...] = (False,) * SDL_BUTTONS

    def __post_init__(self) -> None:
        if len(self.axes) != SDL_AXES or len(self.buttons) != SDL_BUTTONS:
            raise ValueError(f"a RawPad has {SDL_AXES} axes and {SDL_BUTTONS} buttons")


@dataclass(frozen=True, slots=True)
class Settings:
    """How raw values become ControllerState values.

    `dead_zone`: stick deflections up to this fraction of full scale read 0; beyond it the rest of the
    travel is stretched back to [0, 1], so the extremes stay ±1. `trigger_threshold`: a trigger at or
    above this (in [0, 1]) presses L2/R2, which are released again below threshold minus `trigger_hysteresis`.
    `long_press_s`: seconds a button must be held to read 2.
    """

    dead_zone: float = 0.05
    trigger_threshold: float = 0.5
    trigger_hysteresis: float = 0.05
    long_press_s: float = 0.6

    def __post_init__(self) -> None:
        if not 0.0 <= self.dead_zone < 1.0:
            raise ValueError(f"dead_zone {self.dead_zone} is outside [0, 1)")
        if not 0.0 < self.trigger_threshold <= 1.0:
            raise ValueError(f"trigger_threshold {self.trigger_threshold} is outside (0, 1]")
        if not 0.0 <= self.trigger_hysteresis < self.trigger_threshold:
            raise ValueError("trigger_hysteresis must be at least 0 and below trigger_threshold")
        if not self.long_press_s > 0.0:
            raise ValueError(f"long_press_s {self.long_press_s} must be positive")


def stick(value: int, dead_zone: float = 0.0, flip: bool = False) -> float:
    """A stick axis in [-1, 1]: SDL's raw value over 32767, negated when `flip` (SDL's Y grows downwards)."""
    # Negate the integer, not the float, so a centred axis reads 0.0 and never -0.0.
    scaled = max(-1.0, min(1.0, (-value if flip else value) / AXIS_MAX))
    magnitude = abs(scaled)
    if magnitude <= dead_zone:
        return 0.0
    if dead_zone == 0.0:
        return scaled
    return math.copysign((magnitude - dead_zone) / (1.0 - dead_zone), scaled)


def trigger(value: int) -> float:
    """A trigger axis in [0, 1]: SDL's raw value over 32767."""
    return max(0.0, min(1.0, value / AXIS_MAX))


def normalize_axes(raw: RawPad, dead_zone: float) -> tuple[float, ...]:
    """The six seed axes of a raw reading (sticks with `dead_zone`, Y flipped so up is positive)."""
    axes = raw.axes
    return (
        stick(axes[SdlAxis.LEFTX], dead_zone),
        stick(axes[SdlAxis.LEFTY], dead_zone, flip=True),
        stick(axes[SdlAxis.RIGHTX], dead_zone),
        stick(axes[SdlAxis.RIGHTY], dead_zone, flip=True),
        trigger(axes[SdlAxis.TRIGGERLEFT]),
        trigger(axes[SdlAxis.TRIGGERRIGHT]),
    )


@dataclass(slots=True)
class TriggerLatch:
    """A digital button from an analog trigger: on at `threshold`, off below `threshold - hysteresis`.

    The gap keeps a trigger resting near the threshold from chattering between pressed and released.
    """

    threshold: float
    hysteresis: float
    pressed: bool = False

    def update(self, value: float) -> bool:
        """Feed a trigger value in [0, 1]; return whether the button is pressed now."""
        if self.pressed:
            self.pressed = value >= self.threshold - self.hysteresis
        else:
            self.pressed = value >= self.threshold
        return self.pressed


@dataclass(slots=True)
class LongPressTracker:
    """Turns held buttons into 2 (`LONG_PRESS`) once they have been down for `long_press_s` seconds."""

    long_press_s: float
    size: int = BUTTONS
    _since: list[float | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._since = [None] * self.size

    def update(self, pressed: Sequence[bool], now: float) -> tuple[int, ...]:
        """Feed which buttons are down at time `now` (s); return each one's 0, 1 or 2."""
        states = []
        for index, down in enumerate(pressed):
            if not down:
                self._since[index] = None
                states.append(RELEASED)
                continue
            since = self._since[index]
            if since is None:
                since = self._since[index] = now
            states.append(LONG_PRESS if now - since >= self.long_press_s else PRESSED)
        return tuple(states)

    def next_change(self, now: float) -> float | None:
        """When (same clock as `now`) the next held button becomes a long press, or None."""
        deadlines = [since + self.long_press_s for since in self._since if since is not None]
        pending = [deadline for deadline in deadlines if deadline > now]
        return min(pending) if pending else None

    def reset(self) -> None:
        """Forget every press (the pad went away)."""
        self._since = [None] * self.size


class Normalizer:
    """Raw readings to ControllerState values, keeping the trigger latches and long-press timers."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._left = TriggerLatch(settings.trigger_threshold, settings.trigger_hysteresis)
        self._right = TriggerLatch(settings.trigger_threshold, settings.trigger_hysteresis)
        self._long_press = LongPressTracker(settings.long_press_s)

    def update(self, raw: RawPad, now: float) -> tuple[tuple[float, ...], tuple[int, ...]]:
        """The seed's axes and buttons for `raw` read at `now` (monotonic seconds)."""
        axes = normalize_axes(raw, self.settings.dead_zone)
        latched = {
            SdlAxis.TRIGGERLEFT: self._left.update(axes[4]),
            SdlAxis.TRIGGERRIGHT: self._right.update(axes[5]),
        }
        pressed = [latched[source] if isinstance(source, SdlAxis) else raw.buttons[source] for source in BUTTON_SOURCES]
        return axes, self._long_press.update(pressed, now)

    def next_change(self, now: float) -> float | None:
        """When the buttons change without new input (a long press completing), or None."""
        return self._long_press.next_change(now)

    def reset(self) -> None:
        """Forget latches and held buttons (a new pad, or the same one re-attached)."""
        self._left.pressed = self._right.pressed = False
        self._long_press.reset()
