"""The `wiimote` adapter: one configured Wii Remote (or Wii U Pro Controller) over hidraw, L2CAP or a simulation.

Publishes, under the config id:
- `<id>/state` — `wiimote/State` on every data report (~100/s), see `devices.wiimote.convert`;
- `<id>/controller` — `creos_messages/ControllerState`, the remote as a generic controller, or a
  Wii U Pro Controller in the seed's Origin layout (then the only stream: it has no accelerometer,
  IR camera or MotionPlus for `wiimote/State`);
- `<id>/classic` — `hwgateway/WiimoteClassic` while a Classic Controller (Pro) is plugged in.

Accepts `hwgateway/WiimoteLeds` (a TimedSwitch per LED), `wiimote/TimedSwitch` (the rumble motor),
the generic `led` (index 0-3 or -1 for all; on when the brightest channel ≥ 0.5) and `rumble`
(on for `duration_s` when the stronger motor ≥ 0.5), each answered with what it `applied`, and
`hwgateway/Calibrate` (gyro zeroing at rest).
Pattern and rumble durations are 0 or at least `MIN_PULSE_S` (20 ms); shorter ones are refused.
The rumble motor is leased to the client that started it (the core's `gateway.core.lease` rule; a
`rumble`'s lease lasts its `duration_s`, a TimedSwitch's until its pattern is replaced): it stops
when that client leaves, when the lease runs out, on `estop`, when the remote is lost and when the
device stops. `wiimote/State`'s `rumble` shows it. LEDs keep their state.

Availability: `connecting` while waiting for the remote (hidraw: until sysfs shows it), `connected`
once set up. A lost remote (hidraw EIO/HUP, closed socket, or `timeout_s` of silence) ends `run`
with `LinkLost`; the supervisor restarts it and it reconnects when the remote reappears.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from devices.wiimote.convert import (
    CONTROLLER_AXES,
    CONTROLLER_BUTTONS,
    StateBuilder,
    classic_message,
    controller_state,
    pro_controller_state,
)
from devices.wiimote.discovery import HidrawRemote, find_remotes, select
from devices.wiimote.imu import Zeroing, ZeroingResult
from devices.wiimote.options import WiimoteOptions
from devices.wiimote.timed_switch import MIN_PULSE_S, SwitchBank, check_switch
from devices.wiimote.transport import LinkLost, ReportLink, open_hidraw, open_l2cap
from gateway.core.adapter import Adapter, Command, DeviceContext
from gateway.core.dispatch import CommandTable
from gateway.core.lease import Lease, LeaseEnd, Leases
from gateway.errors import DeviceUnavailable, InvalidArgument
from gateway.messages.generic import Led, Rumble
from gateway.messages.sim import SimButton
from gateway.messages.wiimote import TimedSwitch
from gateway.messages.wiimote_gateway import WiimoteClassic, WiimoteLeds
from protocols.wiimote import connection as wc
from protocols.wiimote import extensions as ext
from protocols.wiimote import reports as rp

if TYPE_CHECKING:  # a simulator is imported only when `simulate` asks for one
    from devices.sim.wiimote import SimulatedWiimote

log = logging.getLogger(__name__)

LED_COUNT = 4
RUMBLE = LED_COUNT  # the switch bank's index of the rumble motor
#: The generic `led` and `rumble` turn an output on from this value up (the remote's are on or off).
ON_THRESHOLD = 0.5
#: Addresses of remotes bound by a device of this process, so two devices never share one.
_TAKEN: set[str] = set()


class WiimoteAdapter(Adapter[WiimoteOptions]):
    """A Wii Remote: wiimote/State out; TimedSwitch LEDs and rumble, led, rumble and calibrate in."""

    kind = "wiimote"
    options_class = WiimoteOptions
    publishes = ("wiimote/State", "creos_messages/ControllerState", "hwgateway/WiimoteClassic")
    streams: ClassVar[Mapping[str, str]] = {
        "state": "wiimote/State",
        "controller": "creos_messages/ControllerState",
        "classic": "hwgateway/WiimoteClassic",
    }
    #: How long a `calibrate` command waits for its run (200 samples at 100 Hz take 2 s).
    calibrate_timeout_s: ClassVar[float] = 10.0

    def __init__(
        self,
        ctx: DeviceContext,
        options: WiimoteOptions,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(ctx, options)
        self._clock = clock
        self._wall_clock = wall_clock
        #: The simulated remote of `transport = "sim"` (tests reach it here).
        self.simulator: SimulatedWiimote | None = None
        if options.transport == "sim" and options.sim_device == "remote":  # pressed from the dashboard, as by hand
            self.accepts = (*self.accepts, "hwgateway/SimButton")
        self.connection: wc.WiimoteConnection | None = None
        self.remote: HidrawRemote | None = None
        #: Input reports that broke the protocol, over every connection (counted and ignored).
        self.malformed_reports = 0
        self._bank = SwitchBank(LED_COUNT + 1)
        self._bank_leds_from_options()
        self._zeroing = Zeroing()
        self._builder = StateBuilder()
        self._wake: asyncio.Event | None = None
        self._reports: deque[bytes] = deque()
        self._lost: Exception | None = None
        self._calibration_waiters: list[asyncio.Future[ZeroingResult]] = []
        #: The rumble motor's lease (one output, "rumble"); the value is the pattern that started it.
        self.leases: Leases[str, TimedSwitch] = Leases(
            ctx.device_id, self._on_lease_end, is_safe=_switches_off, clock=clock
        )
        self._pro_status: ext.ProController | None = None

    def _bank_leds_from_options(self) -> None:
        for index in range(LED_COUNT):
            self._bank.set(index, bool(self.options.leds >> index & 1))

    def _press(self, message: SimButton) -> Mapping[str, Any]:
        """Press a button of the simulated remote (`hwgateway/SimButton`)."""
        if self.simulator is None:
            raise DeviceUnavailable("the simulated remote is not running")
        try:
            self.simulator.press(message.button, message.pressed_s)
        except ValueError as error:
            raise InvalidArgument(f"data.button: {error}") from None
        return {"pressed": message.button, "for_s": message.pressed_s}

    def capabilities(self) -> Mapping[str, Any]:
        """Transport, address, extension, MotionPlus, counters and the outputs it has."""
        conn = self.connection
        caps: dict[str, Any] = {
            "transport": self.options.transport,
            "address": self.remote.address if self.remote else self.options.address,
            "leds": LED_COUNT,
            "rumble": True,
            "malformed_reports": self.malformed_reports,
            # The `controller` stream's layout: core buttons, Nunchuk Z C, then the Classic's.
            "controller": {"axes": list(CONTROLLER_AXES), "buttons": list(CONTROLLER_BUTTONS)},
        }
        if self.options.transport == "sim" and self.options.sim_device == "remote":  # what SimButton presses
            from devices.sim.wiimote import button_names as sim_button_names

            caps["sim_buttons"] = list(sim_button_names(self.options.sim_extension))
        if conn is not None:
            caps.update(
                extension=conn.extension.value,
                report_mode=int(conn.mode),
                battery=conn.battery,
                pro_controller=conn.pro_controller,
                gyro_calibration="factory" if conn.gyro_calibration.factory else "nominal",
                oversized_reports=conn.oversized,
                ignored_bytes=conn.ignored_bytes,
                buttons_only_reports=conn.buttons_only,
                motionplus_junk_frames=conn.junk_frames,
                motionplus_glitches=conn.motionplus_glitches,
            )
            pro = self._pro_status
            if conn.pro_controller and pro is not None:
                caps.update(pro_battery_level=pro.battery, pro_charging=pro.charging, pro_usb=pro.usb)
        if self.remote is not None:
            caps.update(name=self.remote.name, kernel_driver_bound=self.remote.kernel_driver_bound)
        return caps

    # ------------------------------------------------------------ run

    async def run(self) -> None:
        """Open the link, run the connect sequence and serve the remote until it is lost."""
        self._wake = asyncio.Event()
        self._reports.clear()
        self._lost = None
        link = await self._open()
        ending = LeaseEnd.DEVICE_LOST
        try:
            await self._serve(link)
        except asyncio.CancelledError:
            ending = LeaseEnd.SHUTDOWN
            raise
        finally:
            rumbling = self.connection is not None and self.connection.rumble
            self.leases.end_all(ending)
            self._bank.set(RUMBLE, False)
            if rumbling:
                link.write(rp.rumble_report(False))  # never leave the motor running unattended
            if self.simulator is not None:
                # Before our end closes: closing a socket with unread data resets the peer, which
                # would then lose what we just wrote.
                await self.simulator.stop()
            link.close()
            if self.remote is not None:
                _TAKEN.discard(self.remote.address)
            self.connection = None
            for waiter in self._calibration_waiters:
                if not waiter.done():
                    waiter.set_exception(DeviceUnavailable("the Wii Remote went away during calibration"))
            self._calibration_waiters.clear()

    def _on_report(self, report: bytes) -> None:
        self._reports.append(report)
        if self._wake is not None:
            self._wake.set()

    def _on_lost(self, error: Exception) -> None:
        self._lost = error
        if self._wake is not None:
            self._wake.set()

    async def _open(self) -> ReportLink:
        transport = self.options.transport
        if transport == "sim":
            return self._open_simulated()
        if transport == "l2cap":
            self.ctx.set_status("connecting", f"L2CAP to {self.options.address}")
            return await open_l2cap(self.options.address, self._on_report, self._on_lost)
        waiting = False
        while True:
            remote = select(find_remotes(self.options.sysfs_root, self.options.dev_root), self.options.address, _TAKEN)
            if remote is not None:
                break
            if not waiting:
                waiting = True
                wanted = self.options.address or "any Wii Remote"
                self.ctx.set_status("connecting", f"waiting for {wanted} on hidraw")
            await asyncio.sleep(self.options.discovery_interval_s)
        if remote.kernel_driver_bound:
            log.warning(
                "%s (%s) is bound to the hid-wiimote kernel driver, which keeps writing to the remote "
                "(report modes, extension init): unbind it or blacklist hid_wiimote for exclusive use",
                remote.node,
                remote.address,
            )
        link = open_hidraw(remote.dev_path, self._on_report, self._on_lost)
        self.remote = remote
        _TAKEN.add(remote.address)
        return link

    def _open_simulated(self) -> ReportLink:
        from devices.sim.wiimote import SimulatedWiimote

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        options = self.options
        self.simulator = SimulatedWiimote(
            theirs,
            pro_controller=options.sim_device == "pro_controller",
            motionplus=options.sim_motionplus,
            extension=None if options.sim_extension == "none" else options.sim_extension,
            rate_hz=options.sim_rate_hz,
            motion=options.sim_motion,
        )
        self.simulator.start()
        return ReportLink(ours.fileno(), self._on_report, self._on_lost, keep=(ours,))

    async def _serve(self, link: ReportLink) -> None:
        conn = wc.WiimoteConnection(self.options.settings())
        self.connection = conn
        now = self._clock()
        leds, rumble = self._outputs()
        conn.leds, conn.rumble = leds, rumble
        conn.start(now)
        self._flush(conn, link)
        assert self._wake is not None
        while True:
            if self._lost is not None:
                raise LinkLost(f"Wii Remote lost: {self._lost}")
            while self._reports:
                self._handle_events(conn, conn.receive(self._reports.popleft(), self._clock()))
            now = self._clock()
            self._handle_events(conn, conn.poll(now))
            if self._bank.poll(now):
                conn.set_outputs(*self._outputs())
            self._flush(conn, link)
            deadline = conn.next_deadline()
            bank_deadline = self._bank.next_deadline()
            if bank_deadline is not None:
                deadline = min(deadline, bank_deadline)
            self._wake.clear()
            if self._reports or self._lost is not None:
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(deadline - self._clock(), 0.0)):
                    await self._wake.wait()

    def _flush(self, conn: wc.WiimoteConnection, link: ReportLink) -> None:
        for report in conn.data_to_send():
            link.write(report)

    def _outputs(self) -> tuple[int, bool]:
        states = self._bank.states
        return sum(1 << i for i in range(LED_COUNT) if states[i]), states[RUMBLE]

    def _handle_events(self, conn: wc.WiimoteConnection, events: list[wc.Event]) -> None:
        for event in events:
            if isinstance(event, wc.Sample):
                self._publish(conn, event)
            elif isinstance(event, wc.Ready):
                what = "Wii U Pro Controller" if conn.pro_controller else "Wii Remote"
                log.info("%s ready (report mode %#04x)", what, event.mode)
                self.ctx.set_status("connected")
                if self.options.calibrate_on_connect and not conn.pro_controller:
                    self._zeroing.start()
            elif isinstance(event, wc.GyroCalibrationRead):
                if event.reason:
                    log.warning("MotionPlus calibration not used: %s", event.reason)
                else:
                    log.info("MotionPlus calibration read and verified (CRC-32)")
            elif isinstance(event, wc.ExtensionChanged):
                log.info("extension: %s (MotionPlus active: %s)", event.kind.value, event.motionplus)
                # As ROS, a new Nunchuk triggers a new zeroing run; so does a MotionPlus that just
                # became active, whose gyro has no bias yet.
                if conn.ready and (event.motionplus or event.kind == ext.ExtensionType.NUNCHUK):
                    self._zeroing.start()
            elif isinstance(event, wc.Malformed):
                self.malformed_reports += 1
                log.warning("ignored a malformed report: %s", event.reason)
            elif isinstance(event, wc.Lost):
                self._lost = LinkLost(f"no report for {event.silence_s:.1f} s")

    def _publish(self, conn: wc.WiimoteConnection, sample: wc.Sample) -> None:
        stamp = self._wall_clock()
        if conn.pro_controller:
            if sample.pro is not None and conn.pro_calibration is not None:
                self._pro_status = sample.pro
                self.ctx.publish("controller", pro_controller_state(sample.pro, conn.pro_calibration, stamp), stamp)
            return
        mp = (
            sample.motionplus
            if conn.extension
            in (
                ext.ExtensionType.MOTIONPLUS,
                ext.ExtensionType.MOTIONPLUS_NUNCHUK,
                ext.ExtensionType.MOTIONPLUS_CLASSIC,
            )
            else None
        )
        if sample.accel is not None and self._zeroing.active:
            gyro = (mp.pitch, mp.roll, mp.yaw) if mp is not None else None
            result = self._zeroing.add(sample.accel, gyro)
            if result is not None:
                self._finish_zeroing(result)
        state = self._builder.state(
            sample,
            stamp=stamp,
            calibration=conn.calibration,
            nunchuk_calibration=conn.nunchuk_calibration,
            battery=conn.battery,
            leds=conn.leds,
            rumble=conn.rumble,
            motionplus=mp is not None,
            gyro_calibration=conn.gyro_calibration,
        )
        self.ctx.publish("state", state, stamp)
        classic: WiimoteClassic | None = None
        if sample.classic is not None:
            pro = conn.extension == ext.ExtensionType.CLASSIC_PRO
            classic = classic_message(sample.classic, conn.classic_calibration, pro, stamp)
            self.ctx.publish("classic", classic, stamp)
        self.ctx.publish(
            "controller", controller_state(state, classic, conn.nunchuk_calibration, sample.nunchuk), stamp
        )

    def _finish_zeroing(self, result: ZeroingResult) -> None:
        if result.ok:
            log.info("gyro zeroed at rest")
        else:
            log.warning("zeroing failed, keeping the previous bias: %s", result.reason)
        self._builder.apply_zeroing(result, self._wall_clock())
        for waiter in self._calibration_waiters:
            if not waiter.done():
                waiter.set_result(result)
        self._calibration_waiters.clear()

    # ------------------------------------------------------------ commands

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        """Carry out an LED, rumble, TimedSwitch or calibrate command."""
        result: Mapping[str, Any] = await self.commands.run(self, command, "the wiimote device")
        return result

    async def _calibrate_command(self, command: Command) -> Mapping[str, Any]:
        return await self._calibrate()

    async def _sim_button(self, command: Command) -> Mapping[str, Any]:
        return self._press(command.message)

    async def _set_leds(self, command: Command) -> Mapping[str, Any]:
        message: WiimoteLeds = command.message
        for index, switch in enumerate(message.leds):
            reason = check_switch(switch, path=f"data.leds[{index}]")
            if reason is not None:
                raise InvalidArgument(reason)
        now = self._clock()
        for index, switch in enumerate(message.leds):
            self._bank.apply(index, switch, now)
        return self._applied()

    async def _timed_rumble(self, command: Command) -> Mapping[str, Any]:
        message: TimedSwitch = command.message
        reason = check_switch(message)
        if reason is not None:
            raise InvalidArgument(reason)
        self._bank.apply(RUMBLE, message, self._clock())
        self.leases.take("rumble", command.client_id, message)
        return self._applied()

    async def _led(self, command: Command) -> Mapping[str, Any]:
        message: Led = command.message
        if message.index >= LED_COUNT:
            raise InvalidArgument(f"data.index: {message.index} is not an LED of a Wii Remote (0-3, or -1 for all)")
        on = max(message.rgb) >= ON_THRESHOLD
        chosen = range(LED_COUNT) if message.index < 0 else (message.index,)
        for index in chosen:
            self._bank.set(index, on)
        numbers = ", ".join(str(index + 1) for index in chosen)
        return self._applied(
            f"LED {numbers} {'on' if on else 'off'}: a Wii Remote LED is on or off, on when the brightest "
            f"channel is at least {ON_THRESHOLD} (got {max(message.rgb):g})"
        )

    async def _rumble(self, command: Command) -> Mapping[str, Any]:
        message: Rumble = command.message
        if 0 < message.duration_s < MIN_PULSE_S:
            raise InvalidArgument(
                f"data.duration_s: {message.duration_s:g} s is below the minimum rumble of {MIN_PULSE_S:g} s (0 stops)"
            )
        strongest = max(message.low, message.high)
        on = strongest >= ON_THRESHOLD and message.duration_s > 0
        pulse = TimedSwitch(TimedSwitch.REPEAT, 1, (message.duration_s,)) if on else TimedSwitch(TimedSwitch.OFF)
        self._bank.apply(RUMBLE, pulse, self._clock())
        self.leases.take("rumble", command.client_id, pulse, term_s=message.duration_s if on else None)
        return self._applied(
            f"rumble {f'on for {message.duration_s:g} s' if on else 'off'}: one motor, on or off, on when "
            f"max(low, high) is at least {ON_THRESHOLD} (got {strongest:g}) and duration_s > 0"
        )

    def _applied(self, applied: str | None = None) -> Mapping[str, Any]:
        """Send the outputs as the bank has them now; answer with them (and what a generic command did)."""
        self._push_outputs()
        leds, rumble = self._outputs()
        result: dict[str, Any] = {"leds": [bool(leds >> i & 1) for i in range(LED_COUNT)], "rumble": rumble}
        if applied is not None:
            result["applied"] = applied
        return result

    def _push_outputs(self) -> None:
        if self.connection is not None:
            self.connection.set_outputs(*self._outputs())
        if self._wake is not None:
            self._wake.set()

    async def _calibrate(self) -> Mapping[str, Any]:
        if self.connection is None or not self.connection.ready:
            raise DeviceUnavailable("the Wii Remote is not connected")
        if self.connection.pro_controller:
            raise InvalidArgument("a Wii U Pro Controller has no accelerometer or gyro to calibrate")
        waiter: asyncio.Future[ZeroingResult] = asyncio.get_running_loop().create_future()
        self._calibration_waiters.append(waiter)
        self._zeroing.start()
        async with asyncio.timeout(self.calibrate_timeout_s):
            result = await waiter
        return {"calibrated": result.ok, "reason": result.reason, "zeroing_time": self._builder.zeroing_time}

    async def estop(self) -> None:
        """Stop the rumble motor at once, leased or not."""
        self.leases.end_all(LeaseEnd.ESTOP)
        self._bank.set(RUMBLE, False)
        self._push_outputs()

    def release(self, client_id: str) -> None:
        """Rumble is leased to the client that started it: it stops when that client leaves; LEDs stay."""
        self.leases.release(client_id)

    def _on_lease_end(self, output: str, lease: Lease[TimedSwitch], why: LeaseEnd) -> None:
        """The rumble's lease ended: the motor off, sent at once."""
        if self._bank.states[RUMBLE] or self._bank.running(RUMBLE):
            self._bank.set(RUMBLE, False)
            self._push_outputs()

    async def close(self) -> None:
        """Rumble off (its safe state); LEDs stay as they are."""
        self._bank.set(RUMBLE, False)
        if self.connection is not None:
            self.connection.set_outputs(*self._outputs())

    def outputs(self) -> Mapping[str, Any]:
        """Rumble and LEDs as last set."""
        leds, rumble = self._outputs()
        return {"rumble": int(rumble), "leds": leds}

    #: Every command the remote takes, and its handler (`hwgateway/SimButton` only when simulated).
    commands: ClassVar[CommandTable[WiimoteAdapter, Command]] = CommandTable(
        {
            "hwgateway/WiimoteLeds": _set_leds,
            "wiimote/TimedSwitch": _timed_rumble,
            "led": _led,
            "rumble": _rumble,
            "hwgateway/Calibrate": _calibrate_command,
            "hwgateway/SimButton": _sim_button,
        }
    )
    accepts = commands.types("hwgateway/SimButton")


def _switches_off(switch: TimedSwitch) -> bool:
    """OFF, or a pattern of no cycles: the motor's safe value (NO_CHANGE keeps whatever runs)."""
    mode = switch.switch_mode
    return mode == TimedSwitch.OFF or (mode == TimedSwitch.REPEAT and switch.num_cycles == 0)
