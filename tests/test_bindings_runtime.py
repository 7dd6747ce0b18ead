"""The bindings' runtime on the gateway's real core (bus, supervisor, router, arbiter), with devices of the test's own.

The source publishes the controller states the test sets; the target records each command and can
refuse or hold them (a device that did not confirm, a slow one). Waits count the binding's timer
ticks (output periods) or commands, never wall-clock time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import replace
from typing import Any

import pytest

from bench.bindings import L1, MOTORS, BenchSource, BenchTarget, NoOptions, Rig, binding_table
from gateway.bindings.device import BindingDevice
from gateway.bindings.spec import parse_bindings_section
from gateway.core.adapter import Command, DeviceContext
from gateway.errors import DeviceUnavailable
from gateway.messages.common import Time
from gateway.messages.creos import ControllerState

pytestmark = pytest.mark.timeout(60)

WAIT_S = 15.0
#: The buttons of a controller state with L1 (the bench binding's deadman) held.
DEADMAN_HELD = tuple(1 if index == L1 else 0 for index in range(17))


class Target(BenchTarget):
    """A motor device that refuses the next `refusals` commands, and holds each command while `gate` is clear."""

    def __init__(self, ctx: DeviceContext, options: NoOptions) -> None:
        super().__init__(ctx, options)
        self.refusals = 0
        self.gate = asyncio.Event()
        self.gate.set()

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        await self.gate.wait()
        if self.refusals:
            self.refusals -= 1
            raise DeviceUnavailable("the device did not answer (test)")
        return await super().handle_command(command)


class RefusingRig(Rig):
    """The bench's rig with the test's target."""

    def _add(self, device_id: str, cls: type[Any]) -> Any:
        """The bench's devices, with the test's target."""
        return super()._add(device_id, Target if cls is BenchTarget else cls)


async def until(predicate: Callable[[], object], what: str) -> None:
    """Poll `predicate` until it holds (a hang guard of `WAIT_S` s, not a measure)."""
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


async def ticks(device: BindingDevice, count: int) -> None:
    start = device.runtime.ticks
    await until(lambda: device.runtime.ticks >= start + count, f"{count} ticks")


@pytest.fixture
async def rig() -> AsyncIterator[RefusingRig]:
    running = RefusingRig(1, 50.0)
    await running.start()
    yield running
    await running.stop()


def parts(rig: RefusingRig) -> tuple[BenchSource, Target, BindingDevice]:
    target = rig.targets[0]
    assert isinstance(target, Target)
    return rig.sources[0], target, rig.bindings.devices["b-0"]


async def test_the_safe_output_is_resent_until_the_device_confirms_it(rig: RefusingRig) -> None:
    source, target, device = parts(rig)
    source.send(0.5, True)
    await until(lambda: target.received and target.received[-1][1:] == (250, 250), "driving")
    target.refusals = 3
    source.send(0.5, False)
    await until(lambda: device.runtime.state == "safing", "safing")
    await until(lambda: target.received[-1][1:] == (0, 0), "the safe output confirmed")
    assert device.runtime.delivery.safe_sent >= 4  # three refused, the fourth confirmed
    await until(lambda: device.runtime.state == "idle", "idle once confirmed")
    confirmed = len(target.received)
    await ticks(device, 5)
    assert len(target.received) == confirmed  # one safe output: nothing more once confirmed
    assert device.unconfirmed_safe_state() is None


async def test_its_outputs_are_the_last_command_sent_and_nothing_after_stop_all(rig: RefusingRig) -> None:
    # What the shutdown log shows as the binding's outputs in its safe state: never a driving value
    # that its safe output or its targets' e-stop has since replaced.
    source, target, device = parts(rig)
    source.send(0.5, True)
    await until(lambda: target.received and target.received[-1][1:] == (250, 250), "driving")
    assert device.outputs()["data"] == {"left": 250, "right": 250}
    source.send(0.5, False)
    await until(lambda: device.runtime.state == "idle", "the safe output confirmed")
    assert (device.outputs()["device"], device.outputs()["data"]) == ("dst-0", {"left": 0, "right": 0})
    assert device.runtime.status().values == (0.0, 0.0)  # the status's last output: the safe one
    source.send(0.5, True)
    await until(lambda: device.outputs().get("data") == {"left": 250, "right": 250}, "driving again")
    await device.estop()  # STOP ALL: the targets' own e-stop is the safe output
    assert device.outputs() == {}
    await device.close()
    assert device.outputs() == {}
    assert device.unconfirmed_safe_state() is None


async def test_a_slow_device_gets_the_newest_value_never_a_backlog(rig: RefusingRig) -> None:
    source, target, device = parts(rig)
    source.send(0.1, True)
    await until(lambda: target.received, "driving")
    target.gate.clear()  # the device stops answering
    for step in range(1, 41):
        source.send(0.1 + step * 0.02, True)
        await asyncio.sleep(0)
    await ticks(device, 5)
    before = len(target.received)
    target.gate.set()
    await until(lambda: target.received[-1][1] == 450, "the newest value")
    # The held command, then the newest value: not one command per tick or per sample.
    assert len(target.received) - before <= 3


async def test_pause_and_resume_by_command_and_status(rig: RefusingRig) -> None:
    source, target, device = parts(rig)
    source.send(0.5, True)
    await until(lambda: target.received and target.received[-1][1] == 250, "driving")
    answer = await rig.router.execute("b-0", "hwgateway/BindingPause", {}, "c1", 5.0)
    assert answer["paused"] is True
    await until(lambda: target.received[-1][1:] == (0, 0), "paused: the safe output")
    assert device.runtime.reason == "paused"
    await until(lambda: device.capabilities()["status"]["state"] == "paused", "paused: the status says so")
    await rig.router.execute("b-0", "hwgateway/BindingResume", {}, "c1", 5.0)
    await ticks(device, 3)
    assert target.received[-1][1:] == (0, 0)  # the deadman must be released and pressed anew
    source.send(0.5, False)
    await until(lambda: device.runtime.reason == "deadman released", "released")
    source.send(0.5, True)
    await until(lambda: target.received[-1][1] == 250, "driving again")
    status = device.capabilities()["status"]
    assert (status["state"], status["deadman_held"], status["target"]) == ("active", True, "dst-0")


async def test_after_a_resume_a_release_between_two_ticks_rearms_the_deadman(rig: RefusingRig) -> None:
    """The release and the press anew come in one event-loop turn: no tick reads the released sample."""
    source, target, device = parts(rig)
    source.send(0.5, True)
    await until(lambda: target.received and target.received[-1][1] == 250, "driving")
    await rig.router.execute("b-0", "hwgateway/BindingPause", {}, "c1", 5.0)
    await rig.router.execute("b-0", "hwgateway/BindingResume", {}, "c1", 5.0)
    await ticks(device, 3)
    assert device.runtime.reason == "resumed: release and press the deadman"
    source.send(0.5, False)
    source.send(0.5, True)
    await until(lambda: target.received[-1][1] == 250, "driving again")


async def test_a_silent_source_reaches_the_safe_output_within_timeout_and_a_period(rig: RefusingRig) -> None:
    source, target, device = parts(rig)
    source.send(0.5, True)
    await until(lambda: target.received and target.received[-1][1] == 250, "driving")
    last = device.runtime.source.arrived
    await until(lambda: target.received[-1][1:] == (0, 0), "silence: the safe output")
    stopped_at = target.received[-1][0]
    settings = device.runtime.settings
    # The safe output went at the first tick after the timeout: within timeout + one period (+ the loop's lag).
    assert device.runtime.reason.startswith("source silent")
    assert stopped_at - last >= settings.timeout_s
    assert device.runtime.ticks > 0


async def test_repeats_of_the_same_sample_are_not_fresh_input(rig: RefusingRig) -> None:
    """A source republishing its state: fresh while each copy carries a new timestamp, stale when it repeats one."""
    source, target, device = parts(rig)
    settings = device.runtime.settings
    periods_past_timeout = int(settings.timeout_s / settings.period_s) + 5
    state = ControllerState(Time.from_seconds(time.time()), (0.0, 0.5, 0.0, 0.0, 0.0, 0.0), DEADMAN_HELD)

    async def republish(fresh: bool) -> None:
        message = state
        while True:
            if fresh:  # the same state, read anew: a new timestamp
                message = replace(message, timestamp=Time.from_seconds(time.time()))
            source.ctx.publish("state", message)
            await asyncio.sleep(settings.period_s / 2)

    sending = asyncio.create_task(republish(fresh=True))
    try:
        await until(lambda: target.received and target.received[-1][1] == 250, "driving")
        await ticks(device, periods_past_timeout)  # longer than the timeout, on the same state read anew
        assert target.received[-1][1:] == (250, 250)
        assert device.runtime.state == "active"
        sending.cancel()
        state = replace(state, timestamp=Time.from_seconds(time.time()))
        repeats = device.runtime.source.repeats
        sending = asyncio.create_task(republish(fresh=False))  # the same timestamp over and over
        await until(lambda: target.received[-1][1:] == (0, 0), "repeats only: the safe output")
        assert device.runtime.reason.startswith("source silent")
        assert device.runtime.source.repeats > repeats
        assert not sending.done()  # the repeats kept coming all along
    finally:
        sending.cancel()


async def test_a_priority_per_target_replaces_the_bindings_own_on_that_device() -> None:
    """At 100 the binding keeps a client (50) off; at its `target_priority` of 10 on dst-0 the client takes over."""
    rig = RefusingRig(1, 50.0, with_bindings=False)
    table = binding_table("b-0", "src-0", "dst-0", 50.0) | {"priority": 100, "target_priority": {"dst-0": 10}}
    section, problems = parse_bindings_section({"b-0": table})
    assert not problems
    rig.bindings.start(section)
    source, target, device = parts(rig)
    await rig.start()
    try:
        assert rig.router.arbiter.priority_of("binding:b-0", "dst-0") == 10
        assert rig.router.arbiter.priority_of("binding:b-0", "dst-1") == 100
        source.send(0.5, True)
        await until(lambda: target.received and target.received[-1][1] == 250, "the binding drives")
        await rig.router.execute("dst-0", MOTORS, {"left": 7, "right": 8}, "c1", 5.0)
        await until(lambda: device.runtime.state == "yielded", "the binding yields to the client")
        await ticks(device, 3)
        assert target.received[-1][1:] == (7, 8)
        assert device.capabilities()["binding"]["target_priority"] == {"dst-0": 10}
    finally:
        await rig.stop()


async def test_binding_sets_switch_which_bindings_drive() -> None:
    rig = RefusingRig(2, 50.0, sets=("walk", "run"))
    first, second = rig.bindings.devices["b-0"], rig.bindings.devices["b-1"]
    await rig.start()
    try:
        assert rig.bindings.active_set == "walk"  # the first set named, with no initial_set
        for source in rig.sources:
            source.send(0.5, True)
        walk, run = rig.targets
        await until(lambda: walk.received and walk.received[-1][1] == 250, "the walk set drives")
        await ticks(second, 3)
        assert not run.received
        assert second.runtime.reason == "binding set run is not active"
        rig.bindings.switch_set("run")
        await until(lambda: walk.received[-1][1:] == (0, 0), "walk stops through its safe output")
        await until(lambda: run.received and run.received[-1][1] == 250, "the run set drives")
        assert first.runtime.reason == "binding set walk is not active"
    finally:
        await rig.stop()
