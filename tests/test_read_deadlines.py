"""The read deadlines of stream connections, kept by one timer per loop (gateway/servers/read_deadlines.py)."""

from __future__ import annotations

import asyncio
import gc
import math
import time
import weakref

import pytest

from gateway.servers.read_deadlines import DeadlinePassed, read_deadlines


async def _read_until_deadline(reader: asyncio.StreamReader) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(DeadlinePassed) as passed:
        await reader.read(100)
    return passed.value.which, time.monotonic() - started


async def test_a_read_past_its_deadline_fails_naming_it() -> None:
    reader = asyncio.StreamReader()
    deadline = read_deadlines().watch(reader)
    deadline.arm(time.monotonic() + 0.05, "idle")
    which, waited = await _read_until_deadline(reader)
    assert which == "idle"
    assert 0.04 <= waited < 1.0
    deadline.close()


async def test_a_deadline_moved_later_does_not_fire_at_its_old_time() -> None:
    reader = asyncio.StreamReader()
    deadline = read_deadlines().watch(reader)
    deadline.arm(time.monotonic() + 0.05, "idle")
    deadline.arm(time.monotonic() + 0.3, "idle")  # as the next read restarts the idle time
    read = asyncio.ensure_future(reader.read(100))
    await asyncio.sleep(0.15)
    assert not read.done()
    with pytest.raises(DeadlinePassed):
        await asyncio.wait_for(read, 1.0)
    deadline.close()


async def test_an_earlier_deadline_armed_later_fires_first() -> None:
    watch = read_deadlines()
    late_reader, early_reader = asyncio.StreamReader(), asyncio.StreamReader()
    late, early = watch.watch(late_reader), watch.watch(early_reader)
    late.arm(time.monotonic() + 5.0, "auth")
    early.arm(time.monotonic() + 0.05, "partial")
    late_read = asyncio.ensure_future(late_reader.read(100))
    which, waited = await _read_until_deadline(early_reader)
    assert (which, waited < 1.0) == ("partial", True)
    assert not late_read.done()
    late_read.cancel()
    late.close()
    early.close()


async def test_a_disarmed_deadline_and_a_forgotten_one_never_fire() -> None:
    """Between reads (the face handling what came) there is no deadline, and none once reading ended."""
    watch = read_deadlines()
    between, gone = asyncio.StreamReader(), asyncio.StreamReader()
    between_deadline, gone_deadline = watch.watch(between), watch.watch(gone)
    between_deadline.arm(time.monotonic() + 0.05, "idle")
    gone_deadline.arm(time.monotonic() + 0.05, "idle")
    between_deadline.disarm()
    gone_deadline.close()
    await asyncio.sleep(0.15)
    between.feed_data(b"x")
    gone.feed_data(b"y")
    assert await between.read(100) == b"x"
    assert await gone.read(100) == b"y"
    assert between_deadline.when == math.inf
    between_deadline.close()


async def test_many_connections_keep_one_timer_in_the_loop() -> None:
    """50 readers under idle deadlines add one timer to the loop's heap, and reads moving them add none."""
    loop = asyncio.get_running_loop()
    before = len(loop._scheduled)  # type: ignore[attr-defined]
    readers = [asyncio.StreamReader() for _ in range(50)]
    deadlines = [read_deadlines().watch(reader) for reader in readers]
    for round_ in range(3):
        for deadline in deadlines:
            deadline.arm(time.monotonic() + 30.0 + round_, "idle")
        await asyncio.sleep(0)
        assert len(loop._scheduled) == before + 1  # type: ignore[attr-defined]
    for deadline in deadlines:
        deadline.close()


def test_a_finished_loop_is_not_kept_by_its_deadlines_or_its_flusher() -> None:
    """Both per-loop registries are keyed weakly by the loop: neither may hold it (tests run thousands)."""
    from gateway.faces import outbox

    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def use_both() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        deadline = read_deadlines().watch(asyncio.StreamReader())
        deadline.arm(time.monotonic() + 60.0, "idle")
        deadline.close()  # as `read_stream` does when its connection ends; the timer stays pending
        outbox._flusher(asyncio.get_running_loop())

    for _ in range(3):
        asyncio.run(use_both())
    gc.collect()
    assert [loop() for loop in loops] == [None, None, None]
