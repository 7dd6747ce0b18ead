"""The Kortex cyclic loop in its own process: its life with the gateway's, hand-overs, stalls, safe states.

Behaviour only (cycles happen, in order, what they carry, what reaches the arm and the bus): how
regular the cycles are under load is measured by bench/kortex.py, never asserted here.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from devices.kortex import cyclic_wire as wire
from devices.kortex.adapter import KortexAdapter
from devices.kortex.cyclic import CyclicProcess, Kortex3Codec
from devices.kortex.errors import LinkLost
from devices.kortex.options import KortexOptions
from devices.sim.kortex_arm import SimulatedArm
from gateway import realtime
from gateway.config import loads
from gateway.errors import ConfigError
from gateway.messages.kortex import Command as C61Command
from gateway.realtime import Pacer, SchedulingPolicy, apply_policy
from protocols.kortex.generated import Base_pb2, BaseCyclicKortex3_pb2
from protocols.kortex.services import Function
from tests.adapter_rig import AdapterRig
from tests.harness import Client, RunningGateway, connect, gateway_config, start_gateway
from tests.test_kortex_daemon import kortex_device


# The RPC session on TCP 10000 (test_kortex_mqtt.py drives the MQTT one): the cyclic link is UDP either way.
class Device(AdapterRig[KortexAdapter]):
    def __init__(self, options: KortexOptions) -> None:
        super().__init__(KortexAdapter, "arm-1", options)


def tcp_options(arm: SimulatedArm, **overrides: Any) -> KortexOptions:
    values: dict[str, Any] = {"host": "127.0.0.1", "tcp_port": arm.tcp_port, "udp_port": arm.udp_port}
    values |= {"username": "admin", "password": "admin", "api": "kortex3", "transport": "tcp"}
    return KortexOptions(**{**values, **overrides})


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def cyclic_children(parent_pid: int) -> list[int]:
    """The cyclic processes whose parent is `parent_pid`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
        if ppid == parent_pid and b"devices.kortex.cyclic_process" in command:
            found.append(int(entry))
    return found


async def until(condition: Any, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():  # noqa: ASYNC110 (the arm and the processes are polled, they have no event)
            await asyncio.sleep(0.01)


async def logged(gateway: RunningGateway, text: str, timeout: float = 5.0) -> None:
    """Wait until the gateway has logged a line containing `text`: its log reaches us after the arm's state."""
    try:
        await until(lambda: any(text in str(line.get("event")) for line in gateway.logs), timeout)
    except TimeoutError:
        raise AssertionError(
            f"never logged {text!r}; last lines: {[line.get('event') for line in gateway.logs[-20:]]}"
        ) from None


def udp_sessions_closed(arm: SimulatedArm) -> list[int]:
    return [s.id for s in arm.closed_sessions if s.link.kind == "udp"]


# -- gateway/realtime.py ----------------------------------------------------------------------------


def test_pacer_wakes_at_or_after_each_deadline_and_stop_cuts_a_long_wait_short() -> None:
    pacer = Pacer(spin_ns=100_000)
    lateness = []
    deadline = time.perf_counter_ns()
    for _ in range(20):
        deadline += 1_000_000
        pacer.wait(deadline)
        lateness.append(time.perf_counter_ns() - deadline)
    # A wait never ends early (how late is the bench's business).
    assert min(lateness) >= 0
    threading.Timer(0.1, pacer.stop).start()
    waiter = threading.Thread(target=pacer.wait, args=(time.perf_counter_ns() + 60_000_000_000,))  # a minute
    waiter.start()
    waiter.join(15.0)  # guards a hang only: without the stop it would wait the whole minute
    assert not waiter.is_alive(), "stop did not cut a minute's wait short"
    assert pacer.stopping
    assert pacer.woken()
    pacer.close()


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
        assert len(refusals) == 1  # once, whatever the number of loops
        assert refusals[0].levelno == logging.INFO
        assert "CAP_SYS_NICE" in refusals[0].getMessage()
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # this thread was never touched


def test_cyclic_options_are_checked_at_load() -> None:
    text = (
        '[devices.arm]\nkind = "kortex"\ncyclic_priority = 100\ncyclic_spin_us = -1.0\n'
        f"cyclic_cpus = [0, {os.cpu_count() or 1}]\ncyclic_switch_interval_us = 200.0\n"
    )
    with pytest.raises(ConfigError) as caught:
        loads(text)
    text = str(caught.value)
    for expected in (
        "devices.arm.cyclic_priority: 100 is outside [0, 99]",
        "devices.arm.cyclic_spin_us: -1.0 is outside [0.0, 1000.0]",
        "devices.arm.cyclic_switch_interval_us: unknown key",  # gone with the thread
    ):
        assert expected in text, text
    with pytest.raises(ConfigError, match=r"cyclic_cpus: \[-1\] names a CPU this machine lacks \(it has 0-"):
        loads('[devices.arm]\nkind = "kortex"\ncyclic_cpus = [-1]\n')


# -- the hand-over's packets and the codec's plans ---------------------------------------------------


def test_packets_round_trip_and_a_bad_one_is_named() -> None:
    config = wire.ChildConfig(
        "arm UDP", "127.0.0.1", 10001, "admin", "pw", 35000, 2000, 2.0, 1000.0, 0.01, 0.0, 3.0, 1.0, 10, (0, 1), 1000
    )
    tag, fields = wire.unpack(wire.pack_config(config))
    assert (tag, wire.unpack_config(fields)) == (wire.CONFIG, config)
    plan = wire.Plan(7, True, False, b"\x08\x01")
    tag, fields = wire.unpack(wire.pack_plan(plan))
    assert (tag, wire.unpack_plan(fields)) == (wire.PLAN, plan)
    stats = wire.ChildStats(cycles=5, dropped=1, periods=b"\x01" * 16)
    assert wire.unpack_stats(wire.unpack(wire.pack_stats(stats))[1]) == stats
    with pytest.raises(ValueError, match="cyclic process packet b'T'"):
        wire.unpack(b"T\xc1")  # 0xc1 is never used in msgpack
    with pytest.raises(ValueError, match="not an array"):
        wire.unpack(b"T\x05")


def test_kortex3_codec_plans_carry_whole_commands_in_order() -> None:
    codec = Kortex3Codec()
    plans: list[wire.Plan] = []
    codec.on_plan = plans.append
    assert not codec.plan.low_level
    codec.hold([10.0, 20.0, 30.0])
    codec.set_wrist(C61Command(digital_outputs_state=0b101))
    codec.release()
    assert [(p.version, p.low_level, p.once) for p in plans] == [(1, True, False), (2, True, False), (3, False, True)]
    command = BaseCyclicKortex3_pb2.Command.FromString(plans[1].command)
    assert [a.position for a in command.actuators] == [10.0, 20.0, 30.0]
    assert command.wrist.c61.digital_outputs_state == 0b101
    # The last Refresh of low level carries what the event loop last set.
    last = BaseCyclicKortex3_pb2.Command.FromString(plans[2].command)
    assert last.wrist.c61.digital_outputs_state == 0b101
    assert codec.version == 3


# -- the adapter and its process, against a simulated arm in this process ---------------------------


async def test_no_cyclic_process_is_left_after_link_losses_and_stop() -> None:
    arm = SimulatedArm("kortex3")
    await arm.start()
    device = Device(tcp_options(arm))
    pids = []
    try:
        for _ in range(3):
            device.start()
            await device.connected()
            assert device.adapter._cyclic is not None
            pids.append(device.adapter._cyclic.pid)
            assert cyclic_children(os.getpid()) == [pids[-1]]
            arm.close_tcp_connections()
            assert device.task is not None
            with pytest.raises(ConnectionError):
                async with asyncio.timeout(5):
                    await device.task
            assert cyclic_children(os.getpid()) == []  # each link's process ends with it
        device.start()
        await device.connected()
    finally:
        await device.stop()
        await arm.stop()
    assert cyclic_children(os.getpid()) == []
    assert not any(alive(pid) for pid in pids)
    # Each process closed its UDP session on the way out (the last one at stop).
    assert len(udp_sessions_closed(arm)) == 4


async def test_a_slow_loop_keeps_its_session_alive_and_still_stops_at_once() -> None:
    arm = SimulatedArm("kortex3")
    await arm.start()
    device = Device(tcp_options(arm, cyclic_rate_hz=2.0))
    try:
        device.start()
        await device.connected()
        # Half a second between cycles: KeepAlive fills the silences, as the vendor's SessionManager does.
        await until(lambda: arm.requests[Function.SESSION_KEEP_ALIVE] >= 4, timeout=5)
        assert arm.requests[Function.BASE_CYCLIC_REFRESH_FEEDBACK] >= 1
    finally:
        await asyncio.wait_for(device.stop(), 10.0)  # guards a hang only; STOP cutting a wait is the Pacer's test
        await arm.stop()
    assert len(udp_sessions_closed(arm)) == 1


async def test_a_refused_udp_session_is_a_clear_unreachable() -> None:
    arm = SimulatedArm("kortex3")
    await arm.start()
    device = Device(tcp_options(arm, password="wrong"))
    try:
        device.start()
        assert device.task is not None
        with pytest.raises(LinkLost, match="session refused"):
            async with asyncio.timeout(10):
                await device.task
    finally:
        await device.stop()
        await arm.stop()
    assert cyclic_children(os.getpid()) == []


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
        # Before the first command the outputs are zero; a command the next cycle replaced was never
        # sent (newest wins), so a busy host may skip any of them, but never reorder them.
        commanded = outputs[next((i for i, value in enumerate(outputs) if value), len(outputs)) :]
        zeroed = commanded.index(0)  # the estop's zeroing: the commands hold no zero
        assert set(commanded[zeroed:]) == {0}  # after it, nothing but zeros
        sent = list(dict.fromkeys(commanded[:zeroed]))
        assert sent == [value for value in (0x0F, 0xF0, 0xFF) if value in sent]
        assert arm.wrist.digital_outputs_state == 0
        # The loop then reads, and commands nothing: a zeroing Refresh the arm answered late (a busy
        # host) goes out again until one is answered, so the Refreshes stop within a few cycles, and
        # every one sent after the zeroing holds zeros.
        async with asyncio.timeout(5):
            while True:
                refreshes = arm.requests[Function.BASE_CYCLIC_REFRESH]
                feedbacks = arm.requests[Function.BASE_CYCLIC_REFRESH_FEEDBACK]
                await asyncio.sleep(0.05)
                if arm.requests[Function.BASE_CYCLIC_REFRESH] == refreshes and (
                    arm.requests[Function.BASE_CYCLIC_REFRESH_FEEDBACK] > feedbacks
                ):
                    break
        after = [command.digital_outputs_state for _, command in session.wrist_commands][len(outputs) :]
        assert set(after) <= {0}, after
    finally:
        await device.stop()
        await arm.stop()


async def test_a_burst_of_commands_ends_with_the_last_one_on_the_arm() -> None:
    arm = SimulatedArm("kortex3")
    await arm.start()
    device = Device(tcp_options(arm))
    try:
        device.start()
        await device.connected()
        await device.until(lambda: device.latest("actuators") is not None)
        await device.command(C61Command(digital_outputs_state=1), "kortex/WristCyclicC61/Command", "c1")
        cyclic = device.adapter._cyclic
        assert cyclic is not None
        # Far more plans (many clients' commands) than the socket's buffer holds while the process
        # does not read: the newest waits for room, none goes out of order, nothing blocks.
        os.kill(cyclic.pid, signal.SIGSTOP)
        try:
            for value in range(2, 3000):
                device.adapter._set_wrist(C61Command(digital_outputs_state=value))
            assert cyclic._unsent is not None  # the buffer was full
        finally:
            os.kill(cyclic.pid, signal.SIGCONT)
        assert await asyncio.wait_for(cyclic.next_cycle(), 5) > 0
        await until(lambda: arm.wrist.digital_outputs_state == 2999)
        [session] = [s for s in arm.sessions.values() if s.link.kind == "udp"]
        outputs = [command.digital_outputs_state for _, command in session.wrist_commands]
        assert outputs == sorted(outputs)  # in order, the latest winning
    finally:
        await device.stop()
        await arm.stop()


async def test_a_gateway_that_closes_its_end_has_the_process_zero_the_outputs_and_close_the_session() -> None:
    arm = SimulatedArm("kortex3")
    await arm.start()
    device = Device(tcp_options(arm))
    try:
        device.start()
        await device.connected()
        await device.until(lambda: device.latest("actuators") is not None)
        await device.command(C61Command(digital_outputs_state=0xFF), "kortex/WristCyclicC61/Command", "c1")
        await until(lambda: arm.wrist.digital_outputs_state == 0xFF)
        cyclic = device.adapter._cyclic
        assert isinstance(cyclic, CyclicProcess)
        # The gateway's end closes without a word (as when it dies): EOF is the process's signal to end.
        cyclic._loop.remove_reader(cyclic._sock.fileno())
        cyclic._reading = False
        cyclic._sock.close()
        async with asyncio.timeout(5):
            assert await cyclic.proc.wait() == 0
        assert arm.wrist.digital_outputs_state == 0  # its last Refresh
        assert arm.actuator_targets is not None  # joints held, still in low level
        assert len(udp_sessions_closed(arm)) == 1
    finally:
        await device.stop()
        await arm.stop()


# -- the real daemon --------------------------------------------------------------------------------


def _status(message: dict[str, Any], status: str) -> bool:
    return bool(message["op"] == "device" and message["device"] == "arm-1" and message["status"] == status)


async def _daemon_with_outputs_set(tmp_path: Path, arm: SimulatedArm) -> tuple[RunningGateway, Client, int]:
    """The daemon with arm-1 connected, its outputs at 0xFF (leased to the client returned), and its cyclic pid."""
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, kortex_device(arm)))
    client = await connect(gateway, "ws")
    await client.ok("subscribe", topics=["arm-1/actuators"])
    await client.wait_for(functools.partial(_status, status="connected"), timeout=20)
    await client.wait_for(lambda m: m["op"] == "state" and m["topic"] == "arm-1/actuators", timeout=10)
    await client.ok(
        "command", device="arm-1", type="kortex/WristCyclicC61/Command", data={"digital_outputs_state": 255}
    )
    await until(lambda: arm.wrist.digital_outputs_state == 0xFF)
    [child] = cyclic_children(gateway.proc.pid)
    return gateway, client, child


#: How long the second freeze lasts (s): past the RPC link's 3 s timeout (`link_timeout_ms`).
FROZEN_PAST_THE_LINK_TIMEOUT_S = 5.0


def _requests_between(arm: SimulatedArm, start: float, end: float) -> int:
    [session] = [s for s in arm.sessions.values() if s.link.kind == "udp"]
    return sum(1 for t in session.cyclic_times if start <= t <= end)


async def test_cycles_go_on_while_the_gateway_is_frozen_and_a_stall_zeroes_the_outputs(tmp_path: Path) -> None:
    arm = SimulatedArm("kortex3")
    await arm.start()
    gateway, client, _ = await _daemon_with_outputs_set(tmp_path, arm)
    try:
        # Frozen for 0.4 s (as a long garbage collection would): the arm still gets its cycles.
        frozen_at = time.monotonic()
        gateway.proc.send_signal(signal.SIGSTOP)
        await asyncio.sleep(0.4)
        gateway.proc.send_signal(signal.SIGCONT)
        thawed_at = time.monotonic()
        assert _requests_between(arm, frozen_at + 0.1, thawed_at - 0.1) > 0
        assert arm.wrist.digital_outputs_state == 0xFF  # a short freeze changes nothing
        # Frozen past the stall limit (1 s): nothing in the gateway could end a lease or e-stop now.
        gateway.proc.send_signal(signal.SIGSTOP)
        stopped_at = time.monotonic()
        try:
            await until(lambda: arm.wrist.digital_outputs_state == 0, timeout=3.0)
            assert arm.actuator_targets is not None  # the joints are still held, in low level
            # Frozen past the RPC link's timeout (3 s): what the arm answered meanwhile waits unread, and
            # the gateway must not take its own stall for a silent link when it wakes (no reconnect).
            await asyncio.sleep(max(0.0, stopped_at + FROZEN_PAST_THE_LINK_TIMEOUT_S - time.monotonic()))
        finally:
            gateway.proc.send_signal(signal.SIGCONT)
        # Heard from again, the gateway's command (still leased to the client) goes out again.
        await until(lambda: arm.wrist.digital_outputs_state == 0xFF, timeout=5.0)
        # What the process sent during the freeze went to the bus newest first; the rest is counted (by
        # the same process: a reconnect would have started its counters again).
        await client.ok("subscribe", topics=["arm-1/cyclic"])
        stats: list[dict[str, Any]] = []

        def dropped_some(message: dict[str, Any]) -> bool:
            if message["op"] == "state" and message["topic"] == "arm-1/cyclic":
                stats.append(message["data"])
                return bool(message["data"]["feedback_dropped"] > 0)
            return False

        try:
            await client.wait_for(dropped_some, timeout=5)
        except TimeoutError:  # it failed once in a loaded full run: say what the gateway saw
            raise AssertionError(f"no feedback counted as dropped: {stats[-3:]}, {gateway.logs[-20:]}") from None
        await client.close()
        await until(lambda: arm.wrist.digital_outputs_state == 0)  # the lease ended with the client
    finally:
        assert await gateway.stop() == 0
        await arm.stop()
    warnings = [line["event"] for line in gateway.logs if "has not been heard" in str(line.get("event"))]
    assert warnings, gateway.logs[-20:]
    assert len(udp_sessions_closed(arm)) == 1  # CloseSession at SIGTERM


async def test_a_killed_gateway_takes_its_cyclic_process_along_and_the_arm_sees_the_session_end(
    tmp_path: Path,
) -> None:
    arm = SimulatedArm("kortex3")
    await arm.start()
    gateway, client, child = await _daemon_with_outputs_set(tmp_path, arm)
    try:
        gateway.proc.kill()  # SIGKILL: nothing of the gateway runs any more
        await gateway.proc.wait()
        await until(lambda: not alive(child), timeout=5.0)
        await until(lambda: len(udp_sessions_closed(arm)) == 1, timeout=2.0)
        assert arm.wrist.digital_outputs_state == 0  # its last Refresh, before CloseSession
    finally:
        await client.close()
        await gateway.stop()
        await arm.stop()


async def test_the_next_gateway_takes_an_arm_left_in_low_level_with_its_outputs_on_back_to_single_level(
    tmp_path: Path,
) -> None:
    arm = SimulatedArm("kortex3")
    await arm.start()
    gateway, client, child = await _daemon_with_outputs_set(tmp_path, arm)
    # Both killed, the gateway frozen first so that it cannot react to its child's end (nor to its
    # client's, whose lease would zero the outputs): the arm is left in low level with the outputs
    # on, as after `kill -9` of the whole service.
    gateway.proc.send_signal(signal.SIGSTOP)
    os.kill(child, signal.SIGKILL)
    gateway.proc.kill()
    await gateway.proc.wait()
    await client.close()
    low, single = Base_pb2.LOW_LEVEL_SERVOING, Base_pb2.SINGLE_LEVEL_SERVOING
    assert (arm.servoing_modes, arm.wrist.digital_outputs_state) == ([low], 0xFF)
    restarted = await start_gateway(tmp_path, gateway_config(tmp_path, kortex_device(arm)))
    watcher = await connect(restarted, "ws")
    try:
        await watcher.ok("subscribe", topics=["arm-1/actuators"])
        await watcher.wait_for(functools.partial(_status, status="connected"), timeout=20)
        assert arm.servoing_modes[:2] == [low, single]  # before the device counted as connected
        # Then the outputs, which whoever left low level may have left on: one Refresh at 0, and out.
        await until(lambda: arm.wrist.digital_outputs_state == 0, timeout=5.0)
        await until(lambda: arm.servoing_modes == [low, single, low, single], timeout=5.0)
        await logged(restarted, "left there by an earlier session")
        await logged(restarted, "outputs at 0 again after reconnecting")
        await watcher.wait_for(lambda m: m["op"] == "state" and m["topic"] == "arm-1/actuators", timeout=10)
    finally:
        await watcher.close()
        assert await restarted.stop() == 0
        await gateway.stop()
        await arm.stop()
    assert arm.servoing_mode == single


async def test_a_killed_cyclic_process_is_a_disconnect_and_the_device_comes_back_zeroing_what_it_left_on(
    tmp_path: Path,
) -> None:
    arm = SimulatedArm("kortex3")
    await arm.start()
    gateway, client, child = await _daemon_with_outputs_set(tmp_path, arm)
    try:
        await client.ok("subscribe", topics=["arm-1/**"])
        client.pushed.clear()
        os.kill(child, signal.SIGKILL)  # so its last Refresh, with the outputs at 0, never goes out
        down = await client.wait_for(functools.partial(_status, status="disconnected"), timeout=10)
        assert "the cyclic process ended unexpectedly (killed by signal SIGKILL)" in down["detail"], down
        assert arm.wrist.digital_outputs_state == 0xFF  # what the killed process left on the arm
        await client.wait_for(functools.partial(_status, status="connected"), timeout=20)
        [newer] = cyclic_children(gateway.proc.pid)
        assert newer != child
        await client.wait_for(lambda m: m["op"] == "state" and m["topic"] == "arm-1/actuators", timeout=10)
        # A new UDP session; the killed process could not close its own (the arm times it out).
        assert len([s for s in arm.sessions.values() if s.link.kind == "udp"]) == 2
        assert udp_sessions_closed(arm) == []
        # First thing on the new session: low level for the one Refresh that zeroes, then out.
        await until(lambda: arm.wrist.digital_outputs_state == 0, timeout=5.0)
        low, single = Base_pb2.LOW_LEVEL_SERVOING, Base_pb2.SINGLE_LEVEL_SERVOING
        await until(lambda: arm.servoing_modes == [low, single, low, single], timeout=5.0)
        await logged(gateway, "outputs may still be on (their zeroing Refresh went unanswered")
        await logged(gateway, "outputs at 0 again after reconnecting")
        # The lease ended with the link: a new wrist command is needed to set them again.
        commanded = [m["data"] for m in client.pushed if m["op"] == "state" and m["topic"] == "arm-1/wrist/command"]
        assert commanded
        assert commanded[-1]["digital_outputs_state"] == 0
    finally:
        await client.close()
        assert await gateway.stop() == 0
        await arm.stop()
    assert not alive(child)


async def test_the_daemon_leaves_the_cpus_its_loop_is_pinned_to(tmp_path: Path) -> None:
    cpus = os.sched_getaffinity(0)
    if len(cpus) < 2:  # CI's machines have two: there it must run
        message = "needs two CPUs: one for the loop, one for the rest"
        if os.environ.get("HWGW_REQUIRE_PEERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    loop_cpu = max(cpus)
    arm = SimulatedArm("kortex3")
    await arm.start()
    config = gateway_config(tmp_path, kortex_device(arm) + f"cyclic_cpus = [{loop_cpu}]\n")
    gateway = await start_gateway(tmp_path, config)
    client = await connect(gateway, "ws")
    try:
        await client.ok("subscribe", topics=["arm-1/**"])
        await client.wait_for(functools.partial(_status, status="connected"), timeout=10)
        threads = [int(tid) for tid in os.listdir(f"/proc/{gateway.proc.pid}/task")]
        assert {thread: os.sched_getaffinity(thread) for thread in threads} == dict.fromkeys(threads, cpus - {loop_cpu})
        [child] = cyclic_children(gateway.proc.pid)
        assert os.sched_getaffinity(child) == {loop_cpu}
        said = [line["event"] for line in gateway.logs if "leaving" in line.get("event", "")]
        assert said == [
            f"the daemon runs on CPUs {','.join(map(str, sorted(cpus - {loop_cpu})))}, leaving {loop_cpu} to its loops"
        ]
    finally:
        await client.close()
        assert await gateway.stop() == 0
        await arm.stop()


def test_keeping_off_every_cpu_or_none_changes_nothing() -> None:
    before = os.sched_getaffinity(0)
    assert realtime.keep_off_cpus(frozenset()) is None
    assert realtime.keep_off_cpus(frozenset(before)) is None  # nothing would be left for the daemon
    assert realtime.keep_off_cpus(frozenset({max(before) + 1})) is None  # not one of ours
    assert os.sched_getaffinity(0) == before
