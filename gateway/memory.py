"""Keeping the daemon's memory bounded: what it frees goes back to the OS, and the collector stays cheap.

Three things, each measured with `bench/soak.py` (1,000 hostile connections):

- glibc's allocator: its mmap threshold grows to the largest block ever freed (up to 32 MiB), so
  after one 1 MiB request buffer is freed, every later one comes from the heap, where freed
  memory is rarely handed back. `tune_allocator` fixes the threshold above the 256 KiB asyncio
  reads with, so request-sized buffers are mapped and unmapped on their own.
- the cyclic garbage collector: a full collection walks every object the daemon ever made, tens of
  milliseconds with the schemas and device tables loaded, all of it event-loop stall.
  `freeze_startup_objects` moves what start-up made out of the collector's sight.
- `release_soon`: after a connection that held a large unfinished request closes, the freed heap
  pages are trimmed (`malloc_trim`) once per interval at most.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import sys
import time

log = logging.getLogger(__name__)

#: glibc `mallopt` parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: Blocks of at least this many bytes get their own mapping, returned to the OS when freed (bytes).
#: Above asyncio's 256 KiB read buffer, which every socket read allocates and shrinks at once.
MMAP_THRESHOLD_BYTES = 512 * 1024
#: Free memory at the top of the heap beyond this is returned to the OS at once (bytes).
TRIM_THRESHOLD_BYTES = 1024 * 1024
#: At most one trim per this many seconds.
RELEASE_INTERVAL_S = 1.0

_libc = ctypes.CDLL(None) if sys.platform == "linux" else None
_mallopt = getattr(_libc, "mallopt", None)
_malloc_trim = getattr(_libc, "malloc_trim", None)
_release_pending = False
_last_release = -float("inf")


def tune_allocator() -> bool:
    """Fix glibc's mmap and trim thresholds (see the module's docstring); False where there is no glibc."""
    if _mallopt is None:
        return False
    done = bool(_mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        _mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    )
    if not done:
        log.info("mallopt refused the mmap/trim thresholds; freed buffers may stay on the heap")
    return done


def freeze_startup_objects() -> None:
    """Collect once, then exempt every object alive now from later collections (`gc.freeze`).

    Call it once the daemon is up: modules, schemas and configuration live as long as the process,
    and walking them on every full collection would stall the event loop for nothing.
    """
    gc.collect()
    gc.freeze()


def release_soon() -> None:
    """Trim the heap shortly (once per `RELEASE_INTERVAL_S` at most), after a large buffer was freed."""
    global _release_pending
    if _release_pending or _malloc_trim is None:
        return
    _release_pending = True

    def release() -> None:
        global _release_pending, _last_release
        _release_pending = False
        _last_release = time.monotonic()
        assert _malloc_trim is not None
        _malloc_trim(0)

    delay = max(0.1, _last_release + RELEASE_INTERVAL_S - time.monotonic())
    asyncio.get_running_loop().call_later(delay, release)
