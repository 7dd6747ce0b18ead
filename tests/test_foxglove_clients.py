"""The npm Foxglove client (@foxglove/ws-protocol 0.8.0, unchanged) against the daemon with the demo devices."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped, unused-ignore]

from gateway.faces.foxglove.wire import LEGACY_V1
from tests.foxglove_rig import SUBPROTOCOLS, foxglove_url, run_node_client
from tests.harness import connect, demo_config, devices_connected
from tests.inprocess import running_gateway

WIIMOTE = "/wiimote-demo/state"
WRIST = "/arm-demo/wrist/feedback"
LED_TOPIC = "/thymio-demo/command/thymio_msgs/Led"
GET_VARIABLE = "/thymio-demo/asebaros_msgs/GetVariable"
BAD_LED = "/sim-lamp/led"


def plan(led_values: list[float]) -> dict[str, Any]:
    return {
        "subscribe": [WIIMOTE, WRIST],
        # The arm's feedback follows its 1 kHz UDP cycle, which a loaded CI machine can starve: its latest
        # sample (sent at subscribe) is enough there.
        "messages": {WIIMOTE: 3, WRIST: 1},
        "publish": [{"topic": LED_TOPIC, "schemaName": "thymio_msgs/Led", "data": {"id": 0, "values": led_values}}],
        "services": [
            {"name": GET_VARIABLE, "request": {"variable": "gw.sound"}},
            {"name": BAD_LED, "request": {"index": 99, "rgb": [0, 0, 0]}},
        ],
        "getParameters": [],
        "timeoutMs": 15000,
    }


def check_messages(report: dict[str, Any], topic: str, type_name: str, count: int) -> None:
    channel = next(c for c in report["channels"] if c["topic"] == topic)
    assert channel["encoding"] == "json"
    assert channel["schemaEncoding"] == "jsonschema"
    assert channel["schemaName"] == type_name
    schema = json.loads(channel["schema"])
    messages = report["messages"][topic]
    assert len(messages) == count, report["errors"]
    now_ns = time.time_ns()
    stamps = []
    for message in messages:
        jsonschema.validate(message["data"], schema)
        stamp = int(message["timestamp"])
        assert abs(stamp - now_ns) < 120 * 10**9, (stamp, now_ns)
        stamps.append(stamp)
    assert stamps == sorted(stamps)
    assert len({message["subscriptionId"] for message in messages}) == 1


async def led_row(gateway: Any) -> list[int]:
    client = await connect(gateway, "ws")
    try:
        answer = await client.ok(
            "command", device="thymio-demo", type="asebaros_msgs/GetVariable", data={"variable": "gw.led"}
        )
        return list(answer["data"][0:8])
    finally:
        await client.close()


async def test_npm_client_with_each_subprotocol(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, demo_config(tmp_path)) as gateway:
        await devices_connected(gateway, {"wiimote-demo", "arm-demo", "thymio-demo", "sim-lamp"})
        url = foxglove_url(gateway)
        session_ids = set()
        for index, subprotocol in enumerate(SUBPROTOCOLS):
            values = [1.0, 0, 0, 0, 0, 0, 0, 1.0] if index == 0 else [0, 0.5, 0, 0, 0, 0, 0, 0]
            report = await run_node_client(url, subprotocol, plan(values))
            assert report["errors"] == [], report["errors"]
            assert report["subprotocol"] == subprotocol
            info = report["serverInfo"]
            assert info["op"] == "serverInfo"
            assert set(info["capabilities"]) == {"clientPublish", "services", "parameters"}
            assert info["supportedEncodings"] == ["json"]
            session_ids.add(info["sessionId"])
            check_messages(report, WIIMOTE, "wiimote/State", 3)
            check_messages(report, WRIST, "kortex/WristCyclicC61/Feedback", 1)
            # Client publish: the LED command reached the simulated robot's VM (gw.led 0..32 per LED).
            expected = [round(v * 32) for v in values]
            for _ in range(100):
                if await led_row(gateway) == expected:
                    break
                await asyncio.sleep(0.05)
            assert await led_row(gateway) == expected
            # Services: one ok with the response schema's shape, one failure with our code and message.
            service = next(s for s in report["services"] if s["name"] == GET_VARIABLE)
            assert service["type"] == "asebaros_msgs/GetVariable"
            assert service["response"]["schemaName"] == "asebaros_msgs/GetVariable_Response"
            ok = next(r for r in report["serviceResponses"] if r["name"] == GET_VARIABLE)
            assert ok["encoding"] == "json"
            jsonschema.validate(ok["data"], json.loads(service["response"]["schema"]))
            failure = next(f for f in report["serviceFailures"] if f["name"] == BAD_LED)
            assert failure["message"].startswith("invalid_argument: "), failure
            failed_answers = [r for r in report["serviceResponses"] if r["name"] == BAD_LED]
            if subprotocol == LEGACY_V1:  # the failure is also answered as the apps of that subprotocol need
                assert [r["data"]["error"]["code"] for r in failed_answers] == ["invalid_argument"]
                assert [s["level"] for s in report["statuses"]] == [2], report["statuses"]
                report["statuses"] = []
            else:
                assert failed_answers == []
            # Parameters: read-only facts, the request id echoed.
            values_message = report["parameterValues"][0]
            assert values_message["id"] == "get-1"
            parameters = {p["name"]: p["value"] for p in values_message["parameters"]}
            assert parameters["/gateway/version"]
            assert parameters["/devices/thymio-demo/kind"] == "aseba"
            assert "thymio_msgs/Led" in parameters["/devices/thymio-demo/accepts"]
            assert report["statuses"] == []
        assert len(session_ids) == 1  # stable for the life of the process


async def test_set_parameters_is_a_clear_status_error(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, demo_config(tmp_path)) as gateway:
        report = await run_node_client(
            foxglove_url(gateway),
            "foxglove.websocket.v1",
            {"setParameters": [{"name": "/gateway/version", "value": "9"}], "timeoutMs": 8000},
        )
        assert report["errors"] == []
        assert [s["level"] for s in report["statuses"]] == [2]
        assert "read-only" in report["statuses"][0]["message"]
        unchanged = report["parameterValues"][0]
        assert unchanged["id"] == "set-1"
        assert unchanged["parameters"][0]["value"] != "9"


async def test_a_failed_call_ends_in_an_app_that_waits_for_its_response(tmp_path: Path) -> None:
    """Lichtblick (and Foxglove Studio 1.x) speak foxglove.websocket.v1 and settle a service call only on a
    `serviceCallResponse` with its call id: a failed call must get one, or the app shows "Calling…" for ever.

    The npm client is driven as that app drives it (calls by id, waits for the response); over the sdk
    subprotocols the failure is `serviceCallFailure` alone, as their spec says.
    """
    async with running_gateway(tmp_path, demo_config(tmp_path)) as gateway:
        await devices_connected(gateway, {"sim-lamp"})
        call = {"services": [{"name": BAD_LED, "request": {"index": 99, "rgb": [0, 0, 0]}}], "timeoutMs": 15000}
        for subprotocol in SUBPROTOCOLS:
            report = await run_node_client(foxglove_url(gateway), subprotocol, {**call, "lingerMs": 500})
            assert report["errors"] == [], report["errors"]
            failures = [f for f in report["serviceFailures"] if f["name"] == BAD_LED]
            assert [f["message"].split(":")[0] for f in failures] == ["invalid_argument"], report
            responses = [r for r in report["serviceResponses"] if r["name"] == BAD_LED]
            if subprotocol != LEGACY_V1:
                assert responses == [], report
                assert report["statuses"] == [], report
                continue
            # The app's pending call ends with a result that says what went wrong...
            assert len(responses) == 1, report
            assert responses[0]["callId"] == failures[0]["callId"]
            assert responses[0]["encoding"] == "json"
            error = responses[0]["data"]["error"]
            assert error["code"] == "invalid_argument"
            assert "99" in error["message"]
            # ...and its problems list shows the failure as an error.
            assert len(report["statuses"]) == 1
            assert report["statuses"][0]["level"] == 2
            expected = f"service call {failures[0]['callId']} failed: invalid_argument: "
            assert expected in report["statuses"][0]["message"]
