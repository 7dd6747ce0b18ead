"""LWP 3.0 port and mode information: what a hub says about a device's modes, and scaling by it.

A hub describes each mode of an attached device when asked (§3.16 Port Mode Information Request,
0x22; answered by §3.20 Port Mode Information, 0x44): its NAME, the RAW range of the values it
sends, the same range in percent (PCT) and in SI units (SI), the unit's SYMBOL, and the VALUE
FORMAT (how many values a Port Value holds, of which integer or float type). A raw value maps onto
SI linearly: raw_min → si_min, raw_max → si_max. §3.15 Port Information Request (0x21) and §3.19
Port Information (0x43) give the port's modes as a whole.

Pure codec: payload decoders raise `ProtocolError`; `ModeScale` refuses ranges it cannot scale by.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from enum import IntEnum

from protocols.errors import ProtocolError

#: Longest NAME and SYMBOL texts accepted (bytes, NUL padding included). The protocol document says
#: 11 and 5 characters; captured hubs pad NAME to 11 or 12 bytes and SYMBOL to 4 or 5.
MAX_NAME_BYTES = 12
MAX_SYMBOL_BYTES = 5


class PortInfoType(IntEnum):
    """§3.15.2 Port Information Request information types."""

    PORT_VALUE = 0x00
    MODE_INFO = 0x01
    POSSIBLE_MODE_COMBINATIONS = 0x02


class ModeInfoType(IntEnum):
    """§3.16.2 / §3.20.1 Mode information types."""

    NAME = 0x00
    RAW = 0x01
    PCT = 0x02
    SI = 0x03
    SYMBOL = 0x04
    MAPPING = 0x05
    INTERNAL_USE = 0x06
    MOTOR_BIAS = 0x07
    CAPABILITY_BITS = 0x08
    VALUE_FORMAT = 0x80


class DatasetType(IntEnum):
    """§3.20.1 VALUE FORMAT dataset types, with their struct codes."""

    INT8 = 0x00
    INT16 = 0x01
    INT32 = 0x02
    FLOAT = 0x03

    @property
    def code(self) -> str:
        """The little-endian struct code of one value."""
        return "bhif"[self.value]


@dataclass(frozen=True, slots=True)
class ValueFormat:
    """VALUE FORMAT: `datasets` values of `dataset_type` per Port Value, shown with `figures` and `decimals`."""

    datasets: int
    dataset_type: DatasetType
    figures: int
    decimals: int

    @property
    def size(self) -> int:
        """Bytes of one Port Value in this format."""
        return self.datasets * struct.calcsize("<" + self.dataset_type.code)

    def unpack(self, data: bytes) -> tuple[float, ...]:
        """The raw values of a Port Value; `ProtocolError` when its size is not this format's."""
        if len(data) != self.size:
            raise ProtocolError(f"port value of {len(data)} bytes, the mode's value format says {self.size}")
        values: tuple[float, ...] = struct.unpack("<" + self.dataset_type.code * self.datasets, data)
        return values


@dataclass(frozen=True, slots=True)
class PortInformationRequest:
    """§3.15 Port Information Request: ask for `info_type` of `port`."""

    port: int
    info_type: PortInfoType


@dataclass(frozen=True, slots=True)
class PortModeInformationRequest:
    """§3.16 Port Mode Information Request: ask for `info_type` of `mode` of `port`."""

    port: int
    mode: int
    info_type: ModeInfoType


@dataclass(frozen=True, slots=True)
class PortInformation:
    """§3.19 Port Information; `payload` is the information after port and type (MODE INFO: see `mode_info`)."""

    port: int
    info_type: PortInfoType
    payload: bytes

    def mode_info(self) -> tuple[int, int, int, int]:
        """MODE INFO as (capabilities bits, mode count, input modes bit mask, output modes bit mask)."""
        if self.info_type != PortInfoType.MODE_INFO or len(self.payload) != 6:
            raise ProtocolError("port information is not a 6-byte MODE INFO")
        capabilities, count, inputs, outputs = struct.unpack("<BBHH", self.payload)
        return int(capabilities), int(count), int(inputs), int(outputs)


ModeInfoValue = str | tuple[float, float] | ValueFormat | bytes


@dataclass(frozen=True, slots=True)
class PortModeInformation:
    """§3.20 Port Mode Information: `value` of `info_type` for `mode` of `port`.

    NAME and SYMBOL are text, RAW/PCT/SI a (min, max) pair of floats, VALUE FORMAT a `ValueFormat`,
    any other type its raw bytes.
    """

    port: int
    mode: int
    info_type: ModeInfoType
    value: ModeInfoValue


def _info_type(cls: type[IntEnum], value: int, what: str) -> IntEnum:
    try:
        return cls(value)
    except ValueError:
        raise ProtocolError(f"{what} 0x{value:02x} is not defined by LWP 3.0") from None


def _text(data: bytes, limit: int, what: str) -> str:
    if len(data) > limit:
        raise ProtocolError(f"{what} of {len(data)} bytes is longer than {limit}")
    try:
        return data.split(b"\x00", 1)[0].decode("ascii")
    except UnicodeDecodeError:
        raise ProtocolError(f"{what} is not ASCII") from None


def decode_port_information_request(payload: bytes) -> PortInformationRequest:
    """The payload of a 0x21 message."""
    if len(payload) != 2:
        raise ProtocolError(f"port information request needs 2 payload bytes, got {len(payload)}")
    info_type = _info_type(PortInfoType, payload[1], "port information type")
    return PortInformationRequest(payload[0], PortInfoType(info_type))


def decode_port_mode_information_request(payload: bytes) -> PortModeInformationRequest:
    """The payload of a 0x22 message."""
    if len(payload) != 3:
        raise ProtocolError(f"port mode information request needs 3 payload bytes, got {len(payload)}")
    info_type = _info_type(ModeInfoType, payload[2], "mode information type")
    return PortModeInformationRequest(payload[0], payload[1], ModeInfoType(info_type))


def decode_port_information(payload: bytes) -> PortInformation:
    """The payload of a 0x43 message."""
    if len(payload) < 2:
        raise ProtocolError(f"port information needs at least 2 payload bytes, got {len(payload)}")
    info_type = PortInfoType(_info_type(PortInfoType, payload[1], "port information type"))
    information = PortInformation(payload[0], info_type, payload[2:])
    if info_type == PortInfoType.MODE_INFO:
        information.mode_info()
    elif info_type == PortInfoType.POSSIBLE_MODE_COMBINATIONS and len(information.payload) % 2:
        raise ProtocolError("possible mode combinations need whole UInt16 masks")
    return information


def decode_port_mode_information(payload: bytes) -> PortModeInformation:
    """The payload of a 0x44 message; every value type has its exact size checked."""
    if len(payload) < 3:
        raise ProtocolError(f"port mode information needs at least 3 payload bytes, got {len(payload)}")
    port, mode = payload[0], payload[1]
    info_type = ModeInfoType(_info_type(ModeInfoType, payload[2], "mode information type"))
    data = payload[3:]
    value: ModeInfoValue
    if info_type == ModeInfoType.NAME:
        value = _text(data, MAX_NAME_BYTES, "mode name")
    elif info_type == ModeInfoType.SYMBOL:
        value = _text(data, MAX_SYMBOL_BYTES, "unit symbol")
    elif info_type in (ModeInfoType.RAW, ModeInfoType.PCT, ModeInfoType.SI):
        if len(data) != 8:
            raise ProtocolError(f"{info_type.name} range needs 8 bytes (two floats), got {len(data)}")
        low, high = struct.unpack("<ff", data)
        if not (math.isfinite(low) and math.isfinite(high)):
            raise ProtocolError(f"{info_type.name} range {low}..{high} is not finite")
        value = (float(low), float(high))
    elif info_type == ModeInfoType.VALUE_FORMAT:
        if len(data) != 4:
            raise ProtocolError(f"value format needs 4 bytes, got {len(data)}")
        datasets, kind, figures, decimals = data
        if datasets == 0:
            raise ProtocolError("value format of 0 datasets")
        dataset_type = DatasetType(_info_type(DatasetType, kind, "dataset type"))
        value = ValueFormat(datasets, dataset_type, figures, decimals)
    else:
        value = bytes(data)
    return PortModeInformation(port, mode, info_type, value)


def encode_payload(
    message: PortInformationRequest | PortModeInformationRequest | PortInformation | PortModeInformation,
) -> bytes:
    """The payload (after the common header) of one of these messages."""
    match message:
        case PortInformationRequest(port, info_type):
            return bytes([port, info_type])
        case PortModeInformationRequest(port, mode, info_type):
            return bytes([port, mode, info_type])
        case PortInformation(port, info_type, payload):
            return bytes([port, info_type]) + payload
        case PortModeInformation(port, mode, info_type, value):
            head = bytes([port, mode, info_type])
            if isinstance(value, str):
                return head + value.encode("ascii")
            if isinstance(value, tuple):
                return head + struct.pack("<ff", *value)
            if isinstance(value, ValueFormat):
                return head + bytes([value.datasets, value.dataset_type, value.figures, value.decimals])
            return head + value
    raise TypeError(f"not a port information message: {message!r}")


@dataclass(frozen=True, slots=True)
class ModeScale:
    """How one mode's raw values become SI values, from the hub's RAW and SI ranges and SYMBOL.

    `si(raw)` maps raw_min → si_min and raw_max → si_max linearly; `symbol` is the SI unit as the
    hub names it ("mG", "DEG", ...); `value_format` is what each Port Value holds.
    """

    raw: tuple[float, float]
    si: tuple[float, float]
    symbol: str
    value_format: ValueFormat
    pct: tuple[float, float] = (0.0, 100.0)

    def __post_init__(self) -> None:
        # Real hubs describe some modes (the Technic hub accelerometer's CAL) with RAW 1..1 and SI
        # 1..1: values go out as sent. An empty RAW range onto any other SI range maps nothing.
        if self.raw[0] == self.raw[1] and self.si != self.raw:
            raise ProtocolError(
                f"RAW range {self.raw[0]}..{self.raw[1]} is empty while SI is {self.si[0]}..{self.si[1]}:"
                " nothing to scale by"
            )

    def to_si(self, raw: float) -> float:
        """One raw value in the mode's SI unit (`symbol`)."""
        (raw_min, raw_max), (si_min, si_max) = self.raw, self.si
        if raw_min == raw_max:
            return raw
        return si_min + (raw - raw_min) * (si_max - si_min) / (raw_max - raw_min)

    def to_raw(self, si: float) -> float:
        """The raw value of an SI value (the inverse of `to_si`, for a simulated device)."""
        (raw_min, raw_max), (si_min, si_max) = self.raw, self.si
        if si_min == si_max:
            return si if raw_min == raw_max else raw_min
        return raw_min + (si - si_min) * (raw_max - raw_min) / (si_max - si_min)

    def values(self, data: bytes) -> tuple[float, ...]:
        """A Port Value's values in SI units."""
        return tuple(self.to_si(raw) for raw in self.value_format.unpack(data))

    @classmethod
    def from_information(cls, infos: dict[ModeInfoType, ModeInfoValue]) -> ModeScale:
        """The scale from a mode's RAW, SI, SYMBOL and VALUE FORMAT answers (PCT optional)."""
        raw, si, symbol, value_format = (
            infos.get(ModeInfoType.RAW),
            infos.get(ModeInfoType.SI),
            infos.get(ModeInfoType.SYMBOL),
            infos.get(ModeInfoType.VALUE_FORMAT),
        )
        pct = infos.get(ModeInfoType.PCT, (0.0, 100.0))
        if not (
            isinstance(raw, tuple)
            and isinstance(si, tuple)
            and isinstance(pct, tuple)
            and isinstance(symbol, str)
            and isinstance(value_format, ValueFormat)
        ):
            missing = [t.name for t in SCALE_INFO_TYPES if t not in infos]
            raise ProtocolError(f"mode information incomplete (missing {', '.join(missing) or 'none'})")
        return cls(raw, si, symbol, value_format, pct)


#: What a client asks a hub for, in this order, to scale a mode's values.
SCALE_INFO_TYPES = (
    ModeInfoType.RAW,
    ModeInfoType.PCT,
    ModeInfoType.SI,
    ModeInfoType.SYMBOL,
    ModeInfoType.VALUE_FORMAT,
)
