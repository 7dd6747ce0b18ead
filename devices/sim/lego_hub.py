"""A simulated LEGO Powered Up hub (BOOST Move hub, City hub or Technic hub) speaking LWP 3.0 over Bumble.

It serves the hub's one service and characteristic (`protocols.lwp3.constants`), advertises LEGO's
manufacturer data (§2: button, system type, capabilities, last network, status, option) and behaves
as the protocol document describes: Hub Attached I/O for every port device when the client
subscribes and whenever a device is attached or detached (`attach`, `detach`), hub property updates
(requested or enabled), Port Input Format acknowledgements followed by Port Values in the chosen
mode, motors that run (StartSpeed, StartPower through WriteDirectModeData, GotoAbsolutePosition)
with Port Output Command Feedback, the hub LED's RGB mode, and Generic Error messages for commands it
cannot carry out or does not know. Port Information and Port Mode Information requests are answered
with what real devices answered (`devices.sim.lwp3_dumps`, captures from sharpbrick/powered-up), and
the sensors' Port Values are raw values by those same captures' RAW and SI ranges: the Technic hub's
accelerometer sends 4096 for 1 g (1000 mG), its thermometer 245 for 24.5 °C. `received` keeps every
message the client wrote, decoded.
"""

from __future__ import annotations

import asyncio
import functools
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from bumble import gatt
from bumble.core import UUID, AdvertisingData
from bumble.device import Connection

from devices.ble.virtual_radio import VirtualRadio
from devices.sim import lwp3_dumps
from devices.sim.ble_peripheral import P, SimulatedPeripheral, characteristic
from protocols.errors import ProtocolError
from protocols.lwp3 import messages as lwp
from protocols.lwp3.constants import (
    HUB_CHARACTERISTIC_UUID,
    HUB_SERVICE_UUID,
    LEGO_COMPANY_ID,
    AlertOperation,
    Completion,
    ErrorCode,
    Feedback,
    HubAction,
    HubProperty,
    IoEvent,
    IoType,
    MessageType,
    PropertyOperation,
    SubCommand,
    SystemType,
)
from protocols.lwp3.hubs import BUILT_IN, CONNECTORS
from protocols.lwp3.modes import (
    ModeInfoType,
    ModeInfoValue,
    ModeScale,
    PortInformation,
    PortInformationRequest,
    PortModeInformation,
    PortModeInformationRequest,
)
from protocols.lwp3.values import MOTOR_MODE_POSITION, MOTOR_MODE_SPEED, TACHO_MOTORS

NAMES = {
    SystemType.BOOST_MOVE_HUB: "LEGO Move Hub",
    SystemType.CITY_HUB: "HUB NO.4",
    SystemType.TECHNIC_HUB: "Technic Hub",
}
#: Degrees per second at 100 % speed (a Technic L motor runs at about 315 rpm unloaded).
FULL_SPEED_DEG_S = 1800.0
TICK_S = 0.05


@dataclass
class PortState:
    """One port's device and what the client made of it."""

    io_type: IoType
    mode: int | None = None
    delta: int = 1
    speed: int = 0  # % (StartSpeed / StartPower)
    position: float = 0.0  # degrees
    target: int | None = None  # GotoAbsolutePosition
    rgb: tuple[int, int, int] = (0, 0, 255)
    reported: bytes = b""
    sent: list[bytes] = field(default_factory=list)


class SimulatedLegoHub(SimulatedPeripheral):
    """A hub of `system_type` with `attached` devices on its connectors (letter → IO type)."""

    def __init__(
        self,
        radio: VirtualRadio,
        system_type: SystemType = SystemType.TECHNIC_HUB,
        attached: Mapping[str, IoType] | None = None,
        name: str = "",
    ) -> None:
        if system_type not in BUILT_IN:
            raise ValueError(f"no simulation of hub system type 0x{system_type:02x}")
        super().__init__(radio, name or NAMES[system_type])
        self.system_type = system_type
        self.ports: dict[int, PortState] = {port: PortState(io) for port, io in BUILT_IN[system_type].items()}
        for letter, io_type in (attached or {}).items():
            self.ports[self.connector(letter)] = PortState(io_type)
        #: When `hold_button`'s press ends (loop time, s).
        self._button_until = 0.0
        self.properties: dict[HubProperty, bytes] = {
            HubProperty.ADVERTISING_NAME: self.name.encode(),
            HubProperty.BUTTON: b"\x00",
            HubProperty.FW_VERSION: struct.pack("<i", 0x1100_0000 | 0x0000_0202),
            HubProperty.HW_VERSION: struct.pack("<i", 0x0100_0000),
            HubProperty.RSSI: struct.pack("<b", -55),
            HubProperty.BATTERY_VOLTAGE: bytes([87]),
            HubProperty.SYSTEM_TYPE_ID: bytes([system_type]),
            HubProperty.MANUFACTURER_NAME: b"LEGO System A/S",
            HubProperty.LWP_VERSION: struct.pack("<H", 0x0300),
        }
        self.updates: set[HubProperty] = set()
        self.received: list[lwp.Message] = []
        self.malformed: list[bytes] = []
        self.tilt = (0, 0, 0)
        #: The Technic hub's acceleration (mG, lying flat) and temperature (°C), sent as raw values.
        self.acceleration_mg = (0.0, 0.0, -1000.0)
        self.temperature_c = 24.5
        #: Ports whose motor is stalled: further output commands get Generic Error Overcurrent (§3.9).
        self.stalled: set[int] = set()
        self._char: gatt.Characteristic[bytes] | None = None
        self._subscribed = False

    def connector(self, letter: str) -> int:
        """The port id of connector `letter` of this hub."""
        try:
            return CONNECTORS[self.system_type][letter]
        except KeyError:
            raise ValueError(f"{self.name} has no port {letter!r}") from None

    def services(self) -> Sequence[gatt.Service]:
        """The LEGO Hub Service with its one characteristic (write, write without response, notify)."""
        self._char = characteristic(
            HUB_CHARACTERISTIC_UUID,
            P.READ | P.WRITE | P.WRITE_WITHOUT_RESPONSE | P.NOTIFY,
            lambda _: b"",
            self._on_write,
        )
        self._char.on(self._char.EVENT_SUBSCRIPTION, self._on_subscription)
        return [gatt.Service(HUB_SERVICE_UUID, [self._char])]

    def advertising(self) -> tuple[bytes, bytes]:
        """Flags, the hub service UUID and LEGO's manufacturer data; the name in the scan response."""
        manufacturer = struct.pack("<H", LEGO_COMPANY_ID) + bytes([0x00, self.system_type, 0x06, 0x00, 0x02, 0x00])
        data = AdvertisingData(
            [
                (AdvertisingData.FLAGS, bytes([0x06])),
                (AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS, bytes(UUID(HUB_SERVICE_UUID))),
                (AdvertisingData.MANUFACTURER_SPECIFIC_DATA, manufacturer),
            ]
        )
        response = AdvertisingData([(AdvertisingData.COMPLETE_LOCAL_NAME, self.name.encode())])
        return bytes(data), bytes(response)

    # ---- the client's side ---------------------------------------------------------------------

    def _on_subscription(self, _: object, notify: bool, indicate: bool) -> None:
        self._subscribed = notify or indicate
        if self._subscribed:
            # Like a real hub: once notifications are on, it announces every attached device.
            for port, state in sorted(self.ports.items()):
                self._send(lwp.AttachedIo(port, IoEvent.ATTACHED, state.io_type, 0x1000_0000, 0x1000_0000))

    def on_connected(self) -> None:
        """Start the motor and sensor tick."""
        self.spawn(self._tick())

    def on_disconnected(self) -> None:
        """A real hub stops its motors when the connection goes, and forgets subscriptions."""
        self._subscribed = False
        self.updates.clear()
        for state in self.ports.values():
            state.speed, state.target, state.mode = 0, None, None
        for task in list(self._tasks):
            task.cancel()

    def _send(self, message: lwp.Message) -> None:
        if self._char is not None and self._subscribed and self.device.connections:
            self.spawn(self.device.notify_subscribers(self._char, lwp.encode(message)))

    def _on_write(self, _: Connection, value: bytes) -> None:
        try:
            message = lwp.decode(bytes(value))
        except ProtocolError:
            self.malformed.append(bytes(value))
            message_type = value[2] if len(value) >= 3 else 0
            self._send(lwp.GenericError(message_type, ErrorCode.INVALID_USE))
            return
        self.received.append(message)
        self._handle(message)

    def _handle(self, message: lwp.Message) -> None:
        match message:
            case lwp.HubPropertyMessage(prop, operation, payload):
                self._property(prop, operation, payload)
            case lwp.HubActionMessage(action):
                if action == HubAction.DISCONNECT:
                    self._send(lwp.HubActionMessage(HubAction.WILL_DISCONNECT))
                    self.spawn(self.drop())
            case lwp.PortInputFormatSetup(port, mode, delta, notify):
                state = self.ports.get(port)
                if state is None:
                    self._send(lwp.GenericError(MessageType.PORT_INPUT_FORMAT_SETUP_SINGLE, ErrorCode.INVALID_USE))
                    return
                state.mode, state.delta, state.reported = (mode if notify else None), delta, b""
                self._send(lwp.PortInputFormat(port, mode, delta, notify))
                self._report(port, state, force=True)
            case lwp.PortOutputCommand():
                self._output(message)
            case PortInformationRequest() | PortModeInformationRequest():
                self._information(message)
            case lwp.HubAlertMessage(alert, operation, _):
                if operation == AlertOperation.REQUEST_UPDATES:
                    self._send(lwp.HubAlertMessage(alert, AlertOperation.UPDATE, True))
            case lwp.OtherMessage(message_type, _):
                self._send(lwp.GenericError(message_type, ErrorCode.COMMAND_NOT_RECOGNIZED))
            case _:  # an upstream-only message written to the hub
                self._send(lwp.GenericError(lwp.encode(message)[2], ErrorCode.COMMAND_NOT_RECOGNIZED))

    def _property(self, prop: HubProperty, operation: PropertyOperation, payload: bytes) -> None:
        if prop not in self.properties:
            self._send(lwp.GenericError(MessageType.HUB_PROPERTIES, ErrorCode.INVALID_USE))
            return
        if operation == PropertyOperation.SET and prop == HubProperty.ADVERTISING_NAME:
            self.properties[prop] = payload
        elif operation == PropertyOperation.ENABLE_UPDATES:
            self.updates.add(prop)
        elif operation == PropertyOperation.DISABLE_UPDATES:
            self.updates.discard(prop)
            return
        elif operation != PropertyOperation.REQUEST_UPDATE:
            self._send(lwp.GenericError(MessageType.HUB_PROPERTIES, ErrorCode.INVALID_USE))
            return
        self._send(lwp.HubPropertyMessage(prop, PropertyOperation.UPDATE, self.properties[prop]))

    def _output(self, command: lwp.PortOutputCommand) -> None:
        state = self.ports.get(command.port)
        if state is None:
            self._send(lwp.GenericError(MessageType.PORT_OUTPUT_COMMAND, ErrorCode.INVALID_USE))
            return
        if command.port in self.stalled:
            self._send(lwp.GenericError(MessageType.PORT_OUTPUT_COMMAND, ErrorCode.OVERCURRENT))
            return
        feedback = Feedback.COMPLETED | Feedback.IDLE
        payload = command.payload
        motor = state.io_type in TACHO_MOTORS or state.io_type in (IoType.MOTOR, IoType.TRAIN_MOTOR)
        if command.subcommand == SubCommand.WRITE_DIRECT_MODE_DATA and payload:
            mode, data = payload[0], payload[1:]
            if state.io_type == IoType.RGB_LIGHT and mode == 1 and len(data) == 3:
                state.rgb = (data[0], data[1], data[2])
            elif state.io_type == IoType.RGB_LIGHT and mode == 0 and len(data) == 1 and data[0] <= 10:
                state.rgb = _COLOR_RGB[data[0]]
            elif motor and mode == 0 and len(data) == 1:
                (power,) = struct.unpack("<b", data)
                state.speed, state.target = (0 if power == 127 else power), None
            else:
                self._send(lwp.GenericError(MessageType.PORT_OUTPUT_COMMAND, ErrorCode.INVALID_USE))
                return
        elif command.subcommand == SubCommand.START_SPEED and state.io_type in TACHO_MOTORS and len(payload) == 3:
            state.speed, state.target = struct.unpack_from("<b", payload)[0], None
            feedback = Feedback.IN_PROGRESS
        elif (
            command.subcommand == SubCommand.GOTO_ABSOLUTE_POSITION
            and state.io_type in TACHO_MOTORS
            and len(payload) == 8
        ):
            target, speed = struct.unpack_from("<iB", payload)
            state.target, state.speed = target, speed
            feedback = Feedback.IN_PROGRESS
        else:
            self._send(lwp.GenericError(MessageType.PORT_OUTPUT_COMMAND, ErrorCode.INVALID_USE))
            return
        if command.completion & Completion.FEEDBACK:
            self._send(lwp.PortOutputFeedback(((command.port, feedback),)))

    def _information(self, request: PortInformationRequest | PortModeInformationRequest) -> None:
        state = self.ports.get(request.port)
        is_mode = isinstance(request, PortModeInformationRequest)
        request_type = MessageType.PORT_MODE_INFORMATION_REQUEST if is_mode else MessageType.PORT_INFORMATION_REQUEST
        captured = lwp3_dumps.messages(state.io_type) if state is not None else ()
        if not captured:
            self._send(lwp.GenericError(request_type, ErrorCode.COMMAND_NOT_RECOGNIZED))
            return
        for data in captured:
            answer = lwp.decode(data)
            if _answers(request, answer):
                assert isinstance(answer, PortInformation | PortModeInformation)
                self._send(replace(answer, port=request.port))
                return
        self._send(lwp.GenericError(request_type, ErrorCode.INVALID_USE))

    @staticmethod
    def scale(io_type: int, mode: int) -> ModeScale | None:
        """A mode's scale from the device's captured mode information (None: no capture of it)."""
        return _captured_scale(io_type, mode, lwp3_dumps.capture(io_type))

    def _raw(self, io_type: int, mode: int, values: Sequence[float]) -> tuple[int, ...]:
        scale = self.scale(io_type, mode)
        return tuple(round(scale.to_raw(value) if scale is not None else value) for value in values)

    # ---- the world's side ----------------------------------------------------------------------

    async def _tick(self) -> None:
        while self.device.connections:
            await asyncio.sleep(TICK_S)
            for port, state in self.ports.items():
                if state.speed and state.io_type in TACHO_MOTORS:
                    step = FULL_SPEED_DEG_S * state.speed / 100 * TICK_S
                    if state.target is not None:
                        remaining = state.target - state.position
                        if abs(remaining) <= abs(step):
                            state.position, state.speed, state.target = float(state.target), 0, None
                            self._send(lwp.PortOutputFeedback(((port, Feedback.COMPLETED | Feedback.IDLE),)))
                        else:
                            state.position += abs(step) if remaining > 0 else -abs(step)
                    else:
                        state.position += step
                self._report(port, state)

    def _value(self, state: PortState) -> bytes | None:
        mode = state.mode
        if mode is None:
            return None
        if state.io_type in TACHO_MOTORS:
            if mode == MOTOR_MODE_POSITION:
                return struct.pack("<i", *self._raw(state.io_type, mode, [state.position]))
            if mode == MOTOR_MODE_SPEED:
                return struct.pack("<b", state.speed)
            return None
        if state.io_type in (IoType.INTERNAL_TILT, IoType.EXTERNAL_TILT) and mode == 0:
            return struct.pack("<bb", self.tilt[0], self.tilt[1])
        if state.io_type == IoType.TECHNIC_HUB_TILT and mode == 0:
            return struct.pack("<hhh", *self._raw(state.io_type, mode, (-self.tilt[2], self.tilt[1], self.tilt[0])))
        if state.io_type == IoType.COLOR_DISTANCE_SENSOR and mode == 8:
            return bytes([9, 4, 0, 0])  # red, at proximity 4
        if state.io_type == IoType.TECHNIC_HUB_ACCELEROMETER and mode == 0:
            return struct.pack("<hhh", *self._raw(state.io_type, mode, self.acceleration_mg))
        if state.io_type == IoType.TECHNIC_HUB_TEMPERATURE and mode == 0:
            return struct.pack("<h", *self._raw(state.io_type, mode, [self.temperature_c]))
        return None

    def _report(self, port: int, state: PortState, force: bool = False) -> None:
        value = self._value(state)
        if value is None or (value == state.reported and not force):
            return
        state.reported = value
        self._send(lwp.PortValue(port, value))

    def attach(self, letter: str, io_type: IoType) -> None:
        """Plug a device into connector `letter` (the hub announces it)."""
        port = self.connector(letter)
        self.ports[port] = PortState(io_type)
        self._send(lwp.AttachedIo(port, IoEvent.ATTACHED, io_type, 0x1000_0000, 0x1000_0000))

    def detach(self, letter: str) -> None:
        """Unplug the device of connector `letter`."""
        port = self.connector(letter)
        if self.ports.pop(port, None) is not None:
            self._send(lwp.AttachedIo(port, IoEvent.DETACHED))

    def press_button(self, pressed: bool) -> None:
        """Press or release the hub's green button (sent when the client enabled its updates)."""
        self.properties[HubProperty.BUTTON] = bytes([pressed])
        if HubProperty.BUTTON in self.updates:
            self._send(lwp.HubPropertyMessage(HubProperty.BUTTON, PropertyOperation.UPDATE, bytes([pressed])))

    def hold_button(self, seconds: float) -> None:
        """Press the green button for `seconds` (0: release it now), as a person would."""
        self._button_until = asyncio.get_running_loop().time() + seconds
        self.press_button(seconds > 0)
        if seconds > 0:
            self.spawn(self._release_button(self._button_until))

    async def _release_button(self, until: float) -> None:
        await asyncio.sleep(max(until - asyncio.get_running_loop().time(), 0.0))
        if self._button_until == until:  # not pressed again meanwhile
            self.press_button(False)

    def set_tilt(self, x: int, y: int, z: int = 0) -> None:
        """Tilt the hub (degrees); reported on the next tick to a client that subscribed."""
        self.tilt = (x, y, z)

    def send_raw(self, data: bytes) -> None:
        """Notify arbitrary bytes (hostile-input tests)."""
        if self._char is not None and self._subscribed:
            self.spawn(self.device.notify_subscribers(self._char, data))


@functools.lru_cache(maxsize=64)
def _captured_scale(io_type: int, mode: int, capture: tuple[str, tuple[str, ...]] | None) -> ModeScale | None:
    # Keyed by the capture itself too, so a test that swaps a capture gets its own scale.
    infos: dict[ModeInfoType, ModeInfoValue] = {}
    for line in capture[1] if capture else ():
        answer = lwp.decode(bytes.fromhex(line.replace("-", "")))
        if isinstance(answer, PortModeInformation) and answer.mode == mode:
            infos[answer.info_type] = answer.value
    try:
        return ModeScale.from_information(infos)
    except ProtocolError:
        return None


def _answers(request: PortInformationRequest | PortModeInformationRequest, answer: lwp.Message) -> bool:
    if isinstance(request, PortModeInformationRequest):
        return isinstance(answer, PortModeInformation) and (answer.mode, answer.info_type) == (
            request.mode,
            request.info_type,
        )
    return isinstance(answer, PortInformation) and answer.info_type == request.info_type


#: RGB of LEGO colour numbers 0-10 (black .. white), for SetRgbColorNo.
_COLOR_RGB = (
    (0, 0, 0), (255, 0, 128), (128, 0, 255), (0, 0, 255), (0, 128, 255), (0, 255, 255),
    (0, 255, 0), (255, 255, 0), (255, 128, 0), (255, 0, 0), (255, 255, 255),
)  # fmt: skip
