"""The `lego_hub` adapter: one LEGO Powered Up hub (BOOST Move, City, Technic) over bleak and LWP 3.0.

Publishes, under the config id:
- `<id>/hub` — `hwgateway/LegoHubState`: name, system type, firmware, battery, button, RSSI, every
  attached port device (and a Technic hub's temperature and acceleration), on every change;
- `<id>/button` — `creos_messages/ControllerState` with the hub's green button;
- `<id>/port/<port>` — `hwgateway/LegoMotor` (tacho motors: position, derived speed),
  `hwgateway/LegoTilt`, `hwgateway/LegoColorDistance`, as the devices report them.

Accepts `led` (the hub's RGB light, index -1 or 0), `hwgateway/LegoMotorSpeed`,
`hwgateway/LegoMotorPosition` and `hwgateway/LegoMotorStop`. Each command waits for the hub's Port
Output Command Feedback; a Generic Error answers `device_error` with its code. Motors are leased to
the client that started them (the core's `gateway.core.lease` rule, no term): they stop (power 0)
when it disconnects, on estop (every motor, leased or not), when the hub is lost and at shutdown.
Ports are named by the hub's connector letters, looked up by its system type (a City hub has A and
B, BOOST and Technic hubs A-D); devices are set up as the hub announces them (Hub Attached I/O), so
a motor plugged in later appears and one pulled out disappears (`attached` in the hub state).

Sensor values are scaled by what the hub itself says of the mode (Port Mode Information: RAW and SI
ranges, SYMBOL, VALUE FORMAT), asked for before the mode is subscribed: a Technic hub's accelerometer
reports raw ±32768 for ±8000 mG, its thermometer ±900 for ±90 °C. A device whose mode information
the hub does not give publishes motor and tilt values as sent and no acceleration or temperature
(their unit would be a guess). Colour numbers and proximity steps are indices (RAW = SI).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from bleak.backends.device import BLEDevice
from bleak.backends.scanner import AdvertisementData

from devices.ble.link import SAFE_STATE_WRITE_TIMEOUT_S, Backend, BleError, BleLink, Selector
from devices.ble.options import SHARED_KEYS_DOC, check_address
from gateway.core.adapter import Adapter, Command, DeviceContext
from gateway.core.dispatch import CommandTable
from gateway.core.lease import Lease, LeaseEnd, Leases
from gateway.errors import DeviceError, DeviceUnavailable, InvalidArgument, RequestTimeout, UnknownCommand
from gateway.messages.common import Time, Vector3
from gateway.messages.creos import ControllerState
from gateway.messages.generic import Led
from gateway.messages.lego import (
    LegoColorDistance,
    LegoHubState,
    LegoMotor,
    LegoMotorPosition,
    LegoMotorSpeed,
    LegoMotorStop,
    LegoPortDevice,
    LegoTilt,
)
from protocols.errors import ProtocolError
from protocols.lwp3 import messages as lwp
from protocols.lwp3 import values
from protocols.lwp3.constants import (
    HUB_CHARACTERISTIC_UUID,
    HUB_SERVICE_UUID,
    LEGO_COMPANY_ID,
    Completion,
    EndState,
    ErrorCode,
    Feedback,
    HubProperty,
    IoEvent,
    IoType,
    MessageType,
    PropertyOperation,
    SystemType,
)
from protocols.lwp3.hubs import CONNECTORS, LED_PORT, device_name, hub_name, port_name
from protocols.lwp3.modes import (
    SCALE_INFO_TYPES,
    ModeInfoType,
    ModeInfoValue,
    ModeScale,
    PortModeInformation,
    PortModeInformationRequest,
)

if TYPE_CHECKING:  # a simulator is imported only when `simulate` asks for one
    from devices.sim.lego_hub import SimulatedLegoHub


log = logging.getLogger(__name__)

STANDARD_GRAVITY = 9.80665
HUB_KINDS = {"boost": SystemType.BOOST_MOVE_HUB, "city": SystemType.CITY_HUB, "technic": SystemType.TECHNIC_HUB}
SIM_DEVICES = {"motor", "color_distance", "tilt"}
#: Longest wait for a command's feedback (s), within the command's own deadline.
FEEDBACK_TIMEOUT_S = 2.0
#: A hub reports a position only when it changes: this long without one, the motor reads 0 deg/s.
STILL_AFTER_S = 0.25
#: SI units a hub names (SYMBOL) → factor to the unit the bus publishes (m/s² for acceleration).
ACCELERATION_UNITS = {"mG": STANDARD_GRAVITY / 1000}


@dataclass(frozen=True, slots=True)
class LegoHubOptions:
    """Config of a `kind = "lego_hub"` device (a LEGO hub speaking LWP 3.0: BOOST Move hub, City hub, Technic hub).

    {shared}
    `hub`: "any", or "boost", "city", "technic" to take only that kind (read from the advertised
    manufacturer data). `simulate`: a simulated hub of `sim_hub` on the in-process virtual radio,
    with `sim_attached` devices ("A=motor", "B=color_distance", "C=tilt").
    """

    address: str = ""
    name: str = ""
    name_prefix: str = ""
    hub: str = "any"
    scan_timeout_s: float = field(default=10.0, metadata={"min": 0.1, "max": 600.0})
    connect_timeout_s: float = field(default=10.0, metadata={"min": 0.1, "max": 120.0})
    connect_attempts: int = field(default=3, metadata={"min": 1, "max": 20})
    retry_delay_s: float = field(default=0.5, metadata={"min": 0.0, "max": 60.0})
    pair: bool = False
    simulate: bool = False
    sim_hub: str = "technic"
    sim_attached: tuple[str, ...] = ("A=motor", "B=color_distance")

    def __post_init__(self) -> None:
        # Every problem in one error, like the config loader's per-key errors.
        problems = []
        try:
            check_address(self.address)
        except ValueError as error:
            problems.append(str(error))
        if self.hub != "any" and self.hub not in HUB_KINDS:
            problems.append(f"hub must be 'any' or one of {', '.join(HUB_KINDS)}, got {self.hub!r}")
        if self.sim_hub not in HUB_KINDS:
            problems.append(f"sim_hub must be one of {', '.join(HUB_KINDS)}, got {self.sim_hub!r}")
        else:  # the attached devices are checked against the simulated hub's ports
            try:
                self.sim_devices()
            except ValueError as error:
                problems.append(str(error))
        if problems:
            raise ValueError("; ".join(problems))

    def sim_devices(self) -> dict[str, IoType]:
        """The simulated hub's attached devices by connector letter."""
        system_type = HUB_KINDS[self.sim_hub]
        devices: dict[str, IoType] = {}
        for entry in self.sim_attached:
            letter, _, kind = entry.partition("=")
            if letter not in CONNECTORS[system_type] or kind not in SIM_DEVICES:
                raise ValueError(
                    f"sim_attached entry {entry!r}: want PORT=KIND with PORT one of "
                    f"{', '.join(CONNECTORS[system_type])} and KIND one of {', '.join(sorted(SIM_DEVICES))}"
                )
            motor = (
                IoType.EXTERNAL_MOTOR_TACHO if system_type == SystemType.BOOST_MOVE_HUB else IoType.TECHNIC_LARGE_MOTOR
            )
            devices[letter] = {
                "motor": motor,
                "color_distance": IoType.COLOR_DISTANCE_SENSOR,
                "tilt": IoType.EXTERNAL_TILT,
            }[kind]
        return devices

    def selector(self) -> Selector:
        """Hubs advertise the LEGO hub service and LEGO's manufacturer data (system type in byte 1)."""
        wanted = HUB_KINDS.get(self.hub)

        def accept(_: BLEDevice, data: AdvertisementData) -> bool:
            payload = data.manufacturer_data.get(LEGO_COMPANY_ID, b"")
            return wanted is None or (len(payload) >= 2 and payload[1] == wanted)

        return Selector(
            address=self.address,
            name=self.name,
            name_prefix=self.name_prefix,
            service_uuid=HUB_SERVICE_UUID,
            manufacturer_id=LEGO_COMPANY_ID,
            accept=accept,
            accepts=f"system type of a {hub_name(wanted)}" if wanted is not None else "",
        )


LegoHubOptions.__doc__ = (LegoHubOptions.__doc__ or "").format(shared=SHARED_KEYS_DOC)


@dataclass
class _Port:
    io_type: int
    mode: int | None = None
    #: The subscribed mode's scale, from the hub's mode information (None: the hub gave none).
    scale: ModeScale | None = None
    last_position: tuple[int, float] | None = None
    still: asyncio.TimerHandle | None = None


class LegoHubAdapter(Adapter[LegoHubOptions]):
    """A LEGO hub: hub state, motors and sensors out; LED colour and motor commands in."""

    kind = "lego_hub"
    options_class = LegoHubOptions
    publishes = (
        "hwgateway/LegoHubState",
        "creos_messages/ControllerState",
        "hwgateway/LegoMotor",
        "hwgateway/LegoTilt",
        "hwgateway/LegoColorDistance",
    )
    #: A port's stream carries its attached device's type (motor, tilt, colour): known only at run time ("").
    streams: ClassVar[Mapping[str, str]] = {
        "hub": "hwgateway/LegoHubState",
        "button": "creos_messages/ControllerState",
        "port/*": "",
    }

    def __init__(self, ctx: DeviceContext, options: LegoHubOptions) -> None:
        super().__init__(ctx, options)
        #: The simulated hub of `simulate = true` (tests reach it here).
        self.simulator: SimulatedLegoHub | None = None
        if options.simulate:  # its green button can be pressed from the dashboard, as by hand
            self.accepts = (*self.accepts, "hwgateway/SimButton")
        self.link: BleLink | None = None
        #: Notifications that broke LWP3 (counted and dropped).
        self.malformed = 0
        self.ports: dict[int, _Port] = {}
        #: Motor leases by port id; the value is the command that started the motor.
        self.leases: Leases[int, LegoMotorSpeed | LegoMotorPosition] = Leases(
            ctx.device_id, self._on_lease_end, is_safe=_is_stop
        )
        #: Safe-state writes under way (power 0), awaited by estop and before the link closes.
        self._safe_writes: set[asyncio.Task[None]] = set()
        self._state = LegoHubState()
        self._system_type = 0
        self._command_lock = asyncio.Lock()
        self._pending: tuple[int, asyncio.Future[Feedback]] | None = None
        #: One mode information request at a time: the hub's Generic Error names no port.
        self._info_lock = asyncio.Lock()
        self._info_pending: tuple[PortModeInformationRequest, asyncio.Future[ModeInfoValue]] | None = None
        self._background: set[asyncio.Task[None]] = set()

    def capabilities(self) -> Mapping[str, Any]:
        """Address, hub kind and its connectors."""
        link = self.link
        return {
            "simulated": self.options.simulate,
            **({"sim_buttons": ["green"]} if self.options.simulate else {}),
            "selects": self.options.selector().describe(),
            "address": link.address if link else self.options.address,
            "hub": hub_name(self._system_type) if link else "",
            "connectors": list(CONNECTORS.get(self._system_type, {})),
            "malformed_notifications": self.malformed,
            "scales": {
                self._name(port): {
                    "mode": state.mode,
                    "raw": list(scale.raw),
                    "si": list(scale.si),
                    "unit": scale.symbol,
                }
                for port, state in sorted(self.ports.items())
                if (scale := state.scale) is not None
            },
        }

    # ---- run ----------------------------------------------------------------------------------

    async def run(self) -> None:
        """Find the hub, connect, announce interest, and serve it until it goes."""
        backend = Backend()
        selector = self.options.selector()
        if self.options.simulate:
            from devices.ble.virtual_radio import shared_radio
            from devices.sim.lego_hub import SimulatedLegoHub

            if self.simulator is None:
                self.simulator = SimulatedLegoHub(
                    shared_radio(), HUB_KINDS[self.options.sim_hub], self.options.sim_devices()
                )
            await self.simulator.start()
            backend = Backend.virtual()
            if not (self.options.address or self.options.name):
                selector = replace(selector, address=self.simulator.address)
        self.ctx.set_status("connecting", f"scanning for {selector.describe()}")
        link = await BleLink.open_with(selector, backend, self.options)
        self.link = link
        manufacturer = (link.advertisement.manufacturer_data if link.advertisement else {}).get(LEGO_COMPANY_ID, b"")
        self._system_type = manufacturer[1] if len(manufacturer) >= 2 else 0
        self.ports.clear()
        self._state = LegoHubState(system_type=self._system_type, hub=hub_name(self._system_type))
        try:
            if not link.has(HUB_CHARACTERISTIC_UUID):
                raise BleError(f"{link.address} has no LEGO hub characteristic {HUB_CHARACTERISTIC_UUID}")
            await link.subscribe(HUB_CHARACTERISTIC_UUID, self._on_notification)
            for prop in (HubProperty.BUTTON, HubProperty.RSSI, HubProperty.BATTERY_VOLTAGE):
                await self._send(lwp.enable_property_updates(prop))
            for prop in (HubProperty.ADVERTISING_NAME, HubProperty.FW_VERSION, HubProperty.SYSTEM_TYPE_ID):
                await self._send(lwp.request_property(prop))
            self.ctx.set_status("connected", f"{hub_name(self._system_type)} at {link.address}")
            await link.until_lost()
        except asyncio.CancelledError:
            self.leases.end_all(LeaseEnd.SHUTDOWN)
            raise
        finally:
            self.leases.end_all(LeaseEnd.DEVICE_LOST)  # nothing left after a shutdown
            await self._safe_writes_done()
            pending, self._pending = self._pending, None
            if pending is not None and not pending[1].done():
                pending[1].set_exception(DeviceUnavailable("the hub went away"))
            self.link = None
            await self._cancel_background()
            for state in self.ports.values():
                if state.still is not None:
                    state.still.cancel()
            await link.close()

    async def _send(self, message: lwp.Message, timeout_s: float | None = None) -> None:
        link = self.link
        if link is None:
            raise DeviceUnavailable(f"device {self.ctx.device_id!r} is not connected")
        await link.write(HUB_CHARACTERISTIC_UUID, lwp.encode(message), response=True, timeout_s=timeout_s)

    def _spawn(self, coroutine: Any) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # ---- notifications ------------------------------------------------------------------------

    def _on_notification(self, data: bytes) -> None:
        try:
            message = lwp.decode(data)
            self._dispatch(message)
        except ProtocolError as error:
            self.malformed += 1
            log.warning("%s: dropped a malformed LWP3 notification %s: %s", self.ctx.device_id, data.hex(), error)

    def _dispatch(self, message: lwp.Message) -> None:
        match message:
            case lwp.AttachedIo():
                self._on_attached(message)
            case lwp.HubPropertyMessage(prop, PropertyOperation.UPDATE, payload):
                self._on_property(prop, payload)
            case lwp.PortInputFormat(port, mode, _, notify):
                if port in self.ports:
                    self.ports[port].mode = mode if notify else None
            case lwp.PortValue(port, data):
                self._on_value(port, data)
            case lwp.PortOutputFeedback(entries):
                pending = self._pending
                for port, bits in entries:
                    if pending is not None and pending[0] == port and not pending[1].done():
                        pending[1].set_result(bits)
            case PortModeInformation():
                self._on_mode_information(message)
            case lwp.GenericError(command_type, code) if command_type == MessageType.PORT_MODE_INFORMATION_REQUEST:
                info = self._info_pending
                if info is not None and not info[1].done():
                    info[1].set_exception(DeviceError(f"the hub gave no mode information (LWP3 error {code.name})"))
            case lwp.GenericError(command_type, code):
                pending = self._pending
                if code != ErrorCode.ACK and pending is not None and not pending[1].done():
                    pending[1].set_exception(
                        DeviceError(
                            f"the hub refused the command (LWP3 error {code.name}, message type 0x{command_type:02x})"
                        )
                    )
                elif code != ErrorCode.ACK:
                    log.warning(
                        "%s: hub reported %s for message type 0x%02x", self.ctx.device_id, code.name, command_type
                    )
            case lwp.HubActionMessage(action):
                log.info("%s: hub says %s", self.ctx.device_id, action.name)
            case _:
                pass

    def _on_attached(self, message: lwp.AttachedIo) -> None:
        if message.event == IoEvent.DETACHED:
            gone = self.ports.pop(message.port, None)
            if gone is not None and gone.still is not None:
                gone.still.cancel()
            if self.leases.drop(message.port) is not None:
                log.info("%s: leased motor on port %s was unplugged", self.ctx.device_id, self._name(message.port))
        else:
            state = self.ports[message.port] = _Port(message.io_type)
            mode = values.reading_mode(message.io_type)
            if mode is not None:
                self._spawn(self._setup_reading(message.port, state, mode))
            elif message.io_type == IoType.RGB_LIGHT:
                # RGB mode (1) has to be the port's mode before SetRgbColors is accepted.
                self._spawn(self._setup(lwp.PortInputFormatSetup(message.port, values.RGB_LIGHT_MODE_RGB, 1, False)))
        attached = tuple(
            LegoPortDevice(port, self._name(port), state.io_type, device_name(state.io_type))
            for port, state in sorted(self.ports.items())
        )
        self._update(attached=attached)

    async def _setup_reading(self, port: int, state: _Port, mode: int) -> None:
        """Ask the hub how `mode` scales, then subscribe to it."""
        infos: dict[ModeInfoType, ModeInfoValue] = {}
        try:
            async with self._info_lock:
                for info_type in SCALE_INFO_TYPES:
                    infos[info_type] = await self._mode_information(PortModeInformationRequest(port, mode, info_type))
            state.scale = ModeScale.from_information(infos)
        except (DeviceError, ProtocolError, TimeoutError) as error:
            log.warning(
                "%s: port %s mode %d: no scale (%s); its values go out as sent",
                self.ctx.device_id,
                self._name(port),
                mode,
                str(error) or "no answer",
            )
        except (BleError, DeviceUnavailable) as error:
            log.warning("%s: could not ask port %s about its mode: %s", self.ctx.device_id, self._name(port), error)
            return
        if self.ports.get(port) is state:
            await self._setup(lwp.PortInputFormatSetup(port, mode, 1, True))

    async def _mode_information(self, request: PortModeInformationRequest) -> ModeInfoValue:
        future: asyncio.Future[ModeInfoValue] = asyncio.get_running_loop().create_future()
        self._info_pending = (request, future)
        try:
            await self._send(request)
            async with asyncio.timeout(FEEDBACK_TIMEOUT_S):
                return await future
        finally:
            self._info_pending = None

    def _on_mode_information(self, message: PortModeInformation) -> None:
        info = self._info_pending
        if info is None or info[1].done():
            return
        request, future = info
        if (message.port, message.mode, message.info_type) == (request.port, request.mode, request.info_type):
            future.set_result(message.value)

    async def _setup(self, message: lwp.PortInputFormatSetup) -> None:
        try:
            await self._send(message)
        except (BleError, DeviceUnavailable) as error:
            log.warning("%s: could not set up port %s: %s", self.ctx.device_id, self._name(message.port), error)

    def _on_property(self, prop: HubProperty, payload: bytes) -> None:
        value = values.property_value(prop, payload)
        if prop == HubProperty.ADVERTISING_NAME and isinstance(value, str):
            self._update(name=value)
        elif prop == HubProperty.BUTTON and isinstance(value, bool):
            self._update(button=value)
            now = time.time()
            self.ctx.publish("button", ControllerState(Time.from_seconds(now), (), (int(value),)), now)
        elif prop == HubProperty.RSSI and isinstance(value, int):
            self._update(rssi_dbm=max(-127, min(0, value)))
        elif prop == HubProperty.BATTERY_VOLTAGE and isinstance(value, int):
            self._update(battery_percent=value)
        elif prop == HubProperty.FW_VERSION and isinstance(value, str):
            self._update(firmware_version=value)
        elif prop == HubProperty.SYSTEM_TYPE_ID and isinstance(value, int):
            self._system_type = value
            self._update(system_type=value, hub=hub_name(value))

    def _on_value(self, port: int, data: bytes) -> None:
        state = self.ports.get(port)
        if state is None or state.mode is None:
            return
        scale = state.scale
        reading = values.port_reading(state.io_type, state.mode, data, scale.to_si if scale else None)
        if scale is not None and reading is not None:
            scale.value_format.unpack(data)  # the hub's own VALUE FORMAT must match what it sends
        now = time.time()
        stamp = Time.from_seconds(now)
        name = self._name(port)
        match reading:
            case values.MotorReading(mode, degrees) if mode == values.MOTOR_MODE_POSITION:
                value = round(degrees)
                speed = 0.0
                if state.last_position is not None and now > state.last_position[1]:
                    speed = (value - state.last_position[0]) / (now - state.last_position[1])
                state.last_position = (value, now)
                self.ctx.publish(f"port/{name}", LegoMotor(stamp, name, value, speed), now)
                if state.still is not None:
                    state.still.cancel()
                if speed:
                    state.still = asyncio.get_running_loop().call_later(STILL_AFTER_S, self._still, port, state)
            case values.TiltReading(x, y, z):
                self.ctx.publish(f"port/{name}", LegoTilt(stamp, name, round(x), round(y), round(z)), now)
            case values.ColorDistanceReading(color, proximity):
                color_name = values.COLOR_NAMES[color] if color < len(values.COLOR_NAMES) else "none"
                self.ctx.publish(f"port/{name}", LegoColorDistance(stamp, name, color, color_name, proximity), now)
            case values.AccelerationReading(x, y, z):
                # Raw values of an unknown unit would be a guess: only a scale in a known unit goes out.
                factor = ACCELERATION_UNITS.get(scale.symbol) if scale is not None else None
                if factor is not None:
                    self._update(acceleration=Vector3(x * factor, y * factor, z * factor))
            case values.TemperatureReading(celsius):
                if scale is not None:
                    self._update(temperature=celsius)
            case _:
                pass

    def _still(self, port: int, state: _Port) -> None:
        state.still = None
        if self.ports.get(port) is state and state.last_position is not None:
            now = time.time()
            name = self._name(port)
            state.last_position = (state.last_position[0], now)
            self.ctx.publish(f"port/{name}", LegoMotor(Time.from_seconds(now), name, state.last_position[0], 0.0), now)

    def _update(self, **changes: Any) -> None:
        now = time.time()
        self._state = replace(self._state, stamp=Time.from_seconds(now), **changes)
        self.ctx.publish("hub", self._state, now)

    def _name(self, port: int) -> str:
        return port_name(self._system_type, port)

    # ---- commands -----------------------------------------------------------------------------

    def _motor_port(self, letter: str) -> tuple[int, _Port]:
        connectors = CONNECTORS.get(self._system_type, {})
        port = connectors.get(letter.upper())
        if port is None:
            raise InvalidArgument(f"data.port: {letter!r} is not a port of this {hub_name(self._system_type)} "
                                  f"(ports: {', '.join(connectors) or 'none known'})")  # fmt: skip
        state = self.ports.get(port)
        if state is None or not (state.io_type in values.TACHO_MOTORS or state.io_type in values.PLAIN_MOTORS):
            what = device_name(state.io_type) if state else "nothing"
            raise InvalidArgument(f"data.port: port {letter} has {what} attached, not a motor")
        return port, state

    async def _command(self, command: Command, message: lwp.PortOutputCommand) -> Feedback:
        async with self._command_lock:
            future: asyncio.Future[Feedback] = asyncio.get_running_loop().create_future()
            self._pending = (message.port, future)
            try:
                await self._send(message)
                timeout = min(FEEDBACK_TIMEOUT_S, max(0.0, command.deadline - time.monotonic()))
                async with asyncio.timeout(timeout):
                    return await future
            except TimeoutError:
                raise RequestTimeout(f"the hub sent no feedback for port {self._name(message.port)}") from None
            except BleError as error:
                raise DeviceError(str(error)) from None
            finally:
                self._pending = None

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        """Send the LWP3 output command and wait for the hub's feedback."""
        if self.link is None:
            raise DeviceUnavailable(f"device {self.ctx.device_id!r} is not connected")
        result: Mapping[str, Any] = await self.commands.run(self, command, f"device {self.ctx.device_id!r} (lego_hub)")
        return result

    async def _sim_button(self, command: Command) -> Mapping[str, Any]:
        message = command.message
        if self.simulator is None:
            raise DeviceUnavailable("the simulated hub is not running")
        if message.button != "green":
            raise InvalidArgument(f"data.button: no button {message.button!r}; a hub has green")
        self.simulator.hold_button(message.pressed_s)
        return {"pressed": message.button, "for_s": message.pressed_s}

    async def _led(self, command: Command) -> Mapping[str, Any]:
        message: Led = command.message
        if message.index not in (-1, 0):
            raise InvalidArgument(f"data.index: {message.index} is not an LED of the hub (it has one: 0 or -1)")
        if LED_PORT not in self.ports:
            raise UnknownCommand("this hub announced no RGB light")
        red, green, blue = (round(channel * 255) for channel in message.rgb)
        feedback = await self._command(command, lwp.set_rgb(LED_PORT, red, green, blue))
        return {"rgb": [red, green, blue], "feedback": int(feedback)}

    async def _motor_speed(self, command: Command) -> Mapping[str, Any]:
        message: LegoMotorSpeed = command.message
        port, state = self._motor_port(message.port)
        if state.io_type in values.TACHO_MOTORS:
            output = lwp.start_speed(port, message.speed_percent, message.max_power_percent)
        else:
            output = lwp.start_power(port, message.speed_percent)
        feedback = await self._command(command, output)
        self.leases.take(port, command.client_id, message)
        return {"port": self._name(port), "feedback": int(feedback)}

    async def _motor_position(self, command: Command) -> Mapping[str, Any]:
        message: LegoMotorPosition = command.message
        port, state = self._motor_port(message.port)
        if state.io_type not in values.TACHO_MOTORS:
            raise InvalidArgument(f"data.port: the motor on port {message.port} has no position sensor")
        output = lwp.goto_absolute_position(
            port,
            message.position_deg,
            message.speed_percent,
            message.max_power_percent,
            EndState(message.end_state),
        )
        feedback = await self._command(command, output)
        self.leases.take(port, command.client_id, message)
        return {"port": self._name(port), "feedback": int(feedback)}

    async def _motor_stop(self, command: Command) -> Mapping[str, Any]:
        message: LegoMotorStop = command.message
        ports = [self._motor_port(message.port)[0]] if message.port else self._motors()
        for port in ports:
            await self._command(command, lwp.start_power(port, lwp_power(message.brake)))
            self.leases.drop(port)  # stopped: the safe value is what it has
        return {"ports": [self._name(port) for port in ports]}

    def _motors(self) -> list[int]:
        """The ports with a motor attached."""
        return [
            p for p, s in self.ports.items() if s.io_type in values.TACHO_MOTORS or s.io_type in values.PLAIN_MOTORS
        ]

    def _on_lease_end(self, port: int, lease: Lease[LegoMotorSpeed | LegoMotorPosition], why: LeaseEnd) -> None:
        """A motor's lease ended: power 0, written at once in a task of its own (estop and close await it)."""
        self._stop_motor_soon(port)

    def _stop_motor_soon(self, port: int) -> None:
        task = self._spawn(self._stop_motor(port))
        self._safe_writes.add(task)
        task.add_done_callback(self._safe_writes.discard)

    async def _safe_writes_done(self) -> None:
        await asyncio.gather(*self._safe_writes, return_exceptions=True)

    async def _stop_motor(self, port: int) -> None:
        if self.link is None:
            return
        try:
            # Immediate, no feedback asked: nothing to wait for on the way to a safe state.
            stop = lwp.start_power(port, 0)
            await self._send(replace(stop, completion=Completion.NONE), SAFE_STATE_WRITE_TIMEOUT_S)
        except (BleError, DeviceUnavailable) as error:
            log.warning("%s: could not stop the motor on port %s: %s", self.ctx.device_id, self._name(port), error)

    async def _cancel_background(self) -> None:
        # Setup writes and lease stops belong to the link that just went; the safe state is already applied.
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    async def estop(self) -> None:
        """Every motor of the hub to power 0 now, leased or not (the writes start at once, together)."""
        leased = self.leases.end_all(LeaseEnd.ESTOP)
        for port in self._motors():
            if port not in leased:
                self._stop_motor_soon(port)
        await self._safe_writes_done()

    def release(self, client_id: str) -> None:
        """The motors `client_id` started stop."""
        self.leases.release(client_id)

    async def close(self) -> None:
        """Motors were stopped when `run` ended; stop the simulated hub."""
        await self._cancel_background()
        if self.simulator is not None:
            await self.simulator.stop()

    #: Every command the hub takes, and its handler (`hwgateway/SimButton` only when simulated).
    commands: ClassVar[CommandTable[LegoHubAdapter, Command]] = CommandTable(
        {
            "led": _led,
            "hwgateway/LegoMotorSpeed": _motor_speed,
            "hwgateway/LegoMotorPosition": _motor_position,
            "hwgateway/LegoMotorStop": _motor_stop,
            "hwgateway/SimButton": _sim_button,
        }
    )
    accepts = commands.types("hwgateway/SimButton")


def lwp_power(brake: bool) -> int:
    """StartPower's value for a stop: 127 brakes, 0 floats."""
    return 127 if brake else 0


def _is_stop(command: LegoMotorSpeed | LegoMotorPosition) -> bool:
    """Speed 0 is a motor's safe value (a position command always moves it)."""
    return isinstance(command, LegoMotorSpeed) and command.speed_percent == 0
