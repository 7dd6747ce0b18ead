"""TimedSwitch patterns for LEDs and rumble, on a controllable clock."""

from __future__ import annotations

import itertools

import pytest

from devices.wiimote.timed_switch import MIN_PULSE_S, SwitchBank, check_switch
from gateway.messages.wiimote import MAX_PULSE_SEGMENTS, TimedSwitch

ON = TimedSwitch(TimedSwitch.ON)
OFF = TimedSwitch(TimedSwitch.OFF)
NO_CHANGE = TimedSwitch(TimedSwitch.NO_CHANGE)


def repeat(cycles: int, *pattern: float) -> TimedSwitch:
    return TimedSwitch(TimedSwitch.REPEAT, cycles, pattern)


def trace(bank: SwitchBank, target: int, times: list[float]) -> list[bool]:
    out = []
    for t in times:
        bank.poll(t)
        out.append(bank.states[target])
    return out


def test_on_off_ignore_cycles_and_pattern() -> None:
    bank = SwitchBank(2)
    bank.apply(0, TimedSwitch(TimedSwitch.ON, 5, (0.1, 0.1)), 0.0)
    assert bank.states == [True, False]
    assert not bank.running(0)
    assert bank.next_deadline() is None
    bank.apply(0, TimedSwitch(TimedSwitch.OFF, -1, (1.0,)), 1.0)
    assert bank.states == [False, False]


def test_repeat_runs_n_cycles_starting_on_and_ending_off() -> None:
    bank = SwitchBank(1)
    bank.apply(0, repeat(2, 1.0, 0.5), 10.0)
    assert bank.states[0]
    assert bank.next_deadline() == 11.0
    times = [10.5, 11.0, 11.4, 11.5, 12.4, 12.5, 12.9, 13.0, 20.0]
    assert trace(bank, 0, times) == [True, False, False, True, True, False, False, False, False]
    assert not bank.running(0)
    assert bank.next_deadline() is None


def test_odd_pattern_ends_off_after_its_last_on_period() -> None:
    bank = SwitchBank(1)
    bank.apply(0, repeat(1, 0.2, 0.2, 0.2), 0.0)
    assert trace(bank, 0, [0.1, 0.3, 0.5, 0.65, 1.0]) == [True, False, True, False, False]


def test_forever_runs_until_a_new_message_replaces_it() -> None:
    bank = SwitchBank(1)
    bank.apply(0, repeat(TimedSwitch.FOREVER, 1.0, 1.0), 0.0)
    assert trace(bank, 0, [0.5, 1.5, 2.5, 3.5, 1000.5, 1001.5]) == [True, False, True, False, True, False]
    bank.apply(0, ON, 1002.2)
    assert bank.states[0]
    assert not bank.running(0)
    assert trace(bank, 0, [1003.0, 5000.0]) == [True, True]


def test_new_message_cancels_only_its_own_target() -> None:
    bank = SwitchBank(3)
    bank.apply(0, repeat(-1, 0.5, 0.5), 0.0)
    bank.apply(1, repeat(-1, 0.25, 0.25), 0.0)
    bank.apply(0, repeat(1, 2.0), 0.3)  # replaces LED 0's pattern, restarting on
    assert trace(bank, 0, [0.6, 2.2, 2.4]) == [True, True, False]
    assert trace(bank, 1, [2.3, 2.6]) == [False, True]  # 2.3 s is 0.3 s into a 0.5 s cycle
    assert bank.states[2] is False


def test_no_change_leaves_output_and_pattern() -> None:
    bank = SwitchBank(1)
    bank.apply(0, repeat(-1, 1.0, 1.0), 0.0)
    bank.apply(0, NO_CHANGE, 0.5)
    assert bank.running(0)
    assert trace(bank, 0, [1.5, 2.5]) == [False, True]


def test_zero_cycles_switches_off() -> None:
    bank = SwitchBank(1)
    bank.set(0, True)
    bank.apply(0, repeat(0, 1.0), 0.0)
    assert bank.states == [False]
    assert not bank.running(0)


def test_poll_reports_changes() -> None:
    bank = SwitchBank(1)
    bank.apply(0, repeat(1, 1.0), 0.0)
    assert bank.poll(0.5) is False
    assert bank.poll(1.0) is True


@pytest.mark.parametrize(
    ("switch", "reason"),
    [
        (TimedSwitch(5), "data.switch_mode: 5"),
        (repeat(-2, 1.0), "data.num_cycles: -2"),
        (repeat(-1), "at least one duration above 0"),
        (repeat(3, 0.0, 0.0), "at least one duration above 0"),
        (repeat(1, 1.0, -1.0), "data.pulse_pattern[1]: durations must be finite and ≥ 0"),
        (repeat(-1, 1e-300), "data.pulse_pattern[0]: 1e-300 s is below the minimum duration 0.02 s"),
        (repeat(2**31 - 1, 1e-6, 1e-6), "data.pulse_pattern[0]: 1e-06 s is below the minimum duration 0.02 s"),
        (repeat(-1, 1.0, 0.0, MIN_PULSE_S / 2), "data.pulse_pattern[2]: 0.01 s is below the minimum"),
    ],
)
def test_invalid_switches(switch: TimedSwitch, reason: str) -> None:
    message = check_switch(switch)
    assert message is not None
    assert reason in message


def test_valid_switches() -> None:
    valid = (ON, OFF, NO_CHANGE, repeat(0), repeat(-1, 0.0, 1.0), repeat(2, 0.5), repeat(2**31 - 1, MIN_PULSE_S))
    for switch in valid:
        assert check_switch(switch) is None
    assert check_switch(NO_CHANGE, allow_no_change=False) is not None
    assert check_switch(TimedSwitch(7), path="data.leds[2]") == (
        "data.leds[2].switch_mode: 7 is not ON (1), OFF (0), NO_CHANGE (-2) or REPEAT (-1)"
    )


def test_a_poll_after_a_long_stall_lands_on_the_right_edge_at_once() -> None:
    # Edges are computed, not stepped through: 2**31 - 1 cycles of the shortest pattern, polled
    # across most of it, cost one computation per poll.
    bank = SwitchBank(1)
    bank.apply(0, repeat(2**31 - 1, MIN_PULSE_S, MIN_PULSE_S), 0.0)
    period = 2 * MIN_PULSE_S
    cycle = 2**30
    assert trace(bank, 0, [cycle * period + MIN_PULSE_S / 2]) == [True]
    assert bank.next_deadline() == pytest.approx(cycle * period + MIN_PULSE_S)
    assert trace(bank, 0, [cycle * period + 1.5 * MIN_PULSE_S]) == [False]
    assert trace(bank, 0, [(2**31 - 1) * period]) == [False]
    assert not bank.running(0)


def test_forever_far_from_its_start_and_from_the_epoch() -> None:
    bank = SwitchBank(1)
    start = 1.7e9  # a wall-clock-sized time: the arithmetic keeps sub-millisecond precision there
    bank.apply(0, repeat(TimedSwitch.FOREVER, 0.25, 0.75), start)
    day = 86400.0
    assert trace(bank, 0, [start + day + 0.1, start + day + 0.3, start + day + 1.1]) == [True, False, True]
    deadline = bank.next_deadline()
    assert deadline is not None
    assert deadline == pytest.approx(start + day + 1.25)


def test_the_next_deadline_always_lies_ahead_of_the_poll() -> None:
    # An edge that float rounding puts at or before `now` would make the adapter spin.
    bank = SwitchBank(1)
    bank.apply(0, repeat(TimedSwitch.FOREVER, 0.1, 0.2, 0.0, 0.3), 0.0)
    now = 0.0
    for _ in range(2000):
        now += 0.1
        bank.poll(now)
        deadline = bank.next_deadline()
        assert deadline is not None
        assert deadline > now


def test_zero_length_segments_are_skipped() -> None:
    bank = SwitchBank(1)
    bank.apply(0, repeat(1, 0.0, 1.0, 0.5), 0.0)  # on for 0 s, off 1 s, on 0.5 s
    assert bank.states == [False]
    assert trace(bank, 0, [0.5, 1.2, 1.6]) == [False, True, False]


def test_the_longest_pattern_finds_each_segment() -> None:
    # The longest pattern the schema takes, of 20 ms to 1 s segments; each is found by bisection.
    durations = tuple(MIN_PULSE_S if i % 3 else 1.0 for i in range(MAX_PULSE_SEGMENTS))
    bank = SwitchBank(1)
    bank.apply(0, repeat(2, *durations), 100.0)
    ends = list(itertools.accumulate(durations))
    for index in (0, 1, 2, 3, 127, MAX_PULSE_SEGMENTS - 2, MAX_PULSE_SEGMENTS - 1):
        middle = 100.0 + ends[index] - durations[index] / 2
        assert trace(bank, 0, [middle]) == [index % 2 == 0], index
        assert bank.next_deadline() == pytest.approx(100.0 + ends[index])
    second_cycle = 100.0 + ends[-1] + durations[0] / 2
    assert trace(bank, 0, [second_cycle, 100.0 + 2 * ends[-1]]) == [True, False]
    assert not bank.running(0)
