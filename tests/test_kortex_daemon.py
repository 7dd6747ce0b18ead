"""The real daemon with a Kortex arm (simulated, in this process): WebSocket commands and availability."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from devices.sim.kortex_arm import SimulatedArm
from protocols.kortex.generated import Base_pb2
from tests.harness import RunningGateway, connect, gateway_config, start_gateway
from tests.mosquitto_broker import Broker, mosquitto  # noqa: F401  (the fixture)


async def eventually(condition: Callable[[], bool], timeout: float = 2.0) -> None:
    """Wait for `condition` (the arm runs in this process; the gateway in another)."""
    async with asyncio.timeout(timeout):
        while True:
            if condition():
                return
            await asyncio.sleep(0.01)


@pytest.fixture
async def arm() -> AsyncIterator[SimulatedArm]:
    simulated = SimulatedArm("kortex3")
    await simulated.start()
    yield simulated
    await simulated.stop()


def kortex_device(arm: SimulatedArm, api: str = "kortex3") -> str:
    return f"""
[devices.arm-1]
kind = "kortex"
host = "127.0.0.1"
username = "admin"
password = "admin"
tcp_port = {arm.tcp_port}
udp_port = {arm.udp_port}
api = "{api}"
transport = "tcp"
analog_output_modes = ["voltage", "voltage", "current", "current"]
"""


@pytest.fixture
async def gateway(tmp_path: Path, arm: SimulatedArm) -> AsyncIterator[RunningGateway]:
    running = await start_gateway(tmp_path, gateway_config(tmp_path, kortex_device(arm)))
    yield running
    assert await running.stop() == 0


async def test_websocket_command_reaches_the_arm_in_the_next_cycle(gateway: RunningGateway, arm: SimulatedArm) -> None:
    client = await connect(gateway, "ws")
    await client.ok("subscribe", topics=["arm-1/**"])
    await client.wait_for(lambda m: m["op"] == "device" and m["device"] == "arm-1" and m["status"] == "connected")
    # The joints are held where the feedback puts them: the first command needs one.
    await client.wait_for(lambda m: m["op"] == "state" and m["topic"] == "arm-1/actuators", timeout=10)
    devices = (await client.ok("list_devices"))["devices"]
    [arm_device] = [d for d in devices if d["id"] == "arm-1"]
    assert "kortex/WristCyclicC61/Command" in arm_device["accepts"]
    command = {
        "digital_outputs_state": 0b1001,
        "analog_output_b_channel_1_value": 18.5,  # channel B1 is in current mode: up to 25 mA
        "led_ring_rgb": 0x123456,
        "led_ring_blink_frequency": 2,
    }
    result = await client.ok("command", device="arm-1", type="kortex/WristCyclicC61/Command", data=command)
    [session] = [s for s in arm.sessions.values() if s.link.kind == "udp"]
    # The command entered low-level servoing (RefreshFeedback before it), then rode a Refresh.
    await eventually(lambda: any(sent.led_ring_rgb == 0x123456 for _, sent in session.wrist_commands))
    assert arm.servoing_modes == [Base_pb2.LOW_LEVEL_SERVOING]
    first_seen = next(frame for frame, sent in session.wrist_commands if sent.led_ring_rgb == 0x123456)
    assert first_seen == result["frame_id"]
    assert arm.wrist.digital_outputs_state == 0b1001
    assert arm.wrist.analog_output_b_channel_1_value == 18.5
    assert arm.wrist.led_ring_blink_frequency == 2
    # The wrist's inputs are wired to its outputs in the simulation: the command comes back as feedback.
    feedback = await client.wait_for(
        lambda m: (
            m["op"] == "state" and m["topic"] == "arm-1/wrist/feedback" and m["data"]["digital_inputs_state"] == 0b1001
        )
    )
    assert feedback["type"] == "kortex/WristCyclicC61/Feedback"
    assert feedback["data"]["analog_input_b_channel_1_value"] == 18.5
    error = await client.error(
        "command", device="arm-1", type="kortex/WristCyclicC61/Command", data={"analog_output_a_channel_1_value": 11.0}
    )
    assert error["code"] == "invalid_argument"
    assert "above 10 V" in error["message"]
    result = await client.ok("command", device="arm-1", type="led", data={"rgb": [0.0, 0.0, 1.0]})
    await eventually(lambda: arm.wrist.led_ring_rgb == 0x0000FF)
    # The client leaving ends its lease on the outputs.
    await client.close()
    await eventually(lambda: len(arm.servoing_modes) == 2)
    assert arm.wrist.digital_outputs_state == 0
    assert arm.wrist.led_ring_rgb == 0x0000FF
    # It was the only client driving the wrist: the arm is back in single-level servoing.
    assert arm.servoing_modes == [Base_pb2.LOW_LEVEL_SERVOING, Base_pb2.SINGLE_LEVEL_SERVOING]


async def test_device_unreachable_while_sessions_are_refused(gateway: RunningGateway, arm: SimulatedArm) -> None:
    client = await connect(gateway, "ws")
    await client.ok("subscribe", topics=["arm-1/cyclic"])
    await client.wait_for(lambda m: m["op"] == "device" and m["status"] == "connected")
    stats = await client.wait_for(lambda m: m["op"] == "state" and m["topic"] == "arm-1/cyclic", timeout=5)
    assert stats["data"]["cycles"] > 0  # the loop runs (its rate is bench/kortex.py's business)
    arm.faults.refuse_sessions = "error"
    arm.close_tcp_connections()
    unreachable = await client.wait_for(
        lambda m: m["op"] == "device" and "robot unreachable" in m.get("detail", ""), timeout=5
    )
    assert unreachable["status"] == "disconnected"
    assert "ROBOT_NOT_READY" in unreachable["detail"]
    arm.faults.refuse_sessions = "no"
    await client.wait_for(lambda m: m["op"] == "device" and m["status"] == "connected", timeout=5)
    assert len(arm.sessions) == 2
    await client.close()


def link6_device(broker: Broker, arm: SimulatedArm) -> str:
    """A Link 6 (Kortex 3) arm whose RPCs go over MQTT through `broker`."""
    return f"""
[devices.arm-1]
kind = "kortex"
host = "127.0.0.1"
username = "admin"
password = "admin"
mqtt_port = {broker.port}
udp_port = {arm.udp_port}
api = "kortex3"
"""


async def test_link6_over_mqtt_comes_back_after_a_broker_restart(tmp_path: Path, mosquitto: Broker) -> None:  # noqa: F811
    arm = SimulatedArm("kortex3", mqtt=("127.0.0.1", mosquitto.port))
    await arm.start()
    running = await start_gateway(tmp_path, gateway_config(tmp_path, link6_device(mosquitto, arm)))
    try:
        client = await connect(running, "ws")
        await client.ok("subscribe", topics=["arm-1/**"])
        await client.wait_for(lambda m: m["op"] == "device" and m["status"] == "connected", timeout=5)
        [listed] = [d for d in (await client.ok("list_devices"))["devices"] if d["id"] == "arm-1"]
        assert listed["capabilities"]["transport"] == "mqtt"
        assert arm.tcp_connections == 0
        await mosquitto.restart()
        await client.wait_for(lambda m: m["op"] == "device" and m["status"] == "disconnected", timeout=5)
        client.pushed.clear()  # an earlier `connected` kept there must not pass for the return below
        await client.wait_for(lambda m: m["op"] == "device" and m["status"] == "connected", timeout=10)
        await client.ok("command", device="arm-1", type="led", data={"rgb": [0.0, 1.0, 0.0]})
        await eventually(lambda: arm.wrist.led_ring_rgb == 0x00FF00)
        assert arm.tcp_connections == 0
        await client.close()
    finally:
        assert await running.stop() == 0
        await arm.stop()


async def test_link6_over_mqtt_reaches_its_safe_state_on_sigterm_with_a_stuck_client(
    tmp_path: Path,
    mosquitto: Broker,  # noqa: F811
) -> None:
    arm = SimulatedArm("kortex3", mqtt=("127.0.0.1", mosquitto.port))
    await arm.start()
    device = link6_device(mosquitto, arm) + 'analog_output_modes = ["voltage", "voltage", "current", "current"]\n'
    running = await start_gateway(tmp_path, gateway_config(tmp_path, device + "publish_rate_hz = 1000.0\n"))
    try:
        driver = await connect(running, "ws")
        # Device events only: a driver with unread samples would wait 10 s to close once the daemon is gone.
        await driver.ok("subscribe", topics=["arm-1/nothing"])
        await driver.wait_for(lambda m: m["op"] == "device" and m["status"] == "connected", timeout=5)
        await driver.ok(
            "command",
            device="arm-1",
            type="kortex/WristCyclicC61/Command",
            data={"digital_outputs_state": 0b0101, "analog_output_a_channel_1_value": 4.0},
        )
        await eventually(lambda: arm.wrist.digital_outputs_state == 0b0101, timeout=5)
        # A client that subscribes to everything and never reads: the daemon's buffers towards it fill.
        stuck = await connect(running, "tcp", receive_buffer=4096)
        await stuck.send({"op": "subscribe", "id": "all", "topics": ["**"]})
        await asyncio.sleep(1.0)
        running.proc.send_signal(signal.SIGTERM)
        code = await running.stop(timeout=15.0)  # systemd's TimeoutStopSec; guards a hang only
        assert code == 0, running.logs[-20:]
        assert arm.wrist.digital_outputs_state == 0
        assert arm.wrist.analog_output_a_channel_1_value == 0.0
        [safe] = [line for line in running.logs if line.get("safe_state") and line.get("device") == "arm-1"]
        assert safe["safe_state"] == "ok", safe
        assert arm.tcp_connections == 0  # everything, the safe state included, went over MQTT and UDP
        for client in (driver, stuck):
            await client.close()
    finally:
        await running.stop()
        await arm.stop()
