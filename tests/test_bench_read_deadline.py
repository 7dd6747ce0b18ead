"""bench/read_deadline.py: every way reads the same data, the measurement runs, bad arguments are refused."""

from __future__ import annotations

import asyncio
import math

import pytest

from bench import read_deadline


@pytest.mark.parametrize("way", read_deadline.WAYS)
async def test_every_way_reads_what_was_fed(way: str) -> None:
    read, reader = read_deadline.reader_for(way), asyncio.StreamReader()
    reader.feed_data(b"abc")
    assert await read(reader) == b"abc"


def test_measures_each_way_per_read_and_per_tick() -> None:
    result = read_deadline.measure(reads=20, ticks=3, clients=3, repeats=1)
    assert set(result) == set(read_deadline.WAYS)
    for way in read_deadline.WAYS:
        for kind in ("read", "tick"):
            assert math.isfinite(result[way][kind])
            assert result[way][kind] > 0.0  # µs of CPU, measured (how many is the bench's report)


def test_prints_a_line_per_measure(capsys: pytest.CaptureFixture[str]) -> None:
    assert read_deadline.main(["--reads", "10", "--ticks", "2", "--clients", "2", "--repeats", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("per read: none ")
    assert lines[2].startswith("per timer wake-up, 2 connections waiting: none ")
    assert all("timeout_at" in line and "shared" in line for line in lines[1:3])


@pytest.mark.parametrize("bad", [["--reads", "0"], ["--ticks", "-1"], ["--clients", "0"], ["--repeats", "0"]])
def test_refuses_arguments_that_measure_nothing(bad: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        read_deadline.main(bad)
    assert exit_info.value.code == 2
    assert "must be positive" in capsys.readouterr().err
