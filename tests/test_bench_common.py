"""bench/common.py: the per-thread CPU time the benchmarks read from schedstat."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from bench.common import WAITING, median_interval, thread_seconds_between, thread_times_ns


def spin(cpu_s: float) -> float:
    """Keep this thread on a core for `cpu_s` of its own CPU time; the CPU time it took, in s."""
    started = time.thread_time()
    while time.thread_time() - started < cpu_s:
        pass
    return time.thread_time() - started


def test_a_sleeping_thread_s_cpu_time_is_read_to_well_under_a_scheduler_tick() -> None:
    # schedstat is brought up to date when a thread leaves its core, so it is read exactly while the
    # thread sleeps, as a server between two turns does; the worker spins between two reads of it.
    go, done, release, spent = threading.Event(), threading.Event(), threading.Event(), []

    def work() -> None:
        go.wait()
        spent.append(spin(0.003))  # under a third of a 10 ms tick
        done.set()
        release.wait()

    worker = threading.Thread(target=work)
    worker.start()
    try:
        assert worker.native_id is not None
        time.sleep(0.01)
        before = thread_times_ns(os.getpid())
        go.set()
        done.wait()
        time.sleep(0.01)
        after = thread_times_ns(os.getpid())
    finally:
        release.set()
        worker.join()
    used = thread_seconds_between(
        {worker.native_id: before[worker.native_id]}, {worker.native_id: after[worker.native_id]}
    )
    assert spent[0] <= used < spent[0] + 0.001


def test_a_thread_that_starts_in_the_window_counts_whole_and_waiting_is_another_field() -> None:
    before = thread_times_ns(os.getpid())
    started, release, spent = threading.Event(), threading.Event(), []

    def work() -> None:
        spent.append(spin(0.003))
        started.set()
        release.wait()

    worker = threading.Thread(target=work)
    worker.start()
    try:
        started.wait()
        time.sleep(0.01)
        during = thread_times_ns(os.getpid())
    finally:
        release.set()
        worker.join()
    assert worker.native_id in during
    assert worker.native_id not in before
    assert thread_seconds_between(before, during) >= spent[0]
    assert threading.get_native_id() in thread_times_ns(os.getpid(), WAITING)


def test_a_process_that_is_gone_has_no_threads() -> None:
    assert thread_times_ns(2**22 + 1) == {}


_MAPPED_BLOCKS_PER_READ = """
import ctypes, socket, sys
sys.path.insert(0, sys.argv[1])
from bench.common import hold_read_buffers_in_heap

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2

def mapped_blocks_held_by_reads(reads=20):
    left, right = socket.socketpair()
    kept = []
    before = libc.mallinfo2().hblks
    for _ in range(reads):
        left.send(b"x" * 100)
        kept.append(right.recv(256 * 1024))  # as asyncio reads a stream socket
    return libc.mallinfo2().hblks - before

print(mapped_blocks_held_by_reads(), hold_read_buffers_in_heap(), mapped_blocks_held_by_reads())
"""


def test_after_hold_read_buffers_in_heap_a_socket_read_maps_no_memory_of_its_own() -> None:
    # A fresh interpreter, as a benchmark starts: each 256 KiB read buffer is a mapping of its own
    # (kept mapped, shrunk, while its bytes live), until the thresholds are fixed.
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # glibc's own defaults: no threshold set from the environment.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    out = subprocess.run(
        [sys.executable, "-c", _MAPPED_BLOCKS_PER_READ, repo],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
        env=env,
    ).stdout.split()
    assert out == ["20", "True", "0"]


def test_the_median_s_interval_is_the_sign_test_s_order_statistics() -> None:
    # Known values of the sign test's 95 % interval: ranks (1, n) for n = 6-8, (2, n-1) for 9-11,
    # (3, n-2) for 12-14, (4, n-3) for 15-16; too few values give none.
    for count in range(1, 6):
        assert median_interval(range(count)) is None
    expected_low_rank = {6: 1, 7: 1, 8: 1, 9: 2, 10: 2, 11: 2, 12: 3, 13: 3, 14: 3, 15: 4, 16: 4}
    for count, rank in expected_low_rank.items():
        values = [float(10 * index) for index in range(count, 0, -1)]  # any order
        assert median_interval(values) == (10.0 * rank, 10.0 * (count - rank + 1))


def test_the_median_s_interval_leaves_out_runs_without_a_value_and_widens_with_confidence() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, float("nan"), float("inf")]
    assert median_interval(values) == (2.0, 8.0)  # 9 finite values: ranks 2 and 8
    assert median_interval(values, confidence=0.5) == (3.0, 7.0)
    assert median_interval(values, confidence=0.999) is None


def test_the_median_s_interval_holds_for_thousands_of_values() -> None:
    # 2,000 values: the interval is the median's ±1.96 standard deviations of a binomial, ranks about 956-1,045.
    low, high = median_interval(float(index) for index in range(2000)) or (0.0, 0.0)
    assert 950.0 <= low < 1000.0 < high <= 1050.0
