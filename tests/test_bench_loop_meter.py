"""bench/loop_meter.py on a clock the test moves: it names the callback that took longest, and only while installed."""

from __future__ import annotations

import asyncio

import pytest

from bench.loop_meter import LoopMeter


def test_the_meter_names_the_callback_that_took_longest() -> None:
    now = [0.0]
    meter = LoopMeter(clock=lambda: now[0])

    async def spin() -> None:
        now[0] += 0.020  # 20 ms of "CPU" in one step of this task

    async def quick() -> None:
        now[0] += 0.001

    async def both() -> None:
        await asyncio.gather(asyncio.create_task(quick()), asyncio.create_task(spin()))

    meter.install()
    try:
        asyncio.run(both())
    finally:
        meter.uninstall()
    assert meter.worst == pytest.approx(0.020)
    assert "spin" in meter.worst_what
    meter.reset()
    assert (meter.worst, meter.worst_what) == (0.0, "")
    asyncio.run(spin())  # uninstalled: nothing is timed
    assert meter.worst == 0.0
