"""The Foxglove face in the daemon: every bad input gets a `status` and the connection goes on; devices
that go are unadvertised; leases end on close; tokens, Host and Origin rules as on every listener."""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from websockets.exceptions import InvalidStatus

from gateway.config import loads
from gateway.core.config import ServerConfig
from gateway.errors import ConfigError, ProtocolError
from gateway.faces.foxglove import wire
from gateway.faces.foxglove.catalog import command_topic
from gateway.faces.foxglove.parameters import SERVER_FIELDS
from tests.foxglove_rig import RawFoxglove, foxglove_url, message_data, service_call
from tests.harness import connect, gateway_config, metric
from tests.inprocess import running_gateway

FOXGLOVE = "\n[foxglove]\nenabled = true\nport = 0\n"
DEVICES = """
[devices.sim-1]
kind = "sim"
rate_hz = 50.0
leds = 3

[devices.flaky]
kind = "sim"
rate_hz = 50.0
fail_after_s = 1.0
"""


async def channels_of(client: RawFoxglove, topic: str) -> dict[str, int]:
    """Read advertisements until `topic` is among them; every channel's id by topic."""
    known: dict[str, int] = {}
    while f"/{topic}" not in known:
        advertise = await client.wait_for("advertise")
        known.update({c["topic"]: c["id"] for c in advertise["channels"]})
    return known


async def status(client: RawFoxglove) -> str:
    message = await client.wait_for("status")
    assert message["level"] == wire.ERROR, message
    text: str = message["message"]
    return text


def test_wire_codec() -> None:
    frame = wire.message_data_frame(7, b'{"a":1}')
    retargeted = wire.with_subscription(frame, wire.subscription_bytes(9))
    assert retargeted[2:] == struct.pack("<BIQ", 1, 9, 7) + b'{"a":1}'
    assert wire.with_subscription(frame, wire.subscription_bytes(0)) is frame
    big = wire.message_data_frame(1, b"x" * 70000)
    assert wire.with_subscription(big, wire.subscription_bytes(3))[11:15] == struct.pack("<I", 3)
    assert wire.parse_client_binary(b"\x01\x02\x00\x00\x00{}") == wire.ClientMessageData(2, b"{}")
    call = wire.parse_client_binary(service_call(4, 5, b"{}"))
    assert call == wire.ServiceCallRequest(4, 5, "json", b"{}")
    for bad, needle in (
        (b"", "empty"),
        (b"\x01\x00", "at least 5"),
        (b"\x02\x00\x00", "at least 13"),
        (struct.pack("<BIII", 2, 1, 1, 1000) + b"json", "encoding length"),
        (struct.pack("<BIII", 2, 1, 1, 2) + b"\xff\xfe", "UTF-8"),
        (b"\x07", "unknown binary opcode 0x07"),
    ):
        with pytest.raises(ProtocolError, match=needle):
            wire.parse_client_binary(bad)
    assert wire.choose_subprotocol(["foxglove.websocket.v1", " foxglove.sdk.v1"]) == "foxglove.sdk.v1"
    assert wire.choose_subprotocol(["other"]) is None
    assert command_topic("/sim-1/command/led") == ("sim-1", "led")
    assert command_topic("/thymio/command/thymio_msgs/Led") == ("thymio", "thymio_msgs/Led")
    assert command_topic("sim-1/command/led") is None
    assert command_topic("/sim-1/led") is None
    assert set(SERVER_FIELDS) <= {name for name in ServerConfig.__dataclass_fields__}


async def test_bad_input_gets_a_status_and_the_connection_goes_on(tmp_path: Path) -> None:
    server = "max_request_bytes = 4096\n"
    async with running_gateway(tmp_path, gateway_config(tmp_path, DEVICES, server=server, extra=FOXGLOVE)) as gateway:
        client = await RawFoxglove.open(foxglove_url(gateway))
        channels = await channels_of(client, "sim-1/state")
        state = channels["/sim-1/state"]
        cases: list[tuple[object, str]] = [
            ("not json", "not valid JSON"),
            ([1, 2], "object with an 'op'"),
            ({"op": "dance"}, "unknown op 'dance'"),
            ({"op": "fetchAsset", "uri": "x", "requestId": 1}, "fetchAsset: not supported"),
            ({"op": "subscribe", "subscriptions": [{"id": 1, "channelId": 99999}]}, "unknown channel id 99999"),
            ({"op": "subscribe", "subscriptions": [{"id": -1, "channelId": state}]}, "expected an integer"),
            ({"op": "subscribe", "subscriptions": "all"}, "expected an array"),
            ({"op": "unsubscribe", "subscriptionIds": [77]}, "no subscription 77"),
            ({"op": "advertise", "channels": [{"id": 1, "topic": "/x", "encoding": "json"}]}, "/<device>/command"),
            (
                {"op": "advertise", "channels": [{"id": 1, "topic": "/sim-1/command/led", "encoding": "cdr"}]},
                "encoding 'cdr' is not supported",
            ),
            (
                {"op": "advertise", "channels": [{"id": 1, "topic": "/nobody/command/led", "encoding": "json"}]},
                "no device 'nobody'",
            ),
            (
                {"op": "advertise", "channels": [{"id": 1, "topic": "/sim-1/command/fly", "encoding": "json"}]},
                "accepts no 'fly'",
            ),
            ({"op": "unadvertise", "channelIds": [5]}, "no client channel 5"),
            ({"op": "getParameters", "parameterNames": [1]}, "array of strings"),
            ({"op": "subscribe", "subscriptions": [], "pad": "x" * 5000}, "exceeds the 4096-byte limit"),
        ]
        for request, needle in cases:
            await (client.ws.send(request) if isinstance(request, str) else client.send(request))
            assert needle in await status(client), request
        # A subscription id in use, and a channel subscribed twice.
        await client.send({"op": "subscribe", "subscriptions": [{"id": 3, "channelId": state}]})
        assert (await client.wait_for(1))[1:5] == struct.pack("<I", 3)
        await client.send({"op": "subscribe", "subscriptions": [{"id": 3, "channelId": channels["/sim-1/outputs"]}]})
        assert "subscription id 3 is in use" in await status(client)
        await client.send({"op": "subscribe", "subscriptions": [{"id": 4, "channelId": state}]})
        assert "already has subscription 3" in await status(client)
        # Binary input: bad frames, unknown channels, payloads that are not JSON or break the schema.
        await client.send(
            {"op": "advertise", "channels": [{"id": 8, "topic": "/sim-1/command/led", "encoding": "json"}]}
        )
        for frame, needle in (
            (b"\x05", "unknown binary opcode"),
            (b"\x01\x00", "at least 5"),
            (message_data(9, b"{}"), "no client channel 9"),
            (message_data(8, b"{nope"), "payload is not valid JSON"),
            (message_data(8, json.dumps({"index": 7, "rgb": [1, 1, 1]}).encode()), "invalid_argument: data.index"),
            (message_data(8, json.dumps({"rgb": "red"}).encode()), "invalid_argument"),
            (message_data(8, b"x" * 5000), "exceeds the 4096-byte limit"),
        ):
            await client.ws.send(frame)
            assert needle in await status(client), frame[:20]
        for call, needle in (
            (service_call(12345, 1, b"{}"), "unknown service id 12345"),
            (service_call(1, 2, b"{}", encoding="cdr"), "encoding 'cdr' is not supported"),
            (service_call(1, 3, b"{bad"), "invalid_argument: request is not valid JSON"),
        ):
            await client.ws.send(call)
            failure = await client.wait_for("serviceCallFailure")
            assert needle in failure["message"]
            assert failure["callId"] == struct.unpack_from("<I", call, 5)[0]
        # Still fine: a good command, a good unsubscribe, parameters.
        await client.ws.send(message_data(8, json.dumps({"index": 0, "rgb": [0, 1, 0]}).encode()))
        await client.send({"op": "unsubscribe", "subscriptionIds": [3]})
        await client.send({"op": "getParameters", "parameterNames": ["/devices/sim-1/kind"], "id": "p"})
        values = await client.wait_for("parameterValues")
        assert values == {
            "op": "parameterValues",
            "parameters": [{"name": "/devices/sim-1/kind", "value": "sim"}],
            "id": "p",
        }
        assert not [m for m in client.kept if isinstance(m, dict) and m.get("op") == "status"]
        await client.close()


async def test_a_device_that_goes_is_unadvertised_and_comes_back(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, DEVICES, extra=FOXGLOVE)) as gateway:
        client = await RawFoxglove.open(foxglove_url(gateway))
        channels = await channels_of(client, "flaky/state")
        flaky = {channels["/flaky/state"], channels["/flaky/outputs"]}
        gone = await client.wait_for("unadvertise", timeout=10)
        assert set(gone["channelIds"]) == flaky
        services_gone = await client.wait_for("unadvertiseServices", timeout=5)
        assert services_gone["serviceIds"]
        again = await client.wait_for("advertise", timeout=10)  # restarted by the supervisor, same ids
        assert {c["id"] for c in again["channels"]} == flaky
        await client.close()


async def test_leases_end_when_the_foxglove_client_leaves(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, DEVICES, extra=FOXGLOVE)) as gateway:
        native = await connect(gateway, "ws")
        client = await RawFoxglove.open(foxglove_url(gateway))
        await channels_of(client, "sim-1/state")
        await client.send(
            {"op": "advertise", "channels": [{"id": 1, "topic": "/sim-1/command/rumble", "encoding": "json"}]}
        )
        await client.ws.send(message_data(1, json.dumps({"low": 1.0, "high": 0.5, "duration_s": 60.0}).encode()))
        await native.ok("subscribe", topics=["sim-1/outputs"])

        def rumbling(value: bool) -> Callable[[dict[str, Any]], bool]:
            return lambda m: m.get("topic") == "sim-1/outputs" and (m["data"]["rumble_low"] > 0) == value

        await native.wait_for(rumbling(True))
        await client.close()
        await native.wait_for(rumbling(False))  # the lease ended with the connection
        await native.close()


async def test_tokens_hosts_and_origins(tmp_path: Path) -> None:
    extra = FOXGLOVE + '[auth]\ntokens = ["s3cret-token-0123"]\n'
    async with running_gateway(tmp_path, gateway_config(tmp_path, extra=extra)) as gateway:
        url = foxglove_url(gateway)
        no_token = await RawFoxglove.open(url)
        assert (await no_token.wait_for("serverInfo"))["op"] == "serverInfo"
        assert "needs a token" in await status(no_token)
        await asyncio.wait_for(no_token.ws.wait_closed(), 5)
        assert no_token.ws.close_code == 1008
        with pytest.raises(InvalidStatus) as wrong:
            await RawFoxglove.open(url + "?token=guess")
        assert wrong.value.response.status_code == 401
        good = await RawFoxglove.open(url + "?token=s3cret-token-0123")
        assert (await good.wait_for("advertise"))["channels"] is not None
        await good.close()
        http = url.replace("ws://", "http://")
        async with aiohttp.ClientSession() as session:
            async with session.get(http, headers={"Host": "evil.example"}) as response:
                assert response.status == 421
            async with session.get(http, headers={"Origin": "http://evil.example"}) as response:
                assert response.status == 403
            async with session.get(http) as response:  # a plain GET offers no subprotocol
                assert response.status == 400
                assert "foxglove.websocket.v1" in await response.text()


async def test_each_sample_is_encoded_once_for_every_foxglove_client(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, extra=FOXGLOVE)) as gateway:
        clients = [await RawFoxglove.open(foxglove_url(gateway)) for _ in range(3)]
        # The encode counter is the process's (other in-process gateways of this test worker count too).
        # Published read first here and last below, so every sample encoded between was published between.
        published_before = await metric(gateway, "hwgw_bus_published_total", 'topic="sim-1/state"')
        encoded_before = await metric(gateway, "hwgw_frames_encoded_total", 'encoding="foxglove"')
        for number, client in enumerate(clients):
            channel = (await channels_of(client, "sim-1/state"))["/sim-1/state"]
            await client.send({"op": "subscribe", "subscriptions": [{"id": number, "channelId": channel}]})
        for number, client in enumerate(clients):
            for _ in range(20):
                frame = await client.wait_for(1)
                assert frame[1:5] == struct.pack("<I", number)  # the same payload, each client's own id
        encoded = await metric(gateway, "hwgw_frames_encoded_total", 'encoding="foxglove"') - encoded_before
        published = await metric(gateway, "hwgw_bus_published_total", 'topic="sim-1/state"') - published_before
        # Once per sample, not once per client; each subscription may start with the latest sample.
        assert 20 <= encoded <= published + len(clients)
        for client in clients:
            await client.close()


async def test_a_client_advertises_at_most_256_channels(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, extra=FOXGLOVE)) as gateway:
        client = await RawFoxglove.open(foxglove_url(gateway))
        await channels_of(client, "sim-1/state")
        many = [{"id": n, "topic": "/sim-1/command/led", "encoding": "json"} for n in range(257)]
        await client.send({"op": "advertise", "channels": many})
        assert "at most 256 channels" in await status(client)
        await client.ws.send(message_data(255, json.dumps({"index": 0, "rgb": [1, 0, 0]}).encode()))
        await client.ws.send(message_data(256, b"{}"))
        assert "no client channel 256" in await status(client)
        await client.close()


def test_the_foxglove_config_is_checked() -> None:
    assert loads("").foxglove.enabled is False
    assert loads("[foxglove]\nenabled = true\n").foxglove.port == 8765
    for text, path in (
        ("[foxglove]\nport = 70000\n", "foxglove.port"),
        ('[foxglove]\nenabled = "yes"\n', "foxglove.enabled"),
        ("[foxglove]\nhost = 1\n", "foxglove.host"),
        ("[server]\nhttp_port = 9000\n[foxglove]\nenabled = true\nport = 9000\n", "foxglove.port"),
    ):
        with pytest.raises(ConfigError) as error:
            loads(text)
        assert error.value.path == path, text
