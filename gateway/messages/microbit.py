"""BBC micro:bit messages and commands (`kind = "microbit"`, the micro:bit Bluetooth profile)."""

from __future__ import annotations

from typing import Annotated

from gateway.messages.common import Time, Vector3
from gateway.messages.schema import BOOL, F64, STR, U16, Array, Int, Nested, Str, message

_PIN = Int(8, False, maximum=20)
_BUTTON = Int(8, False, maximum=2)
_PERIOD = Int(16, False, maximum=60000)
#: The profile's text characteristics hold 20 bytes; the adapter checks the UTF-8 length.
_TEXT = Str(20)


@message("hwgateway/MicrobitState")
class MicrobitState:
    """A micro:bit's sensors in SI units, published on `<id>/state` at each notification.

    `acceleration` in m/s² (the profile sends milli-g); `magnetic_field` in tesla (the runtime's
    compass sample in nT, sent as Int16, so components beyond ±32.767 µT wrap on real hardware);
    `heading_deg` the compass bearing in degrees clockwise from magnetic north; `temperature` in °C;
    `buttons` A and B (0 released, 1 pressed, 2 long press). A field of a service the flashed program
    did not start stays 0.
    """

    stamp: Annotated[Time, Nested(Time)] = Time()
    acceleration: Annotated[Vector3, Nested(Vector3)] = Vector3()
    magnetic_field: Annotated[Vector3, Nested(Vector3)] = Vector3()
    heading_deg: Annotated[float, F64] = 0.0
    temperature: Annotated[float, F64] = 0.0
    buttons: Annotated[tuple[int, ...], Array(_BUTTON, 2)] = (0, 0)


@message("hwgateway/MicrobitPins")
class MicrobitPins:
    """Input pin readings notified by the IO pin service, on `<id>/pins`: `values[i]` belongs to `pins[i]`.

    `pins` are edge connector numbers (P0-P16, P19, P20). Digital pins read 0 or 1; analogue pins
    the 10-bit reading divided by 4 (0-255).
    """

    stamp: Annotated[Time, Nested(Time)] = Time()
    pins: Annotated[tuple[int, ...], Array(_PIN, max_length=21)] = ()
    values: Annotated[tuple[int, ...], Array(Int(8, False), max_length=21)] = ()


@message("hwgateway/MicrobitUart")
class MicrobitUart:
    """Bytes the micro:bit's program sent over the UART service, decoded as UTF-8, on `<id>/uart`."""

    stamp: Annotated[Time, Nested(Time)] = Time()
    text: Annotated[str, STR] = ""


@message("hwgateway/MicrobitEvent")
class MicrobitEvent:
    """A runtime event the micro:bit raised through the event service (`source` id, `value`), on `<id>/events`."""

    stamp: Annotated[Time, Nested(Time)] = Time()
    source: Annotated[int, U16] = 0
    value: Annotated[int, U16] = 0


@message("hwgateway/MicrobitLeds", kind="command")
class MicrobitLeds:
    """Light the 5 × 5 matrix: `rows[0]` is the top row, `rows[r][0]` its leftmost LED (true = on)."""

    rows: Annotated[tuple[tuple[bool, ...], ...], Array(Array(BOOL, 5), 5)] = ((False,) * 5,) * 5


@message("hwgateway/MicrobitText", kind="command")
class MicrobitText:
    """Scroll `text` (1-20 bytes of UTF-8) across the matrix; `scroll_delay_ms` > 0 sets the step time first."""

    text: Annotated[str, _TEXT] = ""
    scroll_delay_ms: Annotated[int, _PERIOD] = 0


@message("hwgateway/MicrobitPin", kind="command")
class MicrobitPin:
    """Drive edge connector `pin` as an output: `value` 0/1, or 0-255 with `analog` (PWM, ×4 on the wire).

    `pin` is P0-P16, P19 or P20, the pins the runtime's IO pin service exposes; P17 and P18 (3 V
    supply) are refused with `invalid_argument`. The output is leased to the commanding client: it
    returns to 0 when the client disconnects, on estop and at shutdown.
    """

    pin: Annotated[int, _PIN] = 0
    value: Annotated[int, Int(8, False)] = 0
    analog: Annotated[bool, BOOL] = False


@message("hwgateway/MicrobitPwm", kind="command")
class MicrobitPwm:
    """PWM on edge pin `pin` (as `MicrobitPin`): duty `value` 0-1024 (1024 = on) with `period_us` µs; leased."""

    pin: Annotated[int, _PIN] = 0
    value: Annotated[int, Int(16, False, maximum=1024)] = 0
    period_us: Annotated[int, Int(32, False, minimum=1, maximum=1_000_000)] = 20000


@message("hwgateway/MicrobitPeriods", kind="command")
class MicrobitPeriods:
    """Set sample periods in ms (0 leaves one alone).

    The micro:bit snaps accelerometer and magnetometer periods to 1, 2, 5, 10, 20, 80, 160 or
    640 ms; the result reports the periods it took.
    """

    accelerometer_ms: Annotated[int, _PERIOD] = 0
    magnetometer_ms: Annotated[int, _PERIOD] = 0
    temperature_ms: Annotated[int, _PERIOD] = 0


@message("hwgateway/MicrobitUartSend", kind="command")
class MicrobitUartSend:
    """Send `text` (1-20 bytes of UTF-8) to the micro:bit's program over the UART service."""

    text: Annotated[str, _TEXT] = ""


@message("hwgateway/MicrobitSendEvent", kind="command")
class MicrobitSendEvent:
    """Raise event (`source`, `value`) on the micro:bit through the event service's Client Event."""

    source: Annotated[int, U16] = 0
    value: Annotated[int, U16] = 0
