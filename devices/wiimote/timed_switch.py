"""TimedSwitch patterns for the LEDs and the rumble motor, on an injected clock.

Semantics are the `wiimote/TimedSwitch` message comments' (spec §7, §9.6): ON / OFF set the output
at once and ignore the other fields; NO_CHANGE leaves the output and any running pattern alone;
REPEAT runs `pulse_pattern` (on, off, on, … durations in seconds) `num_cycles` times, or until the
next message for the same output when `num_cycles` is FOREVER. Every pattern starts on, each cycle
starts on again, and the output is off when the pattern ends. A new message for an output cancels
the pattern running on it; outputs are independent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gateway.messages.wiimote import TimedSwitch


@dataclass(slots=True)
class _Pattern:
    durations: tuple[float, ...]
    cycles_left: int  # -1: forever
    started: float  # start of the current cycle
    index: int = 0  # current segment


def check_switch(switch: TimedSwitch, allow_no_change: bool = True) -> str | None:
    """The reason `switch` cannot run, or None when it can."""
    mode = switch.switch_mode
    if mode in (TimedSwitch.ON, TimedSwitch.OFF):
        return None
    if mode == TimedSwitch.NO_CHANGE:
        return None if allow_no_change else "NO_CHANGE is not valid here"
    if mode != TimedSwitch.REPEAT:
        return f"switch_mode {mode} is not ON (1), OFF (0), NO_CHANGE (-2) or REPEAT (-1)"
    if switch.num_cycles < TimedSwitch.FOREVER:
        return f"num_cycles {switch.num_cycles} is neither ≥ 0 nor FOREVER (-1)"
    if switch.num_cycles != 0 and not any(d > 0 for d in switch.pulse_pattern):
        return "a REPEAT pulse_pattern needs at least one duration above 0 s"
    if any(not math.isfinite(d) or d < 0 for d in switch.pulse_pattern):
        return "pulse_pattern durations must be finite and ≥ 0 s"
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
        self._patterns[target] = _Pattern(tuple(switch.pulse_pattern), switch.num_cycles, now)
        self.states[target] = True
        self.poll(now)

    def next_deadline(self) -> float | None:
        """When the next edge is due, or None with no pattern running."""
        edges = [self._edge(p) for p in self._patterns if p is not None]
        return min(edges) if edges else None

    def poll(self, now: float) -> bool:
        """Advance every pattern to `now`; True if any output changed."""
        changed = False
        for target, pattern in enumerate(self._patterns):
            if pattern is None:
                continue
            before = self.states[target]
            self._advance(target, pattern, now)
            changed |= self.states[target] != before
        return changed

    @staticmethod
    def _edge(pattern: _Pattern) -> float:
        return pattern.started + sum(pattern.durations[: pattern.index + 1])

    def _advance(self, target: int, pattern: _Pattern, now: float) -> None:
        period = sum(pattern.durations)
        if pattern.cycles_left < 0 and now - pattern.started > period:
            # A FOREVER pattern far behind (a stalled loop) skips whole cycles instead of replaying them.
            pattern.started += math.floor((now - pattern.started) / period) * period
            pattern.index = 0
        while self._edge(pattern) <= now:
            pattern.index += 1
            if pattern.index >= len(pattern.durations):
                if pattern.cycles_left > 0:
                    pattern.cycles_left -= 1
                if pattern.cycles_left == 0:
                    self._patterns[target] = None
                    self.states[target] = False
                    return
                pattern.started += sum(pattern.durations)
                pattern.index = 0
        # Even segments are "on" periods, odd ones "off".
        self.states[target] = pattern.index % 2 == 0
