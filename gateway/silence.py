"""How long a link or a node has been silent, counted only in the time the gateway was awake to hear it.

A gateway that was stopped (SIGSTOP, a long pause, a starved host) for longer than a link's
timeout wakes to find the robot's last word older than that timeout, though the robot may have
answered all along: its bytes wait unread, or its answer to the keep-alive sent on waking has not
come back yet. Wall-clock silence would then end a healthy link. So each watchdog tick counts at
most `MAX_TICKS_PER_STEP` periods of silence, whatever time really passed since the tick before.
The watchdogs that judge silence use this clock: Kortex's RPC link and Aseba's nodes.
"""

from __future__ import annotations

#: Periods of silence one tick may count: a tick that comes late counts this many at most.
MAX_TICKS_PER_STEP = 2


class SilenceClock:
    """Seconds of silence a watchdog ticking every `period_s` has been awake for; see the module docstring."""

    def __init__(self, limit_s: float, period_s: float, now: float) -> None:
        """`limit_s`: silence that ends the link (s); `now`: the clock's time when watching starts (s)."""
        self._limit_s = limit_s
        self._max_step_s = MAX_TICKS_PER_STEP * period_s
        self._last_tick = now
        self.silent_s = 0.0

    def tick(self, now: float, last_received: float) -> bool:
        """Count the time since the last tick; True once the link was silent past the limit.

        `now` and `last_received` (when the robot was last heard) are on the same clock, in s.
        """
        step = min(now - self._last_tick, self._max_step_s)
        if last_received > self._last_tick:  # heard since the last tick: silent only since then
            self.silent_s = max(0.0, min(now - last_received, step))
        else:
            self.silent_s += step
        self._last_tick = now
        return self.silent_s > self._limit_s
