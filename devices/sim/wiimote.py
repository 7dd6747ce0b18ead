"""A simulated Wii Remote: the device side of the HID protocol over a SOCK_SEQPACKET socket.

One end of `socketpair(AF_UNIX, SOCK_SEQPACKET)` stands in for `/dev/hidrawN` (one report per read
and write). The remote behaves as spec wiimote.md describes a real one:
- it starts in mode 0x30, non-continuous, and after every 0x20 status report it falls back to that
  mode until the host sends 0x12 again;
- every output report's bit 0 sets the rumble motor;
- 0x16 / 0x17 reach a modelled EEPROM (accelerometer calibration at 0x16 and 0x20) and register
  space (IR camera 0xB0, extension 0xA4, inactive MotionPlus 0xA6), with the remote's error codes
  (7 for an absent device, 8 for a bad address) and one 0x21 per 16 bytes;
- extensions answer their ID only after the unencrypted init (0x55 → 0xA400F0, 0x00 → 0xA400FB);
- a MotionPlus is activated by a write to 0xA600FE (0x04 alone, 0x05 / 0x07 pass-through), which
  makes the remote report the extension unplugged then plugged; 0x55 → 0xA400F0 deactivates it.
  Like a real one it sends one junk frame first (`junk_frame`, Dolphin's hardware observation), and
  it carries a real unit's 32-byte calibration at 0xA60020 (issue 14), from which its gyro counts
  are generated per range;
- as a Wii U Pro Controller (`pro_controller`) it answers the extension ID `0000a4200120`, always
  reports its "extension" plugged, has no IR camera, no MotionPlus and (as far as the adapter
  cares) no EEPROM, and sends its sticks and buttons in the kernel's 11-byte layout, with garbage
  in the core button bytes;
- `pad_to` pads every input report with zeros to that length (reports longer than declared);
- data reports in every mode, 0x3E/0x3F interleaved, IR objects in the format set at 0xB00033;
- scripted motion (`motion`): "rest" (still, ±1 count noise) or "demo" (still for `rest_s`, then a
  slow roll, a yaw turn, a circling Nunchuk stick, two IR lights drifting, and one button after
  another pressed for half a second every two seconds);
- `press(name, seconds)` holds a button as a person would (the adapter's `hwgateway/SimButton`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from protocols.errors import ProtocolError
from protocols.wiimote import extensions as ext
from protocols.wiimote import ir
from protocols.wiimote import reports as rp
from protocols.wiimote.calibration import (
    AccelCalibration,
    GyroAxis,
    encode_accel_block,
    encode_ext_calibration,
    parse_gyro_calibration,
)

log = logging.getLogger(__name__)

EEPROM_SIZE = 0x1700
#: Factory calibration of the simulated remote: 0 g at 0x208, 1 g at 0x270 (104 counts per g).
CALIBRATION = AccelCalibration((0x208, 0x20A, 0x204), (0x270, 0x272, 0x26C), factory=True)
#: Nunchuk calibration: 0 g 0x200, 1 g 0x2CC; stick min 0x20, centre 0x80, max 0xE0.
NUNCHUK_CAL = encode_ext_calibration(bytes.fromhex("80808000b3b3b300e02080e02080"))
#: Classic calibration: left sticks max/min/centre at 8-bit scale, right likewise, trigger zeros.
CLASSIC_CAL = encode_ext_calibration(bytes.fromhex("f00880f00880f00880f008800808"))
#: A MotionPlus at rest reads a little off 8192 (wiibrew saw ~0x1F7F).
#: A real unit's calibration (unit 1 of issue 14): fast range at 0x00, slow at 0x10, CRC-32 checked.
GYRO_CALIBRATION = bytes.fromhex("7983735472e830c3cc4a34fcc84fcc5b774975a4739a3552ca2237262de5b5a2")
#: At rest a unit reads a little off its factory zero (temperature drift), in counts: the zeroing
#: at rest removes it.
GYRO_DRIFT = (6, -4, 3)  # pitch, roll, yaw
#: The simulated gyro switches to the fast range above this rate (real slow ranges end near 370-520).
SLOW_LIMIT_DEG_S = 250.0
#: A Pro Controller's sticks at rest (raw 12-bit, a little off 0x800 as real sticks are).
PRO_REST = (0x7F8, 0x806, 0x803, 0x7FC)
#: The junk frame after activation (Dolphin's maintainers: "something like d5 b0 4e 6e fc 02").
JUNK_FRAME = bytes.fromhex("d5b04e6efc02")
#: The remote's buttons by the names `press` takes (as printed on it), in the demo script's order.
CORE_BUTTONS: dict[str, int] = {
    "A": rp.Button.A, "B": rp.Button.B, "1": rp.Button.ONE, "2": rp.Button.TWO, "+": rp.Button.PLUS,
    "-": rp.Button.MINUS, "HOME": rp.Button.HOME, "UP": rp.Button.UP, "DOWN": rp.Button.DOWN,
    "LEFT": rp.Button.LEFT, "RIGHT": rp.Button.RIGHT,
}  # fmt: skip
NUNCHUK_BUTTONS = ("Z", "C")


def button_names(extension: str | None) -> tuple[str, ...]:
    """The buttons a simulated remote with `extension` can press: its own, then a Nunchuk's."""
    return tuple(CORE_BUTTONS) + (NUNCHUK_BUTTONS if extension == "nunchuk" else ())


#: The "demo" motion's button script: one button pressed for DEMO_PRESS_S of every DEMO_STEP_S.
DEMO_STEP_S = 2.0
DEMO_PRESS_S = 0.5

ExtensionName = str  # "nunchuk", "classic", "classic_pro"


@dataclass(slots=True)
class Motion:
    """What the remote feels at one instant: accel counts, gyro rates (rad/s), sticks, IR lights."""

    accel: tuple[int, int, int]
    rates: tuple[float, float, float]  # pitch, roll, yaw
    nunchuk_accel: tuple[int, int, int]
    stick: tuple[int, int]
    ir: list[ir.IrObject | None]


class SimulatedWiimote:
    """The simulated remote on `sock` (its end of the socket pair); `start` runs it in the current loop.

    Test hooks: `buttons`, `nunchuk_buttons`, `classic_buttons` (press by setting them), `battery`,
    `glitch_id_reads`, `plug`/`unplug`, `attach_motionplus`/`detach_motionplus`, `spin` (constant
    rates), `pro_buttons`/`pro_sticks`/`pro_battery`, `inject` (any bytes), `power_off`.
    Observations: `rumble`, `leds`, `mode`, `continuous`, `outputs` (every output report received),
    `rumble_changes` (time, on), `activations` (MotionPlus activation writes).
    """

    def __init__(
        self,
        sock: socket.socket,
        *,
        motionplus: bool = False,
        extension: ExtensionName | None = None,
        battery: int = 0xC0,
        rate_hz: float = 100.0,
        motion: str = "rest",
        rest_s: float = 3.0,
        seed: int = 1,
        clock: Callable[[], float] = time.monotonic,
        corrupt_calibration: bool = False,
        gyro_calibration: bytes = GYRO_CALIBRATION,
        junk_frame: bytes | None = JUNK_FRAME,
        pro_controller: bool = False,
        pad_to: int = 0,
    ) -> None:
        self.sock = sock
        sock.setblocking(False)
        self.rate_hz = rate_hz
        self.motion = motion
        self.rest_s = rest_s
        self.clock = clock
        self.battery = battery
        self.buttons = 0
        self.nunchuk_buttons = (False, False)  # (Z, C)
        #: Buttons pressed by `press` (a person at the dashboard), by name: when each is released (clock s).
        self._pressed: dict[str, float] = {}
        self.classic_buttons = ext.ClassicButton(0)
        self.rumble = False
        self.leds = 0
        self.mode = int(rp.In.BUTTONS)
        self.continuous = False
        self.ir_clock = False
        self.ir_logic = False
        self.speaker = False
        self.outputs: list[rp.OutputReport] = []
        self.rumble_changes: list[tuple[float, bool]] = []
        self.extension: ExtensionName | None = extension
        self.pro_controller = pro_controller
        if pro_controller:
            motionplus = False
            self.extension = None
        self.motionplus_attached = motionplus
        self.mp_mode = 0  # 0 = inactive, else the activation code
        #: The 32 bytes at 0xA60020 (a real unit's, unless a test passes others).
        self.gyro_calibration = gyro_calibration
        self._gyro_truth = parse_gyro_calibration(GYRO_CALIBRATION)
        #: Sent as the first extension frame after each activation (None: none).
        self.junk_frame = junk_frame
        self._junk_due = False
        #: Activation writes to 0xA600FE received (a looping host shows here).
        self.activations = 0
        #: Constant rotation (pitch, roll, yaw in rad/s) overriding the motion script when set.
        self.spin: tuple[float, float, float] | None = None
        #: Pro Controller state: buttons, sticks (raw 12-bit, None = scripted), battery level 0-4.
        self.pro_buttons = ext.ProButton(0)
        self.pro_sticks: tuple[int, int, int, int] | None = None
        self.pro_battery = 4
        self.pad_to = pad_to
        self.ext_initialised = False
        #: This many coming reads of the extension ID answer garbled bytes ("partially connected").
        self.glitch_id_reads = 0
        self._mp_toggle = False
        self._rng = random.Random(seed)
        self._eeprom = bytearray(EEPROM_SIZE)
        block = encode_accel_block(CALIBRATION)
        if corrupt_calibration:
            # First block's checksum broken: the host must fall back to the copy at 0x20.
            self._eeprom[0x16:0x20] = block[:9] + bytes(((block[9] + 1) & 0xFF,))
        else:
            self._eeprom[0x16:0x20] = block
        self._eeprom[0x20:0x2A] = block
        self._camera = bytearray(256)
        self._speaker_regs = bytearray(256)
        self._started = clock()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake = asyncio.Event()
        self._last_sent: bytes = b""
        self.closed = False
        self._peer_gone = False

    # ------------------------------------------------------------ life cycle

    def start(self) -> None:
        """Serve the socket from the running loop."""
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self.sock.fileno(), self._readable)
        self._task = self._loop.create_task(self._report_loop(), name="simulated-wiimote")

    def power_off(self) -> None:
        """The remote switches off: the link closes (the host reads EOF)."""
        if self.closed:
            return
        self.closed = True
        if self._loop is not None:
            self._loop.remove_reader(self.sock.fileno())
        if self._task is not None:
            self._task.cancel()
        self.sock.close()

    async def stop(self) -> None:
        """Power off and wait for the report loop to end."""
        task = self._task
        if not self.closed:
            self._readable()  # reports the host wrote before it let go still reach the remote
        self.power_off()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # ------------------------------------------------------------ test hooks

    def inject(self, data: bytes) -> None:
        """Send arbitrary bytes as one report, exactly as given (malformed-report tests)."""
        self._send(data, pad=False)

    def plug(self, name: ExtensionName) -> None:
        """Plug an extension (into the MotionPlus's pass-through port when one is attached)."""
        before = self._port_flag()
        self.extension = name
        self.ext_initialised = False
        if self.mp_mode:
            return  # the active MotionPlus reports it in its own data (ext bit), not by status
        if self._port_flag() != before:
            self._send_status()

    def unplug(self) -> None:
        """Pull the extension (the one in the MotionPlus when one is attached)."""
        before = self._port_flag()
        self.extension = None
        if self.mp_mode:
            return
        if self._port_flag() != before:
            self._send_status()

    def attach_motionplus(self) -> None:
        """Plug a MotionPlus (inactive: only a probe of 0xA600FA finds it; no status report)."""
        self.motionplus_attached = True
        self.mp_mode = 0

    def detach_motionplus(self) -> None:
        """Pull the MotionPlus (with anything plugged into it)."""
        was_flag = self._port_flag()
        self.motionplus_attached = False
        self.mp_mode = 0
        self.extension = None
        if was_flag:
            self._send_status()

    # ------------------------------------------------------------ the device side

    def _port_flag(self) -> bool:
        if self.mp_mode or self.pro_controller:
            return True
        return self.extension is not None

    def _send(self, report: bytes, pad: bool = True) -> None:
        if self.closed or self._peer_gone:
            return
        if pad and len(report) < self.pad_to:
            report = report.ljust(self.pad_to, b"\x00")
        try:
            self.sock.send(report)
        except BlockingIOError:
            pass  # the host is not reading: a real remote's reports are lost too
        except OSError:
            # The host let go. Its last reports may still be queued: the reader drains them and
            # powers off at end of file.
            self._peer_gone = True

    def _send_status(self, port_flag: bool | None = None) -> None:
        plugged = self._port_flag() if port_flag is None else port_flag
        flags = (rp.StatusFlag.BATTERY_LOW if self.battery < 0x20 else 0) | (rp.StatusFlag.EXTENSION if plugged else 0)
        flags |= (rp.StatusFlag.SPEAKER if self.speaker else 0) | (rp.StatusFlag.IR if self.ir_clock else 0)
        flags |= self.leds << 4
        self._send(rp.status_input(self.buttons, int(flags), self.battery))
        # After every status report the remote falls back to non-continuous 0x30 (spec §3).
        self.mode = int(rp.In.BUTTONS)
        self.continuous = False

    def _readable(self) -> None:
        while not self.closed:
            try:
                data = self.sock.recv(64)
            except BlockingIOError:
                return
            except OSError:
                self.power_off()
                return
            if not data:
                self.power_off()
                return
            try:
                report = rp.decode_output(data)
            except ProtocolError as error:
                log.debug("simulated remote ignores %s", error)
                continue
            self._handle(report)

    def _handle(self, report: rp.OutputReport) -> None:
        self.outputs.append(report)
        if report.rumble != self.rumble:
            self.rumble = report.rumble
            self.rumble_changes.append((self.clock(), report.rumble))
        kind = report.report
        error = 0
        if kind == rp.Out.LEDS:
            self.leds = report.flags >> 4
        elif kind == rp.Out.REPORT_MODE:
            if report.mode in rp.DATA_LAYOUTS:
                self.mode, self.continuous = report.mode, report.enabled
                self._wake.set()
            else:
                error = 0x03
        elif kind == rp.Out.IR_PIXEL_CLOCK:
            self.ir_clock = report.enabled
        elif kind == rp.Out.IR_LOGIC:
            self.ir_logic = report.enabled
        elif kind == rp.Out.SPEAKER_ENABLE:
            self.speaker = report.enabled
        elif kind == rp.Out.STATUS_REQUEST:
            self._send_status()
        elif kind == rp.Out.READ_MEMORY:
            self._read(report)
            return
        elif kind == rp.Out.WRITE_MEMORY:
            error, after = self._write(report)
            self._send(rp.ack_input(self.buttons, kind, error))
            after()
            return
        if report.ack_requested or error:
            self._send(rp.ack_input(self.buttons, kind, error))

    # ------------------------------------------------------------ memory

    def _register_device(self, device: int) -> bytearray | None:
        if device == 0xB0:
            return self._camera if self.ir_clock and not self.pro_controller else None
        if device == 0xA2:
            return self._speaker_regs
        if device == 0xA4:
            return self._extension_regs()
        if device == 0xA6:
            return self._mp_regs() if self.motionplus_attached and not self.mp_mode else None
        return None

    def _extension_regs(self) -> bytearray | None:
        regs = bytearray(256)
        if self.pro_controller:
            regs[0xFA:0x100] = ext.IDS[ext.ExtensionType.PRO_CONTROLLER] if self.ext_initialised else b"\xff" * 6
            return regs
        if self.mp_mode:
            regs[0x20:0x40] = self.gyro_calibration  # an active MotionPlus answers at 0xA4
            regs[0xFA:0x100] = ext.IDS[
                {
                    ext.MP_MODE_ALONE: ext.ExtensionType.MOTIONPLUS,
                    ext.MP_MODE_NUNCHUK: ext.ExtensionType.MOTIONPLUS_NUNCHUK,
                    ext.MP_MODE_CLASSIC: ext.ExtensionType.MOTIONPLUS_CLASSIC,
                }[self.mp_mode]
            ]
            return regs
        if self.extension is None:
            return None
        if not self.ext_initialised:
            regs[0xFA:0x100] = b"\x00\x00\xa4\x20\xff\xff"  # encrypted / "partially connected" ID
            return regs
        kind = {
            "nunchuk": ext.ExtensionType.NUNCHUK,
            "classic": ext.ExtensionType.CLASSIC,
            "classic_pro": ext.ExtensionType.CLASSIC_PRO,
        }[self.extension]
        regs[0xFA:0x100] = ext.IDS[kind]
        calibration = NUNCHUK_CAL if self.extension == "nunchuk" else CLASSIC_CAL
        regs[0x20:0x30] = calibration
        regs[0x30:0x40] = calibration
        return regs

    def _mp_regs(self) -> bytearray:
        regs = bytearray(256)
        regs[0x20:0x40] = self.gyro_calibration
        regs[0xFA:0x100] = ext.MP_INACTIVE_ID
        return regs

    def _read(self, report: rp.OutputReport) -> None:
        address, size = report.address, report.size
        if report.space == rp.Space.EEPROM:
            if self.pro_controller:
                # Unknown on hardware (the kernel never reads it): answered as absent.
                self._send(rp.read_reply_input(self.buttons, rp.ReadError.NACK, address, b""))
                return
            if address + size > EEPROM_SIZE:
                self._send(rp.read_reply_input(self.buttons, rp.ReadError.INVALID_ADDRESS, address, b""))
                return
            data = bytes(self._eeprom[address : address + size])
        elif report.space == rp.Space.REGISTER:
            regs = self._register_device(address >> 16 & 0xFF)
            if regs is None:
                self._send(rp.read_reply_input(self.buttons, rp.ReadError.NACK, address, b""))
                return
            offset = address & 0xFF
            data = bytes(regs[offset : offset + size]).ljust(size, b"\x00")
            if address == ext.EXT_ID_ADDRESS and self.glitch_id_reads > 0:
                self.glitch_id_reads -= 1
                data = bytes(self._rng.randrange(256) for _ in data[:4]) + b"\x2e\x2e" + data[6:]
        else:
            self._send(rp.read_reply_input(self.buttons, rp.ReadError.INVALID_SPACE, address, b""))
            return
        for start in range(0, size, rp.MAX_TRANSFER):
            self._send(rp.read_reply_input(self.buttons, 0, address + start, data[start : start + rp.MAX_TRANSFER]))

    def _write(self, report: rp.OutputReport) -> tuple[int, Callable[[], None]]:
        """Apply a write; return the ack error and what the remote does after acking."""
        address, data = report.address, report.data
        nothing: Callable[[], None] = lambda: None  # noqa: E731 - the common "no side effect"
        if report.space == rp.Space.EEPROM:
            if address + len(data) > EEPROM_SIZE:
                return rp.ReadError.INVALID_ADDRESS, nothing
            self._eeprom[address : address + len(data)] = data
            return 0, nothing
        if report.space != rp.Space.REGISTER:
            return rp.ReadError.INVALID_SPACE, nothing
        device = address >> 16 & 0xFF
        if device == 0xB0:
            if not self.ir_clock or self.pro_controller:
                return rp.ReadError.NACK, nothing
            offset = address & 0xFF
            self._camera[offset : offset + len(data)] = data[: 256 - offset]
            return 0, nothing
        if device == 0xA2:
            return 0, nothing
        if address == ext.EXT_INIT_1[0] and data[:1] == b"\x55":
            if self.mp_mode:
                return 0, self._deactivate_motionplus
            if self.pro_controller:
                self.ext_initialised = True
                return 0, nothing
            if self.extension is None:
                return rp.ReadError.NACK, nothing
            self.ext_initialised = True
            return 0, nothing
        if device == 0xA4:
            return (0 if self._port_flag() else rp.ReadError.NACK), nothing
        if device == 0xA6:
            if not self.motionplus_attached or self.mp_mode:
                return rp.ReadError.NACK, nothing
            if address == ext.MP_ACTIVATE_ADDRESS and data[0] in (
                ext.MP_MODE_ALONE,
                ext.MP_MODE_NUNCHUK,
                ext.MP_MODE_CLASSIC,
            ):
                return 0, lambda: self._activate_motionplus(data[0])
            return 0, nothing
        return rp.ReadError.NACK, nothing

    def _activate_motionplus(self, code: int) -> None:
        self.activations += 1
        self._junk_due = self.junk_frame is not None
        if self._port_flag():
            self._send_status(port_flag=False)  # the extension leaves the port ...
        self.mp_mode = code
        self._send_status()  # ... and the active MotionPlus takes it

    def _deactivate_motionplus(self) -> None:
        self.mp_mode = 0
        self.ext_initialised = self.extension is not None  # the 0x55 write initialises it
        self._send_status(port_flag=False)  # the MotionPlus leaves the port ...
        if self.extension is not None:
            self._send_status()  # ... and exposes what was plugged into it

    # ------------------------------------------------------------ data

    def press(self, name: str, seconds: float) -> None:
        """Hold button `name` (one of `button_names()`) for `seconds` (0: release it now); `ValueError` if unknown."""
        if name not in self.button_names():
            raise ValueError(f"no button {name!r}; this remote has {', '.join(self.button_names())}")
        self._pressed[name] = self.clock() + seconds

    def button_names(self) -> tuple[str, ...]:
        """The buttons `press` takes: the remote's, then its Nunchuk's when one is plugged."""
        return button_names(self.extension)

    def held_buttons(self, t: float) -> tuple[int, tuple[bool, bool]]:
        """The core button word and the Nunchuk's (Z, C) now, `t` s after start.

        The test hooks' presses (`buttons`, `nunchuk_buttons`), those of `press`, and in the "demo"
        motion once it moves a slow script: one button at a time, pressed for `DEMO_PRESS_S` of every
        `DEMO_STEP_S`, in the order of `button_names()` (so a first program sees every button change).
        """
        now = self.clock()
        held = {name for name, until in self._pressed.items() if until > now}
        if self.motion == "demo" and t >= self.rest_s:
            names = self.button_names()
            step, into = divmod(t - self.rest_s, DEMO_STEP_S)
            if into < DEMO_PRESS_S:
                held.add(names[int(step) % len(names)])
        core = self.buttons
        for name in held & CORE_BUTTONS.keys():
            core |= CORE_BUTTONS[name]
        z, c = self.nunchuk_buttons
        return core, (z or "Z" in held, c or "C" in held)

    def motion_at(self, t: float) -> Motion:
        """The scripted motion `t` s after start."""
        noise = self._rng.randint
        zero, one = CALIBRATION.zero, CALIBRATION.one
        moving = self.motion == "demo" and t >= self.rest_s
        phase = t - self.rest_s if moving else 0.0
        tilt = 0.6 * math.sin(1.5 * phase) if moving else 0.0
        # Gravity along +Z lying flat; rolling by `tilt` moves it towards X.
        accel = (
            zero[0] + round((one[0] - zero[0]) * math.sin(tilt)) + noise(-1, 1),
            zero[1] + noise(-1, 1),
            zero[2] + round((one[2] - zero[2]) * math.cos(tilt)) + noise(-1, 1),
        )
        # The roll rate is the derivative of `tilt`, so gyro and accelerometer agree.
        rates = (0.0, 0.9 * math.cos(1.5 * phase), 0.5 * math.sin(0.25 * phase)) if moving else (0.0, 0.0, 0.0)
        if self.spin is not None:
            rates = self.spin
        stick = (0x80 + round(0x50 * math.cos(phase)), 0x80 + round(0x50 * math.sin(phase)))
        lights: list[ir.IrObject | None] = [
            ir.IrObject(312 + round(100 * math.sin(0.3 * phase)), 384, 3),
            ir.IrObject(712 + round(100 * math.sin(0.3 * phase)), 384, 2),
            None,
            None,
        ]
        nunchuk_accel = (0x200 + noise(-1, 1), 0x200 + noise(-1, 1), 0x2CC + noise(-1, 1))
        return Motion(accel, rates, nunchuk_accel, stick, lights)

    def gyro_counts(self, axis: GyroAxis, rate_rad_s: float, drift: int = 0) -> tuple[int, bool]:
        """The counts and slow flag this unit reads at `rate_rad_s` on `axis` (its true calibration)."""
        degrees = math.degrees(rate_rad_s)
        slow = abs(degrees) < SLOW_LIMIT_DEG_S
        span = self._gyro_truth.range(slow)
        counts = span.zero[axis] + drift + degrees * span.counts_per_deg_s[axis]
        return max(0, min(0x3FFF, round(counts))), slow

    def _gyro_frame(self, motion: Motion) -> bytes:
        pitch, roll, yaw = motion.rates
        noise = self._rng.randint
        p, ps = self.gyro_counts(GyroAxis.PITCH, pitch, GYRO_DRIFT[0] + noise(-2, 2))
        r, rs = self.gyro_counts(GyroAxis.ROLL, roll, GYRO_DRIFT[1] + noise(-2, 2))
        y, ys = self.gyro_counts(GyroAxis.YAW, yaw, GYRO_DRIFT[2] + noise(-2, 2))
        return ext.encode_motionplus(ext.MotionPlus(y, r, p, ys, rs, ps, self.extension is not None))

    def _extension_frame(self, motion: Motion, passthrough: bool) -> bytes:
        if self.extension == "nunchuk":
            z, c = self.held_buttons(self.clock() - self._started)[1]
            sample = ext.Nunchuk(motion.stick, motion.nunchuk_accel, c, z)
            return ext.encode_nunchuk_passthrough(sample) if passthrough else ext.encode_nunchuk(sample)
        if self.extension in ("classic", "classic_pro"):
            lx, ly = motion.stick[0] >> 2, motion.stick[1] >> 2
            sample_c = ext.Classic((lx, ly), (16, 16), (0, 0), self.classic_buttons)
            return ext.encode_classic_passthrough(sample_c) if passthrough else ext.encode_classic(sample_c)
        return b"\x00" * 6

    def _pro_bytes(self, motion: Motion) -> bytes:
        sticks = self.pro_sticks
        if sticks is None:
            sticks = PRO_REST
            if motion.rates != (0.0, 0.0, 0.0):  # the demo script is moving: circle the left stick
                sx, sy = motion.stick
                sticks = (PRO_REST[0] + (sx - 0x80) * 12, PRO_REST[1] + (sy - 0x80) * 12, PRO_REST[2], PRO_REST[3])
        sample = ext.ProController(sticks, self.pro_buttons, self.pro_battery, charging=False, usb=False)
        return ext.encode_pro(sample)

    def _ext_bytes(self, motion: Motion) -> bytes:
        if self.pro_controller:
            return self._pro_bytes(motion)
        if self.mp_mode:
            layout = rp.DATA_LAYOUTS.get(self.mode)
            if self._junk_due and layout is not None and layout.ext_bytes >= 6:
                # The junk is the first extension data the host gets, whatever came between.
                self._junk_due = False
                return self.junk_frame or b""
            self._mp_toggle = not self._mp_toggle
            passthrough = self.mp_mode != ext.MP_MODE_ALONE and self.extension is not None
            if passthrough and not self._mp_toggle:
                return self._extension_frame(motion, True)
            return self._gyro_frame(motion)
        if self.extension is None:
            return b"\x00" * 6
        if not self.ext_initialised:
            return b"\xff" * 6
        return self._extension_frame(motion, False)

    def _ir_bytes(self, motion: Motion) -> bytes:
        if not (self.ir_clock and self.ir_logic) or self._camera[0x30] != 0x08:
            return b"\xff" * 36
        try:
            camera_mode = ir.IrMode(self._camera[0x33])
        except ValueError:
            return b"\xff" * 36
        if camera_mode == ir.IrMode.OFF:
            return b"\xff" * 36
        return ir.encode_objects(camera_mode, motion.ir)

    def data_reports(self) -> list[bytes]:
        """The reports of one sample in the current mode."""
        motion = self.motion_at(self.clock() - self._started)
        if self.pro_controller:
            # No accelerometer, no camera; its core button bytes are not buttons (kernel).
            garbage = self._rng.randrange(0x10000)
            return rp.data_input(self.mode, garbage, (0, 0, 0), b"", self._ext_bytes(motion))
        buttons = self.held_buttons(self.clock() - self._started)[0]
        return rp.data_input(self.mode, buttons, motion.accel, self._ir_bytes(motion), self._ext_bytes(motion))

    async def _report_loop(self) -> None:
        period = 1.0 / self.rate_hz
        while not self.closed:
            reports = self.data_reports()
            key = b"".join(reports)
            if self.continuous or key != self._last_sent:
                for report in reports:
                    self._send(report)
                self._last_sent = key
            await asyncio.sleep(period)
