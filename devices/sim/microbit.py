"""A simulated BBC micro:bit: a Bumble GATT server with the micro:bit Bluetooth profile's real layout.

Services and characteristics, UUIDs, properties and value formats are those of the micro:bit runtime
(`protocols.microbit.profile`); `services` picks which ones the "flashed program" started, as a real
micro:bit only has those. What the runtime does with a write is copied here: the LED matrix takes 1-5
row bytes, text and UART take at most 20 bytes (longer writes are refused by the Bluetooth stack with
ATT "invalid attribute value length"), periods snap to the accelerometer's and magnetometer's own,
pin writes land only on output pins. The IO pin service numbers pins by position in the runtime's
pin table (`protocols.microbit.pins`: P0-P16, P19, P20), in pin data, PWM records and the
configuration masks alike; a position beyond the table drives P0 on a V2 (`runtime = "v2"`, its
`edgePin()`) and is undefined on a V1 (recorded in `undefined_pin_writes`, nothing driven).
`pairing_required` answers every read and write with ATT "insufficient authentication", as a
micro:bit flashed with pairing does before it is bonded. Tests and the demo read back what arrived
(`matrix`, `texts`, `pin_outputs` and `pwm` by edge pin, `uart_received`, `client_events`) and drive
inputs (`press`, `set_acceleration`, `set_pin_input`, `send_uart`,
`send_event`, `drop`).
"""

from __future__ import annotations

import asyncio
import math
import struct
from collections.abc import Sequence

from bumble import att, gatt
from bumble.core import AdvertisingData
from bumble.device import Connection

from devices.ble.virtual_radio import VirtualRadio
from devices.sim.ble_peripheral import P, SimulatedPeripheral, att_error, characteristic
from protocols.microbit import pins
from protocols.microbit import profile as mb

ALL_SERVICES = mb.PROGRAM_SERVICES


class SimulatedMicrobit(SimulatedPeripheral):
    """A micro:bit running a program that started `services` (names as in `ALL_SERVICES`).

    `runtime` "v2" (codal-microbit-v2) or "v1" (microbit-dal) picks the board's runtime, which
    matters for the model number and for pin positions beyond the IO pin service's table.
    """

    def __init__(
        self,
        radio: VirtualRadio,
        name: str = "BBC micro:bit [zogav]",
        services: Sequence[str] = ALL_SERVICES,
        *,
        pairing_required: bool = False,
        motion: str = "rest",
        runtime: pins.Runtime = "v2",
    ) -> None:
        super().__init__(radio, name)
        if runtime not in ("v1", "v2"):
            raise ValueError(f"runtime must be 'v1' or 'v2', got {runtime!r}")
        self.runtime: pins.Runtime = runtime
        unknown = set(services) - set(ALL_SERVICES)
        if unknown:
            raise ValueError(f"unknown micro:bit services {sorted(unknown)} (known: {', '.join(ALL_SERVICES)})")
        self.enabled = tuple(services)
        self.pairing_required = pairing_required
        self.motion = motion
        self.buttons = [0, 0]
        #: Buttons pressed by `hold` (a person at the dashboard): when each is released (loop time, s).
        self._held: dict[str, float] = {}
        self.acceleration = (0, 0, -1024)  # milli-g, lying flat
        self.magnetic = (12000, -3000, -30000)  # the runtime's compass sample (nT)
        self.bearing = 90
        self.temperature = 21
        self.accelerometer_period_ms = 20
        self.magnetometer_period_ms = 20
        self.temperature_period_ms = 1000
        self.matrix = bytes(5)
        self.texts: list[str] = []
        self.scrolling_delay_ms = 120
        self.ad_configuration = 0
        self.io_configuration = 0
        #: Levels written to output pins, by edge pin number.
        self.pin_outputs: dict[int, int] = {}
        #: Input levels, by edge pin number.
        self.pin_inputs: dict[int, int] = {}
        #: PWM (duty, period µs), by edge pin number.
        self.pwm: dict[int, tuple[int, int]] = {}
        #: (position, value) writes beyond a V1's pin table, which the real runtime does not define.
        self.undefined_pin_writes: list[tuple[int, int]] = []
        self.uart_received: list[bytes] = []
        self.client_events: list[tuple[int, int]] = []
        self.client_requirements: list[tuple[int, int]] = []
        self._chars: dict[str, gatt.Characteristic[bytes]] = {}

    # ---- GATT layout --------------------------------------------------------------------------

    def _guard(self) -> None:
        if self.pairing_required:
            raise att_error(att.ErrorCode.INSUFFICIENT_AUTHENTICATION)

    def _read(self, getter: object) -> object:
        def read(_: Connection) -> bytes:
            self._guard()
            return getter()  # type: ignore[operator, no-any-return]

        return read

    def _write(self, setter: object, max_length: int) -> object:
        def write(_: Connection, value: bytes) -> None:
            self._guard()
            if len(value) > max_length:
                raise att_error(att.ErrorCode.INVALID_ATTRIBUTE_LENGTH)
            setter(bytes(value))  # type: ignore[operator]

        return write

    def _char(
        self, uuid: str, properties: P, read: object = None, write: object = None, max_length: int = 20
    ) -> gatt.Characteristic[bytes]:
        char = characteristic(
            uuid,
            properties,
            self._read(read) if read else None,  # type: ignore[arg-type]
            self._write(write, max_length) if write else None,  # type: ignore[arg-type]
        )
        self._chars[uuid] = char
        return char

    def services(self) -> Sequence[gatt.Service]:
        """The micro:bit profile's services the program started, plus Device Information."""
        rn, rw, w = P.READ | P.NOTIFY, P.READ | P.WRITE, P.WRITE
        built: dict[str, gatt.Service] = {
            "accelerometer": gatt.Service(mb.ACCELEROMETER_SERVICE, [
                self._char(mb.ACCELEROMETER_DATA, rn, lambda: mb.encode_vector(*self.acceleration)),
                self._char(mb.ACCELEROMETER_PERIOD, rw, lambda: mb.encode_u16(self.accelerometer_period_ms),
                           lambda v: self._set_period("accelerometer", v), 2),
            ]),
            "magnetometer": gatt.Service(mb.MAGNETOMETER_SERVICE, [
                self._char(mb.MAGNETOMETER_DATA, rn, lambda: mb.encode_vector(*self.magnetic)),
                self._char(mb.MAGNETOMETER_BEARING, rn, lambda: mb.encode_u16(self.bearing)),
                self._char(mb.MAGNETOMETER_PERIOD, rw, lambda: mb.encode_u16(self.magnetometer_period_ms),
                           lambda v: self._set_period("magnetometer", v), 2),
            ]),
            "button": gatt.Service(mb.BUTTON_SERVICE, [
                self._char(mb.BUTTON_A_STATE, rn, lambda: bytes([self.buttons[0]])),
                self._char(mb.BUTTON_B_STATE, rn, lambda: bytes([self.buttons[1]])),
            ]),
            "io_pin": gatt.Service(mb.IO_PIN_SERVICE, [
                self._char(mb.PIN_AD_CONFIGURATION, rw, lambda: mb.encode_u32(self.ad_configuration),
                           lambda v: self._set_mask("ad", v), 4),
                self._char(mb.PIN_IO_CONFIGURATION, rw, lambda: mb.encode_u32(self.io_configuration),
                           lambda v: self._set_mask("io", v), 4),
                self._char(mb.PWM_CONTROL, w, write=self._set_pwm, max_length=14),
                self._char(mb.PIN_DATA, P.READ | P.WRITE | P.NOTIFY, self._pin_data, self._set_pins),
            ]),
            "led": gatt.Service(mb.LED_SERVICE, [
                self._char(mb.LED_MATRIX_STATE, rw, lambda: self.matrix, self._set_matrix, 5),
                self._char(mb.LED_TEXT, w, write=lambda v: self.texts.append(v.decode("utf-8", "replace"))),
                self._char(mb.SCROLLING_DELAY, rw, lambda: mb.encode_u16(self.scrolling_delay_ms),
                           self._set_scrolling_delay, 2),
            ]),
            "event": gatt.Service(mb.EVENT_SERVICE, [
                self._char(mb.MICROBIT_REQUIREMENTS, rn, lambda: b""),
                self._char(mb.MICROBIT_EVENT, rn, lambda: b""),
                self._char(mb.CLIENT_REQUIREMENTS, w, write=lambda v: self.client_requirements.extend(_events(v))),
                self._char(mb.CLIENT_EVENT, w, write=lambda v: self.client_events.extend(_events(v))),
            ]),
            "temperature": gatt.Service(mb.TEMPERATURE_SERVICE, [
                self._char(mb.TEMPERATURE, rn, lambda: struct.pack("<b", self.temperature)),
                self._char(mb.TEMPERATURE_PERIOD, rw, lambda: mb.encode_u16(self.temperature_period_ms),
                           lambda v: self._set_period("temperature", v), 2),
            ]),
            "uart": gatt.Service(mb.UART_SERVICE, [
                self._char(mb.UART_TX, P.INDICATE, lambda: b""),
                self._char(mb.UART_RX, P.WRITE | P.WRITE_WITHOUT_RESPONSE, write=self.uart_received.append),
            ]),
        }  # fmt: skip
        info = gatt.Service(mb.DEVICE_INFORMATION_SERVICE, [
            characteristic(mb.MODEL_NUMBER, P.READ, lambda _: self._model_number()),
            characteristic(mb.SERIAL_NUMBER, P.READ, lambda _: b"1234567890"),
            characteristic(mb.FIRMWARE_REVISION, P.READ, lambda _: b"2.2.0 (simulated)"),
        ])  # fmt: skip
        return [built[name] for name in self.enabled] + [info]

    def _model_number(self) -> bytes:
        # MICROBIT_BLE_MODEL, with " V2" appended by codal-microbit-v2 (MicroBitBLEManager.cpp).
        return b"BBC micro:bit V2" if self.runtime == "v2" else b"BBC micro:bit"

    def advertising(self) -> tuple[bytes, bytes]:
        """Flags and the name, as the micro:bit runtime advertises (no service UUIDs)."""
        data = AdvertisingData(
            [(AdvertisingData.FLAGS, bytes([0x06])), (AdvertisingData.COMPLETE_LOCAL_NAME, self.name.encode())]
        )
        return bytes(data), b""

    # ---- what writes do -----------------------------------------------------------------------

    def _set_period(self, sensor: str, value: bytes) -> None:
        if len(value) < 2:
            return
        (period,) = struct.unpack_from("<H", value)
        if sensor == "temperature":
            self.temperature_period_ms = max(period, 1)
            return
        # The runtime picks the nearest period its sensor supports and reports that one back.
        nearest = min(mb.SENSOR_PERIODS_MS, key=lambda supported: abs(supported - period))
        setattr(self, f"{sensor}_period_ms", nearest)

    def _set_mask(self, which: str, value: bytes) -> None:
        if len(value) >= 4:
            setattr(self, f"{which}_configuration", struct.unpack_from("<I", value)[0])

    def _set_pwm(self, value: bytes) -> None:
        if not value or len(value) % 7:
            return  # the runtime ignores anything but whole 7-byte records
        for position, duty, period in struct.iter_unpack("<BHI", value):
            target = pins.runtime_target(position, self.runtime)
            if target is None:
                self.undefined_pin_writes.append((position, duty))
            else:
                self.pwm[target] = (duty, period)

    def _set_pins(self, value: bytes) -> None:
        for index in range(0, len(value) - 1, 2):
            position, level = value[index], value[index + 1]
            # Both runtimes test the IO mask at the written position, before mapping it to a pin.
            if position < 32 and self.io_configuration >> position & 1:
                continue
            target = pins.runtime_target(position, self.runtime)
            if target is None:
                self.undefined_pin_writes.append((position, level))
            else:
                self.pin_outputs[target] = level

    def _pin_data(self) -> bytes:
        return mb.encode_pin_data(sorted(self.pin_inputs.items())) if self.pin_inputs else b""

    def _set_matrix(self, value: bytes) -> None:
        if value:
            self.matrix = value + self.matrix[len(value) :]

    def _set_scrolling_delay(self, value: bytes) -> None:
        self.scrolling_delay_ms = struct.unpack_from("<H", value)[0] if len(value) >= 2 else self.scrolling_delay_ms

    # ---- inputs from the "world" --------------------------------------------------------------

    async def _notify(self, uuid: str, value: bytes | None = None) -> None:
        char = self._chars.get(uuid)
        if char is not None and self.device.connections:
            await self.device.notify_subscribers(char, value)

    async def press(self, button: str, state: int) -> None:
        """Set button "A" or "B" to 0 (released), 1 (pressed) or 2 (long press) and notify it."""
        index = "AB".index(button)
        self.buttons[index] = state
        await self._notify(mb.BUTTON_A_STATE if index == 0 else mb.BUTTON_B_STATE)

    async def hold(self, button: str, seconds: float) -> None:
        """Press button "A" or "B" for `seconds` (0: release it now), then release it; `ValueError` if unknown.

        In the demo motion the script's presses go on around it: a held button stays pressed.
        """
        if button not in ("A", "B"):
            raise ValueError(f"no button {button!r}; a micro:bit has A, B")
        loop = asyncio.get_running_loop()
        until = self._held[button] = loop.time() + seconds
        await self.press(button, 1 if seconds > 0 else 0)
        if seconds > 0:
            self.spawn(self._release_at(button, until))

    async def _release_at(self, button: str, until: float) -> None:
        await asyncio.sleep(max(until - asyncio.get_running_loop().time(), 0.0))
        if self._held.get(button) == until:  # not pressed again meanwhile
            del self._held[button]
            await self.press(button, 0)

    async def set_acceleration(self, x: int, y: int, z: int) -> None:
        """Set the accelerometer (milli-g) and notify it."""
        self.acceleration = (x, y, z)
        await self._notify(mb.ACCELEROMETER_DATA)

    async def set_pin_input(self, pin: int, value: int) -> None:
        """Set input edge pin `pin`'s level and notify the pin data (which carries its table position)."""
        self.pin_inputs[pin] = value
        await self._notify(mb.PIN_DATA, mb.encode_pin_data([(pin, value)]))

    async def send_uart(self, text: str) -> None:
        """Indicate `text` on the UART TX characteristic."""
        char = self._chars.get(mb.UART_TX)
        if char is not None and self.device.connections:
            await self.device.indicate_subscribers(char, text.encode())

    async def send_event(self, source: int, value: int) -> None:
        """Notify one event on the MicroBit Event characteristic."""
        await self._notify(mb.MICROBIT_EVENT, mb.encode_events([(source, value)]))

    def on_connected(self) -> None:
        """Start the sensor ticks."""
        self.spawn(self._tick("accelerometer", mb.ACCELEROMETER_DATA))
        self.spawn(self._tick("magnetometer", mb.MAGNETOMETER_DATA))
        self.spawn(self._tick("temperature", mb.TEMPERATURE))

    def on_disconnected(self) -> None:
        """Stop the sensor ticks."""
        for task in list(self._tasks):
            task.cancel()

    async def _tick(self, sensor: str, uuid: str) -> None:
        started = asyncio.get_running_loop().time()
        while self.device.connections:
            await asyncio.sleep(getattr(self, f"{sensor}_period_ms") / 1000)
            if self.motion == "demo":
                elapsed = asyncio.get_running_loop().time() - started
                self._move(elapsed)
                if sensor == "accelerometer":
                    # Button A is held for 1 s of every 4, B long-pressed (2) for 1.5 s of every 6.
                    script = (1 if elapsed % 4 < 1 else 0, 2 if elapsed % 6 < 1.5 else 0)
                    now = asyncio.get_running_loop().time()
                    held = [1 if self._held.get(button, 0.0) > now else 0 for button in "AB"]
                    wanted = [max(pair) for pair in zip(script, held, strict=True)]
                    for button, state in zip("AB", wanted, strict=True):
                        if self.buttons["AB".index(button)] != state:
                            await self.press(button, state)
            await self._notify(uuid)
            if sensor == "magnetometer":
                await self._notify(mb.MAGNETOMETER_BEARING)

    def _move(self, t: float) -> None:
        self.acceleration = (round(600 * math.sin(t)), round(400 * math.cos(0.7 * t)), -800)
        self.bearing = round(t * 20) % 360
        self.magnetic = (
            round(20000 * math.cos(math.radians(self.bearing))),
            round(20000 * math.sin(math.radians(self.bearing))),
            -30000,
        )
        self.temperature = 21 + round(math.sin(t / 10))


def _events(value: bytes) -> list[tuple[int, int]]:
    return [(int(s), int(v)) for s, v in struct.iter_unpack("<HH", value[: len(value) // 4 * 4])]


__all__ = ["ALL_SERVICES", "SimulatedMicrobit"]
