"""TimedSwitch patterns for the LEDs and the rumble motor, on an injected clock.

Semantics are the `wiimote/TimedSwitch` message comments' (spec §7, §9.6): ON / OFF set the output
at once and ignore the other fields; NO_CHANGE leaves the output and any running pattern alone;
REPEAT runs `pulse_pattern` (on, off, on, … durations in seconds) `num_cycles` times, or until the
next message for the same output when `num_cycles` is FOREVER. Every pattern starts on, each cycle
starts on again, and the output is off when the pattern ends. A new message for an output cancels
the pattern running on it; outputs are independent.

Limits: a duration is 0 s (the segment is skipped) or at least `MIN_PULSE_S`, so no pattern asks for
more than one edge per output every 20 ms, and the Wii Remote never gets more output reports than
it can take. Where a pattern stands is computed from the time since it started (cycle number and
segment by division and bisection), never by stepping edge by edge, so a poll costs the same after a
1 ms sleep as after an hour's stall, and `num_cycles` needs no cap.
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass

from gateway.messages.wiimote import TimedSwitch

#: Shortest non-zero `pulse_pattern` duration (s); 0 s is allowed and skips its segment.
MIN_PULSE_S = 0.02


@dataclass(slots=True)
class _Pattern:
    ends: tuple[float, ...]  # end of each segment, from the start of a cycle (s)
    cycles: int  # -1: forever
    started: float  # start of the first cycle
    edge: float = 0.0  # when the current segment ends: the next time `poll` has work


def check_switch(switch: TimedSwitch, allow_no_change: bool = True, path: str = "data") -> str | None:
    """Why `switch` cannot run, as an error message naming the field under `path`, or None when it can."""
    mode = switch.switch_mode
    if mode in (TimedSwitch.ON, TimedSwitch.OFF):
        return None
    if mode == TimedSwitch.NO_CHANGE:
        return None if allow_no_change else f"{path}.switch_mode: NO_CHANGE (-2) is not valid here"
    if mode != TimedSwitch.REPEAT:
        return f"{path}.switch_mode: {mode} is not ON (1), OFF (0), NO_CHANGE (-2) or REPEAT (-1)"
    if switch.num_cycles < TimedSwitch.FOREVER:
        return f"{path}.num_cycles: {switch.num_cycles} is neither ≥ 0 nor FOREVER (-1)"
    for index, duration in enumerate(switch.pulse_pattern):
        if not math.isfinite(duration) or duration < 0:
            return f"{path}.pulse_pattern[{index}]: durations must be finite and ≥ 0 s, got {duration!r}"
        if 0 < duration < MIN_PULSE_S:
            return (
                f"{path}.pulse_pattern[{index}]: {duration:g} s is below the minimum duration "
                f"{MIN_PULSE_S:g} s (0 s skips a segment)"
            )
    if switch.num_cycles != 0 and not any(d > 0 for d in switch.pulse_pattern):
        return f"{path}.pulse_pattern: a REPEAT pattern needs at least one duration above 0 s"
    return None


class SwitchBank:
    """`count` on/off outputs, each set directly or by a running pattern; times in seconds."""

    def __init__(self, count: int) -> None:
        self.states = [False] * count
        self._patterns: list[_Pattern | None] = [None] * count

    def running(self, target: int) -> bool:
        """A pattern is running on `target`."""
        return self._patterns[target] is not None

    def set(self, target: int, on: bool) -> None:
        """Set `target` directly, cancelling its pattern."""
        self._patterns[target] = None
        self.states[target] = on

    def apply(self, target: int, switch: TimedSwitch, now: float) -> None:
        """Apply `switch` (already checked with `check_switch`) to output `target` at time `now`."""
        mode = switch.switch_mode
        if mode == TimedSwitch.NO_CHANGE:
            return
        if mode in (TimedSwitch.ON, TimedSwitch.OFF):
            self.set(target, mode == TimedSwitch.ON)
            return
        if switch.num_cycles == 0:
            self.set(target, False)
            return
        pattern = _Pattern(tuple(itertools.accumulate(switch.pulse_pattern)), switch.num_cycles, now)
        self._patterns[target] = pattern
        self._locate(target, pattern, now)

    def next_deadline(self) -> float | None:
        """When the next edge is due, or None with no pattern running."""
        edges = [p.edge for p in self._patterns if p is not None]
        return min(edges) if edges else None

    def poll(self, now: float) -> bool:
        """Bring every output to its state at `now`; True if any changed. Constant work per output."""
        changed = False
        for target, pattern in enumerate(self._patterns):
            if pattern is None or now < pattern.edge:
                continue
            before = self.states[target]
            self._locate(target, pattern, now)
            changed |= self.states[target] != before
        return changed

    def _locate(self, target: int, pattern: _Pattern, now: float) -> None:
        """Set `target` to the segment of `pattern` that `now` falls in, and that segment's end."""
        ends = pattern.ends
        period = ends[-1]
        elapsed = max(now - pattern.started, 0.0)
        cycle = math.floor(elapsed / period)
        if pattern.cycles >= 0 and (cycle >= pattern.cycles or elapsed >= pattern.cycles * period):
            self.set(target, False)
            return
        # Float rounding may put `within` a hair outside [0, period): clamp to the cycle's segments.
        within = elapsed - cycle * period
        index = min(bisect.bisect_right(ends, within), len(ends) - 1)
        edge = pattern.started + cycle * period + ends[index]
        # The deadline must lie ahead of `now`, or the adapter would wake at once, forever.
        pattern.edge = max(edge, math.nextafter(now, math.inf))
        # Even segments are "on" periods, odd ones "off".
        self.states[target] = index % 2 == 0
