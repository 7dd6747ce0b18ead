"""Message types: seed names, constants and lengths; validation naming the failing field; round trips."""

from __future__ import annotations

import contextlib
import math
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.errors import InvalidArgument
from gateway.messages import REGISTRY, from_plain, schema_of, to_plain
from gateway.messages.common import Time
from gateway.messages.creos import ControllerState
from gateway.messages.schema import Array, Bool, Float, Int, Nested, Spec, Str
from gateway.messages.thymio import Led
from gateway.messages.wiimote import State, TimedSwitch

SEED_TYPES = {
    "wiimote/IrSourceInfo",
    "wiimote/State",
    "wiimote/TimedSwitch",
    "creos_messages/ControllerState",
    "thymio_msgs/Comm",
    "thymio_msgs/Led",
    "thymio_msgs/LedGesture",
    "thymio_msgs/Sound",
    "thymio_msgs/SystemSound",
    "kortex/WristCyclicC61/Command",
    "kortex/WristCyclicC61/Feedback",
    "kortex/WristCyclicC61/CustomData",
    "asebaros_msgs/AnonymousEvent",
    "asebaros_msgs/Constant",
    "asebaros_msgs/Event",
    "asebaros_msgs/Node",
    "asebaros_msgs/NodeDescription",
    "asebaros_msgs/NodeList",
    "asebaros_msgs/GetDescription",
    "asebaros_msgs/GetNodeList",
    "asebaros_msgs/GetVariable",
    "asebaros_msgs/SetVariable",
    "asebaros_msgs/LoadScript",
}


def test_every_seed_type_is_registered() -> None:
    assert set(REGISTRY) >= SEED_TYPES
    assert {"led", "sound", "rumble"} <= set(REGISTRY)


def test_wiimote_state_fields_and_lengths_follow_the_seed() -> None:
    plain = to_plain(State())
    assert list(plain) == [
        "header",
        "angular_velocity_zeroed",
        "angular_velocity_raw",
        "angular_velocity_covariance",
        "linear_acceleration_zeroed",
        "linear_acceleration_raw",
        "linear_acceleration_covariance",
        "nunchuk_acceleration_zeroed",
        "nunchuk_acceleration_raw",
        "nunchuk_joystick_zeroed",
        "nunchuk_joystick_raw",
        "buttons",
        "nunchuk_buttons",
        "LEDs",
        "rumble",
        "ir_tracking",
        "raw_battery",
        "percent_battery",
        "zeroing_time",
        "errors",
    ]
    assert len(plain["buttons"]) == 11
    assert len(plain["LEDs"]) == 4
    assert len(plain["angular_velocity_covariance"]) == 9
    assert len(plain["nunchuk_buttons"]) == 2
    constants = REGISTRY["wiimote/State"].constants
    assert constants["MSG_BTN_HOME"] == 10
    assert constants["MSG_CLASSIC_BTN_ZR"] == 14
    assert constants["INVALID_FLOAT"] == -1.0
    assert REGISTRY["wiimote/TimedSwitch"].constants == {
        "ON": 1,
        "OFF": 0,
        "NO_CHANGE": -2,
        "REPEAT": -1,
        "FOREVER": -1,
    }


def test_creos_and_thymio_constants_follow_the_seeds() -> None:
    assert REGISTRY["creos_messages/ControllerState"].constants["kLongPress"] == 2
    assert REGISTRY["thymio_msgs/Led"].constants["REMOTE"] == 6
    assert REGISTRY["thymio_msgs/SystemSound"].constants["TARGET_DETECT"] == 7


@pytest.mark.parametrize(
    ("cls", "data", "message"),
    [
        (State, {"buttons": [True] * 10}, "data.buttons: expected 11 elements, got 10"),
        (State, {"buttons": [1] * 11}, "data.buttons[0]: expected a boolean, got int"),
        (State, {"percent_battery": 101}, "data.percent_battery: 101.0 is above the maximum 100.0"),
        (State, {"header": {"stamp": {"sec": 1, "nanosec": -1}}}, "data.header.stamp.nanosec: -1 is outside"),
        (State, {"bogus": 1}, "data: unknown field 'bogus'"),
        (State, [], "data: expected an object, got list"),
        (Led, {"id": 7}, "data.id: 7 is outside [0, 6]"),
        (Led, {"values": [0.5, 1.5]}, "data.values[1]: 1.5 is above the maximum 1.0"),
        (Led, {"values": ["x"]}, "data.values[0]: expected a number, got str"),
        (Led, {"values": [math.nan]}, "data.values[0]: must be finite"),
        (TimedSwitch, {"switch_mode": 300}, "data.switch_mode: 300 is outside [-128, 127]"),
        (ControllerState, {"buttons": [3]}, "data.buttons[0]: 3 is not one of [-1, 0, 1, 2]"),
        (ControllerState, {"axes": [True]}, "data.axes[0]: expected a number, got bool"),
    ],
)
def test_invalid_data_names_the_failing_field(cls: type[Any], data: object, message: str) -> None:
    with pytest.raises(InvalidArgument) as raised:
        from_plain(cls, data)
    assert raised.value.message.startswith(message)


def test_missing_fields_take_defaults_and_integral_floats_are_integers() -> None:
    led = from_plain(Led, {"id": 2.0})
    assert led == Led(id=2, values=())
    assert from_plain(State, {}) == State()


def test_time_splits_seconds() -> None:
    assert Time.from_seconds(1.5) == Time(1, 500_000_000)
    assert Time.from_seconds(2.9999999999) == Time(3, 0)
    assert abs(Time.from_seconds(1796012202.73).to_seconds() - 1796012202.73) < 1e-6


@settings(max_examples=2000, deadline=None)
@given(seconds=st.floats(0.0, 2.0**32 - 1.0) | st.floats(0.0, 2.0))
def test_time_splits_seconds_as_modf_does(seconds: float) -> None:
    """`from_seconds` takes the fraction as `seconds - int(seconds)`: exact, as `math.modf`'s is."""
    fraction, whole = math.modf(seconds)
    nanos = round(fraction * 1e9)
    expected = Time(int(whole) + 1, 0) if nanos >= 1_000_000_000 else Time(int(whole), nanos)
    assert Time.from_seconds(seconds) == expected


def _strategy(spec: Spec) -> st.SearchStrategy[Any]:
    if isinstance(spec, Int):
        if spec.choices is not None:
            return st.sampled_from(spec.choices)
        low, high = spec.bounds()
        return st.integers(low, high)
    if isinstance(spec, Float):
        return st.floats(
            spec.minimum if spec.minimum is not None else -1e30,
            spec.maximum if spec.maximum is not None else 1e30,
            allow_nan=False,
        )
    if isinstance(spec, Bool):
        return st.booleans()
    if isinstance(spec, Str):
        return st.text(max_size=20)
    if isinstance(spec, Array):
        item = _strategy(spec.item)
        if spec.length is not None:
            return st.lists(item, min_size=spec.length, max_size=spec.length)
        return st.lists(item, max_size=4)
    assert isinstance(spec, Nested)
    return _plain_strategy(spec.cls)


def _plain_strategy(cls: type[Any]) -> st.SearchStrategy[dict[str, Any]]:
    info = cls.__message_info__
    return st.fixed_dictionaries({name: _strategy(spec) for name, spec in info.fields})


@pytest.mark.parametrize("name", sorted(REGISTRY))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_type_round_trips_through_plain_data(name: str, data: st.DataObject) -> None:
    cls = REGISTRY[name].cls
    plain = data.draw(_plain_strategy(cls))
    message = from_plain(cls, plain)
    assert to_plain(message) == plain
    assert from_plain(cls, to_plain(message)) == message
    # The converter written out per class gives what each field's spec gives, in field order.
    assert orjson.dumps(to_plain(message)) == orjson.dumps(_spec_by_spec(message))


def _spec_by_spec(message: Any) -> dict[str, Any]:
    return {name: spec.plain(getattr(message, name)) for name, spec in message.__message_info__.fields}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_type_has_a_closed_json_schema(name: str) -> None:
    schema = schema_of(REGISTRY[name].cls)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {field for field, _ in REGISTRY[name].fields}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
    )
)
def test_no_input_crashes_validation(data: object) -> None:
    for name in ("wiimote/State", "thymio_msgs/Led", "led", "asebaros_msgs/LoadScript"):
        with contextlib.suppress(InvalidArgument):
            from_plain(REGISTRY[name].cls, data)
