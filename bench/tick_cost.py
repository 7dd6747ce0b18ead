"""What making and rendering one tick's samples costs, hot and cold: the gateway's path against the floor's.

The multi-topic scenario of bench/fanout.py publishes one sim state on 4 topics 250 times a second,
and each tick runs once for all the clients; between ticks the process sleeps 4 ms while the
clients and the kernel run. This measures that once-a-tick work in one process, without sockets:

- `gateway`: `controller_state` (the sim device), `Bus.publish` on each topic and the native face's
  msgpack render of each sample (`to_plain`, the `state` envelope, the packer), as the daemon runs them;
- `floor`: bench/baseline_server.py's own tick, a `state` dict per topic packed by `msgpack.packb`;
- `gateway without its device`: the gateway's tick less the sim device's part (the state is made
  once, before): what the gateway itself adds to a device's sample.

Each call is timed on its own (`time.perf_counter`, median of `--calls`). `hot` calls follow each
other; before each `cold` call `--evict-mb` of memory is copied and the thread sleeps 1 ms, so the
code and data it touches are out of the CPU caches, as after the 4 ms a tick waits. The ratio of
the cold medians says how much of a gap between the two sides comes from the size of the code run
once a tick rather than from the work `timeit` sees.

Run:  .venv/bin/python bench/tick_cost.py [--calls 400] [--repeats 3] [--evict-mb 32]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.baseline_server import encode_msgpack, state_message, topics_of  # noqa: E402 - after the path fix
from bench.common import positive_int  # noqa: E402
from devices.sim.controller import controller_state  # noqa: E402
from gateway.bus import Bus  # noqa: E402
from gateway.faces.native.messages import renderer  # noqa: E402

TOPICS = 4


def gateway_tick() -> Callable[[], None]:
    """The gateway's once-a-tick work for `TOPICS` topics: sample, publish, render each once."""
    bus, render, topics = Bus(), renderer("msgpack"), topics_of(TOPICS)

    def tick() -> None:
        stamp = time.time()
        state = controller_state(stamp)
        for topic in topics:
            render(bus.publish(topic, state, stamp))

    return tick


def fanout_tick() -> Callable[[], None]:
    """The gateway's once-a-tick work less its device's: publish and render a state made beforehand."""
    bus, render, topics = Bus(), renderer("msgpack"), topics_of(TOPICS)
    state = controller_state(time.time())

    def tick() -> None:
        stamp = time.time()
        for topic in topics:
            render(bus.publish(topic, state, stamp))

    return tick


def floor_tick() -> Callable[[], None]:
    """The bare-batched floor's once-a-tick work: a packed `state` message per topic."""
    topics = topics_of(TOPICS)
    seq = 0

    def tick() -> None:
        nonlocal seq
        seq += 1
        stamp = time.time()
        for topic in topics:
            encode_msgpack(state_message(seq, stamp, topic))

    return tick


def median_call_us(tick: Callable[[], None], calls: int, evict: bytearray | None) -> float:
    """Median µs of one `tick()`; with `evict`, each call follows a copy of it and a 1 ms sleep."""
    durations = []
    for _ in range(calls):
        if evict is not None:
            bytes(evict)
            time.sleep(0.001)
        started = time.perf_counter()
        tick()
        durations.append(time.perf_counter() - started)
    return statistics.median(durations) * 1e6


def measure(calls: int, repeats: int, evict_mb: int) -> dict[str, dict[str, float]]:
    """Median over `repeats` of each side's median call, hot and cold, in µs."""
    sides = {"gateway": gateway_tick(), "gateway without its device": fanout_tick(), "floor": floor_tick()}
    evict = bytearray(evict_mb << 20)
    runs: dict[str, dict[str, list[float]]] = {side: {"hot": [], "cold": []} for side in sides}
    for _ in range(repeats):
        for side, tick in sides.items():  # interleaved, so a noisy moment falls on both
            runs[side]["hot"].append(median_call_us(tick, calls, None))
            runs[side]["cold"].append(median_call_us(tick, calls, evict))
    return {side: {kind: statistics.median(values) for kind, values in kinds.items()} for side, kinds in runs.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=positive_int, default=400, help="calls timed per side, kind and repeat")
    parser.add_argument("--repeats", type=positive_int, default=3, help="interleaved repeats (median taken)")
    parser.add_argument("--evict-mb", type=positive_int, default=32, help="MB copied before each cold call")
    args = parser.parse_args(argv)
    result = measure(args.calls, args.repeats, args.evict_mb)
    gateway, fanout, floor = result["gateway"], result["gateway without its device"], result["floor"]
    print(f"one tick of {TOPICS} topics, µs (median of {args.repeats} repeats of {args.calls} calls):")
    for kind in ("hot", "cold"):
        print(
            f"{kind}: gateway {gateway[kind]:.1f}, floor {floor[kind]:.1f}, "
            f"gateway - floor {gateway[kind] - floor[kind]:.1f}, ratio {gateway[kind] / floor[kind]:.2f}x; "
            f"without its device {fanout[kind]:.1f}, {fanout[kind] / floor[kind]:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
