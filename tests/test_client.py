"""hwgateway.client against the real daemon on WebSocket, msgpack/TCP and msgpack/Unix, including reconnects."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.messages.creos import ControllerState
from hwgateway.client import (
    ConnectionLost,
    DeviceUnavailable,
    Gateway,
    InvalidArgument,
    Locked,
    RequestTimeout,
    Subscription,
    Unauthorized,
    UnknownCommand,
    UnknownDevice,
    connect,
)
from hwgateway.client import sync as sync_client
from hwgateway.client.transports import parse_url
from tests.harness import SIM_DEVICE, TRANSPORTS, GatewayUnderTest, free_port, gateway_config
from tests.inprocess import running_gateway, start_in_process

EXTRA_DEVICES = """
[devices.slow]
kind = "sim"
rate_hz = 1.0
command_latency_s = 3.0

[devices.late]
kind = "sim"
connect_delay_s = 600.0
"""


def url_of(gateway: GatewayUnderTest, transport: str) -> str:
    """The client URL of `gateway` on `transport`."""
    if transport == "ws":
        return f"ws://127.0.0.1:{gateway.http_port}/ws"
    if transport == "tcp":
        return f"tcp://127.0.0.1:{gateway.msgpack_port}"
    return f"unix:{gateway.unix_socket}"


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[GatewayUnderTest]:
    running = await start_in_process(tmp_path, gateway_config(tmp_path, SIM_DEVICE + EXTRA_DEVICES))
    yield running
    assert await running.stop() == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_devices_command_subscribe_estop_describe(rig: GatewayUnderTest, transport: str) -> None:
    async with connect(url_of(rig, transport)) as gw:
        assert gw.hello["protocol"] == 1
        devices = {device.id: device for device in await gw.devices()}
        assert devices["sim-1"].status == "connected"
        assert "led" in devices["sim-1"].accepts
        assert devices["late"].status == "connecting"

        assert await gw.command("sim-1", "led", {"index": 0, "rgb": [1, 0, 0]}) == {"outputs": "led"}
        assert (await gw.describe("led"))["kind"] == "command"

        async with gw.subscribe("sim-1/state", max_rate_hz=20) as subscription:
            assert subscription.topics == ("sim-1/state",)
            first = await anext(subscription)
            second = await anext(subscription)
        assert (first.topic, first.device) == ("sim-1/state", "sim-1")
        assert first.type == "creos_messages/ControllerState"
        assert isinstance(first.message, ControllerState)
        assert list(first.message.axes) == first.data["axes"]
        assert second.seq > first.seq
        assert second.stamp >= first.stamp > 0

        outcomes = await gw.estop()
        assert {outcome.device for outcome in outcomes} == {"sim-1", "slow", "late"}
        assert all(outcome.ok for outcome in outcomes)
        assert gw.device_status["sim-1"].status == "connected"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_errors_are_typed_by_code(rig: GatewayUnderTest, transport: str) -> None:
    async with connect(url_of(rig, transport)) as gw:
        with pytest.raises(UnknownDevice) as unknown_device:
            await gw.command("nope", "led")
        assert unknown_device.value.code == "unknown_device"
        with pytest.raises(UnknownCommand):
            await gw.command("sim-1", "thymio_msgs/Led")
        with pytest.raises(InvalidArgument, match=r"^data\.rgb\[0\]"):
            await gw.command("sim-1", "led", {"rgb": [2, 0, 0]})
        with pytest.raises(DeviceUnavailable):
            await gw.command("late", "led")
        with pytest.raises(RequestTimeout):
            await gw.command("slow", "led", timeout_s=0.2)
        with pytest.raises(InvalidArgument):
            await gw.describe("no/SuchType")
        with pytest.raises(InvalidArgument, match="segment"):
            gw.subscribe("sim-1/bad pattern")
        async with connect(url_of(rig, transport)) as other:
            assert await other.lock("sim-1") == other.hello["session"]
            with pytest.raises(Locked, match=other.hello["session"]):
                await gw.command("sim-1", "led")
            await other.unlock("sim-1")
        assert await gw.command("sim-1", "led") == {"outputs": "led"}
        assert await gw.ping() > 0  # still connected after every error


async def test_tokens_are_presented_and_refusals_raise_unauthorized(tmp_path: Path) -> None:
    async with running_gateway(
        tmp_path, gateway_config(tmp_path, extra='[auth]\ntokens = ["s3cret-token-0123"]\n')
    ) as running:
        url = f"tcp://127.0.0.1:{running.msgpack_port}"
        with pytest.raises(Unauthorized, match="requires a token"):
            await connect(url).open()
        with pytest.raises(Unauthorized, match="refused"):
            await connect(url, token="wrong").open()
        async with connect(url, token="s3cret-token-0123") as gw:
            assert [device.id for device in await gw.devices()] == ["sim-1"]


async def test_unreachable_gateway_and_bad_urls() -> None:
    with pytest.raises(ConnectionLost, match="cannot connect"):
        await connect(f"ws://127.0.0.1:{free_port()}/ws").open()
    with pytest.raises(ConnectionLost, match="cannot connect"):
        await connect(f"tcp://127.0.0.1:{free_port()}").open()
    with pytest.raises(ValueError, match="scheme"):
        connect("mqtt://127.0.0.1:1883")
    assert parse_url("http://127.0.0.1:8470").url == "ws://127.0.0.1:8470/ws"


def is_connected(gw: Gateway) -> bool:
    """`gw.connected` read afresh (a property that changes between awaits)."""
    return gw.connected


def fixed_port_config(tmp_path: Path, http_port: int, msgpack_port: int) -> str:
    """A gateway config on fixed ports, so a restarted gateway is found at the same address."""
    return (
        gateway_config(tmp_path)
        .replace("http_port = 0", f"http_port = {http_port}")
        .replace("msgpack_port = 0", f"msgpack_port = {msgpack_port}")
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_reconnects_with_backoff_and_renews_subscriptions(tmp_path: Path, transport: str) -> None:
    config = fixed_port_config(tmp_path, free_port(), free_port())
    running = await start_in_process(tmp_path, config)
    gw: Gateway = await connect(
        url_of(running, transport), backoff_initial_s=0.05, backoff_max_s=0.5, request_timeout_s=1.0
    )
    try:
        subscription = await gw.subscribe("sim-1/state").start()
        await gw.lock("sim-1")
        await anext(subscription)
        assert await running.stop() == 0  # the gateway says going_away and exits
        with pytest.raises(ConnectionLost, match="reconnecting"):
            await gw.command("sim-1", "led")  # while nobody listens: no silent success
        assert not is_connected(gw)
        restarted = time.time()
        running = await start_in_process(tmp_path, config)
        async with asyncio.timeout(10):
            while (await anext(subscription)).recv_stamp < restarted:
                pass  # samples of the first gateway still queued
        assert gw.reconnects == 1
        assert await gw.command("sim-1", "led", {"rgb": [0, 1, 0]}) == {"outputs": "led"}
        assert is_connected(gw)
        (device,) = await gw.devices()
        assert device.locked_by == gw.hello["session"]  # the lock was taken again on the new connection
    finally:
        await gw.close()
        assert await running.stop() == 0


async def drain(subscription: Subscription) -> None:
    """Read samples until the subscription ends."""
    async for _ in subscription:
        pass


async def test_without_reconnect_a_lost_connection_ends_subscriptions(tmp_path: Path) -> None:
    running = await start_in_process(tmp_path, gateway_config(tmp_path))
    async with connect(url_of(running, "ws"), reconnect=False) as gw:
        subscription = await gw.subscribe("sim-1/**").start()
        await anext(subscription)
        assert await running.stop() == 0
        async with asyncio.timeout(5):
            with pytest.raises(ConnectionLost, match="lost"):
                await drain(subscription)
        with pytest.raises(ConnectionLost):
            await gw.devices()


@pytest.mark.parametrize("transport", ["ws", "unix"])
async def test_sync_wrapper(rig: GatewayUnderTest, transport: str) -> None:
    url = url_of(rig, transport)

    def script() -> tuple[list[str], dict[str, str], list[int]]:
        with sync_client.connect(url) as gw:
            ids = [device.id for device in gw.devices()]
            result = gw.command("sim-1", "rumble", {"low": 0.5, "duration_s": 0.1})
            try:
                gw.command("sim-1", "led", {"index": 9})
            except InvalidArgument:
                pass
            else:
                raise AssertionError("expected InvalidArgument")
            with gw.subscribe("sim-1/state", limit=3, timeout_s=5) as samples:
                seqs = [sample.seq for sample in samples]
            assert gw.estop()
            return ids, result, seqs

    ids, result, seqs = await asyncio.to_thread(script)
    assert ids == ["sim-1", "slow", "late"]
    assert result == {"outputs": "rumble"}
    assert len(seqs) == 3
    assert seqs == sorted(seqs)
