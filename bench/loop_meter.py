"""The longest callback an asyncio loop runs, in the loop thread's CPU time: a wrapper around `Handle._run`.

CPU time of the loop's own thread (`time.thread_time` by default) counts what a callback computes
however loaded the machine is, while another process or thread taking the CPU does not count.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class LoopMeter:
    """The longest callback since `reset`, in `clock` seconds, and what it was.

    `install` wraps `asyncio.Handle._run` for every loop of the process (the wrapper reads `clock`
    around each callback); `uninstall` restores it.
    """

    def __init__(self, clock: Callable[[], float] = time.thread_time) -> None:
        self.worst = 0.0
        self.worst_what = ""
        self._clock = clock
        self._original: Callable[[asyncio.Handle], None] | None = None

    def install(self) -> None:
        """Time every callback from now on."""
        original = asyncio.Handle._run
        self._original = original
        meter = self

        def timed_run(handle: asyncio.Handle) -> None:
            started = meter._clock()
            try:
                original(handle)
            finally:
                spent = meter._clock() - started
                if spent > meter.worst:
                    meter.worst, meter.worst_what = spent, describe(handle)

        setattr(asyncio.Handle, "_run", timed_run)  # noqa: B010 - mypy refuses assigning to a method

    def uninstall(self) -> None:
        """Stop timing callbacks."""
        if self._original is not None:
            setattr(asyncio.Handle, "_run", self._original)  # noqa: B010
            self._original = None

    def reset(self) -> None:
        """Forget the worst callback so far."""
        self.worst, self.worst_what = 0.0, ""


def describe(handle: asyncio.Handle) -> str:
    """The task a handle steps (its coroutine names the code), else the handle itself."""
    owner = getattr(handle._callback, "__self__", None)  # type: ignore[attr-defined]
    return repr(owner if isinstance(owner, asyncio.Task) else handle)
