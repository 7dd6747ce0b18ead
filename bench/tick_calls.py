"""Function calls per tick, the gateway against the bare-batched floor: counts a noisy host does not change.

bench/fanout.py's CPU per message moves by 10-40 % from one run to the next on a shared host, so a
gap of a few per cent between the gateway and the floor takes dozens of repeats to see. The calls
each server makes per tick do not move: this runs each side once, in the same scenario, under
cProfile during the window only (bench/profiled_gateway.py, which runs the bare server too), and
counts per tick (messages delivered / clients / topics):

- calls of Python functions, and of built-ins (C functions and methods, a socket `send` among them);
- the Python functions run at least once a tick, and the files they are in: the code a tick touches,
  which runs cold after the few ms the process sleeps between ticks;
- the functions whose calls per tick differ most between the two sides.

Counts, not time: a Python call costs far more than most built-in calls, and the same call costs
more cold than hot (bench/tick_cost.py times that). cProfile slows each side down alike; a side
that falls behind under it coalesces samples, and then a tick is a delivered round, not a device tick.

Run:  scripts/loopback-only.sh .venv/bin/python bench/tick_calls.py [--clients 50] [--transports msgpack,ws]
"""

from __future__ import annotations

import argparse
import asyncio
import pstats
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import positive_float, positive_int  # noqa: E402 - after the path fix above
from bench.fanout import SCENARIOS, Scenario, ServerKind, Transport, run_budget, run_once, side_name  # noqa: E402

#: cProfile's file name for built-in functions and methods.
BUILTIN = "~"
#: A function counts as run each tick from this share of the ticks on (a tick at the window's edge
#: may fall on either side of the profiler's start or stop).
EACH_TICK = 0.9
SIDES: tuple[ServerKind, ...] = ("gateway", "floor")


@dataclass(frozen=True)
class TickCalls:
    """One side's calls per tick, from its profile."""

    kind: ServerKind
    ticks: float
    #: "file:line(name)" -> calls per tick.
    per_tick: dict[str, float]

    @property
    def python_calls(self) -> float:
        """Calls of Python functions per tick."""
        return sum(calls for name, calls in self.per_tick.items() if not name.startswith(BUILTIN))

    @property
    def builtin_calls(self) -> float:
        """Calls of built-in functions and methods per tick."""
        return sum(calls for name, calls in self.per_tick.items() if name.startswith(BUILTIN))

    def each_tick(self) -> list[str]:
        """The Python functions run at least once a tick."""
        return sorted(
            name for name, calls in self.per_tick.items() if not name.startswith(BUILTIN) and calls >= EACH_TICK
        )

    def files(self) -> set[str]:
        """The files of `each_tick`'s functions."""
        return {name.rsplit(":", 1)[0] for name in self.each_tick()}

    def calls_of(self, name: str) -> float:
        """Calls per tick of one function (0 when never called)."""
        return self.per_tick.get(name, 0.0)


#: Where the installed packages and the standard library live (the servers run this interpreter).
_LIBRARY_ROOTS = tuple(Path(sysconfig.get_paths()[name]) for name in ("purelib", "platlib", "stdlib"))


def _short(path: str) -> str:
    """A profile's file name: relative to the installed packages, the standard library or the repository."""
    if path == BUILTIN:
        return path
    file = Path(path)
    for root in (*_LIBRARY_ROOTS, REPO_ROOT):  # the packages first: the venv may lie in the repository
        if file.is_relative_to(root):
            return file.relative_to(root).as_posix()
    return file.name


def tick_calls(kind: ServerKind, profile: Path, ticks: float) -> TickCalls:
    """Calls per tick of each function in `profile` (its ncalls over `ticks`)."""
    if ticks <= 0:
        raise RuntimeError(f"{kind}: no message was delivered in the window, so there is no tick to count")
    stats = pstats.Stats(str(profile))
    per_tick: dict[str, float] = {}
    # Each entry: (primitive calls, all calls, own time, cumulative time, callers).
    for (path, line, name), (_primitive, calls, _own, _cumulative, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        key = f"{_short(path)}:{line}({name})" if path != BUILTIN else f"{BUILTIN}({name})"
        per_tick[key] = per_tick.get(key, 0.0) + calls / ticks
    return TickCalls(kind, ticks, per_tick)


async def profile_side(
    kind: ServerKind, transport: Transport, scenario: Scenario, args: argparse.Namespace, workdir: Path
) -> TickCalls:
    """One run of `kind` under cProfile; its calls per tick."""
    profile = workdir / f"{transport}-{kind}.pstats"
    async with asyncio.timeout(run_budget(args)):
        result = await run_once(kind, transport, 0, scenario, args, workdir, profile=profile)
    return tick_calls(kind, profile, result.received / (scenario.clients * scenario.topics))


def differences(gateway: TickCalls, floor: TickCalls, count: int) -> list[tuple[str, float, float]]:
    """The `count` functions whose calls per tick differ most: (name, gateway's, floor's)."""
    names = set(gateway.per_tick) | set(floor.per_tick)
    ranked = sorted(names, key=lambda name: (-abs(gateway.calls_of(name) - floor.calls_of(name)), name))
    return [(name, gateway.calls_of(name), floor.calls_of(name)) for name in ranked[:count]]


def report(transport: Transport, scenario: Scenario, sides: Sequence[TickCalls], top: int) -> str:
    """A table of both sides, then the functions that make the difference."""
    lines = [
        f"\n{scenario.describe()}, {transport}: calls per tick (a tick: clients x topics messages delivered)",
        "| side | ticks profiled | Python calls | built-in calls | Python functions run each tick | their files |",
        "|---|---|---|---|---|---|",
    ]
    for side in sides:
        lines.append(
            f"| {side_name(transport, side.kind)} | {side.ticks:,.0f} | {side.python_calls:.1f} | "
            f"{side.builtin_calls:.1f} | {len(side.each_tick())} | {len(side.files())} |"
        )
    by_kind = {side.kind: side for side in sides}
    if "gateway" in by_kind and "floor" in by_kind:
        lines.append(f"\nlargest differences, calls per tick (gateway / {side_name(transport, 'floor')}):")
        for name, ours, theirs in differences(by_kind["gateway"], by_kind["floor"], top):
            lines.append(f"  {ours - theirs:+8.1f}  {ours:7.1f} / {theirs:7.1f}  {name}")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> str:
    scenario = args.scenario
    parts = []
    with tempfile.TemporaryDirectory(prefix="hwgw-tick-calls-") as tmp:
        for transport in args.transports:
            sides = [await profile_side(kind, transport, scenario, args, Path(tmp)) for kind in SIDES]
            parts.append(report(transport, scenario, sides, args.top))
    return "\n".join(parts)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    default = SCENARIOS["multi-topic"]
    parser.add_argument("--clients", type=positive_int, default=default.clients, help="connections (default 50)")
    parser.add_argument("--topics", type=positive_int, default=default.topics, help="topics a tick (default 4)")
    parser.add_argument("--rate", type=positive_float, default=default.rate, help="ticks per second (default 250)")
    parser.add_argument("--seconds", type=positive_float, default=4.0, help="profiled window (default 4)")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds before the window (default 1)")
    parser.add_argument("--transports", default="msgpack,ws", help="comma-separated: msgpack, ws")
    parser.add_argument("--top", type=positive_int, default=15, help="differences listed (default 15)")
    args = parser.parse_args(argv)
    transports = [name.strip() for name in args.transports.split(",") if name.strip()]
    unknown = [name for name in transports if name not in ("msgpack", "ws")]
    if unknown or not transports:
        parser.error(f"--transports: msgpack and/or ws, not {args.transports!r}")
    args.transports = transports
    args.scenario = Scenario("custom", args.clients, args.rate, args.topics)
    return args


def main(argv: list[str] | None = None) -> int:
    print(asyncio.run(run(parse_args(argv))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
