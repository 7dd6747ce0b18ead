"""The `microbit` adapter: one BBC micro:bit over Bluetooth LE, through bleak and the micro:bit profile.

Publishes, under the config id, from the services the flashed program started:
- `<id>/state` — `hwgateway/MicrobitState` (acceleration m/s², magnetic field T, heading, °C, buttons),
  at every sensor notification;
- `<id>/buttons` — `creos_messages/ControllerState`, buttons A and B (0, 1, 2 = long press, as the
  profile reports them), on every change;
- `<id>/pins` — `hwgateway/MicrobitPins` (input pins), `<id>/uart` — `hwgateway/MicrobitUart`,
  `<id>/events` — `hwgateway/MicrobitEvent`.

Accepts `led` (index -1 all, 0-24 one LED, row by row), `hwgateway/MicrobitLeds`, `MicrobitText`,
`MicrobitPin`, `MicrobitPwm`, `MicrobitPeriods`, `MicrobitUartSend` and `MicrobitSendEvent`. A
command whose service the program did not start answers `unknown_command` naming the service; an
ATT error from the micro:bit answers `device_error` with the code. Pin and PWM outputs are leased to
the client that set them (the core's `gateway.core.lease` rule, no term): back to 0 when it
disconnects, on estop, when the micro:bit is lost and at shutdown.
`list_devices` shows the services present in `capabilities`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from devices.ble.link import SAFE_STATE_WRITE_TIMEOUT_S as SAFE_WRITE_S
from devices.ble.link import Backend, BleError, BleLink, Selector
from devices.ble.options import SHARED_KEYS_DOC, check_address
from gateway.core.adapter import Adapter, Command, DeviceContext
from gateway.core.dispatch import CommandTable
from gateway.core.lease import Lease, LeaseEnd, Leases
from gateway.errors import DeviceError, DeviceUnavailable, InvalidArgument, UnknownCommand
from gateway.messages.common import Time, Vector3
from gateway.messages.creos import ControllerState
from gateway.messages.generic import Led
from gateway.messages.microbit import (
    MicrobitEvent,
    MicrobitPeriods,
    MicrobitPin,
    MicrobitPins,
    MicrobitPwm,
    MicrobitSendEvent,
    MicrobitState,
    MicrobitText,
    MicrobitUart,
    MicrobitUartSend,
)
from gateway.messages.sim import SimButton
from protocols.errors import ProtocolError
from protocols.microbit import pins
from protocols.microbit import profile as mb

if TYPE_CHECKING:  # a simulator is imported only when `simulate` asks for one
    from devices.sim.microbit import SimulatedMicrobit

log = logging.getLogger(__name__)

STANDARD_GRAVITY = 9.80665


@dataclass(frozen=True, slots=True)
class MicrobitOptions:
    """Config of a `kind = "microbit"` device (a BBC micro:bit V1 or V2 running a program with Bluetooth services).

    {shared}
    Default selection: the first device whose name starts with "BBC micro:bit".
    `accelerometer_period_ms`, `magnetometer_period_ms`, `temperature_period_ms`: set at connect
    (0: leave the program's). `simulate`: a simulated micro:bit on the in-process virtual radio
    (demo, tests), with `sim_services` started, `sim_motion` "rest" or "demo", `sim_runtime` "v2"
    (codal-microbit-v2) or "v1" (microbit-dal), and `sim_pairing_required` (it refuses everything
    until paired, which the virtual radio cannot do).
    """

    address: str = ""
    name: str = ""
    name_prefix: str = "BBC micro:bit"
    scan_timeout_s: float = field(default=10.0, metadata={"min": 0.1, "max": 600.0})
    connect_timeout_s: float = field(default=10.0, metadata={"min": 0.1, "max": 120.0})
    connect_attempts: int = field(default=3, metadata={"min": 1, "max": 20})
    retry_delay_s: float = field(default=0.5, metadata={"min": 0.0, "max": 60.0})
    pair: bool = False
    accelerometer_period_ms: int = field(default=0, metadata={"min": 0, "max": 640})
    magnetometer_period_ms: int = field(default=0, metadata={"min": 0, "max": 640})
    temperature_period_ms: int = field(default=0, metadata={"min": 0, "max": 60000})
    simulate: bool = False
    sim_services: tuple[str, ...] = mb.PROGRAM_SERVICES
    sim_motion: str = "rest"
    sim_runtime: str = "v2"
    sim_pairing_required: bool = False

    def __post_init__(self) -> None:
        # Every problem in one error, like the config loader's per-key errors.
        problems = []
        try:
            check_address(self.address)
        except ValueError as error:
            problems.append(str(error))
        unknown = set(self.sim_services) - set(mb.PROGRAM_SERVICES)
        if unknown:
            problems.append(f"sim_services: unknown {sorted(unknown)} (known: {', '.join(mb.PROGRAM_SERVICES)})")
        if self.sim_motion not in ("rest", "demo"):
            problems.append(f"sim_motion must be 'rest' or 'demo', got {self.sim_motion!r}")
        if self.sim_runtime not in ("v1", "v2"):
            problems.append(f"sim_runtime must be 'v1' or 'v2', got {self.sim_runtime!r}")
        if problems:
            raise ValueError("; ".join(problems))

    def selector(self) -> Selector:
        """Which advertising device to take."""
        return Selector(address=self.address, name=self.name, name_prefix=self.name_prefix)


MicrobitOptions.__doc__ = (MicrobitOptions.__doc__ or "").format(shared=SHARED_KEYS_DOC)


@dataclass(frozen=True, slots=True)
class Output:
    """What a client set a pin to: `mode` "digital", "analog" or "pwm", its `value`, a PWM's period (µs)."""

    mode: str
    value: int
    period_us: int = 0

    def is_zero(self) -> bool:
        """0 is every output's safe value."""
        return self.value == 0


class MicrobitAdapter(Adapter[MicrobitOptions]):
    """A BBC micro:bit: sensors, buttons, pins, UART and events out; LEDs, text, pins, PWM, periods in."""

    kind = "microbit"
    options_class = MicrobitOptions
    publishes = (
        "hwgateway/MicrobitState",
        "creos_messages/ControllerState",
        "hwgateway/MicrobitPins",
        "hwgateway/MicrobitUart",
        "hwgateway/MicrobitEvent",
    )
    streams: ClassVar[Mapping[str, str]] = {
        "state": "hwgateway/MicrobitState",
        "buttons": "creos_messages/ControllerState",
        "pins": "hwgateway/MicrobitPins",
        "uart": "hwgateway/MicrobitUart",
        "events": "hwgateway/MicrobitEvent",
    }

    def __init__(self, ctx: DeviceContext, options: MicrobitOptions) -> None:
        super().__init__(ctx, options)
        #: The simulated micro:bit of `simulate = true` (tests reach it here).
        self.simulator: SimulatedMicrobit | None = None
        if options.simulate:  # its buttons can be pressed from the dashboard, as by hand
            self.accepts = (*self.accepts, "hwgateway/SimButton")
        self.link: BleLink | None = None
        #: Readings that broke the profile's formats (counted and dropped).
        self.malformed = 0
        self._acceleration = Vector3()
        self._magnetic = Vector3()
        self._heading = 0.0
        self._temperature = 0.0
        self._buttons = [0, 0]
        self._matrix = bytes(5)
        #: Leased outputs by pin; the value is what was set: an `Output` (mode, value, PWM period).
        self.leases: Leases[int, Output] = Leases(ctx.device_id, self._on_lease_end, is_safe=Output.is_zero)
        #: Writes of 0 under way, awaited by estop and before the link closes.
        self._safe_writes: set[asyncio.Task[None]] = set()
        self._background: set[asyncio.Task[None]] = set()

    def capabilities(self) -> Mapping[str, Any]:
        """Address, MTU and the profile services the micro:bit's program started."""
        link = self.link
        services = sorted(name for uuid, name in mb.SERVICE_NAMES.items() if link is not None and uuid in link.services)
        return {
            "simulated": self.options.simulate,
            **({"sim_buttons": ["A", "B"]} if self.options.simulate else {}),
            "selects": self.options.selector().describe(),
            "address": link.address if link else self.options.address,
            "mtu": link.mtu if link else 0,
            "services": services,
            "malformed_notifications": self.malformed,
        }

    # ---- run ----------------------------------------------------------------------------------

    async def run(self) -> None:
        """Find and connect the micro:bit, subscribe to what it serves, and serve it until it goes."""
        backend = Backend()
        if self.options.simulate:
            from devices.ble.virtual_radio import shared_radio
            from devices.sim.microbit import SimulatedMicrobit

            if self.simulator is None:
                self.simulator = SimulatedMicrobit(
                    shared_radio(),
                    f"BBC micro:bit [{self.ctx.device_id}]",
                    self.options.sim_services,
                    pairing_required=self.options.sim_pairing_required,
                    motion=self.options.sim_motion,
                    runtime="v1" if self.options.sim_runtime == "v1" else "v2",
                )
            await self.simulator.start()
            backend = Backend.virtual()
        selector = self.options.selector()
        if self.simulator is not None and not (self.options.address or self.options.name):
            selector = Selector(address=self.simulator.address)
        self.ctx.set_status("connecting", f"scanning for {selector.describe()}")
        link = await BleLink.open_with(selector, backend, self.options)
        self.link = link
        try:
            await self._set_up(link)
            self.leases.restore_safe()  # pins keep their level across a lost link
            await self._safe_writes_done()  # before any command can set them again
            names = self.capabilities()["services"]
            self.ctx.set_status("connected", f"{link.address}, services: {', '.join(names) or 'none'}")
            await link.until_lost()
        except asyncio.CancelledError:
            self.leases.end_all(LeaseEnd.SHUTDOWN)
            raise
        finally:
            self.leases.end_all(LeaseEnd.DEVICE_LOST)  # nothing left after a shutdown
            await self._safe_writes_done()
            self.link = None
            await self._cancel_background()
            await link.close()

    async def _set_up(self, link: BleLink) -> None:
        periods = (
            (mb.ACCELEROMETER_PERIOD, self.options.accelerometer_period_ms),
            (mb.MAGNETOMETER_PERIOD, self.options.magnetometer_period_ms),
            (mb.TEMPERATURE_PERIOD, self.options.temperature_period_ms),
        )
        for uuid, period in periods:
            if period and link.has(uuid):
                await link.write(uuid, mb.encode_u16(period))
        if link.has(mb.LED_MATRIX_STATE):
            self._matrix = await link.read(mb.LED_MATRIX_STATE)
        for index, uuid in enumerate((mb.BUTTON_A_STATE, mb.BUTTON_B_STATE)):
            if link.has(uuid):
                self._buttons[index] = self._decode(mb.decode_button, await link.read(uuid), self._buttons[index])
        handlers: dict[str, Any] = {
            mb.BUTTON_A_STATE: lambda data: self._on_button(0, data),
            mb.BUTTON_B_STATE: lambda data: self._on_button(1, data),
            mb.ACCELEROMETER_DATA: self._on_acceleration,
            mb.MAGNETOMETER_DATA: self._on_magnetometer,
            mb.MAGNETOMETER_BEARING: self._on_bearing,
            mb.TEMPERATURE: self._on_temperature,
            mb.PIN_DATA: self._on_pins,
            mb.UART_TX: self._on_uart,
            mb.MICROBIT_EVENT: self._on_event,
        }
        for uuid, handler in handlers.items():
            if link.has(uuid):
                await link.subscribe(uuid, handler)
        # Readable sensors start from their current value instead of waiting for the first period.
        for uuid in (mb.ACCELEROMETER_DATA, mb.MAGNETOMETER_DATA, mb.MAGNETOMETER_BEARING, mb.TEMPERATURE):
            if link.has(uuid):
                handlers[uuid](await link.read(uuid))
        self._publish_buttons()

    def _decode(self, decoder: Any, data: bytes, fallback: Any = None) -> Any:
        try:
            return decoder(data)
        except ProtocolError as error:
            self.malformed += 1
            log.warning("%s: dropped a malformed notification: %s", self.ctx.device_id, error)
            return fallback

    # ---- notifications ------------------------------------------------------------------------

    def _on_button(self, index: int, data: bytes) -> None:
        state = self._decode(mb.decode_button, data)
        if state is None:
            return
        self._buttons[index] = state
        self._publish_buttons()
        self._publish_state()

    def _on_acceleration(self, data: bytes) -> None:
        vector = self._decode(lambda d: mb.decode_vector(d, "accelerometer data"), data)
        if vector is not None:
            x, y, z = (value / 1000 * STANDARD_GRAVITY for value in vector)
            self._acceleration = Vector3(x, y, z)
            self._publish_state()

    def _on_magnetometer(self, data: bytes) -> None:
        vector = self._decode(lambda d: mb.decode_vector(d, "magnetometer data"), data)
        if vector is not None:
            x, y, z = (value * 1e-9 for value in vector)
            self._magnetic = Vector3(x, y, z)
            self._publish_state()

    def _on_bearing(self, data: bytes) -> None:
        bearing = self._decode(lambda d: mb.decode_u16(d, "bearing"), data)
        if bearing is not None:
            self._heading = float(bearing % 360)

    def _on_temperature(self, data: bytes) -> None:
        temperature = self._decode(mb.decode_temperature, data)
        if temperature is not None:
            self._temperature = float(temperature)
            self._publish_state()

    def _on_pins(self, data: bytes) -> None:
        pairs = self._decode(mb.decode_pin_data, data)
        if pairs:
            now = time.time()
            pins = tuple(pin for pin, _ in pairs)
            values = tuple(value for _, value in pairs)
            self.ctx.publish("pins", MicrobitPins(Time.from_seconds(now), pins, values), now)

    def _on_uart(self, data: bytes) -> None:
        now = time.time()
        self.ctx.publish("uart", MicrobitUart(Time.from_seconds(now), data.decode("utf-8", "replace")), now)

    def _on_event(self, data: bytes) -> None:
        events = self._decode(mb.decode_events, data, ())
        now = time.time()
        for source, value in events:
            self.ctx.publish("events", MicrobitEvent(Time.from_seconds(now), source, value), now)

    def _publish_state(self) -> None:
        now = time.time()
        state = MicrobitState(
            Time.from_seconds(now),
            self._acceleration,
            self._magnetic,
            self._heading,
            self._temperature,
            tuple(self._buttons),
        )
        self.ctx.publish("state", state, now)

    def _publish_buttons(self) -> None:
        now = time.time()
        self.ctx.publish("buttons", ControllerState(Time.from_seconds(now), (), tuple(self._buttons)), now)

    # ---- commands -----------------------------------------------------------------------------

    def _link_for(self, uuid: str, service: str) -> BleLink:
        link = self.link
        if link is None:
            raise DeviceUnavailable(f"device {self.ctx.device_id!r} is not connected")
        if not link.has(uuid):
            raise UnknownCommand(f"the micro:bit's program did not start the {service} service")
        return link

    async def _write(self, uuid: str, service: str, data: bytes, response: bool = True) -> None:
        link = self._link_for(uuid, service)
        try:
            await link.write(uuid, data, response)
        except BleError as error:
            raise DeviceError(str(error)) from None

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        """Write the command to its characteristic; return what was written."""
        result: Mapping[str, Any] = await self.commands.run(self, command, f"device {self.ctx.device_id!r} (microbit)")
        return result

    async def _sim_button(self, command: Command) -> Mapping[str, Any]:
        message: SimButton = command.message
        if self.simulator is None:
            raise DeviceUnavailable("the simulated micro:bit is not running")
        try:
            await self.simulator.hold(message.button, message.pressed_s)
        except ValueError as error:
            raise InvalidArgument(f"data.button: {error}") from None
        return {"pressed": message.button, "for_s": message.pressed_s}

    async def _led(self, command: Command) -> Mapping[str, Any]:
        message: Led = command.message
        lit = max(message.rgb) >= 0.5
        if message.index == -1:
            matrix = bytes([0x1F if lit else 0] * 5)
        elif 0 <= message.index < 25:
            row, column = divmod(message.index, 5)
            rows = bytearray(self._matrix)
            bit = 1 << (4 - column)
            rows[row] = rows[row] | bit if lit else rows[row] & ~bit
            matrix = bytes(rows)
        else:
            raise InvalidArgument(f"data.index: {message.index} is not an LED (0-24 row by row, or -1 for all)")
        await self._write(mb.LED_MATRIX_STATE, "LED", matrix)
        self._matrix = matrix
        return {"matrix": list(matrix)}

    async def _leds(self, command: Command) -> Mapping[str, Any]:
        matrix = mb.encode_matrix(command.message.rows)
        await self._write(mb.LED_MATRIX_STATE, "LED", matrix)
        self._matrix = matrix
        return {"matrix": list(matrix)}

    async def _show_text(self, command: Command) -> Mapping[str, Any]:
        message: MicrobitText = command.message
        data = self._text(message.text)
        if message.scroll_delay_ms:
            await self._write(mb.SCROLLING_DELAY, "LED", mb.encode_u16(message.scroll_delay_ms))
        await self._write(mb.LED_TEXT, "LED", data)
        return {"bytes": len(data)}

    async def _pin(self, command: Command) -> Mapping[str, Any]:
        return await self._set_pin(command.client_id, command.message)

    async def _pwm(self, command: Command) -> Mapping[str, Any]:
        message: MicrobitPwm = command.message
        self._check_pin(message.pin)
        await self._write(mb.PWM_CONTROL, "IO pin", mb.encode_pwm(message.pin, message.value, message.period_us))
        self.leases.take(message.pin, command.client_id, Output("pwm", message.value, message.period_us))
        return {"pin": message.pin, "value": message.value, "period_us": message.period_us}

    async def _periods(self, command: Command) -> Mapping[str, Any]:
        return await self._set_periods(command.message)

    async def _uart_send(self, command: Command) -> Mapping[str, Any]:
        message: MicrobitUartSend = command.message
        await self._write(mb.UART_RX, "UART", self._text(message.text))
        return {"bytes": len(message.text.encode())}

    async def _send_event(self, command: Command) -> Mapping[str, Any]:
        message: MicrobitSendEvent = command.message
        await self._write(mb.CLIENT_EVENT, "event", mb.encode_events([(message.source, message.value)]))
        return {"source": message.source, "value": message.value}

    @staticmethod
    def _text(text: str) -> bytes:
        try:
            return mb.encode_text(text)
        except ValueError as error:
            raise InvalidArgument(f"data.text: {error}") from None

    @staticmethod
    def _check_pin(pin: int) -> None:
        if pin not in pins.EXPOSED:
            raise InvalidArgument(f"data.pin: {pins.PinNotExposed(pin)}")

    async def _set_pin(self, client_id: str, message: MicrobitPin) -> Mapping[str, Any]:
        link = self._link_for(mb.PIN_DATA, "IO pin")
        self._check_pin(message.pin)
        if not message.analog and message.value > 1:
            raise InvalidArgument("data.value: a digital pin takes 0 or 1 (set analog for 0-255)")
        try:
            # The masks' bits are positions in the runtime's pin table, not edge pin numbers.
            bit = pins.mask_bit(message.pin)
            io_mask = mb.decode_u32(await link.read(mb.PIN_IO_CONFIGURATION), "pin IO configuration")
            ad_mask = mb.decode_u32(await link.read(mb.PIN_AD_CONFIGURATION), "pin AD configuration")
            if io_mask & bit:
                await link.write(mb.PIN_IO_CONFIGURATION, mb.encode_u32(io_mask & ~bit))
            wanted_ad = ad_mask | bit if message.analog else ad_mask & ~bit
            if wanted_ad != ad_mask:
                await link.write(mb.PIN_AD_CONFIGURATION, mb.encode_u32(wanted_ad))
            await link.write(mb.PIN_DATA, mb.encode_pin_data([(message.pin, message.value)]))
        except BleError as error:
            raise DeviceError(str(error)) from None
        except ProtocolError as error:
            raise DeviceError(f"the micro:bit sent a malformed pin configuration: {error}") from None
        self.leases.take(message.pin, client_id, Output("analog" if message.analog else "digital", message.value))
        return {"pin": message.pin, "value": message.value, "analog": message.analog}

    async def _set_periods(self, message: MicrobitPeriods) -> Mapping[str, Any]:
        result: dict[str, int] = {}
        for name, uuid, service, period in (
            ("accelerometer_ms", mb.ACCELEROMETER_PERIOD, "accelerometer", message.accelerometer_ms),
            ("magnetometer_ms", mb.MAGNETOMETER_PERIOD, "magnetometer", message.magnetometer_ms),
            ("temperature_ms", mb.TEMPERATURE_PERIOD, "temperature", message.temperature_ms),
        ):
            if not period:
                continue
            await self._write(uuid, service, mb.encode_u16(period))
            link = self._link_for(uuid, service)
            try:
                result[name] = mb.decode_u16(await link.read(uuid), name)
            except (BleError, ProtocolError) as error:
                raise DeviceError(str(error)) from None
        return result

    # ---- leases -------------------------------------------------------------------------------

    def _on_lease_end(self, pin: int, lease: Lease[Output], why: LeaseEnd) -> None:
        """An output's lease ended: back to 0, written at once in a task of its own."""
        task = asyncio.get_running_loop().create_task(self._zero_output(pin, lease.value))
        for tasks in (self._background, self._safe_writes):
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    async def _safe_writes_done(self) -> None:
        await asyncio.gather(*self._safe_writes, return_exceptions=True)

    async def _zero_output(self, pin: int, output: Output) -> None:
        link = self.link
        if link is None:
            return
        try:
            if output.mode == "pwm":
                await link.write(mb.PWM_CONTROL, mb.encode_pwm(pin, 0, output.period_us), timeout_s=SAFE_WRITE_S)
            else:
                await link.write(mb.PIN_DATA, mb.encode_pin_data([(pin, 0)]), timeout_s=SAFE_WRITE_S)
        except BleError as error:
            log.warning("%s: could not return pin %d to 0: %s", self.ctx.device_id, pin, error)

    async def _cancel_background(self) -> None:
        # Setup writes and lease stops belong to the link that just went; the safe state is already applied.
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    async def estop(self) -> None:
        """Every leased pin and PWM output back to 0 (the writes start at once, together)."""
        self.leases.end_all(LeaseEnd.ESTOP)
        await self._safe_writes_done()

    def release(self, client_id: str) -> None:
        """The pins `client_id` drove go back to 0."""
        self.leases.release(client_id)

    async def close(self) -> None:
        """Outputs are zeroed when `run` ends; stop the simulated micro:bit."""
        await self._cancel_background()
        if self.simulator is not None:
            await self.simulator.stop()

    #: Every command the micro:bit takes, and its handler (`hwgateway/SimButton` only when simulated).
    commands: ClassVar[CommandTable[MicrobitAdapter, Command]] = CommandTable(
        {
            "led": _led,
            "hwgateway/MicrobitLeds": _leds,
            "hwgateway/MicrobitText": _show_text,
            "hwgateway/MicrobitPin": _pin,
            "hwgateway/MicrobitPwm": _pwm,
            "hwgateway/MicrobitPeriods": _periods,
            "hwgateway/MicrobitUartSend": _uart_send,
            "hwgateway/MicrobitSendEvent": _send_event,
            "hwgateway/SimButton": _sim_button,
        }
    )
    accepts = commands.types("hwgateway/SimButton")
