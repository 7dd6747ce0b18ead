"""gateway.waits: a cancellation is never swallowed, a bounded step never outlasts its bound."""

from __future__ import annotations

import asyncio
import logging

import pytest

from gateway import waits


async def test_a_cancellation_that_comes_with_the_event_is_not_swallowed() -> None:
    # asyncio.wait_for(event.wait(), timeout) returns True here on Python 3.11: the exporter of the
    # MQTT bridge then went round its loop again instead of ending, and the daemon's stop hung.
    event = asyncio.Event()
    waiting = asyncio.create_task(waits.wait_event(event, 30.0))
    await asyncio.sleep(0)  # it waits now
    event.set()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting


async def test_wait_event_says_whether_the_event_was_set() -> None:
    event = asyncio.Event()
    assert await waits.wait_event(event, 0.01) is False
    asyncio.get_running_loop().call_later(0.01, event.set)
    assert await waits.wait_event(event, 30.0) is True
    assert await waits.wait_event(event, None) is True


async def _ignore_cancellation(release: asyncio.Event) -> None:
    """A step that goes on waiting when cancelled (as a swallowed cancellation does), until released."""
    while not release.is_set():
        try:
            await release.wait()
        except asyncio.CancelledError:
            continue


async def test_finish_within_returns_at_its_bound_even_if_the_step_ignores_cancellation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = asyncio.Event()
    stubborn = asyncio.ensure_future(_ignore_cancellation(release))
    try:
        async with asyncio.timeout(10):  # without the bound this would wait for ever
            assert await waits.finish_within("the stubborn step", stubborn, 0.05) is False
        assert not stubborn.done()
        assert "the stubborn step did not end within 0.1 s, nor when cancelled; left behind" in caplog.text
    finally:
        release.set()
        await stubborn


async def test_finish_within_reports_success_failure_and_a_cancellation_that_worked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def fail() -> None:
        raise RuntimeError("broken")

    assert await waits.finish_within("a quick step", asyncio.sleep(0), 1.0) is True
    with caplog.at_level(logging.ERROR):
        assert await waits.finish_within("a failing step", fail(), 1.0) is False
        assert await waits.finish_within("a slow step", asyncio.sleep(30), 0.01) is False
    assert "a failing step failed: RuntimeError: broken" in caplog.text
    assert "a slow step did not end within 0.0 s; cancelled" in caplog.text


def test_run_returns_although_a_task_left_behind_ignores_its_cancellation() -> None:
    # asyncio.run would wait for such a task for ever, after the daemon's stop was complete.
    left: list[asyncio.Task[None]] = []

    async def main() -> int:
        left.append(asyncio.create_task(_ignore_cancellation(asyncio.Event()), name="stubborn"))
        await asyncio.sleep(0)
        return 7

    assert waits.run(main()) == 7
    assert not left[0].done()  # it was left behind, not waited for
