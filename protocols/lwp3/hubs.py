"""What differs between hubs, by LWP3 System Type ID: names, connectors and built-in ports.

Port ids of the external connectors and built-in devices follow LEGO's hubs as pybricks and
node-poweredup map them (port 0x32 is the hub's RGB light on every one of these hubs).
"""

from __future__ import annotations

from protocols.lwp3.constants import IoType, SystemType

LED_PORT = 0x32

HUB_NAMES = {
    SystemType.WEDO_HUB: "wedo_hub",
    SystemType.DUPLO_TRAIN: "duplo_train",
    SystemType.BOOST_MOVE_HUB: "boost_move_hub",
    SystemType.CITY_HUB: "city_hub",
    SystemType.REMOTE_CONTROL: "remote_control",
    SystemType.TECHNIC_HUB: "technic_hub",
}

#: External connectors by letter → port id.
CONNECTORS: dict[int, dict[str, int]] = {
    SystemType.BOOST_MOVE_HUB: {"A": 0x00, "B": 0x01, "C": 0x02, "D": 0x03},
    SystemType.CITY_HUB: {"A": 0x00, "B": 0x01},
    SystemType.TECHNIC_HUB: {"A": 0x00, "B": 0x01, "C": 0x02, "D": 0x03},
}

#: Built-in devices (port id → IO type) each hub announces at connect.
BUILT_IN: dict[int, dict[int, IoType]] = {
    SystemType.BOOST_MOVE_HUB: {
        0x00: IoType.INTERNAL_MOTOR_TACHO,
        0x01: IoType.INTERNAL_MOTOR_TACHO,
        LED_PORT: IoType.RGB_LIGHT,
        0x3A: IoType.INTERNAL_TILT,
        0x3B: IoType.CURRENT,
        0x3C: IoType.VOLTAGE,
    },
    SystemType.CITY_HUB: {LED_PORT: IoType.RGB_LIGHT, 0x3B: IoType.CURRENT, 0x3C: IoType.VOLTAGE},
    SystemType.TECHNIC_HUB: {
        LED_PORT: IoType.RGB_LIGHT,
        0x3B: IoType.CURRENT,
        0x3C: IoType.VOLTAGE,
        0x3D: IoType.TECHNIC_HUB_TEMPERATURE,
        0x61: IoType.TECHNIC_HUB_ACCELEROMETER,
        0x62: IoType.TECHNIC_HUB_GYRO,
        0x63: IoType.TECHNIC_HUB_TILT,
        0x64: IoType.TECHNIC_HUB_GESTURE,
    },
}


def hub_name(system_type: int) -> str:
    """The hub's name for a System Type ID ("unknown_0x.." for others)."""
    try:
        return HUB_NAMES[SystemType(system_type)]
    except ValueError:
        return f"unknown_0x{system_type:02x}"


def port_name(system_type: int, port: int) -> str:
    """A connector's letter, or the port id in hex for built-in and virtual ports."""
    for letter, port_id in CONNECTORS.get(system_type, {}).items():
        if port_id == port:
            return letter
    return f"0x{port:02x}"


def device_name(io_type: int) -> str:
    """An IO type's name (lower case), or "io_0x...." for unknown types."""
    try:
        return IoType(io_type).name.lower()
    except ValueError:
        return f"io_0x{io_type:04x}"
