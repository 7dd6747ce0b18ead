"""The demo's Home Assistant discovery documents, as mosquitto holds them, validated by Home Assistant's code.

`hwgateway demo --mqtt URL` (as the README has users type it: every device kind the demo simulates,
Home Assistant discovery on) runs against Debian's mosquitto; every retained discovery document and
the retained states they read are handed to tests/ha/validate_discovery.py, which runs under
`.venv-ha` (homeassistant 2024.1.6, `make ha-venv`): its MQTT platforms' discovery schemas, its
sensor unit and state class tables, and its template engine rendering each entity's templates
against what the gateway really published.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from devices.gamepad.normalize import BUTTON_NAMES as PAD_BUTTON_NAMES
from gateway.config import loads
from tests.harness import devices_connected, free_port, start_demo
from tests.mosquitto_broker import Broker, mosquitto
from tests.test_mqtt import mqtt_client
from tests.test_mqtt_discovery import retained

__all__ = ["mosquitto"]

ROOT = Path(__file__).resolve().parent.parent
HA_PYTHON = ROOT / ".venv-ha" / "bin" / "python"
VALIDATOR = ROOT / "tests" / "ha" / "validate_discovery.py"
#: Every device of the demo, each announced with at least one entity.
DEVICES = (
    "sim-pad",
    "sim-lamp",
    "gamepad-demo",
    "arm-demo",
    "thymio-demo",
    "wiimote-demo",
    "microbit-demo",
    "lego-demo",
)
#: The streams whose first sample announces entities (buttons, sensors), retained once published.
STREAMS = (
    "wiimote-demo/state",
    "wiimote-demo/controller",
    "microbit-demo/buttons",
    "lego-demo/button",
    "gamepad-demo/state",
    "thymio-demo/node/1/events/state",
    "thymio-demo/node/1/buttons",
    "arm-demo/base",
    "arm-demo/wrist/feedback",
)


@contextlib.asynccontextmanager
async def validator() -> AsyncIterator[asyncio.subprocess.Process]:
    """tests/ha/validate_discovery.py started under `.venv-ha`: it imports Home Assistant while the demo starts."""
    if not HA_PYTHON.exists():
        pytest.fail("Home Assistant's venv is missing: `make ha-venv` (run by `make test`) builds .venv-ha")
    proc = await asyncio.create_subprocess_exec(
        str(HA_PYTHON),
        str(VALIDATOR),
        "homeassistant",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def validated(
    proc: asyncio.subprocess.Process,
    documents: dict[str, bytes],
    states: dict[str, bytes],
    snapshots: list[dict[str, bytes]],
) -> dict[str, Any]:
    """Home Assistant's verdict (from `validator()`'s `proc`) on `documents` with the retained `states`.

    Each light's state is also rendered from each of the later `snapshots` of the states.
    """
    given = {
        "documents": {topic: payload.decode() for topic, payload in documents.items()},
        "states": {topic: payload.decode() for topic, payload in states.items()},
        "snapshots": [{topic: payload.decode() for topic, payload in later.items()} for later in snapshots],
    }
    out, err = await asyncio.wait_for(proc.communicate(json.dumps(given).encode()), 120)
    assert proc.returncode == 0, err.decode()[-3000:]
    result: dict[str, Any] = json.loads(out)
    return result


#: Whether a device's reported LEDs are lit, per message type: only to know when a switch has landed
#: (what Home Assistant makes of the same message is its own template's answer, checked after).
LIT: dict[str, Callable[[dict[str, Any]], bool]] = {
    "hwgateway/SimOutputs": lambda data: any(channel > 0 for led in data["leds"] for channel in led),
    "wiimote/State": lambda data: any(data["LEDs"]),
    "kortex/WristCyclicC61/Command": lambda data: data["led_ring_rgb"] > 0,
}


async def switched(broker: Broker, documents: dict[str, bytes], state: str) -> dict[str, bytes]:
    """The retained states once every light with a state topic took its `command_<state>_template`.

    The command goes to the light's `command_topic` as Home Assistant publishes it (QoS 1, no token).
    """
    lights = [json.loads(p) for t, p in documents.items() if "/light/" in t and "state_topic" in json.loads(p)]
    async with mqtt_client(broker, aiomqtt.ProtocolVersion.V311) as client:
        for light in lights:
            await client.publish(light["command_topic"], light[f"command_{state}_template"], qos=light["qos"])
    async with asyncio.timeout(30):
        while True:
            states = await retained(broker, "hwgw/#")
            messages = [json.loads(states[light["state_topic"]]) for light in lights]
            if all(LIT[message["type"]](message["data"]) == (state == "on") for message in messages):
                return states


async def run_demo(tmp_path: Path, broker: Broker) -> tuple[dict[str, bytes], dict[str, bytes], list[dict[str, bytes]]]:
    """`hwgateway demo --mqtt URL`'s retained discovery documents and states, and the states after off, then on.

    Only the lights that read their state back are switched (as Home Assistant switches them).
    """
    demo = await start_demo(tmp_path, free_port(), free_port(), "--mqtt", broker.url)
    try:
        await devices_connected(demo, DEVICES, timeout=60)
        async with asyncio.timeout(60):
            while True:  # the gateway is named after the host: hwgw/<host>/status
                states = await retained(broker, "hwgw/#")
                base = next(
                    (t.removesuffix("/status") for t in states if t.count("/") == 2 and t.endswith("/status")), None
                )
                if base is not None and all(f"{base}/{stream}" in states for stream in STREAMS):
                    break
        documents = await retained(broker, "homeassistant/#")
        states = await retained(broker, "hwgw/#")
        snapshots = [await switched(broker, documents, "off"), await switched(broker, documents, "on")]
    finally:
        assert await demo.stop() == 0
    return documents, states, snapshots


async def test_every_demo_discovery_document_passes_home_assistants_own_schemas(
    tmp_path: Path, mosquitto: Broker
) -> None:
    async with validator() as home_assistant:
        documents, states, snapshots = await run_demo(tmp_path, mosquitto)
        verdict = await validated(home_assistant, documents, states, snapshots)
    assert verdict["errors"] == []
    checked = verdict["checked"]
    assert set(checked) == set(documents)
    announced = {json.loads(payload)["device"]["name"].split(" (")[0] for payload in documents.values()}
    assert announced == set(DEVICES)
    components = {report["component"] for report in checked.values()}
    assert components == {"sensor", "binary_sensor", "light"}

    def entity(device: str, component: str, name: str) -> dict[str, Any]:
        (topic,) = [
            topic
            for topic, payload in documents.items()
            if topic.split("/")[1] == component
            and json.loads(payload)["name"] == name
            and json.loads(payload)["device"]["name"].startswith(f"{device} (")
        ]
        report: dict[str, Any] = checked[topic]
        return report

    # What Home Assistant shows, rendered by its templates from what the gateway published.
    battery = float(entity("wiimote-demo", "sensor", "Battery")["value_template"])
    assert 0 <= battery <= 100
    assert entity("microbit-demo", "binary_sensor", "Button A")["value_template"] in ("ON", "OFF")
    # Lights show what the device reports where it reports its LEDs; the others stay optimistic.
    for device in ("sim-lamp", "sim-pad", "wiimote-demo", "arm-demo"):
        light = entity(device, "light", "LED")
        assert light["optimistic"] is False, device
        assert light["state_template"] in ("on", "off"), device
        assert light["after"] == ["off", "on"], device  # switched off, then on, by its own command templates
    for device in ("microbit-demo", "lego-demo", "thymio-demo", "gamepad-demo"):
        assert entity(device, "light", "LED")["optimistic"] is True, device
    # A pad's buttons by their names (✕, L1, D-pad up, ...), each once.
    pad = sorted(json.loads(p)["name"] for t, p in documents.items() if "/binary_sensor/" in t and "gamepad-demo" in t)
    assert pad == sorted(f"Button {name}" for name in PAD_BUTTON_NAMES)


def test_the_readme_says_what_to_type_and_its_config_lines_load() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Home Assistant\n") : text.index("## Several hosts\n")]
    assert 'make demo DEMO_ARGS="--mqtt mqtt://127.0.0.1:1883"' in section  # what the test above runs
    (block,) = re.findall(r"```toml\n(.*?)```", section, re.DOTALL)
    mqtt = loads(block).mqtt
    assert (mqtt.url, mqtt.ha_discovery) == ("mqtt://127.0.0.1:1883", True)
