"""Every Foxglove channel and service schema, read by the apps' own JSON Schema parser, unchanged.

Foxglove Studio and Lichtblick parse `jsonschema` channels and services with `parseJsonSchema` (their
unpublished `mcap-support` workspace package); `@foxglove/studio-base` 1.48.0 on npm ships it verbatim
in its bundle, and tests/node/foxglove/parse_json_schema.mjs runs it from there. A schema it refuses
makes the app drop the channel ("Failed to parse channel schema") or the service.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from gateway.core.client import Client
from gateway.faces.foxglove.catalog import Catalog
from gateway.messages import REGISTRY
from tests.foxglove_rig import NODE_DIR, foxglove_url, run_node_client
from tests.harness import demo_config, devices_connected
from tests.inprocess import running_gateway

LAMP_OUTPUTS = "/sim-lamp/outputs"
PAD_OUTPUTS = "/sim-pad/outputs"
MICROBIT_LEDS = "/microbit-demo/hwgateway/MicrobitLeds"
LAMP_LED = "/sim-lamp/command/led"
MICROBIT_LEDS_TOPIC = "/microbit-demo/command/hwgateway/MicrobitLeds"


async def parse(requests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Run the apps' parser over `requests` ([{name, schema, samples}]); its results by name."""
    node = shutil.which("node")
    if node is None or not (NODE_DIR / "node_modules" / "@foxglove" / "studio-base").is_dir():
        pytest.fail("the apps' JSON Schema parser is not installed: run `npm ci` in tests/node/foxglove")
    proc = await asyncio.create_subprocess_exec(
        node,
        str(NODE_DIR / "parse_json_schema.mjs"),
        cwd=NODE_DIR,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(120):
        out, err = await proc.communicate(json.dumps(requests).encode())
    assert proc.returncode == 0, err.decode()
    return {result["name"]: result for result in json.loads(out)}


class _Describer:
    """The catalog asks only `describe` of its client: this one is the real method, with no hub."""

    describe = Client.describe


async def test_every_type_describe_knows_is_accepted_by_the_apps_parser() -> None:
    catalog = Catalog()
    describer: Any = _Describer()
    requests = []
    for type_name in sorted(REGISTRY):
        # The channel schema and the service schemas the face sends for this type.
        catalog._add_channel(describer, f"check/{type_name}", type_name)
        channel = catalog.channels[f"check/{type_name}"]
        requests.append({"name": f"channel {type_name}", "type": type_name, "schema": channel.schema})
        service = catalog.device_services(describer, f"dev-{type_name}", [type_name])[0]
        requests.append({"name": f"request {type_name}", "type": type_name, "schema": service.request_schema})
        requests.append(
            {"name": f"response {type_name}", "type": service.response_type, "schema": service.response_schema}
        )
    results = await parse(requests)
    assert len(results) == 3 * len(REGISTRY)
    refused = {name: result["error"] for name, result in results.items() if result["error"] is not None}
    assert refused == {}
    # No oneOf anywhere: Lichtblick's copy of the parser dropped Foxglove's oneOf support.
    assert all("oneOf" not in request["schema"] for request in requests)
    # The nested arrays became arrays of objects with one field, `values`.
    rows = results["request hwgateway/MicrobitLeds"]["datatypes"]["hwgateway/MicrobitLeds"]
    assert rows == [{"name": "rows", "type": "hwgateway/MicrobitLeds.rows", "isComplex": True, "isArray": True}]
    leds = results["channel hwgateway/SimOutputs"]["datatypes"]["hwgateway/SimOutputs.leds"]
    assert leds == [{"name": "values", "type": "float64", "isArray": True}]


async def test_demo_channels_and_services_parse_and_their_messages_fit(tmp_path: Path) -> None:
    """The demo over the npm client: what the face advertises parses, and messages have the parsed shape."""
    async with running_gateway(tmp_path, demo_config(tmp_path)) as gateway:
        await devices_connected(gateway, {"sim-lamp", "sim-pad", "microbit-demo"})
        rows = [{"values": [row == col for col in range(5)]} for row in range(5)]
        plan = {
            "subscribe": [LAMP_OUTPUTS, PAD_OUTPUTS],
            "messages": 1,
            "publish": [
                {"topic": LAMP_LED, "schemaName": "led", "data": {"index": 1, "rgb": [1, 0, 0]}},
                # A published command in the Foxglove form too (a failure would be a status error).
                {"topic": MICROBIT_LEDS_TOPIC, "schemaName": "hwgateway/MicrobitLeds", "data": {"rows": rows}},
            ],
            "services": [{"name": MICROBIT_LEDS, "request": {"rows": rows}}],
            "timeoutMs": 15000,
        }
        report = await run_node_client(foxglove_url(gateway), "foxglove.websocket.v1", plan)
        assert report["errors"] == [], report["errors"]
        assert report["statuses"] == [], report["statuses"]
        requests = []
        for channel in report["channels"]:
            samples = [orjson.dumps(m["data"]).decode() for m in report["messages"].get(channel["topic"], [])]
            requests.append({"name": channel["schemaName"], "schema": channel["schema"], "samples": samples})
        for service in report["services"]:
            for part in ("request", "response"):
                requests.append({"name": service[part]["schemaName"], "schema": service[part]["schema"]})
        results = await parse(requests)
        refused = {name: result["error"] for name, result in results.items() if result["error"] is not None}
        assert refused == {}
        assert {"hwgateway/SimOutputs", "hwgateway/MicrobitLeds"} <= set(results)
        # The micro:bit took its matrix in the Foxglove form (a response, not a failure).
        assert report["serviceFailures"] == []
        assert [r["name"] for r in report["serviceResponses"]] == [MICROBIT_LEDS]
        # A lamp's LED colours arrive as {values: [r, g, b]} objects, as the parsed datatypes say.
        for topic in (LAMP_OUTPUTS, PAD_OUTPUTS):
            (message,) = report["messages"][topic]
            assert all(set(led) == {"values"} and len(led["values"]) == 3 for led in message["data"]["leds"])
        (lamp,) = results["hwgateway/SimOutputs"]["samples"][:1]
        assert lamp["leds"], lamp
