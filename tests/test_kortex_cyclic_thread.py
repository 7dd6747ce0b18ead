"""The Kortex cyclic loop on its own thread: start and stop, hand-overs, a blocked event loop, safe states.

Behaviour only (cycles happen, in order, what they carry, what reaches the bus): how regular the
cycles are under load is measured by bench/kortex.py, never asserted here.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from devices.kortex.adapter import KortexAdapter
from devices.kortex.cyclic import EVENT_LOOP_STALL_S, Kortex3Codec
from devices.kortex.options import KortexOptions
from devices.sim.kortex_arm import SimulatedArm
from gateway import realtime
from gateway.messages.kortex import Command as C61Command
from gateway.realtime import Latest, RealtimeThread, SchedulingPolicy, ToLoop, apply_policy
from protocols.kortex.generated import BaseCyclicKortex3_pb2
from protocols.kortex.services import Function
from tests.adapter_rig import AdapterRig


# The RPC session on TCP 10000 (test_kortex_mqtt.py drives the MQTT one): the cyclic link is UDP either way.
class Device(AdapterRig[KortexAdapter]):
    def __init__(self, options: KortexOptions) -> None:
        super().__init__(KortexAdapter, "arm-1", options)


def tcp_options(arm: SimulatedArm) -> KortexOptions:
    return KortexOptions(host="127.0.0.1", tcp_port=arm.tcp_port, udp_port=arm.udp_port, api="kortex3", transport="tcp")


def cyclic_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.endswith(" cyclic") and thread.is_alive()]


# -- gateway/realtime.py ----------------------------------------------------------------------------


def test_realtime_thread_runs_its_body_on_deadlines_and_stops_at_once() -> None:
    lateness: list[int] = []
    saved = sys.getswitchinterval()

    def body(thread: RealtimeThread) -> None:
        deadline = time.perf_counter_ns()
        while not thread.stopping:
            deadline += 1_000_000
            thread.wait(deadline)
            if not thread.stopping:
                lateness.append(time.perf_counter_ns() - deadline)

    thread = RealtimeThread("test cyclic", body)
    thread.start()
    try:
        assert thread.alive
        assert thread.scheduling  # what is in force, in words
        assert sys.getswitchinterval() <= realtime.SWITCH_INTERVAL_S
        while len(lateness) < 20:
            time.sleep(0.001)
    finally:
        started = time.monotonic()
        assert thread.stop(timeout_s=2.0)
        stopped_in = time.monotonic() - started
    assert stopped_in < 1.0
    assert cyclic_threads() == []
    assert sys.getswitchinterval() == saved
    # Every wake-up came at or after its deadline: a wait never ends early (how late is the bench's business).
    assert min(lateness) >= 0


def test_a_long_wait_is_cut_short_by_stop() -> None:
    def body(thread: RealtimeThread) -> None:
        while not thread.stopping:
            thread.wait(time.perf_counter_ns() + 60_000_000_000)  # a minute

    thread = RealtimeThread("test cyclic", body)
    thread.start()
    started = time.monotonic()
    assert thread.stop(timeout_s=2.0)
    assert time.monotonic() - started < 1.0


def test_a_failing_body_is_kept_and_the_switch_interval_restored() -> None:
    saved = sys.getswitchinterval()

    def body(thread: RealtimeThread) -> None:
        raise ValueError("boom")

    thread = RealtimeThread("test cyclic", body)
    thread.start()
    assert thread.stop(timeout_s=2.0)
    assert isinstance(thread.error, ValueError)
    assert sys.getswitchinterval() == saved


async def test_to_loop_delivers_in_order_and_coalesces_while_the_loop_is_blocked() -> None:
    delivered: list[int] = []
    handoff: ToLoop[int] = ToLoop(asyncio.get_running_loop(), delivered.append, capacity=8)

    def producer() -> None:
        for item in range(100):
            handoff.post(item)

    # The event loop is blocked (this coroutine does not yield) while the thread posts everything.
    worker = threading.Thread(target=producer)
    worker.start()
    worker.join()
    assert delivered == []  # nothing runs on the loop behind the producer's back
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert delivered == list(range(92, 100))  # the newest `capacity`, in order
    assert handoff.overwritten == 92
    handoff.post(100)
    await asyncio.sleep(0)
    assert delivered[-1] == 100


def test_latest_slot_swaps_whole_values() -> None:
    slot: Latest[tuple[int, int]] = Latest((0, 0))
    stop = threading.Event()
    torn: list[tuple[int, int]] = []

    def reader() -> None:
        while not stop.is_set():
            first, second = slot.value
            if first != second:
                torn.append((first, second))

    worker = threading.Thread(target=reader)
    worker.start()
    for value in range(20_000):
        slot.put((value, value))
    stop.set()
    worker.join()
    assert torn == []


def test_sched_fifo_is_applied_when_permitted_else_logged_once_at_info(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(realtime, "_refusal_logged", False)
    results: list[tuple[str, int]] = []

    def apply() -> None:
        applied = apply_policy(SchedulingPolicy(priority=10), "test")
        results.append((applied, os.sched_getscheduler(0)))

    with caplog.at_level(logging.INFO, logger="gateway.realtime"):
        for _ in range(2):
            worker = threading.Thread(target=apply)
            worker.start()
            worker.join()
    for applied, scheduler in results:
        if "SCHED_FIFO" in applied:
            assert scheduler == os.SCHED_FIFO
        else:
            assert applied == "normal scheduling"
            assert scheduler == os.SCHED_OTHER
    refusals = [record for record in caplog.records if "SCHED_FIFO refused" in record.getMessage()]
    if "SCHED_FIFO" not in results[0][0]:
        assert len(refusals) == 1  # once, whatever the number of threads
        assert refusals[0].levelno == logging.INFO
        assert "CAP_SYS_NICE" in refusals[0].getMessage()
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # this thread was never touched


# -- the codec's plans -------------------------------------------------------------------------------


def test_kortex3_codec_cycles_carry_whole_plans() -> None:
    codec = Kortex3Codec()
    function, payload, version = codec.cycle(1)
    assert (function, payload) == (Function.BASE_CYCLIC_REFRESH_FEEDBACK, b"")
    codec.hold([10.0, 20.0, 30.0])
    codec.set_wrist(C61Command(digital_outputs_state=0b101))
    function, payload, later = codec.cycle(2)
    assert function == Function.BASE_CYCLIC_REFRESH
    assert later > version
    command = BaseCyclicKortex3_pb2.Command.FromString(payload)
    assert command.frame_id == 2
    assert [a.position for a in command.actuators] == [10.0, 20.0, 30.0]
    assert {a.command_id.identifier for a in command.actuators} == {2}
    assert command.wrist.c61.digital_outputs_state == 0b101
    codec.release()
    assert codec.cycle(3)[:2] == (Function.BASE_CYCLIC_REFRESH_FEEDBACK, b"")
    # The last Refresh of low level is still built from what the event loop set.
    last = BaseCyclicKortex3_pb2.Command.FromString(codec.refresh_request(4))
    assert (last.frame_id, last.wrist.c61.digital_outputs_state) == (4, 0b101)


# -- the adapter's loop against a simulated arm in another process ---------------------------------------


class ArmProcess:
    """`python -m devices.sim.kortex_arm`: the arm keeps answering while this process's event loop is blocked."""

    def __init__(self, proc: asyncio.subprocess.Process, tcp_port: int, udp_port: int) -> None:
        self.proc, self.tcp_port, self.udp_port = proc, tcp_port, udp_port


@pytest.fixture
async def arm_process() -> AsyncIterator[ArmProcess]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "devices.sim.kortex_arm", "--api", "kortex3",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(20):
            line: dict[str, Any] = json.loads(await proc.stdout.readline())
        assert line["event"] == "listening"
        yield ArmProcess(proc, line["tcp"], line["udp"])
    finally:
        proc.stdin.close()
        try:
            async with asyncio.timeout(5):
                await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()


def busy(seconds: float) -> None:
    """Hold this thread (and the GIL, as client work does) without yielding to the event loop."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def test_the_cyclic_thread_keeps_cycling_while_the_event_loop_is_blocked(arm_process: ArmProcess) -> None:
    options = KortexOptions(
        host="127.0.0.1",
        tcp_port=arm_process.tcp_port,
        udp_port=arm_process.udp_port,
        api="kortex3",
        transport="tcp",
        publish_rate_hz=0.0,  # every reply to the bus
        cyclic_reply_timeout_ms=500.0,
    )
    device = Device(options)
    device.start()
    try:
        await device.connected(timeout=10)
        await device.until(lambda: device.latest("actuators") is not None)
        cyclic = device.adapter._cyclic
        assert cyclic is not None
        [thread] = cyclic_threads()
        counters = cyclic.counters
        published_before = device.bus.published["arm-1/actuators"]
        cycles_before, replies_before = counters.cycles, counters.replies
        busy(0.05)  # the event loop is blocked for 50 ms
        cycles_during, replies_during = counters.cycles - cycles_before, counters.replies - replies_before
        published_during = device.bus.published["arm-1/actuators"] - published_before
        # The thread sent and received on its own; nothing reached the bus behind the event loop's back.
        assert cycles_during > 0
        assert replies_during > 0
        assert published_during == 0
        frame_at_end = cyclic.frame_id
        # Once the event loop runs again, the samples of the block reach the bus (the newest at least).
        await device.until(lambda: device.latest("actuators").frame_id >= frame_at_end - 1)
        assert device.bus.published["arm-1/actuators"] > published_before
        assert counters.errors == 0
        assert counters.dropped == 0
    finally:
        await device.stop()
    assert not thread.is_alive()


async def test_no_cyclic_thread_is_left_after_link_losses_and_stop() -> None:
    arm = SimulatedArm("kortex3")
    await arm.start()
    device = Device(tcp_options(arm))
    try:
        for _ in range(3):
            device.start()
            await device.connected()
            assert len(cyclic_threads()) == 1
            arm.close_tcp_connections()
            assert device.task is not None
            with pytest.raises(ConnectionError):
                async with asyncio.timeout(5):
                    await device.task
            assert cyclic_threads() == []  # each link's thread ends with it
        device.start()
        await device.connected()
    finally:
        await device.stop()
        await arm.stop()
    assert cyclic_threads() == []


async def test_estop_zeroing_is_never_overtaken_by_the_outputs_it_replaced() -> None:
    arm = SimulatedArm("kortex3")
    await arm.start()
    device = Device(tcp_options(arm))
    try:
        device.start()
        await device.connected()
        await device.until(lambda: device.latest("actuators") is not None)
        [session] = [s for s in arm.sessions.values() if s.link.kind == "udp"]
        for value in (0x0F, 0xF0, 0xFF):
            await device.command(C61Command(digital_outputs_state=value), "kortex/WristCyclicC61/Command", "c1")
        await device.adapter.estop()
        outputs = [command.digital_outputs_state for _, command in session.wrist_commands]
        assert outputs[-1] == 0
        zeroed = outputs.index(0, outputs.index(0xFF))  # the estop's zeroing
        assert set(outputs[zeroed:]) == {0}  # after it, nothing but zeros
        assert arm.wrist.digital_outputs_state == 0
        refreshes = arm.requests[Function.BASE_CYCLIC_REFRESH]
        await device.until(lambda: arm.requests[Function.BASE_CYCLIC_REFRESH_FEEDBACK] > 0)
        assert arm.requests[Function.BASE_CYCLIC_REFRESH] == refreshes  # the thread reads again, commands nothing
    finally:
        await device.stop()
        await arm.stop()


class ArmThread:
    """A `SimulatedArm` on its own thread and event loop: it answers while the test's loop is blocked."""

    def __init__(self) -> None:
        self.arm = SimulatedArm("kortex3")
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), name="sim-arm")

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        await self.arm.start()
        self._ready.set()
        await self._stop.wait()
        await self.arm.stop()

    def start(self) -> None:
        self._thread.start()
        assert self._ready.wait(10)

    def stop(self) -> None:
        assert self._loop is not None
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


async def test_a_stalled_event_loop_has_the_thread_zero_the_outputs_until_it_runs_again() -> None:
    arm_thread = ArmThread()
    arm_thread.start()
    arm = arm_thread.arm
    device = Device(tcp_options(arm))
    try:
        device.start()
        await device.connected()
        await device.until(lambda: device.latest("actuators") is not None)
        await device.command(C61Command(digital_outputs_state=0xFF), "kortex/WristCyclicC61/Command", "c1")
        await device.until(lambda: arm.wrist.digital_outputs_state == 0xFF)
        cyclic = device.adapter._cyclic
        assert cyclic is not None
        # The event loop stalls past EVENT_LOOP_STALL_S: nothing on it can end a lease or e-stop now.
        end = time.monotonic() + EVENT_LOOP_STALL_S + 0.5
        while time.monotonic() < end and cyclic.stalled_cycles < 10:
            busy(0.01)
        assert cyclic.stalled_cycles > 0
        while arm.wrist.digital_outputs_state != 0 and time.monotonic() < end + 2:
            busy(0.01)  # the zeroed Refresh is on its way to the arm
        assert arm.wrist.digital_outputs_state == 0
        assert arm.actuator_targets is not None  # the joints are still held, in low level
        # Running again, the event loop's command (still leased to c1) goes out again.
        await device.until(lambda: arm.wrist.digital_outputs_state == 0xFF)
    finally:
        await device.stop()
        arm_thread.stop()
    assert arm.wrist.digital_outputs_state == 0
