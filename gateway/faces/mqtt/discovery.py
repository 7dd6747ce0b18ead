"""Home Assistant MQTT discovery: retained `<prefix>/<component>/<node id>/<object id>/config` documents.

Entities come from the message types a device publishes: battery and temperatures as `sensor`s,
buttons as `binary_sensor`s, and a device's `led` command as an on/off `light` (template schema, so
Home Assistant sends our own command JSON; its state is read back where the device reports its
LEDs). Every entity is available while both this gateway's `status` is `online` and its device's
`availability` says `online` (availability_mode `all`).
Fields follow Home Assistant's MQTT sensor, binary sensor and light (template schema) documentation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gateway import __version__
from gateway.faces.mqtt.topics import TopicMap
from gateway.messages.gamepad import PAD_BUTTON_NAMES

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class _Sensor:
    field: str
    name: str
    device_class: str
    unit: str
    #: Digits Home Assistant shows (the value itself keeps its precision).
    precision: int = 1


@dataclass(frozen=True, slots=True)
class _Button:
    index: int
    name: str
    pressed: str  # Jinja test on the element: "" (truthy) or "!= 0"


#: Numeric sensors per published message type.
SENSORS: dict[str, tuple[_Sensor, ...]] = {
    "wiimote/State": (_Sensor("percent_battery", "Battery", "battery", "%", 0),),
    "hwgateway/ThymioState": (_Sensor("temperature", "Temperature", "temperature", "°C"),),
    "kortex/BaseCyclic/BaseFeedback": (
        _Sensor("temperature_cpu", "CPU temperature", "temperature", "°C"),
        _Sensor("temperature_ambient", "Ambient temperature", "temperature", "°C"),
    ),
    "kortex/WristCyclicC61/Feedback": (_Sensor("temperature_core", "Wrist temperature", "temperature", "°C"),),
}

#: Buttons per published message type (index in the message's `buttons`).
BUTTONS: dict[str, tuple[_Button, ...]] = {
    "wiimote/State": tuple(
        _Button(index, f"Button {name}", "")
        for index, name in ((2, "A"), (3, "B"), (0, "1"), (1, "2"), (4, "+"), (5, "-"), (10, "Home"))
    ),
    "hwgateway/ThymioState": tuple(
        _Button(index, f"Button {name}", "")
        for index, name in enumerate(("backward", "left", "center", "forward", "right"))
    ),
}

#: The generic controller state's buttons are as many as a sample has, named per device kind where the
#: device names them (the order is the device's). A Wii Remote's are its `wiimote/State` buttons again
#: and a Thymio's its `hwgateway/ThymioState` ones, announced by name there: not announced twice.
CONTROLLER = "creos_messages/ControllerState"
CONTROLLER_BUTTON_NAMES: dict[str, tuple[str, ...]] = {
    "microbit": ("A", "B"),
    "lego_hub": ("",),
    # A gamepad's 17 in the order every ControllerState of a pad has (the simulated pads' too).
    "gamepad": PAD_BUTTON_NAMES,
    "sim": PAD_BUTTON_NAMES,
}
CONTROLLER_BUTTONS_ELSEWHERE = frozenset({"wiimote", "aseba"})


def _controller_buttons(kind: str, count: int) -> tuple[_Button, ...]:
    if kind in CONTROLLER_BUTTONS_ELSEWHERE:
        return ()
    names = CONTROLLER_BUTTON_NAMES.get(kind)
    if names is None:
        names = tuple(str(index) for index in range(count))
    # A ControllerState button is 0 released, 1 pressed, 2 held long (-1/1 a 3-way switch off centre): on unless 0.
    return tuple(_Button(index, f"Button {name}".rstrip(), "!= 0") for index, name in enumerate(names[:count]))


#: Where a device kind reports its LEDs, and the template saying whether any is lit ("on"/"off").
#: Other kinds (micro:bit, LEGO hub, Thymio, gamepad) publish no LED state: their light stays optimistic.
LED_STATE: dict[str, tuple[str, str]] = {
    "sim": (
        "outputs",  # hwgateway/SimOutputs: `leds` holds one [r, g, b] per LED
        "{{ 'on' if value_json.data.leds | sum(start=[]) | select('gt', 0) | list | length > 0 else 'off' }}",
    ),
    "wiimote": (
        "state",  # wiimote/State: `LEDs`, the four player LEDs as the remote has them (on or off)
        "{{ 'on' if true in value_json.data.LEDs else 'off' }}",
    ),
    "kortex": (
        "wrist/command",  # kortex/WristCyclicC61/Command sent every cycle: `led_ring_rgb` is 0xRRGGBB
        "{{ 'on' if value_json.data.led_ring_rgb > 0 else 'off' }}",
    ),
}


def _safe(text: str) -> str:
    return _UNSAFE.sub("_", text)


class Discovery:
    """Builds the discovery documents of this gateway's devices."""

    def __init__(self, topics: TopicMap, prefix: str) -> None:
        self._topics = topics
        self._prefix = prefix
        self._node = _safe(f"hwgw_{topics.own}")

    def _common(self, device: str, kind: str, key: str, name: str) -> dict[str, Any]:
        own = self._topics.own
        unique = _safe(f"hwgw_{own}_{device}_{key}")
        return {
            "name": name,
            "unique_id": unique,
            "object_id": unique,
            "device": {
                "identifiers": [_safe(f"hwgw_{own}_{device}")],
                "name": f"{device} ({own})",
                "manufacturer": "hwgateway",
                "model": kind,
                "sw_version": __version__,
            },
            "availability": [
                {
                    "topic": self._topics.gateway(own, "status"),
                    "payload_available": "online",
                    "payload_not_available": "offline",
                },
                {
                    "topic": self._topics.device(own, device, "availability"),
                    "value_template": "{{ value_json.state }}",
                    "payload_available": "online",
                    "payload_not_available": "offline",
                },
            ],
            "availability_mode": "all",
        }

    def _topic(self, component: str, unique: str) -> str:
        return f"{self._prefix}/{component}/{self._node}/{unique}/config"

    def for_topic(
        self, device: str, kind: str, bus_topic: str, type_name: str, data: dict[str, Any] | None = None
    ) -> list[tuple[str, dict[str, Any]]]:
        """The documents for the samples of `type_name` on `bus_topic` (none for most types).

        `data` is a sample's: a controller state announces the buttons it has.
        """
        state_topic = self._topics.state(self._topics.own, bus_topic)
        stream = bus_topic.split("/", 1)[1]
        documents: list[tuple[str, dict[str, Any]]] = []
        for sensor in SENSORS.get(type_name, ()):
            document = self._common(device, kind, f"{stream}_{sensor.field}", sensor.name)
            document.update(
                {
                    "state_topic": state_topic,
                    "value_template": f"{{{{ value_json.data.{sensor.field} }}}}",
                    "device_class": sensor.device_class,
                    "unit_of_measurement": sensor.unit,
                    "state_class": "measurement",
                    "suggested_display_precision": sensor.precision,
                }
            )
            documents.append((self._topic("sensor", document["unique_id"]), document))
        buttons = BUTTONS.get(type_name, ())
        if type_name == CONTROLLER:
            buttons = _controller_buttons(kind, len((data or {}).get("buttons", ())))
        for button in buttons:
            document = self._common(device, kind, f"{stream}_button_{button.index}", button.name)
            test = f"value_json.data.buttons[{button.index}] {button.pressed}".rstrip()
            document.update(
                {
                    "state_topic": state_topic,
                    "value_template": f"{{{{ 'ON' if {test} else 'OFF' }}}}",
                    "payload_on": "ON",
                    "payload_off": "OFF",
                }
            )
            documents.append((self._topic("binary_sensor", document["unique_id"]), document))
        return documents

    def for_device(self, device: str, kind: str, accepts: tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
        """The documents of the device itself: an on/off light when it takes `led` commands."""
        if "led" not in accepts:
            return []
        document = self._common(device, kind, "led", "LED")
        document.update(
            {
                "schema": "template",
                "command_topic": self._topics.device(self._topics.own, device, "set"),
                "command_on_template": '{"type": "led", "data": {"index": -1, "rgb": [1.0, 1.0, 1.0]}}',
                "command_off_template": '{"type": "led", "data": {"index": -1, "rgb": [0.0, 0.0, 0.0]}}',
                "optimistic": True,
                "qos": 1,
            }
        )
        outputs = LED_STATE.get(kind)
        if outputs is not None:  # the device reports its LEDs: Home Assistant shows what they are
            stream, template = outputs
            document["state_topic"] = self._topics.state(self._topics.own, f"{device}/{stream}")
            document["state_template"] = template
            document["optimistic"] = False
        return [(self._topic("light", document["unique_id"]), document)]
