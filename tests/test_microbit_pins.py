"""The IO pin service's pin numbering, checked against the micro:bit runtimes' own pin tables.

`tests/data/microbit/io_pin_tables.json` holds, line for line, the `class MicroBitIO` members that
follow the zero-length `pin[0]` array and the service's `MICROBIT_IO_PIN_SERVICE_PINCOUNT` define:
lancaster-university/microbit-dal `inc/drivers/MicroBitIO.h` and `inc/bluetooth/MicroBitIOPinService.h`
(V1), lancaster-university/codal-microbit-v2 `model/MicroBitIO.h` and
`inc/bluetooth/MicroBitIOPinService.h` (V2). The service addresses `io.pin[i]`, so position `i` of
that member list is the pin it drives (`source/bluetooth/MicroBitIOPinService.cpp` in both).
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

from protocols.errors import ProtocolError
from protocols.microbit import pins
from protocols.microbit import profile as mb

TABLES = json.loads((Path(__file__).parent / "data" / "microbit" / "io_pin_tables.json").read_text())
RUNTIMES = ("v1", "v2")


def runtime_table(runtime: str) -> list[int]:
    """Edge pins at positions 0.. of the service, read from the runtime's own declarations."""
    source = TABLES[runtime]
    members = [re.match(r"\s*\w+\s+(\w+)(\[0\])?;", line) for line in source["members"]]
    names = [match.group(1) for match in members if match]
    assert len(names) == len(source["members"])
    assert names[0] == "pin"
    assert source["members"][0].rstrip().endswith("pin[0];")
    count_match = re.fullmatch(r"#define MICROBIT_IO_PIN_SERVICE_PINCOUNT\s+(\d+)", source["pincount_define"])
    assert count_match is not None
    count = int(count_match.group(1))
    addressed = names[1 : 1 + count]
    assert all(re.fullmatch(r"P\d+", name) for name in addressed), addressed
    return [int(name[1:]) for name in addressed]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_positions_follow_the_runtime_pin_table(runtime: str) -> None:
    table = runtime_table(runtime)
    assert list(pins.SERVICE_PINS) == table
    assert len(table) == pins.PINCOUNT
    for position, edge in enumerate(table):
        assert pins.position(edge) == position
        assert pins.edge_pin(position) == edge
        assert pins.mask_bit(edge) == 1 << position
        # On the wire: pin data pairs and PWM records carry the position.
        assert mb.encode_pin_data([(edge, 1)]) == bytes([position, 1])
        assert mb.decode_pin_data(bytes([position, 200])) == ((edge, 200),)
        assert mb.encode_pwm(edge, 512, 20000) == struct.pack("<BHI", position, 512, 20000)
        assert mb.decode_pwm(struct.pack("<BHI", position, 512, 20000)) == ((edge, 512, 20000),)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_pins_the_board_does_not_expose_are_refused(runtime: str) -> None:
    exposed = set(runtime_table(runtime))
    for edge in range(256):
        if edge in exposed:
            continue
        with pytest.raises(pins.PinNotExposed, match=rf"P{edge} is not an I/O pin"):
            pins.position(edge)
        with pytest.raises(pins.PinNotExposed):
            mb.encode_pin_data([(edge, 1)])
        with pytest.raises(pins.PinNotExposed):
            mb.encode_pwm(edge, 0, 20000)
    assert {17, 18} <= set(range(21)) - exposed


def test_positions_beyond_the_table_are_protocol_errors() -> None:
    for position in range(pins.PINCOUNT, 256):
        with pytest.raises(ProtocolError, match=rf"pin {position} is beyond the IO pin service's 19 pins"):
            mb.decode_pin_data(bytes([position, 0]))
        with pytest.raises(ProtocolError, match="beyond"):
            mb.decode_pwm(struct.pack("<BHI", position, 0, 1000))


def test_beyond_the_table_v2_drives_p0_and_v1_is_undefined() -> None:
    # codal-microbit-v2's edgePin(): a position at or past PINCOUNT becomes index 0 (P0).
    assert "index = 0;" in TABLES["v2"]["beyond_pincount"]
    # microbit-dal indexes io.pin[data->pin] unchecked: past the table nothing is defined.
    assert "io.pin[data->pin]" in TABLES["v1"]["beyond_pincount"]
    for position in range(pins.PINCOUNT, 32):
        assert pins.runtime_target(position, "v2") == runtime_table("v2")[0]
        assert pins.runtime_target(position, "v1") is None
    for position, edge in enumerate(runtime_table("v1")):
        assert pins.runtime_target(position, "v1") == pins.runtime_target(position, "v2") == edge
