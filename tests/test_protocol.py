"""Every op and every error code, against the real daemon, on WebSocket, msgpack/TCP and msgpack/Unix."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import msgpack
import pytest

from tests.harness import SIM_DEVICE, TRANSPORTS, Client, GatewayUnderTest, connect, gateway_config
from tests.inprocess import running_gateway, start_in_process

FAULTY_DEVICES = """
[devices.slow]
kind = "sim"
rate_hz = 1.0
command_latency_s = 2.0

[devices.faulty]
kind = "sim"
rate_hz = 1.0
failing_commands = ["sound"]

[devices.late]
kind = "sim"
connect_delay_s = 600.0
"""

ERROR_CODES = {
    "bad_request",
    "unknown_op",
    "unknown_device",
    "unknown_command",
    "invalid_argument",
    "unauthorized",
    "timeout",
    "device_error",
    "unavailable",
    "rate_limited",
    "too_large",
}


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[GatewayUnderTest]:
    """A gateway with the normal simulated device plus slow, faulty and never-connecting ones."""
    running = await start_in_process(
        tmp_path,
        gateway_config(tmp_path, SIM_DEVICE + FAULTY_DEVICES, server="max_request_bytes = 4096\n"),
    )
    yield running
    assert await running.stop() == 0


@pytest.fixture(params=TRANSPORTS)
async def client(request: pytest.FixtureRequest, rig: GatewayUnderTest) -> AsyncIterator[Client]:
    connected = await connect(rig, request.param)
    yield connected
    await connected.close()


async def test_hello_comes_first(client: Client) -> None:
    hello = client.hello
    assert hello["server"] == "hwgateway"
    assert hello["protocol"] == 1
    assert hello["auth_required"] is False
    assert "estop" in hello["capabilities"]
    assert hello["limits"]["max_request_bytes"] == 4096


async def test_ping_and_string_ids(client: Client) -> None:
    await client.send({"op": "ping", "id": "my-ping"})
    answer = await client.result("my-ping")
    assert answer["ok"]
    assert answer["data"]["pong"] is True


async def test_list_devices(client: Client) -> None:
    devices = {d["id"]: d for d in (await client.ok("list_devices"))["devices"]}
    assert set(devices) == {"sim-1", "slow", "faulty", "late"}
    sim = devices["sim-1"]
    assert sim["kind"] == "sim"
    assert sim["status"] == "connected"
    assert sim["accepts"] == ["led", "sound", "rumble"]
    assert "creos_messages/ControllerState" in sim["publishes"]
    assert "sim-1/state" in sim["topics"]
    assert sim["capabilities"]["leds"] == 3
    assert devices["late"]["status"] == "connecting"


async def test_describe(client: Client) -> None:
    listing = await client.ok("describe")
    assert {"type": "wiimote/State", "kind": "message"} in listing["types"]
    state = await client.ok("describe", type="wiimote/State")
    assert state["schema"]["properties"]["buttons"]["minItems"] == 11
    assert state["constants"]["MSG_BTN_HOME"] == 10
    service = await client.ok("describe", type="asebaros_msgs/GetVariable")
    assert service["kind"] == "service"
    assert "data" in service["response_schema"]["properties"]


async def test_subscribe_gets_latest_then_live_samples_and_unsubscribe_stops_them(client: Client) -> None:
    data = await client.ok("subscribe", topics=["sim-1/*"])
    assert set(data["topics"]) == {"sim-1/state", "sim-1/outputs"}
    first = await client.wait_for(lambda m: m["op"] == "state" and m["topic"] == "sim-1/state")
    later = await client.wait_for(lambda m: m["op"] == "state" and m["topic"] == "sim-1/state")
    assert later["seq"] > first["seq"]
    assert first["type"] == "creos_messages/ControllerState"
    assert len(first["data"]["axes"]) == 6
    assert len(first["data"]["buttons"]) == 17
    assert first["recv_stamp"] >= first["stamp"] > 1.7e9
    await client.ok("unsubscribe", subscription=data["subscription"])
    await asyncio.sleep(0.1)
    client.pushed.clear()
    await client.ok("ping")  # everything sent before this result has been read by now
    client.pushed.clear()
    await asyncio.sleep(0.2)
    await client.ok("ping")
    assert not [m for m in client.pushed if m["op"] == "state"]


async def test_max_rate_hz_limits_delivery(client: Client) -> None:
    await client.ok("subscribe", topics=["sim-1/state"], max_rate_hz=5)
    await asyncio.sleep(1.0)
    await client.ok("ping")
    states = [m for m in client.pushed if m["op"] == "state"]
    assert 3 <= len(states) <= 7  # 50 Hz source, 5 Hz asked, over about 1 s
    assert states[-1]["seq"] - states[0]["seq"] >= 30  # the skipped samples are visible in seq


async def test_led_command_round_trips_to_the_device_state(client: Client) -> None:
    await client.ok("subscribe", topics=["sim-1/outputs"])
    result = await client.ok("command", device="sim-1", type="led", data={"index": 2, "rgb": [0, 1, 0.5]})
    assert result == {"outputs": "led"}
    outputs = await client.wait_for(
        lambda m: m["op"] == "state" and m["topic"] == "sim-1/outputs" and m["data"]["last_command"] == "led"
    )
    assert outputs["data"]["leds"][2] == [0.0, 1.0, 0.5]


async def test_estop_reaches_every_device(client: Client) -> None:
    await client.ok("subscribe", topics=["sim-1/outputs"])
    data = await client.ok("estop")
    assert {d["device"] for d in data["devices"]} == {"sim-1", "slow", "faulty", "late"}
    assert all(d["ok"] for d in data["devices"])
    await client.wait_for(lambda m: m["op"] == "state" and m["data"]["estopped"] >= 1)


@pytest.mark.parametrize(
    ("request_fields", "code", "message"),
    [
        ({"op": "ping"}, "bad_request", "every request needs an 'id'"),
        ({"op": "ping", "id": True}, "bad_request", "every request needs an 'id'"),
        ({"id": 7}, "bad_request", "every request needs an 'op' string"),
        ({"op": "ping", "id": 7, "extra": 1}, "bad_request", "ping: unknown field 'extra'"),
        ({"op": "subscribe", "id": 7, "topics": "sim-1/**"}, "bad_request", "subscribe.topics"),
        ({"op": "unsubscribe", "id": 7, "subscription": "x"}, "bad_request", "unsubscribe.subscription"),
        ({"op": "teleport", "id": 7}, "unknown_op", "unknown op 'teleport'"),
        ({"op": "command", "id": 7, "device": "nope", "type": "led"}, "unknown_device", "no device 'nope'"),
        ({"op": "command", "id": 7, "device": "sim-1", "type": "warp"}, "unknown_command", "'warp' is not"),
        (
            {"op": "command", "id": 7, "device": "sim-1", "type": "thymio_msgs/Led"},
            "unknown_command",
            "device 'sim-1' (sim) does not accept 'thymio_msgs/Led'",
        ),
        (
            {"op": "command", "id": 7, "device": "sim-1", "type": "creos_messages/ControllerState"},
            "unknown_command",
            "is a published message type, not a command",
        ),
        (
            {"op": "command", "id": 7, "device": "sim-1", "type": "led", "data": {"rgb": [2, 0, 0]}},
            "invalid_argument",
            "data.rgb[0]: 2.0 is above the maximum 1.0",
        ),
        (
            {"op": "command", "id": 7, "device": "sim-1", "type": "led", "data": {"index": 3}},
            "invalid_argument",
            "data.index: 3 is not an LED of this device",
        ),
        ({"op": "subscribe", "id": 7, "topics": ["a//b"]}, "invalid_argument", "pattern 'a//b'"),
        ({"op": "subscribe", "id": 7, "topics": ["x"], "max_rate_hz": -1}, "invalid_argument", "max_rate_hz"),
        ({"op": "unsubscribe", "id": 7, "subscription": 999999}, "invalid_argument", "no subscription 999999"),
        ({"op": "describe", "id": 7, "type": "nope/Nope"}, "invalid_argument", "no message type 'nope/Nope'"),
        (
            {"op": "command", "id": 7, "device": "slow", "type": "led", "timeout_s": 0.2},
            "timeout",
            "did not complete 'led' in time",
        ),
        ({"op": "command", "id": 7, "device": "faulty", "type": "sound"}, "device_error", "simulated device fault"),
        ({"op": "command", "id": 7, "device": "late", "type": "led"}, "unavailable", "device 'late' is connecting"),
        ({"op": "ping", "id": 7, "pad": "x" * 5000}, "too_large", "exceeds the 4096-byte limit"),
    ],
)
async def test_error_codes(client: Client, request_fields: dict[str, Any], code: str, message: str) -> None:
    await client.send(request_fields)
    request_id = request_fields.get("id")
    answer = await client.result(request_id if type(request_id) is int else None)
    assert answer["ok"] is False
    assert answer["error"]["code"] == code
    assert message in answer["error"]["message"]
    await client.ok("ping")  # the connection goes on


async def test_rate_limited_then_allowed_again(tmp_path: Path) -> None:
    async with running_gateway(
        tmp_path, gateway_config(tmp_path, server="max_requests_per_s = 5.0\nrequest_burst = 3\n")
    ) as gateway:
        for transport in TRANSPORTS:
            client = await connect(gateway, transport)
            answers = [await client.request("ping") for _ in range(6)]
            codes = [a["error"]["code"] if not a["ok"] else "ok" for a in answers]
            assert codes[:3] == ["ok", "ok", "ok"]
            assert "rate_limited" in codes[3:]
            assert (await client.request("estop"))["ok"]  # estop is never rate limited
            await asyncio.sleep(0.5)
            assert (await client.request("ping"))["ok"]
            await client.close()


def test_the_error_code_table_is_complete() -> None:
    from gateway.errors import ErrorCode

    assert {code.value for code in ErrorCode} >= ERROR_CODES


async def next_result(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    """The next `result`, past the `device` availability pushes that follow `hello`."""
    while True:
        message: dict[str, Any] = await ws.receive_json(timeout=5)
        if message["op"] == "result":
            return message


async def test_undecodable_json_and_binary_frames_on_websocket(rig: GatewayUnderTest) -> None:
    async with aiohttp.ClientSession() as http, http.ws_connect(f"{rig.base_url}/ws") as ws:
        assert (await ws.receive_json())["op"] == "hello"
        await ws.send_str("{not json")
        answer = await next_result(ws)
        assert answer["error"]["code"] == "bad_request"
        assert answer["id"] is None
        await ws.send_bytes(b"\x01\x02")
        answer = await next_result(ws)
        assert "binary frames are not accepted" in answer["error"]["message"]
        await ws.send_json({"op": "ping", "id": 1})
        assert (await next_result(ws))["ok"] is True


async def test_websocket_frame_over_the_limit_closes_with_1009(tmp_path: Path) -> None:
    async with running_gateway(
        tmp_path, gateway_config(tmp_path, server="max_request_bytes = 1024\nmax_frame_bytes = 2048\n")
    ) as gateway:
        async with aiohttp.ClientSession() as http, http.ws_connect(f"{gateway.base_url}/ws") as ws:
            await ws.receive_json()
            await ws.send_str('{"op":"ping","id":1,"pad":"' + "x" * 5000 + '"}')
            message = await ws.receive()
            while message.type == aiohttp.WSMsgType.TEXT:  # availability pushes sent before the close
                message = await ws.receive()
            assert message.type == aiohttp.WSMsgType.CLOSE
            assert message.data == 1009
        async with aiohttp.ClientSession() as http, http.ws_connect(f"{gateway.base_url}/ws") as ws:
            await ws.receive_json()  # the daemon goes on


@pytest.mark.parametrize("transport", ["tcp", "unix"])
async def test_undecodable_msgpack_closes_with_a_reason(rig: GatewayUnderTest, transport: Any) -> None:
    client = await connect(rig, transport)
    await client.send_raw(msgpack.packb({"op": "ping", "id": 1}) + b"\xc1")
    assert (await client.result(1))["ok"]  # what came before the garbage is answered
    close = await client.wait_for(lambda m: m["op"] == "close")
    assert close["code"] == "bad_request"
    assert "undecodable msgpack" in close["reason"]
    with pytest.raises(ConnectionError):
        await client.recv()
    await client.close()
    again = await connect(rig, transport)
    await again.ok("ping")
    await again.close()


async def test_msgpack_frame_over_the_limit_closes_with_too_large(tmp_path: Path) -> None:
    async with running_gateway(
        tmp_path, gateway_config(tmp_path, server="max_request_bytes = 1024\nmax_frame_bytes = 2048\n")
    ) as gateway:
        client = await connect(gateway, "tcp")
        await client.send({"op": "ping", "id": 1, "pad": "x" * 100_000})
        close = await client.wait_for(lambda m: m["op"] == "close")
        assert close["code"] == "too_large"
        await client.close()


async def test_non_map_msgpack_value_is_a_bad_request_and_the_session_goes_on(rig: GatewayUnderTest) -> None:
    client = await connect(rig, "tcp")
    await client.send_raw(msgpack.packb([1, 2, 3]))
    answer = await client.result(None)
    assert answer["error"]["code"] == "bad_request"
    await client.ok("ping")
    await client.close()
