"""The demo's Home Assistant discovery documents, as mosquitto holds them, validated by Home Assistant's code.

Each device is announced with what it really has (each button once and by name, the battery with
the precision Home Assistant shows, lights reading their state back where the device reports it).

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
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from gateway.config import loads
from gateway.messages.gamepad import PAD_BUTTON_NAMES
from tests.harness import devices_connected, free_port, start_demo
from tests.mosquitto_broker import Broker, mosquitto
from tests.test_mqtt import mqtt_client

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
#: The streams Home Assistant's entities read (sensors, buttons, lights' states): each announced once sampled.
ANNOUNCED = (
    "arm-demo/base",
    "arm-demo/wrist/command",
    "arm-demo/wrist/feedback",
    "gamepad-demo/state",
    "lego-demo/button",
    "microbit-demo/buttons",
    "sim-lamp/outputs",
    "sim-lamp/state",
    "sim-pad/outputs",
    "sim-pad/state",
    "thymio-demo/node/1/state",
    "wiimote-demo/state",
)
#: Controller streams whose buttons are announced from another stream of their device: none of their own.
NOT_ANNOUNCED = ("wiimote-demo/controller", "thymio-demo/node/1/buttons")


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


class Watch:
    """One subscription to the discovery documents and the gateway's states, kept as they last came."""

    def __init__(self, client: aiomqtt.Client) -> None:
        self.client = client
        self.documents: dict[str, bytes] = {}
        self.states: dict[str, bytes] = {}

    def base(self) -> str | None:
        """`hwgw/<gateway>`, once its status is in (the gateway is named after the host)."""
        statuses = [topic for topic in self.states if topic.count("/") == 2 and topic.endswith("/status")]
        return statuses[0].removesuffix("/status") if statuses else None

    def _keep(self, message: aiomqtt.Message) -> None:
        topic = str(message.topic)
        kept = self.documents if topic.startswith("homeassistant/") else self.states
        kept[topic] = bytes(message.payload)

    async def until(self, ready: Callable[[], bool], timeout: float = 60) -> None:
        """Read on until `ready()` holds (checked at each message, and after `SETTLE_S` more, again)."""
        async with asyncio.timeout(timeout):
            while True:
                async for message in self.client.messages:
                    self._keep(message)
                    if ready():
                        break
                with contextlib.suppress(TimeoutError):  # what the same burst still holds (late documents)
                    async with asyncio.timeout(SETTLE_S):
                        async for message in self.client.messages:
                            self._keep(message)
                if ready():
                    return

    def lights(self) -> list[dict[str, Any]]:
        """The light documents that read their state back."""
        lights = [json.loads(payload) for topic, payload in self.documents.items() if "/light/" in topic]
        return [light for light in lights if "state_topic" in light]

    async def switched(self, state: str) -> dict[str, bytes]:
        """The states once every light with a state topic took its `command_<state>_template`.

        The command goes to the light's `command_topic` as Home Assistant publishes it (QoS 1, no token).
        """
        lights = self.lights()
        for light in lights:
            await self.client.publish(light["command_topic"], light[f"command_{state}_template"], qos=light["qos"])

        def landed() -> bool:
            messages = [json.loads(self.states.get(light["state_topic"], b"null")) for light in lights]
            return all(m is not None and LIT[m["type"]](m["data"]) == (state == "on") for m in messages)

        await self.until(landed, timeout=30)
        return dict(self.states)


#: Seconds read on after a condition held, for what the same burst still holds.
SETTLE_S = 0.5


async def run_demo(tmp_path: Path, broker: Broker) -> tuple[dict[str, bytes], dict[str, bytes], list[dict[str, bytes]]]:
    """`hwgateway demo --mqtt URL`'s retained discovery documents and states, and the states after off, then on.

    Only the lights that read their state back are switched (as Home Assistant switches them).
    """
    demo = await start_demo(tmp_path, free_port(), free_port(), "--mqtt", broker.url)
    try:
        await devices_connected(demo, DEVICES, timeout=60)
        async with mqtt_client(broker, aiomqtt.ProtocolVersion.V311) as client:
            await client.subscribe("homeassistant/#")
            await client.subscribe("hwgw/#")
            watch = Watch(client)

            def announced() -> bool:  # every stream sampled and each announced one read by a document
                base = watch.base()
                read = {json.loads(payload).get("state_topic") for payload in watch.documents.values()}
                streams = {f"{base}/{stream}" for stream in ANNOUNCED}
                sampled = streams | {f"{base}/{stream}" for stream in NOT_ANNOUNCED}
                return base is not None and streams <= read and sampled <= set(watch.states)

            await watch.until(announced)
            documents, states = dict(watch.documents), dict(watch.states)
            snapshots = [await watch.switched("off"), await watch.switched("on")]
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
    read = {json.loads(payload).get("state_topic") for payload in documents.values()} - {None}
    assert {topic.split("/", 2)[2] for topic in read} == set(ANNOUNCED)  # none from NOT_ANNOUNCED
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
    # What each device really has, each once: the Wii Remote's and the Thymio's buttons not again from
    # their controller streams, the micro:bit's two and the LEGO hub's one, a pad's by their names.
    entities: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for topic, payload in documents.items():
        document = json.loads(payload)
        entities[document["device"]["name"].split(" (")[0]].append((topic.split("/")[1], document))
    for device, announced_entities in entities.items():
        names = Counter(document["name"] for _, document in announced_entities)
        assert [name for name, count in names.items() if count > 1] == [], device

    def buttons(device: str) -> list[str]:
        return sorted(document["name"] for component, document in entities[device] if component == "binary_sensor")

    assert buttons("wiimote-demo") == sorted(f"Button {b}" for b in ("A", "B", "1", "2", "+", "-", "Home"))
    assert buttons("microbit-demo") == ["Button A", "Button B"]
    assert buttons("lego-demo") == ["Button"]
    assert buttons("thymio-demo") == sorted(f"Button {b}" for b in ("backward", "left", "center", "forward", "right"))
    for pad in ("gamepad-demo", "sim-pad", "sim-lamp"):
        assert buttons(pad) == sorted(f"Button {name}" for name in PAD_BUTTON_NAMES), pad
    (battery_document,) = [document for _, document in entities["wiimote-demo"] if document["name"] == "Battery"]
    assert (battery_document["device_class"], battery_document["unit_of_measurement"]) == ("battery", "%")
    assert battery_document["suggested_display_precision"] == 0  # 92 %, not 92.3076923076923 %
    lamp = entity("sim-lamp", "light", "LED")
    (lamp_document,) = [document for component, document in entities["sim-lamp"] if component == "light"]
    assert lamp_document["state_topic"].endswith("/sim-lamp/outputs")
    assert "value_json.data.leds" in lamp_document["state_template"]
    assert lamp["after"] == ["off", "on"]
    for device in DEVICES:  # every light's commands are our `led` command
        (light_document,) = [document for component, document in entities[device] if component == "light"]
        for key in ("command_on_template", "command_off_template"):
            assert json.loads(light_document[key])["type"] == "led", device


def test_the_readme_says_what_to_type_and_its_config_lines_load() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Home Assistant\n") : text.index("## Several hosts\n")]
    assert 'make demo DEMO_ARGS="--mqtt mqtt://127.0.0.1:1883"' in section  # what the test above runs
    (block,) = re.findall(r"```toml\n(.*?)```", section, re.DOTALL)
    mqtt = loads(block).mqtt
    assert (mqtt.url, mqtt.ha_discovery) == ("mqtt://127.0.0.1:1883", True)
