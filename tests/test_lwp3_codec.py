"""LWP 3.0 codec: byte vectors written from LEGO's protocol document, hostile input, hypothesis."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.errors import ProtocolError
from protocols.lwp3 import messages as lwp
from protocols.lwp3 import values
from protocols.lwp3.constants import (
    AlertOperation,
    AlertType,
    Completion,
    EndState,
    ErrorCode,
    Feedback,
    HubAction,
    HubProperty,
    IoEvent,
    IoType,
    MessageType,
    PropertyOperation,
    Startup,
)
from protocols.lwp3.hubs import hub_name, port_name
from protocols.lwp3.modes import ModeInfoType, PortInformationRequest, PortInfoType, PortModeInformationRequest
from tests.fuzzing import fuzz_settings

# (bytes as the document lays them out, the message they are)
VECTORS: list[tuple[bytes, lwp.Message]] = [
    # §3.5 request a battery update: length 5, hub 0, Hub Properties, Battery Voltage, Request Update.
    (
        bytes([0x05, 0x00, 0x01, 0x06, 0x05]),
        lwp.HubPropertyMessage(HubProperty.BATTERY_VOLTAGE, PropertyOperation.REQUEST_UPDATE),
    ),
    # ... and the hub's Update: 87 %.
    (
        bytes([0x06, 0x00, 0x01, 0x06, 0x06, 87]),
        lwp.HubPropertyMessage(HubProperty.BATTERY_VOLTAGE, PropertyOperation.UPDATE, bytes([87])),
    ),
    # §3.6 Hub Action "Switch Off Hub".
    (bytes([0x04, 0x00, 0x02, 0x01]), lwp.HubActionMessage(HubAction.SWITCH_OFF)),
    # §3.7 Low voltage alert update, status OK (0x00).
    (
        bytes([0x06, 0x00, 0x03, 0x01, 0x04, 0x00]),
        lwp.HubAlertMessage(AlertType.LOW_VOLTAGE, AlertOperation.UPDATE, True),
    ),
    # §3.8 a Technic large motor (0x002E) attached to port 0: 15 bytes.
    (
        bytes([0x0F, 0x00, 0x04, 0x00, 0x01, 0x2E, 0x00]) + struct.pack("<ii", 0x10000000, 0x10000000),
        lwp.AttachedIo(0, IoEvent.ATTACHED, IoType.TECHNIC_LARGE_MOTOR, 0x10000000, 0x10000000),
    ),
    # §3.8 detached I/O: 5 bytes.
    (bytes([0x05, 0x00, 0x04, 0x01, 0x00]), lwp.AttachedIo(1, IoEvent.DETACHED)),
    # §3.8 attached virtual I/O: 9 bytes (ports 0 and 1 as port 0x10).
    (
        bytes([0x09, 0x00, 0x04, 0x10, 0x02, 0x27, 0x00, 0x00, 0x01]),
        lwp.AttachedIo(0x10, IoEvent.ATTACHED_VIRTUAL, 0x27, port_a=0, port_b=1),
    ),
    # §3.9 Generic error: Invalid use answering a Port Output Command.
    (bytes([0x05, 0x00, 0x05, 0x81, 0x06]), lwp.GenericError(0x81, ErrorCode.INVALID_USE)),
    # §3.17 Port Input Format Setup (Single): port 0, mode 2, delta 1, notify.
    (bytes([0x0A, 0x00, 0x41, 0x00, 0x02, 0x01, 0x00, 0x00, 0x00, 0x01]), lwp.PortInputFormatSetup(0, 2, 1, True)),
    (bytes([0x0A, 0x00, 0x47, 0x00, 0x02, 0x01, 0x00, 0x00, 0x00, 0x01]), lwp.PortInputFormat(0, 2, 1, True)),
    # §3.21 Port Value (Single): port 0, Int32 90.
    (bytes([0x08, 0x00, 0x45, 0x00, 0x5A, 0x00, 0x00, 0x00]), lwp.PortValue(0, bytes([0x5A, 0, 0, 0]))),
    # §3.27.5 StartSpeed(50 %, max power 100 %, no profile), execute immediately with feedback (0x11).
    (bytes([0x09, 0x00, 0x81, 0x00, 0x11, 0x07, 0x32, 0x64, 0x00]), lwp.start_speed(0, 50, 100)),
    # §6.1 the document's own example: RGB LED to RGB mode, R 0x30, G 0x47, B 0x55.
    (bytes([0x0A, 0x00, 0x81, 0x32, 0x11, 0x51, 0x01, 0x30, 0x47, 0x55]), lwp.set_rgb(0x32, 0x30, 0x47, 0x55)),
    # §3.27.1 StartPower(-100) through WriteDirectModeData mode 0.
    (bytes([0x08, 0x00, 0x81, 0x01, 0x11, 0x51, 0x00, 0x9C]), lwp.start_power(1, -100)),
    # §3.27.11 GotoAbsolutePosition(-90°, 30 %, 100 %, HOLD, no profile).
    (
        bytes([0x0E, 0x00, 0x81, 0x02, 0x11, 0x0D]) + struct.pack("<i", -90) + bytes([30, 100, 126, 0]),
        lwp.goto_absolute_position(2, -90, 30, 100, EndState.HOLD),
    ),
    # §3.32 feedback: port 0 "buffer empty + command completed" and idle; port 1 in progress.
    (
        bytes([0x07, 0x00, 0x82, 0x00, 0x0A, 0x01, 0x01]),
        lwp.PortOutputFeedback(((0, Feedback.COMPLETED | Feedback.IDLE), (1, Feedback.IN_PROGRESS))),
    ),
    # §3.15 Port Information Request: MODE INFO of port 0.
    (bytes([0x05, 0x00, 0x21, 0x00, 0x01]), PortInformationRequest(0, PortInfoType.MODE_INFO)),
    # §3.16 Port Mode Information Request: SI of mode 0 of port 0x61.
    (bytes([0x06, 0x00, 0x22, 0x61, 0x00, 0x03]), PortModeInformationRequest(0x61, 0, ModeInfoType.SI)),
    # A defined type this codec keeps whole: Port Input Format Setup (Combined), §3.18.
    (
        bytes([0x05, 0x00, 0x42, 0x00, 0x02]),
        lwp.OtherMessage(MessageType.PORT_INPUT_FORMAT_SETUP_COMBINED, bytes([0x00, 0x02])),
    ),
]


@pytest.mark.parametrize(("data", "message"), VECTORS)
def test_document_vectors_decode_and_encode(data: bytes, message: lwp.Message) -> None:
    assert lwp.decode(data) == message
    assert lwp.encode(message) == data


def test_two_byte_length_follows_the_documents_table() -> None:
    # §3.2: 128 is 1000 0000 0000 0001, 129 is 1000 0001 0000 0001.
    hand_made = bytes([0x80, 0x01, 0x00, 0x45, 0x00]) + bytes(123)
    assert len(hand_made) == 128
    assert lwp.decode(hand_made) == lwp.PortValue(0, bytes(123))
    framed = lwp.frame(MessageType.PORT_VALUE_SINGLE, bytes(125))
    assert len(framed) == 129
    assert framed[:2] == bytes([0x81, 0x01])
    assert lwp.decode(framed) == lwp.PortValue(0, bytes(124))
    assert lwp.frame(MessageType.PORT_VALUE_SINGLE, bytes(124))[0] == 127  # still one byte


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"", "shorter than the 3-byte common header"),
        (bytes([0x02, 0x00]), "shorter than the 3-byte common header"),
        (bytes([0x06, 0x00, 0x01, 0x06, 0x05]), "length field says 6 bytes, the message has 5"),
        (bytes([0x05, 0x00, 0x01, 0x06, 0x05]) * 2, "length field says 5 bytes, the message has 10"),
        (bytes([0x84, 0x00, 0x00, 0x01]), "two-byte length encodes 4, which needs one byte"),
        (bytes([0x04, 0x00, 0x99, 0x00]), "message type 0x99 is not defined by LWP 3.0"),
        (bytes([0x05, 0x00, 0x01, 0x42, 0x05]), "hub property 0x42 is not defined"),
        (bytes([0x06, 0x00, 0x01, 0x06, 0x05, 0x01]), "REQUEST_UPDATE carries no payload"),
        (bytes([0x05, 0x00, 0x04, 0x00, 0x01]), "attached I/O needs 12 payload bytes, got 2"),
        (bytes([0x06, 0x00, 0x04, 0x00, 0x00, 0x00]), "detached I/O needs 2 payload bytes, got 3"),
        (bytes([0x05, 0x00, 0x04, 0x00, 0x07]), "I/O event 0x07 is not defined"),
        (bytes([0x05, 0x00, 0x05, 0x81, 0x09]), "error code 0x09 is not defined"),
        (bytes([0x04, 0x00, 0x82, 0x00]), "needs (port, feedback) pairs, got 1 bytes"),
        (bytes([0x05, 0x00, 0x82, 0x00, 0x20]), "feedback bits 0x20 set undefined bits"),
        (bytes([0x06, 0x00, 0x81, 0x00, 0x31, 0x07]), "startup and completion byte 0x31"),
        (bytes([0x04, 0x00, 0x45, 0x00]), "port value needs a port and at least 1 value byte"),
        (bytes([0x06, 0x00, 0x03, 0x01, 0x04, 0x07]), "neither 0x00 (ok) nor 0xff"),
        (bytes([0x0A, 0x00, 0x41, 0x00, 0x02, 0x01, 0x00, 0x00, 0x00, 0x02]), "notification flag 2"),
        (bytes([0xFF, 0x7F]) + bytes(600), "exceeds the limit of 512"),
    ],
)
def test_hostile_messages_are_refused_naming_the_rule(data: bytes, error: str) -> None:
    with pytest.raises(ProtocolError, match=error.replace("(", r"\(").replace(")", r"\)")):
        lwp.decode(data)


@given(st.binary(max_size=600))
@pytest.mark.fuzz
@fuzz_settings(400)
def test_no_input_crashes_the_decoder(data: bytes) -> None:
    try:
        message = lwp.decode(data)
    except ProtocolError:
        return
    assert lwp.decode(lwp.encode(message)) == message
    if len(data) < 128:
        # Short messages have one encoding only, but for the hub id, which decoding ignores and
        # encoding writes as 0x00.
        assert lwp.encode(message) == data[:1] + b"\x00" + data[2:]


@pytest.mark.parametrize("hub_id", [0x01, 0x7F, 0xFF])
def test_a_hub_id_other_than_zero_is_read_past(hub_id: int) -> None:
    # §3.1: the hub id is unused and 0x00; a message that sets it still means what its type and
    # payload say (as other LWP3 implementations read it), and is answered with hub id 0x00.
    data = bytes([0x04, hub_id, 0x02, 0x01])  # hub action: switch off
    assert lwp.decode(data) == lwp.decode(bytes([0x04, 0x00, 0x02, 0x01]))
    assert lwp.encode(lwp.decode(data))[1] == 0x00


@given(st.integers(0, 255), st.binary(min_size=1, max_size=100))
def test_port_values_of_any_length_round_trip(port: int, data: bytes) -> None:
    assert lwp.decode(lwp.encode(lwp.PortValue(port, data))) == lwp.PortValue(port, data)


@given(st.integers(-100, 100), st.integers(0, 100), st.integers(0, 255))
def test_start_speed_round_trips(speed: int, power: int, port: int) -> None:
    command = lwp.start_speed(port, speed, power)
    decoded = lwp.decode(lwp.encode(command))
    assert decoded == command
    assert isinstance(decoded, lwp.PortOutputCommand)
    assert (decoded.startup, decoded.completion) == (Startup.IMMEDIATE, Completion.FEEDBACK)


@given(st.sampled_from(sorted(values.TACHO_MOTORS)), st.sampled_from([1, 2, 3]), st.binary(max_size=8))
@pytest.mark.fuzz
@fuzz_settings(200)
def test_no_port_value_crashes_the_readings(io_type: int, mode: int, data: bytes) -> None:
    try:
        reading = values.port_reading(io_type, mode, data)
    except ProtocolError as error:
        message = str(error)
    else:
        assert isinstance(reading, values.MotorReading)
        return
    assert "value needs" in message


@given(st.sampled_from(list(HubProperty)), st.binary(max_size=20))
@pytest.mark.fuzz
@fuzz_settings(200)
def test_no_property_payload_crashes_the_decoder(prop: HubProperty, data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        values.property_value(prop, data)


def test_port_readings_by_type_and_mode() -> None:
    assert values.port_reading(IoType.TECHNIC_LARGE_MOTOR, 2, struct.pack("<i", -720)) == values.MotorReading(2, -720)
    assert values.port_reading(IoType.EXTERNAL_MOTOR_TACHO, 1, struct.pack("<b", -30)) == values.MotorReading(1, -30)
    assert values.port_reading(IoType.INTERNAL_TILT, 0, struct.pack("<bb", 10, -5)) == values.TiltReading(10, -5)
    # The Technic hub sends yaw, pitch, roll.
    assert values.port_reading(IoType.TECHNIC_HUB_TILT, 0, struct.pack("<hhh", 30, 20, 10)) == values.TiltReading(
        10, 20, -30
    )
    assert values.port_reading(IoType.COLOR_DISTANCE_SENSOR, 8, bytes([3, 7, 0, 0])) == values.ColorDistanceReading(
        3, 7
    )
    assert values.port_reading(IoType.COLOR_DISTANCE_SENSOR, 0, bytes([255])) == values.ColorDistanceReading(255, -1)
    assert values.port_reading(IoType.TECHNIC_HUB_TEMPERATURE, 0, struct.pack("<h", 245)) == values.TemperatureReading(
        245
    )
    assert values.port_reading(IoType.VOLTAGE, 0, b"\x00\x10") is None
    with pytest.raises(ProtocolError, match="colour 11"):
        values.port_reading(IoType.COLOR_DISTANCE_SENSOR, 0, bytes([11]))
    with pytest.raises(ProtocolError, match="proximity 11"):
        values.port_reading(IoType.COLOR_DISTANCE_SENSOR, 1, bytes([11]))
    with pytest.raises(ProtocolError, match="motor mode 2 value needs 4 bytes, got 2"):
        values.port_reading(IoType.TECHNIC_XL_MOTOR, 2, b"\x00\x00")


def test_hub_property_values() -> None:
    assert values.property_value(HubProperty.ADVERTISING_NAME, b"Technic Hub") == "Technic Hub"
    assert values.property_value(HubProperty.BUTTON, b"\x01") is True
    assert values.property_value(HubProperty.RSSI, struct.pack("<b", -60)) == -60
    assert values.property_value(HubProperty.BATTERY_VOLTAGE, bytes([100])) == 100
    # §3.5.6: 0x11000202 is version 1.1.00.0202.
    assert values.property_value(HubProperty.FW_VERSION, struct.pack("<i", 0x11000202)) == "1.1.00.0202"
    assert values.property_value(HubProperty.LWP_VERSION, struct.pack("<H", 0x0300)) == "3.00"
    with pytest.raises(ProtocolError, match="longer than the protocol allows"):
        values.property_value(HubProperty.ADVERTISING_NAME, b"a name of fifteen")
    with pytest.raises(ProtocolError, match="battery level 101"):
        values.property_value(HubProperty.BATTERY_VOLTAGE, bytes([101]))
    with pytest.raises(ProtocolError, match="button state 2"):
        values.property_value(HubProperty.BUTTON, b"\x02")


def test_command_builders_check_their_ranges() -> None:
    with pytest.raises(ValueError, match="speed 101"):
        lwp.start_speed(0, 101)
    with pytest.raises(ValueError, match="speed 0"):
        lwp.goto_absolute_position(0, 10, 0)
    with pytest.raises(ValueError, match="power -101"):
        lwp.start_power(0, -101)
    assert lwp.start_power(0, 127).payload == bytes([0x00, 0x7F])  # brake
    with pytest.raises(ValueError, match="red 256"):
        lwp.set_rgb(0x32, 256, 0, 0)


def test_hub_kinds_name_their_ports() -> None:
    assert hub_name(0x40) == "boost_move_hub"
    assert hub_name(0x41) == "city_hub"
    assert hub_name(0x80) == "technic_hub"
    assert hub_name(0x99) == "unknown_0x99"
    assert port_name(0x41, 1) == "B"
    assert port_name(0x41, 2) == "0x02"  # a City hub has only A and B
    assert port_name(0x80, 3) == "D"
