"""Mixing shaped inputs (normalized, [-1, 1]) into outputs, and outputs into a device's units.

- `arcade`: one stick drives a differential robot: throttle forward, steer to the right turns
  right (the left wheel faster). When a wheel would exceed full speed, both are scaled down by the
  same factor, so the turn ratio (left : right) is kept instead of clipping one wheel.
- `tank`: each input drives its wheel.
- direct: an input is an output (axis -> field).

`to_units` then maps a normalized output to the target field's units (`full_scale`) and clamps it
to the field's range.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.bindings.shaping import clamp


@dataclass(frozen=True, slots=True)
class Mixed:
    """Normalized outputs by name, each in [-1, 1], and whether saturation scaled or clipped them."""

    values: dict[str, float]
    saturated: bool


def arcade(throttle: float, steer: float) -> Mixed:
    """Differential drive from a throttle and a steer in [-1, 1]: left = t + s, right = t - s, ratio kept.

    When |left| or |right| exceeds 1, both are divided by the larger, so neither passes 1 and
    left/right stays what it was.
    """
    left, right = throttle + steer, throttle - steer
    peak = max(abs(left), abs(right))
    if peak > 1.0:
        return Mixed({"left": left / peak, "right": right / peak}, True)
    return Mixed({"left": left, "right": right}, False)


def tank(left: float, right: float) -> Mixed:
    """Differential drive from one input per wheel, each clamped to [-1, 1]."""
    left_c, right_c = clamp(left, -1.0, 1.0), clamp(right, -1.0, 1.0)
    return Mixed({"left": left_c, "right": right_c}, (left_c, right_c) != (left, right))


def direct(values: dict[str, float]) -> Mixed:
    """Each input is the output of the same name, clamped to [-1, 1]."""
    clamped = {name: clamp(value, -1.0, 1.0) for name, value in values.items()}
    return Mixed(clamped, clamped != values)


def to_units(value: float, full_scale: float, minimum: float, maximum: float) -> tuple[float, bool]:
    """A normalized `value` times `full_scale` (target units), clamped to [minimum, maximum], and whether it was."""
    scaled = value * full_scale
    limited = clamp(scaled, minimum, maximum)
    return limited, limited != scaled
