"""Wii Remote HID reports: every output report (host → remote) and input report (remote → host).

A report is its report-ID byte followed by the payload, exactly as hidraw reads and writes it (spec
wiimote.md §1.1); the L2CAP transport adds and strips the 0xA2/0xA1 transaction byte. Output reports
are encoded at their exact length (the remote ignores padded ones) and every one carries the rumble
bit in bit 0 of its first payload byte, because a report without it switches the motor off (§2).
Decoders accept what the Linux kernel's hid-wiimote accepts (`wiimote_hid_event`): a report longer
than declared is decoded from its declared bytes (the rest is ignored and counted through
`excess_bytes`), and the reports for which the kernel has a buttons-only handler may be cut down to
their 2 button bytes (`ButtonsOnly`). Anything shorter, and unknown IDs, raise `ProtocolError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, IntFlag

from protocols.errors import ProtocolError


class Out(IntEnum):
    """Output report IDs (host → remote)."""

    RUMBLE = 0x10
    LEDS = 0x11
    REPORT_MODE = 0x12
    IR_PIXEL_CLOCK = 0x13
    SPEAKER_ENABLE = 0x14
    STATUS_REQUEST = 0x15
    WRITE_MEMORY = 0x16
    READ_MEMORY = 0x17
    SPEAKER_DATA = 0x18
    SPEAKER_MUTE = 0x19
    IR_LOGIC = 0x1A


#: Payload length of each output report (bytes after the ID).
OUTPUT_LENGTHS: dict[int, int] = {
    Out.RUMBLE: 1,
    Out.LEDS: 1,
    Out.REPORT_MODE: 2,
    Out.IR_PIXEL_CLOCK: 1,
    Out.SPEAKER_ENABLE: 1,
    Out.STATUS_REQUEST: 1,
    Out.WRITE_MEMORY: 21,
    Out.READ_MEMORY: 6,
    Out.SPEAKER_DATA: 21,
    Out.SPEAKER_MUTE: 1,
    Out.IR_LOGIC: 1,
}


class In(IntEnum):
    """Input report IDs (remote → host)."""

    STATUS = 0x20
    READ_REPLY = 0x21
    ACK = 0x22
    BUTTONS = 0x30
    BUTTONS_ACCEL = 0x31
    BUTTONS_EXT8 = 0x32
    BUTTONS_ACCEL_IR12 = 0x33
    BUTTONS_EXT19 = 0x34
    BUTTONS_ACCEL_EXT16 = 0x35
    BUTTONS_IR10_EXT9 = 0x36
    BUTTONS_ACCEL_IR10_EXT6 = 0x37
    EXT21 = 0x3D
    INTERLEAVED_A = 0x3E
    INTERLEAVED_B = 0x3F


#: Payload length of each input report.
INPUT_LENGTHS: dict[int, int] = {
    In.STATUS: 6,
    In.READ_REPLY: 21,
    In.ACK: 4,
    In.BUTTONS: 2,
    In.BUTTONS_ACCEL: 5,
    In.BUTTONS_EXT8: 10,
    In.BUTTONS_ACCEL_IR12: 17,
    In.BUTTONS_EXT19: 21,
    In.BUTTONS_ACCEL_EXT16: 21,
    In.BUTTONS_IR10_EXT9: 21,
    In.BUTTONS_ACCEL_IR10_EXT6: 21,
    In.EXT21: 21,
    In.INTERLEAVED_A: 21,
    In.INTERLEAVED_B: 21,
}


#: Input reports the kernel also takes with only their 2 button bytes (its `handler_*_K` entries):
#: status, read reply, ack and every data report but 0x3D, 0x3E and 0x3F (which carry no buttons or
#: split them).
BUTTONS_ONLY_REPORTS: frozenset[int] = frozenset(
    (
        In.STATUS,
        In.READ_REPLY,
        In.ACK,
        In.BUTTONS,
        In.BUTTONS_ACCEL,
        In.BUTTONS_EXT8,
        In.BUTTONS_ACCEL_IR12,
        In.BUTTONS_EXT19,
        In.BUTTONS_ACCEL_EXT16,
        In.BUTTONS_IR10_EXT9,
        In.BUTTONS_ACCEL_IR10_EXT6,
    )
)
BUTTON_BYTES = 2


@dataclass(frozen=True, slots=True)
class DataLayout:
    """Where a data report keeps its parts: has buttons/accel, IR byte count, extension byte count."""

    buttons: bool
    accel: bool
    ir_bytes: int
    ext_bytes: int


#: The layout of every data reporting mode (spec §3). 0x3E/0x3F each carry half of the 36 full-IR bytes.
DATA_LAYOUTS: dict[int, DataLayout] = {
    In.BUTTONS: DataLayout(True, False, 0, 0),
    In.BUTTONS_ACCEL: DataLayout(True, True, 0, 0),
    In.BUTTONS_EXT8: DataLayout(True, False, 0, 8),
    In.BUTTONS_ACCEL_IR12: DataLayout(True, True, 12, 0),
    In.BUTTONS_EXT19: DataLayout(True, False, 0, 19),
    In.BUTTONS_ACCEL_EXT16: DataLayout(True, True, 0, 16),
    In.BUTTONS_IR10_EXT9: DataLayout(True, False, 10, 9),
    In.BUTTONS_ACCEL_IR10_EXT6: DataLayout(True, True, 10, 6),
    In.EXT21: DataLayout(False, False, 0, 21),
    In.INTERLEAVED_A: DataLayout(True, True, 18, 0),
}

#: Data reporting modes a host may request with 0x12 (0x3F is the second half of 0x3E).
DATA_MODES: tuple[int, ...] = tuple(sorted(DATA_LAYOUTS))


class Button(IntFlag):
    """Core buttons as cwiid's 16-bit word: `(byte0 & 0x1F) << 8 | (byte1 & 0x9F)` (spec §3)."""

    TWO = 0x0001
    ONE = 0x0002
    B = 0x0004
    A = 0x0008
    MINUS = 0x0010
    HOME = 0x0080
    LEFT = 0x0100
    RIGHT = 0x0200
    DOWN = 0x0400
    UP = 0x0800
    PLUS = 0x1000


BUTTON_MASK = 0x1F9F


class StatusFlag(IntFlag):
    """Flags byte of the 0x20 status report."""

    BATTERY_LOW = 0x01
    EXTENSION = 0x02
    SPEAKER = 0x04
    IR = 0x08
    LED1 = 0x10
    LED2 = 0x20
    LED3 = 0x40
    LED4 = 0x80


class Space(IntEnum):
    """Address space of a memory read or write (first payload byte, without the rumble bit)."""

    EEPROM = 0x00
    REGISTER = 0x04


class ReadError(IntEnum):
    """Error nibble of a 0x21 read reply (0 = success)."""

    OK = 0
    INVALID_SPACE = 6
    NACK = 7
    INVALID_ADDRESS = 8


MAX_TRANSFER = 16
MAX_READ = 0xFFFF
_ADDRESS_MAX = 0xFFFFFF


def _flag(rumble: bool) -> int:
    return 0x01 if rumble else 0x00


# ---------------------------------------------------------------- output reports (host → remote)


def rumble_report(rumble: bool) -> bytes:
    """0x10: rumble on or off."""
    return bytes((Out.RUMBLE, _flag(rumble)))


def leds_report(leds: int, rumble: bool) -> bytes:
    """0x11: LEDs as a 4-bit mask (bit 0 = LED1), keeping the rumble state."""
    if not 0 <= leds <= 0x0F:
        raise ValueError(f"LED mask {leds:#x} is not 4 bits")
    return bytes((Out.LEDS, leds << 4 | _flag(rumble)))


def report_mode_report(mode: int, continuous: bool, rumble: bool) -> bytes:
    """0x12: data reporting `mode` (0x30-0x3E); `continuous` reports even when nothing changes."""
    if mode not in DATA_LAYOUTS:
        raise ValueError(f"{mode:#04x} is not a data reporting mode")
    return bytes((Out.REPORT_MODE, (0x04 if continuous else 0x00) | _flag(rumble), mode))


def _enable(report: int, on: bool, rumble: bool, ack: bool = False) -> bytes:
    return bytes((report, (0x04 if on else 0x00) | (0x02 if ack else 0x00) | _flag(rumble)))


def ir_pixel_clock_report(on: bool, rumble: bool) -> bytes:
    """0x13: IR camera pixel clock, with the ack bit set (as the kernel does) so a 0x22 confirms it."""
    return _enable(Out.IR_PIXEL_CLOCK, on, rumble, ack=True)


def ir_logic_report(on: bool, rumble: bool) -> bytes:
    """0x1A: IR camera logic, with the ack bit set."""
    return _enable(Out.IR_LOGIC, on, rumble, ack=True)


def speaker_enable_report(on: bool, rumble: bool) -> bytes:
    """0x14: speaker on or off."""
    return _enable(Out.SPEAKER_ENABLE, on, rumble)


def speaker_mute_report(mute: bool, rumble: bool) -> bytes:
    """0x19: speaker muted or not."""
    return _enable(Out.SPEAKER_MUTE, mute, rumble)


def status_request_report(rumble: bool) -> bytes:
    """0x15: ask for a 0x20 status report."""
    return bytes((Out.STATUS_REQUEST, _flag(rumble)))


def _check_address(address: int) -> None:
    if not 0 <= address <= _ADDRESS_MAX:
        raise ValueError(f"address {address:#x} is not 24 bits")


def write_memory_report(space: Space, address: int, data: bytes, rumble: bool) -> bytes:
    """0x16: write 1-16 bytes at `address` of `space`; the payload is zero-padded to 16 bytes."""
    _check_address(address)
    if not 1 <= len(data) <= MAX_TRANSFER:
        raise ValueError(f"a memory write carries 1 to 16 bytes, not {len(data)}")
    return (
        bytes((Out.WRITE_MEMORY, space | _flag(rumble)))
        + address.to_bytes(3, "big")
        + bytes((len(data),))
        + data.ljust(MAX_TRANSFER, b"\x00")
    )


def read_memory_report(space: Space, address: int, size: int, rumble: bool) -> bytes:
    """0x17: read `size` bytes (1-65535) at `address`; answered by one 0x21 per 16 bytes."""
    _check_address(address)
    if not 1 <= size <= MAX_READ:
        raise ValueError(f"a memory read asks for 1 to 65535 bytes, not {size}")
    return bytes((Out.READ_MEMORY, space | _flag(rumble))) + address.to_bytes(3, "big") + size.to_bytes(2, "big")


def speaker_data_report(data: bytes, rumble: bool) -> bytes:
    """0x18: up to 20 bytes of speaker samples."""
    if len(data) > 20:
        raise ValueError(f"speaker data carries at most 20 bytes, not {len(data)}")
    return bytes((Out.SPEAKER_DATA, len(data) << 3 | _flag(rumble))) + data.ljust(20, b"\x00")


@dataclass(frozen=True, slots=True)
class OutputReport:
    """A decoded output report (the simulated remote's view): `report` ID, rumble bit, and fields.

    `flags` is payload byte 0 without the rumble bit. For 0x12 `mode` is the requested report ID;
    for 0x16/0x17 `space`, `address`, `size` and (0x16) `data` are set; for 0x18 `data`.
    """

    report: int
    rumble: bool
    flags: int
    mode: int = 0
    space: int = 0
    address: int = 0
    size: int = 0
    data: bytes = b""

    @property
    def enabled(self) -> bool:
        """Bit 2 of byte 0: enable (0x13, 0x14, 0x19, 0x1A) or continuous reporting (0x12)."""
        return bool(self.flags & 0x04)

    @property
    def ack_requested(self) -> bool:
        """Bit 1 of byte 0: the host asks for a 0x22 acknowledgement."""
        return bool(self.flags & 0x02)


def decode_output(report: bytes) -> OutputReport:
    """Decode one output report; raise `ProtocolError` for an unknown ID or a wrong length."""
    if not report:
        raise ProtocolError("empty output report")
    report_id = report[0]
    expected = OUTPUT_LENGTHS.get(report_id)
    if expected is None:
        raise ProtocolError(f"unknown output report {report_id:#04x}")
    payload = report[1:]
    if len(payload) != expected:
        raise ProtocolError(f"output report {report_id:#04x} has {len(payload)} payload bytes, expected {expected}")
    rumble = bool(payload[0] & 0x01)
    flags = payload[0] & 0xFE
    if report_id == Out.REPORT_MODE:
        return OutputReport(report_id, rumble, flags, mode=payload[1])
    if report_id == Out.WRITE_MEMORY:
        size = payload[4]
        if not 1 <= size <= MAX_TRANSFER:
            raise ProtocolError(f"memory write of {size} bytes (1 to 16 allowed)")
        return OutputReport(
            report_id,
            rumble,
            flags,
            space=flags & 0x0C,
            address=int.from_bytes(payload[1:4], "big"),
            size=size,
            data=bytes(payload[5 : 5 + size]),
        )
    if report_id == Out.READ_MEMORY:
        return OutputReport(
            report_id,
            rumble,
            flags,
            space=flags & 0x0C,
            address=int.from_bytes(payload[1:4], "big"),
            size=int.from_bytes(payload[4:6], "big"),
        )
    if report_id == Out.SPEAKER_DATA:
        return OutputReport(report_id, rumble, flags, data=bytes(payload[1 : 1 + min(flags >> 3, 20)]))
    return OutputReport(report_id, rumble, flags)


# ---------------------------------------------------------------- input reports (remote → host)


@dataclass(frozen=True, slots=True)
class Status:
    """0x20: buttons, flags (`StatusFlag`) and the raw battery byte (208 ≈ full)."""

    buttons: int
    flags: StatusFlag
    battery: int

    @property
    def extension(self) -> bool:
        """Something is plugged into the extension port."""
        return StatusFlag.EXTENSION in self.flags

    @property
    def leds(self) -> int:
        """The LEDs as a 4-bit mask (bit 0 = LED1)."""
        return int(self.flags) >> 4


@dataclass(frozen=True, slots=True)
class ReadReply:
    """0x21: one chunk of a memory read: `error` (`ReadError`), the low 16 address bits, and its data."""

    buttons: int
    error: int
    address_low: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Ack:
    """0x22: acknowledgement of output report `report` with `error` (0 = success)."""

    buttons: int
    report: int
    error: int


@dataclass(frozen=True, slots=True)
class DataReport:
    """A data report (0x30-0x3F): buttons, 10-bit accelerometer counts, and the raw IR/extension bytes.

    `accel` is None when the mode carries none. For the interleaved pair (`report` 0x3E/0x3F) each
    half holds its 18 IR bytes and `accel` is None: join both halves with `Interleave`.
    """

    report: int
    buttons: int
    accel: tuple[int, int, int] | None
    ir: bytes
    ext: bytes


@dataclass(frozen=True, slots=True)
class ButtonsOnly:
    """A report cut down to its 2 button bytes (any of `BUTTONS_ONLY_REPORTS`): only `buttons` is known.

    The kernel reports the buttons and, for a short status report, re-sends the reporting mode.
    """

    report: int
    buttons: int


InputReport = Status | ReadReply | Ack | DataReport | ButtonsOnly


def _buttons(payload: bytes) -> int:
    return (payload[0] & 0x1F) << 8 | (payload[1] & 0x9F)


def _accel(payload: bytes) -> tuple[int, int, int]:
    b0, b1 = payload[0], payload[1]
    return (
        payload[2] << 2 | (b0 >> 5 & 0x03),
        payload[3] << 2 | (b1 >> 4 & 0x02),
        payload[4] << 2 | (b1 >> 5 & 0x02),
    )


def excess_bytes(report: bytes) -> int:
    """Bytes beyond the declared length of a known input report (0 for a short or unknown one)."""
    expected = INPUT_LENGTHS.get(report[0]) if report else None
    if expected is None:
        return 0
    return max(len(report) - 1 - expected, 0)


def decode_input(report: bytes) -> InputReport:
    """Decode one input report (bytes past its declared length are ignored).

    A report of `BUTTONS_ONLY_REPORTS` with 2 to declared−1 payload bytes decodes to `ButtonsOnly`.
    Raise `ProtocolError` for an empty report, an unknown ID, or a payload shorter than the kernel takes.
    """
    if not report:
        raise ProtocolError("empty input report")
    report_id = report[0]
    expected = INPUT_LENGTHS.get(report_id)
    if expected is None:
        raise ProtocolError(f"unknown input report {report_id:#04x}")
    payload = bytes(report[1 : 1 + expected])
    if len(payload) < expected:
        if report_id in BUTTONS_ONLY_REPORTS and len(payload) >= BUTTON_BYTES:
            return ButtonsOnly(report_id, _buttons(payload))
        shortest = BUTTON_BYTES if report_id in BUTTONS_ONLY_REPORTS else expected
        raise ProtocolError(
            f"input report {report_id:#04x} has {len(payload)} payload bytes, expected {expected}"
            + (f" (or at least {shortest})" if shortest != expected else "")
        )
    if report_id == In.STATUS:
        return Status(_buttons(payload), StatusFlag(payload[2]), payload[5])
    if report_id == In.READ_REPLY:
        size = (payload[2] >> 4) + 1
        return ReadReply(
            _buttons(payload), payload[2] & 0x0F, int.from_bytes(payload[3:5], "big"), payload[5 : 5 + size]
        )
    if report_id == In.ACK:
        return Ack(_buttons(payload), payload[2], payload[3])
    if report_id in (In.INTERLEAVED_A, In.INTERLEAVED_B):
        return DataReport(report_id, _buttons(payload), None, payload[3:21], b"")
    layout = DATA_LAYOUTS[report_id]
    offset = 0
    buttons = 0
    accel = None
    if layout.buttons:
        buttons = _buttons(payload)
        offset = 2
    if layout.accel:
        accel = _accel(payload)
        offset = 5
    ir = payload[offset : offset + layout.ir_bytes]
    offset += layout.ir_bytes
    return DataReport(report_id, buttons, accel, ir, payload[offset : offset + layout.ext_bytes])


class Interleave:
    """Joins the interleaved 0x3E/0x3F halves into one sample of 8-bit-resolution accel and 36 IR bytes.

    0x3E carries AX and AZ bits 7:4, 0x3F AY and AZ bits 3:0 in the spare button bits (kernel
    `handler_drm_SKAI1/2`). A 0x3F without a preceding 0x3E is dropped (returns None).
    """

    def __init__(self) -> None:
        self._first: tuple[bytes, bytes] | None = None

    def feed(self, report: bytes) -> DataReport | None:
        """Feed one whole 0x3E or 0x3F report; return the joined sample after each 0x3F."""
        decoded = decode_input(report)
        if not isinstance(decoded, DataReport) or decoded.report not in (In.INTERLEAVED_A, In.INTERLEAVED_B):
            raise ProtocolError(f"report {report[0]:#04x} is not an interleaved data report")
        payload = bytes(report[1 : 1 + INPUT_LENGTHS[decoded.report]])
        if decoded.report == In.INTERLEAVED_A:
            self._first = (payload, decoded.ir)
            return None
        if self._first is None:
            return None
        first, first_ir = self._first
        self._first = None
        z = (first[0] >> 1 & 0x30) | (first[1] << 1 & 0xC0) | (payload[0] >> 5 & 0x03) | (payload[1] >> 3 & 0x0C)
        return DataReport(
            In.INTERLEAVED_A, decoded.buttons, (first[2] << 2, payload[2] << 2, z << 2), first_ir + decoded.ir, b""
        )


# ---------------------------------------------------------------- input encoders (the simulated remote)


def _button_bytes(buttons: int) -> bytes:
    return bytes(((buttons >> 8) & 0x1F, buttons & 0x9F))


def status_input(buttons: int, flags: int, battery: int) -> bytes:
    """Encode a 0x20 status report."""
    return bytes((In.STATUS,)) + _button_bytes(buttons) + bytes((flags & 0xFF, 0, 0, battery & 0xFF))


def read_reply_input(buttons: int, error: int, address: int, data: bytes) -> bytes:
    """Encode a 0x21 read reply carrying up to 16 bytes read at `address` (or an error with no data)."""
    if len(data) > MAX_TRANSFER:
        raise ValueError(f"a read reply carries at most 16 bytes, not {len(data)}")
    size_nibble = max(len(data), 1) - 1
    return (
        bytes((In.READ_REPLY,))
        + _button_bytes(buttons)
        + bytes((size_nibble << 4 | (error & 0x0F),))
        + (address & 0xFFFF).to_bytes(2, "big")
        + data.ljust(MAX_TRANSFER, b"\x00")
    )


def ack_input(buttons: int, report: int, error: int) -> bytes:
    """Encode a 0x22 acknowledgement."""
    return bytes((In.ACK,)) + _button_bytes(buttons) + bytes((report, error))


def data_input(mode: int, buttons: int, accel: tuple[int, int, int], ir: bytes, ext: bytes) -> list[bytes]:
    """Encode one sample in data reporting `mode`; two reports (0x3E, 0x3F) for the interleaved mode.

    `accel` is in 10-bit counts; `ir` and `ext` are truncated or 0xFF/0x00-padded to the mode's sizes
    (an unused IR slot reads 0xFF, unused extension bytes 0x00).
    """
    x, y, z = (value & 0x3FF for value in accel)
    if mode in (In.INTERLEAVED_A, In.INTERLEAVED_B):
        ir36 = ir[:36].ljust(36, b"\xff")
        z8 = z >> 2
        first = bytes(((buttons >> 8 & 0x1F) | (z8 & 0x30) << 1, (buttons & 0x9F) | (z8 & 0xC0) >> 1, x >> 2))
        second = bytes(((buttons >> 8 & 0x1F) | (z8 & 0x03) << 5, (buttons & 0x9F) | (z8 & 0x0C) << 3, y >> 2))
        return [bytes((In.INTERLEAVED_A,)) + first + ir36[:18], bytes((In.INTERLEAVED_B,)) + second + ir36[18:]]
    layout = DATA_LAYOUTS.get(mode)
    if layout is None:
        raise ValueError(f"{mode:#04x} is not a data reporting mode")
    body = b""
    if layout.buttons:
        b0, b1 = buttons >> 8 & 0x1F, buttons & 0x9F
        if layout.accel:
            b0 |= (x & 0x03) << 5
            b1 |= (y & 0x02) << 4 | (z & 0x02) << 5
        body = bytes((b0, b1))
    if layout.accel:
        body += bytes((x >> 2, y >> 2, z >> 2))
    body += ir[: layout.ir_bytes].ljust(layout.ir_bytes, b"\xff")
    body += ext[: layout.ext_bytes].ljust(layout.ext_bytes, b"\x00")
    return [bytes((mode,)) + body]
