"""Home Assistant discovery of the demo's devices: each announced with what it really has.

The Wii Remote's and the Thymio's buttons once each (not again from their generic controller streams), the micro:bit's
two and the LEGO hub's one button, the battery with the precision Home Assistant shows, and a
light whose state is read back where the device reports its LEDs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections import Counter, defaultdict
from importlib import resources
from pathlib import Path
from typing import Any

from tests.harness import gateway_config
from tests.inprocess import running_gateway
from tests.mosquitto_broker import Broker, mosquitto
from tests.test_mqtt import check_discovery, mqtt_client, mqtt_section, retained_documents

__all__ = ["mosquitto"]

DEVICES = ("wiimote-demo", "microbit-demo", "lego-demo", "sim-lamp", "thymio-demo")
#: The button streams whose first sample announces their buttons.
BUTTON_TOPICS = (
    "wiimote-demo/state",
    "wiimote-demo/controller",
    "microbit-demo/buttons",
    "lego-demo/button",
    "thymio-demo/node/1/events/state",
    "thymio-demo/node/1/buttons",
)


async def retained(broker: Broker, pattern: str) -> dict[str, bytes]:
    """The retained payloads under `pattern`, as they are."""
    payloads: dict[str, bytes] = {}
    async with mqtt_client(broker) as client:
        await client.subscribe(pattern)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(1.0):
                async for message in client.messages:
                    payloads[str(message.topic)] = bytes(message.payload)
    return payloads


def demo_devices() -> str:
    """The demo's tables of `DEVICES`, as gateway/demo.toml has them."""
    text = resources.files("gateway").joinpath("demo.toml").read_text(encoding="utf-8")
    tables = re.split(r"(?m)^(?=\[)", text)
    return "".join(table for table in tables if any(table.startswith(f"[devices.{d}]") for d in DEVICES))


async def test_demo_devices_are_announced_with_what_they_have(tmp_path: Path, mosquitto: Broker) -> None:
    config = gateway_config(
        tmp_path, devices=demo_devices(), extra=mqtt_section(mosquitto, "lab-a", "ha_discovery = true")
    )
    async with running_gateway(tmp_path, config):
        documents: dict[str, dict[str, Any]] = {}
        async with asyncio.timeout(60):
            while True:
                documents = await retained_documents(mosquitto, "homeassistant/#")
                states = await retained(mosquitto, "hwgw/lab-a/#")
                if all(f"hwgw/lab-a/{topic}" in states for topic in BUTTON_TOPICS) and len(documents) >= 14:
                    documents = await retained_documents(mosquitto, "homeassistant/#")
                    break
        check_discovery(documents)
        entities: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
        for topic, document in documents.items():
            device = document["device"]["name"].split(" (")[0]
            entities[device].append((topic.split("/")[1], document))
        for device, announced in entities.items():
            names = Counter(document["name"] for _, document in announced)
            assert [name for name, count in names.items() if count > 1] == [], device

        def buttons(device: str) -> list[str]:
            return sorted(doc["name"] for component, doc in entities[device] if component == "binary_sensor")

        assert buttons("wiimote-demo") == sorted(f"Button {b}" for b in ("A", "B", "1", "2", "+", "-", "Home"))
        assert buttons("microbit-demo") == ["Button A", "Button B"]
        assert buttons("lego-demo") == ["Button"]
        thymio = ("backward", "left", "center", "forward", "right")
        assert buttons("thymio-demo") == sorted(f"Button {name}" for name in thymio)
        (battery,) = [doc for component, doc in entities["wiimote-demo"] if doc["name"] == "Battery"]
        assert battery["suggested_display_precision"] == 0
        assert battery["device_class"] == "battery"
        assert battery["unit_of_measurement"] == "%"
        # The lamp's light follows its outputs; lights of devices that report no LED state stay optimistic.
        (lamp,) = [doc for component, doc in entities["sim-lamp"] if component == "light"]
        assert lamp["optimistic"] is False
        assert lamp["state_topic"] == "hwgw/lab-a/sim-lamp/outputs"
        outputs = json.loads(states["hwgw/lab-a/sim-lamp/outputs"])
        assert outputs["type"] == "hwgateway/SimOutputs"
        assert "value_json.data.leds" in lamp["state_template"]
        (microbit_light,) = [doc for component, doc in entities["microbit-demo"] if component == "light"]
        assert microbit_light["optimistic"] is True
        assert "state_topic" not in microbit_light
