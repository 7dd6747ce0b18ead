"""The daemon's stop, in process: no face's stop can keep the devices from their safe state."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from gateway.app import Gateway
from gateway.config import loads
from gateway.errors import DeviceUnavailable
from gateway.faces.mqtt.face import MqttFace
from tests.harness import free_port, gateway_config

DEVICE = """
[devices.sim-1]
kind = "sim"
rate_hz = 200.0
leds = 2
"""


async def test_a_face_whose_stop_ignores_cancellation_cannot_block_the_safe_state_pass(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The MQTT bridge on a port where no broker listens: it only has to exist, its stop is replaced.
    mqtt = f'[mqtt]\nurl = "mqtt://127.0.0.1:{free_port()}"\nreconnect_initial_s = 0.05\nreconnect_max_s = 0.2\n'
    gateway = Gateway(loads(gateway_config(tmp_path, DEVICE, extra=mqtt)))
    assert gateway.mqtt is not None
    release = asyncio.Event()
    stop_began = asyncio.Event()
    real_stop = gateway.mqtt.stop

    async def stop_ignoring_cancellation() -> None:
        # What the bridge's stop did when the exporter swallowed its cancellation: it never ended.
        stop_began.set()
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue
        await real_stop()

    gateway.mqtt.stop = stop_ignoring_cancellation  # type: ignore[method-assign]
    caplog.set_level(logging.INFO)
    await gateway.start()
    stopping: asyncio.Task[None] | None = None
    try:
        handle = gateway.supervisor.devices["sim-1"]
        async with asyncio.timeout(10):
            while handle.status != "connected":  # noqa: ASYNC110 (the handle has no event to wait on)
                await asyncio.sleep(0.01)
        await gateway.router.execute("sim-1", "rumble", {"low": 1.0, "high": 1.0, "duration_s": 60}, "driver", 5.0)
        assert handle.adapter.outputs()["rumble_low"] == 1.0
        stopping = asyncio.create_task(gateway.stop())
        await stop_began.wait()
        # Once the stop has begun no command may undo the e-stop, though the device is still open.
        with pytest.raises(DeviceUnavailable, match="the gateway is shutting down"):
            await gateway.router.execute("sim-1", "rumble", {"low": 1.0, "duration_s": 60}, "driver", 5.0)
        async with asyncio.timeout(15):  # bounded: without the bounds it waited for ever
            await stopping
        assert handle.adapter.outputs()["rumble_low"] == 0.0
        assert handle.event().status == "stopped"  # (through a call: mypy narrowed `status` above)
        messages = [record.getMessage() for record in caplog.records]
        assert "device sim-1 is in its safe state" in messages
        assert any("the MQTT bridge's stop did not end" in m and "left behind" in m for m in messages), messages
        assert messages[-1] == "stopped"
    finally:
        release.set()
        if stopping is None:
            await gateway.stop()
        elif not stopping.done():
            await stopping


def test_the_mqtt_bridge_is_one_of_the_faces_the_app_loops_over(tmp_path: Path) -> None:
    """Started, stopped (bounded) and described through the face contract, like every listener face."""
    mqtt = f'[mqtt]\nurl = "mqtt://127.0.0.1:{free_port()}"\n'
    gateway = Gateway(loads(gateway_config(tmp_path, DEVICE, extra=mqtt)))
    [face] = [face for face in gateway.faces if isinstance(face, MqttFace)]
    assert face.bridge is gateway.mqtt
    assert face.stop_deadline_s > 0
    assert face.listeners() == {}  # a client of the broker: no listener of its own
    assert not [face for face in Gateway(loads(gateway_config(tmp_path, DEVICE))).faces if isinstance(face, MqttFace)]
