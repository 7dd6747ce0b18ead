"""Button semantics as pure detectors: fed (value, time in s), they say when a trigger fires.

Every trigger reads the input through a threshold with hysteresis (a Schmitt trigger), so a value
hovering at the threshold (a trigger axis, a noisy stick) does not chatter:

- "press" / "above": the value rises to `threshold` or more (rearmed when it falls below
  `threshold - hysteresis`); "release": the value falls below `threshold - hysteresis` after a press;
- "below": the value falls to `threshold` or less (rearmed above `threshold + hysteresis`);
- "hold": held for `hold_s` seconds (once per press);
- "double": a second press within `double_s` seconds of the first (the pair fires once);
- "toggle": every press flips a state, and the event carries the new state.

A button reads 0 or 1 (2, a long press, counts as pressed); a missing value (None: no sample, an
index beyond the array) changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Trigger = Literal["press", "release", "hold", "double", "toggle", "above", "below"]
#: Every trigger, in the order the docs list them.
TRIGGERS: tuple[Trigger, ...] = ("press", "release", "hold", "double", "toggle", "above", "below")


@dataclass(frozen=True, slots=True)
class ButtonEvent:
    """A trigger fired at `time_s`; `state` is the toggle's new state (True for every other trigger)."""

    trigger: Trigger
    time_s: float
    state: bool = True


class Detector:
    """One trigger on one input; `feed` it every new value (and on a timer, for "hold") in time order.

    `threshold` and `hysteresis` are in the input's units (a button: 0.5 and 0.1 by default);
    `hold_s` and `double_s` in seconds.
    """

    def __init__(
        self,
        trigger: Trigger,
        threshold: float = 0.5,
        hysteresis: float = 0.1,
        hold_s: float = 0.8,
        double_s: float = 0.4,
    ) -> None:
        if hysteresis < 0:
            raise ValueError("hysteresis must be >= 0")
        self.trigger = trigger
        self.threshold = threshold
        self.hysteresis = hysteresis
        self.hold_s = hold_s
        self.double_s = double_s
        #: Whether the Schmitt trigger reads the input as active (pressed; below the threshold for "below").
        self.active = False
        #: The toggle's state.
        self.toggled = False
        self._pressed_at: float | None = None
        self._held_fired = False
        self._first_press_at: float | None = None
        self._last_time = float("-inf")

    def _next_active(self, value: float) -> bool:
        if self.trigger == "below":  # the mirror image: active at or under the threshold
            if self.active:
                return value <= self.threshold + self.hysteresis
            return value <= self.threshold
        if self.active:
            return value >= self.threshold - self.hysteresis
        return value >= self.threshold

    def feed(self, value: float | None, time_s: float) -> list[ButtonEvent]:
        """The events this value at `time_s` fires (time going backwards is read as no time passing)."""
        time_s = max(time_s, self._last_time)
        self._last_time = time_s
        events: list[ButtonEvent] = []
        if value is not None:
            was = self.active
            self.active = self._next_active(value)
            if self.active and not was:
                events += self._on_rise(time_s)
            elif was and not self.active:
                self._pressed_at = None
                if self.trigger == "release":
                    events.append(ButtonEvent("release", time_s))
        pressed_at = self._pressed_at
        due = pressed_at is not None and time_s - pressed_at >= self.hold_s
        if self.trigger == "hold" and self.active and due and not self._held_fired:
            self._held_fired = True
            events.append(ButtonEvent("hold", time_s))
        return events

    def poll(self, time_s: float) -> list[ButtonEvent]:
        """What time alone fires (a "hold" reached with no new value): `feed` with no value."""
        return self.feed(None, time_s)

    def _on_rise(self, time_s: float) -> list[ButtonEvent]:
        self._pressed_at = time_s
        self._held_fired = False
        if self.trigger in ("press", "above", "below"):
            return [ButtonEvent(self.trigger, time_s)]
        if self.trigger == "toggle":
            self.toggled = not self.toggled
            return [ButtonEvent("toggle", time_s, self.toggled)]
        if self.trigger == "double":
            first = self._first_press_at
            if first is not None and time_s - first <= self.double_s:
                self._first_press_at = None
                return [ButtonEvent("double", time_s)]
            self._first_press_at = time_s
        return []
