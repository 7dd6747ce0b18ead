"""Home Assistant's own MQTT discovery checks, run under the Home Assistant venv (`make ha-venv`).

Run as `.venv-ha/bin/python tests/ha/validate_discovery.py PREFIX < input.json`, never with the
gateway's venv. The input is `{"documents": {topic: payload}, "states": {topic: payload}, "snapshots": [...]}`:
the retained discovery documents under PREFIX and the retained state messages, as the broker holds
them, and later snapshots of the states (after commands) that each light's state is rendered from too.
Each document goes through what Home Assistant 2024.1's MQTT integration does with it: the discovery
topic matched by its TOPIC_MATCHER and its component among SUPPORTED_COMPONENTS, the payload parsed
by its json_loads_object and validated by the component's DISCOVERY_SCHEMA (keys that schema drops
are reported: Home Assistant would ignore them), a sensor's device class, unit and state class
checked against the sensor integration's own tables, and every template rendered by its
MqttValueTemplate against the retained state message on the document's state topic, as the entity
renders what it receives. Prints `{"checked": {topic: {...}}, "errors": [...]}` as JSON.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
import tempfile
from typing import Any

# Home Assistant's own import order: its helpers before the integrations (else a circular import).
import homeassistant.helpers.entity_platform  # noqa: F401
from homeassistant.components.mqtt.discovery import SUPPORTED_COMPONENTS, TOPIC_MATCHER
from homeassistant.components.mqtt.models import MqttValueTemplate
from homeassistant.components.sensor import SensorDeviceClass, SensorStateClass
from homeassistant.components.sensor.const import DEVICE_CLASS_STATE_CLASSES, DEVICE_CLASS_UNITS
from homeassistant.const import STATE_OFF, STATE_ON
from homeassistant.core import HomeAssistant
from homeassistant.util.json import json_loads_object

#: The template keys of each component, with the states their rendering may give.
TEMPLATES = {
    "sensor": ("value_template",),
    "binary_sensor": ("value_template",),
    "light": ("state_template",),
}


def rendered(hass: HomeAssistant, config: dict[str, Any], key: str, payload: str) -> Any:
    """`config[key]` rendered as the entity renders it against a received `payload`."""
    return MqttValueTemplate(config[key], hass=hass).async_render_with_possible_json_value(payload)


def check(
    hass: HomeAssistant,
    prefix: str,
    topic: str,
    payload: str,
    states: dict[str, str],
    snapshots: list[dict[str, str]],
    errors: list[str],
) -> dict[str, Any]:
    """One document's checks; its problems go to `errors`, what it rendered is returned."""
    report: dict[str, Any] = {}
    match = TOPIC_MATCHER.match(topic.removeprefix(f"{prefix}/"))
    if match is None or not topic.startswith(f"{prefix}/"):
        errors.append(f"{topic}: not a discovery topic Home Assistant reads")
        return report
    component = match.group("component")
    report["component"] = component
    if component not in SUPPORTED_COMPONENTS:
        errors.append(f"{topic}: component {component} is not supported")
        return report
    document = json_loads_object(payload)
    schema = importlib.import_module(f"homeassistant.components.mqtt.{component}").DISCOVERY_SCHEMA
    try:
        config = schema(dict(document))
    except Exception as error:  # voluptuous raises Invalid and others: each is reported
        errors.append(f"{topic}: refused by {component}'s DISCOVERY_SCHEMA: {error}")
        return report
    dropped = sorted(set(document) - set(config))
    if dropped:
        errors.append(f"{topic}: keys Home Assistant ignores: {dropped}")
    if component == "sensor" and "device_class" in config:
        device_class = SensorDeviceClass(config["device_class"])
        if config.get("unit_of_measurement") not in DEVICE_CLASS_UNITS.get(device_class, set()):
            errors.append(f"{topic}: unit {config.get('unit_of_measurement')!r} is not one of {device_class}'s")
        state_class = config.get("state_class")
        if state_class is not None and SensorStateClass(state_class) not in DEVICE_CLASS_STATE_CLASSES[device_class]:
            errors.append(f"{topic}: state class {state_class} does not go with {device_class}")
    state_topic = config.get("state_topic")
    for key in TEMPLATES.get(component, ()):
        if key not in config:
            continue
        if state_topic not in states:
            errors.append(f"{topic}: nothing retained on its state topic {state_topic}")
            continue
        value = rendered(hass, config, key, states[state_topic])
        report[key] = value
        if component == "sensor":
            try:
                float(value)
            except (TypeError, ValueError):
                errors.append(f"{topic}: {key} gave {value!r}, not a number")
        elif component == "binary_sensor" and value not in (config["payload_on"], config["payload_off"]):
            errors.append(f"{topic}: {key} gave {value!r}, neither payload_on nor payload_off")
        elif component == "light" and value not in (STATE_ON, STATE_OFF):
            errors.append(f"{topic}: {key} gave {value!r}, neither {STATE_ON} nor {STATE_OFF}")
    report["optimistic"] = config.get("optimistic")
    if component == "light" and "state_template" in config:  # the light after each of the later commands
        report["after"] = [
            rendered(hass, config, "state_template", later[state_topic]) if state_topic in later else None
            for later in snapshots
        ]
    return report


async def main(prefix: str) -> dict[str, Any]:
    """Every document of the input on stdin, checked."""
    given = json.load(sys.stdin)
    errors: list[str] = []
    checked: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as config_dir:
        hass = HomeAssistant(config_dir)
        for topic, payload in sorted(given["documents"].items()):
            snapshots = given.get("snapshots", [])
            checked[topic] = check(hass, prefix, topic, payload, given["states"], snapshots, errors)
    return {"checked": checked, "errors": errors}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1])), default=str))
