"""Conformance: the same clients against foxglove-sdk's own server and ours must see the same message shapes.

The reference is foxglove-sdk 0.30.3's WebSocket server, started here with one JSON channel, one service
and parameters. Every field the reference sends (serverInfo, advertise, advertiseServices, MessageData,
service responses and failures, parameterValues) must be in ours too; extra fields of ours are allowed.
"""

from __future__ import annotations

import asyncio
import json
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import foxglove
import pytest
import websockets
from foxglove import Channel
from foxglove.websocket import (
    Capability,
    Client,
    MessageSchema,
    Parameter,
    ServerListener,
    Service,
    ServiceRequest,
    ServiceSchema,
)
from websockets.exceptions import InvalidStatus
from websockets.typing import Subprotocol

from tests.foxglove_rig import RawFoxglove, foxglove_url, run_node_client, service_call
from tests.harness import free_port, gateway_config
from tests.inprocess import running_gateway

FOXGLOVE = "\n[foxglove]\nenabled = true\nport = 0\n"
REF_TOPIC, REF_SERVICE = "/ref/state", "/ref/led"
OUR_TOPIC, OUR_SERVICE = "/sim-1/state", "/sim-1/led"


class _Listener(ServerListener):
    def on_get_parameters(self, client: Client, param_names: list[str], request_id: str | None = None) -> Any:
        return [Parameter("/ref/version", value="1.0"), Parameter("/ref/rate_hz", value=50.0)]


def _handler(request: ServiceRequest) -> bytes:
    if json.loads(request.payload).get("index", 0) > 8:
        raise ValueError("data.index: not an LED")
    return b"{}"


def _schema(name: str) -> foxglove.Schema:
    return foxglove.Schema(name=name, encoding="jsonschema", data=b'{"type": "object"}')


@pytest.fixture
def reference() -> Iterator[str]:
    """foxglove-sdk's server with one JSON channel publishing at 50 Hz, one service and parameters."""
    service = Service(
        name=REF_SERVICE,
        schema=ServiceSchema(
            name="led",
            request=MessageSchema(encoding="json", schema=_schema("led")),
            response=MessageSchema(encoding="json", schema=_schema("hwgateway/CommandResult")),
        ),
        handler=_handler,
    )
    server = foxglove.start_server(
        name="reference",
        port=free_port(),
        capabilities=[Capability.ClientPublish, Capability.Services, Capability.Parameters],
        server_listener=_Listener(),
        supported_encodings=["json"],
        services=[service],
    )
    channel = Channel(
        REF_TOPIC,
        schema={"title": "creos_messages/ControllerState", "type": "object", "properties": {"x": {"type": "number"}}},
        message_encoding="json",
    )
    stop = threading.Event()

    def publish() -> None:
        x = 0.0
        while not stop.wait(0.02):
            x += 1
            channel.log({"x": x})

    thread = threading.Thread(target=publish, daemon=True)
    thread.start()
    try:
        yield f"ws://127.0.0.1:{server.port}/"
    finally:
        stop.set()
        thread.join()
        channel.close()
        server.stop()


def missing_fields(reference: Any, ours: Any, path: str = "") -> list[str]:
    """Paths of fields the reference has and ours lacks (lists compare the union of their items' fields)."""
    if isinstance(reference, dict):
        if not isinstance(ours, dict):
            return [f"{path or '.'}: {type(ours).__name__} instead of an object"]
        missing = []
        for key, value in reference.items():
            if key not in ours:
                missing.append(f"{path}.{key}")
            else:
                missing += missing_fields(value, ours[key], f"{path}.{key}")
        return missing
    if isinstance(reference, list) and reference and all(isinstance(item, dict) for item in reference):
        if not isinstance(ours, list) or not ours:
            return [f"{path}[]: empty or not a list"]
        merged_ref = {k: v for item in reference for k, v in item.items()}
        merged_ours = {k: v for item in ours for k, v in item.items()}
        return missing_fields(merged_ref, merged_ours, path + "[]")
    return []


def test_missing_fields_finds_what_we_lack() -> None:
    assert missing_fields({"a": 1, "b": {"c": 2}, "d": [{"e": 1}]}, {"a": 1, "b": {}, "d": [{"f": 1}]}) == [
        ".b.c",
        ".d[].e",
    ]
    assert missing_fields({"a": [{"b": 1}]}, {"a": [{"b": 2, "z": 0}], "y": 1}) == []


def plan(topic: str, service: str) -> dict[str, Any]:
    return {
        "subscribe": [topic],
        "messages": 2,
        "services": [{"name": service, "request": {"index": 0, "rgb": [1, 0, 0]}}],
        "getParameters": [],
        "timeoutMs": 10000,
    }


async def failure(url: str, service_name: str, subprotocol: str) -> dict[str, Any]:
    """The serviceCallFailure of a bad call of `service_name`."""
    client = await RawFoxglove.open(url, subprotocol)
    try:
        services = (await client.wait_for("advertiseServices"))["services"]
        service = next(s for s in services if s["name"] == service_name)
        await client.ws.send(service_call(service["id"], 41, b'{"index": 99, "rgb": [0, 0, 0]}'))
        answer: dict[str, Any] = await client.wait_for("serviceCallFailure")
        return answer
    finally:
        await client.close()


async def message_frame(url: str, topic: str, subprotocol: str) -> tuple[bytes, dict[str, Any], dict[str, Any]]:
    """One raw MessageData frame on `topic` (subscription id 5), with the advertise and serverInfo messages."""
    client = await RawFoxglove.open(url, subprotocol)
    try:
        info = await client.wait_for("serverInfo")
        while True:
            advertise = await client.wait_for("advertise")
            channels = [c for c in advertise["channels"] if c["topic"] == topic]
            if channels:
                break
        await client.send({"op": "subscribe", "subscriptions": [{"id": 5, "channelId": channels[0]["id"]}]})
        frame: bytes = await client.wait_for(1)
        return frame, advertise, info
    finally:
        await client.close()


def check_message_data(frame: bytes) -> None:
    opcode, subscription, log_time = struct.unpack_from("<BIQ", frame)
    assert (opcode, subscription) == (1, 5)
    assert 10**18 < log_time < 10**19  # nanoseconds since the epoch
    assert isinstance(json.loads(frame[13:]), dict)


async def test_the_same_shapes_as_foxglove_sdk(reference: str, tmp_path: Path) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, extra=FOXGLOVE)) as gateway:
        ours = foxglove_url(gateway)
        theirs = await run_node_client(reference, "foxglove.sdk.v1", plan(REF_TOPIC, REF_SERVICE))
        mine = await run_node_client(ours, "foxglove.sdk.v1", plan(OUR_TOPIC, OUR_SERVICE))
        assert theirs["errors"] == []
        assert mine["errors"] == []
        for key in ("serverInfo", "channels", "services", "serviceResponses", "parameterValues"):
            assert missing_fields(theirs[key], mine[key], key) == [], key
        # MessageData as the client parses it (the payloads themselves are different messages).
        envelope = [{k: v for k, v in m.items() if k != "data"} for m in theirs["messages"][REF_TOPIC]]
        assert missing_fields(envelope, mine["messages"][OUR_TOPIC]) == []
        assert mine["serviceResponses"][0]["encoding"] == theirs["serviceResponses"][0]["encoding"] == "json"
        assert sorted(theirs["serverInfo"]["capabilities"]) == sorted(
            [*mine["serverInfo"]["capabilities"], "parametersSubscribe"]
        )
        # A failed call, and the raw MessageData layout, with each subprotocol both servers speak.
        for subprotocol in ("foxglove.sdk.v1", "foxglove.sdk.v1.1"):
            ref_failure = await failure(reference, REF_SERVICE, subprotocol)
            our_failure = await failure(ours, OUR_SERVICE, subprotocol)
            assert missing_fields(ref_failure, our_failure) == []
            assert our_failure["callId"] == 41
            assert our_failure["message"].startswith("invalid_argument: ")
            ref_frame, ref_advertise, ref_info = await message_frame(reference, REF_TOPIC, subprotocol)
            our_frame, our_advertise, our_info = await message_frame(ours, OUR_TOPIC, subprotocol)
            check_message_data(ref_frame)
            check_message_data(our_frame)
            assert missing_fields(ref_advertise, our_advertise) == [], subprotocol
            assert missing_fields(ref_info, our_info) == []
        # v1.1 puts each schema once in `schemas` and names it by id in the channels.
        assert "schemas" in our_advertise
        assert {c["schemaId"] for c in our_advertise["channels"]} <= {s["id"] for s in our_advertise["schemas"]}


async def test_the_legacy_subprotocol_reference_refuses_and_we_accept(reference: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidStatus) as refused:
        await RawFoxglove.open(reference, "foxglove.websocket.v1")
    assert refused.value.response.status_code == 400
    async with running_gateway(tmp_path, gateway_config(tmp_path, extra=FOXGLOVE)) as gateway:
        client = await RawFoxglove.open(foxglove_url(gateway), "foxglove.websocket.v1")
        assert client.ws.subprotocol == "foxglove.websocket.v1"
        assert (await client.wait_for("serverInfo"))["sessionId"]
        await client.close()
        with pytest.raises(InvalidStatus) as none_of_ours:
            await RawFoxglove.open(foxglove_url(gateway), "foxglove.sdk.v2")
        assert none_of_ours.value.response.status_code == 400


async def test_both_pick_v1_1_when_offered_with_v1(reference: str, tmp_path: Path) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, extra=FOXGLOVE)) as gateway:
        for url in (reference, foxglove_url(gateway)):
            for offer in (["foxglove.sdk.v1", "foxglove.sdk.v1.1"], ["foxglove.websocket.v1", "foxglove.sdk.v1"]):
                client = RawFoxglove(await asyncio.wait_for(_connect(url, offer), 5))
                assert client.ws.subprotocol == ("foxglove.sdk.v1.1" if "foxglove.sdk.v1.1" in offer else offer[1])
                await client.close()


async def _connect(url: str, offer: list[str]) -> Any:
    return await websockets.connect(url, subprotocols=[Subprotocol(name) for name in offer], compression=None)
