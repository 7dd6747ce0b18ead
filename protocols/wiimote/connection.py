"""The host side of a Wii Remote session as a sans-I/O state machine (spec §9.2-9.4).

Feed it every input report with `receive(report, now)` and call `poll(now)` on its deadlines
(`next_deadline()`); write out what `data_to_send()` returns, one report per write. Time is always
passed in (seconds on any monotonic clock), so tests drive it with a fake clock.

What it does:
- connect: 0x11 (LEDs, stops the power-on blinking) → 0x15 → on the 0x20: identify what the
  extension port holds (if anything), read both EEPROM calibration blocks, probe for an inactive
  MotionPlus (and read its gyro calibration at 0xA60020), set up the IR camera, then 0x12 with
  continuous reporting; `Ready` once that first 0x12 is out;
- a Wii U Pro Controller (extension ID `0000a4200120`) is set up as the kernel does: no EEPROM
  calibration, no MotionPlus, no IR camera, report mode 0x34 (buttons + 19 extension bytes);
- one memory read or write outstanding at a time (0x21 matched by the echoed address, 0x22 by the
  acknowledged report ID), each with a timeout;
- 0x12 re-sent after every status report (the remote stops data reports after one);
- a status request every `status_interval_s` (battery, extension, and a liveness check: `Lost` after
  `timeout_s` without any input report);
- extension hot-plug: Nunchuk, Classic, Classic Pro; MotionPlus activated in pass-through mode for
  whatever is plugged into it, and re-activated when its pass-through port changes;
- MotionPlus frames the kernel drops are dropped (counted in `junk_frames`): extension bytes all
  0xFF, frames flagged invalid (byte 5 bit 0), and the one junk frame a real MotionPlus sends after
  activation (Dolphin). A frame whose "extension plugged" bit contradicts the state is not trusted
  alone: the mapped ID at 0xA400FA is read again and the next MotionPlus frame must agree before the
  MotionPlus is re-initialised (the kernel's `wiimote_init_check` before `wiimote_init_hotplug`);
- reports longer than declared are used (extra bytes counted in `oversized` / `ignored_bytes`),
  2-byte buttons-only reports update the buttons (`buttons_only`), as the kernel accepts them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from protocols.errors import ProtocolError
from protocols.wiimote import extensions as ext
from protocols.wiimote import ir
from protocols.wiimote import reports as rp
from protocols.wiimote.calibration import (
    ACCEL_CAL_ADDRESS,
    ACCEL_CAL_SIZE,
    DEFAULT_ACCEL,
    EXT_CAL_ADDRESS,
    EXT_CAL_SIZE,
    GYRO_CAL_ADDRESS,
    GYRO_CAL_SIZE,
    NOMINAL_GYRO,
    AccelCalibration,
    ClassicCalibration,
    GyroCalibration,
    NunchukCalibration,
    ProCalibration,
    parse_accel_calibration,
    parse_classic_calibration,
    parse_gyro_calibration,
    parse_nunchuk_calibration,
    pro_calibration_from,
)

#: Error code given to a memory operation that got no answer in time (the remote's codes are 0-15).
TIMEOUT_ERROR = -1
#: Extra attempts at reading an extension ID that came back garbled.
_EXT_ID_RETRIES = 2
_NUNCHUK_KINDS = (ext.ExtensionType.NUNCHUK, ext.ExtensionType.MOTIONPLUS_NUNCHUK)
_CLASSIC_KINDS = (ext.ExtensionType.CLASSIC, ext.ExtensionType.CLASSIC_PRO, ext.ExtensionType.MOTIONPLUS_CLASSIC)
_MP_KINDS = (ext.ExtensionType.MOTIONPLUS, ext.ExtensionType.MOTIONPLUS_NUNCHUK, ext.ExtensionType.MOTIONPLUS_CLASSIC)
#: The kernel's Pro Controller handler needs 16 extension bytes (WIIMOD_FLAG_EXT16); it runs in 0x34.
_PRO_MIN_EXT_BYTES = 16
_PRO_MODE = rp.In.BUTTONS_EXT19


@dataclass(frozen=True, slots=True)
class Ready:
    """Setup finished: calibration read and the first reporting mode sent."""

    calibration: AccelCalibration
    mode: int


@dataclass(frozen=True, slots=True)
class StatusUpdate:
    """A 0x20 status report: raw battery byte (208 ≈ full), low flag, LED mask, extension flag."""

    battery: int
    battery_low: bool
    leds: int
    extension_plugged: bool


@dataclass(frozen=True, slots=True)
class ExtensionChanged:
    """What the extension port now holds; `motionplus` is True while a MotionPlus is active."""

    kind: ext.ExtensionType
    motionplus: bool


@dataclass(frozen=True, slots=True)
class GyroCalibrationRead:
    """The MotionPlus calibration in use: the unit's own, or `NOMINAL_GYRO` with the `reason` why."""

    calibration: GyroCalibration
    reason: str


@dataclass(frozen=True, slots=True)
class Sample:
    """One data sample: buttons word (`reports.Button`), 10-bit accel, IR slots, extension data.

    Fields the current mode does not carry are None. In MotionPlus pass-through mode the Nunchuk or
    Classic part and the gyro part each hold the latest frame of their kind. A buttons-only report
    repeats the previous sample's other fields (as the kernel leaves its other axes as they were).
    `pro` is set for a Wii U Pro Controller, whose core `buttons` carry nothing (kernel).
    """

    report: int
    buttons: int
    accel: tuple[int, int, int] | None
    ir: tuple[ir.IrObject | None, ...] | None
    nunchuk: ext.Nunchuk | None
    classic: ext.Classic | None
    motionplus: ext.MotionPlus | None
    pro: ext.ProController | None = None


@dataclass(frozen=True, slots=True)
class Lost:
    """No input report for `timeout_s`: the remote is gone (or the link is dead)."""

    silence_s: float


@dataclass(frozen=True, slots=True)
class Malformed:
    """An input report that broke the protocol; it was counted and ignored."""

    reason: str


Event = Ready | StatusUpdate | ExtensionChanged | GyroCalibrationRead | Sample | Lost | Malformed


@dataclass(slots=True)
class _MemoryOp:
    write: bool
    space: rp.Space
    address: int
    data: bytes = b""
    size: int = 0
    on_done: Callable[[bytes, int], None] | None = None
    received: bytearray = field(default_factory=bytearray)
    sent_at: float = 0.0


def ir_mode_for(report_mode: int) -> ir.IrMode:
    """The camera format a data reporting mode carries."""
    if report_mode == rp.In.BUTTONS_ACCEL_IR12:
        return ir.IrMode.EXTENDED
    if report_mode in (rp.In.BUTTONS_IR10_EXT9, rp.In.BUTTONS_ACCEL_IR10_EXT6):
        return ir.IrMode.BASIC
    if report_mode == rp.In.INTERLEAVED_A:
        return ir.IrMode.FULL
    return ir.IrMode.OFF


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """How the connection drives the remote.

    `report_mode` 0 chooses automatically (0x33 / 0x37 with IR, 0x31 / 0x35 without, by extension);
    `ir` turns the camera on in automatic mode; `motionplus` probes for and activates a MotionPlus;
    `leds` is the LED mask set at connect; times in seconds.
    """

    report_mode: int = 0
    continuous: bool = True
    ir: bool = True
    motionplus: bool = True
    leds: int = 0b0001
    status_interval_s: float = 2.0
    timeout_s: float = 3.0
    memory_timeout_s: float = 1.0

    def __post_init__(self) -> None:
        if self.report_mode and self.report_mode not in rp.DATA_LAYOUTS:
            raise ValueError(f"report_mode {self.report_mode:#04x} is not a data reporting mode")


class WiimoteConnection:
    """Host-side protocol state of one remote (see the module docstring)."""

    def __init__(self, settings: ConnectionSettings | None = None) -> None:
        self.settings = settings or ConnectionSettings()
        self.calibration: AccelCalibration = DEFAULT_ACCEL
        self.nunchuk_calibration = NunchukCalibration()
        self.classic_calibration = ClassicCalibration()
        #: The MotionPlus's own calibration once read and verified, else nominal.
        self.gyro_calibration: GyroCalibration = NOMINAL_GYRO
        #: Pro Controller stick centres, taken from its first report (the kernel's calibration).
        self.pro_calibration: ProCalibration | None = None
        self.extension = ext.ExtensionType.NONE
        self.leds = self.settings.leds
        self.rumble = False
        self.battery = 0
        self.mode = 0
        self.ready = False
        #: Input reports that broke the protocol (counted, then ignored).
        self.malformed = 0
        #: Memory operations that failed or timed out.
        self.memory_errors = 0
        #: Reports longer than declared, and their extra bytes (ignored, as the kernel does).
        self.oversized = 0
        self.ignored_bytes = 0
        #: Reports cut down to their 2 button bytes.
        self.buttons_only = 0
        #: MotionPlus frames dropped: all 0xFF, flagged invalid, or the junk frame after activation.
        self.junk_frames = 0
        #: Contradicting "extension plugged" bits that a re-read ID and the next frame disproved.
        self.motionplus_glitches = 0
        self._out: list[bytes] = []
        self._ops: deque[_MemoryOp] = deque()
        self._outstanding: _MemoryOp | None = None
        self._mode_dirty = False
        self._calibrated = False
        self._setup_started = False
        self._ext_plugged = False
        self._ext_retries = 0
        self._camera = ir.IrMode.OFF
        self._mp_present = False
        self._mp_active = False
        self._mp_transition = False
        self._mp_fresh = False
        #: Checking a contradicting MotionPlus frame: re-reading the ID, then awaiting the next frame.
        self._mp_check: Literal["reading", "frame"] | None = None
        self._remote_setup = False
        self._last_sample: Sample | None = None
        self._interleave = rp.Interleave()
        self._nunchuk: ext.Nunchuk | None = None
        self._classic: ext.Classic | None = None
        self._motionplus: ext.MotionPlus | None = None
        self._pro: ext.ProController | None = None
        self._last_rx = 0.0
        self._next_status = 0.0
        self._lost = False
        self._events: list[Event] = []

    # ------------------------------------------------------------ public API

    @property
    def pro_controller(self) -> bool:
        """The device is a Wii U Pro Controller (identified by its extension ID)."""
        return self.extension == ext.ExtensionType.PRO_CONTROLLER

    def start(self, now: float) -> None:
        """Begin the connect sequence: LEDs, then a status request."""
        self._last_rx = now
        self._next_status = now + self.settings.status_interval_s
        self._send(rp.leds_report(self.leds, self.rumble))
        self._send(rp.status_request_report(self.rumble))

    def data_to_send(self) -> list[bytes]:
        """Output reports to write, in order (each one whole)."""
        out, self._out = self._out, []
        return out

    def next_deadline(self) -> float:
        """The next time `poll` has work to do."""
        deadlines = [self._next_status]
        if not self._lost:
            deadlines.append(self._last_rx + self.settings.timeout_s)
        if self._outstanding is not None:
            deadlines.append(self._outstanding.sent_at + self.settings.memory_timeout_s)
        return min(deadlines)

    def set_outputs(self, leds: int, rumble: bool) -> None:
        """Set the LED mask and rumble with one 0x11 (which carries the rumble bit)."""
        if (leds, rumble) == (self.leds, self.rumble):
            return
        self.leds, self.rumble = leds, rumble
        self._send(rp.leds_report(leds, rumble))

    def receive(self, report: bytes, now: float) -> list[Event]:
        """Handle one whole input report; return the events it caused."""
        self._last_rx = now
        self._lost = False
        extra = rp.excess_bytes(report)
        if extra:
            self.oversized += 1
            self.ignored_bytes += extra
        try:
            self._handle(report, now)
        except ProtocolError as error:
            self.malformed += 1
            self._events.append(Malformed(str(error)))
        self._pump(now)
        return self._take_events()

    def poll(self, now: float) -> list[Event]:
        """Run the timers: memory timeouts, status polls, MotionPlus probes and the liveness check."""
        op = self._outstanding
        if op is not None and now - op.sent_at >= self.settings.memory_timeout_s:
            self._outstanding = None
            self._finish(op, bytes(op.received), TIMEOUT_ERROR)
        if now >= self._next_status:
            self._next_status = now + self.settings.status_interval_s
            self._send(rp.status_request_report(self.rumble))
            if (
                self.ready
                and self.settings.motionplus
                and not (self._mp_present or self._busy() or self.pro_controller)
            ):
                self._probe_motionplus()
        silence = now - self._last_rx
        if silence >= self.settings.timeout_s and not self._lost:
            self._lost = True
            self._events.append(Lost(silence))
        self._pump(now)
        return self._take_events()

    # ------------------------------------------------------------ internals

    def _take_events(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    def _send(self, report: bytes) -> None:
        self._out.append(report)

    def _busy(self) -> bool:
        return self._outstanding is not None or bool(self._ops)

    def _read(self, space: rp.Space, address: int, size: int, on_done: Callable[[bytes, int], None]) -> None:
        self._ops.append(_MemoryOp(False, space, address, size=size, on_done=on_done))

    def _write(self, address: int, data: bytes, on_done: Callable[[bytes, int], None] | None = None) -> None:
        self._ops.append(_MemoryOp(True, rp.Space.REGISTER, address, data=data, on_done=on_done))

    def _pump(self, now: float) -> None:
        while self._outstanding is None:
            if self._ops:
                op = self._ops.popleft()
                op.sent_at = now
                self._outstanding = op
                if op.write:
                    self._send(rp.write_memory_report(op.space, op.address, op.data, self.rumble))
                else:
                    self._send(rp.read_memory_report(op.space, op.address, op.size, self.rumble))
                return
            if not (self._mode_dirty and self._calibrated):
                return
            self._apply_mode()

    def _finish(self, op: _MemoryOp, data: bytes, error: int) -> None:
        if error:
            self.memory_errors += 1
        if op.on_done is not None:
            op.on_done(data, error)

    def _wanted_mode(self) -> int:
        if self.pro_controller:
            # Its data is all in the extension bytes; it has no IR camera and no accelerometer.
            chosen = rp.DATA_LAYOUTS.get(self.settings.report_mode)
            return self.settings.report_mode if chosen and chosen.ext_bytes >= _PRO_MIN_EXT_BYTES else _PRO_MODE
        if self.settings.report_mode:
            return self.settings.report_mode
        plugged = self.extension != ext.ExtensionType.NONE or self._mp_active
        if self.settings.ir:
            return rp.In.BUTTONS_ACCEL_IR10_EXT6 if plugged else rp.In.BUTTONS_ACCEL_IR12
        return rp.In.BUTTONS_ACCEL_EXT16 if plugged else rp.In.BUTTONS_ACCEL

    def _apply_mode(self) -> None:
        mode = self._wanted_mode()
        camera = ir_mode_for(mode)
        if camera != self._camera:
            # The camera must be in the mode's format before data reports carry its bytes.
            self._camera = camera
            on = camera != ir.IrMode.OFF
            self._send(rp.ir_pixel_clock_report(on, self.rumble))
            self._send(rp.ir_logic_report(on, self.rumble))
            if on:
                for address, data in ir.init_writes(camera):
                    self._write(address, data)
                return  # the mode follows once the register writes are done
        self._mode_dirty = False
        self.mode = mode
        self._send(rp.report_mode_report(mode, self.settings.continuous, self.rumble))
        if not self.ready:
            self.ready = True
            self._events.append(Ready(self.calibration, mode))

    def _handle(self, report: bytes, now: float) -> None:
        decoded = rp.decode_input(report)
        if isinstance(decoded, rp.Status):
            self._on_status(decoded)
        elif isinstance(decoded, rp.ReadReply):
            self._on_read_reply(decoded, now)
        elif isinstance(decoded, rp.Ack):
            self._on_ack(decoded)
        elif isinstance(decoded, rp.ButtonsOnly):
            self._on_buttons_only(decoded)
        elif decoded.report in (rp.In.INTERLEAVED_A, rp.In.INTERLEAVED_B):
            joined = self._interleave.feed(report)
            if joined is not None:
                self._on_data(joined)
        else:
            self._on_data(decoded)

    def _on_status(self, status: rp.Status) -> None:
        self.battery = status.battery
        self._events.append(
            StatusUpdate(status.battery, rp.StatusFlag.BATTERY_LOW in status.flags, status.leds, status.extension)
        )
        # Every status report resets the remote's data reporting: the mode must go out again.
        self._mode_dirty = True
        if not self._setup_started:
            self._setup_started = True
            if not status.extension:
                self._start_remote_setup()
            # else: the extension ID says first whether this is a Wii U Pro Controller (kernel
            # `wiimote_init_detect`), which has no EEPROM calibration and no MotionPlus.
        if status.extension != self._ext_plugged:
            self._ext_plugged = status.extension
            if status.extension:
                self._probe_extension()
            elif not self._mp_transition:
                self._set_extension(ext.ExtensionType.NONE, mp_active=False)
                self._mp_present = False

    def _start_remote_setup(self) -> None:
        if self._remote_setup:
            return
        self._remote_setup = True
        self._read(rp.Space.EEPROM, ACCEL_CAL_ADDRESS, ACCEL_CAL_SIZE, self._on_calibration)
        if self.settings.motionplus:
            self._probe_motionplus()

    def _on_buttons_only(self, report: rp.ButtonsOnly) -> None:
        if report.report == rp.In.STATUS:
            self._mode_dirty = True  # a status report, however short, resets the reporting mode (kernel)
        self.buttons_only += 1
        if not self.ready:
            return
        last = self._last_sample
        sample = (
            replace(last, report=report.report, buttons=report.buttons)
            if last is not None
            else Sample(report.report, report.buttons, None, None, self._nunchuk, self._classic, self._motionplus)
        )
        self._last_sample = sample
        self._events.append(sample)

    def _on_calibration(self, data: bytes, error: int) -> None:
        self.calibration = parse_accel_calibration(data) if not error else DEFAULT_ACCEL
        self._calibrated = True

    def _probe_motionplus(self) -> None:
        self._read(rp.Space.REGISTER, ext.MP_ID_ADDRESS, ext.ID_SIZE, self._on_motionplus_id)

    def _on_motionplus_id(self, data: bytes, error: int) -> None:
        # Error 7 means no inactive MotionPlus: absent, or already active.
        if error or not ext.is_motionplus_id(data):
            return
        self._mp_present = True
        self._read(rp.Space.REGISTER, GYRO_CAL_ADDRESS, GYRO_CAL_SIZE, self._on_gyro_calibration)
        if self._ext_plugged and self.extension == ext.ExtensionType.NONE:
            return  # an extension is being identified: activation follows, in its pass-through mode
        self._activate_motionplus()

    def _on_gyro_calibration(self, data: bytes, error: int) -> None:
        if error:
            calibration, reason = NOMINAL_GYRO, f"reading 0xA60020 failed (error {error}): nominal scale"
        else:
            try:
                calibration, reason = parse_gyro_calibration(data), ""
            except ProtocolError as problem:
                calibration, reason = NOMINAL_GYRO, f"{problem}: nominal scale"
        self.gyro_calibration = calibration
        self._events.append(GyroCalibrationRead(calibration, reason))

    def _activate_motionplus(self) -> None:
        if self.extension in _NUNCHUK_KINDS:
            code = ext.MP_MODE_NUNCHUK
        elif self.extension in _CLASSIC_KINDS:
            code = ext.MP_MODE_CLASSIC
        else:
            code = ext.MP_MODE_ALONE
        self._mp_transition = True
        self._write(*ext.MP_INIT)
        self._write(ext.MP_ACTIVATE_ADDRESS, bytes((code,)), on_done=self._after_activation)

    def _after_activation(self, _data: bytes, error: int) -> None:
        if error:
            # Refused (pulled in the meantime): no status reports will follow, so stop waiting for them.
            self._mp_transition = False
            self._mp_present = False

    def _deactivate_motionplus(self) -> None:
        # 0x55 → 0xA400F0 turns the MotionPlus off and exposes its pass-through port again; the
        # remote then reports the extension unplugged (and plugged again if something is there).
        self._mp_check = None
        self._mp_active = False
        self._mp_transition = True
        self._set_extension(ext.ExtensionType.NONE, mp_active=False)
        self._write(*ext.EXT_INIT_1)
        self._write(*ext.EXT_INIT_2, on_done=self._after_deactivation)

    def _after_deactivation(self, _data: bytes, _error: int) -> None:
        self._mp_transition = False
        if not self._ext_plugged:
            self._probe_motionplus()

    def _probe_extension(self) -> None:
        if not (self._mp_active or self._mp_transition):
            # Unencrypted init; never while a MotionPlus is active, since this write deactivates it.
            self._write(*ext.EXT_INIT_1)
            self._write(*ext.EXT_INIT_2)
        self._read(rp.Space.REGISTER, ext.EXT_ID_ADDRESS, ext.ID_SIZE, self._on_extension_id)

    def _on_extension_id(self, data: bytes, error: int) -> None:
        kind = (
            ext.identify(data[: ext.ID_SIZE]) if not error and len(data) >= ext.ID_SIZE else ext.ExtensionType.UNKNOWN
        )
        if kind == ext.ExtensionType.UNKNOWN and self._ext_retries < _EXT_ID_RETRIES and self._ext_plugged:
            # A freshly plugged extension sometimes answers a garbled ID ("partially connected"): retry.
            self._ext_retries += 1
            self._probe_extension()
            return
        self._ext_retries = 0
        if kind == ext.ExtensionType.PRO_CONTROLLER:
            self._calibrated = True  # no EEPROM calibration, no MotionPlus, no camera (kernel)
            self._set_extension(kind, mp_active=False)
            return
        self._start_remote_setup()
        if kind == ext.ExtensionType.UNKNOWN:
            self._set_extension(kind, self._mp_active)
            self._mp_transition = False
            return
        if kind in _MP_KINDS:
            self._mp_present = True
            self._mp_transition = False
            self._mp_fresh = True  # its first frame is junk (Dolphin, from hardware)
            self._set_extension(kind, mp_active=True)
        elif kind in _NUNCHUK_KINDS or kind in _CLASSIC_KINDS:
            self._read(
                rp.Space.REGISTER, EXT_CAL_ADDRESS, EXT_CAL_SIZE, lambda d, e: self._on_ext_calibration(kind, d, e)
            )
        else:
            self._set_extension(kind, mp_active=False)

    def _on_ext_calibration(self, kind: ext.ExtensionType, data: bytes, error: int) -> None:
        if kind in _NUNCHUK_KINDS:
            self.nunchuk_calibration = parse_nunchuk_calibration(data) if not error else NunchukCalibration()
        else:
            self.classic_calibration = parse_classic_calibration(data) if not error else ClassicCalibration()
        self._set_extension(kind, mp_active=False)
        if self._mp_present and self.settings.motionplus:
            self._activate_motionplus()
        else:
            self._mp_transition = False

    def _set_extension(self, kind: ext.ExtensionType, mp_active: bool) -> None:
        changed = (kind, mp_active) != (self.extension, self._mp_active)
        self.extension = kind
        self._mp_active = mp_active
        self._nunchuk = self._classic = self._motionplus = self._pro = None
        self._mode_dirty = True
        if changed:
            self._mp_check = None
            self._events.append(ExtensionChanged(kind, mp_active))

    def _on_read_reply(self, reply: rp.ReadReply, now: float) -> None:
        op = self._outstanding
        if op is None or op.write:
            return  # a late answer to an operation that timed out
        expected = (op.address + len(op.received)) & 0xFFFF
        if reply.error:
            self._outstanding = None
            self._finish(op, bytes(op.received), reply.error)
            return
        if reply.address_low != expected:
            return  # not the chunk we are waiting for
        op.received += reply.data
        op.sent_at = now  # each chunk restarts the timeout
        if len(op.received) >= op.size:
            self._outstanding = None
            self._finish(op, bytes(op.received[: op.size]), 0)

    def _on_ack(self, ack: rp.Ack) -> None:
        op = self._outstanding
        if ack.report == rp.Out.WRITE_MEMORY and op is not None and op.write:
            self._outstanding = None
            self._finish(op, b"", ack.error)
        # Acks of other reports (0x13/0x1A, or unrequested ones some remotes send) need no action.

    def _on_data(self, data: rp.DataReport) -> None:
        if not self.ready:
            return
        objects = None
        camera = ir_mode_for(data.report)
        if camera != ir.IrMode.OFF and len(data.ir) == ir.FORMAT_BYTES[camera]:
            objects = tuple(ir.decode_objects(camera, data.ir))
        if len(data.ext) >= 6 and not self._mp_transition:
            # During a MotionPlus (de)activation the port's bytes belong to neither (the kernel stops
            # forwarding them); all-0xFF bytes are no data at all (kernel `handler_ext`).
            if data.ext == b"\xff" * len(data.ext):
                if self._mp_active:
                    self.junk_frames += 1
            else:
                self._decode_extension(data.ext)
        sample = Sample(
            data.report,
            data.buttons,
            data.accel,
            objects,
            self._nunchuk,
            self._classic,
            self._motionplus,
            self._pro,
        )
        self._last_sample = sample
        self._events.append(sample)

    def _decode_extension(self, data: bytes) -> None:
        kind = self.extension
        raw = data[:6]
        if kind == ext.ExtensionType.PRO_CONTROLLER:
            if len(data) >= _PRO_MIN_EXT_BYTES:
                self._pro = ext.decode_pro(data)
                if self.pro_calibration is None:
                    self.pro_calibration = pro_calibration_from(self._pro.sticks)
        elif kind == ext.ExtensionType.NUNCHUK:
            self._nunchuk = ext.decode_nunchuk(raw)
        elif kind in (ext.ExtensionType.CLASSIC, ext.ExtensionType.CLASSIC_PRO):
            self._classic = ext.decode_classic(raw)
        elif kind in _MP_KINDS:
            if ext.is_flagged_invalid(raw) or self._mp_fresh:
                self._mp_fresh = False
                self.junk_frames += 1
            elif ext.is_motionplus_frame(raw):
                self._on_motionplus_frame(ext.decode_motionplus(raw))
            elif kind == ext.ExtensionType.MOTIONPLUS_NUNCHUK:
                self._nunchuk = ext.decode_nunchuk_passthrough(raw)
            elif kind == ext.ExtensionType.MOTIONPLUS_CLASSIC:
                self._classic = ext.decode_classic_passthrough(raw)

    def _on_motionplus_frame(self, frame: ext.MotionPlus) -> None:
        expected = self.extension != ext.ExtensionType.MOTIONPLUS  # something in the pass-through port
        if frame.ext_connected != expected:
            if self._mp_check == "frame":
                # The ID read back as expected, but the port still reads changed: a real hot-plug.
                self._deactivate_motionplus()
            elif self._mp_check is None:
                # One contradicting frame is not a hot-plug yet: read the mapped ID again first.
                self._mp_check = "reading"
                self._read(rp.Space.REGISTER, ext.EXT_ID_ADDRESS, ext.ID_SIZE, self._on_motionplus_check)
            return  # a contradicting frame is not published
        if self._mp_check == "frame":
            self._mp_check = None
            self.motionplus_glitches += 1
        self._motionplus = frame

    def _on_motionplus_check(self, data: bytes, error: int) -> None:
        if self._mp_check != "reading":
            return  # the MotionPlus went away meanwhile
        kind = ext.identify(data) if not error and len(data) == ext.ID_SIZE else ext.ExtensionType.UNKNOWN
        if kind != self.extension:
            self._mp_check = None
            self._deactivate_motionplus()
        else:
            self._mp_check = "frame"
