"""What each device kind costs the daemon: at idle (no client), and per client subscribed to everything.

Method (issue 42, item 5): for each kind, a fresh daemon (`python -m gateway run`) with one device of
that kind, configured as in the demo (gateway/demo.toml), or the demo's whole configuration
(`demo`), or no device at all (`none`). CPU is the daemon's process tree (the daemon, the processes it
started and those it has reaped, such as the Kortex simulator's cyclic process), read by psutil:

1. idle: after `--warmup` seconds, `--seconds` with no client;
2. clients: `--clients` msgpack clients subscribe to `**` (everything the device publishes), and after
   the warm-up the same window again. Per client = (clients - idle) / clients, with the messages per
   second each client received.

Each kind runs `--repeats` times, kinds in rotating order; medians are printed. The host's load
average is printed before and after: on a shared machine, compare kinds within one run.

Run:  scripts/loopback-only.sh .venv/bin/python bench/idle_cost.py [--kinds sim,kortex,demo] \
          [--seconds 5] [--clients 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import statistics
import sys
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.fanout import (  # noqa: E402 - after the path fix above
    LOG_TAIL_LINES,
    START_TIMEOUT_S,
    MsgpackConnection,
    Tally,
    Window,
    _drain_output,
    _live_pids,
    _wait_listening,
    ports_from_listening,
    stop_process,
)

DEMO_TOML = REPO_ROOT / "gateway" / "demo.toml"
SERVER = (
    '[server]\nhost = "127.0.0.1"\nhttp_port = 0\nmsgpack_port = 0\nunix_socket = ""\nmax_clients_per_peer = 1000\n\n'
)

#: One device of each kind, as the demo configures it (the name is the device id).
KINDS: dict[str, str] = {
    "none": "",
    "sim": '[devices.sim-pad]\nkind = "sim"\nrate_hz = 100.0\nleds = 1\n',
    "sim-10hz": '[devices.sim-lamp]\nkind = "sim"\nrate_hz = 10.0\nleds = 8\n',
    "gamepad": '[devices.gamepad-demo]\nkind = "gamepad"\nvirtual = true\nvirtual_motion = "demo"\n',
    "kortex": ('[devices.arm-demo]\nkind = "kortex"\napi = "kortex3"\nsimulate = true\npublish_rate_hz = 30.0\n'),
    "kortex-100hz": (
        '[devices.arm-demo]\nkind = "kortex"\napi = "kortex3"\nsimulate = true\npublish_rate_hz = 30.0\n'
        "cyclic_rate_hz = 100.0\n"
    ),
    "kortex-nospin": (
        '[devices.arm-demo]\nkind = "kortex"\napi = "kortex3"\nsimulate = true\npublish_rate_hz = 30.0\n'
        "cyclic_spin_us = 0.0\n"
    ),
    "aseba": '[devices.thymio-demo]\nkind = "aseba"\nsimulate = true\nsim_motion = "demo"\n',
    "wiimote": (
        '[devices.wiimote-demo]\nkind = "wiimote"\ntransport = "sim"\nsim_motionplus = true\n'
        'sim_extension = "nunchuk"\nsim_motion = "demo"\n'
    ),
    "microbit": (
        '[devices.microbit-demo]\nkind = "microbit"\nsimulate = true\nsim_motion = "demo"\n'
        "accelerometer_period_ms = 80\nmagnetometer_period_ms = 160\n"
    ),
    "lego_hub": (
        '[devices.lego-demo]\nkind = "lego_hub"\nsimulate = true\nsim_hub = "technic"\n'
        'sim_attached = ["A=motor", "B=color_distance"]\n'
    ),
}
ALL = (*KINDS, "demo")


def demo_config() -> str:
    """The demo's configuration with free ports and no Unix socket (every face it enables stays on)."""
    text = DEMO_TOML.read_text()
    text = re.sub(r"(?m)^(\w*port) = \d+", r"\1 = 0", text)
    return text.replace("[server]\n", '[server]\nunix_socket = ""\nmax_clients_per_peer = 1000\n', 1)


def config_for(kind: str) -> str:
    """The TOML of a daemon with one device of `kind` (or the demo's)."""
    return demo_config() if kind == "demo" else SERVER + KINDS[kind]


# -- CPU of a process tree ----------------------------------------------------------------------


def tree_cpu_s(root: psutil.Process) -> float:
    """CPU seconds of `root`, the children it has reaped, and its live descendants."""
    times = root.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for child in root.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            child_times = child.cpu_times()
            total += child_times.user + child_times.system
    return total


async def cpu_pct_over(root: psutil.Process, seconds: float) -> float:
    """The tree's CPU over the next `seconds`, in % of one core."""
    before, started = tree_cpu_s(root), time.monotonic()
    await asyncio.sleep(seconds)
    return 100.0 * (tree_cpu_s(root) - before) / (time.monotonic() - started)


# -- one kind ---------------------------------------------------------------------------------


@dataclass
class Sample:
    """One run of one kind: CPU in % of one core, messages per second per client."""

    kind: str
    idle_pct: float
    clients_pct: float
    clients: int
    msgs_per_client: float

    @property
    def per_client_pct(self) -> float:
        return (self.clients_pct - self.idle_pct) / self.clients if self.clients else float("nan")


async def measure(kind: str, args: argparse.Namespace, workdir: Path) -> Sample:
    """Start a daemon with `kind`, measure it idle, then with `args.clients` clients of everything."""
    config = workdir / f"{kind}.toml"
    config.write_text(config_for(kind))
    proc = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "gateway", "run", "--config", str(config), "--log-format", "json"],
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        limit=1 << 20,
    )
    _live_pids.add(proc.pid)
    tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
    problems: list[str] = []
    drain: asyncio.Task[None] | None = None
    connections: list[MsgpackConnection] = []
    pumps: list[asyncio.Task[None]] = []
    try:
        async with asyncio.timeout(START_TIMEOUT_S * 2):
            listening = await _wait_listening(proc, tail, problems)
        port, _ = ports_from_listening("gateway", "msgpack", listening)
        drain = asyncio.create_task(_drain_output(proc, tail, problems))
        root = psutil.Process(proc.pid)
        await asyncio.sleep(args.warmup)
        idle = await cpu_pct_over(root, args.seconds)
        window = Window()
        for _ in range(args.clients):
            connection = await MsgpackConnection.open(port, Tally(window))
            await connection.subscribe(["**"])
            connections.append(connection)
        pumps = [asyncio.create_task(c.pump()) for c in connections]
        await asyncio.sleep(args.warmup)
        window.start = time.time()
        busy = await cpu_pct_over(root, args.seconds)
        window.end = time.time()
        received = sum(c.tally.received for c in connections)
        per_client = received / args.seconds / args.clients if args.clients else 0.0
        return Sample(kind, idle, busy, args.clients, per_client)
    finally:
        for pump in pumps:
            pump.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)
        await stop_process(proc)
        if drain is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(drain, 2.0)


def report(samples: Sequence[Sample]) -> str:
    """One row per kind: medians of idle %, % with clients, % per client, msg/s per client."""
    header = "kind | idle % of a core | with clients % | per client % | msg/s per client | runs"
    lines = [header, "---|---|---|---|---|---"]
    for kind in dict.fromkeys(s.kind for s in samples):
        runs = [s for s in samples if s.kind == kind]
        idle = statistics.median(s.idle_pct for s in runs)
        busy = statistics.median(s.clients_pct for s in runs)
        per = statistics.median(s.per_client_pct for s in runs)
        rate = statistics.median(s.msgs_per_client for s in runs)
        lines.append(f"{kind} | {idle:.1f} | {busy:.1f} | {per:.2f} | {rate:,.0f} | {len(runs)}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--kinds", default=",".join(ALL), help=f"comma-separated, of: {', '.join(ALL)}")
    parser.add_argument("--clients", type=int, default=10, help="clients of everything (default 10)")
    parser.add_argument("--seconds", type=float, default=5.0, help="each window (default 5)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before each window (default 2)")
    parser.add_argument("--repeats", type=int, default=1, help="runs per kind, kinds rotating (default 1)")
    args = parser.parse_args(argv)
    args.kinds = [k for k in args.kinds.split(",") if k]
    unknown = [k for k in args.kinds if k not in ALL]
    if unknown:
        parser.error(f"unknown kinds: {', '.join(unknown)}")
    return args


async def run(args: argparse.Namespace) -> int:
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    samples: list[Sample] = []
    with tempfile.TemporaryDirectory(prefix="idle-cost-") as tmp:
        for repeat in range(args.repeats):
            shift = repeat % len(args.kinds)
            for kind in args.kinds[shift:] + args.kinds[:shift]:
                sample = await measure(kind, args, Path(tmp))
                samples.append(sample)
                print(
                    f"[{repeat + 1}/{args.repeats}] {kind}: idle {sample.idle_pct:.1f} %, "
                    f"{sample.clients} clients {sample.clients_pct:.1f} % ({sample.per_client_pct:.2f} % each, "
                    f"{sample.msgs_per_client:,.0f} msg/s each)",
                    flush=True,
                )
    print(report(samples))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return asyncio.run(run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
