"""LWP3 port and mode information, against mode information real hubs sent.

The captures are sharpbrick/powered-up's device dumps (`src/SharpBrick.PoweredUp/Devices/*.cs`,
`GetStaticPortInfoMessages`), transcribed in `devices/sim/lwp3_dumps.py`. The Technic hub
accelerometer's scale is checked against a second, independent source:
nathankellenicki/node-poweredup `src/devices/technicmediumhubaccelerometersensor.ts` turns a raw
value into mG by dividing it by 4.096.
"""

from __future__ import annotations

import contextlib
import math
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from devices.sim import lwp3_dumps
from protocols.errors import ProtocolError
from protocols.lwp3 import messages as lwp
from protocols.lwp3.constants import IoType, MessageType
from protocols.lwp3.modes import (
    DatasetType,
    ModeInfoType,
    ModeInfoValue,
    ModeScale,
    PortInformation,
    PortInfoType,
    PortModeInformation,
    ValueFormat,
)
from tests.fuzzing import fuzz_settings

ALL_CAPTURED = [(io_type, data) for io_type in lwp3_dumps.DUMPS for data in lwp3_dumps.messages(io_type)]


def mode_information(io_type: IoType, mode: int) -> dict[ModeInfoType, ModeInfoValue]:
    """Every Port Mode Information of `mode` in the device's capture, decoded by the codec."""
    found: dict[ModeInfoType, ModeInfoValue] = {}
    for data in lwp3_dumps.messages(io_type):
        message = lwp.decode(data)
        if isinstance(message, PortModeInformation) and message.mode == mode:
            found[message.info_type] = message.value
    return found


@pytest.mark.parametrize(("io_type", "data"), ALL_CAPTURED, ids=lambda v: v.hex("-") if isinstance(v, bytes) else None)
def test_every_captured_message_decodes_and_encodes_back(io_type: IoType, data: bytes) -> None:
    message = lwp.decode(data)
    assert isinstance(message, PortInformation | PortModeInformation)
    assert lwp.decode(lwp.encode(message)) == message
    if isinstance(message, PortModeInformation) and message.info_type not in (ModeInfoType.NAME, ModeInfoType.SYMBOL):
        assert lwp.encode(message) == data  # only the texts' NUL padding is not kept


@pytest.mark.parametrize("io_type", list(lwp3_dumps.DUMPS))
def test_every_captured_mode_has_a_scale_and_a_consistent_mode_count(io_type: IoType) -> None:
    infos = [lwp.decode(data) for data in lwp3_dumps.messages(io_type)]
    mode_info = next(m for m in infos if isinstance(m, PortInformation) and m.info_type == PortInfoType.MODE_INFO)
    _, count, inputs, outputs = mode_info.mode_info()
    modes = {m.mode for m in infos if isinstance(m, PortModeInformation)}
    assert modes == set(range(count))
    assert inputs | outputs <= (1 << count) - 1
    for mode in modes:
        scale = ModeScale.from_information(mode_information(io_type, mode))
        assert scale.to_si(scale.raw[0]) == pytest.approx(scale.si[0])
        assert scale.to_si(scale.raw[1]) == pytest.approx(scale.si[1])


def test_technic_hub_accelerometer_scale_is_the_hubs_own_and_node_poweredups() -> None:
    infos = mode_information(IoType.TECHNIC_HUB_ACCELEROMETER, 0)
    assert infos[ModeInfoType.NAME] == "GRV"
    assert infos[ModeInfoType.SYMBOL] == "mG"
    assert infos[ModeInfoType.VALUE_FORMAT] == ValueFormat(3, DatasetType.INT16, 3, 0)
    scale = ModeScale.from_information(infos)
    # node-poweredup: mG = raw / 4.096, over the whole Int16 range.
    for raw in range(-32768, 32768, 97):
        assert scale.to_si(raw) == pytest.approx(raw / 4.096, abs=1e-9)
    # At rest a hub reads 4096 (1 g), the value the adapter once took for 4096 mG (40 m/s²).
    assert scale.values(struct.pack("<hhh", 0, 0, -4096)) == pytest.approx((0.0, 0.0, -1000.0))
    assert scale.to_raw(-1000.0) == pytest.approx(-4096.0)


def test_a_calibration_mode_with_empty_ranges_passes_values_as_sent() -> None:
    # The accelerometer's mode 1 (CAL): RAW 1..1, SI 1..1 in the hub's own answer.
    infos = mode_information(IoType.TECHNIC_HUB_ACCELEROMETER, 1)
    assert (infos[ModeInfoType.NAME], infos[ModeInfoType.RAW], infos[ModeInfoType.SI]) == (
        "CAL",
        (1.0, 1.0),
        (1.0, 1.0),
    )
    scale = ModeScale.from_information(infos)
    assert scale.to_si(-7) == -7
    assert scale.to_raw(3.0) == 3.0


def test_technic_hub_temperature_and_motor_position_scales() -> None:
    temperature = ModeScale.from_information(mode_information(IoType.TECHNIC_HUB_TEMPERATURE, 0))
    assert (temperature.symbol, temperature.value_format.decimals) == ("DEG", 1)
    assert temperature.to_si(245) == pytest.approx(24.5)  # tenths, as its one decimal says
    for motor in (IoType.TECHNIC_LARGE_MOTOR, IoType.EXTERNAL_MOTOR_TACHO, IoType.INTERNAL_MOTOR_TACHO):
        position = ModeScale.from_information(mode_information(motor, 2))
        assert position.symbol == "DEG"
        assert position.value_format == ValueFormat(1, DatasetType.INT32, 4, 0)
        assert position.to_si(-720) == pytest.approx(-720.0)


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (bytes([0x61, 0x00, 0x01]) + struct.pack("<f", 1.0), "RAW range needs 8 bytes"),
        (bytes([0x61, 0x00, 0x03]) + struct.pack("<ff", math.nan, 1.0), "SI range nan..1.0 is not finite"),
        (bytes([0x61, 0x00, 0x03]) + struct.pack("<ff", -math.inf, 1.0), "is not finite"),
        (bytes([0x61, 0x00, 0x80, 0x03, 0x07, 0x03, 0x00]), "dataset type 0x07 is not defined"),
        (bytes([0x61, 0x00, 0x80, 0x00, 0x01, 0x03, 0x00]), "value format of 0 datasets"),
        (bytes([0x61, 0x00, 0x80, 0x03, 0x01]), "value format needs 4 bytes, got 2"),
        (bytes([0x61, 0x00, 0x09]), "mode information type 0x09 is not defined"),
        (bytes([0x61, 0x00, 0x00]) + b"A" * 13, "mode name of 13 bytes is longer than 12"),
        (bytes([0x61, 0x00, 0x04, 0xFF]), "unit symbol is not ASCII"),
        (bytes([0x61, 0x00]), "port mode information needs at least 3 payload bytes"),
    ],
)
def test_hostile_mode_information_is_refused(payload: bytes, error: str) -> None:
    with pytest.raises(ProtocolError, match=error):
        lwp.decode(lwp.frame(MessageType.PORT_MODE_INFORMATION, payload))


def test_a_scale_that_cannot_scale_is_refused() -> None:
    infos = mode_information(IoType.TECHNIC_HUB_ACCELEROMETER, 0)
    with pytest.raises(ProtocolError, match=r"RAW range 5\.0\.\.5\.0 is empty while SI is -8000\.0\.\.8000\.0"):
        ModeScale.from_information({**infos, ModeInfoType.RAW: (5.0, 5.0)})
    del infos[ModeInfoType.SYMBOL]
    with pytest.raises(ProtocolError, match="missing SYMBOL"):
        ModeScale.from_information(infos)
    scale = ModeScale.from_information(mode_information(IoType.TECHNIC_HUB_ACCELEROMETER, 0))
    with pytest.raises(ProtocolError, match="port value of 4 bytes, the mode's value format says 6"):
        scale.values(bytes(4))


@given(st.sampled_from([0x21, 0x22, 0x43, 0x44]), st.binary(max_size=24))
@pytest.mark.fuzz
@fuzz_settings(300)
def test_no_information_payload_crashes_the_decoder(message_type: int, payload: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        lwp.decode(lwp.frame(message_type, payload))
