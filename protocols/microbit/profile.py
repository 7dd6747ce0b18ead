"""UUIDs and characteristic formats of the micro:bit Bluetooth profile, as the micro:bit runtime serves them.

Source: Lancaster University's "micro:bit Bluetooth profile" and the runtime that implements it
(microbit-dal `source/bluetooth/*Service.cpp`). Every value is little endian. Decoders check exact
sizes and raise `ProtocolError`; encoders check ranges and raise `ValueError`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from protocols.errors import ProtocolError
from protocols.microbit import pins

#: The services a micro:bit program may start, by the names its Bluetooth settings give them.
PROGRAM_SERVICES = ("accelerometer", "magnetometer", "button", "io_pin", "led", "event", "temperature", "uart")


def _uuid(short: str) -> str:
    return f"e95d{short}-251d-470a-a062-fa1922dfa9a8"


ACCELEROMETER_SERVICE = _uuid("0753")
ACCELEROMETER_DATA = _uuid("ca4b")  # read/notify: 3 × Int16, milli-g (x, y, z)
ACCELEROMETER_PERIOD = _uuid("fb24")  # read/write: UInt16 ms
MAGNETOMETER_SERVICE = _uuid("f2d8")
MAGNETOMETER_DATA = _uuid("fb11")  # read/notify: 3 × Int16, the runtime's compass sample (nT in microbit-dal 2)
MAGNETOMETER_PERIOD = _uuid("386c")  # read/write: UInt16 ms
MAGNETOMETER_BEARING = _uuid("9715")  # read/notify: UInt16 degrees from north
BUTTON_SERVICE = _uuid("9882")
BUTTON_A_STATE = _uuid("da90")  # read/notify: UInt8 0 released, 1 pressed, 2 long press
BUTTON_B_STATE = _uuid("da91")
IO_PIN_SERVICE = _uuid("127b")
# The IO pin service numbers pins by position in the runtime's pin table (`protocols.microbit.pins`).
PIN_DATA = _uuid("8d00")  # read/write/notify: (UInt8 position, UInt8 value) pairs
PIN_AD_CONFIGURATION = _uuid("5899")  # read/write: UInt32 bit mask by position, 1 = analogue
PIN_IO_CONFIGURATION = _uuid("b9fe")  # read/write: UInt32 bit mask by position, 1 = input
PWM_CONTROL = _uuid("d822")  # write: (UInt8 position, UInt16 value 0-1024, UInt32 period µs) records
LED_SERVICE = _uuid("d91d")
LED_MATRIX_STATE = _uuid("7b77")  # read/write: 5 rows, one byte each, bit 4 = leftmost column
LED_TEXT = _uuid("93ee")  # write: up to 20 bytes of text to scroll
SCROLLING_DELAY = _uuid("0d2d")  # read/write: UInt16 ms per scroll step
EVENT_SERVICE = _uuid("93af")
MICROBIT_REQUIREMENTS = _uuid("b84c")  # read/notify: events the micro:bit wants from the client
MICROBIT_EVENT = _uuid("9775")  # read/notify: (UInt16 source, UInt16 value) records from the micro:bit
CLIENT_REQUIREMENTS = _uuid("23c4")  # write: events the client wants (value 0 = any)
CLIENT_EVENT = _uuid("5404")  # write: (UInt16 source, UInt16 value) records to the micro:bit
TEMPERATURE_SERVICE = _uuid("6100")
TEMPERATURE = _uuid("9250")  # read/notify: Int8 °C
TEMPERATURE_PERIOD = _uuid("1b25")  # read/write: UInt16 ms
UART_SERVICE = "6e400001-b5a3-f393-e0a9-e50e24dcca9e"
UART_TX = "6e400002-b5a3-f393-e0a9-e50e24dcca9e"  # indicate: bytes from the micro:bit
UART_RX = "6e400003-b5a3-f393-e0a9-e50e24dcca9e"  # write: bytes to the micro:bit
DEVICE_INFORMATION_SERVICE = "0000180a-0000-1000-8000-00805f9b34fb"
MODEL_NUMBER = "00002a24-0000-1000-8000-00805f9b34fb"
SERIAL_NUMBER = "00002a25-0000-1000-8000-00805f9b34fb"
FIRMWARE_REVISION = "00002a26-0000-1000-8000-00805f9b34fb"

#: Service names as `list_devices` reports them.
SERVICE_NAMES = {
    ACCELEROMETER_SERVICE: "accelerometer",
    MAGNETOMETER_SERVICE: "magnetometer",
    BUTTON_SERVICE: "button",
    IO_PIN_SERVICE: "io_pin",
    LED_SERVICE: "led",
    EVENT_SERVICE: "event",
    TEMPERATURE_SERVICE: "temperature",
    UART_SERVICE: "uart",
    DEVICE_INFORMATION_SERVICE: "device_information",
}

#: Longest LED text and UART packet (the characteristics' maximum length).
MAX_TEXT_BYTES = 20
MATRIX_ROWS = 5
MATRIX_COLUMNS = 5
#: Sample periods the accelerometer and magnetometer can run at (ms); others are rounded by the runtime.
SENSOR_PERIODS_MS = (1, 2, 5, 10, 20, 80, 160, 640)
#: Most records one event or pin write may hold (a 20-byte ATT value).
MAX_RECORDS = 5


def _exact(data: bytes, size: int, what: str) -> None:
    if len(data) != size:
        raise ProtocolError(f"{what} needs {size} bytes, got {len(data)}")


def decode_vector(data: bytes, what: str) -> tuple[int, int, int]:
    """Three Int16 (accelerometer in milli-g, magnetometer samples)."""
    _exact(data, 6, what)
    x, y, z = struct.unpack("<hhh", data)
    return x, y, z


def encode_vector(x: int, y: int, z: int) -> bytes:
    """Three Int16."""
    return struct.pack("<hhh", x, y, z)


def decode_u16(data: bytes, what: str) -> int:
    """A UInt16 (periods, bearing, scrolling delay)."""
    _exact(data, 2, what)
    (value,) = struct.unpack("<H", data)
    return int(value)


def encode_u16(value: int) -> bytes:
    """A UInt16."""
    if not 0 <= value <= 0xFFFF:
        raise ValueError(f"{value} does not fit a UInt16")
    return struct.pack("<H", value)


def decode_button(data: bytes) -> int:
    """A button state: 0 released, 1 pressed, 2 long press."""
    _exact(data, 1, "button state")
    if data[0] > 2:
        raise ProtocolError(f"button state {data[0]} is not 0, 1 or 2")
    return data[0]


def decode_temperature(data: bytes) -> int:
    """Temperature in °C (Int8)."""
    _exact(data, 1, "temperature")
    (value,) = struct.unpack("<b", data)
    return int(value)


def decode_u32(data: bytes, what: str) -> int:
    """A UInt32 (the pin configuration masks)."""
    _exact(data, 4, what)
    (value,) = struct.unpack("<I", data)
    return int(value)


def encode_u32(value: int) -> bytes:
    """A UInt32."""
    return struct.pack("<I", value)


def decode_pin_data(data: bytes) -> tuple[tuple[int, int], ...]:
    """(edge pin, value) pairs from pin data; an analogue value is the 10-bit reading shifted right by 2.

    The micro:bit sends positions in its pin table (`pins.SERVICE_PINS`); they come back as edge pins.
    """
    if not data or len(data) % 2 or len(data) > 2 * MAX_RECORDS * 2:
        raise ProtocolError(f"pin data needs 1-{2 * MAX_RECORDS} (pin, value) pairs, got {len(data)} bytes")
    return tuple((pins.edge_pin(data[index]), data[index + 1]) for index in range(0, len(data), 2))


def encode_pin_data(pairs: Iterable[tuple[int, int]]) -> bytes:
    """Pin data from (edge pin, value) pairs (value 0/1 digital, 0-255 analogue).

    Each edge pin goes out as its position in the runtime's pin table; `pins.PinNotExposed` (a
    `ValueError`) for a pin the service has none for.
    """
    out = bytearray()
    for pin, value in pairs:
        if not 0 <= value <= 255:
            raise ValueError(f"pin P{pin} value {value} is outside 0-255")
        out += bytes([pins.position(pin), value])
    return bytes(out)


def encode_pwm(pin: int, value: int, period_us: int) -> bytes:
    """One PWM control record for edge pin `pin` (sent as its position): duty 0-1024, period in µs."""
    if not 0 <= value <= 1024 or not 0 <= period_us <= 0xFFFFFFFF:
        raise ValueError(f"PWM pin P{pin} value {value} period {period_us} µs is out of range")
    return struct.pack("<BHI", pins.position(pin), value, period_us)


def decode_pwm(data: bytes) -> tuple[tuple[int, int, int], ...]:
    """PWM control records as (edge pin, value, period µs); the runtime wants a multiple of 7 bytes."""
    if not data or len(data) % 7 or len(data) > 7 * 2:
        raise ProtocolError(f"PWM control needs one or two 7-byte records, got {len(data)} bytes")
    records = tuple(struct.unpack_from("<BHI", data, offset) for offset in range(0, len(data), 7))
    for _, value, _ in records:
        if value > 1024:
            raise ProtocolError(f"PWM record value {value} is outside 0-1024")
    return tuple((pins.edge_pin(p), int(v), int(t)) for p, v, t in records)


def encode_matrix(rows: Iterable[Iterable[bool]]) -> bytes:
    """Five row bytes from 5 × 5 booleans (row 0 at the top; bit 4 is the leftmost column)."""
    out = bytearray()
    for row in rows:
        cells = list(row)
        if len(cells) != MATRIX_COLUMNS:
            raise ValueError(f"a matrix row needs {MATRIX_COLUMNS} cells, got {len(cells)}")
        out.append(sum(1 << (MATRIX_COLUMNS - 1 - column) for column, lit in enumerate(cells) if lit))
    if len(out) != MATRIX_ROWS:
        raise ValueError(f"the matrix needs {MATRIX_ROWS} rows, got {len(out)}")
    return bytes(out)


def decode_matrix(data: bytes) -> tuple[tuple[bool, ...], ...]:
    """5 × 5 booleans from the five row bytes."""
    _exact(data, MATRIX_ROWS, "LED matrix state")
    return tuple(
        tuple(bool(byte >> (MATRIX_COLUMNS - 1 - column) & 1) for column in range(MATRIX_COLUMNS)) for byte in data
    )


def encode_text(text: str) -> bytes:
    """LED text or a UART packet: UTF-8, at most 20 bytes."""
    data = text.encode("utf-8")
    if not data or len(data) > MAX_TEXT_BYTES:
        raise ValueError(f"text must be 1-{MAX_TEXT_BYTES} bytes of UTF-8, got {len(data)}")
    return data


def decode_events(data: bytes) -> tuple[tuple[int, int], ...]:
    """(source, value) event records of the event service."""
    if not data or len(data) % 4 or len(data) > 4 * MAX_RECORDS:
        raise ProtocolError(f"events need 1-{MAX_RECORDS} 4-byte records, got {len(data)} bytes")
    return tuple((int(s), int(v)) for s, v in struct.iter_unpack("<HH", data))


def encode_events(events: Iterable[tuple[int, int]]) -> bytes:
    """(source, value) event records."""
    return b"".join(struct.pack("<HH", source, value) for source, value in events)
