"""The micro:bit adapter against the simulated micro:bit on the virtual radio (bleak's API, real ATT)."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

import pytest

from devices.microbit.adapter import MicrobitAdapter, MicrobitOptions
from devices.sim.microbit import SimulatedMicrobit
from gateway.errors import DeviceError, InvalidArgument, UnknownCommand
from gateway.messages.generic import Led
from gateway.messages.microbit import (
    MicrobitLeds,
    MicrobitPeriods,
    MicrobitPin,
    MicrobitPwm,
    MicrobitSendEvent,
    MicrobitText,
    MicrobitUartSend,
)
from protocols.microbit import profile as mb
from tests.adapter_rig import AdapterRig


class Microbit(AdapterRig[MicrobitAdapter]):
    """The adapter in-process as `mb-1`, with its simulated micro:bit."""

    def __init__(self, **options: Any) -> None:
        super().__init__(
            MicrobitAdapter, "mb-1", MicrobitOptions(**{"simulate": True, "scan_timeout_s": 2.0, **options})
        )

    @property
    def sim(self) -> SimulatedMicrobit:
        assert self.adapter.simulator is not None
        return self.adapter.simulator


@pytest.fixture
async def microbit() -> AsyncIterator[Microbit]:
    device = Microbit(accelerometer_period_ms=80)
    device.start()
    await device.connected()
    yield device
    await device.stop()


async def test_discovery_lists_the_services_present(microbit: Microbit) -> None:
    caps = microbit.adapter.capabilities()
    assert caps["services"] == [
        "accelerometer",
        "button",
        "device_information",
        "event",
        "io_pin",
        "led",
        "magnetometer",
        "temperature",
        "uart",
    ]
    assert caps["mtu"] == 247
    assert microbit.statuses[-1][1].startswith(f"{microbit.sim.address}, services: accelerometer, button")
    assert microbit.sim.accelerometer_period_ms == 80  # the configured period was written at connect


async def test_every_state_stream(microbit: Microbit) -> None:
    sim = microbit.sim
    await sim.set_acceleration(1000, -500, -1000)
    await microbit.until(lambda: microbit.latest("state").acceleration.x > 9)
    state = microbit.latest("state")
    assert state.acceleration.x == pytest.approx(9.80665)
    assert state.acceleration.y == pytest.approx(-4.903325)
    assert state.magnetic_field.z == pytest.approx(-30000e-9)  # the runtime's nT sample, in tesla
    assert state.heading_deg == 90.0
    assert state.temperature == 21.0
    await sim.press("A", 1)
    await microbit.until(lambda: microbit.latest("buttons").buttons == (1, 0))
    await sim.press("A", 2)  # long press, as the profile reports it
    await sim.press("B", 1)
    await microbit.until(lambda: microbit.latest("buttons").buttons == (2, 1))
    assert microbit.latest("state").buttons == (2, 1)
    await sim.set_pin_input(3, 200)
    await microbit.until(lambda: microbit.latest("pins") is not None)
    assert (microbit.latest("pins").pins, microbit.latest("pins").values) == ((3,), (200,))
    await sim.send_uart("hello")
    await microbit.until(lambda: microbit.latest("uart") is not None)
    assert microbit.latest("uart").text == "hello"
    await sim.send_event(1104, 2)
    await microbit.until(lambda: microbit.latest("events") is not None)
    assert (microbit.latest("events").source, microbit.latest("events").value) == (1104, 2)


async def test_every_command_reaches_the_micro_bit(microbit: Microbit) -> None:
    sim = microbit.sim
    rows = tuple(tuple(column == row for column in range(5)) for row in range(5))
    assert await microbit.command(MicrobitLeds(rows), "hwgateway/MicrobitLeds") == {"matrix": [16, 8, 4, 2, 1]}
    assert sim.matrix == bytes([16, 8, 4, 2, 1])
    await microbit.command(Led(7, (1.0, 1.0, 1.0)), "led")  # row 1, column 2
    assert sim.matrix == bytes([16, 8 | 4, 4, 2, 1])
    await microbit.command(Led(-1, (0.0, 0.0, 0.0)), "led")
    assert sim.matrix == bytes(5)
    assert await microbit.command(MicrobitText("Hi ✓", 80), "hwgateway/MicrobitText") == {"bytes": 6}
    assert (sim.texts, sim.scrolling_delay_ms) == (["Hi ✓"], 80)
    await microbit.command(MicrobitPin(1, 1), "hwgateway/MicrobitPin")
    sim.io_configuration = 1 << 2  # pin 2 configured as an input by the program
    await microbit.command(MicrobitPin(2, 128, analog=True), "hwgateway/MicrobitPin")
    assert sim.pin_outputs == {1: 1, 2: 128}
    assert sim.ad_configuration == 1 << 2
    assert sim.io_configuration == 0
    await microbit.command(MicrobitPwm(0, 512, 2000), "hwgateway/MicrobitPwm")
    assert sim.pwm == {0: (512, 2000)}
    result = await microbit.command(
        MicrobitPeriods(accelerometer_ms=100, temperature_ms=500), "hwgateway/MicrobitPeriods"
    )
    assert result == {"accelerometer_ms": 80, "temperature_ms": 500}  # snapped to the sensor's own period
    await microbit.command(MicrobitUartSend("go"), "hwgateway/MicrobitUartSend")
    assert sim.uart_received == [b"go"]
    await microbit.command(MicrobitSendEvent(9000, 3), "hwgateway/MicrobitSendEvent")
    assert sim.client_events == [(9000, 3)]


async def test_bad_arguments_are_refused_before_the_radio(microbit: Microbit) -> None:
    with pytest.raises(InvalidArgument, match=r"data.text: text must be 1-20 bytes of UTF-8, got 21"):
        await microbit.command(MicrobitText("é" * 10 + "x"), "hwgateway/MicrobitText")
    with pytest.raises(InvalidArgument, match="a digital pin takes 0 or 1"):
        await microbit.command(MicrobitPin(0, 5), "hwgateway/MicrobitPin")
    with pytest.raises(InvalidArgument, match=r"data.index: 25 is not an LED"):
        await microbit.command(Led(25, (1.0, 1.0, 1.0)), "led")
    assert microbit.sim.texts == []
    assert microbit.sim.pin_outputs == {}


async def test_pins_above_p16_drive_the_pin_named(microbit: Microbit) -> None:
    """P19 and P20 are positions 17 and 18 of the runtime's pin table (see test_microbit_pins.py).

    The simulated V2 drives what codal-microbit-v2 drives: `io.pin[position]`, and P0 past the table.
    """
    sim = microbit.sim
    await microbit.command(MicrobitPin(19, 1), "hwgateway/MicrobitPin")
    await microbit.command(MicrobitPin(20, 200, analog=True), "hwgateway/MicrobitPin")
    assert sim.pin_outputs == {19: 1, 20: 200}
    assert sim.ad_configuration == 1 << 18  # the masks are by position too
    await microbit.command(MicrobitPwm(20, 300, 1000), "hwgateway/MicrobitPwm")
    assert sim.pwm == {20: (300, 1000)}
    sim.io_configuration = 1 << 17  # the program made P19 an input
    await sim.set_pin_input(19, 1)
    await microbit.until(lambda: microbit.latest("pins") is not None)
    assert (microbit.latest("pins").pins, microbit.latest("pins").values) == ((19,), (1,))
    for pin in (17, 18):
        with pytest.raises(InvalidArgument, match=rf"data.pin: P{pin} is not an I/O pin .*\(P0-P16, P19, P20;"):
            await microbit.command(MicrobitPin(pin, 1), "hwgateway/MicrobitPin")
        with pytest.raises(InvalidArgument, match=rf"data.pin: P{pin} is not an I/O pin"):
            await microbit.command(MicrobitPwm(pin, 1), "hwgateway/MicrobitPwm")
    assert sim.pin_outputs == {19: 1, 20: 200}
    assert sim.pwm == {20: (300, 1000)}
    # A raw write past the table, as the old numbering sent for P19: a V2 drives P0.
    assert microbit.adapter.link is not None
    await microbit.adapter.link.write(mb.PIN_DATA, bytes([19, 1]))
    assert sim.pin_outputs[0] == 1


async def test_a_v1_runtime_drives_nothing_defined_past_its_table() -> None:
    device = Microbit(sim_runtime="v1")
    device.start()
    await device.connected()
    await device.command(MicrobitPin(20, 1), "hwgateway/MicrobitPin")
    assert device.sim.pin_outputs == {20: 1}
    assert device.adapter.link is not None
    await device.adapter.link.write(mb.PIN_DATA, bytes([20, 1]))
    assert device.sim.pin_outputs == {20: 1}
    assert device.sim.undefined_pin_writes == [(20, 1)]
    await device.stop()


async def test_pins_are_leased_back_to_zero_on_client_loss_estop_and_shutdown(microbit: Microbit) -> None:
    sim = microbit.sim
    await microbit.command(MicrobitPin(1, 1), "hwgateway/MicrobitPin", client="alice")
    await microbit.command(MicrobitPin(8, 1), "hwgateway/MicrobitPin", client="bob")
    await microbit.command(MicrobitPwm(0, 700), "hwgateway/MicrobitPwm", client="alice")
    microbit.adapter.release("alice")
    await microbit.until(lambda: sim.pin_outputs[1] == 0 and sim.pwm[0] == (0, 20000))
    assert sim.pin_outputs[8] == 1
    await microbit.adapter.estop()
    assert sim.pin_outputs[8] == 0
    await microbit.command(MicrobitPin(12, 1), "hwgateway/MicrobitPin", client="carol")
    assert sim.pin_outputs[12] == 1
    await microbit.stop()
    assert sim.pin_outputs[12] == 0


async def test_an_att_error_is_a_device_error_that_names_pairing() -> None:
    device = Microbit(sim_pairing_required=True)
    device.start()
    # Even the first read of a secured characteristic fails: the run ends, naming the cause.
    with pytest.raises(ConnectionError, match="needs pairing"):
        await device.until(lambda: False, timeout=5)
    device.sim.pairing_required = False
    device.start()
    await device.connected()
    device.sim.pairing_required = True
    with pytest.raises(DeviceError, match=r"needs pairing \(ATT insufficient authentication, 0x05\)"):
        await device.command(MicrobitText("x"), "hwgateway/MicrobitText")
    await device.stop()


async def test_only_the_services_the_program_started() -> None:
    device = Microbit(sim_services=("button", "led"))
    device.start()
    await device.connected()
    assert device.adapter.capabilities()["services"] == ["button", "device_information", "led"]
    with pytest.raises(UnknownCommand, match="did not start the IO pin service"):
        await device.command(MicrobitPin(0, 1), "hwgateway/MicrobitPin")
    with pytest.raises(UnknownCommand, match="did not start the UART service"):
        await device.command(MicrobitUartSend("x"), "hwgateway/MicrobitUartSend")
    await device.sim.press("B", 1)
    await device.until(lambda: device.latest("buttons").buttons == (0, 1))
    assert device.latest("state").acceleration.z == 0.0  # no accelerometer service
    await device.stop()


async def test_peripheral_disconnect_then_reconnect(microbit: Microbit) -> None:
    assert microbit.task is not None
    await microbit.sim.drop()
    with pytest.raises(ConnectionError, match="disconnected"):
        await microbit.until(lambda: False, timeout=5)
    microbit.start()  # what the supervisor does after its backoff
    await microbit.connected()
    await microbit.sim.press("A", 1)
    await microbit.until(lambda: microbit.latest("buttons").buttons[0] == 1)
    assert microbit.sim.connections == 2


async def test_malformed_notifications_are_counted_and_dropped(microbit: Microbit) -> None:
    sim = microbit.sim
    char = sim._chars[mb.ACCELEROMETER_DATA]
    await sim.device.notify_subscribers(char, b"\x01\x02\x03")  # 3 bytes instead of 6
    await sim.device.notify_subscribers(sim._chars[mb.BUTTON_A_STATE], b"\x07")
    await microbit.until(lambda: microbit.adapter.malformed == 2)
    await sim.set_acceleration(0, 0, 1000)
    await microbit.until(lambda: math.isclose(microbit.latest("state").acceleration.z, 9.80665))
    assert microbit.statuses[-1][0] == "connected"
