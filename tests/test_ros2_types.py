"""The ROS 2 type layer (gateway/ros/) against `rosbags` as the oracle: names, definitions, RIHS01, CDR.

Every bus type and `sensor_msgs/msg/Joy`: the `ros2msg` schema text equals what rosbags generates
from our `.msg` texts, the type hash equals rosbags' `hash_rihs01`, our CDR bytes equal rosbags'
for the same values and each side decodes the other's bytes field by field. Hostile bytes give a
`CdrError`, never another exception or a hang.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from gateway.messages import REGISTRY, to_plain
from gateway.ros import joy, typesupport
from gateway.ros.cdr import CdrError
from gateway.ros.types import RESERVED_WORDS, msg_type, ros2_type
from gateway.ros.typesupport import JOY, TypeSupport
from tests.fuzzing import fuzz_settings
from tests.ros2_values import example, from_rosbags, to_rosbags

SUPPORTS = [typesupport.for_bus_type(name) for name in REGISTRY] + [JOY]
IDS = [support.name for support in SUPPORTS]


@pytest.fixture(scope="module")
def store() -> Typestore:
    """A rosbags typestore holding every type, parsed by rosbags from our `.msg` texts."""
    typestore = get_typestore(Stores.EMPTY)
    types: dict[str, Any] = {}
    for support in SUPPORTS:
        for msg in [support.msg, *support.msg.dependencies()]:
            parsed = get_types_from_msg(typesupport.for_class(msg.cls).definition, msg.name)
            # rosbags files a `pkg/srv/X` type as `pkg/srv/msg/X`: keep our name (the fields are the same)
            types[msg.name] = next(iter(parsed.values()))
    typestore.register(types)
    return typestore


def test_names_follow_the_rosbridge_rule() -> None:
    assert ros2_type("wiimote/State") == "wiimote/msg/State"
    assert ros2_type("thymio_msgs/Led") == "thymio_msgs/msg/Led"
    assert ros2_type("kortex/WristCyclicC61/Feedback") == "kortex_driver/msg/WristCyclicC61Feedback"
    assert ros2_type("kortex/Base/ArmStateNotification") == "kortex_driver/msg/ArmStateNotification"
    assert ros2_type("creos_messages/ControllerState") == "creos_messages/msg/ControllerState"
    assert ros2_type("led") == "hwgateway/msg/Led"
    assert ros2_type("asebaros_msgs/GetNodeList") == "asebaros_msgs/srv/GetNodeList_Request"
    assert ros2_type("asebaros_msgs/GetNodeList_Response") == "asebaros_msgs/srv/GetNodeList_Response"
    assert JOY.name == "sensor_msgs/msg/Joy"
    assert JOY.dds_name == "sensor_msgs::msg::dds_::Joy_"
    state = typesupport.for_bus_type("wiimote/State")
    assert state.schema.startswith("int32 INVALID=-1\nfloat64 INVALID_FLOAT=-1.0\n")
    assert "\nstd_msgs/Header header\n" in state.schema
    assert "\n" + "=" * 80 + "\nMSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n" in state.schema
    # ROS 2 wants upper-case constants: creos' C++ kLongPress is LONG_PRESS
    assert "int32 LONG_PRESS=2\n" in typesupport.for_bus_type("creos_messages/ControllerState").definition


def test_joy_is_the_real_sensor_msgs_joy() -> None:
    """Our Joy's schema and hash equal rosbags' shipped Jazzy sensor_msgs/msg/Joy (rosidl's own hash)."""
    jazzy = get_typestore(Stores.ROS2_JAZZY)
    assert JOY.hash == jazzy.hash_rihs01("sensor_msgs/msg/Joy")
    assert JOY.schema == jazzy.generate_msgdef("sensor_msgs/msg/Joy", ros_version=2)[0]
    state = {"timestamp": {"sec": 5, "nanosec": 7}, "axes": [0.5, -1.0], "buttons": [1, 0, 2, -1]}
    message = joy.joy_of_controller_state(state)
    decoded: Any = jazzy.deserialize_cdr(JOY.encode(message), "sensor_msgs/msg/Joy")
    assert (decoded.header.stamp.sec, decoded.header.stamp.nanosec) == (5, 7)
    assert decoded.axes.tolist() == [0.5, -1.0]
    assert decoded.buttons.tolist() == [1, 0, 2, -1]
    assert joy.joy_topic("/pad/state") == "/pad/joy"


@pytest.mark.parametrize("support", SUPPORTS, ids=IDS)
def test_schema_and_hash_equal_rosbags(store: Typestore, support: TypeSupport) -> None:
    assert support.schema == store.generate_msgdef(support.name, ros_version=2)[0]
    assert support.hash == store.hash_rihs01(support.name)


@pytest.mark.parametrize("support", SUPPORTS, ids=IDS)
def test_cdr_equals_rosbags_both_ways(store: Typestore, support: TypeSupport) -> None:
    for seed in range(3):
        value = example(support.msg, seed)
        ours = support.encode(value)
        theirs = bytes(store.serialize_cdr(to_rosbags(support.msg, value, store.types), support.name))
        assert ours == theirs
        assert from_rosbags(support.msg, store.deserialize_cdr(ours, support.name)) == value
        assert support.decode(theirs) == value


@pytest.mark.parametrize("name", list(REGISTRY))
def test_a_bus_message_encodes_from_its_dataclass_and_its_plain_form(name: str) -> None:
    info = REGISTRY[name]
    support = typesupport.for_bus_type(name)
    message = info.cls()
    assert support.encode(message) == support.encode(to_plain(message))
    assert support.decode(support.encode(message)) == _lists(to_plain(message))


def _lists(plain: dict[str, Any]) -> dict[str, Any]:
    """The plain form with every array a list (rows too), as the decoder gives it."""

    def listed(value: Any) -> Any:
        if isinstance(value, list | tuple):
            return [listed(item) for item in value]
        if isinstance(value, dict):
            return {key: listed(item) for key, item in value.items()}
        return value

    return {key: listed(value) for key, value in plain.items()}


def test_values_that_cannot_be_encoded_name_the_field() -> None:
    led = typesupport.for_bus_type("thymio_msgs/Led")
    with pytest.raises(CdrError, match=r"thymio_msgs/msg/Led.id"):
        led.encode({"id": 300, "values": []})
    with pytest.raises(CdrError, match="no field 'values'"):
        led.encode({"id": 1})
    state = typesupport.for_bus_type("wiimote/State")
    with pytest.raises(CdrError, match="expected 9 items"):
        state.encode(example(state.msg) | {"angular_velocity_covariance": [0.0]})
    leds = typesupport.for_bus_type("hwgateway/MicrobitLeds")
    with pytest.raises(CdrError, match="row holds 4 items"):
        leds.encode({"rows": [[True] * 4] * 5})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "shorter than the CDR header"),
        (b"\x00\x00\x00\x00" + b"\x00" * 16, "not little-endian CDR"),
        (b"\x00\x01\x00\x00\xff\xff\xff\xff", "exceeds the"),  # a count of 4 G items in 0 bytes
        (b"\x00\x01\x00\x00\x01\x00\x00\x00", "exceeds the"),  # one string, no bytes for it
        (b"\x00\x01\x00\x00\x00\x00\x00\x00" + b"\x07" * 4, "after the message"),  # 0 nodes, then 4 bytes
    ],
)
def test_hostile_bytes_are_refused_clearly(data: bytes, message: str) -> None:
    node_list = typesupport.for_bus_type("asebaros_msgs/NodeList")
    with pytest.raises(CdrError, match=message):
        node_list.decode(data)


def test_hostile_strings_and_bools_are_refused_clearly() -> None:
    node = typesupport.for_bus_type("asebaros_msgs/Node")
    good = bytearray(node.encode({"id": 1, "name": "ab", "name_space": "", "running": True, "ignored": False,
                                  "connected": True}))  # fmt: skip
    assert node.decode(bytes(good))["name"] == "ab"
    no_nul = bytearray(good)
    no_nul[4 + 2 + 2 + 4 + 2] = ord("x")  # id uint16, pad, length, "ab", then the NUL
    with pytest.raises(CdrError, match="does not end with NUL"):
        node.decode(bytes(no_nul))
    not_utf8 = bytearray(good)
    not_utf8[4 + 2 + 2 + 4] = 0xFF
    with pytest.raises(CdrError, match="not UTF-8"):
        node.decode(bytes(not_utf8))
    bad_bool = bytearray(good)
    bad_bool[-3] = 2
    with pytest.raises(CdrError, match="bool holds 2"):
        node.decode(bytes(bad_bool))
    with pytest.raises(CdrError, match="the bytes end"):
        node.decode(bytes(good[:-1]))


@given(data=st.binary(max_size=512), index=st.integers(0, len(SUPPORTS) - 1))
@fuzz_settings(300)
@pytest.mark.fuzz
def test_any_bytes_decode_or_raise_cdr_error(data: bytes, index: int) -> None:
    support = SUPPORTS[index]
    with contextlib.suppress(CdrError):
        support.decode(b"\x00\x01\x00\x00" + data)


def test_no_field_is_named_a_reserved_word() -> None:
    """rosidl accepts `virtual` as a field name, and the C++ it generates does not compile: renamed."""
    for info in REGISTRY.values():
        for field in msg_type(info.cls).fields:
            assert field.name not in RESERVED_WORDS, (info.name, field.name)
    gamepad = {field.key: field.name for field in msg_type(REGISTRY["hwgateway/GamepadInfo"].cls).fields}
    assert gamepad["virtual"] == "is_virtual"
