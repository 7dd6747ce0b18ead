"""bench/send_floor.py: a real measurement on loopback, and clear refusals of bad arguments."""

from __future__ import annotations

import math

import pytest

from bench import send_floor


def test_measures_a_positive_cpu_cost_per_send() -> None:
    cost = send_floor.measure(clients=3, rate=200.0, size=100, seconds=0.3)
    assert math.isfinite(cost)
    assert cost > 0.0  # µs, measured (how many is the bench's report, not a test's bound)


def test_prints_the_median_per_send_and_per_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert send_floor.main(["--clients", "2", "--rate", "200", "--seconds", "0.2", "--repeats", "1"]) == 0
    line = capsys.readouterr().out
    assert line.startswith("2 clients x 200 writes/s of 932 B: ")
    assert "µs per message at 4 per send" in line


@pytest.mark.parametrize("bad", [["--clients", "0"], ["--rate", "0"], ["--bytes", "-1"], ["--repeats", "0"]])
def test_refuses_arguments_that_measure_nothing(bad: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        send_floor.main(bad)
    assert exit_info.value.code == 2
    assert "must be positive" in capsys.readouterr().err
