"""Edge connector pins as the micro:bit runtime's IO pin service numbers them.

The IO pin service (`MicroBitIOPinService`) addresses `io.pin[i]` for `i` below
`MICROBIT_IO_PIN_SERVICE_PINCOUNT` (19): a position in the runtime's pin table, which lists P0-P16
and then P19 and P20 (P17 and P18 are the 3 V supply, not I/O pins). Every pin number the service
carries is such a position, not the edge pin's number: the pin of a pin data pair, of a PWM record,
and bit `i` of the AD and IO configuration masks. So edge pin P19 is position 17 and P20 is 18.

Both runtimes have the same table (microbit-dal `inc/drivers/MicroBitIO.h` on V1,
codal-microbit-v2 `model/MicroBitIO.h` on V2, each after the zero-length `pin[0]` member) and the
same count (`inc/bluetooth/MicroBitIOPinService.h`). They differ only beyond it: V2's `edgePin()`
sends any position of 19 or more to P0; V1 indexes past its table (undefined behaviour).
"""

from __future__ import annotations

from typing import Literal

from protocols.errors import ProtocolError

#: Edge pin numbers in the order of the runtime's pin table: position → edge pin.
SERVICE_PINS: tuple[int, ...] = (*range(17), 19, 20)
#: How many positions the service addresses (the runtime's MICROBIT_IO_PIN_SERVICE_PINCOUNT).
PINCOUNT = len(SERVICE_PINS)
#: Edge pins the service can drive or read.
EXPOSED = frozenset(SERVICE_PINS)
_POSITION = {edge: position for position, edge in enumerate(SERVICE_PINS)}

Runtime = Literal["v1", "v2"]


class PinNotExposed(ValueError):
    """An edge pin the IO pin service cannot address (P17, P18 and anything above P20)."""

    def __init__(self, edge_pin: int) -> None:
        super().__init__(
            f"P{edge_pin} is not an I/O pin the micro:bit's IO pin service exposes (P0-P16, P19, P20;"
            " P17 and P18 are 3 V supply)"
        )
        self.edge_pin = edge_pin


def position(edge_pin: int) -> int:
    """The service's position for edge pin `edge_pin`; `PinNotExposed` for a pin it has none for."""
    found = _POSITION.get(edge_pin)
    if found is None:
        raise PinNotExposed(edge_pin)
    return found


def edge_pin(service_position: int) -> int:
    """The edge pin at a position the micro:bit sent; `ProtocolError` beyond the table."""
    if not 0 <= service_position < PINCOUNT:
        raise ProtocolError(f"pin {service_position} is beyond the IO pin service's {PINCOUNT} pins")
    return SERVICE_PINS[service_position]


def mask_bit(edge_pin: int) -> int:
    """The bit of `edge_pin` in the AD and IO configuration masks."""
    return 1 << position(edge_pin)


def runtime_target(service_position: int, runtime: Runtime) -> int | None:
    """The edge pin a runtime really drives for a position a client wrote (None: undefined on V1).

    V2 sends any position of `PINCOUNT` or more to P0 (codal-microbit-v2 `edgePin()`); V1 indexes
    past its table, which this reports as None.
    """
    if 0 <= service_position < PINCOUNT:
        return SERVICE_PINS[service_position]
    return SERVICE_PINS[0] if runtime == "v2" else None
