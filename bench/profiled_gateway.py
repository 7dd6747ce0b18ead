"""`python -m gateway` under cProfile, profiling only between two signals (the benchmark's window).

Usage: python bench/profiled_gateway.py OUT.pstats run --config ...  `START_SIGNAL` (SIGRTMIN+1) starts
the profiler, `STOP_SIGNAL` (SIGRTMIN+2) stops it and writes OUT.pstats; startup, connections and
shutdown stay out of the profile. (Not SIGUSR1/SIGUSR2: the daemon stops in order on those.)
Times are wall-clock; the breakdown leaves out the event loop's waits in epoll (idle time).

`python bench/profiled_gateway.py OUT.pstats SCRIPT.py ARGS...` runs a script the same way instead
(bench/baseline_server.py: the bare servers profiled alike, for bench/tick_calls.py).
"""

from __future__ import annotations

import cProfile
import runpy
import signal
import sys
from pathlib import Path
from types import FrameType

REPO_ROOT = Path(__file__).resolve().parent.parent
#: Signals the daemon leaves alone (gateway.app.STOP_SIGNALS has SIGUSR1 and SIGUSR2).
START_SIGNAL = signal.SIGRTMIN + 1
STOP_SIGNAL = signal.SIGRTMIN + 2
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def main() -> int:
    output = sys.argv[1]
    # The default wall-clock timer: cheap (vDSO), so it distorts less than a CPU-time timer would;
    # the idle waits in epoll are set apart by bench/profile_breakdown.py.
    profiler = cProfile.Profile()

    def start(signum: int, frame: FrameType | None) -> None:
        profiler.enable()

    def stop(signum: int, frame: FrameType | None) -> None:
        profiler.disable()
        profiler.dump_stats(output)

    signal.signal(START_SIGNAL, start)
    signal.signal(STOP_SIGNAL, stop)
    if sys.argv[2].endswith(".py"):
        script = sys.argv[2]
        sys.argv = sys.argv[2:]
        runpy.run_path(script, run_name="__main__")  # a script's own `sys.exit` ends the process
        return 0
    # Imported after the handlers are set, as `python -m gateway` would import it.
    from gateway.cli import main as gateway_main

    sys.argv = ["hwgateway", *sys.argv[2:]]
    return gateway_main()


if __name__ == "__main__":
    sys.exit(main())
