"""Bindings at run time: sample -> command latency, release and source loss -> safe output, CPU per binding.

Run inside the loopback namespace (nothing listens; it only keeps the figures comparable):

    scripts/loopback-only.sh .venv/bin/python bench/bindings.py
    scripts/loopback-only.sh .venv/bin/python bench/bindings.py --events 200 --seconds 5 --counts 1,10,50

Everything runs in this process, on the gateway's real parts: a `Bus`, a `Supervisor`, the
`CommandRouter` with its arbiter, and `gateway.bindings.manager.Bindings` built from `[bindings]`
tables read by the real config reader. The source is a device of this benchmark that publishes a
`creos_messages/ControllerState` on `<id>/state` when told (as a gamepad adapter does), and the
target a device that records the `time.monotonic()` at which each `hwgateway/ThymioMotors` command
reaches its `handle_command`: "the command on the device" is the adapter receiving it, after the
binding's timer, the router's validation and arbitration.

- latency: the source publishes a new stick value at a random moment with the deadman held; the
  time until the first command carrying its value reaches the target (p50/p99, ms);
- release -> safe: the deadman released at a random moment; the time until the safe output (0, 0)
  reaches the target, in output periods (p50/p99/max);
- source loss -> safe: the source device's availability leaves "connected" at a random moment; the
  same, in output periods;
- CPU per binding: N bindings at 50 Hz, each with its own source publishing at 50 Hz (a pad's rate)
  with the deadman held, against the same sources with no binding; the process's CPU time over a
  window, the difference divided by N (% of one core per binding).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.bindings.manager import Bindings
from gateway.bindings.spec import parse_bindings_section
from gateway.bus import Bus
from gateway.commands import CommandRouter
from gateway.core.adapter import Adapter, Command, DeviceContext
from gateway.core.config import DeviceConfig, SupervisorConfig
from gateway.messages.common import Time
from gateway.messages.creos import ControllerState
from gateway.supervisor import Supervisor

MOTORS = "hwgateway/ThymioMotors"
L1 = 4  # the seed's button index of L1


@dataclass(frozen=True, slots=True)
class NoOptions:
    """The benchmark's devices have no options."""


class BenchSource(Adapter[NoOptions]):
    """A controller whose state the benchmark sets (`send`), and whose availability it can drop (`lose`)."""

    kind = "bench-source"
    options_class = NoOptions
    publishes = ("creos_messages/ControllerState",)

    async def run(self) -> None:
        self.ctx.set_status("connected")
        await asyncio.Event().wait()

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        return None

    def send(self, throttle: float, deadman: bool) -> float:
        """Publish a state (left stick y = `throttle`, L1 = `deadman`); its `time.monotonic()`."""
        buttons = tuple(1 if index == L1 and deadman else 0 for index in range(17))
        axes = (0.0, throttle, 0.0, 0.0, 0.0, 0.0)
        at = time.monotonic()
        self.ctx.publish("state", ControllerState(Time.from_seconds(time.time()), axes, buttons))
        return at

    def lose(self) -> float:
        """The device is lost (as a gamepad unplugged); its `time.monotonic()`."""
        at = time.monotonic()
        self.ctx.set_status("disconnected", "benchmark: lost")
        return at


class BenchTarget(Adapter[NoOptions]):
    """A motor device recording when each command reaches it, and with which values."""

    kind = "bench-target"
    options_class = NoOptions
    accepts = (MOTORS,)

    def __init__(self, ctx: DeviceContext, options: NoOptions) -> None:
        super().__init__(ctx, options)
        self.received: list[tuple[float, int, int]] = []
        self.arrived = asyncio.Event()

    async def run(self) -> None:
        self.ctx.set_status("connected")
        await asyncio.Event().wait()

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        self.received.append((time.monotonic(), command.message.left, command.message.right))
        self.arrived.set()
        return None

    async def first(self, since: float, match: Any, timeout: float = 5.0) -> float:
        """The arrival time of the first command after `since` whose (left, right) satisfies `match`."""
        deadline = time.monotonic() + timeout
        index = 0
        while time.monotonic() < deadline:
            while index < len(self.received):
                at, left, right = self.received[index]
                index += 1
                if at >= since and match(left, right):
                    return at
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), max(0.0, deadline - time.monotonic()))
        raise TimeoutError("no matching command")


def binding_table(name: str, source: str, target: str, rate_hz: float, binding_set: str = "") -> dict[str, Any]:
    """A tank binding: the left stick's y drives both motors (500 at full) while L1 is held."""
    return {
        "set": binding_set,
        "source": source,
        "target": target,
        "mode": "tank",
        "deadman": "state.buttons.l1",
        "rate_hz": rate_hz,
        "timeout_s": 0.5,
        "inputs": {"left": {"path": "state.axes.left_y"}, "right": {"path": "state.axes.left_y"}},
        "outputs": {
            "left": {"command": MOTORS, "field": "left", "max": 500},
            "right": {"command": MOTORS, "field": "right", "max": 500},
        },
    }


class Rig:
    """N sources, N targets and (optionally) N bindings pairing them, running in this event loop."""

    def __init__(self, count: int, rate_hz: float, with_bindings: bool = True, sets: tuple[str, ...] = ()) -> None:
        """`sets`: the binding set of each binding, in order (none: no sets)."""
        self.bus = Bus()
        self.supervisor = Supervisor(self.bus, SupervisorConfig(backoff_initial_s=0.05), [])
        self.router = CommandRouter(self.supervisor, lambda device, outcome, seconds: None)
        self.sources: list[BenchSource] = []
        self.targets: list[BenchTarget] = []
        for index in range(count):
            self.sources.append(self._add(f"src-{index}", BenchSource))
            self.targets.append(self._add(f"dst-{index}", BenchTarget))
        self.bindings = Bindings(self.supervisor, self.router, self.bus)
        if with_bindings:
            tables = {
                f"b-{i}": binding_table(f"b-{i}", f"src-{i}", f"dst-{i}", rate_hz, sets[i] if sets else "")
                for i in range(count)
            }
            section, problems = parse_bindings_section(tables)
            if problems:
                raise SystemExit("; ".join(str(problem) for problem in problems))
            self.bindings.start(section)

    def _add(self, device_id: str, cls: type[Any]) -> Any:
        made: list[Any] = []

        def build(ctx: DeviceContext, options: NoOptions) -> Any:
            made.append(cls(ctx, options))
            return made[0]

        self.supervisor.add(DeviceConfig(device_id, cls.kind, True, NoOptions()), build)
        return made[0]

    async def start(self) -> None:
        self.supervisor.start()
        while any(handle.status != "connected" for handle in self.supervisor.devices.values()):  # noqa: ASYNC110 (no event to wait on)
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        await self.supervisor.stop()


def percentiles(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99, ordered[-1]


async def timing(events: int, rate_hz: float) -> None:
    """Latency, release -> safe and loss -> safe for one binding at `rate_hz`."""
    period = 1.0 / rate_hz
    rig = Rig(1, rate_hz)
    await rig.start()
    source, target = rig.sources[0], rig.targets[0]
    latencies, releases, losses = [], [], []
    try:
        for event in range(events):
            # Drive: the deadman held, a new stick value at a random moment within a period.
            value = round(random.uniform(0.2, 0.9), 3)
            await asyncio.sleep(random.uniform(0, period))
            sent = source.send(value, True)
            want = int(value * 500)
            arrived = await target.first(sent, lambda left, right, want=want: left == want)
            latencies.append(arrived - sent)
            # Release the deadman (the stick stays up) at a random moment.
            await asyncio.sleep(random.uniform(0, period))
            released = source.send(value, False)
            arrived = await target.first(released, lambda left, right: (left, right) == (0, 0))
            releases.append((arrived - released) / period)
            if event % 4 == 0:  # source loss, on a quarter of the events (the supervisor restarts it)
                source.send(value, True)
                await target.first(time.monotonic(), lambda left, right, want=want: left == want)
                await asyncio.sleep(random.uniform(0, period))
                lost = source.lose()
                arrived = await target.first(lost, lambda left, right: (left, right) == (0, 0))
                losses.append((arrived - lost) / period)
                source.ctx.set_status("connected")
    finally:
        await rig.stop()
    p50, p99, worst = percentiles([latency * 1000 for latency in latencies])
    print(f"sample -> command on the device at {rate_hz:g} Hz ({len(latencies)} samples): "
          f"p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {worst:.2f} ms (one period: {period * 1000:.1f} ms)")  # fmt: skip
    for name, values in (("deadman release -> safe output", releases), ("source loss -> safe output", losses)):
        p50, p99, worst = percentiles(values)
        print(f"{name} ({len(values)}): p50 {p50:.2f}, p99 {p99:.2f}, max {worst:.2f} output periods")


async def cpu(count: int, seconds: float, rate_hz: float) -> tuple[float, float]:
    """Process CPU (% of one core) over `seconds` with `count` sources at `rate_hz`, without and with bindings."""
    results = []
    for with_bindings in (False, True):
        rig = Rig(count, rate_hz, with_bindings)
        await rig.start()
        stop = asyncio.Event()

        async def publish(rig: Rig = rig, stop: asyncio.Event = stop) -> None:
            period = 1.0 / rate_hz
            due = asyncio.get_running_loop().time()
            while not stop.is_set():
                for index, source in enumerate(rig.sources):
                    source.send(0.5 + 0.001 * (index % 7), True)
                due += period
                await asyncio.sleep(max(0.0, due - asyncio.get_running_loop().time()))

        publisher = asyncio.create_task(publish())
        await asyncio.sleep(1.0)  # warm-up
        cpu_before, wall_before = time.process_time(), time.monotonic()
        await asyncio.sleep(seconds)
        used = (time.process_time() - cpu_before) / (time.monotonic() - wall_before) * 100
        stop.set()
        await publisher
        sent = sum(target.received.__len__() for target in rig.targets)
        await rig.stop()
        if with_bindings and sent == 0:
            raise SystemExit("no command reached the targets")
        results.append(used)
    return results[0], results[1]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200, help="deadman presses and releases to time")
    parser.add_argument("--rate", type=float, default=50.0, help="output rate of the bindings (Hz)")
    parser.add_argument("--seconds", type=float, default=5.0, help="CPU measuring window (s)")
    parser.add_argument("--counts", default="1,10,50", help="numbers of bindings for the CPU figure")
    arguments = parser.parse_args()
    await timing(arguments.events, arguments.rate)
    for count in (int(item) for item in arguments.counts.split(",")):
        bare, bound = await cpu(count, arguments.seconds, arguments.rate)
        print(
            f"{count} binding(s) at {arguments.rate:g} Hz, sources at {arguments.rate:g} Hz: process CPU "
            f"{bare:.1f} % without bindings, {bound:.1f} % with: {(bound - bare) / count:.2f} % of a core per binding"
        )


if __name__ == "__main__":
    asyncio.run(main())
