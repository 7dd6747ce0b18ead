"""TimedSwitch patterns for LEDs and rumble, on a controllable clock."""

from __future__ import annotations

import pytest

from devices.wiimote.timed_switch import SwitchBank, check_switch
from gateway.messages.wiimote import TimedSwitch

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
        (TimedSwitch(5), "switch_mode 5"),
        (repeat(-2, 1.0), "num_cycles -2"),
        (repeat(-1), "at least one duration above 0"),
        (repeat(3, 0.0, 0.0), "at least one duration above 0"),
        (repeat(1, 1.0, -1.0), "finite and ≥ 0"),
    ],
)
def test_invalid_switches(switch: TimedSwitch, reason: str) -> None:
    message = check_switch(switch)
    assert message is not None
    assert reason in message


def test_valid_switches() -> None:
    for switch in (ON, OFF, NO_CHANGE, repeat(0), repeat(-1, 0.0, 1.0), repeat(2, 0.5)):
        assert check_switch(switch) is None
    assert check_switch(NO_CHANGE, allow_no_change=False) is not None
