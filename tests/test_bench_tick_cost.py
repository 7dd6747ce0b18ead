"""bench/tick_cost.py: both sides make the same messages, the measurement runs, bad arguments are refused."""

from __future__ import annotations

import math

import msgpack
import pytest

from bench import tick_cost
from bench.baseline_server import encode_msgpack, state_message
from devices.sim.controller import controller_state
from gateway.bus import Bus
from gateway.faces.native.messages import renderer


def test_the_gateway_side_renders_the_floors_message_shape() -> None:
    bus = Bus()
    sample = bus.publish("bench-1/state", controller_state(1.5), 1.5)
    ours = msgpack.unpackb(renderer("msgpack")(sample))
    floor = msgpack.unpackb(encode_msgpack(state_message(1, 1.5)))
    assert ours.keys() == floor.keys()
    assert ours["data"].keys() == floor["data"].keys()
    assert len(ours["data"]["axes"]) == len(floor["data"]["axes"])
    assert len(ours["data"]["buttons"]) == len(floor["data"]["buttons"])


def test_measures_hot_and_cold_for_both_sides() -> None:
    result = tick_cost.measure(calls=5, repeats=1, evict_mb=1)
    for side in ("gateway", "gateway without its device", "floor"):
        for kind in ("hot", "cold"):
            assert math.isfinite(result[side][kind])
            assert result[side][kind] > 0.0  # µs, measured (how many is the bench's report)


def test_prints_hot_and_cold_lines(capsys: pytest.CaptureFixture[str]) -> None:
    assert tick_cost.main(["--calls", "3", "--repeats", "1", "--evict-mb", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("one tick of 4 topics")
    assert lines[1].startswith("hot: gateway ")
    assert lines[2].startswith("cold: gateway ")
    assert all("without its device" in line for line in lines[1:3])


@pytest.mark.parametrize("bad", [["--calls", "0"], ["--repeats", "-1"], ["--evict-mb", "0"]])
def test_refuses_arguments_that_measure_nothing(bad: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        tick_cost.main(bad)
    assert exit_info.value.code == 2
    assert "must be positive" in capsys.readouterr().err
