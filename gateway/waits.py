"""Waiting that never swallows a cancellation and never outlasts its bound.

Two traps of asyncio on Python 3.11 that can keep a stopping daemon from ever reaching its devices:

- `asyncio.wait_for(aw, timeout)` returns `aw`'s result, and so swallows the cancellation, when the
  awaited thing completes in the same loop pass as the waiting task is cancelled (fixed in 3.12, whose
  `wait_for` is built on `asyncio.timeout`). A loop such as "wait for the wakeup or the next due
  time" then goes round again instead of ending. `wait_event` waits with `asyncio.timeout`, which
  lets every cancellation through.
- Awaiting a task (or a `gather` of tasks) after cancelling it waits until the task really ends: one
  that ignores its cancellation makes the awaiter wait for ever, and `asyncio.timeout` around it
  cannot help (its own cancellation waits for the same task). `finish_within` waits with
  `asyncio.wait`, which returns at the deadline whatever the task does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Coroutine
from typing import Any

log = logging.getLogger(__name__)

#: Seconds a task that overran its bound is given to end once cancelled, before it is left behind.
CANCEL_GRACE_S = 0.25


async def wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    """Wait until `event` is set or `timeout` seconds pass (None: no limit); True when it was set.

    A cancellation of the caller always propagates, even when the event is set at the same moment.
    """
    if timeout is None:
        await event.wait()
        return True
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return event.is_set()
    return True


async def finish_within(name: str, step: Awaitable[Any], seconds: float) -> bool:
    """Run `step` for at most `seconds` (then cancel it, and give it `CANCEL_GRACE_S` to end); True when it completed.

    Never raises for `step`'s failure (logged) and never waits longer than `seconds` plus the grace,
    even when `step` ignores its cancellation: such a task is left behind (logged), still running.
    Used by the daemon's stop, where one stuck part must not hold up the others.
    """
    task = asyncio.ensure_future(step)
    done, _ = await asyncio.wait({task}, timeout=max(seconds, 0.0))
    if not done:
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=CANCEL_GRACE_S)
        if not done:
            log.error("%s did not end within %.1f s, nor when cancelled; left behind", name, seconds)
        else:
            log.error("%s did not end within %.1f s; cancelled", name, seconds)
        return False
    if task.cancelled():
        log.error("%s was cancelled", name)
        return False
    error = task.exception()
    if error is not None:
        log.error("%s failed: %s: %s", name, type(error).__name__, error, exc_info=error)
        return False
    return True


#: Seconds the tasks still running when the daemon's main coroutine returns are given to end.
LEFTOVER_S = 1.0


def run(main: Coroutine[Any, Any, int]) -> int:
    """`asyncio.run(main)`, except that what is left running afterwards cannot keep the process alive.

    `asyncio.run` cancels the tasks left and then waits for every one of them to end: a task that
    ignores its cancellation would hold the exit for ever, after the devices were already put in
    their safe state. Here such tasks (and the default executor's threads) get `LEFTOVER_S` seconds.
    """
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return loop.run_until_complete(main)
    finally:
        try:
            leftovers = asyncio.all_tasks(loop)
            for task in leftovers:
                task.cancel()
            if leftovers:
                loop.run_until_complete(asyncio.wait(leftovers, timeout=LEFTOVER_S))
                stuck = [task.get_name() for task in leftovers if not task.done()]
                if stuck:
                    log.error("tasks %s ignored their cancellation at exit; left behind", ", ".join(stuck))
            loop.run_until_complete(loop.shutdown_asyncgens())
            executor = loop.create_task(loop.shutdown_default_executor())
            loop.run_until_complete(asyncio.wait({executor}, timeout=LEFTOVER_S))
        finally:
            asyncio.set_event_loop(None)
            loop.close()
