"""micro:bit Bluetooth profile formats, as the micro:bit runtime reads and writes them; hostile input."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.errors import ProtocolError
from protocols.microbit import profile as mb
from tests.fuzzing import fuzz_settings


def test_uuids_are_the_profiles() -> None:
    # Lancaster University's profile: base e95dxxxx-251d-470a-a062-fa1922dfa9a8, UART is Nordic's.
    assert mb.LED_MATRIX_STATE == "e95d7b77-251d-470a-a062-fa1922dfa9a8"
    assert mb.BUTTON_A_STATE == "e95dda90-251d-470a-a062-fa1922dfa9a8"
    assert mb.ACCELEROMETER_DATA == "e95dca4b-251d-470a-a062-fa1922dfa9a8"
    assert mb.PWM_CONTROL == "e95dd822-251d-470a-a062-fa1922dfa9a8"
    assert mb.UART_TX == "6e400002-b5a3-f393-e0a9-e50e24dcca9e"
    assert len(set(mb.SERVICE_NAMES)) == 9


def test_matrix_rows_put_the_leftmost_led_in_bit_4() -> None:
    rows = [
        [True, False, False, False, False],
        [False] * 4 + [True],
        [True] * 5,
        [False] * 5,
        [False, True, False, True, False],
    ]
    assert mb.encode_matrix(rows) == bytes([0x10, 0x01, 0x1F, 0x00, 0x0A])
    assert mb.decode_matrix(bytes([0x10, 0x01, 0x1F, 0x00, 0x0A])) == tuple(tuple(r) for r in rows)
    with pytest.raises(ValueError, match="needs 5 rows"):
        mb.encode_matrix([[True] * 5])


def test_records_follow_the_runtime_structs() -> None:
    # IOPWMData: uint8 pin, uint16 value, uint32 period (packed, 7 bytes).
    assert mb.encode_pwm(1, 512, 20000) == bytes([1]) + struct.pack("<H", 512) + struct.pack("<I", 20000)
    assert mb.decode_pwm(mb.encode_pwm(2, 1024, 1000) * 2) == ((2, 1024, 1000), (2, 1024, 1000))
    assert mb.encode_pin_data([(0, 1), (2, 255)]) == bytes([0, 1, 2, 255])
    assert mb.encode_events([(1104, 2)]) == struct.pack("<HH", 1104, 2)
    assert mb.decode_events(struct.pack("<HHHH", 1, 2, 3, 4)) == ((1, 2), (3, 4))
    assert mb.decode_vector(struct.pack("<hhh", -1024, 0, 512), "acc") == (-1024, 0, 512)
    assert mb.decode_temperature(struct.pack("<b", -5)) == -5


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: mb.decode_vector(b"\x00" * 5, "accelerometer data"), "accelerometer data needs 6 bytes, got 5"),
        (lambda: mb.decode_button(b"\x03"), "button state 3 is not 0, 1 or 2"),
        (lambda: mb.decode_button(b""), "button state needs 1 bytes, got 0"),
        (lambda: mb.decode_pin_data(b"\x00"), "pin data needs 1-10"),
        (lambda: mb.decode_pin_data(b"\x13\x00"), "pin 19 is beyond the IO pin service's 19 pins"),
        (lambda: mb.decode_pwm(b"\x00" * 6), "PWM control needs one or two 7-byte records"),
        (lambda: mb.decode_events(b"\x00" * 3), "events need 1-5 4-byte records"),
        (lambda: mb.decode_u16(b"\x00", "bearing"), "bearing needs 2 bytes, got 1"),
    ],
)
def test_hostile_values_are_refused(call: object, error: str) -> None:
    with pytest.raises(ProtocolError, match=error):
        call()  # type: ignore[operator]


def test_text_is_at_most_20_bytes_of_utf8() -> None:
    assert mb.encode_text("Hello") == b"Hello"
    assert len(mb.encode_text("é" * 10)) == 20
    with pytest.raises(ValueError, match="got 22"):
        mb.encode_text("é" * 11)
    with pytest.raises(ValueError, match="got 0"):
        mb.encode_text("")


DECODERS = [
    lambda d: mb.decode_vector(d, "v"),
    mb.decode_button,
    mb.decode_temperature,
    mb.decode_pin_data,
    mb.decode_pwm,
    mb.decode_events,
    mb.decode_matrix,
    lambda d: mb.decode_u16(d, "u16"),
    lambda d: mb.decode_u32(d, "u32"),
]


@given(st.sampled_from(DECODERS), st.binary(max_size=64))
@pytest.mark.fuzz
@fuzz_settings(300)
def test_no_notification_crashes_a_decoder(decoder: object, data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decoder(data)  # type: ignore[operator]
