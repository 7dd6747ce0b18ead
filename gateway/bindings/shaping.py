"""Input shaping of one controller input, and the slew limiter of one output (pure functions, no clock).

Inputs are normalized: a self-centring axis in [-1, 1], a trigger in [0, 1], a button 0 or 1.
Shaping runs in this order (`shape_input`), as WPILib teaches:

1. deadzone: axial (`axial_deadzone`, each input alone) or radial (`radial_deadzone`, a stick's two
   inputs together, so a diagonal is not cut into a cross); both rescale what is left of the range
   so the output starts at 0 at the deadzone's edge (no jump) and still reaches 1 at full travel;
2. curve: `expo` (a blend of x and x³, gentle near the centre) or a piecewise-linear `curve`;
3. invert;
4. scale, or the "turbo" scale while the turbo button is held; the result is clamped to [-1, 1].

The slew limiter (`SlewLimiter`) then caps how fast an output (in target units) may change, with a
rate for speeding up (moving away from 0) and another for slowing down (moving towards 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

DeadzoneShape = Literal["axial", "radial"]


@dataclass(frozen=True, slots=True)
class InputShape:
    """How one input is shaped (every value normalized, unitless).

    `deadzone` in [0, 0.95): the part of the travel around the centre that reads 0. `deadzone_shape`
    "axial" applies it to this input alone; "radial" applies it to the stick formed with the input
    named `pair` (which must say "radial" with the same deadzone and name this one back).
    `expo` in [0, 1]: 0 linear, 1 cubic. `curve`: (input, output) points of |x| -> |y|, input
    strictly increasing in [0, 1], output in [0, 1], starting at (0, 0); the sign is kept.
    `invert` flips the sign. `scale` in [0, 10] multiplies the result; `turbo_scale` replaces it
    while the binding's turbo input is held (None: the same as `scale`).
    """

    deadzone: float = 0.0
    deadzone_shape: DeadzoneShape = "axial"
    pair: str = ""
    expo: float = 0.0
    curve: tuple[tuple[float, float], ...] = ()
    invert: bool = False
    scale: float = 1.0
    turbo_scale: float | None = None


def clamp(value: float, low: float, high: float) -> float:
    """`value` limited to [low, high]."""
    return low if value < low else high if value > high else value


def axial_deadzone(value: float, deadzone: float) -> float:
    """`value` (clamped to [-1, 1]) with |value| <= deadzone read as 0 and the rest rescaled to [0, 1].

    Continuous at the edge: |value| = deadzone gives 0, |value| = 1 gives 1.
    """
    value = clamp(value, -1.0, 1.0)
    magnitude = abs(value)
    if magnitude <= deadzone:
        return 0.0
    return math.copysign((magnitude - deadzone) / (1.0 - deadzone), value)


def radial_deadzone(x: float, y: float, deadzone: float) -> tuple[float, float]:
    """A stick (x, y) with its length <= deadzone read as (0, 0), the rest rescaled keeping the direction.

    The length is capped at 1 (a square stick's corner reads as full travel); continuous at the edge.
    """
    x, y = clamp(x, -1.0, 1.0), clamp(y, -1.0, 1.0)
    length = math.hypot(x, y)
    if length <= deadzone:
        return 0.0, 0.0
    factor = (min(length, 1.0) - deadzone) / ((1.0 - deadzone) * length)
    return x * factor, y * factor


def expo(value: float, amount: float) -> float:
    """The classic RC expo: (1 - amount)·x + amount·x³; monotonic, keeps -1, 0 and 1 where they are."""
    return (1.0 - amount) * value + amount * value * value * value


def piecewise(value: float, points: Sequence[tuple[float, float]]) -> float:
    """|value| mapped through the piecewise-linear `points` ((0, 0) first), the sign kept; flat past the last point."""
    magnitude = abs(value)
    previous_x, previous_y = points[0]
    for x, y in points[1:]:
        if magnitude <= x:
            fraction = (magnitude - previous_x) / (x - previous_x)
            return math.copysign(previous_y + fraction * (y - previous_y), value)
        previous_x, previous_y = x, y
    return math.copysign(previous_y, value)


def shape_input(value: float, shape: InputShape, turbo: bool = False, deadzone_applied: bool = False) -> float:
    """One input through deadzone, curve, invert and scale (or turbo scale), clamped to [-1, 1].

    `deadzone_applied`: the radial deadzone was already applied to this input and its pair.
    """
    if not deadzone_applied:
        value = axial_deadzone(value, shape.deadzone)
    value = clamp(value, -1.0, 1.0)
    if shape.curve:
        value = piecewise(value, shape.curve)
    elif shape.expo:
        value = expo(value, shape.expo)
    if shape.invert:
        value = -value
    scale = shape.turbo_scale if turbo and shape.turbo_scale is not None else shape.scale
    return clamp(value * scale, -1.0, 1.0)


class SlewLimiter:
    """Caps how fast one output changes: `up_per_s` away from 0, `down_per_s` towards 0 (units per second).

    Either rate may be `math.inf` (no limit). A target across 0 is reached by slowing down to 0 at
    the down rate, then speeding up at the up rate for the rest of the step. `reset` sets the value
    at once (the safe output is never slewed).
    """

    def __init__(self, up_per_s: float = math.inf, down_per_s: float = math.inf, value: float = 0.0) -> None:
        if not (up_per_s > 0 and down_per_s > 0):
            raise ValueError("slew rates must be > 0 (math.inf: no limit)")
        self.up_per_s = up_per_s
        self.down_per_s = down_per_s
        self.value = value

    def reset(self, value: float = 0.0) -> None:
        """Jump to `value` (the safe output, or a fresh start)."""
        self.value = value

    def step(self, target: float, dt_s: float) -> float:
        """Move towards `target` for `dt_s` seconds (negative counts as 0) within the rates; return the new value."""
        dt_s = max(dt_s, 0.0)
        current = self.value
        if target == current:
            return current
        towards_zero = current != 0.0 and (target * current < 0.0 or abs(target) < abs(current))
        if towards_zero:
            crossing = target * current < 0.0
            stop_at = 0.0 if crossing else target
            room = _room(self.down_per_s, dt_s)
            if abs(current - stop_at) > room:
                self.value = current - math.copysign(room, current)
                return self.value
            if not crossing:
                self.value = target
                return target
            # Reached 0 within the step: speed up the other way with the time left.
            dt_s -= abs(current) / self.down_per_s
            current = 0.0
        room = _room(self.up_per_s, dt_s)
        self.value = target if abs(target - current) <= room else current + math.copysign(room, target - current)
        return self.value


def _room(rate_per_s: float, dt_s: float) -> float:
    """How far `rate_per_s` moves in `dt_s`; no limit stays no limit even in no time (inf · 0 is NaN)."""
    return math.inf if math.isinf(rate_per_s) else rate_per_s * dt_s
