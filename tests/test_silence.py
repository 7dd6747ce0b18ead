"""Silence of a link counted in the time the gateway was awake (gateway/silence.py)."""

from __future__ import annotations

from gateway.silence import MAX_TICKS_PER_STEP, SilenceClock

PERIOD_S = 0.1
LIMIT_S = 3.0


def ticks_until_silent(clock: SilenceClock, start: float, step_s: float, last_received: float) -> float:
    """Tick every `step_s` from `start` with nothing heard; the time at which the link counts as silent."""
    now = start
    while not clock.tick(now, last_received):
        now += step_s
        assert now - start < 100, "never counted as silent"
    return now


def test_a_link_heard_every_tick_is_never_silent() -> None:
    clock = SilenceClock(LIMIT_S, PERIOD_S, now=0.0)
    for tick in range(1, 200):
        now = tick * PERIOD_S
        assert not clock.tick(now, last_received=now - 0.05)
    assert abs(clock.silent_s - 0.05) < 1e-9


def test_a_silent_link_is_lost_after_the_limit_at_the_normal_pace() -> None:
    clock = SilenceClock(LIMIT_S, PERIOD_S, now=0.0)
    assert not clock.tick(0.1, last_received=0.05)
    lost_at = ticks_until_silent(clock, 0.2, PERIOD_S, last_received=0.05)
    assert 0.05 + LIMIT_S < lost_at <= 0.05 + LIMIT_S + 2 * PERIOD_S


def test_waking_from_a_stall_longer_than_the_limit_leaves_the_link_time_to_answer() -> None:
    clock = SilenceClock(LIMIT_S, PERIOD_S, now=0.0)
    assert not clock.tick(0.1, last_received=0.1)
    # Stopped for 5 s: the first tick after counts two periods, not 5 s.
    assert not clock.tick(5.1, last_received=0.1)
    assert abs(clock.silent_s - MAX_TICKS_PER_STEP * PERIOD_S) < 1e-9
    # Half a second later the answer to the keep-alive sent on waking is read: the link is alive.
    for tick in range(1, 6):
        assert not clock.tick(5.1 + tick * PERIOD_S, last_received=0.1)
    assert not clock.tick(5.7, last_received=5.65)
    assert clock.silent_s < PERIOD_S


def test_a_robot_that_stays_silent_after_a_stall_is_still_lost() -> None:
    clock = SilenceClock(LIMIT_S, PERIOD_S, now=0.0)
    assert not clock.tick(5.0, last_received=0.0)
    lost_at = ticks_until_silent(clock, 5.1, PERIOD_S, last_received=0.0)
    assert lost_at <= 5.0 + LIMIT_S + PERIOD_S  # the limit, counted from the wake-up


def test_a_loop_that_is_always_late_still_finds_a_silent_link() -> None:
    # Ticks every second instead of every 0.1 s (a starved host): each counts two periods at most,
    # so detection takes longer in wall-clock time, but it comes.
    clock = SilenceClock(LIMIT_S, PERIOD_S, now=0.0)
    lost_at = ticks_until_silent(clock, 1.0, 1.0, last_received=0.0)
    ticks_needed = LIMIT_S / (MAX_TICKS_PER_STEP * PERIOD_S)  # 15 ticks of 0.2 s, a tick of 1 s each
    assert abs(lost_at - ticks_needed) <= 1.0
